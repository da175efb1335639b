package objects

import (
	"testing"

	"github.com/coffer-s3/coffer/internal/s3err"
)

// TestBucketConfig checks both readers of configuration documents:
// BucketConfig tells a missing bucket from a missing document,
// LookupBucketConfig does not (one read); documents go with their bucket.
func TestBucketConfig(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	type result struct {
		doc   string
		found bool
		code  s3err.Code
	}
	check := func(what, bucket string, want, wantLookup result) {
		t.Helper()
		doc, found, err := e.s.BucketConfig(ctx, bucket, ConfigCORS)
		if got := (result{string(doc), found, s3err.CodeOf(err)}); got != want {
			t.Errorf("%s: BucketConfig(%s) = %+v, want %+v", what, bucket, got, want)
		}
		doc, found, err = e.s.LookupBucketConfig(ctx, bucket, ConfigCORS)
		if got := (result{string(doc), found, s3err.CodeOf(err)}); got != wantLookup {
			t.Errorf("%s: LookupBucketConfig(%s) = %+v, want %+v", what, bucket, got, wantLookup)
		}
	}
	check("none", "bkt", result{}, result{})
	check("no bucket", "nope", result{code: s3err.NoSuchBucket}, result{})
	wantCode(t, "PutBucketConfig(nope)", e.s.PutBucketConfig(ctx, "nope", ConfigCORS, []byte("x")), s3err.NoSuchBucket)

	if err := e.s.PutBucketConfig(ctx, "bkt", ConfigCORS, []byte("doc")); err != nil {
		t.Fatal(err)
	}
	check("put", "bkt", result{doc: "doc", found: true}, result{doc: "doc", found: true})
	if doc, found, _ := e.s.BucketConfig(ctx, "bkt", ConfigLifecycle); found || doc != nil {
		t.Errorf("another document name reads %q", doc)
	}
	if err := e.s.PutBucketConfig(ctx, "bkt", ConfigCORS, nil); err != nil {
		t.Fatal(err)
	}
	check("deleted", "bkt", result{}, result{})

	if err := e.s.PutBucketConfig(ctx, "bkt", ConfigCORS, []byte("doc")); err != nil {
		t.Fatal(err)
	}
	if err := e.s.DeleteBucket(ctx, "bkt"); err != nil {
		t.Fatal(err)
	}
	if err := e.s.CreateBucket(ctx, "bkt", CreateBucketInput{Region: ""}); err != nil {
		t.Fatal(err)
	}
	check("bucket made again", "bkt", result{}, result{})
}
