package meta

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"
)

func TestBucketPolicyLifecycle(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := openAt(t, dir)
	if err := db.PutBucketPolicy(ctx, "nope", []byte("{}")); !errors.Is(err, ErrNoBucket) {
		t.Fatalf("PutBucketPolicy on a missing bucket: %v, want ErrNoBucket", err)
	}
	if _, err := db.BucketPolicy(ctx, "nope"); !errors.Is(err, ErrNoBucket) {
		t.Fatalf("BucketPolicy on a missing bucket: %v, want ErrNoBucket", err)
	}
	mustCreateBucket(t, db, "a")
	mustCreateBucket(t, db, "ab") // shares a prefix with "a"
	if doc, err := db.BucketPolicy(ctx, "a"); err != nil || doc != nil {
		t.Fatalf("BucketPolicy before any put = %q, %v; want nil, nil", doc, err)
	}
	if err := db.PutBucketPolicy(ctx, "a", []byte(`{"v":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := db.PutBucketPolicy(ctx, "ab", []byte(`{"v":2}`)); err != nil {
		t.Fatal(err)
	}
	if err := db.PutBucketPolicy(ctx, "a", []byte(`{"v":3}`)); err != nil {
		t.Fatal(err)
	}
	all, err := db.BucketPolicies(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || string(all["a"]) != `{"v":3}` || string(all["ab"]) != `{"v":2}` {
		t.Fatalf("BucketPolicies = %q", all)
	}

	// Durable across a reopen.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openAt(t, dir)
	if doc, err := db.BucketPolicy(ctx, "a"); err != nil || string(doc) != `{"v":3}` {
		t.Fatalf("after reopen BucketPolicy = %q, %v", doc, err)
	}

	// DeleteBucket takes the policy with it; a new bucket of the same
	// name starts without one.
	if err := db.DeleteBucket(ctx, "a", time.Now()); err != nil {
		t.Fatal(err)
	}
	mustCreateBucket(t, db, "a")
	if doc, err := db.BucketPolicy(ctx, "a"); err != nil || doc != nil {
		t.Fatalf("policy survived DeleteBucket: %q, %v", doc, err)
	}
	if err := db.DeleteBucketPolicy(ctx, "ab"); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteBucketPolicy(ctx, "ab"); err != nil {
		t.Fatalf("deleting no policy: %v", err)
	}
	if all, err := db.BucketPolicies(ctx); err != nil || len(all) != 0 {
		t.Fatalf("BucketPolicies after deletes = %q, %v", all, err)
	}
}

func TestIAMState(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := openAt(t, dir)
	if doc, err := db.IAMState(ctx); err != nil || doc != nil {
		t.Fatalf("IAMState of a new store = %q, %v", doc, err)
	}
	want := bytes.Repeat([]byte("x"), 1<<20)
	if err := db.PutIAMState(ctx, want); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openAt(t, dir)
	got, err := db.IAMState(ctx)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("IAMState after reopen: %d bytes, %v", len(got), err)
	}
	// The IAM key must not show up as a bucket or a policy.
	if bs, err := db.Buckets(ctx); err != nil || len(bs) != 0 {
		t.Fatalf("Buckets = %v, %v", bs, err)
	}
}
