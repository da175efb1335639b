package sigv4

import (
	"errors"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coffer-s3/coffer/internal/s3err"
	"github.com/google/go-cmp/cmp"
)

// v2Examples are the SigV2 examples of the S3 documentation
// (https://docs.aws.amazon.com/AmazonS3/latest/userguide/RESTAuthentication.html,
// "Authentication examples" and "Query string request authentication
// alternative"), signed by exampleCred. The upload example, sent to a CNAME
// there, is sent path style here: its StringToSign is the same.
var v2Examples = []struct {
	name string
	wire string // request as sent, "\n" line ends
	now  string // RFC 1123Z server time
	sts  string // StringToSign from the documentation
}{{
	name: "object GET",
	wire: "GET /photos/puppy.jpg HTTP/1.1\nHost: johnsmith.s3.amazonaws.com\nDate: Tue, 27 Mar 2007 19:36:42 +0000\n" +
		"Authorization: AWS AKIAIOSFODNN7EXAMPLE:bWq2s1WEIj+Ydj0vQ697zp+IXMU=\n\n",
	now: "Tue, 27 Mar 2007 19:36:42 +0000",
	sts: "GET\n\n\nTue, 27 Mar 2007 19:36:42 +0000\n/johnsmith/photos/puppy.jpg",
}, {
	name: "object PUT",
	wire: "PUT /photos/puppy.jpg HTTP/1.1\nContent-Type: image/jpeg\nContent-Length: 0\nHost: johnsmith.s3.amazonaws.com\n" +
		"Date: Tue, 27 Mar 2007 21:15:45 +0000\nAuthorization: AWS AKIAIOSFODNN7EXAMPLE:MyyxeRY7whkBe+bq8fHCL/2kKUg=\n\n",
	now: "Tue, 27 Mar 2007 21:15:45 +0000",
	sts: "PUT\n\nimage/jpeg\nTue, 27 Mar 2007 21:15:45 +0000\n/johnsmith/photos/puppy.jpg",
}, {
	name: "list",
	wire: "GET /?prefix=photos&max-keys=50&marker=puppy HTTP/1.1\nUser-Agent: Mozilla/5.0\nHost: johnsmith.s3.amazonaws.com\n" +
		"Date: Tue, 27 Mar 2007 19:42:41 +0000\nAuthorization: AWS AKIAIOSFODNN7EXAMPLE:htDYFYduRNen8P9ZfE/s9SuKy0U=\n\n",
	now: "Tue, 27 Mar 2007 19:42:41 +0000",
	sts: "GET\n\n\nTue, 27 Mar 2007 19:42:41 +0000\n/johnsmith/",
}, {
	name: "fetch ACL",
	wire: "GET /?acl HTTP/1.1\nHost: johnsmith.s3.amazonaws.com\nDate: Tue, 27 Mar 2007 19:44:46 +0000\n" +
		"Authorization: AWS AKIAIOSFODNN7EXAMPLE:c2WLPFtWHVgbEmeEG93a4cG37dM=\n\n",
	now: "Tue, 27 Mar 2007 19:44:46 +0000",
	sts: "GET\n\n\nTue, 27 Mar 2007 19:44:46 +0000\n/johnsmith/?acl",
}, {
	name: "upload with amz headers",
	wire: "PUT /static.johnsmith.net/db-backup.dat.gz HTTP/1.1\nUser-Agent: curl/7.15.5\nHost: s3.amazonaws.com\n" +
		"Date: Tue, 27 Mar 2007 21:06:08 +0000\nx-amz-acl: public-read\nContent-Type: application/x-download\n" +
		"Content-MD5: 4gJE4saaMU4BqNR0kLY+lw==\nX-Amz-Meta-ReviewedBy: joe@johnsmith.net\nX-Amz-Meta-ReviewedBy: jane@johnsmith.net\n" +
		"X-Amz-Meta-FileChecksum: 0x02661779\nX-Amz-Meta-ChecksumAlgorithm: crc32\n" +
		"Content-Disposition: attachment; filename=database.dat\nContent-Encoding: gzip\nContent-Length: 0\n" +
		"Authorization: AWS AKIAIOSFODNN7EXAMPLE:ilyl83RwaSoYIEdixDQcA4OnAnc=\n\n",
	now: "Tue, 27 Mar 2007 21:06:08 +0000",
	sts: "PUT\n4gJE4saaMU4BqNR0kLY+lw==\napplication/x-download\nTue, 27 Mar 2007 21:06:08 +0000\n" +
		"x-amz-acl:public-read\nx-amz-meta-checksumalgorithm:crc32\nx-amz-meta-filechecksum:0x02661779\n" +
		"x-amz-meta-reviewedby:joe@johnsmith.net,jane@johnsmith.net\n/static.johnsmith.net/db-backup.dat.gz",
}, {
	name: "list all buckets",
	wire: "GET / HTTP/1.1\nHost: s3.amazonaws.com\nDate: Wed, 28 Mar 2007 01:29:59 +0000\n" +
		"Authorization: AWS AKIAIOSFODNN7EXAMPLE:qGdzdERIC03wnaRNKh6OqZehG9s=\n\n",
	now: "Wed, 28 Mar 2007 01:29:59 +0000",
	sts: "GET\n\n\nWed, 28 Mar 2007 01:29:59 +0000\n/",
}, {
	name: "unicode keys",
	wire: "GET /dictionary/fran%C3%A7ais/pr%c3%a9f%c3%a8re HTTP/1.1\nHost: s3.amazonaws.com\nDate: Wed, 28 Mar 2007 01:49:49 +0000\n" +
		"Authorization: AWS AKIAIOSFODNN7EXAMPLE:DNEZGsoieTZ92F3bUfSPQcbGmlM=\n\n",
	now: "Wed, 28 Mar 2007 01:49:49 +0000",
	sts: "GET\n\n\nWed, 28 Mar 2007 01:49:49 +0000\n/dictionary/fran%C3%A7ais/pr%c3%a9f%c3%a8re",
}, {
	name: "query string",
	wire: "GET /photos/puppy.jpg?AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Signature=NpgCjnDzrM%2BWFzoENXmpNDUsSn8%3D&Expires=1175139620 HTTP/1.1\n" +
		"Host: johnsmith.s3.amazonaws.com\n\n",
	now: "Tue, 27 Mar 2007 19:36:42 +0000",
	sts: "GET\n\n\n1175139620\n/johnsmith/photos/puppy.jpg",
}}

// v2Verifier returns a Verifier for domain whose clock reads now.
func v2Verifier(now time.Time, domain string, kr Keyring) *Verifier {
	return NewVerifier(Config{Clock: func() time.Time { return now }, Domain: domain}, kr)
}

func wire(t testing.TB, s string) *http.Request {
	t.Helper()
	return parseWire(t, []byte(strings.ReplaceAll(s, "\n", "\r\n")))
}

func TestV2AWSExamples(t *testing.T) {
	for _, tc := range v2Examples {
		t.Run(tc.name, func(t *testing.T) {
			now, err := time.Parse(time.RFC1123Z, tc.now)
			if err != nil {
				t.Fatal(err)
			}
			v := v2Verifier(now, "s3.amazonaws.com", newKeyring(exampleCred))
			r := wire(t, tc.wire)
			dateLine := headerValue(r.Header, "Date")
			presigned := r.URL.Query().Has("Signature")
			if presigned {
				dateLine = r.URL.Query().Get("Expires")
			}
			sts := appendV2StringToSign(nil, r, dateLine, v.hostBucket(r.Host), rawPath(r))
			if diff := cmp.Diff(tc.sts, string(sts)); diff != "" {
				t.Errorf("StringToSign (-doc +got):\n%s", diff)
			}
			res, err := v.Verify(r)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			want := &Result{AccessKeyID: exampleCred.AccessKeyID, Presigned: presigned, V2: true, Payload: PayloadUnsigned, DecodedLength: -1}
			if diff := cmp.Diff(want, res, cmp.AllowUnexported(Result{}), cmpIgnoreLength); diff != "" {
				t.Errorf("Result (-want +got):\n%s", diff)
			}
			// Another secret under the same key must not verify.
			v = v2Verifier(now, "s3.amazonaws.com", newKeyring(Credentials{AccessKeyID: exampleCred.AccessKeyID, SecretKey: "other"}))
			_, err = v.Verify(wire(t, tc.wire))
			wantCode(t, err, s3err.SignatureDoesNotMatch)
			if got := extra(err, "StringToSign"); got != tc.sts {
				t.Errorf("StringToSign element = %q, want %q", got, tc.sts)
			}
		})
	}
}

// cmpIgnoreLength ignores Result.contentLength, which is the wire's business.
var cmpIgnoreLength = cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".contentLength" }, cmp.Ignore())

// TestV2Botocore verifies a URL presigned by botocore with
// signature_version "s3" (SigV2), as boto3 and aws CLI v1 make by default.
func TestV2Botocore(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err == nil {
		err = exec.Command(python, "-c", "import botocore").Run()
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("python3 with botocore is required in CI: %v", err)
		}
		t.Skipf("python3 with botocore not available: %v", err)
	}
	const script = `
import botocore.session, botocore.config
c = botocore.session.get_session().create_client('s3', endpoint_url='http://127.0.0.1:6790', region_name='us-east-1',
    aws_access_key_id='AKIDTEST', aws_secret_access_key='test-secret',
    config=botocore.config.Config(signature_version='s3'))
print(c.generate_presigned_url('get_object', Params={'Bucket': 'b', 'Key': 'odd key+\u00fc', 'ResponseContentDisposition': 'attachment; filename="a b.txt"'}, ExpiresIn=300))
print(c.generate_presigned_url('put_object', Params={'Bucket': 'b', 'Key': 'dir/=&;~%'}, ExpiresIn=300))
`
	out, err := exec.Command(python, "-c", script).Output()
	if err != nil {
		t.Fatalf("botocore: %v", err)
	}
	urls := strings.Fields(string(out))
	if len(urls) != 2 {
		t.Fatalf("botocore printed %q", out)
	}
	methods := []string{http.MethodGet, http.MethodPut}
	v := NewVerifier(Config{}, newKeyring(testCred))
	for i, u := range urls {
		t.Run(methods[i], func(t *testing.T) {
			if !strings.Contains(u, "AWSAccessKeyId=AKIDTEST") || !strings.Contains(u, "Expires=") {
				t.Fatalf("not a SigV2 URL: %s", u)
			}
			res, err := v.Verify(serverSide(t, newRequest(t, methods[i], u, nil)))
			if err != nil {
				t.Fatalf("Verify(%s): %v", u, err)
			}
			if !res.Presigned || res.AccessKeyID != "AKIDTEST" || res.Payload != PayloadUnsigned {
				t.Errorf("result = %+v", res)
			}
			_, err = v.Verify(serverSide(t, newRequest(t, http.MethodDelete, u, nil)))
			wantCode(t, err, s3err.SignatureDoesNotMatch)
		})
	}
}

// v2Keys are object keys that exercise escaping.
var v2Keys = []string{"plain.txt", "odd key+ü", "a%b", "dir/ä ö/#?x", "=&;~!*'()", "//double//slash", "日本語/ファイル"}

func TestV2RoundTrip(t *testing.T) {
	now := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	v := v2Verifier(now, "s3.test", newKeyring(testCred))
	for _, key := range v2Keys {
		for _, query := range []string{"", "?versionId=3%2Bx", "?uploadId=u&partNumber=2&prefix=ignored", "?response-content-disposition=attachment%3B%20filename%3D%22a%20b%22&acl"} {
			u := "http://127.0.0.1:6790/bucket/" + (&url.URL{Path: key}).EscapedPath() + query
			t.Run("query "+key+query, func(t *testing.T) {
				signed, err := SignV2Query(http.MethodGet, u, testCred, now.Add(time.Hour))
				if err != nil {
					t.Fatal(err)
				}
				res, err := v.Verify(serverSide(t, newRequest(t, http.MethodGet, signed, nil)))
				if err != nil {
					t.Fatalf("Verify(%s): %v", signed, err)
				}
				if !res.Presigned || res.AccessKeyID != testCred.AccessKeyID {
					t.Errorf("result = %+v", res)
				}
			})
			t.Run("header "+key+query, func(t *testing.T) {
				c := newRequest(t, http.MethodPut, u, []byte("hello"))
				c.Header.Set("Content-Type", "text/plain")
				c.Header.Set("Content-MD5", "XUFAKrxLKna5cZ2REBfFkg==")
				c.Header.Add("X-Amz-Meta-Tag", " one ")
				c.Header.Add("X-Amz-Meta-Tag", "two")
				c.Header.Set("X-Amz-Acl", "private")
				SignV2Request(c, testCred, now)
				res, err := v.Verify(serverSide(t, c))
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
				if res.Presigned || res.AccessKeyID != testCred.AccessKeyID || res.Payload != PayloadUnsigned {
					t.Errorf("result = %+v", res)
				}
			})
		}
	}
}

// TestV2VirtualHost moves a path-style request to bucket.Domain: the
// resource stays /bucket/key, so it verifies only if Domain is configured.
func TestV2VirtualHost(t *testing.T) {
	now := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	c := newRequest(t, http.MethodGet, "http://s3.test:6790/bucket/odd%20key%2B", nil)
	SignV2Request(c, testCred, now)
	vc := newRequest(t, http.MethodGet, "http://bucket.s3.test:6790/odd%20key%2B", nil)
	vc.Header = c.Header.Clone()
	for _, tc := range []struct {
		domain string
		want   s3err.Code
	}{
		{"s3.test", ""},
		{"S3.Test.", ""},
		{"", s3err.SignatureDoesNotMatch},
		{"other.test", s3err.SignatureDoesNotMatch},
		{"t", s3err.SignatureDoesNotMatch},
	} {
		t.Run(tc.domain, func(t *testing.T) {
			_, err := v2Verifier(now, tc.domain, newKeyring(testCred)).Verify(serverSide(t, vc))
			wantCode(t, err, tc.want)
		})
	}
	// Path style needs no Domain, and a Domain does not disturb it.
	for _, d := range []string{"", "s3.test"} {
		_, err := v2Verifier(now, d, newKeyring(testCred)).Verify(serverSide(t, c))
		wantCode(t, err, "")
	}
}

func TestV2Errors(t *testing.T) {
	now := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	const base = "http://127.0.0.1:6790/bucket/key?versionId=1"
	presigned := func(exp time.Time) string {
		u, err := SignV2Query(http.MethodGet, base, testCred, exp)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	query := func(edit func(string) string) func() *http.Request {
		return func() *http.Request {
			return newRequest(t, http.MethodGet, edit(presigned(now.Add(time.Hour))), nil)
		}
	}
	replace := func(old, new string) func(string) string {
		return func(u string) string { return strings.Replace(u, old, new, 1) }
	}
	header := func(edit func(*http.Request)) func() *http.Request {
		return func() *http.Request {
			c := newRequest(t, http.MethodPut, base, []byte("x"))
			c.Header.Set("X-Amz-Meta-A", "1")
			SignV2Request(c, testCred, now)
			if edit != nil {
				edit(c)
			}
			return c
		}
	}
	v4 := func() *http.Request {
		c := newRequest(t, http.MethodGet, base, nil)
		SignRequest(c, testCred, "us-east-1", now, emptySHA256)
		return c
	}
	v4Query, err := Presign(http.MethodGet, base, testCred, "us-east-1", now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	_, v4Params, _ := strings.Cut(v4Query, "?")

	for _, tc := range []struct {
		name    string
		req     func() *http.Request
		now     time.Time // default now
		keys    *keyring
		want    s3err.Code
		message string // S3's message; "" for the table's
	}{
		{name: "query ok", req: query(func(u string) string { return u })},
		{name: "query non-subresource added", req: query(func(u string) string { return u + "&prefix=p" })},
		{name: "query subresource added", req: query(func(u string) string { return u + "&acl" }), want: s3err.SignatureDoesNotMatch},
		{name: "query subresource changed", req: query(replace("versionId=1", "versionId=2")), want: s3err.SignatureDoesNotMatch},
		{name: "query path changed", req: query(replace("/key", "/kez")), want: s3err.SignatureDoesNotMatch},
		{name: "query signature changed", req: query(replace("Signature=", "Signature=A")), want: s3err.SignatureDoesNotMatch},
		{name: "query expires changed", req: query(func(u string) string {
			return strings.Replace(u, "Expires=1748775600", "Expires=1748775601", 1)
		}), want: s3err.SignatureDoesNotMatch},
		{name: "query unknown key", req: query(func(u string) string { return u }), keys: newKeyring(), want: s3err.InvalidAccessKeyID},
		{name: "query expired", req: query(func(u string) string { return u }), now: now.Add(time.Hour + time.Second), want: s3err.AccessDenied, message: "Request has expired"},
		{name: "query last second", req: query(func(u string) string { return u }), now: now.Add(time.Hour)},
		{name: "query a week", req: func() *http.Request { return newRequest(t, http.MethodGet, presigned(now.Add(maxExpires)), nil) }},
		{name: "query beyond a week", req: func() *http.Request {
			return newRequest(t, http.MethodGet, presigned(now.Add(maxExpires+time.Second)), nil)
		}, want: s3err.AccessDenied, message: "Expires must be less than a week (604800 seconds) in the future"},
		{name: "query expires not a number", req: query(replace("Expires=1748775600", "Expires=soon")), want: s3err.AccessDenied, message: "Invalid date (should be seconds since epoch): soon"},
		{name: "query expires negative", req: query(replace("Expires=1748775600", "Expires=-1")), want: s3err.AccessDenied, message: "Invalid date (should be seconds since epoch): -1"},
		{name: "query no expires", req: query(replace("&Expires=1748775600", "")), want: s3err.AccessDenied, message: "Query-string authentication requires the Signature, Expires and AWSAccessKeyId parameters"},
		{name: "query empty key", req: query(replace("AWSAccessKeyId=AKIDTEST", "AWSAccessKeyId=")), want: s3err.AccessDenied, message: "Query-string authentication requires the Signature, Expires and AWSAccessKeyId parameters"},
		{name: "query duplicate signature", req: query(func(u string) string { return u + "&Signature=x" }), want: s3err.InvalidArgument, message: "Query-string authentication requires a single Signature parameter."},
		{name: "query bad escape", req: query(func(u string) string { return u + "&Expires=%zz" }), want: s3err.InvalidArgument, message: "Query-string authentication requires a single Expires parameter."},
		{name: "query plus unescaped", req: query(func(u string) string { return strings.ReplaceAll(u, "%2B", "+") })},
		{name: "header ok", req: header(nil)},
		{name: "header empty x-amz-date", req: func() *http.Request {
			// Date would then decide freshness without being signed.
			c := newRequest(t, http.MethodGet, base, nil)
			c.Header["X-Amz-Date"] = []string{""}
			SignV2Request(c, testCred, now)
			return c
		}, want: s3err.AccessDenied, message: "AWS authentication requires a valid Date or x-amz-date header"},
		{name: "header x-amz-date signed", req: func() *http.Request {
			c := newRequest(t, http.MethodGet, base, nil)
			c.Header.Set("X-Amz-Date", now.Format(time.RFC1123Z))
			SignV2Request(c, testCred, now.Add(-time.Hour)) // Date is not signed; x-amz-date decides
			return c
		}},
		{name: "header iso x-amz-date", req: func() *http.Request {
			c := newRequest(t, http.MethodGet, base, nil)
			c.Header.Set("X-Amz-Date", now.Format(iso8601Basic))
			SignV2Request(c, testCred, now)
			return c
		}},
		{name: "header x-amz-date skewed", req: func() *http.Request {
			c := newRequest(t, http.MethodGet, base, nil)
			c.Header.Set("X-Amz-Date", now.Add(-time.Hour).Format(time.RFC1123Z))
			SignV2Request(c, testCred, now)
			return c
		}, want: s3err.RequestTimeTooSkewed},
		{name: "header amz header changed", req: header(func(r *http.Request) { r.Header.Set("X-Amz-Meta-A", "2") }), want: s3err.SignatureDoesNotMatch},
		{name: "header amz header added", req: header(func(r *http.Request) { r.Header.Set("X-Amz-Acl", "public-read") }), want: s3err.SignatureDoesNotMatch},
		{name: "header content-type added", req: header(func(r *http.Request) { r.Header.Set("Content-Type", "text/html") }), want: s3err.SignatureDoesNotMatch},
		{name: "header other header added", req: header(func(r *http.Request) { r.Header.Set("Cache-Control", "no-cache") })},
		{name: "header method changed", req: header(func(r *http.Request) { r.Method = http.MethodDelete }), want: s3err.SignatureDoesNotMatch},
		{name: "header unknown key", req: header(nil), keys: newKeyring(), want: s3err.InvalidAccessKeyID},
		{name: "header skew past", req: header(nil), now: now.Add(16 * time.Minute), want: s3err.RequestTimeTooSkewed},
		{name: "header skew future", req: header(nil), now: now.Add(-16 * time.Minute), want: s3err.RequestTimeTooSkewed},
		{name: "header skew within", req: header(nil), now: now.Add(14 * time.Minute)},
		{name: "header no date", req: header(func(r *http.Request) { r.Header.Del("Date") }), want: s3err.AccessDenied, message: "AWS authentication requires a valid Date or x-amz-date header"},
		{name: "header bad date", req: header(func(r *http.Request) { r.Header.Set("Date", "yesterday") }), want: s3err.AccessDenied, message: "AWS authentication requires a valid Date or x-amz-date header"},
		{name: "header no colon", req: header(func(r *http.Request) { r.Header.Set("Authorization", "AWS AKIDTEST") }), want: s3err.InvalidArgument, message: "AWS authorization header is invalid.  Expected AwsAccessKeyId:signature"},
		{name: "header no key", req: header(func(r *http.Request) { r.Header.Set("Authorization", "AWS :abc=") }), want: s3err.InvalidArgument, message: "AWS authorization header is invalid.  Expected AwsAccessKeyId:signature"},
		{name: "header no signature", req: header(func(r *http.Request) { r.Header.Set("Authorization", "AWS AKIDTEST:") }), want: s3err.InvalidArgument, message: "AWS authorization header is invalid.  Expected AwsAccessKeyId:signature"},
		{name: "header space in signature", req: header(func(r *http.Request) { r.Header.Set("Authorization", "AWS AKIDTEST:a b") }), want: s3err.InvalidArgument, message: "AWS authorization header is invalid.  Expected AwsAccessKeyId:signature"},
		{name: "header two authorizations", req: header(func(r *http.Request) { r.Header.Add("Authorization", "AWS AKIDTEST:x") }), want: s3err.AuthorizationHeaderMalformed, message: "The authorization header is malformed; multiple Authorization headers"},
		{name: "v2 header and v2 query", req: func() *http.Request {
			c := newRequest(t, http.MethodGet, presigned(now.Add(time.Hour)), nil)
			SignV2Request(c, testCred, now)
			return c
		}, want: s3err.InvalidArgument, message: "Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, Signature query string parameter or the Authorization header should be specified"},
		{name: "v2 header and v4 query", req: func() *http.Request {
			c := newRequest(t, http.MethodGet, v4Query, nil)
			SignV2Request(c, testCred, now)
			return c
		}, want: s3err.InvalidArgument, message: "Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, Signature query string parameter or the Authorization header should be specified"},
		{name: "v4 header and v2 query", req: func() *http.Request {
			c := newRequest(t, http.MethodGet, presigned(now.Add(time.Hour)), nil)
			SignRequest(c, testCred, "us-east-1", now, emptySHA256)
			return c
		}, want: s3err.InvalidArgument, message: "Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, Signature query string parameter or the Authorization header should be specified"},
		{name: "v2 and v4 query", req: query(func(u string) string { return u + "&" + v4Params }), want: s3err.InvalidArgument, message: "Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, Signature query string parameter or the Authorization header should be specified"},
		{name: "v4 still verifies", req: v4},
		{name: "header decoded path signed", req: func() *http.Request {
			// Some clients sign the key before escaping it.
			c := newRequest(t, http.MethodGet, "http://h/bucket/odd%20key%2B%C3%BC", nil)
			c.Header.Set("Date", now.Format(http.TimeFormat))
			sts := appendV2StringToSign(nil, c, c.Header.Get("Date"), "", "/bucket/odd key+ü")
			c.Header.Set("Authorization", "AWS "+testCred.AccessKeyID+":"+v2Signature(testCred.SecretKey, sts))
			return c
		}},
		{name: "header other path signed", req: func() *http.Request {
			c := newRequest(t, http.MethodGet, "http://h/bucket/odd%20key", nil)
			c.Header.Set("Date", now.Format(http.TimeFormat))
			sts := appendV2StringToSign(nil, c, c.Header.Get("Date"), "", "/bucket/odd+key")
			c.Header.Set("Authorization", "AWS "+testCred.AccessKeyID+":"+v2Signature(testCred.SecretKey, sts))
			return c
		}, want: s3err.SignatureDoesNotMatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at, keys := tc.now, tc.keys
			if at.IsZero() {
				at = now
			}
			if keys == nil {
				keys = newKeyring(testCred)
			}
			_, err := v2Verifier(at, "", keys).Verify(serverSide(t, tc.req()))
			if tc.want == "" || tc.want == s3err.InternalError {
				wantCode(t, err, tc.want)
			} else {
				wantError(t, err, tc.want, tc.message)
			}
		})
	}
}

func TestV2KeyringError(t *testing.T) {
	now := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	kr := newKeyring(testCred)
	kr.err = errors.New("database down")
	c := newRequest(t, http.MethodGet, "http://h/b/k", nil)
	SignV2Request(c, testCred, now)
	_, err := v2Verifier(now, "", kr).Verify(serverSide(t, c))
	if !errors.Is(err, kr.err) || s3err.CodeOf(err) == s3err.SignatureDoesNotMatch {
		t.Fatalf("error = %v, want the keyring's", err)
	}
	var e *s3err.Error
	if errors.As(err, &e) {
		t.Fatalf("error = %v, want a non-S3 internal error", err)
	}
}

func TestV2AmzHeaders(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    http.Header
		want string
	}{
		{"none", http.Header{"Content-Type": {"a"}}, ""},
		{"sorted lowercase", http.Header{"X-Amz-Meta-B": {"2"}, "X-Amz-Acl": {"private"}, "X-Amzfoo": {"no"}}, "x-amz-acl:private\nx-amz-meta-b:2\n"},
		{"repeated trimmed", http.Header{"X-Amz-Meta-R": {" joe ", "jane\t"}}, "x-amz-meta-r:joe,jane\n"},
		{"folded", http.Header{"X-Amz-Meta-F": {"a,\r\n   b \n\tc"}}, "x-amz-meta-f:a, b c\n"},
		{"same name other case", http.Header{"x-amz-meta-c": {"1"}, "X-Amz-Meta-C": {"2"}}, "x-amz-meta-c:2,1\n"},
		{"prefix only", http.Header{"X-Amz-": {"v"}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, string(appendV2AmzHeaders(nil, tc.h))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestV2Resource(t *testing.T) {
	for _, tc := range []struct {
		name, bucket, path, query, want string
	}{
		{"path style", "", "/b/k%20x", "", "/b/k%20x"},
		{"virtual host", "b", "/k", "", "/b/k"},
		{"bucket root", "b", "/", "", "/b/"},
		{"empty path", "", "", "", "/"},
		{"sorted decoded", "", "/b/k", "versionId=a%2Bb&acl&prefix=x&uploadId=u+v", "/b/k?acl&uploadId=u v&versionId=a+b"},
		{"empty value", "", "/b/k", "uploads=&delete", "/b/k?delete&uploads"},
		{"response overrides", "", "/b/k", "response-content-type=text%2Fplain&response-expires=x&response-cache-control=no", "/b/k?response-cache-control=no&response-content-type=text/plain&response-expires=x"},
		{"escaped name", "", "/b/k", "%61cl", "/b/k?acl"},
		{"case matters", "", "/b/k", "ACL&VersionId=1", "/b/k"},
		{"every sub-resource", "", "/", strings.Join(v2SubResources, "&"), "/?" + strings.Join(v2SubResources, "&")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, string(appendV2Resource(nil, tc.bucket, tc.path, tc.query))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if !slices.IsSorted(v2SubResources) {
		t.Error("v2SubResources is not sorted")
	}
}

func TestSignV2QueryErrors(t *testing.T) {
	for _, u := range []string{"/relative", "http://h/b/k?Signature=x", "http://h/b/k?Expires=1", "http://h/b/k?AWSAccessKeyId=a", "http://h/%zz"} {
		if _, err := SignV2Query(http.MethodGet, u, testCred, time.Now()); err == nil {
			t.Errorf("SignV2Query(%q) succeeded", u)
		}
	}
}

func FuzzParseV2(f *testing.F) {
	for _, tc := range v2Examples {
		r := wire(f, tc.wire)
		f.Add(r.Header.Get("Authorization"), r.URL.RawQuery)
	}
	f.Add("AWS a:b", "AWSAccessKeyId=a&Signature=b&Expires=1&acl&versionId=%zz")
	f.Add("AWS :", "Expires=99999999999999999999&AWSAccessKeyId=&Signature=")
	f.Add("AWS  k:s:t", "Signature=a&Signature=b")
	f.Add("AWS a:b", "partNumber=1%26uploadId%3DU&response-content-disposition=Tom%20%26%20Jerry")
	f.Fuzz(func(t *testing.T, header, query string) {
		if len(header)+len(query) > maxFuzzInput {
			return
		}
		a, err := parseV2Authorization(header)
		if err == nil {
			if a.accessKeyID == "" || a.signature == "" || strings.Contains(a.accessKeyID, ":") {
				t.Fatalf("parseV2Authorization(%q) = inconsistent %+v", header, a)
			}
			b, err := parseV2Authorization(v2Prefix + a.accessKeyID + ":" + a.signature)
			if err != nil || b != a {
				t.Fatalf("round trip of %q: %+v, %v; want %+v", header, b, err, a)
			}
		} else if c := s3err.CodeOf(err); c != s3err.InvalidArgument {
			t.Fatalf("parseV2Authorization(%q) error = %v", header, err)
		}
		// A value refused is one with '&' before a signed sub-resource's
		// name; an accepted query signs as nothing else would split it.
		verr := checkV2Values(query)
		if c := s3err.CodeOf(verr); verr != nil && c != s3err.InvalidRequest {
			t.Fatalf("checkV2Values(%q) error = %v", query, verr)
		}
		if verr == nil {
			for _, p := range v2SubResourcesOf(query) {
				for _, piece := range strings.Split(p.value, "&")[1:] {
					if name, _, _ := strings.Cut(piece, "="); V2SignsSubResource(name) {
						t.Fatalf("checkV2Values(%q) passed %s's value %q, which signs as a second %s", query, p.name, p.value, name)
					}
				}
			}
		}
		q, err := parseV2Query(query)
		if err == nil && (q.accessKeyID == "" || q.signature == "" || q.expires < 0) {
			t.Fatalf("parseV2Query(%q) = inconsistent %+v", query, q)
		}
		if c := s3err.CodeOf(err); err != nil && c != s3err.InvalidArgument && c != s3err.AccessDenied {
			t.Fatalf("parseV2Query(%q) error = %v", query, err)
		}
		params := v2SubResourcesOf(query)
		for _, p := range params {
			if _, found := slices.BinarySearch(v2SubResources, p.name); !found {
				t.Fatalf("sub-resources of %q include %q", query, p.name)
			}
		}
		if !slices.IsSortedFunc(params, func(a, b v2Param) int { return strings.Compare(a.name, b.name) }) {
			t.Fatalf("sub-resources of %q are not sorted: %v", query, params)
		}
		if res := string(appendV2Resource(nil, "", "/p", query)); !strings.HasPrefix(res, "/p") || (len(params) > 0) != strings.Contains(res, "?") {
			t.Fatalf("resource of %q = %q", query, res)
		}
	})
}

func BenchmarkVerifyV2Presigned(b *testing.B) {
	now := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	u, err := SignV2Query(http.MethodGet, "http://127.0.0.1:6790/bucket/photos/2025/img_0001.jpg?versionId=3", testCred, now.Add(time.Hour))
	if err != nil {
		b.Fatal(err)
	}
	r := serverSide(b, newRequest(b, http.MethodGet, u, nil))
	v := v2Verifier(now, "", newKeyring(testCred))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Verify(r); err != nil {
			b.Fatal(err)
		}
	}
}

// TestV2Tampering: what SigV2 does not sign cannot move a signed request
// elsewhere — a virtual host with a final dot (which the router reads as
// the same bucket.Domain), or a "?" of the signed resource sent as "%3F"
// in the path (which the router reads as part of the key).
func TestV2Tampering(t *testing.T) {
	now := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	v := v2Verifier(now, "s3.test", newKeyring(testCred))

	c := newRequest(t, http.MethodDelete, "http://s3.test:6790/y/k", nil)
	SignV2Request(c, testCred, now)
	if _, err := v.Verify(serverSide(t, c)); err != nil {
		t.Fatalf("the signed request: %v", err)
	}
	moved := newRequest(t, http.MethodDelete, "http://z.s3.test.:6790/y/k", nil)
	moved.Header = c.Header.Clone()
	_, err := v.Verify(serverSide(t, moved))
	wantCode(t, err, s3err.SignatureDoesNotMatch)

	p := newRequest(t, http.MethodPut, "http://s3.test:6790/b/k?partNumber=1&uploadId=U", []byte("x"))
	SignV2Request(p, testCred, now)
	if _, err := v.Verify(serverSide(t, p)); err != nil {
		t.Fatalf("the signed part upload: %v", err)
	}
	asKey := newRequest(t, http.MethodPut, "http://s3.test:6790/b/k%3FpartNumber=1%26uploadId=U", []byte("x"))
	asKey.Header = p.Header.Clone()
	_, err = v.Verify(serverSide(t, asKey))
	wantCode(t, err, s3err.SignatureDoesNotMatch)

	// The part upload's two sub-resources sent as one value of the first
	// (a PutObject of the whole object) sign the same; refused, by
	// header and by query string.
	joined := newRequest(t, http.MethodPut, "http://s3.test:6790/b/k?partNumber=1%26uploadId%3DU", []byte("x"))
	joined.Header = p.Header.Clone()
	_, err = v.Verify(serverSide(t, joined))
	wantCode(t, err, s3err.InvalidRequest)
	u, err := SignV2Query(http.MethodPut, "http://s3.test:6790/b/k?partNumber=1&uploadId=U", testCred, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(serverSide(t, newRequest(t, http.MethodPut, u, []byte("x")))); err != nil {
		t.Fatalf("the presigned part upload: %v", err)
	}
	forged := strings.Replace(u, "partNumber=1&uploadId=U", "partNumber=1%26uploadId%3DU", 1)
	_, err = v.Verify(serverSide(t, newRequest(t, http.MethodPut, forged, []byte("x"))))
	wantCode(t, err, s3err.InvalidRequest)

	// An '&' that no sub-resource name follows is a value's own: a file
	// name in response-content-disposition signs and verifies.
	g := newRequest(t, http.MethodGet, "http://s3.test:6790/b/k?response-content-disposition="+
		url.QueryEscape(`attachment; filename="Tom & Jerry.txt"`), nil)
	SignV2Request(g, testCred, now)
	if _, err := v.Verify(serverSide(t, g)); err != nil {
		t.Errorf("a signed GET with '&' in response-content-disposition: %v", err)
	}
}

func TestV2SubResourcesSorted(t *testing.T) {
	if !slices.IsSorted(v2SubResources) {
		t.Fatalf("v2SubResources is not sorted: V2SignsSubResource searches it: %v", v2SubResources)
	}
	for _, name := range []string{"acl", "uploadId", "versions"} {
		if !V2SignsSubResource(name) {
			t.Errorf("V2SignsSubResource(%q) = false", name)
		}
	}
	for _, name := range []string{"publicAccessBlock", "attributes", "prefix", ""} {
		if V2SignsSubResource(name) {
			t.Errorf("V2SignsSubResource(%q) = true", name)
		}
	}
}
