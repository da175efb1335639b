package cors

import (
	"bytes"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/coffer-s3/coffer/internal/s3err"
	"github.com/coffer-s3/coffer/internal/s3xml"
)

// The fuzz targets of PutBucketCors's pure path live here rather than in
// s3api, whose instrumented test binary (the whole server) is large and
// slow to fuzz. Only this test imports s3xml: the package itself stays a
// leaf (internal/archtest checks non-test imports).

// maxFuzzBody bounds the bodies FuzzParseConfiguration decodes, as
// PutBucketCors does (s3api's maxConfigBody).
const maxFuzzBody = 64 << 10

// parseConfiguration is PutBucketCors's path from body to rules: strict
// decoding, the wire struct's fields copied into a Config, Validate. The
// copying mirrors s3api's parseCORSConfiguration, and documentOf its
// corsDocument; s3api's tests hold those to the same round trips.
func parseConfiguration(body []byte) (*Config, error) {
	doc, err := s3xml.DecodeCORSConfiguration(bytes.NewReader(body), maxFuzzBody)
	if err != nil {
		return nil, err
	}
	c := &Config{Rules: make([]Rule, len(doc.Rules))}
	for i, r := range doc.Rules {
		c.Rules[i] = Rule{ID: r.ID, AllowedMethods: r.AllowedMethods, AllowedOrigins: r.AllowedOrigins,
			AllowedHeaders: r.AllowedHeaders, ExposeHeaders: r.ExposeHeaders, MaxAgeSeconds: r.MaxAgeSeconds}
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// documentOf is the GetBucketCors document of c.
func documentOf(c *Config) s3xml.CORSConfiguration {
	doc := s3xml.CORSConfiguration{Rules: make([]s3xml.CORSRule, len(c.Rules))}
	for i, r := range c.Rules {
		doc.Rules[i] = s3xml.CORSRule{ID: r.ID, AllowedMethods: r.AllowedMethods, AllowedOrigins: r.AllowedOrigins,
			AllowedHeaders: r.AllowedHeaders, ExposeHeaders: r.ExposeHeaders, MaxAgeSeconds: r.MaxAgeSeconds}
	}
	return doc
}

// FuzzParseConfiguration feeds PutBucketCors bodies through decoding and
// Validate: a refusal is a client error, never InternalError; what is
// accepted comes back unchanged through GetBucketCors's document and
// through the stored form, and MatchStored agrees with Match on it.
func FuzzParseConfiguration(f *testing.F) {
	const minimal = `<AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod>`
	for _, s := range []string{
		`<CORSConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><CORSRule><ID>uploads</ID>` +
			`<AllowedOrigin>https://app.example.com</AllowedOrigin><AllowedOrigin>https://*.example.net</AllowedOrigin>` +
			`<AllowedMethod>PUT</AllowedMethod><AllowedMethod>POST</AllowedMethod>` +
			`<AllowedHeader>Content-Type</AllowedHeader><AllowedHeader>x-amz-*</AllowedHeader>` +
			`<ExposeHeader>ETag</ExposeHeader><MaxAgeSeconds>3000</MaxAgeSeconds></CORSRule>` +
			`<CORSRule>` + minimal + `<AllowedMethod>HEAD</AllowedMethod></CORSRule></CORSConfiguration>`,
		`<CORSConfiguration><CORSRule><AllowedMethod>GET</AllowedMethod><AllowedOrigin>*suffix</AllowedOrigin></CORSRule>` +
			`<CORSRule><AllowedMethod>GET</AllowedMethod><AllowedOrigin>start*end</AllowedOrigin></CORSRule></CORSConfiguration>`,
		`<CORSConfiguration><CORSRule>` + minimal + `<AllowedHeaders>*</AllowedHeaders></CORSRule></CORSConfiguration>`,
		`<CORSConfiguration><CORSRule>` + minimal + `<MaxAgeSeconds></MaxAgeSeconds></CORSRule></CORSConfiguration>`,
		`<CORSConfiguration><CORSRule>` + minimal + `<ID>a</ID><ID>b</ID></CORSRule></CORSConfiguration>`,
		`<CORSConfiguration><CORSRule>` + minimal + `<AllowedHeader>a b</AllowedHeader></CORSRule></CORSConfiguration>`,
		`<CORSConfiguration><CORSRule><AllowedOrigin>*.*</AllowedOrigin><AllowedMethod>PATCH</AllowedMethod></CORSRule></CORSConfiguration>`,
		`<CORSConfiguration/>`,
		`cors please`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := parseConfiguration(body)
		if err != nil {
			if code := s3err.CodeOf(err); code == s3err.InternalError || !s3err.Known(code) {
				t.Fatalf("parseConfiguration(%q) error %v, want a client error", body, err)
			}
			return
		}
		var buf bytes.Buffer
		if err := s3xml.Encode(&buf, documentOf(c)); err != nil {
			t.Fatal(err)
		}
		again, err := parseConfiguration(buf.Bytes())
		if err != nil {
			t.Fatalf("GetBucketCors document %q does not parse: %v", buf.Bytes(), err)
		}
		if diff := cmp.Diff(c, again); diff != "" {
			t.Errorf("rules change through GetBucketCors (-put +again):\n%s", diff)
		}
		doc := Encode(c)
		stored, err := Decode(doc)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(c, stored, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("rules change through storage (-put +stored):\n%s", diff)
		}
		// The names the first rules hold, a few of each, and others.
		few := func(l []string, other string) []string { return append(slices.Clone(l[:min(len(l), 4)]), other) }
		for _, r := range c.Rules[:min(len(c.Rules), 4)] {
			headers, err := ParseRequestHeaders(strings.Join(r.AllowedHeaders, ","))
			if err != nil {
				headers = nil
			}
			for _, m := range few(r.AllowedMethods, "GET") {
				for _, o := range few(r.AllowedOrigins, "https://app.example.com") {
					checkMatchStored(t, c, doc, o, m, nil)
					checkMatchStored(t, c, doc, o, m, headers)
				}
			}
		}
	})
}

// checkMatchStored fails t unless MatchStored on doc, c's stored form,
// finds the rule Match finds.
func checkMatchStored(t *testing.T, c *Config, doc []byte, origin, method string, headers []string) {
	t.Helper()
	got, err := MatchStored(doc, origin, method, headers)
	if err != nil {
		t.Fatalf("MatchStored(%q, %q, %q) error = %v", origin, method, headers, err)
	}
	if diff := cmp.Diff(c.Match(origin, method, headers), got, cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("MatchStored(%q, %q, %q) mismatch (-Match +MatchStored):\n%s", origin, method, headers, diff)
	}
}

// matchOracle is wildcardMatch written the slow way: s matches a pattern
// whose first "*" splits it into prefix and suffix if some i <= j has
// s[:i] == prefix and s[j:] == suffix. fold lowers ASCII letters first.
func matchOracle(pattern, s string, fold bool) bool {
	if fold {
		pattern, s = lowerASCIIString(pattern), lowerASCIIString(s)
	}
	prefix, suffix, star := strings.Cut(pattern, "*")
	if !star {
		return pattern == s
	}
	for i := 0; i <= len(s); i++ {
		for j := i; j <= len(s); j++ {
			if s[:i] == prefix && s[j:] == suffix {
				return true
			}
		}
	}
	return false
}

func lowerASCIIString(s string) string {
	b := []byte(s)
	for i, c := range b {
		b[i] = lowerASCII(c)
	}
	return string(b)
}

// FuzzMatch checks wildcard matching against matchOracle, for origins
// (exact case) and header names (ASCII case folded), and that MatchStored
// finds the rule Match finds for any pattern, origin and method.
func FuzzMatch(f *testing.F) {
	for _, s := range [][3]string{
		{"*suffix", "foo.suffix", "GET"},
		{"start*end", "startend", "GET"},
		{"a*a", "a", "PUT"},
		{"X-Amz-*", "x-amz-date", "POST"},
		{"x-\u212aey", "x-key", "DELETE"},
		{"**", "*", "HEAD"},
		{"", "", "get"},
		{"https://*.example.net", "https://eu.example.net", "PUT"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, pattern, s, method string) {
		if len(pattern) > 256 || len(s) > 256 {
			return // the oracle is quadratic
		}
		for _, fold := range []bool{false, true} {
			if got, want := wildcardMatch(pattern, s, fold), matchOracle(pattern, s, fold); got != want {
				t.Fatalf("wildcardMatch(%q, %q, %v) = %v, oracle says %v", pattern, s, fold, got, want)
			}
		}
		// A first rule that allows any origin, for one method, with pattern
		// as its only header; then pattern as the origin of the rule that
		// allows every method.
		c := &Config{Rules: []Rule{
			{ID: "first", AllowedMethods: []string{method}, AllowedOrigins: []string{"*"}, AllowedHeaders: []string{pattern}},
			{ID: "second", AllowedMethods: Methods[:], AllowedOrigins: []string{pattern}, MaxAgeSeconds: intp(len(s))},
		}}
		doc := Encode(c)
		checkMatchStored(t, c, doc, s, method, nil)
		if names, err := ParseRequestHeaders(s); err == nil {
			checkMatchStored(t, c, doc, s, method, names)
			checkMatchStored(t, c, doc, pattern, method, names)
		}
		for _, m := range Methods {
			checkMatchStored(t, c, doc, s, m, nil)
		}
	})
}

// FuzzParsePreflight feeds a preflight's headers, which come from anyone,
// through ParsePreflight and the refusals S3 gives before it reads the
// method.
func FuzzParsePreflight(f *testing.F) {
	f.Add("https://a.example", true, "PUT", "Content-Type,X-Amz-Date , x-amz-meta-a")
	f.Add("", true, "GET", "")
	f.Add("o", false, "", "")
	f.Add("o", true, "get", "a b")
	f.Add("o", true, "GET", "a,,b")
	f.Add("o", true, "GET", strings.Repeat("a,", 300))
	f.Add("o", true, "OPTIONS", "NonAsciiŁ")
	f.Fuzz(func(t *testing.T, origin string, sendMethod bool, method, requestHeaders string) {
		h := http.Header{}
		if origin != "" {
			h.Set("Origin", origin)
		}
		if sendMethod {
			h["Access-Control-Request-Method"] = []string{method}
		}
		if requestHeaders != "" {
			h["Access-Control-Request-Headers"] = []string{requestHeaders}
		}
		p, err := ParsePreflight(h)
		if err != nil {
			if s3err.CodeOf(err) != s3err.BadRequest {
				t.Fatalf("ParsePreflight(%q) error %v, want BadRequest", h, err)
			}
			if _, oerr := PreflightOrigin(h); (oerr != nil) != (origin == "") {
				t.Fatalf("PreflightOrigin(%q) error %v with origin %q", h, oerr, origin)
			}
		} else {
			if p.Origin != origin || origin == "" || !IsMethod(p.Method) || p.Method != method || len(p.Headers) > MaxRequestHeaders {
				t.Fatalf("ParsePreflight(%q) = %+v", h, p)
			}
			for _, n := range p.Headers {
				if !IsToken(n) || strings.ToLower(n) != n {
					t.Fatalf("ParsePreflight(%q) returned header %q", h, n)
				}
			}
			names, ok := ActualHeaders(h)
			if !ok || !cmp.Equal(names, p.Headers) {
				t.Fatalf("ActualHeaders(%q) = %q, %v; ParsePreflight's %q", h, names, ok, p.Headers)
			}
		}
		// The refusals before the method name it as sent, else OPTIONS.
		want := http.MethodOptions
		if sendMethod {
			want = method
		}
		for _, refuse := range []func(http.Header, string) error{NotEnabled, BucketNotFound} {
			e, ok := refuse(h, http.MethodOptions).(*s3err.Error)
			if !ok || e.Code != s3err.AccessForbidden ||
				!cmp.Equal(e.Extra, []s3err.Field{{Name: "Method", Value: want}, {Name: "ResourceType", Value: ResourceBucket}}) {
				t.Fatalf("refusal of %q = %#v", h, e)
			}
		}
	})
}
