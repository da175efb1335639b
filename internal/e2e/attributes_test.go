package e2e

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// TestGetObjectAttributes reads the attributes of a multipart object with
// SHA-256 checksums, page by page, and of a version, with aws-sdk-go-v2.
func TestGetObjectAttributes(t *testing.T) {
	t.Parallel()
	testGetObjectAttributes(t, startServer(t))
}

// testGetObjectAttributes is TestGetObjectAttributes's body, which TestCluster runs against three nodes.
func testGetObjectAttributes(t *testing.T, ts s3Target) {
	c := ts.client(t)
	ctx := t.Context()
	b := mkBucket(t, c, "attrs")
	all := []types.ObjectAttributes{types.ObjectAttributesEtag, types.ObjectAttributesChecksum,
		types.ObjectAttributesObjectParts, types.ObjectAttributesStorageClass, types.ObjectAttributesObjectSize}

	u := createUpload(t, c, b, "mp", func(in *s3.CreateMultipartUploadInput) { in.ChecksumAlgorithm = types.ChecksumAlgorithmSha256 })
	bodies := [][]byte{randBytes(5 * mib), randBytes(5 * mib), randBytes(1234)}
	var parts []types.CompletedPart
	var sums []string
	for i, body := range bodies {
		s := sha256.Sum256(body)
		sums = append(sums, base64.StdEncoding.EncodeToString(s[:]))
		parts = append(parts, u.part(int32(i+1), body, func(in *s3.UploadPartInput) { in.ChecksumAlgorithm = types.ChecksumAlgorithmSha256 }))
	}
	done, err := u.complete(parts...)
	if err != nil {
		t.Fatalf("CompleteMultipartUpload: %v", err)
	}
	out, err := c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: aws.String(b), Key: aws.String("mp"), ObjectAttributes: all,
		MaxParts: aws.Int32(2)})
	if err != nil {
		t.Fatalf("GetObjectAttributes: %v", err)
	}
	if aws.ToString(out.ETag) != multipartETag(bodies...) || aws.ToInt64(out.ObjectSize) != int64(10*mib+1234) || out.StorageClass != types.StorageClassStandard {
		t.Errorf("attributes: ETag %q size %d class %q; want %q %d STANDARD", aws.ToString(out.ETag), aws.ToInt64(out.ObjectSize), out.StorageClass,
			multipartETag(bodies...), 10*mib+1234)
	}
	if out.Checksum == nil || aws.ToString(out.Checksum.ChecksumSHA256) != aws.ToString(done.ChecksumSHA256) {
		t.Errorf("attributes checksum %+v, want %q", out.Checksum, aws.ToString(done.ChecksumSHA256))
	}
	op := out.ObjectParts
	if op == nil || aws.ToInt32(op.TotalPartsCount) != 3 || !aws.ToBool(op.IsTruncated) || aws.ToString(op.NextPartNumberMarker) != "2" || len(op.Parts) != 2 {
		t.Fatalf("first page of parts: %+v", op)
	}
	for i, p := range op.Parts {
		if aws.ToInt32(p.PartNumber) != int32(i+1) || aws.ToInt64(p.Size) != int64(len(bodies[i])) || aws.ToString(p.ChecksumSHA256) != sums[i] {
			t.Errorf("part %d: number %d size %d sum %q; want %d %d %q", i, aws.ToInt32(p.PartNumber), aws.ToInt64(p.Size), aws.ToString(p.ChecksumSHA256),
				i+1, len(bodies[i]), sums[i])
		}
	}
	out, err = c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: aws.String(b), Key: aws.String("mp"), ObjectAttributes: all,
		PartNumberMarker: aws.String("2")})
	if err != nil || out.ObjectParts == nil || aws.ToBool(out.ObjectParts.IsTruncated) || len(out.ObjectParts.Parts) != 1 ||
		aws.ToInt32(out.ObjectParts.Parts[0].PartNumber) != 3 {
		t.Fatalf("second page of parts: %+v, %v", out.ObjectParts, err)
	}

	// A version, asked for by ID after it became noncurrent.
	setVersioning(t, c, b, types.BucketVersioningStatusEnabled)
	v1 := aws.ToString(put(t, c, b, "v", []byte("one")).VersionId)
	put(t, c, b, "v", []byte("second"))
	out, err = c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: aws.String(b), Key: aws.String("v"), VersionId: aws.String(v1), ObjectAttributes: all})
	if err != nil || aws.ToString(out.VersionId) != v1 || aws.ToInt64(out.ObjectSize) != 3 || out.ObjectParts != nil {
		t.Fatalf("attributes of version 1: version %q size %d parts %+v, %v", aws.ToString(out.VersionId), aws.ToInt64(out.ObjectSize), out.ObjectParts, err)
	}
	_, err = c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: aws.String(b), Key: aws.String("absent"), ObjectAttributes: all})
	wantErr(t, "GetObjectAttributes of a missing key", err, "NoSuchKey", http.StatusNotFound)
}
