package e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/google/go-cmp/cmp"

	"github.com/coffer-s3/coffer/internal/adminapi"
)

// TestACLs drives ACLs with aws-sdk-go-v2 and two users that have no
// identity policy, so that only ACLs let them in: canned ACLs on buckets and
// objects, grants to a user's canonical ID, what each permission opens and
// what it does not, anonymous reads of public-read objects, and Object
// Ownership turning ACLs off.
func TestACLs(t *testing.T) {
	t.Parallel()
	testACLs(t, startServer(t))
}

func testACLs(t *testing.T, ts s3Target) {
	root := ts.client(t)
	ctx := t.Context()
	endpoint, hc := ts.rawEndpoint()
	ac, err := adminapi.NewClient(endpoint, testAccessKey, testSecretKey, testRegion, hc)
	if err != nil {
		t.Fatal(err)
	}
	userClient := func(name string) (*s3.Client, string) {
		t.Helper()
		k, err := ac.CreateUser(ctx, name)
		if err != nil {
			t.Fatalf("CreateUser(%s): %v", name, err)
		}
		c := ts.client(t, func(o *s3.Options) {
			o.Credentials = credentials.NewStaticCredentialsProvider(k.AccessKey, k.SecretKey, "")
		})
		return c, k.AccessKey
	}
	alice, _ := userClient("alice")
	bob, _ := userClient("bob")
	settle(ts) // the new keys, on every node
	b := mkBucket(t, root, "acl")
	put(t, root, b, "private", []byte("secret"))

	// Canonical IDs: ListBuckets shows each principal its own.
	lbRoot, err := root.ListBuckets(ctx, &s3.ListBucketsInput{})
	if err != nil {
		t.Fatal(err)
	}
	lbAlice, err := alice.ListBuckets(ctx, &s3.ListBucketsInput{})
	if err != nil {
		t.Fatal(err)
	}
	rootID, aliceID := aws.ToString(lbRoot.Owner.ID), aws.ToString(lbAlice.Owner.ID)
	if len(rootID) != 64 || len(aliceID) != 64 || rootID == aliceID || aws.ToString(lbAlice.Owner.DisplayName) != "alice" {
		t.Fatalf("owners: root %+v, alice %+v", lbRoot.Owner, lbAlice.Owner)
	}

	// Without a grant alice can do nothing with root's bucket.
	_, err = alice.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String("private")})
	wantErr(t, "alice GET of a private object", err, "AccessDenied", http.StatusForbidden)

	// A grant of READ on the object to alice's canonical ID opens it to her
	// alone.
	if _, err := root.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: aws.String(b), Key: aws.String("private"),
		GrantRead: aws.String(`id="` + aliceID + `"`)}); err != nil {
		t.Fatalf("PutObjectAcl with a grant header: %v", err)
	}
	if got := readAll(t, alice, b, "private"); got != "secret" {
		t.Errorf("alice read %q", got)
	}
	_, err = bob.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String("private")})
	wantErr(t, "bob GET with a grant to alice", err, "AccessDenied", http.StatusForbidden)
	acl, err := root.GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: aws.String(b), Key: aws.String("private")})
	if err != nil || aws.ToString(acl.Owner.ID) != rootID || len(acl.Grants) != 1 ||
		aws.ToString(acl.Grants[0].Grantee.ID) != aliceID || acl.Grants[0].Permission != types.PermissionRead ||
		aws.ToString(acl.Grants[0].Grantee.DisplayName) != "alice" {
		t.Errorf("GetObjectAcl: %+v, %v", acl, err)
	}
	// READ does not open writing or the ACL.
	_, err = alice.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: aws.String(b), Key: aws.String("private"), ACL: types.ObjectCannedACLPublicRead})
	wantErr(t, "alice PutObjectAcl with READ only", err, "AccessDenied", http.StatusForbidden)
	_, err = alice.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("a"), Body: strings.NewReader("a")})
	wantErr(t, "alice PUT into a bucket without WRITE", err, "AccessDenied", http.StatusForbidden)
	// An unknown canonical ID cannot be granted.
	_, err = root.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: aws.String(b), Key: aws.String("private"),
		GrantRead: aws.String(`id="` + strings.Repeat("0", 64) + `"`)})
	wantErr(t, "grant to an unknown ID", err, "InvalidArgument", http.StatusBadRequest)

	// Bucket WRITE to alice: she may write objects, which are hers; root,
	// the bucket's owner, can read them only if she lets him (S3's rule),
	// but as root he may do anything.
	if _, err := root.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: aws.String(b),
		GrantWrite: aws.String(`id="` + aliceID + `"`), GrantFullControl: aws.String(`id="` + rootID + `"`)}); err != nil {
		t.Fatalf("PutBucketAcl: %v", err)
	}
	put(t, alice, b, "by-alice", []byte("mine"))
	oacl, err := alice.GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: aws.String(b), Key: aws.String("by-alice")})
	if err != nil || aws.ToString(oacl.Owner.ID) != aliceID {
		t.Errorf("owner of alice's object: %+v, %v", oacl.Owner, err)
	}
	_, err = bob.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String("by-alice")})
	wantErr(t, "bob GET of alice's object", err, "AccessDenied", http.StatusForbidden)
	// bucket-owner-full-control gives the bucket's owner full control.
	if _, err := alice.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("for-root"), Body: strings.NewReader("x"),
		ACL: types.ObjectCannedACLBucketOwnerFullControl}); err != nil {
		t.Fatal(err)
	}
	oacl, err = root.GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: aws.String(b), Key: aws.String("for-root")})
	if err != nil || len(oacl.Grants) != 2 {
		t.Errorf("bucket-owner-full-control grants: %+v, %v", oacl.Grants, err)
	}
	// Listings name each object's owner, as GetObjectAcl does, not the
	// caller: alice's objects are hers (under ObjectWriter, even with
	// bucket-owner-full-control).
	checkListOwners(t, root, b, map[string]string{"private": rootID, "by-alice": aliceID, "for-root": aliceID})

	// public-read on an object: anyone may GET it, with no signature.
	if _, err := root.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("public"), Body: strings.NewReader("hello"),
		ACL: types.ObjectCannedACLPublicRead}); err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Get(endpoint + "/" + b + "/public")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "hello" {
		t.Errorf("anonymous GET of a public-read object: %d %q", resp.StatusCode, body)
	}
	if resp, err := hc.Get(endpoint + "/" + b + "/private"); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("anonymous GET of a private object: %v %v", resp.Status, err)
	}

	// BucketOwnerEnforced: ACLs stop counting, and cannot be set.
	if _, err := root.PutBucketOwnershipControls(ctx, &s3.PutBucketOwnershipControlsInput{Bucket: aws.String(b),
		OwnershipControls: &types.OwnershipControls{Rules: []types.OwnershipControlsRule{{ObjectOwnership: types.ObjectOwnershipBucketOwnerEnforced}}}}); err != nil {
		t.Fatalf("PutBucketOwnershipControls: %v", err)
	}
	oc, err := root.GetBucketOwnershipControls(ctx, &s3.GetBucketOwnershipControlsInput{Bucket: aws.String(b)})
	if err != nil || len(oc.OwnershipControls.Rules) != 1 || oc.OwnershipControls.Rules[0].ObjectOwnership != types.ObjectOwnershipBucketOwnerEnforced {
		t.Errorf("GetBucketOwnershipControls: %+v, %v", oc, err)
	}
	if resp, err := hc.Get(endpoint + "/" + b + "/public"); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("anonymous GET of a public-read object with ACLs off: %v %v", resp.Status, err)
	}
	_, err = root.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("x"), Body: strings.NewReader("x"), ACL: types.ObjectCannedACLPublicRead})
	wantErr(t, "PUT with public-read and ACLs off", err, "AccessControlListNotSupported", http.StatusBadRequest)
	// With ACLs off the bucket's owner owns every object.
	checkListOwners(t, root, b, map[string]string{"private": rootID, "by-alice": rootID, "for-root": rootID, "public": rootID})

	// A bucket created public-read lists for anyone.
	pb := newBucketName("pub")
	if _, err := root.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(pb), ACL: types.BucketCannedACLPublicRead}); err != nil {
		t.Fatal(err)
	}
	if resp, err := hc.Get(endpoint + "/" + pb); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("anonymous ListObjects of a public-read bucket: %v %v", resp.Status, err)
	}
}

// readAll GETs bucket/key with c and returns the body.
func readAll(t *testing.T, c *s3.Client, bucket, key string) string {
	t.Helper()
	out, err := c.GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("GetObject(%s/%s): %v", bucket, key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checkListOwners checks the owner's canonical ID that ListObjects,
// ListObjectsV2 with FetchOwner and ListObjectVersions give each key of
// bucket b when c lists it.
func checkListOwners(t *testing.T, c *s3.Client, b string, want map[string]string) {
	t.Helper()
	ctx := t.Context()
	got := map[string]map[string]string{"ListObjects": {}, "ListObjectsV2": {}, "ListObjectVersions": {}}
	v1, err := c.ListObjects(ctx, &s3.ListObjectsInput{Bucket: aws.String(b)})
	if err != nil {
		t.Fatalf("ListObjects: %v", err)
	}
	for _, o := range v1.Contents {
		if o.Owner != nil {
			got["ListObjects"][aws.ToString(o.Key)] = aws.ToString(o.Owner.ID)
		}
	}
	v2, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b), FetchOwner: aws.Bool(true)})
	if err != nil {
		t.Fatalf("ListObjectsV2: %v", err)
	}
	for _, o := range v2.Contents {
		if o.Owner != nil {
			got["ListObjectsV2"][aws.ToString(o.Key)] = aws.ToString(o.Owner.ID)
		}
	}
	vs, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(b)})
	if err != nil {
		t.Fatalf("ListObjectVersions: %v", err)
	}
	for _, v := range vs.Versions {
		if v.Owner != nil {
			got["ListObjectVersions"][aws.ToString(v.Key)] = aws.ToString(v.Owner.ID)
		}
	}
	for op, g := range got {
		if diff := cmp.Diff(want, g); diff != "" {
			t.Errorf("%s of %s: owners mismatch (-want +got):\n%s", op, b, diff)
		}
	}
}
