package s3api

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/coffer-s3/coffer/internal/s3err"
)

const sitePolicy = `{"Version":"2012-10-17","Statement":[
  {"Sid":"PublicRead","Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::site/public/*"}]}`

func TestBucketPolicyLifecycle(t *testing.T) {
	hs := newHarness(t, Config{})
	hs.mkBucket("site")
	hs.put("site", "public/index.html", []byte("hello"))
	hs.put("site", "private/x", []byte("secret"))

	hs.do(call{method: http.MethodGet, path: "/site?policy"}).want(t, http.StatusNotFound, s3err.NoSuchBucketPolicy)
	if st := hs.do(call{method: http.MethodGet, path: "/site?policyStatus"}).mustStatus(t, http.StatusOK); !strings.Contains(string(st.body), "<IsPublic>false</IsPublic>") {
		t.Fatalf("GetBucketPolicyStatus without a policy = %s", st.body)
	}
	hs.do(call{method: http.MethodGet, path: "/site/public/index.html", anon: true}).want(t, http.StatusForbidden, s3err.AccessDenied)

	hs.do(call{method: http.MethodPut, path: "/site?policy", body: []byte(sitePolicy)}).mustStatus(t, http.StatusNoContent)
	got := hs.do(call{method: http.MethodGet, path: "/site?policy"}).mustStatus(t, http.StatusOK)
	if string(got.body) != sitePolicy || got.header.Get("Content-Type") != "application/json" {
		t.Fatalf("GetBucketPolicy = %q (%s)", got.body, got.header.Get("Content-Type"))
	}
	st := hs.do(call{method: http.MethodGet, path: "/site?policyStatus"}).mustStatus(t, http.StatusOK)
	if !strings.Contains(string(st.body), "<IsPublic>true</IsPublic>") {
		t.Fatalf("GetBucketPolicyStatus = %s", st.body)
	}

	// Anonymous reads what the policy opens, and nothing else.
	rp := hs.do(call{method: http.MethodGet, path: "/site/public/index.html", anon: true}).mustStatus(t, http.StatusOK)
	if string(rp.body) != "hello" {
		t.Fatalf("anonymous GET = %q", rp.body)
	}
	hs.do(call{method: http.MethodGet, path: "/site/private/x", anon: true}).want(t, http.StatusForbidden, s3err.AccessDenied)
	hs.do(call{method: http.MethodPut, path: "/site/public/new", anon: true, body: []byte("x")}).want(t, http.StatusForbidden, s3err.AccessDenied)
	hs.do(call{method: http.MethodGet, path: "/site", anon: true}).want(t, http.StatusForbidden, s3err.AccessDenied)
	hs.do(call{method: http.MethodGet, path: "/", anon: true}).want(t, http.StatusForbidden, s3err.AccessDenied)

	hs.do(call{method: http.MethodDelete, path: "/site?policy"}).mustStatus(t, http.StatusNoContent)
	hs.do(call{method: http.MethodDelete, path: "/site?policy"}).mustStatus(t, http.StatusNoContent)
	hs.do(call{method: http.MethodGet, path: "/site/public/index.html", anon: true}).want(t, http.StatusForbidden, s3err.AccessDenied)

	// A policy goes with its bucket.
	hs.do(call{method: http.MethodPut, path: "/site?policy", body: []byte(sitePolicy)}).mustStatus(t, http.StatusNoContent)
	for _, k := range []string{"public/index.html", "private/x"} {
		hs.do(call{method: http.MethodDelete, path: "/site/" + k}).mustStatus(t, http.StatusNoContent)
	}
	hs.do(call{method: http.MethodDelete, path: "/site"}).mustStatus(t, http.StatusNoContent)
	hs.mkBucket("site")
	hs.put("site", "public/index.html", []byte("hello again"))
	hs.do(call{method: http.MethodGet, path: "/site/public/index.html", anon: true}).want(t, http.StatusForbidden, s3err.AccessDenied)
	hs.do(call{method: http.MethodGet, path: "/site?policy"}).want(t, http.StatusNotFound, s3err.NoSuchBucketPolicy)
}

func TestPutBucketPolicyErrors(t *testing.T) {
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	for _, tc := range []struct {
		name, path, body string
		status           int
		code             s3err.Code
		msg              string
	}{
		{"no bucket", "/nope?policy", sitePolicy, http.StatusNotFound, s3err.NoSuchBucket, ""},
		{"not json", "/bkt?policy", "<xml/>", http.StatusBadRequest, s3err.MalformedPolicy, ""},
		{"empty", "/bkt?policy", "", http.StatusBadRequest, s3err.MissingRequestBodyError, ""},
		{"other bucket", "/bkt?policy", sitePolicy, http.StatusBadRequest, s3err.MalformedPolicy, "resource"},
		{"unknown action", "/bkt?policy", `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObjekt","Resource":"arn:aws:s3:::bkt/*"}]}`, http.StatusBadRequest, s3err.MalformedPolicy, "s3:GetObjekt"},
		{"no principal", "/bkt?policy", `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"}]}`, http.StatusBadRequest, s3err.MalformedPolicy, ""},
		{"too big", "/bkt?policy", `{"Version":"2012-10-17","Id":"` + strings.Repeat("x", 21<<10) + `","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"}]}`, http.StatusBadRequest, s3err.MalformedPolicy, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rp := hs.do(call{method: http.MethodPut, path: tc.path, body: []byte(tc.body)})
			rp.want(t, tc.status, tc.code)
			if tc.msg != "" && !strings.Contains(string(rp.body), tc.msg) {
				t.Errorf("message does not mention %q: %s", tc.msg, rp.body)
			}
		})
	}
	hs.do(call{method: http.MethodGet, path: "/bkt?policy"}).want(t, http.StatusNotFound, s3err.NoSuchBucketPolicy)
}

func TestScopedUsers(t *testing.T) {
	hs := newHarness(t, Config{})
	for _, b := range []string{"alpha", "beta", "gamma"} {
		hs.mkBucket(b)
		hs.put(b, "home/ann/a", []byte("a"))
		hs.put(b, "home/bob/b", []byte("b"))
	}
	ctx := context.Background()
	home := `{"Version":"2012-10-17","Statement":[
	  {"Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::alpha","Condition":{"StringLike":{"s3:prefix":["","home/","home/${aws:username}/*"]}}},
	  {"Effect":"Allow","Action":["s3:GetObject","s3:PutObject","s3:DeleteObject"],"Resource":"arn:aws:s3:::alpha/home/${aws:username}/*"}]}`
	if err := hs.iam.PutPolicy(ctx, "home", []byte(home)); err != nil {
		t.Fatal(err)
	}
	ann := hs.user("ann", "home")
	reader := hs.user("reader", "readonly")

	// ann: her home in alpha only.
	hs.do(call{method: http.MethodGet, path: "/alpha/home/ann/a", cred: ann}).mustStatus(t, http.StatusOK)
	hs.do(call{method: http.MethodPut, path: "/alpha/home/ann/new", cred: ann, body: []byte("n")}).mustStatus(t, http.StatusOK)
	hs.do(call{method: http.MethodGet, path: "/alpha/home/bob/b", cred: ann}).want(t, http.StatusForbidden, s3err.AccessDenied)
	hs.do(call{method: http.MethodGet, path: "/beta/home/ann/a", cred: ann}).want(t, http.StatusForbidden, s3err.AccessDenied)
	hs.do(call{method: http.MethodGet, path: "/alpha?list-type=2&prefix=home/ann/", cred: ann}).mustStatus(t, http.StatusOK)
	hs.do(call{method: http.MethodGet, path: "/alpha?list-type=2&delimiter=/", cred: ann}).mustStatus(t, http.StatusOK)
	hs.do(call{method: http.MethodGet, path: "/alpha?list-type=2&prefix=home/bob/", cred: ann}).want(t, http.StatusForbidden, s3err.AccessDenied)
	hs.do(call{method: http.MethodPut, path: "/delta", cred: ann}).want(t, http.StatusForbidden, s3err.AccessDenied)

	// ListBuckets shows each caller what it may list or read.
	rp := hs.do(call{method: http.MethodGet, path: "/", cred: ann}).mustStatus(t, http.StatusOK)
	if n := strings.Count(string(rp.body), "<Name>"); n != 1 || !strings.Contains(string(rp.body), "<Name>alpha</Name>") {
		t.Errorf("ann's ListBuckets: %s", rp.body)
	}
	rp = hs.do(call{method: http.MethodGet, path: "/", cred: reader}).mustStatus(t, http.StatusOK)
	if n := strings.Count(string(rp.body), "<Name>"); n != 3 {
		t.Errorf("reader's ListBuckets lists %d buckets: %s", n, rp.body)
	}
	hs.do(call{method: http.MethodPut, path: "/alpha/x", cred: reader, body: []byte("x")}).want(t, http.StatusForbidden, s3err.AccessDenied)

	// DeleteObjects authorizes key by key: ann's key goes, bob's stays.
	body := []byte(`<Delete><Object><Key>home/ann/a</Key></Object><Object><Key>home/bob/b</Key></Object></Delete>`)
	rp = hs.do(call{method: http.MethodPost, path: "/alpha?delete", cred: ann, body: body, header: http.Header{"Content-Md5": {contentMD5(body)}}}).mustStatus(t, http.StatusOK)
	if !strings.Contains(string(rp.body), "<Deleted><Key>home/ann/a</Key>") || !strings.Contains(string(rp.body), "<Key>home/bob/b</Key><Code>AccessDenied</Code>") {
		t.Errorf("DeleteObjects = %s", rp.body)
	}
	hs.do(call{method: http.MethodHead, path: "/alpha/home/bob/b"}).mustStatus(t, http.StatusOK)

	// Copy needs read on the source as well as write on the target.
	hs.do(call{method: http.MethodPut, path: "/alpha/home/ann/copy", cred: ann, header: http.Header{"X-Amz-Copy-Source": {"/alpha/home/bob/b"}}}).want(t, http.StatusForbidden, s3err.AccessDenied)
	hs.do(call{method: http.MethodPut, path: "/alpha/home/ann/copy", cred: ann, header: http.Header{"X-Amz-Copy-Source": {"/alpha/home/ann/new"}}}).mustStatus(t, http.StatusOK)
}

// TestAnonymousDeleteObjects checks S3's answer to an anonymous
// DeleteObjects: the request succeeds (200) and each key the caller may not
// delete fails alone with AccessDenied, as S3's documentation shows for a
// caller without permission and as MinIO's mint suite checks against S3;
// keys a bucket policy opens to everyone are deleted.
func TestAnonymousDeleteObjects(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, Config{})
	hs.mkBucket("anon")
	for _, k := range []string{"pub/a", "priv/b"} {
		hs.put("anon", k, []byte(k))
	}
	doc := xmlBody(`<Delete><Object><Key>pub/a</Key></Object><Object><Key>priv/b</Key></Object></Delete>`)
	send := func() string {
		t.Helper()
		rp := hs.do(call{method: "POST", path: "/anon?delete", body: doc, header: header("Content-MD5", contentMD5(doc)), anon: true})
		return string(rp.mustStatus(t, http.StatusOK).body)
	}
	denied := func(k string) string {
		return "<Error><Key>" + k + "</Key><Code>AccessDenied</Code><Message>" + s3err.MessageOf(s3err.AccessDenied) + "</Message></Error>"
	}

	if body := send(); !strings.Contains(body, denied("pub/a")) || !strings.Contains(body, denied("priv/b")) || strings.Contains(body, "<Deleted>") {
		t.Fatalf("anonymous DeleteObjects without a policy:\n%s", body)
	}
	hs.do(call{method: http.MethodHead, path: "/anon/pub/a"}).mustStatus(t, http.StatusOK)
	hs.do(call{method: http.MethodHead, path: "/anon/priv/b"}).mustStatus(t, http.StatusOK)

	policy := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:DeleteObject","Resource":"arn:aws:s3:::anon/pub/*"}]}`
	hs.do(call{method: http.MethodPut, path: "/anon?policy", body: []byte(policy)}).mustStatus(t, http.StatusNoContent)
	if body := send(); !strings.Contains(body, "<Deleted><Key>pub/a</Key></Deleted>") || !strings.Contains(body, denied("priv/b")) {
		t.Fatalf("anonymous DeleteObjects with a policy opening pub/:\n%s", body)
	}
	hs.do(call{method: http.MethodHead, path: "/anon/pub/a"}).want(t, http.StatusNotFound, "")
	hs.do(call{method: http.MethodHead, path: "/anon/priv/b"}).mustStatus(t, http.StatusOK)
}

// TestPolicyHeaderConditions: bucket policies on request headers, as AWS
// writes them: uploads must carry bucket-owner-full-control, and copies
// may come only from one prefix of one bucket (s3:x-amz-copy-source is
// bucket/key, decoded).
func TestPolicyHeaderConditions(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, Config{})
	hs.mkBucket("src")
	hs.mkBucket("dst")
	hs.put("src", "public/a b", []byte("a"))
	hs.put("src", "private/a", []byte("a"))
	pol := []byte(`{"Version":"2012-10-17","Statement":[
	  {"Effect":"Deny","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::dst/up/*",
	   "Condition":{"StringNotEquals":{"s3:x-amz-acl":"bucket-owner-full-control"}}},
	  {"Effect":"Deny","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::dst/copies/*",
	   "Condition":{"StringNotLike":{"s3:x-amz-copy-source":"src/public/*"}}}]}`)
	hs.do(call{method: "PUT", path: "/dst?policy", body: pol}).mustStatus(t, http.StatusNoContent)
	bob := hs.user("bob", "readwrite")

	hs.do(call{method: "PUT", path: "/dst/up/k", body: []byte("x"), cred: bob}).want(t, http.StatusForbidden, s3err.AccessDenied)
	hs.do(call{method: "PUT", path: "/dst/up/k", body: []byte("x"), cred: bob, header: header("X-Amz-Acl", "private")}).want(t, http.StatusForbidden, s3err.AccessDenied)
	hs.do(call{method: "PUT", path: "/dst/up/k", body: []byte("x"), cred: bob, header: header("X-Amz-Acl", "bucket-owner-full-control")}).mustStatus(t, http.StatusOK)

	hs.do(call{method: "PUT", path: "/dst/copies/1", cred: bob, header: header("X-Amz-Copy-Source", "/src/public/a%20b")}).mustStatus(t, http.StatusOK)
	hs.do(call{method: "PUT", path: "/dst/copies/2", cred: bob, header: header("X-Amz-Copy-Source", "src/private/a")}).want(t, http.StatusForbidden, s3err.AccessDenied)
	hs.do(call{method: "PUT", path: "/dst/copies/3", body: []byte("x"), cred: bob}).want(t, http.StatusForbidden, s3err.AccessDenied) // no copy source at all

	// "Writes must be conditional" (S3's documented policy for
	// If-None-Match): an unconditional PUT is denied, a conditional one
	// goes through and its condition is then checked as usual.
	cond := []byte(`{"Version":"2012-10-17","Statement":[
	  {"Effect":"Deny","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::src/*",
	   "Condition":{"Null":{"s3:if-none-match":"true"}}}]}`)
	hs.do(call{method: "PUT", path: "/src?policy", body: cond}).mustStatus(t, http.StatusNoContent)
	hs.do(call{method: "PUT", path: "/src/new", body: []byte("x"), cred: bob}).want(t, http.StatusForbidden, s3err.AccessDenied)
	hs.do(call{method: "PUT", path: "/src/new", body: []byte("x"), cred: bob, header: header("If-None-Match", "*")}).mustStatus(t, http.StatusOK)
	hs.do(call{method: "PUT", path: "/src/new", body: []byte("y"), cred: bob, header: header("If-None-Match", "*")}).want(t, http.StatusPreconditionFailed, s3err.PreconditionFailed)
}

// TestListConditionsSeeWhatIsListed: s3:delimiter and s3:max-keys are the
// values the listing uses — a repeated delimiter or a signed max-keys
// cannot pass a condition with one value and list with another.
func TestListConditionsSeeWhatIsListed(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	hs.put("bkt", "home/ann/a", []byte("a"))
	hs.put("bkt", "home/bob/b", []byte("b"))
	const top = `{"Version":"2012-10-17","Statement":[
	  {"Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::bkt","Condition":{"StringEquals":{"s3:prefix":"","s3:delimiter":"/"}}},
	  {"Effect":"Deny","Action":"s3:ListBucket","Resource":"arn:aws:s3:::bkt","Condition":{"NumericGreaterThan":{"s3:max-keys":"100"}}}]}`
	if err := hs.iam.PutPolicy(t.Context(), "top", []byte(top)); err != nil {
		t.Fatal(err)
	}
	u := hs.user("lister", "top")
	rp := hs.do(call{method: http.MethodGet, path: "/bkt?list-type=2&prefix=&delimiter=/", cred: u}).mustStatus(t, http.StatusOK)
	if strings.Contains(string(rp.body), "home/ann/a") {
		t.Fatalf("top-level listing shows keys under home/: %s", rp.body)
	}
	rp = hs.do(call{method: http.MethodGet, path: "/bkt?list-type=2&prefix=&delimiter=&delimiter=/", cred: u})
	if rp.status == http.StatusOK && strings.Contains(string(rp.body), "home/ann/a") {
		t.Fatalf("a repeated delimiter listed every key: %s", rp.body)
	}
	hs.do(call{method: http.MethodGet, path: "/bkt?list-type=2&prefix=&delimiter=/&max-keys=%2B500", cred: u}).want(t, http.StatusBadRequest, s3err.InvalidArgument)
}

// TestBucketPolicyDenyAccount checks that a Deny naming the account (its
// ID or its root ARN) shuts out the account's users, as on AWS, while an Allow naming it grants a user nothing its own policies
// do not.
func TestBucketPolicyDenyAccount(t *testing.T) {
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	hs.put("bkt", "k", []byte("v"))
	bob := hs.user("bob", "readwrite")
	eve := hs.user("eve")

	for _, principal := range []string{`"123456789012"`, `"arn:aws:iam::123456789012:root"`} {
		pol := `{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Principal":{"AWS":` + principal + `},"Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"}]}`
		hs.do(call{method: http.MethodPut, path: "/bkt?policy", body: []byte(pol)}).mustStatus(t, http.StatusNoContent)
		hs.do(call{method: http.MethodGet, path: "/bkt/k", cred: bob}).want(t, http.StatusForbidden, s3err.AccessDenied)
		// Coffer's root is allowed everything, bucket policies or not
		// (docs/design/0003-iam.md), so it can always take the policy off.
		hs.do(call{method: http.MethodGet, path: "/bkt/k"}).mustStatus(t, http.StatusOK)
		// What the Deny does not name stays as the user's policy says.
		hs.do(call{method: http.MethodPut, path: "/bkt/k2", body: []byte("x"), cred: bob}).mustStatus(t, http.StatusOK)
		hs.do(call{method: http.MethodDelete, path: "/bkt?policy"}).mustStatus(t, http.StatusNoContent)
		hs.do(call{method: http.MethodGet, path: "/bkt/k", cred: bob}).mustStatus(t, http.StatusOK)
	}

	// An Allow naming the account is root's: a user without a policy of
	// its own gains nothing.
	allow := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"123456789012"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"}]}`
	hs.do(call{method: http.MethodPut, path: "/bkt?policy", body: []byte(allow)}).mustStatus(t, http.StatusNoContent)
	hs.do(call{method: http.MethodGet, path: "/bkt/k", cred: eve}).want(t, http.StatusForbidden, s3err.AccessDenied)
	hs.do(call{method: http.MethodGet, path: "/bkt/k"}).mustStatus(t, http.StatusOK)
}
