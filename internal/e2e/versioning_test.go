package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// setVersioning sets bucket's versioning status with the SDK.
func setVersioning(t *testing.T, c *s3.Client, bucket string, status types.BucketVersioningStatus) {
	t.Helper()
	_, err := c.PutBucketVersioning(t.Context(), &s3.PutBucketVersioningInput{Bucket: aws.String(bucket),
		VersioningConfiguration: &types.VersioningConfiguration{Status: status}})
	if err != nil {
		t.Fatalf("PutBucketVersioning(%s, %s): %v", bucket, status, err)
	}
}

// listVersions returns every version and delete marker of bucket, page by
// page (pages of pageSize), as "key id latest [marker]" strings in listing
// order.
func listVersions(t *testing.T, c *s3.Client, bucket string, pageSize int32) []string {
	t.Helper()
	in := &s3.ListObjectVersionsInput{Bucket: aws.String(bucket), MaxKeys: aws.Int32(pageSize)}
	var out []string
	for range 1000 {
		page, err := c.ListObjectVersions(t.Context(), in)
		if err != nil {
			t.Fatalf("ListObjectVersions(%s): %v", bucket, err)
		}
		// The SDK splits versions and markers; the wire interleaves them
		// in listing order. Merge them back by (key, position).
		type entry struct {
			key, s string
		}
		var es []entry
		for _, v := range page.Versions {
			es = append(es, entry{aws.ToString(v.Key), fmt.Sprintf("%s %s %v", aws.ToString(v.Key), aws.ToString(v.VersionId), aws.ToBool(v.IsLatest))})
		}
		for _, m := range page.DeleteMarkers {
			es = append(es, entry{aws.ToString(m.Key), fmt.Sprintf("%s %s %v marker", aws.ToString(m.Key), aws.ToString(m.VersionId), aws.ToBool(m.IsLatest))})
		}
		slices.SortStableFunc(es, func(a, b entry) int { return strings.Compare(a.key, b.key) })
		for _, e := range es {
			out = append(out, e.s)
		}
		if !aws.ToBool(page.IsTruncated) {
			return out
		}
		in.KeyMarker, in.VersionIdMarker = page.NextKeyMarker, page.NextVersionIdMarker
	}
	t.Fatal("ListObjectVersions did not end")
	return nil
}

// responseHeader returns header k of the HTTP response behind an SDK error.
func responseHeader(err error, k string) string {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.Response != nil {
		return re.Response.Header.Get(k)
	}
	return ""
}

// getVersion reads version id of bucket/key whole.
func getVersion(t *testing.T, c *s3.Client, bucket, key, id string) []byte {
	t.Helper()
	out, err := c.GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), VersionId: aws.String(id)})
	if err != nil {
		t.Fatalf("GetObject(%s/%s, version %s): %v", bucket, key, id, err)
	}
	defer out.Body.Close()
	if aws.ToString(out.VersionId) != id {
		t.Errorf("GetObject(%s/%s, version %s): VersionId %q", bucket, key, id, aws.ToString(out.VersionId))
	}
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatalf("GetObject(%s/%s, version %s): read: %v", bucket, key, id, err)
	}
	return b
}

// TestVersioning drives versioning with aws-sdk-go-v2 through everything
// S3 defines for it: version IDs on writes, reads by version (inline and
// block objects), delete markers and their removal, suspension and the null
// version, copies from old versions, versioned multipart uploads,
// DeleteObjects with versions, conditional writes, and ListObjectVersions
// in pages.
func TestVersioning(t *testing.T) {
	t.Parallel()
	testVersioning(t, startServer(t))
}

// testVersioning is TestVersioning's body, which TestCluster runs against three nodes.
func testVersioning(t *testing.T, ts s3Target) {
	c := ts.client(t)
	ctx := t.Context()
	b := mkBucket(t, c, "ver")

	// Before versioning: the object is its null version, with no version ID
	// on the wire, and ListObjectVersions lists it as "null".
	put(t, c, b, "k", []byte("v0"))
	if got := listVersions(t, c, b, 1000); !slices.Equal(got, []string{"k null true"}) {
		t.Errorf("versions of an unversioned bucket = %q", got)
	}
	gv, err := c.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String(b)})
	if err != nil || gv.Status != "" {
		t.Fatalf("GetBucketVersioning before = %q, %v; want no status", gv.Status, err)
	}

	setVersioning(t, c, b, types.BucketVersioningStatusEnabled)
	gv, err = c.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String(b)})
	if err != nil || gv.Status != types.BucketVersioningStatusEnabled {
		t.Fatalf("GetBucketVersioning = %q, %v; want Enabled", gv.Status, err)
	}
	small, large := []byte("v1 inline"), randBytes(3*mib+5) // 1 MiB blocks: four of them
	v1 := aws.ToString(put(t, c, b, "k", small).VersionId)
	v2 := aws.ToString(put(t, c, b, "k", large).VersionId)
	if v1 == "" || v2 == "" || v1 == v2 || v1 == "null" {
		t.Fatalf("version IDs %q, %q: want two distinct IDs", v1, v2)
	}
	checkBody(t, "GET current", get(t, c, b, "k"), large)
	checkBody(t, "GET v1", getVersion(t, c, b, "k", v1), small)
	checkBody(t, "GET null", getVersion(t, c, b, "k", "null"), []byte("v0"))
	checkBody(t, "GET v2", getVersion(t, c, b, "k", v2), large)
	rng, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String("k"), VersionId: aws.String(v2), Range: aws.String("bytes=1048570-1048580")})
	if err != nil {
		t.Fatalf("ranged GET of v2: %v", err)
	}
	rb, _ := io.ReadAll(rng.Body)
	rng.Body.Close()
	checkBody(t, "ranged GET of v2", rb, large[1048570:1048581])
	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String("k")})
	if err != nil || aws.ToString(head.VersionId) != v2 {
		t.Errorf("HeadObject: VersionId %q, %v; want %s", aws.ToString(head.VersionId), err, v2)
	}
	if got, want := listVersions(t, c, b, 1000), []string{"k " + v2 + " true", "k " + v1 + " false", "k null false"}; !slices.Equal(got, want) {
		t.Errorf("versions = %q, want %q", got, want)
	}

	// A delete writes a marker: the key is gone from GET and ListObjects,
	// its versions stay.
	del, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String("k")})
	if err != nil || !aws.ToBool(del.DeleteMarker) || aws.ToString(del.VersionId) == "" {
		t.Fatalf("DeleteObject: marker %v, version %q, %v; want a delete marker", aws.ToBool(del.DeleteMarker), aws.ToString(del.VersionId), err)
	}
	marker := aws.ToString(del.VersionId)
	_, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String("k")})
	wantErr(t, "HeadObject under a delete marker", err, "NotFound", http.StatusNotFound)
	if responseHeader(err, "x-amz-delete-marker") != "true" || responseHeader(err, "x-amz-version-id") != marker {
		t.Errorf("HeadObject under a delete marker: x-amz-delete-marker %q, x-amz-version-id %q; want true, %s",
			responseHeader(err, "x-amz-delete-marker"), responseHeader(err, "x-amz-version-id"), marker)
	}
	_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String("k")})
	wantErr(t, "GetObject under a delete marker", err, "NoSuchKey", http.StatusNotFound)
	_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String("k"), VersionId: aws.String(marker)})
	wantErr(t, "GetObject of a delete marker", err, "MethodNotAllowed", http.StatusMethodNotAllowed)
	lo, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b)})
	if err != nil || len(lo.Contents) != 0 {
		t.Errorf("ListObjectsV2 under a delete marker: %d objects, %v; want none", len(lo.Contents), err)
	}
	checkBody(t, "GET v2 under a marker", getVersion(t, c, b, "k", v2), large)
	_, err = c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(b)})
	wantErr(t, "DeleteBucket with versions", err, "BucketNotEmpty", http.StatusConflict)

	// Deleting the marker restores v2.
	dm, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String("k"), VersionId: aws.String(marker)})
	if err != nil || !aws.ToBool(dm.DeleteMarker) || aws.ToString(dm.VersionId) != marker {
		t.Fatalf("DeleteObject(marker): %+v, %v", dm, err)
	}
	checkBody(t, "GET after removing the marker", get(t, c, b, "k"), large)
	// Deleting the current version by ID makes v1 current.
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String("k"), VersionId: aws.String(v2)}); err != nil {
		t.Fatal(err)
	}
	checkBody(t, "GET after removing v2", get(t, c, b, "k"), small)
	_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String("k"), VersionId: aws.String(v2)})
	wantErr(t, "GetObject of a removed version", err, "NoSuchVersion", http.StatusNotFound)

	// Copy an old version: the copy is a new version; the response names
	// the source version.
	cp, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(b), Key: aws.String("copy"),
		CopySource: aws.String(b + "/k?versionId=null")})
	if err != nil || aws.ToString(cp.CopySourceVersionId) != "null" || aws.ToString(cp.VersionId) == "" {
		t.Fatalf("CopyObject from the null version: source %q, version %q, %v", aws.ToString(cp.CopySourceVersionId), aws.ToString(cp.VersionId), err)
	}
	checkBody(t, "GET copy", get(t, c, b, "copy"), []byte("v0"))
	// Copying an old version over its own key restores it as the latest.
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(b), Key: aws.String("k"),
		CopySource: aws.String(b + "/k?versionId=null")}); err != nil {
		t.Fatalf("CopyObject of an old version onto its key: %v", err)
	}
	checkBody(t, "GET after restoring null by copy", get(t, c, b, "k"), []byte("v0"))

	// Multipart: Complete returns the new version; UploadPartCopy reads
	// an old version.
	u := createUpload(t, c, b, "mp")
	p1 := u.part(1, randBytes(5*mib))
	pc, err := c.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: aws.String(b), Key: aws.String("mp"), UploadId: aws.String(u.id),
		PartNumber: aws.Int32(2), CopySource: aws.String(b + "/k?versionId=" + v1)})
	if err != nil || aws.ToString(pc.CopySourceVersionId) != v1 {
		t.Fatalf("UploadPartCopy from v1: source %q, %v", aws.ToString(pc.CopySourceVersionId), err)
	}
	done, err := u.complete(p1, types.CompletedPart{PartNumber: aws.Int32(2), ETag: pc.CopyPartResult.ETag})
	if err != nil || aws.ToString(done.VersionId) == "" {
		t.Fatalf("CompleteMultipartUpload: version %q, %v", aws.ToString(done.VersionId), err)
	}
	mp1 := aws.ToString(done.VersionId)
	u = createUpload(t, c, b, "mp")
	if done, err = u.complete(u.part(1, []byte("second"))); err != nil || aws.ToString(done.VersionId) == mp1 {
		t.Fatalf("second CompleteMultipartUpload: version %q, %v", aws.ToString(done.VersionId), err)
	}
	if got := getVersion(t, c, b, "mp", mp1); len(got) != 5*mib+len(small) || !bytes.Equal(got[5*mib:], small) {
		t.Errorf("first multipart version: %d bytes, want %d ending in v1", len(got), 5*mib+len(small))
	}

	// Conditional writes see the current version; under a delete marker
	// the key does not exist.
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String("copy")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("copy"), Body: strings.NewReader("new"), IfNoneMatch: aws.String("*")}); err != nil {
		t.Errorf("PutObject If-None-Match: * under a delete marker: %v", err)
	}
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("copy"), Body: strings.NewReader("x"), IfNoneMatch: aws.String("*")})
	wantErr(t, "PutObject If-None-Match: * over a version", err, "PreconditionFailed", http.StatusPreconditionFailed)

	// DeleteObjects: a version, a marker, and a new marker in one request.
	// Pages of two resume where they ended: nothing lost, nothing twice
	// (compared as sets: the SDK separates versions from delete markers,
	// so the order across a page boundary is not visible here).
	vs := listVersions(t, c, b, 2)
	if all := listVersions(t, c, b, 1000); !slices.Equal(slices.Sorted(slices.Values(vs)), slices.Sorted(slices.Values(all))) {
		t.Errorf("versions in pages of 2 = %q, want %q", vs, all)
	}
	var copyMarker string
	for _, v := range vs {
		if f := strings.Fields(v); f[0] == "copy" && len(f) == 4 {
			copyMarker = f[1]
		}
	}
	dout, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(b), Delete: &types.Delete{Objects: []types.ObjectIdentifier{
		{Key: aws.String("k"), VersionId: aws.String(v1)},
		{Key: aws.String("copy"), VersionId: aws.String(copyMarker)},
		{Key: aws.String("mp")},
	}}})
	if err != nil || len(dout.Errors) != 0 || len(dout.Deleted) != 3 {
		t.Fatalf("DeleteObjects: %+v, %v", dout, err)
	}
	if d := dout.Deleted[1]; !aws.ToBool(d.DeleteMarker) || aws.ToString(d.DeleteMarkerVersionId) != copyMarker {
		t.Errorf("DeleteObjects of a marker: %+v", d)
	}
	if d := dout.Deleted[2]; !aws.ToBool(d.DeleteMarker) || aws.ToString(d.DeleteMarkerVersionId) == "" {
		t.Errorf("DeleteObjects without a version: %+v, want a new marker", d)
	}

	// Suspended: writes replace the null version, versions with IDs stay.
	setVersioning(t, c, b, types.BucketVersioningStatusSuspended)
	if out := put(t, c, b, "k", []byte("s1")); out.VersionId != nil {
		t.Errorf("PutObject while suspended: VersionId %q, want none (S3 names no null version on writes)", aws.ToString(out.VersionId))
	}
	put(t, c, b, "k", []byte("s2"))
	var nulls int
	for _, v := range listVersions(t, c, b, 1000) {
		if strings.HasPrefix(v, "k null ") {
			nulls++
		}
	}
	if nulls != 1 {
		t.Errorf("%d null versions of k after two suspended writes, want 1", nulls)
	}
	checkBody(t, "GET null while suspended", getVersion(t, c, b, "k", "null"), []byte("s2"))

	// Empty the bucket by versions, as tools do before deleting it.
	for _, v := range listVersions(t, c, b, 1000) {
		f := strings.Fields(v)
		if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String(f[0]), VersionId: aws.String(f[1])}); err != nil {
			t.Fatalf("DeleteObject(%s, %s): %v", f[0], f[1], err)
		}
	}
	if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(b)}); err != nil {
		t.Errorf("DeleteBucket after deleting every version: %v", err)
	}
}

// TestEmptyVersionedBucketPageByPage empties a versioned bucket the
// way boto3's bucket.object_versions.delete() does: list a page of
// versions, delete that page by version ID, ask for the next page with the
// returned markers. Afterwards the bucket must be empty.
func TestEmptyVersionedBucketPageByPage(t *testing.T) {
	ts := startServer(t)
	c := ts.client(t)
	bucket := mkBucket(t, c, "empty-pages")
	setVersioning(t, c, bucket, types.BucketVersioningStatusEnabled)
	for _, k := range []string{"a", "b", "c"} {
		for i := range 3 {
			put(t, c, bucket, k, []byte(fmt.Sprint(k, i)))
		}
	}
	in := &s3.ListObjectVersionsInput{Bucket: aws.String(bucket), MaxKeys: aws.Int32(2)}
	listed := 0
	for range 100 {
		page, err := c.ListObjectVersions(t.Context(), in)
		if err != nil {
			t.Fatal(err)
		}
		var ids []types.ObjectIdentifier
		for _, v := range page.Versions {
			ids = append(ids, types.ObjectIdentifier{Key: v.Key, VersionId: v.VersionId})
		}
		for _, m := range page.DeleteMarkers {
			ids = append(ids, types.ObjectIdentifier{Key: m.Key, VersionId: m.VersionId})
		}
		listed += len(ids)
		if len(ids) > 0 {
			if _, err := c.DeleteObjects(t.Context(), &s3.DeleteObjectsInput{Bucket: aws.String(bucket),
				Delete: &types.Delete{Objects: ids}}); err != nil {
				t.Fatal(err)
			}
		}
		if !aws.ToBool(page.IsTruncated) {
			break
		}
		in.KeyMarker, in.VersionIdMarker = page.NextKeyMarker, page.NextVersionIdMarker
	}
	if listed != 9 {
		t.Errorf("listed %d versions, want 9", listed)
	}
	if _, err := c.DeleteBucket(t.Context(), &s3.DeleteBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Errorf("DeleteBucket after deleting every listed version: %v; left: %q", err, listVersions(t, c, bucket, 1000))
	}
}
