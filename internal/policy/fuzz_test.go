package policy

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// demoBucket is the bucket of the bucket policies in testdata/policies,
// examples in the style of the AWS documentation.
const demoBucket = "amzn-s3-demo-bucket"

func realWorldPolicies(t testing.TB) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "policies", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("no policies in testdata/policies")
	}
	out := make(map[string][]byte, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(p)] = b
	}
	return out
}

// parseFile parses a testdata policy by its name: bucket-*.json as a
// policy of demoBucket, the others as identity policies.
func parseFile(name string, doc []byte) (*Policy, error) {
	if strings.HasPrefix(name, "bucket-") {
		return ParseBucket(demoBucket, doc)
	}
	return ParseIdentity(doc)
}

// TestRealWorldPolicies parses policies written as AWS documents them and
// checks a few decisions on each.
func TestRealWorldPolicies(t *testing.T) {
	obj := func(key string) string { return s3ARNPrefix + demoBucket + "/" + key }
	bucket := s3ARNPrefix + demoBucket
	checks := map[string][]struct {
		ctx  Context
		want Decision
	}{
		"bucket-public-read.json": {
			{req(getObj, obj("index.html"), anonymous), Allow},
			{req(putObj, obj("index.html"), anonymous), NotApplicable},
		},
		"bucket-require-tls.json": {
			{req(getObj, obj("a")), Deny},
			{req(getObj, obj("a"), secure), NotApplicable},
		},
		"bucket-ip-allowlist.json": {
			{req(getObj, obj("a"), withIP("192.0.2.10")), NotApplicable},
			{req(getObj, obj("a"), withIP("2001:db8:1234:5678::9")), NotApplicable},
			{req(getObj, obj("a"), withIP("198.51.100.1")), Deny},
		},
		"bucket-grant-user.json": {
			{req(putObj, obj("projects/x"), withUser("JohnDoe")), Allow},
			{req(putObj, obj("projects/x"), asRoot), Allow},
			{req(putObj, obj("other/x"), withUser("JohnDoe")), NotApplicable},
			{req(list, bucket, withUser("JohnDoe"), withPrefix("projects/a"), func(c *Context) { c.Delimiter, c.HasDelimiter = "/", true }), Allow},
			{req(list, bucket, withUser("JohnDoe"), withPrefix("projects/a")), NotApplicable},
		},
		"bucket-referer.json": {
			{req(getObj, obj("a"), anonymous, func(c *Context) { c.Referer = "http://example.com/page" }), Allow},
			{req(getObj, obj("a"), anonymous), NotApplicable},
		},
		"bucket-sigv4-only.json": {
			{req(getObj, obj("a"), func(c *Context) { c.SignatureVersion, c.AuthType = "AWS", "REST-HEADER" }), Deny},
			{req(getObj, obj("a"), func(c *Context) { c.SignatureVersion, c.AuthType = "AWS4-HMAC-SHA256", "REST-QUERY-STRING" }), Deny},
			{req(getObj, obj("a"), func(c *Context) { c.SignatureVersion, c.AuthType = "AWS4-HMAC-SHA256", "REST-HEADER" }), NotApplicable},
		},
		"bucket-max-keys.json": {
			{req(list, bucket, withUser("Dave"), withMaxKeys("10")), Allow},
			{req(list, bucket, withUser("Dave"), withMaxKeys("1000")), NotApplicable},
		},
		"identity-home-directory.json": {
			{req("s3:ListAllMyBuckets", ""), Allow},
			{req(list, bucket, withPrefix("home/alice/docs")), Allow},
			{req(list, bucket, withPrefix("home/bob/")), NotApplicable},
			{req(putObj, obj("home/alice/x")), Allow},
			{req(putObj, obj("home/bob/x")), NotApplicable},
		},
		"identity-time-window.json": {
			{req(getObj, obj("a")), Allow},
			{req(getObj, obj("a"), withTime(now.AddDate(1, 0, 0))), NotApplicable},
		},
		"identity-read-one-bucket.json": {
			{req(getObj, obj("a")), Allow},
			{req("s3:DeleteObject", obj("a")), Allow},
			{req("s3:GetObjectAcl", obj("a")), NotApplicable},
		},
		"identity-deny-delete.json": {
			{req("s3:DeleteObject", obj("a")), Deny},
			{req("s3:DeleteBucketPolicy", bucket), Deny},
			{req("s3:DeleteObject", "arn:aws:s3:::scratch/a"), Allow},
			{req(AdminCreateUser, ""), NotApplicable},
		},
		"identity-2008.json": {
			{req(getObj, obj("alice/x")), NotApplicable},
			{req(getObj, obj("${aws:username}/x")), Allow},
		},
		"identity-secure-office.json": {
			{req(getObj, obj("a"), withIP("203.0.113.5"), secure), Allow},
			{req(getObj, obj("a"), withIP("203.0.113.5"), secure, func(c *Context) { c.UserAgent = "curl/8.0" }), NotApplicable},
			{req(getObj, obj("a"), withIP("203.0.113.5")), NotApplicable},
			{req(getObj, obj("a"), withIP("203.0.113.5"), secure, withUser("")), NotApplicable},
		},
		"identity-admin-operators.json": {
			{req(AdminCreateUser, ""), Allow},
			{req(AdminDeleteAccessKey, ""), Allow},
			{req(AdminAttachPolicy, ""), NotApplicable},
			{req(AdminRunGC, ""), Deny},
		},
	}
	for name, d := range realWorldPolicies(t) {
		t.Run(name, func(t *testing.T) {
			p, err := parseFile(name, d)
			if err != nil {
				t.Fatal(err)
			}
			cs, ok := checks[name]
			if !ok {
				t.Fatalf("no decisions to check for %s", name)
			}
			for _, c := range cs {
				if got := p.Evaluate(&c.ctx); got != c.want {
					t.Errorf("Evaluate(%+v) = %v, want %v", c.ctx, got, c.want)
				}
			}
		})
	}
}

// fuzzContexts are requests every parsed policy is evaluated against.
var fuzzContexts = func() []Context {
	t := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	full := func(c Context) Context {
		c.SourceIP = netip.MustParseAddr("203.0.113.9")
		c.SecureTransport = true
		c.CurrentTime = t
		c.Prefix, c.HasPrefix = "home/alice/", true
		c.Delimiter, c.HasDelimiter = "/", true
		c.MaxKeys, c.HasMaxKeys = "100", true
		c.UserAgent, c.Referer = "aws-cli/2", "http://example.com/"
		c.SignatureVersion, c.AuthType = "AWS4-HMAC-SHA256", "REST-HEADER"
		return c
	}
	alice := Principal{User: "alice"}
	return []Context{
		{Action: "s3:GetObject", Resource: "arn:aws:s3:::b/k", Principal: alice, Username: "alice"},
		full(Context{Action: "s3:ListBucket", Resource: "arn:aws:s3:::b", Principal: alice, Username: "alice"}),
		full(Context{Action: "s3:PutObject", Resource: "arn:aws:s3:::amzn-s3-demo-bucket/home/alice/x", Principal: Principal{Anonymous: true}}),
		{Action: "s3:ListAllMyBuckets", Principal: Principal{Root: true}},
		{Action: "admin:CreateUser", Principal: alice, Username: "alice"},
		{Action: "s3:FutureAction", Resource: "arn:aws:s3:::b/ключ/é?*", Principal: alice},
		full(Context{Action: "S3:GETOBJECT", Resource: "arn:aws:s3:::amzn-s3-demo-bucket/${aws:username}/x", Principal: alice, Username: "a*"}),
	}
}()

// FuzzParse checks that ParseIdentity and ParseBucket never panic, that a
// rejection is an *Error, and that a parsed policy's Raw document parses
// to a policy deciding the same.
func FuzzParse(f *testing.F) {
	for _, d := range realWorldPolicies(f) {
		f.Add(d)
	}
	for _, name := range CannedNames() {
		p, _ := Canned(name)
		f.Add(p.Raw())
	}
	f.Add([]byte(doc(`{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::b/${aws:username, 'x'}${*}${?}${$}?*"}`)))
	f.Add([]byte(`{"Statement":{"Effect":"Deny","Principal":{"AWS":["123456789012","arn:aws:iam::123456789012:user/p/alice"]},"NotAction":"s3:Get*","NotResource":"arn:aws:s3:::b","Condition":{"ForAllValues:StringLikeIfExists":{"s3:prefix":["a*",1,true]},"Null":{"aws:SourceIp":true}}}}`))

	parsers := []struct {
		name  string
		parse func([]byte) (*Policy, error)
	}{
		{"identity", ParseIdentity},
		{"bucket b", func(d []byte) (*Policy, error) { return ParseBucket("b", d) }},
		{"bucket " + demoBucket, func(d []byte) (*Policy, error) { return ParseBucket(demoBucket, d) }},
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, ps := range parsers {
			p, err := ps.parse(data)
			if err != nil {
				if !errors.As(err, new(*Error)) {
					t.Fatalf("%s: error %v is a %T, want *Error", ps.name, err, err)
				}
				continue
			}
			q, err := ps.parse(p.Raw())
			if err != nil {
				t.Fatalf("%s: Raw does not re-parse: %v", ps.name, err)
			}
			for i := range fuzzContexts {
				c, d := fuzzContexts[i], fuzzContexts[i] // a context per evaluation: each has its budget
				if got, want := q.Evaluate(&c), p.Evaluate(&d); got != want {
					t.Fatalf("%s: re-parsed policy decides %v, the original %v, for %+v", ps.name, got, want, c)
				}
			}
			for _, b := range []string{"b", demoBucket, "other"} {
				if p.CouldAllowInBucket(Principal{User: "alice"}, "alice", b, "s3:ListBucket", "s3:GetObject") !=
					q.CouldAllowInBucket(Principal{User: "alice"}, "alice", b, "s3:ListBucket", "s3:GetObject") {
					t.Fatalf("%s: CouldAllowInBucket differs after re-parsing", ps.name)
				}
			}
			if p.Public() != q.Public() {
				t.Fatalf("%s: Public differs after re-parsing", ps.name)
			}
		}
	})
}

// FuzzGlob checks the wildcard matcher against regexp, and matching with
// ${aws:username} against matching its value spliced in as literal text.
func FuzzGlob(f *testing.F) {
	for _, s := range [][2]string{
		{"arn:aws:s3:::b/*", "arn:aws:s3:::b/k"},
		{"*ab*ab", "xabyabab"},
		{"a?c*", "aéc"},
		{"**?*", ""},
		{"*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaa"},
		{"x*", "x\xff\xfe"},
	} {
		f.Add(s[0], s[1], "alice")
	}
	f.Fuzz(func(t *testing.T, pat, s, user string) {
		if len(pat) > 256 || len(s) > 1024 {
			return // both matchers take O(len(pat)·len(s)): keep runs quick
		}
		var re strings.Builder
		re.WriteString(`^(?s)`)
		for _, r := range pat {
			switch r {
			case '*':
				re.WriteString(`.*`)
			case '?':
				re.WriteString(`.`)
			default:
				re.WriteString(regexp.QuoteMeta(string(r)))
			}
		}
		re.WriteString(`$`)
		want := regexp.MustCompile(re.String()).MatchString(s)
		if !utf8.ValidString(pat) {
			return // regexp reads invalid UTF-8 in the pattern differently
		}
		if got := globMatch(compileGlob(pat), s); got != want {
			t.Fatalf("globMatch(%q, %q) = %v, regexp says %v", pat, s, got, want)
		}

		// The same pattern with a variable in the middle, if a policy may
		// hold it (checkWildcards refuses more than maxWildcards).
		if user == "" || strings.Contains(pat, "${") || checkWildcards(pat) != nil {
			return
		}
		half := len(pat) / 2
		for half > 0 && !utf8.RuneStart(pat[half]) {
			half--
		}
		withVar, err := compilePattern(pat[:half]+"${aws:username}"+pat[half:], true, true)
		if err != nil {
			t.Fatalf("compilePattern: %v", err)
		}
		spliced := append(append(compileGlob(pat[:half]), piece{kind: pLit, lit: user}), compileGlob(pat[half:])...)
		c := Context{Username: user}
		if got, want := withVar.match(s, &c), globMatch(spliced, s); got != want && !c.Costly() {
			t.Fatalf("pattern %q with username %q on %q: %v, spliced literal says %v", pat, user, s, got, want)
		}
	})
}
