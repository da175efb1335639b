package objects

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/coffer-s3/coffer/internal/s3err"
)

func TestCheckBucketName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"abc", true},
		{"my-bucket.v2", true},
		{"a1b", true},
		{strings.Repeat("a", 63), true},
		{"192.168.5.4x", true},
		{"ab", false},
		{strings.Repeat("a", 64), false},
		{"Abc", false},
		{"ab_c", false},
		{"-abc", false},
		{"abc-", false},
		{".abc", false},
		{"a..b", false},
		{"192.168.5.4", false},
		{"1.2.3.256", false},
		{"xn--abc", false},
		{"sthree-abc", false},
		{"abc-s3alias", false},
		{"abc--ol-s3", false},
		{"abc--x-s3", false},
		{"abc--table-s3", false},
		{"a b", false},
		{"ab\x00", false},
	} {
		err := checkBucketName(tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("checkBucketName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
		if err != nil && !s3err.Is(err, s3err.InvalidBucketName) {
			t.Errorf("checkBucketName(%q) code = %q", tc.name, s3err.CodeOf(err))
		}
	}
}

func TestBuckets(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t) // has "bkt"
	wantCode(t, "CreateBucket(invalid)", e.s.CreateBucket(ctx, "Bad_Name", CreateBucketInput{Region: ""}), s3err.InvalidBucketName)
	wantCode(t, "CreateBucket(existing)", e.s.CreateBucket(ctx, "bkt", CreateBucketInput{Region: ""}), s3err.BucketAlreadyOwnedByYou)
	// Owners: the test bucket has none recorded, so it is LegacyOwner's.
	wantCode(t, "CreateBucket(someone else's)", e.s.CreateBucket(ctx, "bkt", CreateBucketInput{Owner: "alice", LegacyOwner: "root"}), s3err.BucketAlreadyExists)
	if err := e.s.CreateBucket(ctx, "bkt", CreateBucketInput{Owner: "root", LegacyOwner: "root", RecreateOwned: true, ACL: []byte("acl")}); err != nil {
		t.Errorf("re-creating one's own bucket in us-east-1: %v", err)
	}
	if doc, ok, err := e.s.BucketConfig(ctx, "bkt", ConfigACL); err != nil || !ok || string(doc) != "acl" {
		t.Errorf("ACL after re-creating = %q, %v, %v; want the new one", doc, ok, err)
	}
	if err := e.s.CreateBucket(ctx, "bkt", CreateBucketInput{Owner: "root", LegacyOwner: "root", RecreateOwned: true}); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := e.s.BucketConfig(ctx, "bkt", ConfigACL); ok {
		t.Error("re-creating without an ACL kept the old one; S3 resets it")
	}
	for _, n := range []string{"zeta", "alpha"} {
		if err := e.s.CreateBucket(ctx, n, CreateBucketInput{Region: "eu-west-1"}); err != nil {
			t.Fatal(err)
		}
	}
	bs, err := e.s.ListBuckets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, b := range bs {
		names = append(names, b.Name)
	}
	if strings.Join(names, ",") != "alpha,bkt,zeta" {
		t.Errorf("ListBuckets = %v", names)
	}
	b, err := e.s.HeadBucket(ctx, "zeta")
	if err != nil || b.Region != "eu-west-1" || b.Created.IsZero() {
		t.Errorf("HeadBucket = %+v, %v", b, err)
	}
	_, err = e.s.HeadBucket(ctx, "nope")
	wantCode(t, "HeadBucket(missing)", err, s3err.NoSuchBucket)
	wantCode(t, "DeleteBucket(missing)", e.s.DeleteBucket(ctx, "nope"), s3err.NoSuchBucket)

	// An object keeps a bucket.
	e.put(t, "k", []byte("x"))
	wantCode(t, "DeleteBucket(object)", e.s.DeleteBucket(ctx, "bkt"), s3err.BucketNotEmpty)
	if _, err := e.s.DeleteObject(ctx, "bkt", ObjectRef{Key: "k"}); err != nil {
		t.Fatal(err)
	}
	u, err := e.s.CreateMultipartUpload(ctx, "bkt", "k", CreateUploadInput{})
	if err != nil {
		t.Fatal(err)
	}
	// An upload in progress is aborted with its bucket, as in S3, and its
	// parts' blocks become garbage.
	part := randBytes(2*testBlock, 3)
	if _, err := e.s.UploadPart(ctx, "bkt", "k", u.UploadID, 1, PartInput{Size: int64(len(part))}, bytes.NewReader(part)); err != nil {
		t.Fatal(err)
	}
	if len(e.blobs(t)) == 0 {
		t.Fatal("the part wrote no block")
	}
	if err := e.s.DeleteBucket(ctx, "bkt"); err != nil {
		t.Fatalf("DeleteBucket with an upload in progress = %v", err)
	}
	if _, err := e.s.GC(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if got := e.blobs(t); len(got) != 0 {
		t.Errorf("blocks left after deleting the bucket and GC: %v", got)
	}
	_, err = e.s.PutObject(ctx, "bkt", "k", PutInput{Size: 1}, bytes.NewReader([]byte("x")))
	wantCode(t, "PutObject into deleted bucket", err, s3err.NoSuchBucket)
}

func TestDeleteObjects(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.put(t, "a", []byte("1"))
	e.put(t, "b", randBytes(2*testBlock, 1))
	var res []DeleteResult
	_, err := e.s.DeleteObject(ctx, "nope", ObjectRef{Key: "a"})
	wantCode(t, "DeleteObject(missing bucket)", err, s3err.NoSuchBucket)
	if _, err := e.s.DeleteObject(ctx, "bkt", ObjectRef{Key: "absent"}); err != nil {
		t.Errorf("DeleteObject(absent) = %v", err)
	}
	res, err = e.s.DeleteObjects(ctx, "bkt", refs("a", "absent", "b", "a"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 4 || res[1].Key != "absent" || res[0].Err != nil || res[2].Err != nil {
		t.Errorf("DeleteObjects = %+v", res)
	}
	for _, k := range []string{"a", "b"} {
		if _, err := e.s.HeadObject(ctx, "bkt", k, GetOptions{}); !s3err.Is(err, s3err.NoSuchKey) {
			t.Errorf("HeadObject(%s) after delete = %v", k, err)
		}
	}
	_, err = e.s.DeleteObjects(ctx, "nope", refs("a"))
	wantCode(t, "DeleteObjects(missing bucket)", err, s3err.NoSuchBucket)
	_, err = e.s.DeleteObjects(ctx, "bkt", make([]ObjectRef, 1001))
	wantCode(t, "DeleteObjects(1001 keys)", err, s3err.MalformedXML)
}

// TestPublicAccessBlockStored: the settings round-trip; removing them
// leaves none; a stored document that does not decode is an error where
// the settings are read for themselves, and blocks everything where they
// decide an access (fail closed).
func TestPublicAccessBlockStored(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, ok, err := e.s.PublicAccessBlock(ctx, "bkt"); ok || err != nil {
		t.Fatalf("a new bucket's settings: %v, %v; want none", ok, err)
	}
	want := PublicAccessBlock{BlockPublicAcls: true, RestrictPublicBuckets: true}
	if err := e.s.PutPublicAccessBlock(ctx, "bkt", &want); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := e.s.PublicAccessBlock(ctx, "bkt"); !ok || err != nil || got != want {
		t.Fatalf("settings = %+v, %v, %v; want %+v", got, ok, err, want)
	}
	if ba, err := e.s.BucketAccess(ctx, "bkt"); err != nil || ba.Block != want {
		t.Fatalf("BucketAccess.Block = %+v, %v; want %+v", ba.Block, err, want)
	}
	if err := e.s.PutBucketConfig(ctx, "bkt", ConfigPublicAccessBlock, []byte("not json")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.s.PublicAccessBlock(ctx, "bkt"); err == nil {
		t.Error("an undecodable document read without an error")
	}
	if ba, err := e.s.BucketAccess(ctx, "bkt"); err != nil || ba.Block != (PublicAccessBlock{true, true, true, true}) {
		t.Errorf("BucketAccess.Block of an undecodable document = %+v, %v; want everything blocked", ba.Block, err)
	}
	if err := e.s.PutPublicAccessBlock(ctx, "bkt", nil); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := e.s.PublicAccessBlock(ctx, "bkt"); ok || err != nil {
		t.Fatalf("settings after removal: %v, %v; want none", ok, err)
	}
	if _, _, err := e.s.PublicAccessBlock(ctx, "nope"); s3err.CodeOf(err) != s3err.NoSuchBucket {
		t.Errorf("settings of a missing bucket: %v, want NoSuchBucket", err)
	}
}
