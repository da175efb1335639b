package e2e

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/google/go-cmp/cmp"

	"github.com/coffer-s3/coffer/internal/adminapi"
)

// visibleUsage recounts bucket's usage from what S3 shows: the object
// versions ListObjectVersions returns (every stored version counts; in a
// bucket that was never versioned they are its objects), and the uploads
// in progress with their parts.
func visibleUsage(t *testing.T, c *s3.Client, bucket string) adminapi.Usage {
	t.Helper()
	ctx := t.Context()
	var u adminapi.Usage
	for _, v := range allVersions(t, c, bucket) {
		u.Objects++
		u.Bytes += aws.ToInt64(v.Size)
	}
	for _, up := range listUploads(t, c, bucket) {
		u.Uploads++
		pp := s3.NewListPartsPaginator(c, &s3.ListPartsInput{Bucket: aws.String(bucket), Key: up.Key, UploadId: up.UploadId})
		for pp.HasMorePages() {
			out, err := pp.NextPage(ctx)
			if err != nil {
				t.Fatalf("ListParts: %v", err)
			}
			for _, part := range out.Parts {
				u.PartBytes += aws.ToInt64(part.Size)
			}
		}
	}
	return u
}

// allVersions returns every object version of bucket (not the delete
// markers), page by page.
func allVersions(t *testing.T, c *s3.Client, bucket string) []types.ObjectVersion {
	t.Helper()
	var out []types.ObjectVersion
	in := &s3.ListObjectVersionsInput{Bucket: aws.String(bucket)}
	for {
		page, err := c.ListObjectVersions(t.Context(), in)
		if err != nil {
			t.Fatalf("ListObjectVersions(%s): %v", bucket, err)
		}
		out = append(out, page.Versions...)
		if !aws.ToBool(page.IsTruncated) {
			return out
		}
		in.KeyMarker, in.VersionIdMarker = page.NextKeyMarker, page.NextVersionIdMarker
	}
}

// bucketLs runs `coffer admin bucket ls --json` and returns the usage of
// each bucket listed.
func bucketLs(a adminCLI) map[string]adminapi.Usage {
	a.t.Helper()
	out := a.must("bucket", "ls", "--json")
	var l adminapi.BucketList
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		a.t.Fatalf("bucket ls --json printed %q: %v", out, err)
	}
	m := map[string]adminapi.Usage{}
	for _, b := range l.Buckets {
		if b.Created.IsZero() {
			a.t.Errorf("bucket %s has no creation time", b.Name)
		}
		m[b.Name] = b.Usage
	}
	return m
}

// TestUsage drives a server with the SDK through every kind of write and
// checks after each step that `coffer admin bucket ls --json` reports
// exactly what S3 shows: objects and bytes from ListObjectsV2, uploads and
// part bytes from ListMultipartUploads and ListParts.
func TestUsage(t *testing.T) {
	t.Parallel()
	testUsage(t, startServer(t))
}

func testUsage(t *testing.T, ts s3Target) {
	c := ts.client(t)
	ctx := t.Context()
	root := adminCLI{t: t, bin: cofferBinary(t), endpoint: ts.url(t), ak: testAccessKey, sk: testSecretKey}
	a, b := mkBucket(t, c, "usage-a"), mkBucket(t, c, "usage-b")

	step := func(what string) {
		t.Helper()
		got := bucketLs(root)
		want := map[string]adminapi.Usage{a: visibleUsage(t, c, a), b: visibleUsage(t, c, b)}
		for name := range got {
			if name != a && name != b {
				delete(got, name) // buckets of tests running alongside
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("%s: bucket ls --json differs from what S3 shows (-S3 +usage):\n%s", what, diff)
		}
	}
	step("empty buckets")

	put(t, c, a, "small", randBytes(100))
	put(t, c, a, "inline-max", randBytes(128*kib))
	put(t, c, a, "blocks", randBytes(2*mib+5))
	put(t, c, b, "x", randBytes(7))
	step("puts")
	if got := bucketLs(root)[a]; got != (adminapi.Usage{Objects: 3, Bytes: 100 + 128*kib + 2*mib + 5}) {
		t.Errorf("usage of %s after puts = %+v", a, got)
	}

	put(t, c, a, "small", randBytes(3*mib)) // inline → blocks
	put(t, c, a, "blocks", randBytes(10))   // blocks → inline
	put(t, c, a, "inline-max", []byte{})    // → empty
	_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(a), Key: aws.String("small"),
		Body: bytes.NewReader(randBytes(1)), IfNoneMatch: aws.String("*")})
	wantErr(t, "conditional PUT over an object", err, "PreconditionFailed", 412)
	step("overwrites and a failed conditional PUT")

	// A multipart upload: parts, a part uploaded again, completion.
	mp, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(a), Key: aws.String("mp")})
	if err != nil {
		t.Fatal(err)
	}
	var parts []types.CompletedPart
	for i, size := range []int{5 * mib, 5*mib + 1, 5 * mib, 300} {
		n := int32(min(i, 2) + 1) // the fourth upload replaces part 3
		out, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(a), Key: aws.String("mp"), UploadId: mp.UploadId,
			PartNumber: aws.Int32(n), Body: bytes.NewReader(randBytes(size))})
		if err != nil {
			t.Fatal(err)
		}
		if i < 2 || i == 3 {
			parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(n), ETag: out.ETag})
		}
		step("part uploaded")
	}
	// A second upload stays in progress, another is aborted.
	for _, key := range []string{"pending", "aborted"} {
		up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(b), Key: aws.String(key)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(b), Key: aws.String(key), UploadId: up.UploadId,
			PartNumber: aws.Int32(1), Body: bytes.NewReader(randBytes(1000))}); err != nil {
			t.Fatal(err)
		}
		if key == "aborted" {
			step("two uploads in progress")
			if _, err := c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(b), Key: aws.String(key), UploadId: up.UploadId}); err != nil {
				t.Fatal(err)
			}
		}
	}
	step("one upload aborted")
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(a), Key: aws.String("mp"),
		UploadId: mp.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}); err != nil {
		t.Fatal(err)
	}
	step("multipart upload completed")

	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(b), Key: aws.String("copy"), CopySource: aws.String(a + "/mp")}); err != nil {
		t.Fatal(err)
	}
	step("copy")
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(a), Key: aws.String("small")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(a), Delete: &types.Delete{Objects: []types.ObjectIdentifier{
		{Key: aws.String("blocks")}, {Key: aws.String("inline-max")}, {Key: aws.String("absent")},
	}}}); err != nil {
		t.Fatal(err)
	}
	step("deletes")
	if got := bucketLs(root)[a]; got.Objects != 1 || got.Bytes != 10*mib+1+300 {
		t.Errorf("usage of %s = %+v, want the multipart object alone", a, got)
	}

	// A user sees the buckets its policy lets it list, with their usage.
	user := newBucketName("alice") // unique: a cluster's tests share its users
	alice := root.key("user", "add", user)
	doc := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::` + b + `"}]}`
	root.must("policy", "add", "list-b", writeJSONFile(t, "list-b.json", doc))
	root.must("policy", "attach", "list-b", "--user", user)
	settle(ts) // the key and the policy, on every node
	ac := root.as(alice.AccessKey, alice.SecretKey)
	// Of this test's buckets, b alone: on a cluster, a bucket of another
	// test that a policy opens to everyone a while (mc's "anonymous set
	// download" allows s3:ListBucket to Principal "*") is alice's to see
	// too.
	seen := bucketLs(ac)
	for name := range seen {
		if name != a && name != b {
			delete(seen, name)
		}
	}
	if diff := cmp.Diff(map[string]adminapi.Usage{b: visibleUsage(t, c, b)}, seen); diff != "" {
		t.Errorf("alice's bucket ls (-want +got):\n%s", diff)
	}
	if _, errOut, err := ac.run("bucket", "info", a); err == nil || !strings.Contains(errOut, "AccessDenied") {
		t.Errorf("alice's bucket info %s: %v, %s; want AccessDenied", a, err, errOut)
	}
	if out := root.must("bucket", "info", b); !regexp.MustCompile(`(?m)^Uploads in progress: +1$`).MatchString(out) {
		t.Errorf("bucket info %s:\n%s", b, out)
	}
	if out := root.must("usage", "check"); !strings.Contains(out, "usage matches the records") {
		t.Errorf("usage check: %s", out)
	}

	// Deleting a bucket drops its usage (aborting its upload); a bucket of
	// the same name starts from nothing.
	for _, k := range []string{"x", "copy"} {
		if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String(k)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(b)}); err != nil {
		t.Fatal(err)
	}
	if _, ok := bucketLs(root)[b]; ok {
		t.Errorf("deleted bucket %s still listed", b)
	}
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
		t.Fatal(err)
	}
	step("bucket deleted and created again")
	if got := bucketLs(root)[b]; got != (adminapi.Usage{}) {
		t.Errorf("usage of a re-created bucket = %+v", got)
	}
}
