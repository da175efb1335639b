package s3api

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/sigv4"
)

const enableVersioning = "<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>"

// TestCopySourceVersionAuthorized: a copy's source is authorized as the
// version x-amz-copy-source names — its tags and its ACL — even when the
// source is the destination's own key, and whatever versionId the
// destination URL carries (a copy ignores it). Reading a forbidden old
// version by copying it onto its key (as the current version, with new
// tags or a new owner) was possible when the check looked at the
// destination's version instead.
func TestCopySourceVersionAuthorized(t *testing.T) {
	t.Run("tag-denied version copied onto its key", func(t *testing.T) {
		hs := newHarness(t, Config{})
		hs.mkBucket("bkt")
		hs.do(call{method: "PUT", path: "/bkt?versioning", body: []byte(enableVersioning)}).mustStatus(t, http.StatusOK)
		secret := hs.put("bkt", "k", []byte("old-secret"), "X-Amz-Tagging", "secret=true").header.Get("x-amz-version-id")
		hs.put("bkt", "k", []byte("new"))
		const pol = `{"Version":"2012-10-17","Statement":[
  {"Effect":"Allow","Action":"s3:*","Resource":["arn:aws:s3:::bkt","arn:aws:s3:::bkt/*"]},
  {"Effect":"Deny","Action":["s3:GetObject","s3:GetObjectVersion"],"Resource":"arn:aws:s3:::bkt/*","Condition":{"StringEquals":{"s3:ExistingObjectTag/secret":"true"}}}]}`
		if err := hs.iam.PutPolicy(t.Context(), "no-secret", []byte(pol)); err != nil {
			t.Fatal(err)
		}
		u := hs.user("prober", "no-secret")
		hs.do(call{method: "GET", path: "/bkt/k?versionId=" + secret, cred: u}).want(t, http.StatusForbidden, "AccessDenied")
		hs.do(call{method: "PUT", path: "/bkt/k", cred: u, header: header(
			"X-Amz-Copy-Source", "bkt/k?versionId="+secret,
			"X-Amz-Tagging-Directive", "REPLACE")}).want(t, http.StatusForbidden, "AccessDenied")
		up := hs.createUpload("bkt", "other")
		hs.do(call{method: "PUT", path: "/bkt/other?partNumber=1&uploadId=" + up, cred: u, header: header(
			"X-Amz-Copy-Source", "bkt/k?versionId="+secret)}).want(t, http.StatusForbidden, "AccessDenied")
		if rp := hs.do(call{method: "GET", path: "/bkt/k", cred: u}).mustStatus(t, http.StatusOK); string(rp.body) != "new" {
			t.Errorf("after the refused copy, GET = %q, want %q", rp.body, "new")
		}
		// A version the policy lets it read copies as before.
		hs.do(call{method: "PUT", path: "/bkt/k2", cred: u, header: header("X-Amz-Copy-Source", "bkt/k")}).mustStatus(t, http.StatusOK)
	})

	t.Run("destination versionId does not pick the source's version", func(t *testing.T) {
		hs := newHarness(t, Config{})
		hs.mkBucket("bkt")
		hs.do(call{method: "PUT", path: "/bkt?versioning", body: []byte(enableVersioning)}).mustStatus(t, http.StatusOK)
		pub := hs.put("bkt", "k", []byte("public"), "X-Amz-Tagging", "security=public").header.Get("x-amz-version-id")
		hs.put("bkt", "k", []byte("private-now"), "X-Amz-Tagging", "security=private")
		bob := hs.user("bob")
		const pol = `{"Version":"2012-10-17","Statement":[
	 {"Effect":"Allow","Principal":{"AWS":["*"]},"Action":["s3:GetObject","s3:GetObjectVersion"],"Resource":"arn:aws:s3:::bkt/*",
	  "Condition":{"StringEquals":{"s3:ExistingObjectTag/security":"public"}}},
	 {"Effect":"Allow","Principal":{"AWS":["*"]},"Action":["s3:PutObject","s3:PutObjectTagging"],"Resource":"arn:aws:s3:::bkt/*"}]}`
		hs.do(call{method: "PUT", path: "/bkt?policy", body: []byte(pol)}).mustStatus(t, http.StatusNoContent)
		hs.do(call{method: "GET", path: "/bkt/k", cred: bob}).want(t, http.StatusForbidden, "AccessDenied")
		hs.do(call{method: "PUT", path: "/bkt/k?versionId=" + pub, cred: bob, header: header(
			"X-Amz-Copy-Source", "bkt/k",
			"X-Amz-Tagging-Directive", "REPLACE", "X-Amz-Tagging", "security=public")}).want(t, http.StatusForbidden, "AccessDenied")
		if rp := hs.do(call{method: "GET", path: "/bkt/k"}).mustStatus(t, http.StatusOK); string(rp.body) != "private-now" {
			t.Errorf("after the refused copy, GET = %q, want %q", rp.body, "private-now")
		}
	})

	t.Run("ACL-denied version copied onto its key", func(t *testing.T) {
		hs := newHarness(t, Config{})
		hs.mkBucket("bkt")
		hs.do(call{method: "PUT", path: "/bkt?ownershipControls", body: []byte(`<OwnershipControls><Rule><ObjectOwnership>ObjectWriter</ObjectOwnership></Rule></OwnershipControls>`)}).mustStatus(t, http.StatusOK)
		hs.do(call{method: "PUT", path: "/bkt?versioning", body: []byte(enableVersioning)}).mustStatus(t, http.StatusOK)
		bob := hs.user("bob")
		hs.do(call{method: "PUT", path: "/bkt?acl", header: header("X-Amz-Grant-Write", `id="`+hs.canonicalID("bob")+`"`,
			"X-Amz-Grant-Full-Control", `id="`+iam.RootCanonicalID()+`"`)}).mustStatus(t, http.StatusOK)
		secret := hs.put("bkt", "k", []byte("private-old")).header.Get("x-amz-version-id")
		hs.put("bkt", "k", []byte("public-new"), "X-Amz-Acl", "public-read")
		hs.do(call{method: "GET", path: "/bkt/k", cred: bob}).mustStatus(t, http.StatusOK)
		hs.do(call{method: "GET", path: "/bkt/k?versionId=" + secret, cred: bob}).want(t, http.StatusForbidden, "AccessDenied")
		hs.do(call{method: "PUT", path: "/bkt/k", cred: bob, header: header("X-Amz-Copy-Source", "bkt/k?versionId="+secret)}).
			want(t, http.StatusForbidden, "AccessDenied")
		if rp := hs.do(call{method: "GET", path: "/bkt/k", cred: bob}).mustStatus(t, http.StatusOK); string(rp.body) != "public-new" {
			t.Errorf("after the refused copy, GET = %q, want %q", rp.body, "public-new")
		}
	})
}

// TestContentSHA256Condition: s3:x-amz-content-sha256 is how the payload
// was verified, as the signature check decided it: a policy that denies
// UNSIGNED-PAYLOAD denies a presigned PUT (no header: unsigned) as it
// denies one with the header, a second header line is refused rather than
// read past, and a signed payload is allowed.
func TestContentSHA256Condition(t *testing.T) {
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	const pol = `{"Version":"2012-10-17","Statement":[
  {"Effect":"Allow","Action":"s3:*","Resource":["arn:aws:s3:::bkt","arn:aws:s3:::bkt/*"]},
  {"Effect":"Deny","Action":"s3:PutObject","Resource":"arn:aws:s3:::bkt/*","Condition":{"StringEquals":{"s3:x-amz-content-sha256":"UNSIGNED-PAYLOAD"}}}]}`
	if err := hs.iam.PutPolicy(t.Context(), "signed-only", []byte(pol)); err != nil {
		t.Fatal(err)
	}
	u := hs.user("u", "signed-only")
	hs.do(call{method: "PUT", path: "/bkt/signed", body: []byte("x"), cred: u}).mustStatus(t, http.StatusOK)
	hs.do(call{method: "PUT", path: "/bkt/a", body: []byte("x"), cred: u, payload: "UNSIGNED-PAYLOAD"}).want(t, http.StatusForbidden, "AccessDenied")
	hs.do(call{method: "PUT", path: "/bkt/b", body: []byte("x"), cred: u, payload: "UNSIGNED-PAYLOAD",
		prepare: func(r *http.Request) { r.Header.Add("X-Amz-Content-Sha256", "x") }}).want(t, http.StatusBadRequest, "InvalidArgument")
	url, err := sigv4.Presign("PUT", hs.srv.URL+"/bkt/c", *u, testRegion, testNow(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := http.NewRequest("PUT", url, bytes.NewReader([]byte("x")))
	hs.send(r).want(t, http.StatusForbidden, "AccessDenied")
	for _, key := range []string{"a", "b", "c"} {
		hs.do(call{method: "HEAD", path: "/bkt/" + key}).mustStatus(t, http.StatusNotFound)
	}
}
