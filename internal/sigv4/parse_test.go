package sigv4

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/coffer-s3/coffer/internal/s3err"
)

func TestCanonicalURI(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "/"},
		{"/", "/"},
		{"/bucket/key", "/bucket/key"},
		{"/a b", "/a%20b"},
		{"/a+b", "/a%2Bb"},
		{"/a%2bb", "/a%2Bb"},
		{"/a%2Bb", "/a%2Bb"},
		{"/a%2Fb", "/a/b"},
		{"/%7Euser", "/~user"},
		{"/~user", "/~user"},
		{"/\xc3\xbc", "/%C3%BC"},
		{"/%c3%bc", "/%C3%BC"},
		{"/100%", "/100%25"},
		{"/100%2", "/100%252"},
		{"/%zz", "/%25zz"},
		{"//a//b/", "//a//b/"},
		{"/a=b&c", "/a%3Db%26c"},
		{"/!$'()*,;:@", "/%21%24%27%28%29%2A%2C%3B%3A%40"},
	} {
		if got := string(appendCanonicalURI(nil, tc.in)); got != tc.want {
			t.Errorf("appendCanonicalURI(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCanonicalQuery(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		skipSig  bool
	}{
		{in: "", want: ""},
		{in: "uploads", want: "uploads="},
		{in: "uploads=", want: "uploads="},
		{in: "b=2&a=1", want: "a=1&b=2"},
		{in: "a=2&a=1&a=10", want: "a=1&a=10&a=2"},
		{in: "a+b=c+d", want: "a%20b=c%20d"},
		{in: "a%2Bb=%2b", want: "a%2Bb=%2B"},
		{in: "x=%7E&y=~", want: "x=~&y=~"},
		// Sorted after encoding: '%' (0x25) sorts before '-' (0x2D).
		{in: "a-b=c&a/b=c/d", want: "a%2Fb=c%2Fd&a-b=c"},
		{in: "&&a=1&", want: "a=1"},
		{in: "k=%zz", want: "k=%25zz"},
		{in: "k=v=w", want: "k=v%3Dw"},
		{in: "=v", want: "=v"},
		{in: "X-Amz-Signature=abc&a=1", want: "X-Amz-Signature=abc&a=1"},
		{in: "X-Amz-Signature=abc&a=1", want: "a=1", skipSig: true},
	} {
		var q canonQuery
		q.parse(tc.in)
		if got := string(q.appendCanonical(nil, tc.skipSig)); got != tc.want {
			t.Errorf("canonical query of %q = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestRawPath(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    *http.Request
		want string
	}{
		{"origin form", &http.Request{RequestURI: "/b/a%2Fb?x=1", URL: &url.URL{Path: "/b/a/b"}}, "/b/a%2Fb"},
		{"absolute form", &http.Request{RequestURI: "http://h:1/b/k?q", URL: &url.URL{}}, "/b/k"},
		{"absolute form no path", &http.Request{RequestURI: "http://h:1", URL: &url.URL{}}, "/"},
		{"asterisk", &http.Request{RequestURI: "*", URL: &url.URL{Path: "*"}}, "*"},
		{"client", &http.Request{URL: &url.URL{Path: "/b/a b", RawPath: ""}}, "/b/a%20b"},
		{"client raw path", &http.Request{URL: &url.URL{Path: "/b/a/b", RawPath: "/b/a%2Fb"}}, "/b/a%2Fb"},
		{"opaque", &http.Request{URL: &url.URL{Opaque: "//host/b/k%20x?q"}}, "/b/k%20x"},
	} {
		if got := rawPath(tc.r); got != tc.want {
			t.Errorf("%s: rawPath = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestAppendTrimmed(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"   ", ""},
		{"a", "a"},
		{"  a  b   c  ", "a b c"},
		{"\ta\t\tb\t", "a\t\tb"},
		{"a \t b", "a \t b"},
	} {
		if got := string(appendTrimmed(nil, tc.in)); got != tc.want {
			t.Errorf("appendTrimmed(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// authorizationCases seed FuzzParseAuthorization too.
var authorizationCases = []struct {
	name, in string
	want     s3err.Code
}{
	{"sdk", "AWS4-HMAC-SHA256 Credential=AK/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-date, Signature=" + emptySHA256, ""},
	{"minio-go", "AWS4-HMAC-SHA256 Credential=AK/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;x-amz-date,Signature=" + emptySHA256, ""},
	{"reordered", "AWS4-HMAC-SHA256 Signature=" + emptySHA256 + " SignedHeaders=host Credential=AK/20130524/us-east-1/s3/aws4_request", ""},
	{"tabs and commas", "AWS4-HMAC-SHA256\tCredential=AK/20130524/r/s3/aws4_request,,\tSignedHeaders=host ,Signature=" + emptySHA256 + ",", ""},
	{"algorithm only", "AWS4-HMAC-SHA256", s3err.AuthorizationHeaderMalformed},
	{"empty", "", s3err.InvalidArgument},
	{"sigv2", "AWS AK:sig", s3err.InvalidRequest},
	{"lowercase algorithm", "aws4-hmac-sha256 Credential=a/b/c/d/e", s3err.InvalidArgument},
	{"unknown component", "AWS4-HMAC-SHA256 Credential=AK/20130524/r/s3/aws4_request, SignedHeaders=host, Signature=" + emptySHA256 + ", Foo=bar", s3err.AuthorizationHeaderMalformed},
	{"no equals", "AWS4-HMAC-SHA256 Credential", s3err.AuthorizationHeaderMalformed},
	{"six-part credential", "AWS4-HMAC-SHA256 Credential=A/K/20130524/r/s3/aws4_request, SignedHeaders=host, Signature=" + emptySHA256, s3err.AuthorizationHeaderMalformed},
	{"empty region", "AWS4-HMAC-SHA256 Credential=AK/20130524//s3/aws4_request, SignedHeaders=host, Signature=" + emptySHA256, s3err.AuthorizationHeaderMalformed},
	{"empty signed header", "AWS4-HMAC-SHA256 Credential=AK/20130524/r/s3/aws4_request, SignedHeaders=host;;x, Signature=" + emptySHA256, s3err.AuthorizationHeaderMalformed},
	{"trailing semicolon", "AWS4-HMAC-SHA256 Credential=AK/20130524/r/s3/aws4_request, SignedHeaders=host;, Signature=" + emptySHA256, s3err.AuthorizationHeaderMalformed},
	{"non-hex signature", "AWS4-HMAC-SHA256 Credential=AK/20130524/r/s3/aws4_request, SignedHeaders=host, Signature=" + emptySHA256[:63] + "g", s3err.AuthorizationHeaderMalformed},
}

func TestParseAuthorization(t *testing.T) {
	want := authorization{
		cred:          credential{accessKeyID: "AK", date: "20130524", region: "us-east-1", service: "s3", terminator: "aws4_request", scope: "20130524/us-east-1/s3/aws4_request"},
		signedHeaders: "host;x-amz-date",
	}
	parseSignature(&want.signature, emptySHA256)
	for _, tc := range authorizationCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseAuthorization(tc.in)
			wantCode(t, err, tc.want)
			if err == nil && tc.name == "sdk" {
				if diff := cmp.Diff(want, got, cmp.AllowUnexported(authorization{}, credential{})); diff != "" {
					t.Errorf("mismatch (-want +got):\n%s", diff)
				}
			}
		})
	}
}
