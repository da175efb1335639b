package s3api

import (
	"bytes"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// apiCode is the S3 error code of an SDK error ("" for none).
func apiCode(err error) string {
	if ae, ok := errors.AsType[smithy.APIError](err); ok {
		return ae.ErrorCode()
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

// TestSelfCopyChanges: a copy of an object onto itself is legal when it
// changes something S3 names in its refusal: metadata, tags, the storage
// class (even to the same STANDARD, as `aws s3 cp s3://b/k s3://b/k
// --storage-class STANDARD` does) or the checksum algorithm (S3's way to
// change it).
func TestSelfCopyChanges(t *testing.T) {
	hs := newHarnessAt(t, Config{}, time.Now)
	c := sdkClient(hs)
	ctx := t.Context()
	b := aws.String("selfcopy")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("k"), Body: bytes.NewReader([]byte("data"))}); err != nil {
		t.Fatal(err)
	}
	in := func() *s3.CopyObjectInput {
		return &s3.CopyObjectInput{Bucket: b, Key: aws.String("k"), CopySource: aws.String("selfcopy/k")}
	}
	if _, err := c.CopyObject(ctx, in()); apiCode(err) != "InvalidRequest" {
		t.Errorf("self-copy changing nothing: %v, want InvalidRequest", err)
	}
	sc := in()
	sc.StorageClass = types.StorageClassStandard
	if _, err := c.CopyObject(ctx, sc); err != nil {
		t.Errorf("self-copy with x-amz-storage-class STANDARD: %v", err)
	}
	ck := in()
	ck.ChecksumAlgorithm = types.ChecksumAlgorithmSha256
	out, err := c.CopyObject(ctx, ck)
	if err != nil {
		t.Fatalf("self-copy with a new checksum algorithm: %v", err)
	}
	if out.CopyObjectResult == nil || aws.ToString(out.CopyObjectResult.ChecksumSHA256) == "" {
		t.Errorf("self-copy with x-amz-checksum-algorithm SHA256 reports no SHA-256: %+v", out.CopyObjectResult)
	}
}

// TestCompleteAssertsChecksumWithoutAlgorithm: an upload created without
// a checksum algorithm has no part checksums to check a whole-object
// checksum against; a Complete that asserts one is refused, not passed
// unchecked.
func TestCompleteAssertsChecksumWithoutAlgorithm(t *testing.T) {
	hs := newHarnessAt(t, Config{}, time.Now)
	c := sdkClient(hs)
	ctx := t.Context()
	b := aws.String("nocksum")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
	cu, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: aws.String("n")})
	if err != nil {
		t.Fatal(err)
	}
	u1, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: b, Key: aws.String("n"), UploadId: cu.UploadId,
		PartNumber: aws.Int32(1), Body: bytes.NewReader([]byte("hello"))})
	if err != nil {
		t.Fatal(err)
	}
	parts := &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: u1.ETag}}}
	for _, in := range []*s3.CompleteMultipartUploadInput{
		{ChecksumCRC32: aws.String("AAAAAA=="), ChecksumType: types.ChecksumTypeFullObject}, // not CRC32("hello")
		{ChecksumCRC32: aws.String("NhCmhg==")},                                             // CRC32("hello"): unchecked all the same
		{ChecksumType: types.ChecksumTypeComposite},
	} {
		in.Bucket, in.Key, in.UploadId, in.MultipartUpload = b, aws.String("n"), cu.UploadId, parts
		if _, err := c.CompleteMultipartUpload(ctx, in); apiCode(err) != "InvalidRequest" {
			t.Errorf("Complete asserting %v / %q on an upload without a checksum: %v, want InvalidRequest",
				aws.ToString(in.ChecksumCRC32), in.ChecksumType, err)
		}
	}
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: b, Key: aws.String("n"),
		UploadId: cu.UploadId, MultipartUpload: parts}); err != nil {
		t.Errorf("Complete asserting nothing: %v", err)
	}
}

// TestEmptyLastPartByNumber: GET ?partNumber= of an empty last part is
// 200 with no body: no Content-Range can name zero bytes.
func TestEmptyLastPartByNumber(t *testing.T) {
	hs := newHarnessAt(t, Config{}, time.Now)
	c := sdkClient(hs)
	ctx := t.Context()
	b := aws.String("emptypart")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
	cu, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: aws.String("e")})
	if err != nil {
		t.Fatal(err)
	}
	var done []types.CompletedPart
	for i, body := range [][]byte{bytes.Repeat([]byte("a"), testMinPart), nil} {
		u, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: b, Key: aws.String("e"), UploadId: cu.UploadId,
			PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(body)})
		if err != nil {
			t.Fatal(err)
		}
		done = append(done, types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: u.ETag})
	}
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: b, Key: aws.String("e"), UploadId: cu.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: done}}); err != nil {
		t.Fatal(err)
	}
	rp := hs.do(call{method: "GET", path: "/emptypart/e?partNumber=2", at: time.Now()})
	if rp.status != http.StatusOK || rp.header.Get("Content-Range") != "" || len(rp.body) != 0 ||
		rp.header.Get("X-Amz-Mp-Parts-Count") != "2" {
		t.Errorf("GET ?partNumber=2 (empty): %d, Content-Range %q, %d bytes, parts count %q; want 200, none, 0, 2",
			rp.status, rp.header.Get("Content-Range"), len(rp.body), rp.header.Get("X-Amz-Mp-Parts-Count"))
	}
	rp = hs.do(call{method: "GET", path: "/emptypart/e?partNumber=1", at: time.Now()})
	if rp.status != http.StatusPartialContent || rp.header.Get("Content-Range") != "bytes 0-5119/5120" {
		t.Errorf("GET ?partNumber=1: %d, Content-Range %q", rp.status, rp.header.Get("Content-Range"))
	}
}
