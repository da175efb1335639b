package s3api

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/coffer-s3/coffer/internal/iam"
)

// sdkClient returns an aws-sdk-go-v2 client of hs's server, signing as
// root, path style, without retries, with the SDK's default checksum
// behaviour (a checksum on every upload, checksum mode on every GET).
func sdkClient(hs *harness) *s3.Client {
	return s3.New(s3.Options{
		Region:                     testRegion,
		BaseEndpoint:               aws.String(hs.srv.URL),
		UsePathStyle:               true,
		Credentials:                credentials.NewStaticCredentialsProvider(rootAccessKey, rootSecretKey, ""),
		HTTPClient:                 hs.srv.Client(),
		Retryer:                    aws.NopRetryer{},
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenSupported,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenSupported,
	})
}

// TestSDK drives the handler with aws-sdk-go-v2, the reference client, with
// its default checksum behaviour: every response body must decode and every
// request the SDK makes must be understood. (internal/e2e covers the whole
// server and the other clients.)
func TestSDK(t *testing.T) {
	t.Parallel()
	hs := newHarnessAt(t, Config{}, time.Now)
	c := sdkClient(hs)
	ctx := t.Context()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	bucket := aws.String("sdk-bucket")
	_, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: bucket})
	must("CreateBucket", err)
	_, err = c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: bucket})
	must("HeadBucket", err)
	loc, err := c.GetBucketLocation(ctx, &s3.GetBucketLocationInput{Bucket: bucket})
	must("GetBucketLocation", err)
	if loc.LocationConstraint != "" {
		t.Errorf("LocationConstraint %q, want empty for us-east-1", loc.LocationConstraint)
	}
	lb, err := c.ListBuckets(ctx, &s3.ListBucketsInput{})
	must("ListBuckets", err)
	if len(lb.Buckets) != 1 || aws.ToString(lb.Buckets[0].Name) != "sdk-bucket" || lb.Owner == nil || aws.ToString(lb.Owner.ID) != iam.RootCanonicalID() {
		t.Errorf("ListBuckets = %+v", lb)
	}

	body := bytes.Repeat([]byte("sdk "), 1000)
	put, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: aws.String("dir/a b.txt"), Body: bytes.NewReader(body),
		ContentType: aws.String("text/plain"), Metadata: map[string]string{"who": "sdk"}})
	must("PutObject", err)
	if put.ChecksumCRC32 == nil {
		t.Errorf("PutObject returned no CRC32 for the SDK's default checksum")
	}
	get, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: bucket, Key: aws.String("dir/a b.txt"), ChecksumMode: types.ChecksumModeEnabled})
	must("GetObject", err)
	got, err := io.ReadAll(get.Body)
	get.Body.Close()
	must("read GetObject body", err)
	if !bytes.Equal(got, body) || aws.ToString(get.ContentType) != "text/plain" || get.Metadata["who"] != "sdk" || aws.ToString(get.ETag) != aws.ToString(put.ETag) {
		t.Errorf("GetObject: %d bytes, %+v", len(got), get)
	}
	rng, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: bucket, Key: aws.String("dir/a b.txt"), Range: aws.String("bytes=4-7")})
	must("ranged GetObject", err)
	got, _ = io.ReadAll(rng.Body)
	rng.Body.Close()
	if string(got) != "sdk " || aws.ToString(rng.ContentRange) != "bytes 4-7/4000" {
		t.Errorf("ranged GetObject: %q, %q", got, aws.ToString(rng.ContentRange))
	}
	_, err = c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: bucket, Key: aws.String("copy"), CopySource: aws.String("sdk-bucket/dir/a%20b.txt")})
	must("CopyObject", err)
	_, err = c.GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: bucket, Key: aws.String("copy")})
	must("GetObjectAcl", err)

	// Multipart, with the SDK's per-part checksums.
	cmu, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: bucket, Key: aws.String("mp"), ChecksumAlgorithm: types.ChecksumAlgorithmCrc32})
	must("CreateMultipartUpload", err)
	var parts []types.CompletedPart
	for i, p := range [][]byte{bytes.Repeat([]byte{'1'}, testMinPart), []byte("2")} {
		up, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: bucket, Key: aws.String("mp"), UploadId: cmu.UploadId,
			PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(p), ChecksumAlgorithm: types.ChecksumAlgorithmCrc32})
		must("UploadPart", err)
		parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: up.ETag, ChecksumCRC32: up.ChecksumCRC32})
	}
	lp, err := c.ListParts(ctx, &s3.ListPartsInput{Bucket: bucket, Key: aws.String("mp"), UploadId: cmu.UploadId})
	must("ListParts", err)
	if len(lp.Parts) != 2 {
		t.Errorf("ListParts: %d parts", len(lp.Parts))
	}
	lu, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: bucket})
	must("ListMultipartUploads", err)
	if len(lu.Uploads) != 1 {
		t.Errorf("ListMultipartUploads: %d uploads", len(lu.Uploads))
	}
	_, err = c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: bucket, Key: aws.String("mp"), UploadId: cmu.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
	must("CompleteMultipartUpload", err)

	var keys []string
	pager := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: bucket, MaxKeys: aws.Int32(1)})
	for pager.HasMorePages() {
		page, err := pager.NextPage(ctx)
		must("ListObjectsV2", err)
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	if want := []string{"copy", "dir/a b.txt", "mp"}; !slices.Equal(keys, want) {
		t.Errorf("ListObjectsV2 keys %q, want %q", keys, want)
	}
	v1, err := c.ListObjects(ctx, &s3.ListObjectsInput{Bucket: bucket, Delimiter: aws.String("/"), EncodingType: types.EncodingTypeUrl})
	must("ListObjects", err)
	if len(v1.CommonPrefixes) != 1 || aws.ToString(v1.CommonPrefixes[0].Prefix) != "dir/" || len(v1.Contents) != 2 {
		t.Errorf("ListObjects: %+v", v1)
	}

	del, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: bucket, Delete: &types.Delete{Objects: []types.ObjectIdentifier{
		{Key: aws.String("copy")}, {Key: aws.String("dir/a b.txt")}, {Key: aws.String("mp")},
	}}})
	must("DeleteObjects", err)
	if len(del.Deleted) != 3 || len(del.Errors) != 0 {
		t.Errorf("DeleteObjects: %+v", del)
	}
	_, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: bucket, Key: aws.String("mp")})
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "NotFound" {
		t.Errorf("HeadObject of a deleted key: %v, want NotFound", err)
	}
	_, err = c.GetObjectRetention(ctx, &s3.GetObjectRetentionInput{Bucket: bucket, Key: aws.String("x")})
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "NotImplemented" {
		t.Errorf("GetObjectRetention: %v, want NotImplemented", err)
	}
	_, err = c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: bucket})
	must("DeleteBucket", err)
}

// TestSDKPartChecksums: a multipart upload with CRC32 checksums, as the
// SDK sends it, read back part by part with checksum mode: each part's
// checksum and the object's type, which the SDK validates the part's bytes
// against; a byte range gets none.
func TestSDKPartChecksums(t *testing.T) {
	t.Parallel()
	hs := newHarnessAt(t, Config{}, time.Now)
	c := sdkClient(hs)
	ctx := t.Context()
	bucket, key := aws.String("parts"), aws.String("mp")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: bucket}); err != nil {
		t.Fatal(err)
	}
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: bucket, Key: key,
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc32, ChecksumType: types.ChecksumTypeFullObject})
	if err != nil {
		t.Fatal(err)
	}
	parts := [][]byte{bytes.Repeat([]byte("a"), 5<<20), []byte("tail")}
	var done []types.CompletedPart
	for i, p := range parts {
		n := aws.Int32(int32(i + 1))
		out, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: bucket, Key: key, UploadId: up.UploadId, PartNumber: n,
			Body: bytes.NewReader(p), ChecksumAlgorithm: types.ChecksumAlgorithmCrc32})
		if err != nil {
			t.Fatal(err)
		}
		done = append(done, types.CompletedPart{PartNumber: n, ETag: out.ETag, ChecksumCRC32: out.ChecksumCRC32})
	}
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: bucket, Key: key, UploadId: up.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: done}}); err != nil {
		t.Fatal(err)
	}
	for i, p := range parts {
		get, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: bucket, Key: key, PartNumber: aws.Int32(int32(i + 1)), ChecksumMode: types.ChecksumModeEnabled})
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(get.Body) // the SDK checks the bytes against the checksum here
		get.Body.Close()
		if err != nil || !bytes.Equal(got, p) {
			t.Fatalf("part %d: %d bytes, %v", i+1, len(got), err)
		}
		if aws.ToString(get.ChecksumCRC32) != aws.ToString(done[i].ChecksumCRC32) || get.ChecksumType != types.ChecksumTypeFullObject {
			t.Errorf("part %d: checksum %q type %q, want %q FULL_OBJECT", i+1, aws.ToString(get.ChecksumCRC32), get.ChecksumType, aws.ToString(done[i].ChecksumCRC32))
		}
	}
	rng, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: bucket, Key: key, Range: aws.String("bytes=0-9"), ChecksumMode: types.ChecksumModeEnabled})
	if err != nil {
		t.Fatal(err)
	}
	rng.Body.Close()
	if rng.ChecksumCRC32 != nil {
		t.Errorf("a byte range came with checksum %q", aws.ToString(rng.ChecksumCRC32))
	}
}
