package s3api

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coffer-s3/coffer/internal/checksum"
	"github.com/coffer-s3/coffer/internal/s3err"
	"github.com/coffer-s3/coffer/internal/sigv4"
)

// field is one form field, in the order sent.
type field struct{ name, value string }

// postForm is a browser form upload under construction.
type postForm struct {
	fields   []field
	file     []byte
	filename string // the file part's filename; "" for none
	noFile   bool   // leave the file out
	after    []field
}

// body encodes f as multipart/form-data and returns it with its content
// type.
func (f *postForm) body(t testing.TB) ([]byte, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, fl := range f.fields {
		if err := mw.WriteField(fl.name, fl.value); err != nil {
			t.Fatal(err)
		}
	}
	if !f.noFile {
		fw, err := mw.CreateFormFile("file", f.filename)
		if err != nil {
			t.Fatal(err)
		}
		fw.Write(f.file)
	}
	for _, fl := range f.after {
		if err := mw.WriteField(fl.name, fl.value); err != nil {
			t.Fatal(err)
		}
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), mw.FormDataContentType()
}

// policyDoc returns the base64 policy of conditions, expiring at exp.
func policyDoc(t testing.TB, exp time.Time, conditions ...any) string {
	t.Helper()
	doc, err := json.Marshal(map[string]any{"expiration": exp.UTC().Format("2006-01-02T15:04:05.000Z"), "conditions": conditions})
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(doc)
}

// signedV4 returns the fields of a form signed with SigV4 by cred: the
// policy of conds (plus the credential, date and algorithm, as AWS
// requires) and the signature, followed by extra.
func signedV4(t testing.TB, cred sigv4.Credentials, exp time.Time, conds []any, extra ...field) []field {
	t.Helper()
	date := testNow().Format("20060102T150405Z")
	credential := cred.AccessKeyID + "/" + testNow().Format("20060102") + "/" + testRegion + "/s3/aws4_request"
	conds = append(conds,
		map[string]string{"x-amz-algorithm": "AWS4-HMAC-SHA256"},
		map[string]string{"x-amz-credential": credential},
		map[string]string{"x-amz-date": date})
	policy := policyDoc(t, exp, conds...)
	c, d, sig := sigv4.SignPost(policy, cred, testRegion, testNow())
	if c != credential || d != date {
		t.Fatalf("SignPost gave credential %q and date %q, want %q and %q", c, d, credential, date)
	}
	return append(extra,
		field{"policy", policy},
		field{"x-amz-algorithm", "AWS4-HMAC-SHA256"},
		field{"x-amz-credential", credential},
		field{"x-amz-date", date},
		field{"x-amz-signature", sig})
}

// signedV2 returns the fields of a form signed with SigV2, as signedV4.
func signedV2(t testing.TB, cred sigv4.Credentials, exp time.Time, conds []any, extra ...field) []field {
	t.Helper()
	policy := policyDoc(t, exp, conds...)
	return append(extra,
		field{"AWSAccessKeyId", cred.AccessKeyID},
		field{"policy", policy},
		field{"signature", sigv4.SignPostV2(policy, cred.SecretKey)})
}

// post sends f to bucket, anonymously (the form carries its own
// authentication).
func (hs *harness) post(bucket string, f *postForm, prepare ...func(*http.Request)) reply {
	hs.t.Helper()
	body, ct := f.body(hs.t)
	c := call{method: http.MethodPost, path: "/" + bucket, body: body, anon: true,
		header: http.Header{"Content-Type": {ct}}}
	if len(prepare) > 0 {
		c.prepare = prepare[0]
	}
	return hs.do(c)
}

func TestPostObject(t *testing.T) {
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	later := testNow().Add(time.Hour)
	basic := []any{
		map[string]string{"bucket": "bkt"},
		[]any{"starts-with", "$key", "up/"},
		[]any{"starts-with", "$Content-Type", "text/"},
		[]any{"content-length-range", 0, 1 << 20},
	}
	file := []byte("hello from a browser")

	t.Run("sigv4", func(t *testing.T) {
		rp := hs.post("bkt", &postForm{file: file, fields: signedV4(t, rootCred(), later, append(basic, []any{"starts-with", "$x-amz-meta-color", ""}),
			field{"key", "up/v4.txt"}, field{"Content-Type", "text/plain"}, field{"x-amz-meta-color", "blue"})})
		rp.mustStatus(t, http.StatusNoContent)
		if got, want := rp.header.Get("ETag"), etagOf(file); got != want {
			t.Errorf("ETag %q, want %q", got, want)
		}
		if got, want := rp.header.Get("Location"), hs.srv.URL+"/bkt/up/v4.txt"; got != want {
			t.Errorf("Location %q, want %q", got, want)
		}
		g := hs.do(call{method: http.MethodGet, path: "/bkt/up/v4.txt"}).mustStatus(t, http.StatusOK)
		if !bytes.Equal(g.body, file) || g.header.Get("Content-Type") != "text/plain" || g.header.Get("x-amz-meta-color") != "blue" {
			t.Errorf("GET: %q, Content-Type %q, color %q", g.body, g.header.Get("Content-Type"), g.header.Get("x-amz-meta-color"))
		}
	})
	t.Run("sigv2 with ${filename}, case-insensitive fields and an ignored field", func(t *testing.T) {
		rp := hs.post("bkt", &postForm{file: file, filename: `C:\Users\me\photo.txt`, fields: signedV2(t, rootCred(), later, basic,
			field{"KEY", "up/${filename}"}, field{"content-type", "text/plain"}, field{"x-ignore-me", "anything"})})
		rp.mustStatus(t, http.StatusNoContent)
		hs.do(call{method: http.MethodHead, path: "/bkt/up/photo.txt"}).mustStatus(t, http.StatusOK)
	})
	t.Run("the policy checks the key after ${filename}; checksums need no condition", func(t *testing.T) {
		conds := []any{map[string]string{"bucket": "bkt"}, []any{"eq", "$key", "up/exact.txt"}}
		rp := hs.post("bkt", &postForm{file: file, filename: "exact.txt", fields: signedV4(t, rootCred(), later, conds,
			field{"key", "up/${filename}"}, field{"x-amz-checksum-sha256", sha256B64(file)})})
		rp.mustStatus(t, http.StatusNoContent)
		rp = hs.post("bkt", &postForm{file: file, filename: "exact.txt", fields: signedV4(t, rootCred(), later, conds,
			field{"key", "up/${filename}"}, field{"x-amz-checksum-sha256", sha256B64([]byte("other"))})})
		rp.want(t, http.StatusBadRequest, s3err.BadDigest)
	})
	t.Run("201 with a PostResponse", func(t *testing.T) {
		rp := hs.post("bkt", &postForm{file: file, fields: signedV4(t, rootCred(), later, append(basic, map[string]string{"success_action_status": "201"}),
			field{"key", "up/201"}, field{"Content-Type", "text/plain"}, field{"success_action_status", "201"})})
		rp.mustStatus(t, http.StatusCreated)
		want := fmt.Sprintf(`<PostResponse><Location>%s/bkt/up/201</Location><Bucket>bkt</Bucket><Key>up/201</Key><ETag>&#34;%s</ETag></PostResponse>`,
			hs.srv.URL, strings.Trim(etagOf(file), `"`)+`&#34;`)
		if !strings.Contains(string(rp.body), want) {
			t.Errorf("body %s\nwant it to contain %s", rp.body, want)
		}
	})
	t.Run("200 and an invalid status", func(t *testing.T) {
		for status, want := range map[string]int{"200": http.StatusOK, "404": http.StatusNoContent} {
			rp := hs.post("bkt", &postForm{file: file, fields: signedV4(t, rootCred(), later, append(basic, []any{"eq", "$success_action_status", status}),
				field{"key", "up/" + status}, field{"Content-Type", "text/plain"}, field{"success_action_status", status})})
			rp.mustStatus(t, want)
			if len(rp.body) != 0 {
				t.Errorf("status %s: body %q, want none", status, rp.body)
			}
		}
	})
	t.Run("redirect", func(t *testing.T) {
		const to = "https://app.example.com/done?from=form"
		body, ct := (&postForm{file: file, fields: signedV4(t, rootCred(), later, append(basic, []any{"starts-with", "$success_action_redirect", "https://app.example.com/"}),
			field{"key", "up/redirected"}, field{"Content-Type", "text/plain"}, field{"success_action_redirect", to})}).body(t)
		r := hs.request(call{method: http.MethodPost, path: "/bkt", anon: true, body: body, header: http.Header{"Content-Type": {ct}}})
		client := *hs.srv.Client()
		client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		resp, err := client.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("status %d, want 303", resp.StatusCode)
		}
		u, err := url.Parse(resp.Header.Get("Location"))
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		if u.Host != "app.example.com" || q.Get("from") != "form" || q.Get("bucket") != "bkt" || q.Get("key") != "up/redirected" || q.Get("etag") != etagOf(file) {
			t.Errorf("Location %s", u)
		}
	})
	t.Run("tagging", func(t *testing.T) {
		tagging := `<Tagging><TagSet><Tag><Key>team</Key><Value>web</Value></Tag></TagSet></Tagging>`
		hs.post("bkt", &postForm{file: file, fields: signedV4(t, rootCred(), later, append(basic, []any{"starts-with", "$tagging", ""}),
			field{"key", "up/tagged"}, field{"Content-Type", "text/plain"}, field{"tagging", tagging})}).mustStatus(t, http.StatusNoContent)
		rp := hs.do(call{method: http.MethodGet, path: "/bkt/up/tagged?tagging"}).mustStatus(t, http.StatusOK)
		if !strings.Contains(string(rp.body), "<Key>team</Key><Value>web</Value>") {
			t.Errorf("tags %s", rp.body)
		}
	})
	t.Run("checksum fields", func(t *testing.T) {
		// A form field carries a flexible checksum as the header would,
		// the newer algorithms included; a wrong one is refused.
		for _, alg := range []checksum.Algorithm{checksum.SHA256, checksum.SHA512, checksum.XXHASH3, checksum.XXHASH128} {
			h := alg.New()
			h.Write(file)
			sum := checksum.Encode(h.Sum(nil))
			key := "up/ck-" + string(alg)
			conds := append(basic, []any{"starts-with", "$" + alg.Header(), ""})
			hs.post("bkt", &postForm{file: file, fields: signedV4(t, rootCred(), later, conds,
				field{"key", key}, field{"Content-Type", "text/plain"}, field{alg.Header(), sum})}).mustStatus(t, http.StatusNoContent)
			g := hs.do(call{method: http.MethodHead, path: "/bkt/" + key, header: http.Header{"X-Amz-Checksum-Mode": {"ENABLED"}}}).mustStatus(t, http.StatusOK)
			if got := g.header.Get(alg.Header()); got != sum {
				t.Errorf("HEAD of a form upload with %s: %s %q, want %q", alg, alg.Header(), got, sum)
			}
			rp := hs.post("bkt", &postForm{file: file, fields: signedV4(t, rootCred(), later, conds,
				field{"key", key + "-bad"}, field{"Content-Type", "text/plain"}, field{alg.Header(), checksum.Encode(make([]byte, alg.Size()))})})
			rp.mustStatus(t, http.StatusBadRequest)
			if !strings.Contains(string(rp.body), "<Code>BadDigest</Code>") {
				t.Errorf("form upload with a wrong %s: %s, want BadDigest", alg, rp.body)
			}
		}
	})
	t.Run("large file in blocks", func(t *testing.T) {
		big := bytes.Repeat([]byte("0123456789abcdef"), 600<<10/16) // past the inline threshold, in blocks
		conds := []any{map[string]string{"bucket": "bkt"}, []any{"eq", "$key", "up/big"}}
		hs.post("bkt", &postForm{file: big, fields: signedV4(t, rootCred(), later, conds, field{"key", "up/big"})}).mustStatus(t, http.StatusNoContent)
		g := hs.do(call{method: http.MethodGet, path: "/bkt/up/big"}).mustStatus(t, http.StatusOK)
		if !bytes.Equal(g.body, big) || g.header.Get("ETag") != etagOf(big) {
			t.Errorf("GET of a %d-byte form upload: %d bytes, ETag %s", len(big), len(g.body), g.header.Get("ETag"))
		}
	})
}

func TestPostObjectErrors(t *testing.T) {
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	hs.mkBucket("other")
	later := testNow().Add(time.Hour)
	basic := []any{
		map[string]string{"bucket": "bkt"},
		[]any{"starts-with", "$key", "up/"},
		[]any{"content-length-range", 2, 10},
	}
	file := []byte("hello")
	ok := func(t *testing.T, extra ...field) []field {
		return signedV4(t, rootCred(), later, basic, append([]field{{"key", "up/x"}}, extra...)...)
	}
	reader := hs.user("reader", "readonly")
	for _, tc := range []struct {
		name   string
		bucket string // default "bkt"
		form   func(t *testing.T) *postForm
		status int
		code   s3err.Code
	}{
		{"expired", "", func(t *testing.T) *postForm {
			return &postForm{file: file, fields: signedV4(t, rootCred(), testNow().Add(-time.Second), basic, field{"key", "up/x"})}
		}, 403, s3err.AccessDenied},
		{"condition fails", "", func(t *testing.T) *postForm {
			return &postForm{file: file, fields: signedV4(t, rootCred(), later, basic, field{"key", "down/x"})}
		}, 403, s3err.AccessDenied},
		{"field without a condition", "", func(t *testing.T) *postForm {
			return &postForm{file: file, fields: ok(t, field{"x-amz-meta-secret", "1"})}
		}, 403, s3err.AccessDenied},
		{"wrong bucket", "other", func(t *testing.T) *postForm {
			return &postForm{file: file, fields: ok(t, field{"bucket", "bkt"})}
		}, 403, s3err.AccessDenied},
		{"too large", "", func(t *testing.T) *postForm {
			return &postForm{file: []byte("hello, world"), fields: ok(t)}
		}, 400, s3err.EntityTooLarge},
		{"too small", "", func(t *testing.T) *postForm {
			return &postForm{file: []byte("h"), fields: ok(t)}
		}, 400, s3err.EntityTooSmall},
		{"bad signature", "", func(t *testing.T) *postForm {
			f := ok(t)
			f[len(f)-1].value = strings.Repeat("0", 64)
			return &postForm{file: file, fields: f}
		}, 403, s3err.SignatureDoesNotMatch},
		{"bad signature v2", "", func(t *testing.T) *postForm {
			f := signedV2(t, rootCred(), later, basic, field{"key", "up/x"})
			f[len(f)-1].value = "AAAA"
			return &postForm{file: file, fields: f}
		}, 403, s3err.SignatureDoesNotMatch},
		{"unknown key", "", func(t *testing.T) *postForm {
			return &postForm{file: file, fields: signedV2(t, sigv4.Credentials{AccessKeyID: "NOSUCHKEY", SecretKey: "x"}, later, basic, field{"key", "up/x"})}
		}, 403, s3err.InvalidAccessKeyID},
		{"missing signature", "", func(t *testing.T) *postForm {
			f := signedV2(t, rootCred(), later, basic, field{"key", "up/x"})
			return &postForm{file: file, fields: f[:len(f)-1]}
		}, 400, s3err.InvalidArgument},
		{"policy without expiration", "", func(t *testing.T) *postForm {
			policy := base64.StdEncoding.EncodeToString([]byte(`{"conditions": [["starts-with", "$key", ""]]}`))
			return &postForm{file: file, fields: []field{{"key", "up/x"}, {"AWSAccessKeyId", rootAccessKey}, {"policy", policy},
				{"signature", sigv4.SignPostV2(policy, rootSecretKey)}}}
		}, 400, s3err.InvalidPolicyDocument},
		{"policy not base64", "", func(t *testing.T) *postForm {
			return &postForm{file: file, fields: []field{{"key", "up/x"}, {"AWSAccessKeyId", rootAccessKey}, {"policy", "!!"},
				{"signature", sigv4.SignPostV2("!!", rootSecretKey)}}}
		}, 400, s3err.InvalidPolicyDocument},
		{"no key", "", func(t *testing.T) *postForm {
			return &postForm{file: file, fields: signedV4(t, rootCred(), later, basic)}
		}, 400, s3err.InvalidArgument},
		{"no file", "", func(t *testing.T) *postForm {
			return &postForm{noFile: true, fields: ok(t)}
		}, 400, s3err.IncorrectNumberOfFilesInPostRequest},
		{"repeated field", "", func(t *testing.T) *postForm {
			return &postForm{file: file, fields: ok(t, field{"Key", "up/y"})}
		}, 400, s3err.InvalidArgument},
		{"fields too large", "", func(t *testing.T) *postForm {
			return &postForm{file: file, fields: ok(t, field{"x-ignore-pad", strings.Repeat("x", 100<<10)})}
		}, 400, s3err.MaxPostPreDataLengthExceededError},
		{"encryption", "", func(t *testing.T) *postForm {
			return &postForm{file: file, fields: signedV4(t, rootCred(), later, append(basic, map[string]string{"x-amz-server-side-encryption": "AES256"}),
				field{"key", "up/x"}, field{"x-amz-server-side-encryption", "AES256"})}
		}, 501, s3err.NotImplemented},
		{"anonymous on a private bucket", "", func(t *testing.T) *postForm {
			return &postForm{file: file, fields: []field{{"key", "up/x"}}}
		}, 403, s3err.AccessDenied},
		{"signed by a user who may not write", "", func(t *testing.T) *postForm {
			return &postForm{file: file, fields: signedV4(t, *reader, later, basic, field{"key", "up/x"})}
		}, 403, s3err.AccessDenied},
		{"no such bucket", "nobucket", func(t *testing.T) *postForm {
			return &postForm{file: file, fields: signedV4(t, rootCred(), later, []any{[]any{"starts-with", "$key", ""}}, field{"key", "up/x"})}
		}, 404, s3err.NoSuchBucket},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bucket := tc.bucket
			if bucket == "" {
				bucket = "bkt"
			}
			hs.post(bucket, tc.form(t)).want(t, tc.status, tc.code)
			hs.do(call{method: http.MethodHead, path: "/" + bucket + "/up/x"}).want(t, http.StatusNotFound, "")
		})
	}
	t.Run("not a form", func(t *testing.T) {
		hs.do(call{method: http.MethodPost, path: "/bkt", anon: true, body: []byte("key=up/x"),
			header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}}).want(t, 400, s3err.MalformedPOSTRequest)
	})
	t.Run("truncated file", func(t *testing.T) {
		// The client declares the whole form's length, sends two thirds
		// of it and hangs up: nothing is stored.
		body, ct := (&postForm{file: bytes.Repeat([]byte("x"), 300<<10),
			fields: signedV4(t, rootCred(), later, []any{[]any{"starts-with", "$key", ""}}, field{"key", "up/x"})}).body(t)
		conn, err := net.Dial("tcp", hs.srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST /bkt HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n", hs.srv.Listener.Addr(), ct, len(body))
		conn.Write(body[:len(body)*2/3])
		conn.(*net.TCPConn).CloseWrite()
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode < 400 {
				t.Fatalf("truncated form upload answered %d", resp.StatusCode)
			}
		}
		hs.do(call{method: http.MethodHead, path: "/bkt/up/x"}).want(t, http.StatusNotFound, "")
	})
}

// TestPostObjectAnonymous: a form without a policy is anonymous, allowed
// where a bucket policy or ACL lets anyone write.
func TestPostObjectAnonymous(t *testing.T) {
	hs := newHarness(t, Config{})
	hs.mkBucket("drop")
	policy := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::drop/inbox/*"}]}`
	hs.do(call{method: http.MethodPut, path: "/drop?policy", body: []byte(policy)}).mustStatus(t, http.StatusNoContent)
	hs.post("drop", &postForm{file: []byte("x"), fields: []field{{"key", "inbox/a"}}}).mustStatus(t, http.StatusNoContent)
	hs.post("drop", &postForm{file: []byte("x"), fields: []field{{"key", "elsewhere/a"}}}).want(t, http.StatusForbidden, s3err.AccessDenied)

	// A metadata field whose name is no header name is refused: it could
	// never be sent back.
	hs.post("drop", &postForm{file: []byte("x"), fields: []field{{"key", "inbox/b"}, {"x-amz-meta-a b", "v"}}}).want(t, http.StatusBadRequest, s3err.InvalidArgument)

	// Policies see the form request's own Referer and User-Agent.
	byPage := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::drop/page/*",
  "Condition":{"StringLike":{"aws:Referer":"https://app.example/*"}}}]}`
	hs.do(call{method: http.MethodPut, path: "/drop?policy", body: []byte(byPage)}).mustStatus(t, http.StatusNoContent)
	form := &postForm{file: []byte("x"), fields: []field{{"key", "page/a"}}}
	hs.post("drop", form).want(t, http.StatusForbidden, s3err.AccessDenied)
	hs.post("drop", form, func(r *http.Request) { r.Header.Set("Referer", "https://app.example/upload") }).mustStatus(t, http.StatusNoContent)

	hs.do(call{method: http.MethodPut, path: "/open", header: http.Header{"X-Amz-Acl": {"public-read-write"}}}).mustStatus(t, http.StatusOK)
	hs.post("open", &postForm{file: []byte("x"), fields: []field{{"key", "a"}, {"acl", "public-read"}}}).mustStatus(t, http.StatusNoContent)
	// public-read: anyone reads it back.
	hs.do(call{method: http.MethodGet, path: "/open/a", anon: true}).mustStatus(t, http.StatusOK)
}

// FuzzPostObject sends arbitrary form bodies (the fields and file of a
// form upload, mutated as bytes) and checks that each is answered with a
// success or an S3 client error, never a 500 or a panic, and that a
// success stored exactly the bytes the file part held.
func FuzzPostObject(f *testing.F) {
	hs := newHarness(f, Config{})
	hs.mkBucket("bkt")
	later := testNow().Add(time.Hour)
	const boundary = "fuzzboundary"
	seed := func(fields []field, file []byte) []byte {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		mw.SetBoundary(boundary)
		for _, fl := range fields {
			mw.WriteField(fl.name, fl.value)
		}
		fw, _ := mw.CreateFormFile("file", "f.txt")
		fw.Write(file)
		mw.Close()
		return buf.Bytes()
	}
	f.Add(seed([]field{{"key", "anon"}}, []byte("x")))
	f.Add(seed(signedV4(f, rootCred(), later, []any{[]any{"starts-with", "$key", ""}, []any{"content-length-range", 0, 100}}, field{"key", "a/${filename}"}), []byte("hello")))
	f.Add(seed(signedV2(f, rootCred(), later, []any{[]any{"starts-with", "$key", ""}, []any{"starts-with", "$tagging", ""}},
		field{"key", "t"}, field{"tagging", "<Tagging><TagSet><Tag><Key>a</Key><Value>b</Value></Tag></TagSet></Tagging>"}), nil))
	f.Fuzz(func(t *testing.T, body []byte) {
		r := httptest.NewRequest(http.MethodPost, "http://"+hs.srv.Listener.Addr().String()+"/bkt", bytes.NewReader(body))
		r.Header.Set("Content-Type", "multipart/form-data; boundary="+boundary)
		w := httptest.NewRecorder()
		hs.h.ServeHTTP(w, r)
		rp := reply{status: w.Code, body: w.Body.Bytes()}
		switch {
		case rp.status >= 500:
			t.Fatalf("status %d:\n%s", rp.status, rp.body)
		case rp.status >= 400 && errorCode(rp.body) == "":
			t.Fatalf("status %d without an S3 error document:\n%s", rp.status, rp.body)
		}
	})
}

// sha256B64 returns the base64 SHA-256 of b, as x-amz-checksum-sha256
// carries it.
func sha256B64(b []byte) string {
	sum := sha256.Sum256(b)
	return base64.StdEncoding.EncodeToString(sum[:])
}
