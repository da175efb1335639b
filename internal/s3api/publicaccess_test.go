package s3api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/coffer-s3/coffer/internal/s3err"
)

// putBlock sets bkt's Block Public Access settings, each of the four
// named in on true.
func (hs *harness) putBlock(t *testing.T, on ...string) {
	t.Helper()
	var b strings.Builder
	b.WriteString(`<PublicAccessBlockConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">`)
	for _, s := range on {
		b.WriteString("<" + s + ">true</" + s + ">")
	}
	b.WriteString(`</PublicAccessBlockConfiguration>`)
	doc := []byte(b.String())
	hs.do(call{method: "PUT", path: "/bkt?publicAccessBlock", body: doc, header: header("Content-MD5", contentMD5(doc))}).mustStatus(t, http.StatusOK)
}

func TestPublicAccessBlockConfiguration(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	goldenError(t, hs.do(call{method: "GET", path: "/bkt?publicAccessBlock"}), "GetPublicAccessBlock_NoSuch",
		http.StatusNotFound, s3err.NoSuchPublicAccessBlockConfiguration)
	doc := xmlBody(`<PublicAccessBlockConfiguration><BlockPublicAcls>true</BlockPublicAcls><RestrictPublicBuckets>TRUE</RestrictPublicBuckets></PublicAccessBlockConfiguration>`)
	hs.do(call{method: "PUT", path: "/bkt?publicAccessBlock", body: doc}).want(t, http.StatusBadRequest, s3err.InvalidRequest)
	bad := xmlBody(`<PublicAccessBlockConfiguration><BlockPublicAcls>maybe</BlockPublicAcls></PublicAccessBlockConfiguration>`)
	hs.do(call{method: "PUT", path: "/bkt?publicAccessBlock", body: bad, header: header("Content-MD5", contentMD5(bad))}).want(t, http.StatusBadRequest, s3err.MalformedXML)
	hs.do(call{method: "PUT", path: "/nope?publicAccessBlock", body: doc, header: header("Content-MD5", contentMD5(doc))}).want(t, http.StatusNotFound, s3err.NoSuchBucket)
	hs.do(call{method: "PUT", path: "/bkt?publicAccessBlock", body: doc, header: header("Content-MD5", contentMD5(doc))}).mustStatus(t, http.StatusOK)
	rp := hs.do(call{method: "GET", path: "/bkt?publicAccessBlock"}).mustStatus(t, http.StatusOK)
	golden(t, "GetPublicAccessBlock", rp.body)

	reader := hs.user("reader", "readonly")
	hs.do(call{method: "DELETE", path: "/bkt?publicAccessBlock", cred: reader}).want(t, http.StatusForbidden, s3err.AccessDenied)
	hs.do(call{method: "DELETE", path: "/bkt?publicAccessBlock"}).mustStatus(t, http.StatusNoContent)
	hs.do(call{method: "GET", path: "/bkt?publicAccessBlock"}).want(t, http.StatusNotFound, s3err.NoSuchPublicAccessBlockConfiguration)
	hs.do(call{method: "DELETE", path: "/bkt?publicAccessBlock"}).mustStatus(t, http.StatusNoContent) // none: still 204
}

// TestBlockPublicAcls: with BlockPublicAcls no request sets an ACL that
// grants anything to AllUsers or AuthenticatedUsers, and nothing of such a
// write is stored; private ACLs and ACLs that were public before go on.
func TestBlockPublicAcls(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	hs.put("bkt", "before", []byte("x"), "X-Amz-Acl", "public-read").mustStatus(t, http.StatusOK)
	hs.putBlock(t, "BlockPublicAcls")
	for _, h := range []http.Header{
		header("X-Amz-Acl", "public-read"), header("X-Amz-Acl", "public-read-write"), header("X-Amz-Acl", "authenticated-read"),
		header("X-Amz-Grant-Read", `uri="http://acs.amazonaws.com/groups/global/AllUsers"`),
		header("X-Amz-Grant-Write-Acp", `uri="http://acs.amazonaws.com/groups/global/AuthenticatedUsers"`),
	} {
		hs.do(call{method: "PUT", path: "/bkt/k", body: []byte("x"), header: h}).want(t, http.StatusForbidden, s3err.AccessDenied)
		hs.do(call{method: "HEAD", path: "/bkt/k"}).want(t, http.StatusNotFound, "")
		hs.do(call{method: "PUT", path: "/bkt?acl", header: h}).want(t, http.StatusForbidden, s3err.AccessDenied)
		hs.do(call{method: "PUT", path: "/bkt/before?acl", header: h}).want(t, http.StatusForbidden, s3err.AccessDenied)
		hs.do(call{method: "POST", path: "/bkt/mp?uploads", header: h}).want(t, http.StatusForbidden, s3err.AccessDenied)
	}
	// Re-creating one's own bucket (200 in us-east-1) resets its ACL: an
	// ACL write like any other.
	hs.do(call{method: "PUT", path: "/bkt", header: header("X-Amz-Acl", "public-read")}).want(t, http.StatusForbidden, s3err.AccessDenied)
	hs.do(call{method: "GET", path: "/bkt", anon: true}).want(t, http.StatusForbidden, s3err.AccessDenied)
	hs.do(call{method: "PUT", path: "/bkt"}).mustStatus(t, http.StatusOK)
	copyHdr := header("X-Amz-Copy-Source", "/bkt/before", "X-Amz-Acl", "public-read")
	hs.do(call{method: "PUT", path: "/bkt/copy", header: copyHdr}).want(t, http.StatusForbidden, s3err.AccessDenied)
	hs.put("bkt", "k", []byte("x"), "X-Amz-Acl", "private").mustStatus(t, http.StatusOK)
	hs.do(call{method: "PUT", path: "/bkt?acl", header: header("X-Amz-Acl", "private")}).mustStatus(t, http.StatusOK)
	// An ACL made public before the setting still counts: BlockPublicAcls
	// refuses new public ACLs only.
	hs.do(call{method: "GET", path: "/bkt/before", anon: true}).mustStatus(t, http.StatusOK)
}

// TestIgnorePublicAcls: public grants stop counting, other grants do not;
// the ACLs themselves are kept, and count again once the setting goes.
func TestIgnorePublicAcls(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	hs.put("bkt", "pub", []byte("x"), "X-Amz-Acl", "public-read").mustStatus(t, http.StatusOK)
	hs.do(call{method: "PUT", path: "/bkt?acl", header: header("X-Amz-Acl", "public-read")}).mustStatus(t, http.StatusOK)
	hs.do(call{method: "GET", path: "/bkt/pub", anon: true}).mustStatus(t, http.StatusOK)
	hs.do(call{method: "GET", path: "/bkt", anon: true}).mustStatus(t, http.StatusOK)
	hs.putBlock(t, "IgnorePublicAcls")
	hs.do(call{method: "GET", path: "/bkt/pub", anon: true}).want(t, http.StatusForbidden, s3err.AccessDenied)
	hs.do(call{method: "GET", path: "/bkt", anon: true}).want(t, http.StatusForbidden, s3err.AccessDenied)
	// Setting a public ACL is still allowed (BlockPublicAcls is off).
	hs.do(call{method: "PUT", path: "/bkt?acl", header: header("X-Amz-Acl", "public-read")}).mustStatus(t, http.StatusOK)
	hs.do(call{method: "GET", path: "/bkt", anon: true}).want(t, http.StatusForbidden, s3err.AccessDenied)
	hs.do(call{method: "DELETE", path: "/bkt?publicAccessBlock"}).mustStatus(t, http.StatusNoContent)
	hs.do(call{method: "GET", path: "/bkt/pub", anon: true}).mustStatus(t, http.StatusOK)
}

// TestBlockPublicPolicy: a public bucket policy is refused; one naming
// principals, or limited by aws:SourceIp, is not public and is stored.
func TestBlockPublicPolicy(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	hs.user("bob")
	hs.putBlock(t, "BlockPublicPolicy")
	public := []byte(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"}]}`)
	hs.do(call{method: "PUT", path: "/bkt?policy", body: public}).want(t, http.StatusForbidden, s3err.AccessDenied)
	hs.do(call{method: "GET", path: "/bkt?policy"}).want(t, http.StatusNotFound, s3err.NoSuchBucketPolicy)
	for _, doc := range []string{
		`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::000000000000:user/bob"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"}]}`,
		`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*","Condition":{"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}}]}`,
	} {
		hs.do(call{method: "PUT", path: "/bkt?policy", body: []byte(doc)}).mustStatus(t, http.StatusNoContent)
		if got := hs.do(call{method: "GET", path: "/bkt?policy"}).mustStatus(t, http.StatusOK); string(got.body) != doc {
			t.Errorf("GetBucketPolicy = %s, want the document put", got.body)
		}
	}
}

// TestRestrictPublicBuckets: a public bucket policy lets no anonymous
// request in while the setting is on; the account's own principals are
// unaffected, and the policy's Deny still counts.
func TestRestrictPublicBuckets(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	hs.put("bkt", "k", []byte("x"))
	public := []byte(`{"Version":"2012-10-17","Statement":[
	  {"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"},
	  {"Effect":"Deny","Principal":"*","Action":"s3:DeleteObject","Resource":"arn:aws:s3:::bkt/*"}]}`)
	hs.do(call{method: "PUT", path: "/bkt?policy", body: public}).mustStatus(t, http.StatusNoContent)
	hs.do(call{method: "GET", path: "/bkt/k", anon: true}).mustStatus(t, http.StatusOK)
	hs.putBlock(t, "RestrictPublicBuckets")
	hs.do(call{method: "GET", path: "/bkt/k", anon: true}).want(t, http.StatusForbidden, s3err.AccessDenied)
	reader := hs.user("reader", "readonly")
	hs.do(call{method: "GET", path: "/bkt/k", cred: reader}).mustStatus(t, http.StatusOK)
	writer := hs.user("writer", "readwrite")
	hs.do(call{method: "DELETE", path: "/bkt/k", cred: writer}).want(t, http.StatusForbidden, s3err.AccessDenied)
	hs.do(call{method: "GET", path: "/bkt/k"}).mustStatus(t, http.StatusOK)
	// The policy is still stored, and public again once the setting goes.
	hs.do(call{method: "DELETE", path: "/bkt?publicAccessBlock"}).mustStatus(t, http.StatusNoContent)
	hs.do(call{method: "GET", path: "/bkt/k", anon: true}).mustStatus(t, http.StatusOK)
}

// TestCreateBucketACLPermissions: CreateBucket with an ACL other than
// private needs s3:PutBucketAcl too, and with x-amz-object-ownership
// s3:PutBucketOwnershipControls, as S3 requires; re-creating a bucket
// with ACLs off (BucketOwnerEnforced) cannot set a public ACL either.
func TestCreateBucketACLPermissions(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, Config{})
	const createOnly = `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:CreateBucket","Resource":"*"}]}`
	if err := hs.iam.PutPolicy(t.Context(), "create-only", []byte(createOnly)); err != nil {
		t.Fatal(err)
	}
	maker := hs.user("maker", "create-only")
	hs.do(call{method: "PUT", path: "/bkt1", header: header("X-Amz-Acl", "public-read"), cred: maker}).want(t, http.StatusForbidden, s3err.AccessDenied)
	hs.do(call{method: "PUT", path: "/bkt1", header: header("X-Amz-Object-Ownership", "BucketOwnerEnforced"), cred: maker}).want(t, http.StatusForbidden, s3err.AccessDenied)
	hs.do(call{method: "HEAD", path: "/bkt1"}).want(t, http.StatusNotFound, "")
	hs.do(call{method: "PUT", path: "/bkt1", header: header("X-Amz-Acl", "private"), cred: maker}).mustStatus(t, http.StatusOK)
	hs.do(call{method: "PUT", path: "/bkt1", cred: maker}).mustStatus(t, http.StatusOK) // re-created: still 200

	hs.do(call{method: "PUT", path: "/bkt2", header: header("X-Amz-Object-Ownership", "BucketOwnerEnforced")}).mustStatus(t, http.StatusOK)
	hs.do(call{method: "PUT", path: "/bkt2", header: header("X-Amz-Acl", "public-read")}).want(t, http.StatusBadRequest, s3err.AccessControlListNotSupported)
	hs.do(call{method: "GET", path: "/bkt2", anon: true}).want(t, http.StatusForbidden, s3err.AccessDenied)
}

// TestWriteACLPermission: a write that sets an ACL (x-amz-acl or
// x-amz-grant-*) needs s3:PutObjectAcl besides its own permission, as S3
// requires; nothing of a refused write is stored.
func TestWriteACLPermission(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	hs.put("bkt", "src", []byte("x"))
	const putOnly = `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:PutObject","s3:GetObject"],"Resource":"arn:aws:s3:::bkt/*"}]}`
	const putACL = `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:PutObject","s3:PutObjectAcl"],"Resource":"arn:aws:s3:::bkt/*"}]}`
	for name, doc := range map[string]string{"put-only": putOnly, "put-acl": putACL} {
		if err := hs.iam.PutPolicy(t.Context(), name, []byte(doc)); err != nil {
			t.Fatal(err)
		}
	}
	writer := hs.user("writer", "put-only")
	for _, c := range []call{
		{method: "PUT", path: "/bkt/a", body: []byte("x"), header: header("X-Amz-Acl", "public-read")},
		{method: "PUT", path: "/bkt/a", body: []byte("x"), header: header("X-Amz-Grant-Read", `uri="http://acs.amazonaws.com/groups/global/AllUsers"`)},
		{method: "PUT", path: "/bkt/a", header: header("X-Amz-Copy-Source", "/bkt/src", "X-Amz-Acl", "public-read")},
		{method: "POST", path: "/bkt/a?uploads", header: header("X-Amz-Acl", "public-read")},
	} {
		c.cred = writer
		hs.do(c).want(t, http.StatusForbidden, s3err.AccessDenied)
	}
	hs.do(call{method: "HEAD", path: "/bkt/a"}).want(t, http.StatusNotFound, "")
	hs.do(call{method: "PUT", path: "/bkt/a", body: []byte("x"), cred: writer}).mustStatus(t, http.StatusOK)

	aclWriter := hs.user("acl-writer", "put-acl")
	hs.do(call{method: "PUT", path: "/bkt/b", body: []byte("x"), header: header("X-Amz-Acl", "public-read"), cred: aclWriter}).mustStatus(t, http.StatusOK)
	hs.do(call{method: "GET", path: "/bkt/b", anon: true}).mustStatus(t, http.StatusOK)
}
