package cors

import (
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/coffer-s3/coffer/internal/s3err"
)

func intp(n int) *int { return &n }

// rule returns a valid rule allowing GET from origin, changed by fn.
func rule(fn func(*Rule)) Rule {
	r := Rule{AllowedMethods: []string{"GET"}, AllowedOrigins: []string{"https://example.com"}}
	if fn != nil {
		fn(&r)
	}
	return r
}

func TestValidate(t *testing.T) {
	many := make([]Rule, MaxRules+1)
	for i := range many {
		many[i] = rule(nil)
	}
	for _, tc := range []struct {
		name    string
		cfg     Config
		wantErr s3err.Code
		wantMsg string
	}{
		{name: "one rule", cfg: Config{Rules: []Rule{rule(nil)}}},
		{name: "everything", cfg: Config{Rules: []Rule{rule(func(r *Rule) {
			r.ID = strings.Repeat("i", MaxIDLength)
			r.AllowedMethods = Methods[:]
			r.AllowedOrigins = []string{"*", "http://*.example.com", "https://app.example.com:8443", "", "https://bücher.example", "null"}
			r.AllowedHeaders = []string{"*", "x-amz-*", "Content-Type", "!#$%&'*+-.^_`|~"}
			r.ExposeHeaders = []string{"ETag", "x-amz-version-id"}
			r.MaxAgeSeconds = intp(1<<31 - 1)
		})}}},
		{name: "max age zero", cfg: Config{Rules: []Rule{rule(func(r *Rule) { r.MaxAgeSeconds = intp(0) })}}},
		{name: "100 rules", cfg: Config{Rules: many[:MaxRules]}},

		{name: "no rules", cfg: Config{}, wantErr: s3err.MalformedXML},
		{name: "101 rules", cfg: Config{Rules: many}, wantErr: s3err.MalformedXML},
		{name: "no method", cfg: Config{Rules: []Rule{rule(func(r *Rule) { r.AllowedMethods = nil })}}, wantErr: s3err.MalformedXML},
		{name: "no origin", cfg: Config{Rules: []Rule{rule(func(r *Rule) { r.AllowedOrigins = nil })}}, wantErr: s3err.MalformedXML},
		{name: "long ID", cfg: Config{Rules: []Rule{rule(func(r *Rule) { r.ID = strings.Repeat("i", MaxIDLength+1) })}}, wantErr: s3err.MalformedXML},
		{name: "negative max age", cfg: Config{Rules: []Rule{rule(func(r *Rule) { r.MaxAgeSeconds = intp(-1) })}}, wantErr: s3err.MalformedXML},
		{name: "max age past int32", cfg: Config{Rules: []Rule{rule(func(r *Rule) { r.MaxAgeSeconds = intp(1 << 31) })}}, wantErr: s3err.MalformedXML},
		{name: "structure before values", cfg: Config{Rules: []Rule{
			rule(func(r *Rule) { r.AllowedMethods = []string{"PATCH"} }),
			rule(func(r *Rule) { r.AllowedOrigins = nil }),
		}}, wantErr: s3err.MalformedXML},

		{name: "PATCH", cfg: Config{Rules: []Rule{rule(func(r *Rule) { r.AllowedMethods = []string{"GET", "PATCH"} })}},
			wantErr: s3err.InvalidRequest, wantMsg: "Found unsupported HTTP method in CORS config. Unsupported method is PATCH"},
		{name: "lower-case method", cfg: Config{Rules: []Rule{rule(func(r *Rule) { r.AllowedMethods = []string{"get"} })}},
			wantErr: s3err.InvalidRequest, wantMsg: "Found unsupported HTTP method in CORS config. Unsupported method is get"},
		{name: "OPTIONS", cfg: Config{Rules: []Rule{rule(func(r *Rule) { r.AllowedMethods = []string{"OPTIONS"} })}},
			wantErr: s3err.InvalidRequest, wantMsg: "Found unsupported HTTP method in CORS config. Unsupported method is OPTIONS"},
		{name: "two wildcards in origin", cfg: Config{Rules: []Rule{rule(func(r *Rule) { r.AllowedOrigins = []string{"https://*.example.*"} })}},
			wantErr: s3err.InvalidRequest, wantMsg: `AllowedOrigin "https://*.example.*" can not have more than one wildcard.`},
		{name: "two wildcards in header", cfg: Config{Rules: []Rule{rule(func(r *Rule) { r.AllowedHeaders = []string{"x-*-meta-*"} })}},
			wantErr: s3err.InvalidRequest, wantMsg: `AllowedHeader "x-*-meta-*" can not have more than one wildcard.`},
		{name: "wildcard expose header", cfg: Config{Rules: []Rule{rule(func(r *Rule) { r.ExposeHeaders = []string{"ETag", "x-amz-meta-*"} })}},
			wantErr: s3err.InvalidRequest, wantMsg: `ExposeHeader "x-amz-meta-*" contains wildcard. We currently do not support wildcard for ExposeHeader.`},
		{name: "CR LF in origin", cfg: Config{Rules: []Rule{rule(func(r *Rule) { r.AllowedOrigins = []string{"https://a.example\r\nSet-Cookie: x=y"} })}},
			wantErr: s3err.InvalidRequest, wantMsg: "AllowedOrigin \"https://a.example\r\nSet-Cookie: x=y\" contains invalid character."},
		{name: "NUL in origin", cfg: Config{Rules: []Rule{rule(func(r *Rule) { r.AllowedOrigins = []string{"*\x00"} })}},
			wantErr: s3err.InvalidRequest, wantMsg: "AllowedOrigin \"*\x00\" contains invalid character."},
		{name: "space in header", cfg: Config{Rules: []Rule{rule(func(r *Rule) { r.AllowedHeaders = []string{"Content-Type", "x-amz-meta-a b"} })}},
			wantErr: s3err.InvalidRequest, wantMsg: `AllowedHeader "x-amz-meta-a b" contains invalid character.`},
		{name: "Kelvin sign in header", cfg: Config{Rules: []Rule{rule(func(r *Rule) { r.AllowedHeaders = []string{"x-\u212aey"} })}},
			wantErr: s3err.InvalidRequest, wantMsg: "AllowedHeader \"x-\u212aey\" contains invalid character."},
		{name: "LF in header", cfg: Config{Rules: []Rule{rule(func(r *Rule) { r.AllowedHeaders = []string{"\n*\n"} })}},
			wantErr: s3err.InvalidRequest, wantMsg: "AllowedHeader \"\n*\n\" contains invalid character."},
		{name: "colon in expose header", cfg: Config{Rules: []Rule{rule(func(r *Rule) { r.ExposeHeaders = []string{"ETag:"} })}},
			wantErr: s3err.InvalidRequest, wantMsg: `ExposeHeader "ETag:" contains invalid character.`},
		{name: "CR in expose header", cfg: Config{Rules: []Rule{rule(func(r *Rule) { r.ExposeHeaders = []string{"ETag\r"} })}},
			wantErr: s3err.InvalidRequest, wantMsg: "ExposeHeader \"ETag\r\" contains invalid character."},
		{name: "second rule bad", cfg: Config{Rules: []Rule{rule(nil), rule(func(r *Rule) { r.AllowedMethods = []string{"TRACE"} })}},
			wantErr: s3err.InvalidRequest, wantMsg: "Found unsupported HTTP method in CORS config. Unsupported method is TRACE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if code := s3err.CodeOf(err); code != tc.wantErr {
				t.Fatalf("Validate() = %v, want code %q", err, tc.wantErr)
			}
			if tc.wantMsg != "" {
				if e, _ := err.(*s3err.Error); e.Msg() != tc.wantMsg {
					t.Errorf("Validate() message %q, want %q", e.Msg(), tc.wantMsg)
				}
			}
		})
	}
}

// testConfig is the configuration of s3-tests' test_cors_origin_response,
// plus rules for headers, credentials and the first-rule-wins order.
func testConfig() *Config {
	return &Config{Rules: []Rule{
		{AllowedMethods: []string{"GET"}, AllowedOrigins: []string{"*suffix"}},
		{AllowedMethods: []string{"GET"}, AllowedOrigins: []string{"start*end"}},
		{AllowedMethods: []string{"GET"}, AllowedOrigins: []string{"prefix*"}},
		{AllowedMethods: []string{"PUT"}, AllowedOrigins: []string{"*.put"}},
		{ID: "headers", AllowedMethods: []string{"PUT", "POST", "DELETE"}, AllowedOrigins: []string{"https://app.example.com", "https://*.example.net"},
			AllowedHeaders: []string{"Content-Type", "X-Amz-*"}, ExposeHeaders: []string{"ETag", "x-amz-version-id"}, MaxAgeSeconds: intp(3000)},
		{ID: "shadowed", AllowedMethods: []string{"DELETE"}, AllowedOrigins: []string{"https://app.example.com"}, AllowedHeaders: []string{"*"}},
		{ID: "any", AllowedMethods: []string{"HEAD", "DELETE"}, AllowedOrigins: []string{"*"}},
	}}
}

func TestMatch(t *testing.T) {
	c := testConfig()
	stored := Encode(c)
	for _, tc := range []struct {
		name, origin, method string
		headers              []string
		want                 string // the rule's ID or its first origin; "" for no match
	}{
		{name: "suffix", origin: "foo.suffix", method: "GET", want: "*suffix"},
		{name: "suffix alone", origin: "suffix", method: "GET", want: "*suffix"},
		{name: "suffix not at end", origin: "foo.suffix.get", method: "GET"},
		{name: "no rule", origin: "foo.bar", method: "GET"},
		{name: "infix empty", origin: "startend", method: "GET", want: "start*end"},
		{name: "infix one", origin: "start1end", method: "GET", want: "start*end"},
		{name: "infix more", origin: "start12end", method: "GET", want: "start*end"},
		{name: "infix not at start", origin: "0start12end", method: "GET"},
		{name: "infix overlap", origin: "startnd", method: "GET"},
		{name: "prefix", origin: "prefix", method: "GET", want: "prefix*"},
		{name: "prefix with suffix", origin: "prefix.suffix", method: "GET", want: "*suffix"},
		{name: "prefix not at start", origin: "bla.prefix", method: "GET"},
		{name: "method not allowed", origin: "foo.suffix", method: "PUT"},
		{name: "other rule's method", origin: "foo.put", method: "PUT", want: "*.put"},
		{name: "method case-sensitive", origin: "foo.put", method: "put"},
		{name: "origin case-sensitive", origin: "https://APP.example.com", method: "PUT", want: ""},
		{name: "exact origin", origin: "https://app.example.com", method: "PUT", want: "headers"},
		{name: "exact origin with port", origin: "https://app.example.com:443", method: "PUT"},
		{name: "wildcard origin", origin: "https://eu.example.net", method: "POST", want: "headers"},
		{name: "headers any case", origin: "https://app.example.com", method: "PUT", headers: []string{"content-type", "x-amz-date", "x-amz-meta-a"}, want: "headers"},
		{name: "header prefix only", origin: "https://app.example.com", method: "PUT", headers: []string{"x-amz"}},
		{name: "header not allowed", origin: "https://app.example.com", method: "PUT", headers: []string{"content-type", "authorization"}},
		{name: "first rule wins", origin: "https://app.example.com", method: "DELETE", want: "headers"},
		{name: "later rule for headers", origin: "https://app.example.com", method: "DELETE", headers: []string{"authorization"}, want: "shadowed"},
		{name: "no headers allowed", origin: "foo.suffix", method: "GET", headers: []string{"x-amz-date"}},
		{name: "any origin", origin: "https://elsewhere.org", method: "HEAD", want: "any"},
		{name: "null origin", origin: "null", method: "DELETE", want: "any"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := c.Match(tc.origin, tc.method, tc.headers)
			got := ""
			if r != nil {
				got = r.ID
				if got == "" {
					got = r.AllowedOrigins[0]
				}
			}
			if got != tc.want {
				t.Errorf("Match(%q, %q, %q) = rule %q, want %q", tc.origin, tc.method, tc.headers, got, tc.want)
			}
			// MatchStored finds the same rule without decoding the others.
			sr, err := MatchStored(stored, tc.origin, tc.method, tc.headers)
			if err != nil {
				t.Fatalf("MatchStored error = %v", err)
			}
			if diff := cmp.Diff(r, sr); diff != "" {
				t.Errorf("MatchStored(%q, %q, %q) mismatch (-Match +MatchStored):\n%s", tc.origin, tc.method, tc.headers, diff)
			}
		})
	}
}

func TestWildcardMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, s string
		fold, want bool
	}{
		{"*", "", false, true},
		{"*", "anything", false, true},
		{"", "", false, true},
		{"", "a", false, false},
		{"a*", "a", false, true},
		{"*a", "ba", false, true},
		{"a*a", "a", false, false}, // prefix and suffix may not overlap
		{"a*a", "aa", false, true},
		{"X-Amz-*", "x-amz-date", true, true},
		{"X-Amz-*", "x-amz-date", false, false},
		{"x-*-suffix", "X-ANY-SUFFIX", true, true},
		{"a**", "ab*", false, true}, // only the first star is a wildcard
		{"a**", "ab", false, false},
		// Header names are ASCII tokens: case folds in ASCII only, so the
		// Kelvin sign (U+212A), which Unicode folds to k, is not a K.
		{"é*", "É", true, false},
		{"x-\u212aey", "x-key", true, false},
		{"*-\u212aey", "x-Key", true, false},
		{"\u212a*", "k", true, false},
		{"x-KEY", "x-key", true, true},
	} {
		if got := wildcardMatch(tc.pattern, tc.s, tc.fold); got != tc.want {
			t.Errorf("wildcardMatch(%q, %q, %v) = %v, want %v", tc.pattern, tc.s, tc.fold, got, tc.want)
		}
	}
}

func TestSetHeaders(t *testing.T) {
	c := testConfig()
	for _, tc := range []struct {
		name      string
		rule      int
		origin    string
		requested []string
		want      http.Header
	}{
		{name: "origin echoed with credentials", rule: 4, origin: "https://app.example.com", requested: []string{"content-type", "x-amz-date"}, want: http.Header{
			"Access-Control-Allow-Origin":      {"https://app.example.com"},
			"Access-Control-Allow-Credentials": {"true"},
			"Access-Control-Allow-Methods":     {"PUT, POST, DELETE"},
			"Access-Control-Allow-Headers":     {"content-type, x-amz-date"},
			"Access-Control-Expose-Headers":    {"ETag, x-amz-version-id"},
			"Access-Control-Max-Age":           {"3000"},
			"Vary":                             {Vary},
		}},
		{name: "wildcard origin", rule: 6, origin: "https://elsewhere.org", want: http.Header{
			"Access-Control-Allow-Origin":  {"*"},
			"Access-Control-Allow-Methods": {"HEAD, DELETE"},
			"Vary":                         {Vary},
		}},
		{name: "wildcard pattern echoes", rule: 0, origin: "foo.suffix", want: http.Header{
			"Access-Control-Allow-Origin":      {"foo.suffix"},
			"Access-Control-Allow-Credentials": {"true"},
			"Access-Control-Allow-Methods":     {"GET"},
			"Vary":                             {Vary},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := http.Header{}
			c.Rules[tc.rule].SetHeaders(got, tc.origin, tc.requested)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("SetHeaders mismatch (-want +got):\n%s", diff)
			}
			for k := range got {
				found := false
				for _, r := range ResponseHeaders {
					found = found || r == k
				}
				if !found {
					t.Errorf("SetHeaders set %s, which ResponseHeaders does not list", k)
				}
			}
		})
	}
}

func TestParsePreflight(t *testing.T) {
	for _, tc := range []struct {
		name    string
		h       http.Header
		want    Preflight
		wantMsg string // BadRequest's message; "" for success
	}{
		{name: "minimal", h: http.Header{"Origin": {"https://a.example"}, "Access-Control-Request-Method": {"PUT"}},
			want: Preflight{Origin: "https://a.example", Method: "PUT"}},
		{name: "headers", h: http.Header{"Origin": {"o"}, "Access-Control-Request-Method": {"POST"}, "Access-Control-Request-Headers": {"content-type,X-Amz-Date , x-amz-meta-a"}},
			want: Preflight{Origin: "o", Method: "POST", Headers: []string{"content-type", "x-amz-date", "x-amz-meta-a"}}},
		{name: "header lines joined", h: http.Header{"Origin": {"o"}, "Access-Control-Request-Method": {"GET"}, "Access-Control-Request-Headers": {"a", "b"}},
			want: Preflight{Origin: "o", Method: "GET", Headers: []string{"a", "b"}}},
		{name: "empty headers", h: http.Header{"Origin": {"o"}, "Access-Control-Request-Method": {"GET"}, "Access-Control-Request-Headers": {" "}},
			want: Preflight{Origin: "o", Method: "GET"}},
		{name: "no origin", h: http.Header{"Access-Control-Request-Method": {"GET"}}, wantMsg: "Insufficient information. Origin request header needed."},
		{name: "nothing", h: http.Header{}, wantMsg: "Insufficient information. Origin request header needed."},
		{name: "no method", h: http.Header{"Origin": {"o"}}, wantMsg: "Invalid Access-Control-Request-Method: null"},
		{name: "empty method", h: http.Header{"Origin": {"o"}, "Access-Control-Request-Method": {""}}, wantMsg: "Invalid Access-Control-Request-Method: "},
		{name: "lower-case method", h: http.Header{"Origin": {"o"}, "Access-Control-Request-Method": {"get"}}, wantMsg: "Invalid Access-Control-Request-Method: get"},
		{name: "OPTIONS method", h: http.Header{"Origin": {"o"}, "Access-Control-Request-Method": {"OPTIONS"}}, wantMsg: "Invalid Access-Control-Request-Method: OPTIONS"},
		{name: "bad header", h: http.Header{"Origin": {"o"}, "Access-Control-Request-Method": {"GET"}, "Access-Control-Request-Headers": {"X-Amz-Date,invalid header"}},
			wantMsg: `Access-Control-Request-Headers "invalid header" contains invalid character.`},
		{name: "empty header name", h: http.Header{"Origin": {"o"}, "Access-Control-Request-Method": {"GET"}, "Access-Control-Request-Headers": {"a,,b"}},
			wantMsg: `Access-Control-Request-Headers "" contains invalid character.`},
		{name: "non-ASCII header", h: http.Header{"Origin": {"o"}, "Access-Control-Request-Method": {"GET"}, "Access-Control-Request-Headers": {"NonAsciiŁ"}},
			wantMsg: `Access-Control-Request-Headers "NonAsciiŁ" contains invalid character.`},
		{name: "too many headers", h: http.Header{"Origin": {"o"}, "Access-Control-Request-Method": {"GET"}, "Access-Control-Request-Headers": {strings.Repeat("a,", MaxRequestHeaders) + "a"}},
			wantMsg: "Access-Control-Request-Headers names more than 256 headers."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParsePreflight(tc.h)
			if tc.wantMsg != "" {
				e, ok := err.(*s3err.Error)
				if !ok || e.Code != s3err.BadRequest || e.Msg() != tc.wantMsg {
					t.Fatalf("ParsePreflight() error = %v, want BadRequest %q", err, tc.wantMsg)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParsePreflight() error = %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParsePreflight mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParseRequestHeadersAllocation checks that a list of more names than
// MaxRequestHeaders is refused before it costs memory: an anonymous
// preflight of a 60 KB header of commas made a slice of 60k strings, about
// 1 MB, before the count was checked.
func TestParseRequestHeadersAllocation(t *testing.T) {
	commas := strings.Repeat(",", 60<<10)
	const runs = 20
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		if _, err := ParseRequestHeaders(commas); s3err.CodeOf(err) != s3err.BadRequest {
			t.Fatalf("ParseRequestHeaders(60 KB of commas) error = %v, want BadRequest", err)
		}
	}
	runtime.ReadMemStats(&after)
	if perCall := (after.TotalAlloc - before.TotalAlloc) / runs; perCall > 4<<10 {
		t.Errorf("ParseRequestHeaders(60 KB of commas) allocates %d bytes a call, want at most 4 KiB", perCall)
	}
	// The most names allowed cost one slice of them.
	most := strings.Repeat("x-a,", MaxRequestHeaders-1) + "x-a"
	if n := testing.AllocsPerRun(runs, func() { _, _ = ParseRequestHeaders(most) }); n > 1 {
		t.Errorf("ParseRequestHeaders(%d names) makes %v allocations, want 1", MaxRequestHeaders, n)
	}
}

func TestAnswer(t *testing.T) {
	c := testConfig()
	p := Preflight{Origin: "foo.bar", Method: "GET"}
	// Without a configuration the resource is the bucket, as S3 names it
	// even for an object's URL.
	_, err := p.Answer(nil, ResourceObject)
	e, ok := err.(*s3err.Error)
	if !ok || e.Code != s3err.AccessForbidden || e.Msg() != "CORSResponse: CORS is not enabled for this bucket." ||
		!cmp.Equal(e.Extra, []s3err.Field{{Name: "Method", Value: "GET"}, {Name: "ResourceType", Value: "BUCKET"}}) {
		t.Errorf("Answer without a configuration = %#v", err)
	}
	_, err = p.Answer(c, ResourceBucket)
	e, ok = err.(*s3err.Error)
	if !ok || e.Code != s3err.AccessForbidden || !strings.HasPrefix(e.Msg(), "CORSResponse: This CORS request is not allowed.") ||
		!cmp.Equal(e.Extra, []s3err.Field{{Name: "Method", Value: "GET"}, {Name: "ResourceType", Value: "BUCKET"}}) {
		t.Errorf("Answer without a matching rule = %#v", err)
	}
	p.Origin = "prefix.x"
	r, err := p.Answer(c, ResourceBucket)
	if err != nil || r != &c.Rules[2] {
		t.Errorf("Answer for a matching rule = %v, %v; want rule 2", r, err)
	}
}

// TestPreflightRefusals checks the answers S3 gives before it reads a
// preflight's method (AWS-recorded in LocalStack's test_s3_cors
// snapshots): the bucket is the resource whatever the URL, and the method
// named is the requested one or, when none was sent, the preflight's own.
func TestPreflightRefusals(t *testing.T) {
	const notEnabled, notFound = "CORSResponse: CORS is not enabled for this bucket.", "CORSResponse: Bucket not found"
	for _, tc := range []struct {
		name       string
		refuse     func(http.Header, string) error
		h          http.Header
		msg, named string
	}{
		{name: "not enabled", refuse: NotEnabled, h: http.Header{"Origin": {"o"}, "Access-Control-Request-Method": {"PUT"}}, msg: notEnabled, named: "PUT"},
		{name: "not enabled, no method", refuse: NotEnabled, h: http.Header{"Origin": {"o"}}, msg: notEnabled, named: "OPTIONS"},
		{name: "not enabled, bad method", refuse: NotEnabled, h: http.Header{"Origin": {"o"}, "Access-Control-Request-Method": {"get"}}, msg: notEnabled, named: "get"},
		{name: "bucket not found", refuse: BucketNotFound, h: http.Header{"Origin": {"o"}, "Access-Control-Request-Method": {"GET"}}, msg: notFound, named: "GET"},
		{name: "bucket not found, no method", refuse: BucketNotFound, h: http.Header{"Origin": {"o"}}, msg: notFound, named: "OPTIONS"},
	} {
		err := tc.refuse(tc.h, http.MethodOptions)
		e, ok := err.(*s3err.Error)
		if !ok || e.Code != s3err.AccessForbidden || e.Msg() != tc.msg ||
			!cmp.Equal(e.Extra, []s3err.Field{{Name: "Method", Value: tc.named}, {Name: "ResourceType", Value: "BUCKET"}}) {
			t.Errorf("%s: %#v, want AccessForbidden %q naming %s and BUCKET", tc.name, err, tc.msg, tc.named)
		}
	}
	if _, err := PreflightOrigin(http.Header{"Access-Control-Request-Method": {"GET"}}); s3err.CodeOf(err) != s3err.BadRequest {
		t.Errorf("PreflightOrigin without an Origin = %v, want BadRequest", err)
	}
	if o, err := PreflightOrigin(http.Header{"Origin": {"https://a.example"}}); o != "https://a.example" || err != nil {
		t.Errorf("PreflightOrigin = %q, %v", o, err)
	}
}

func TestActualMethod(t *testing.T) {
	for _, tc := range []struct {
		name, method string
		h            http.Header
		want         string
	}{
		{name: "request method", method: "GET", h: http.Header{}, want: "GET"},
		{name: "HEAD", method: "HEAD", h: http.Header{}, want: "HEAD"},
		{name: "request-method header wins", method: "PUT", h: http.Header{"Access-Control-Request-Method": {"GET"}}, want: "GET"},
		{name: "invalid header", method: "PUT", h: http.Header{"Access-Control-Request-Method": {"get"}}, want: ""},
		{name: "PATCH", method: "PATCH", h: http.Header{}, want: ""},
	} {
		if got := ActualMethod(tc.h, tc.method); got != tc.want {
			t.Errorf("%s: ActualMethod = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestActualHeaders(t *testing.T) {
	for _, tc := range []struct {
		name   string
		h      http.Header
		want   []string
		wantOK bool
	}{
		{name: "none", h: http.Header{}, wantOK: true},
		{name: "empty", h: http.Header{"Access-Control-Request-Headers": {""}}, wantOK: true},
		{name: "names", h: http.Header{"Access-Control-Request-Headers": {"Content-Type, x-amz-date", "X-A"}}, want: []string{"content-type", "x-amz-date", "x-a"}, wantOK: true},
		{name: "not names", h: http.Header{"Access-Control-Request-Headers": {"a b"}}},
		{name: "too many", h: http.Header{"Access-Control-Request-Headers": {strings.Repeat("a,", MaxRequestHeaders) + "a"}}},
	} {
		got, ok := ActualHeaders(tc.h)
		if ok != tc.wantOK || !cmp.Equal(got, tc.want) {
			t.Errorf("%s: ActualHeaders = %q, %v; want %q, %v", tc.name, got, ok, tc.want, tc.wantOK)
		}
	}
}

func TestCodec(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  *Config
	}{
		{name: "empty", cfg: &Config{Rules: []Rule{}}},
		{name: "test config", cfg: testConfig()},
		{name: "odd strings", cfg: &Config{Rules: []Rule{{ID: "\x00\xff", AllowedMethods: []string{""}, AllowedOrigins: []string{strings.Repeat("o", 300)}, MaxAgeSeconds: intp(0)}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := Encode(tc.cfg)
			got, err := Decode(doc)
			if err != nil {
				t.Fatalf("Decode(Encode(x)) error = %v", err)
			}
			if diff := cmp.Diff(tc.cfg, got); diff != "" {
				t.Errorf("Decode(Encode(x)) mismatch (-x +got):\n%s", diff)
			}
			// Every truncation fails cleanly.
			for i := range len(doc) {
				if _, err := Decode(doc[:i]); err == nil {
					t.Errorf("Decode of %d of %d bytes succeeded", i, len(doc))
				}
				if _, err := MatchStored(doc[:i], "no match", "GET", nil); err == nil {
					t.Errorf("MatchStored of %d of %d bytes succeeded", i, len(doc))
				}
			}
		})
	}
	for _, doc := range [][]byte{nil, {2}, {1, 0, 0}, {1, 1, 0, 2}, {1, 1, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}} {
		if _, err := Decode(doc); err == nil {
			t.Errorf("Decode(%x) succeeded", doc)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(Encode(testConfig()))
	f.Add(Encode(&Config{}))
	f.Add([]byte{1, 1, 0, 1, 7})
	f.Fuzz(func(t *testing.T, doc []byte) {
		c, err := Decode(doc)
		if err != nil {
			return
		}
		again, err := Decode(Encode(c))
		if err != nil {
			t.Fatalf("Decode(Encode(Decode(%x))) error = %v", doc, err)
		}
		if diff := cmp.Diff(c, again); diff != "" {
			t.Errorf("round trip mismatch for %x (-first +again):\n%s", doc, diff)
		}
		// MatchStored agrees with Match for the origins and methods the
		// document names.
		for _, r := range c.Rules {
			for _, m := range append(r.AllowedMethods, "GET") {
				for _, o := range append(r.AllowedOrigins, "https://app.example.com") {
					sr, err := MatchStored(doc, o, m, nil)
					if err != nil {
						t.Fatalf("MatchStored(%x) error = %v after Decode succeeded", doc, err)
					}
					if diff := cmp.Diff(c.Match(o, m, nil), sr); diff != "" {
						t.Fatalf("MatchStored(%x, %q, %q) mismatch (-Match +MatchStored):\n%s", doc, o, m, diff)
					}
				}
			}
		}
	})
}

// FuzzParseRequestHeaders feeds preflight request headers, which come from
// anyone, through parsing and matching.
func FuzzParseRequestHeaders(f *testing.F) {
	for _, s := range []string{"", "content-type", "Content-Type, X-Amz-Date,x-amz-meta-a", "a,,b", "invalid header", "NonAsciiŁ", " \t", strings.Repeat("a,", 300)} {
		f.Add("https://app.example.com", s)
	}
	c := testConfig()
	f.Fuzz(func(t *testing.T, origin, v string) {
		names, err := ParseRequestHeaders(v)
		if err != nil {
			if s3err.CodeOf(err) != s3err.BadRequest {
				t.Fatalf("ParseRequestHeaders(%q) error %v, want BadRequest", v, err)
			}
			return
		}
		if len(names) > MaxRequestHeaders {
			t.Fatalf("ParseRequestHeaders(%q) returned %d names", v, len(names))
		}
		for _, n := range names {
			if !IsToken(n) || strings.ToLower(n) != n {
				t.Fatalf("ParseRequestHeaders(%q) returned %q", v, n)
			}
		}
		for _, m := range Methods {
			if r := c.Match(origin, m, names); r != nil && !r.allows(origin, m, names) {
				t.Fatalf("Match returned a rule that does not allow the request")
			}
		}
	})
}
