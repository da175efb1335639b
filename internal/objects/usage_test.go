package objects

import (
	"bytes"
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/coffer-s3/coffer/internal/s3err"
)

// TestUsage follows a bucket's usage through the service's operations:
// logical sizes, inline and block objects, overwrites, a failed conditional
// write, multipart parts (replaced, then completed), copy and deletes.
func TestUsage(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	put := func(key string, n int, cond WriteConditions) error {
		_, err := e.s.PutObject(ctx, "bkt", key, PutInput{Size: int64(n), Cond: cond}, bytes.NewReader(randBytes(n, uint64(n))))
		return err
	}
	usage := func(step string, want Usage) {
		t.Helper()
		got, err := e.s.BucketUsage(ctx, "bkt")
		if err != nil {
			t.Fatalf("%s: BucketUsage: %v", step, err)
		}
		if diff := cmp.Diff(want, got.Usage); diff != "" {
			t.Errorf("%s: usage (-want +got):\n%s", step, diff)
		}
	}
	usage("new bucket", Usage{})
	if err := put("small", 100, WriteConditions{}); err != nil {
		t.Fatal(err)
	}
	if err := put("big", 3*testBlock+1, WriteConditions{}); err != nil {
		t.Fatal(err)
	}
	usage("two puts", Usage{Objects: 2, Bytes: 100 + 3*testBlock + 1})
	if err := put("small", 10, WriteConditions{}); err != nil {
		t.Fatal(err)
	}
	if err := put("big", 5, WriteConditions{IfNoneMatch: "*"}); !s3err.Is(err, s3err.PreconditionFailed) {
		t.Fatalf("conditional put over an object = %v", err)
	}
	usage("overwrite, failed conditional put", Usage{Objects: 2, Bytes: 10 + 3*testBlock + 1})

	up, err := e.s.CreateMultipartUpload(ctx, "bkt", "mp", CreateUploadInput{})
	if err != nil {
		t.Fatal(err)
	}
	var parts []CompletePart
	for n, size := range []int{2 * testBlock, 2*testBlock + 7, 3} {
		// Upload each part twice, the first time with another size: the
		// replaced part no longer counts.
		for _, sz := range []int{size + 11, size} {
			p, err := e.s.UploadPart(ctx, "bkt", "mp", up.UploadID, n+1, PartInput{Size: int64(sz)}, bytes.NewReader(randBytes(sz, 9)))
			if err != nil {
				t.Fatal(err)
			}
			if sz == size {
				parts = append(parts, CompletePart{Number: n + 1, ETag: p.ETag})
			}
		}
	}
	mpSize := int64(4*testBlock + 10)
	usage("parts uploaded", Usage{Objects: 2, Bytes: 10 + 3*testBlock + 1, Uploads: 1, PartBytes: mpSize})
	if _, err := e.s.CompleteMultipartUpload(ctx, "bkt", "mp", up.UploadID, CompleteInput{Parts: parts}); err != nil {
		t.Fatal(err)
	}
	usage("completed", Usage{Objects: 3, Bytes: 10 + 3*testBlock + 1 + mpSize})

	up2, err := e.s.CreateMultipartUpload(ctx, "bkt", "gone", CreateUploadInput{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.UploadPart(ctx, "bkt", "gone", up2.UploadID, 1, PartInput{Size: 5}, bytes.NewReader(randBytes(5, 1))); err != nil {
		t.Fatal(err)
	}
	usage("second upload", Usage{Objects: 3, Bytes: 10 + 3*testBlock + 1 + mpSize, Uploads: 1, PartBytes: 5})
	if err := e.s.AbortMultipartUpload(ctx, "bkt", "gone", up2.UploadID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.CopyObject(ctx, "bkt", "copy", CopyInput{SrcBucket: "bkt", SrcKey: "mp"}); err != nil {
		t.Fatal(err)
	}
	usage("aborted, copied", Usage{Objects: 4, Bytes: 10 + 3*testBlock + 1 + 2*mpSize})
	if _, err := e.s.DeleteObject(ctx, "bkt", ObjectRef{Key: "small"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.DeleteObjects(ctx, "bkt", refs("big", "mp", "absent")); err != nil {
		t.Fatal(err)
	}
	usage("deleted", Usage{Objects: 1, Bytes: mpSize})

	all, err := e.s.BucketsUsage(ctx)
	if err != nil || len(all) != 1 || all[0].Name != "bkt" || all[0].Usage != (Usage{Objects: 1, Bytes: mpSize}) {
		t.Errorf("BucketsUsage = %+v, %v", all, err)
	}
	if _, err := e.s.BucketUsage(ctx, "nope"); !s3err.Is(err, s3err.NoSuchBucket) {
		t.Errorf("BucketUsage of a missing bucket = %v, want NoSuchBucket", err)
	}
	if c, err := e.s.CheckUsage(ctx, false); err != nil || len(c.Mismatches) != 0 || c.Buckets != 1 {
		t.Errorf("CheckUsage = %+v, %v", c, err)
	}
}
