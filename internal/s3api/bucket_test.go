package s3api

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/s3err"
)

func TestBucketOps(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, Config{})

	rp := hs.do(call{method: "GET", path: "/"}).mustStatus(t, http.StatusOK)
	golden(t, "ListBuckets_empty", rp.body)

	rp = hs.do(call{method: "PUT", path: "/photos"}).mustStatus(t, http.StatusOK)
	if got := rp.header.Get("Location"); got != "/photos" {
		t.Errorf("CreateBucket Location = %q, want /photos", got)
	}
	hs.do(call{method: "PUT", path: "/docs", body: xmlBody(`
<CreateBucketConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><LocationConstraint>us-east-1</LocationConstraint></CreateBucketConfiguration>`)}).
		mustStatus(t, http.StatusOK)

	// us-east-1 (the harness's region): re-creating one's own bucket is
	// 200 OK, as in S3; BucketAlreadyOwnedByYou in other regions.
	hs.do(call{method: "PUT", path: "/photos"}).mustStatus(t, http.StatusOK)
	goldenError(t, hs.do(call{method: "PUT", path: "/Bad_Name"}), "CreateBucket_InvalidBucketName", http.StatusBadRequest, s3err.InvalidBucketName)
	goldenError(t, hs.do(call{method: "PUT", path: "/elsewhere", body: xmlBody(`
<CreateBucketConfiguration><LocationConstraint>eu-west-1</LocationConstraint></CreateBucketConfiguration>`)}),
		"CreateBucket_IllegalLocationConstraintException", http.StatusBadRequest, s3err.IllegalLocationConstraintExc)
	goldenError(t, hs.do(call{method: "PUT", path: "/malformed", body: []byte("<CreateBucketConfiguration>")}),
		"CreateBucket_MalformedXML", http.StatusBadRequest, s3err.MalformedXML)
	hs.do(call{method: "PUT", path: "/locked", header: header("X-Amz-Bucket-Object-Lock-Enabled", "true")}).
		want(t, http.StatusNotImplemented, s3err.NotImplemented)
	hs.do(call{method: "PUT", path: "/execread", header: header("X-Amz-Acl", "aws-exec-read")}).
		want(t, http.StatusNotImplemented, s3err.NotImplemented)
	// Another principal asking for a bucket of that name: it exists, and
	// is not theirs.
	bob := hs.user("bob", "readwrite")
	goldenError(t, hs.do(call{method: "PUT", path: "/photos", cred: bob}), "CreateBucket_BucketAlreadyExists", http.StatusConflict, s3err.BucketAlreadyExists)

	rp = hs.do(call{method: "GET", path: "/"}).mustStatus(t, http.StatusOK)
	golden(t, "ListBuckets", rp.body)
	rp = hs.do(call{method: "GET", path: "/?max-buckets=1"}).mustStatus(t, http.StatusOK)
	golden(t, "ListBuckets_paged", rp.body)
	rp = hs.do(call{method: "GET", path: "/?max-buckets=1&continuation-token=" + encodeToken("docs")}).mustStatus(t, http.StatusOK)
	golden(t, "ListBuckets_page2", rp.body)

	rp = hs.do(call{method: "HEAD", path: "/photos"}).mustStatus(t, http.StatusOK)
	if got := rp.header.Get("x-amz-bucket-region"); got != testRegion {
		t.Errorf("HeadBucket x-amz-bucket-region = %q, want %q", got, testRegion)
	}
	rp = hs.do(call{method: "HEAD", path: "/nope"})
	rp.want(t, http.StatusNotFound, "")
	if len(rp.body) != 0 {
		t.Errorf("HEAD error has a body: %q", rp.body)
	}

	rp = hs.do(call{method: "GET", path: "/photos?location"}).mustStatus(t, http.StatusOK)
	golden(t, "GetBucketLocation", rp.body)
	goldenError(t, hs.do(call{method: "GET", path: "/nope?location"}), "GetBucketLocation_NoSuchBucket", http.StatusNotFound, s3err.NoSuchBucket)
	rp = hs.do(call{method: "GET", path: "/photos?versioning"}).mustStatus(t, http.StatusOK)
	golden(t, "GetBucketVersioning", rp.body)
	hs.do(call{method: "GET", path: "/nope?versioning"}).want(t, http.StatusNotFound, s3err.NoSuchBucket)
	goldenError(t, hs.do(call{method: "PUT", path: "/photos?versioning", body: []byte("<VersioningConfiguration><Status>On</Status></VersioningConfiguration>")}),
		"PutBucketVersioning_MalformedXML", http.StatusBadRequest, s3err.MalformedXML)
	hs.do(call{method: "PUT", path: "/photos?versioning", body: []byte("<VersioningConfiguration><Status>Enabled</Status><MfaDelete>Enabled</MfaDelete></VersioningConfiguration>")}).
		want(t, http.StatusNotImplemented, s3err.NotImplemented)
	hs.do(call{method: "PUT", path: "/photos?versioning", body: []byte("<VersioningConfiguration><Status>Suspended</Status></VersioningConfiguration>")}).
		mustStatus(t, http.StatusOK)
	rp = hs.do(call{method: "GET", path: "/photos?versioning"}).mustStatus(t, http.StatusOK)
	golden(t, "GetBucketVersioning_Suspended", rp.body)

	hs.put("photos", "a.jpg", []byte("jpeg"))
	goldenError(t, hs.do(call{method: "DELETE", path: "/photos"}), "DeleteBucket_BucketNotEmpty", http.StatusConflict, s3err.BucketNotEmpty)
	// In a suspended bucket, a delete leaves a null delete marker, which
	// keeps the bucket until it is deleted too.
	rp = hs.do(call{method: "DELETE", path: "/photos/a.jpg"}).mustStatus(t, http.StatusNoContent)
	if rp.header.Get("x-amz-delete-marker") != "true" || rp.header.Get("x-amz-version-id") != "null" {
		t.Errorf("DeleteObject in a suspended bucket: headers %v, want a null delete marker", rp.header)
	}
	hs.do(call{method: "DELETE", path: "/photos"}).want(t, http.StatusConflict, s3err.BucketNotEmpty)
	hs.do(call{method: "DELETE", path: "/photos/a.jpg?versionId=null"}).mustStatus(t, http.StatusNoContent)
	hs.do(call{method: "DELETE", path: "/photos"}).mustStatus(t, http.StatusNoContent)
	goldenError(t, hs.do(call{method: "DELETE", path: "/photos"}), "DeleteBucket_NoSuchBucket", http.StatusNotFound, s3err.NoSuchBucket)
}

func TestBucketRegion(t *testing.T) {
	h := &Handler{cfg: Config{Region: "eu-west-1"}.withDefaults()}
	if got := h.bucketRegion(objects.Bucket{Name: "b"}); got != "eu-west-1" {
		t.Errorf("bucketRegion of a default bucket = %q, want eu-west-1", got)
	}
	if got := h.bucketRegion(objects.Bucket{Name: "b", Region: "ap-south-1"}); got != "ap-south-1" {
		t.Errorf("bucketRegion of an ap-south-1 bucket = %q", got)
	}
}

// TestExpectedBucketOwner: x-amz-expected-bucket-owner and
// x-amz-source-expected-bucket-owner must name the bucket's owner (its
// canonical ID, or the account: any 12-digit ID); anything else is
// AccessDenied and nothing happens.
func TestExpectedBucketOwner(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	hs.put("bkt", "k", []byte("x"))
	root := iam.RootCanonicalID()
	bob := hs.user("bob", "readwrite")
	bobID := hs.canonicalID("bob")
	for _, owner := range []string{root, "123456789012"} {
		hs.do(call{method: "GET", path: "/bkt", header: header("X-Amz-Expected-Bucket-Owner", owner)}).mustStatus(t, http.StatusOK)
		hs.do(call{method: "GET", path: "/bkt/k", header: header("X-Amz-Expected-Bucket-Owner", owner), cred: bob}).mustStatus(t, http.StatusOK)
	}
	for _, owner := range []string{bobID, root + "foo", "12345678901", "x"} {
		hs.do(call{method: "GET", path: "/bkt", header: header("X-Amz-Expected-Bucket-Owner", owner)}).want(t, http.StatusForbidden, s3err.AccessDenied)
		hs.do(call{method: "PUT", path: "/bkt/new", body: []byte("x"), header: header("X-Amz-Expected-Bucket-Owner", owner)}).want(t, http.StatusForbidden, s3err.AccessDenied)
		hs.do(call{method: "PUT", path: "/bkt/copy", header: header("X-Amz-Copy-Source", "bkt/k", "X-Amz-Source-Expected-Bucket-Owner", owner)}).
			want(t, http.StatusForbidden, s3err.AccessDenied)
	}
	hs.do(call{method: "HEAD", path: "/bkt/new"}).want(t, http.StatusNotFound, "")
	hs.do(call{method: "HEAD", path: "/bkt/copy"}).want(t, http.StatusNotFound, "")
	hs.do(call{method: "PUT", path: "/bkt/copy", header: header("X-Amz-Copy-Source", "bkt/k", "X-Amz-Source-Expected-Bucket-Owner", root)}).mustStatus(t, http.StatusOK)
	hs.do(call{method: "GET", path: "/nope", header: header("X-Amz-Expected-Bucket-Owner", root)}).want(t, http.StatusNotFound, s3err.NoSuchBucket)
}

// TestRecreatedUserInheritsNothing: a user deleted and created again
// under the same name is another principal, as on AWS: it holds none of
// the first one's ACL grants or bucket-policy grants and owns none of its
// buckets.
func TestRecreatedUserInheritsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	hs.put("bkt", "k", []byte("x"))
	bob := hs.user("bob")
	bobID := hs.canonicalID("bob")
	hs.do(call{method: "PUT", path: "/bkt/k?acl", header: header("X-Amz-Grant-Read", `id="`+bobID+`"`)}).mustStatus(t, http.StatusOK)
	hs.do(call{method: "GET", path: "/bkt/k", cred: bob}).mustStatus(t, http.StatusOK)
	alice := hs.user("alice", "readwrite")
	hs.do(call{method: "PUT", path: "/alices", cred: alice}).mustStatus(t, http.StatusOK)
	aliceID := hs.canonicalID("alice")
	hs.do(call{method: "GET", path: "/alices", cred: alice, header: header("X-Amz-Expected-Bucket-Owner", aliceID)}).mustStatus(t, http.StatusOK)
	carol := hs.user("carol")
	pol := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::123456789012:user/team/carol"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"}]}`
	hs.do(call{method: "PUT", path: "/bkt?policy", body: []byte(pol)}).mustStatus(t, http.StatusNoContent)
	hs.do(call{method: "GET", path: "/bkt/k", cred: carol}).mustStatus(t, http.StatusOK)
	carolID := hs.canonicalID("carol")

	for _, u := range []string{"bob", "alice", "carol"} {
		if err := hs.iam.DeleteUser(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	bob = hs.user("bob")
	alice = hs.user("alice", "readwrite")
	carol = hs.user("carol")
	hs.do(call{method: "GET", path: "/bkt/k", cred: carol}).want(t, http.StatusForbidden, s3err.AccessDenied)
	// As on AWS, the policy reads back with the deleted principal shown
	// by an ID (the first carol's canonical ID), which cannot be put back;
	// set again as first written, it names the carol there is now.
	got := hs.do(call{method: "GET", path: "/bkt?policy"}).mustStatus(t, http.StatusOK)
	if b := string(got.body); !strings.Contains(b, `"AWS":"`+carolID+`"`) || strings.Contains(b, "carol") {
		t.Errorf("GetBucketPolicy after carol was re-created = %s", b)
	}
	hs.do(call{method: "PUT", path: "/bkt?policy", body: got.body}).want(t, http.StatusBadRequest, s3err.MalformedPolicy)
	hs.do(call{method: "PUT", path: "/bkt?policy", body: []byte(pol)}).mustStatus(t, http.StatusNoContent)
	if got := hs.do(call{method: "GET", path: "/bkt?policy"}).mustStatus(t, http.StatusOK); string(got.body) != pol {
		t.Errorf("GetBucketPolicy = %s, want %s", got.body, pol)
	}
	hs.do(call{method: "GET", path: "/bkt/k", cred: carol}).mustStatus(t, http.StatusOK)
	// As on AWS, a policy may name only users that exist.
	dave := strings.ReplaceAll(pol, "team/carol", "dave")
	rp := hs.do(call{method: "PUT", path: "/bkt?policy", body: []byte(dave)})
	rp.want(t, http.StatusBadRequest, s3err.MalformedPolicy)
	if !strings.Contains(string(rp.body), "Invalid principal in policy") {
		t.Errorf("a policy naming no user: %s", rp.body)
	}
	if id := hs.canonicalID("bob"); id == bobID {
		t.Fatalf("re-created bob has the first bob's canonical ID %s", id)
	}
	hs.do(call{method: "GET", path: "/bkt/k", cred: bob}).want(t, http.StatusForbidden, s3err.AccessDenied)
	hs.do(call{method: "GET", path: "/alices", cred: alice, header: header("X-Amz-Expected-Bucket-Owner", hs.canonicalID("alice"))}).
		want(t, http.StatusForbidden, s3err.AccessDenied)
	// The grant stays, naming the first bob, who has no name any more.
	rp = hs.do(call{method: "GET", path: "/bkt/k?acl"}).mustStatus(t, http.StatusOK)
	if b := string(rp.body); !strings.Contains(b, "<ID>"+bobID+"</ID>") || strings.Contains(b, "<DisplayName>bob</DisplayName>") {
		t.Errorf("GetObjectAcl after bob was re-created:\n%s", b)
	}
}
