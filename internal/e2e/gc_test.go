package e2e

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

func TestBinaryVersion(t *testing.T) {
	out, err := runCoffer(t, "version")
	if err != nil || strings.TrimSpace(out) == "" {
		t.Errorf("coffer version: %v, output %q", err, out)
	}
}

// TestGarbageCollection leaves every kind of garbage behind — overwritten
// and deleted objects, parts left out of a Complete, a part uploaded twice,
// an aborted upload — and checks that `coffer admin gc` on the stopped
// server removes exactly that and keeps every live block, including those
// of an upload still in progress.
func TestGarbageCollection(t *testing.T) {
	dir := t.TempDir()
	srv := startChild(t, dir, crashArgs...)
	c := newClient(t, srv.endpoint)
	const b = "gc-bucket"
	if _, err := c.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
		t.Fatalf("CreateBucket: %v", err)
	}
	live := map[string][]byte{}
	putLive := func(key string, body []byte) {
		put(t, c, b, key, body)
		live[key] = body
	}
	putLive("big", randBytes(mib))
	putLive("big", randBytes(600*kib)) // 4 blocks become garbage
	put(t, c, b, "del", randBytes(512*kib))
	if _, err := c.DeleteObject(t.Context(), &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String("del")}); err != nil {
		t.Fatal(err)
	}
	putLive("shrink", randBytes(mib))
	putLive("shrink", randBytes(kib)) // now inline
	putLive("small", randBytes(10*kib))
	putLive("exact-inline", randBytes(crashInline))
	putLive("one-over", randBytes(crashInline+1))

	u := createUpload(t, c, b, "mp")
	p1, p3 := randBytes(5*mib), randBytes(100*kib)
	cp1 := u.part(1, p1)
	u.part(2, randBytes(5*mib))
	u.part(2, randBytes(5*mib)) // the first part 2 is garbage; the second too after Complete
	cp3 := u.part(3, p3)
	if _, err := u.complete(cp1, cp3); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	live["mp"] = append(append([]byte(nil), p1...), p3...)

	a := createUpload(t, c, b, "aborted")
	a.part(1, randBytes(300*kib))
	if err := a.abort(); err != nil {
		t.Fatal(err)
	}
	pending := createUpload(t, c, b, "pending")
	pendingPart := randBytes(300 * kib)
	pcp := pending.part(1, pendingPart)

	want := expectedBlocks(t, c, b, crashBlockSize, crashInline, true)
	if want != 3+21+1+2 {
		t.Errorf("expected blocks computed as %d, want 27 from the sizes written (check HeadObject partNumber / ListParts)", want)
	}

	// The commits that dropped blocks queued them; the server frees them
	// within seconds, not after the GC's hour of grace (blocks of the
	// pending upload and the live objects stay).
	start := time.Now()
	for blockFiles(t, dir) != int(want) {
		if time.Since(start) > 15*time.Second {
			t.Fatalf("%d block files 15 s after the deletes, want the %d live blocks", blockFiles(t, dir), want)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("garbage blocks freed %v after the last delete", time.Since(start).Round(time.Millisecond))

	out, err := runCoffer(t, "admin", "gc", "--offline", "--storage-path", dir, "--grace", "0s")
	if err == nil {
		t.Errorf("coffer admin gc on the storage of a running server succeeded; want a refusal\n%s", out)
	}
	srv.stop()
	before := blockFiles(t, dir)
	if before < int(want) {
		t.Errorf("%d block files before GC, fewer than the %d live blocks", before, want)
	}
	out, err = runCofferStdout(t, "admin", "gc", "--offline", "--storage-path", dir, "--grace", "0s", "--json")
	if err != nil {
		t.Fatalf("coffer admin gc --json: %v\n%s", err, out)
	}
	var res struct {
		Scanned int `json:"scanned"`
		Deleted int `json:"deleted"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Errorf("coffer admin gc --json output is not JSON: %v\n%s", err, out)
	}
	after := blockFiles(t, dir)
	if int64(after) != want {
		t.Errorf("%d block files after GC, want %d live blocks (before GC: %d); gc said %s", after, want, before, out)
	}
	if res.Deleted != before-after || res.Scanned < after {
		t.Errorf("gc --json reports scanned %d deleted %d; the block files went from %d to %d", res.Scanned, res.Deleted, before, after)
	}

	// A second pass finds nothing.
	out, err = runCofferStdout(t, "admin", "gc", "--offline", "--storage-path", dir, "--grace", "0s", "--json")
	if err != nil || json.Unmarshal([]byte(out), &res) != nil || res.Deleted != 0 {
		t.Errorf("second gc: %v, %s; want nothing deleted", err, out)
	}

	srv = startChild(t, dir, crashArgs...)
	c = newClient(t, srv.endpoint)
	for k, body := range live {
		checkBody(t, "after GC "+k, get(t, c, b, k), body)
	}
	pending.c = c
	if _, err := pending.complete(pcp); err != nil {
		t.Fatalf("Complete of the upload that was pending during GC: %v", err)
	}
	checkBody(t, "upload completed after GC", get(t, c, b, "pending"), pendingPart)
	lp, err := c.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String(b)})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range lp.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	if strings.Join(keys, ",") != "big,exact-inline,mp,one-over,pending,shrink,small" {
		t.Errorf("keys after GC %q", keys)
	}
	srv.stop()
}

// abortAll aborts every multipart upload in progress in bucket.
func abortAll(t *testing.T, c *s3.Client, bucket string) {
	t.Helper()
	for _, u := range listUploads(t, c, bucket) {
		if _, err := c.AbortMultipartUpload(t.Context(), &s3.AbortMultipartUploadInput{Bucket: aws.String(bucket), Key: u.Key, UploadId: u.UploadId}); err != nil {
			t.Errorf("AbortMultipartUpload %s: %v", aws.ToString(u.UploadId), err)
		}
	}
	if left := listUploads(t, c, bucket); len(left) != 0 {
		t.Errorf("%d uploads left after aborting all", len(left))
	}
}

func listUploads(t *testing.T, c *s3.Client, bucket string) []types.MultipartUpload {
	t.Helper()
	var all []types.MultipartUpload
	in := &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket)}
	for {
		out, err := c.ListMultipartUploads(t.Context(), in)
		if err != nil {
			t.Fatalf("ListMultipartUploads: %v", err)
		}
		all = append(all, out.Uploads...)
		if !aws.ToBool(out.IsTruncated) {
			return all
		}
		in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
}

// expectedBlocks returns how many block files the live data of bucket
// needs: an object larger than the inline threshold has ⌈size/bs⌉ blocks,
// a multipart object ⌈s/bs⌉ per part of size s, an inline object none.
// With uploads, the parts of uploads in progress count too.
// (Every stored version counts: noncurrent versions keep their blocks.)
func expectedBlocks(t *testing.T, c *s3.Client, bucket string, bs, inline int64, uploads bool) int64 {
	t.Helper()
	ctx := t.Context()
	var n int64
	for _, o := range allVersions(t, c, bucket) {
		etag := strings.Trim(aws.ToString(o.ETag), `"`)
		_, count, multipart := strings.Cut(etag, "-")
		if !multipart {
			if size := aws.ToInt64(o.Size); size > inline {
				n += ceilDiv(size, bs)
			}
			continue
		}
		parts, err := strconv.Atoi(count)
		if err != nil {
			t.Fatalf("%s: ETag %q", aws.ToString(o.Key), etag)
		}
		for i := 1; i <= parts; i++ {
			h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: o.Key, VersionId: o.VersionId, PartNumber: aws.Int32(int32(i))})
			if err != nil {
				t.Fatalf("HeadObject %s version %s partNumber=%d: %v", aws.ToString(o.Key), aws.ToString(o.VersionId), i, err)
			}
			if aws.ToInt32(h.PartsCount) != int32(parts) {
				t.Errorf("HeadObject %s partNumber=%d: parts count %d, ETag says %d", aws.ToString(o.Key), i, aws.ToInt32(h.PartsCount), parts)
			}
			n += ceilDiv(aws.ToInt64(h.ContentLength), bs)
		}
	}
	if uploads {
		for _, u := range listUploads(t, c, bucket) {
			pp := s3.NewListPartsPaginator(c, &s3.ListPartsInput{Bucket: aws.String(bucket), Key: u.Key, UploadId: u.UploadId})
			for pp.HasMorePages() {
				out, err := pp.NextPage(ctx)
				if err != nil {
					t.Fatalf("ListParts: %v", err)
				}
				for _, part := range out.Parts {
					n += ceilDiv(aws.ToInt64(part.Size), bs)
				}
			}
		}
	}
	return n
}
