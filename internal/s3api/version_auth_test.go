package s3api

import (
	"bytes"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/coffer-s3/coffer/internal/iam"
)

// TestExistingTagVersionAcl: s3:ExistingObjectTag is evaluated for
// GetObjectVersionAcl and PutObjectVersionAcl too: a Deny on a tag is not
// bypassed by adding ?versionId= (it was, found in review 2026-11-29).
func TestExistingTagVersionAcl(t *testing.T) {
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	hs.do(call{method: "PUT", path: "/bkt?versioning", body: []byte(enableVersioning)}).mustStatus(t, http.StatusOK)
	vid := hs.put("bkt", "k", []byte("x"), "X-Amz-Tagging", "secret=true").header.Get("x-amz-version-id")
	const pol = `{"Version":"2012-10-17","Statement":[
  {"Effect":"Allow","Action":"s3:*","Resource":["arn:aws:s3:::bkt","arn:aws:s3:::bkt/*"]},
  {"Effect":"Deny","Action":["s3:GetObjectAcl","s3:GetObjectVersionAcl","s3:PutObjectAcl","s3:PutObjectVersionAcl"],"Resource":"arn:aws:s3:::bkt/*","Condition":{"StringEquals":{"s3:ExistingObjectTag/secret":"true"}}}]}`
	if err := hs.iam.PutPolicy(t.Context(), "no-secret", []byte(pol)); err != nil {
		t.Fatal(err)
	}
	u := hs.user("prober", "no-secret")
	hs.do(call{method: "GET", path: "/bkt/k?acl", cred: u}).want(t, http.StatusForbidden, "AccessDenied")
	if rp := hs.do(call{method: "GET", path: "/bkt/k?acl&versionId=" + vid, cred: u}); rp.status != http.StatusForbidden {
		t.Errorf("GetObjectVersionAcl of a tag-denied version: %d, want 403", rp.status)
	}
	hs.do(call{method: "PUT", path: "/bkt/k?acl", cred: u, header: header("X-Amz-Acl", "public-read")}).want(t, http.StatusForbidden, "AccessDenied")
	if rp := hs.do(call{method: "PUT", path: "/bkt/k?acl&versionId=" + vid, cred: u, header: header("X-Amz-Acl", "public-read")}); rp.status != http.StatusForbidden {
		t.Errorf("PutObjectVersionAcl public-read of a tag-denied version: %d, want 403", rp.status)
	}
	if rp := hs.do(call{method: "GET", path: "/bkt/k", anon: true}); rp.status == http.StatusOK {
		t.Errorf("anonymous GET after the bypass: 200 %q", rp.body)
	}
}

// TestRequestTagVersionTagging: s3:RequestObjectTag is set for
// PutObjectVersionTagging too: a Deny on the tags a request sets is not
// bypassed with ?versionId=.
func TestRequestTagVersionTagging(t *testing.T) {
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	hs.do(call{method: "PUT", path: "/bkt?versioning", body: []byte(enableVersioning)}).mustStatus(t, http.StatusOK)
	vid := hs.put("bkt", "k", []byte("x")).header.Get("x-amz-version-id")
	const pol = `{"Version":"2012-10-17","Statement":[
  {"Effect":"Allow","Action":"s3:*","Resource":["arn:aws:s3:::bkt","arn:aws:s3:::bkt/*"]},
  {"Effect":"Deny","Action":["s3:PutObjectTagging","s3:PutObjectVersionTagging"],"Resource":"arn:aws:s3:::bkt/*","Condition":{"StringEquals":{"s3:RequestObjectTag/security":"public"}}}]}`
	if err := hs.iam.PutPolicy(t.Context(), "no-public-tag", []byte(pol)); err != nil {
		t.Fatal(err)
	}
	u := hs.user("prober", "no-public-tag")
	pub := []byte(`<Tagging><TagSet><Tag><Key>security</Key><Value>public</Value></Tag></TagSet></Tagging>`)
	hs.do(call{method: "PUT", path: "/bkt/k?tagging", body: pub, cred: u}).want(t, http.StatusForbidden, "AccessDenied")
	if rp := hs.do(call{method: "PUT", path: "/bkt/k?tagging&versionId=" + vid, body: pub, cred: u}); rp.status != http.StatusForbidden {
		t.Errorf("PutObjectVersionTagging setting a denied tag: %d, want 403", rp.status)
	}
	rp := hs.do(call{method: "GET", path: "/bkt/k?tagging"}).mustStatus(t, http.StatusOK)
	if bytes.Contains(rp.body, []byte("public")) {
		t.Errorf("denied tag stored: %s", rp.body)
	}
}

// TestACPGrantVersionAcl: READ_ACP and WRITE_ACP object grants allow
// GetObjectVersionAcl and PutObjectVersionAcl, as S3 maps them.
func TestACPGrantVersionAcl(t *testing.T) {
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	hs.do(call{method: "PUT", path: "/bkt?ownershipControls", body: []byte(`<OwnershipControls><Rule><ObjectOwnership>ObjectWriter</ObjectOwnership></Rule></OwnershipControls>`)}).mustStatus(t, http.StatusOK)
	hs.do(call{method: "PUT", path: "/bkt?versioning", body: []byte(enableVersioning)}).mustStatus(t, http.StatusOK)
	bob := hs.user("bob")
	id := `id="` + hs.canonicalID("bob") + `"`
	vid := hs.put("bkt", "k", []byte("x"), "X-Amz-Grant-Read-Acp", id, "X-Amz-Grant-Write-Acp", id,
		"X-Amz-Grant-Full-Control", `id="`+iam.RootCanonicalID()+`"`).header.Get("x-amz-version-id")
	hs.do(call{method: "GET", path: "/bkt/k?acl", cred: bob}).mustStatus(t, http.StatusOK)
	if rp := hs.do(call{method: "GET", path: "/bkt/k?acl&versionId=" + vid, cred: bob}); rp.status != http.StatusOK {
		t.Errorf("GetObjectVersionAcl with READ_ACP: %d %s", rp.status, rp.body)
	}
	if rp := hs.do(call{method: "PUT", path: "/bkt/k?acl&versionId=" + vid, cred: bob, header: header("X-Amz-Grant-Read-Acp", id, "X-Amz-Grant-Write-Acp", id)}); rp.status != http.StatusOK {
		t.Errorf("PutObjectVersionAcl with WRITE_ACP: %d %s", rp.status, rp.body)
	}
}

// TestPutObjectAclPinned: PutObjectAcl without versionId is authorized
// against (and takes the owner from) the version current when it starts;
// if the key is overwritten before its body has arrived, it must not
// write the ACL onto the new version (a WRITE_ACP grant on v1 made v2,
// written meanwhile by the owner as private, public): 409
// ConditionalRequestConflict, and v2 keeps its ACL.
func TestPutObjectAclPinned(t *testing.T) {
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	hs.do(call{method: "PUT", path: "/bkt?ownershipControls", body: []byte(`<OwnershipControls><Rule><ObjectOwnership>ObjectWriter</ObjectOwnership></Rule></OwnershipControls>`)}).mustStatus(t, http.StatusOK)
	hs.do(call{method: "PUT", path: "/bkt?versioning", body: []byte(enableVersioning)}).mustStatus(t, http.StatusOK)
	bob := hs.user("bob")
	hs.put("bkt", "k", []byte("v1-shared"), "X-Amz-Grant-Write-Acp", `id="`+hs.canonicalID("bob")+`"`,
		"X-Amz-Grant-Full-Control", `id="`+iam.RootCanonicalID()+`"`).mustStatus(t, http.StatusOK)

	body := xmlBody(publicReadACP)
	// The handler is (most likely) authorized and has read v1's ACL when
	// root overwrites the key, privately.
	rp := hs.slowPut(t, call{method: "PUT", path: "/bkt/k?acl", body: body, cred: bob}, func() {
		hs.put("bkt", "k", []byte("v2-secret")).mustStatus(t, http.StatusOK)
	})
	// 409 if the overwrite came between the authorization and the write;
	// on a machine so slow that it came before the authorization, that
	// authorization saw v2, on which bob has no grant: 403.
	if code := errorCode(rp.body); !(rp.status == http.StatusConflict && code == "ConditionalRequestConflict" ||
		rp.status == http.StatusForbidden && code == "AccessDenied") {
		t.Errorf("bob's PutObjectAcl across an overwrite: %d %s, want 409 ConditionalRequestConflict", rp.status, rp.body)
	}
	if rp := hs.do(call{method: "GET", path: "/bkt/k", anon: true}); rp.status == http.StatusOK {
		t.Errorf("anonymous GET of v2 (written private by root, bob had no WRITE_ACP on it): 200 %q", rp.body)
	}
}

// TestTaggingBodiesStrict: Tagging bodies S3's schema refuses
// (MalformedXML; a Tagging without TagSet would erase every tag) and tags
// with characters S3 refuses (tabs, newlines) are refused.
func TestTaggingBodiesStrict(t *testing.T) {
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	hs.put("bkt", "k", []byte("x"), "X-Amz-Tagging", "keep=1")
	for _, tc := range []struct{ name, body string }{
		{"no TagSet", `<Tagging></Tagging>`},
		{"two TagSets", `<Tagging><TagSet><Tag><Key>a</Key><Value>1</Value></Tag></TagSet><TagSet><Tag><Key>b</Key><Value>2</Value></Tag></TagSet></Tagging>`},
		{"two Keys in a Tag", `<Tagging><TagSet><Tag><Key>a</Key><Key>b</Key><Value>1</Value></Tag></TagSet></Tagging>`},
		{"tab in value", "<Tagging><TagSet><Tag><Key>a</Key><Value>x\ty</Value></Tag></TagSet></Tagging>"},
		{"newline in key", "<Tagging><TagSet><Tag><Key>a&#10;b</Key><Value>1</Value></Tag></TagSet></Tagging>"},
	} {
		rp := hs.do(call{method: "PUT", path: "/bkt/k?tagging", body: []byte(tc.body)})
		got := hs.do(call{method: "GET", path: "/bkt/k?tagging"})
		t.Logf("%s: PUT %d %s -> GET %s", tc.name, rp.status, errorCode(rp.body), got.body)
		if rp.status == http.StatusOK {
			t.Errorf("%s: accepted", tc.name)
			hs.do(call{method: "PUT", path: "/bkt/k?tagging", body: []byte(`<Tagging><TagSet><Tag><Key>keep</Key><Value>1</Value></Tag></TagSet></Tagging>`)}).mustStatus(t, http.StatusOK)
		}
	}
	if rp := hs.do(call{method: "PUT", path: "/bkt/k2", body: []byte("x"), header: header("X-Amz-Tagging", "a=x%09y")}); rp.status != http.StatusBadRequest {
		t.Errorf("x-amz-tagging with a tab: %d, want 400", rp.status)
	}
	hs.put("bkt", "k3", []byte("x"), "X-Amz-Tagging", "a=x%20y%C2%A0z") // a space and a no-break space
}

// TestPutObjectAclRevokedDuringBody: the owner revokes bob's WRITE_ACP
// while bob's PutObjectAcl body trickles in (it may for minutes): bob's
// change, authorized on the grant he no longer has, must not land.
func TestPutObjectAclRevokedDuringBody(t *testing.T) {
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	hs.do(call{method: "PUT", path: "/bkt?ownershipControls", body: []byte(`<OwnershipControls><Rule><ObjectOwnership>ObjectWriter</ObjectOwnership></Rule></OwnershipControls>`)}).mustStatus(t, http.StatusOK)
	bob := hs.user("bob")
	hs.put("bkt", "k", []byte("v1"), "X-Amz-Grant-Write-Acp", `id="`+hs.canonicalID("bob")+`"`,
		"X-Amz-Grant-Full-Control", `id="`+iam.RootCanonicalID()+`"`).mustStatus(t, http.StatusOK)
	body := xmlBody(publicReadACP)
	rp := hs.slowPut(t, call{method: "PUT", path: "/bkt/k?acl", body: body, cred: bob}, func() {
		hs.do(call{method: "PUT", path: "/bkt/k?acl", header: header("X-Amz-Acl", "private")}).mustStatus(t, http.StatusOK) // revokes bob
	})
	if code := errorCode(rp.body); !(rp.status == http.StatusConflict && code == "ConditionalRequestConflict" ||
		rp.status == http.StatusForbidden && code == "AccessDenied") {
		t.Errorf("bob's PutObjectAcl after the revocation: %d %s, want 409 ConditionalRequestConflict", rp.status, rp.body)
	}
	if rp := hs.do(call{method: "GET", path: "/bkt/k", anon: true}); rp.status == http.StatusOK {
		t.Errorf("object public after the owner revoked bob's WRITE_ACP")
	}
}

// publicReadACP is an AccessControlPolicy granting everyone READ.
const publicReadACP = `<AccessControlPolicy xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><AccessControlList>
<Grant><Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="Group"><URI>http://acs.amazonaws.com/groups/global/AllUsers</URI></Grantee><Permission>READ</Permission></Grant>
</AccessControlList></AccessControlPolicy>`

// slowPut sends c with its body held back: 10 bytes, then mid runs (as
// the handler waits for the rest), then the rest.
func (hs *harness) slowPut(t *testing.T, c call, mid func()) reply {
	t.Helper()
	body := c.body
	pr, pw := io.Pipe()
	c.payload = "UNSIGNED-PAYLOAD"
	c.prepare = func(r *http.Request) { r.Body = pr; r.ContentLength = int64(len(body)) }
	req := hs.request(c)
	done := make(chan reply, 1)
	go func() {
		resp, err := hs.srv.Client().Do(req)
		if err != nil {
			t.Error(err)
			done <- reply{}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		done <- reply{status: resp.StatusCode, body: b}
	}()
	pw.Write(body[:10])
	time.Sleep(300 * time.Millisecond)
	mid()
	pw.Write(body[10:])
	pw.Close()
	return <-done
}

// TestPinnedOnlyWhatWasRead: a change pins only what its decision read:
// root's PutObjectAcl (whose authorization reads nothing, and whose
// handler reads the version for its owner) is not refused because the
// tags changed meanwhile, nor is a PutObjectTagging because the ACL did.
func TestPinnedOnlyWhatWasRead(t *testing.T) {
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	hs.put("bkt", "k", []byte("v1")).mustStatus(t, http.StatusOK)
	acp := hs.do(call{method: "GET", path: "/bkt/k?acl"}).mustStatus(t, http.StatusOK).body
	tagging := []byte(`<Tagging><TagSet><Tag><Key>a</Key><Value>1</Value></Tag></TagSet></Tagging>`)
	rp := hs.slowPut(t, call{method: "PUT", path: "/bkt/k?acl", body: acp}, func() {
		hs.do(call{method: "PUT", path: "/bkt/k?tagging", body: tagging}).mustStatus(t, http.StatusOK)
	})
	if rp.status != http.StatusOK {
		t.Errorf("root's PutObjectAcl while the tags changed: %d %s", rp.status, rp.body)
	}
	// A user whose policy tests the tags: the tags are pinned, the ACL not.
	const pol = `{"Version":"2012-10-17","Statement":[
  {"Effect":"Allow","Action":"s3:*","Resource":["arn:aws:s3:::bkt","arn:aws:s3:::bkt/*"]},
  {"Effect":"Deny","Action":"s3:PutObjectTagging","Resource":"arn:aws:s3:::bkt/*","Condition":{"StringEquals":{"s3:ExistingObjectTag/locked":"yes"}}}]}`
	if err := hs.iam.PutPolicy(t.Context(), "unless-locked", []byte(pol)); err != nil {
		t.Fatal(err)
	}
	u := hs.user("tagger", "unless-locked")
	rp = hs.do(call{method: "DELETE", path: "/bkt/k?tagging", cred: u})
	if rp.status != http.StatusNoContent {
		t.Fatalf("DeleteObjectTagging by the tagger: %d %s", rp.status, rp.body)
	}
	rp = hs.slowPut(t, call{method: "PUT", path: "/bkt/k?tagging", body: tagging, cred: u}, func() {
		hs.do(call{method: "PUT", path: "/bkt/k?acl", header: header("X-Amz-Acl", "public-read")}).mustStatus(t, http.StatusOK)
	})
	if rp.status != http.StatusOK {
		t.Errorf("the tagger's PutObjectTagging while the ACL changed: %d %s", rp.status, rp.body)
	}
	// ...but the tags are: locked while its body arrived, refused.
	rp = hs.slowPut(t, call{method: "PUT", path: "/bkt/k?tagging", body: tagging, cred: u}, func() {
		hs.do(call{method: "PUT", path: "/bkt/k?tagging", body: []byte(`<Tagging><TagSet><Tag><Key>locked</Key><Value>yes</Value></Tag></TagSet></Tagging>`)}).mustStatus(t, http.StatusOK)
	})
	if rp.status == http.StatusOK {
		t.Errorf("the tagger's PutObjectTagging landed on an object locked while its body arrived")
	}
}

// TestBlockPublicAclsDuringBody: Block Public Access turned on while a
// public ACL's body arrives refuses it: the bucket's settings are read
// again once the body is in.
func TestBlockPublicAclsDuringBody(t *testing.T) {
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	hs.do(call{method: "PUT", path: "/bkt?ownershipControls", body: []byte(`<OwnershipControls><Rule><ObjectOwnership>ObjectWriter</ObjectOwnership></Rule></OwnershipControls>`)}).mustStatus(t, http.StatusOK)
	hs.put("bkt", "k", []byte("v1")).mustStatus(t, http.StatusOK)
	body := xmlBody(publicReadACP)
	rp := hs.slowPut(t, call{method: "PUT", path: "/bkt/k?acl", body: body}, func() { hs.putBlock(t, "BlockPublicAcls") })
	if rp.status == http.StatusOK {
		t.Errorf("public object ACL written after BlockPublicAcls was turned on")
	}
	rp = hs.slowPut(t, call{method: "PUT", path: "/bkt?acl", body: body}, func() {})
	if rp.status == http.StatusOK {
		t.Errorf("public bucket ACL written with BlockPublicAcls on")
	}
}

// TestBucketAclBucketRemade: a bucket deleted and made again by another
// owner while a PutBucketAcl body arrives is another bucket: the ACL,
// parsed for the first owner, is refused (409), not written.
func TestBucketAclBucketRemade(t *testing.T) {
	hs := newHarness(t, Config{})
	hs.mkBucket("remade")
	alice := hs.user("alice", "readwrite")
	acp := hs.do(call{method: "GET", path: "/remade?acl"}).mustStatus(t, http.StatusOK).body
	rp := hs.slowPut(t, call{method: "PUT", path: "/remade?acl", body: acp}, func() {
		hs.do(call{method: "DELETE", path: "/remade"}).mustStatus(t, http.StatusNoContent)
		hs.do(call{method: "PUT", path: "/remade", cred: alice}).mustStatus(t, http.StatusOK)
	})
	if rp.status != http.StatusConflict || errorCode(rp.body) != "ConditionalRequestConflict" {
		t.Errorf("PutBucketAcl across a remade bucket: %d %s, want 409 ConditionalRequestConflict", rp.status, rp.body)
	}
}
