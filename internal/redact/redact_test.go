package redact

import (
	"net/url"
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	t.Parallel()
	const secret = "Sup3rS3cret"
	for _, tc := range []struct {
		name, in, want string
	}{
		{name: "no userinfo", in: "https://s3.example.com:9000/base?x=1#f", want: "https://s3.example.com:9000/base?x=1#f"},
		{name: "at sign in the path", in: "https://s3.example.com/bucket/a@b", want: "https://s3.example.com/bucket/a@b"},
		{name: "user and password", in: "https://AKID:" + secret + "@s3.example.com/base", want: "https://***@s3.example.com/base"},
		{name: "token as the user", in: "https://ghp_" + secret + "@github.example.com/", want: "https://***@github.example.com/"},
		{name: "escaped user", in: "https://a%2Fb" + secret + "@h", want: "https://***@h"},
		{name: "empty user", in: "https://@h/p", want: "https://***@h/p"},
		{name: "userinfo without host", in: "http://" + secret + "@", want: "http://***@"},
		{name: "userinfo and query", in: "http://" + secret + "@h?a=b", want: "http://***@h?a=b"},
		{name: "opaque", in: "https:AKID:" + secret + "@s3.example.com", want: "***@s3.example.com"},
		{name: "opaque with a path", in: "https:" + secret + "@h/p@q", want: "***@q"}, // masked up to the last "@": the safe side
		{name: "opaque, slash in the secret", in: "https:AKID:wJalrXUtn/K7MDENG" + secret + "@s3.example.com", want: "***@s3.example.com"},
		{name: "opaque, ? in the secret", in: "https:user:pa?ss" + secret + "@h", want: "***@h"},
		{name: "opaque, # in the secret", in: "https:user:pa#ss" + secret + "@h", want: "***@h"},
		{name: "user as scheme, slash in the secret", in: "akid:wJalrXUtn/K7MDENG" + secret + "@s3.example.com:9000", want: "***@s3.example.com:9000"},
		{name: "no scheme", in: "ghp_" + secret + "@s3.example.com/x", want: "***@s3.example.com/x"},
		{name: "no scheme, slash in the secret", in: "user:se/cr?et" + secret + "@s3.example.com", want: "***@s3.example.com"},
		{name: "no scheme, at sign in the path", in: "s3.example.com/a@b", want: "***@b"}, // the safe side
		{name: "postgres", in: "postgres://coffer:" + secret + "@db:5432/coffer?sslmode=verify-full", want: "postgres://***@db:5432/coffer?sslmode=verify-full"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			u, err := url.Parse(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			got := URL(u)
			if got != tc.want {
				t.Errorf("URL(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if strings.Contains(got, secret) {
				t.Errorf("URL(%q) = %q shows the secret", tc.in, got)
			}
		})
	}
	if got := URL(nil); got != "" {
		t.Errorf("URL(nil) = %q, want \"\"", got)
	}
}
