package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestDiskFull fills a 160 MiB filesystem (reserve: 64 MiB, the floor the
// metadata engine needs) through S3 with block objects,
// inline objects and multipart parts: writes past the free-space reserve
// are refused with 507 StorageFull while every acknowledged object reads
// back intact and deletes still work; space comes back within seconds of
// deleting, writes succeed again, and after kill -9 on the nearly full disk
// every acknowledged object is still there.
func TestDiskFull(t *testing.T) {
	t.Parallel()
	const fsSize = 160 << 20
	dir := mountTmpfs(t, "160m")
	data := dir + "/data"
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	srv := startChild(t, data, crashArgs...) // 256 KiB blocks, 32 KiB inline, no periodic GC
	c := newClient(t, srv.endpoint)
	ctx := t.Context()
	const b = "full"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
		t.Fatal(err)
	}

	acked := map[string][]byte{}
	var refused error
	for i := 0; i < 400 && refused == nil; i++ {
		key, body := fmt.Sprintf("big/%03d", i), randBytes(mib)
		if i%4 == 3 {
			key, body = fmt.Sprintf("small/%03d", i), randBytes(20*kib)
		}
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(key), Body: bytes.NewReader(body)})
		if err != nil {
			refused = err
			break
		}
		acked[key] = body
	}
	if refused == nil {
		t.Fatalf("400 PUTs of about 1 MiB on a %d MiB filesystem all succeeded", fsSize>>20)
	}
	if errCode(refused) != "StorageFull" || errStatus(refused) != http.StatusInsufficientStorage {
		t.Fatalf("PUT on a full disk: %v (status %d), want 507 StorageFull", refused, errStatus(refused))
	}
	t.Logf("%d objects acknowledged before the reserve was reached", len(acked))
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	if free := int64(st.Bavail) * st.Bsize; free <= 0 {
		t.Errorf("the filesystem has no free space left: the reserve did not hold")
	}
	// Small (inline) objects fill what a 1 MiB one did not fit in, then
	// are refused too (at most 1 MiB of them); so are parts. Reads go on.
	var err error
	for i := 0; i <= 110; i++ {
		key, body := fmt.Sprintf("tiny/%03d", i), randBytes(10*kib)
		_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(key), Body: bytes.NewReader(body)})
		if err != nil {
			break
		}
		acked[key] = body
	}
	if errCode(err) != "StorageFull" {
		t.Errorf("small PUTs on a full disk: %v, want StorageFull within 1.1 MiB of them", err)
	}
	u := createUpload(t, c, b, "mp")
	if _, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(b), Key: aws.String("mp"), UploadId: aws.String(u.id),
		PartNumber: aws.Int32(1), Body: bytes.NewReader(randBytes(mib))}); errCode(err) != "StorageFull" {
		t.Errorf("UploadPart on a full disk: %v, want StorageFull", err)
	}
	for k, body := range acked {
		checkBody(t, "on a full disk: "+k, get(t, c, b, k), body)
	}
	// Readiness says so, and stays ready: reads and deletes work.
	resp, err := http.Get(srv.endpoint + "/_coffer/health/ready")
	if err != nil {
		t.Fatal(err)
	}
	ready, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(ready), `"disk":"full: writes refused"`) {
		t.Errorf("readiness on a full disk: %d %s", resp.StatusCode, ready)
	}

	// Deleting gives the space back within seconds. 30 MiB: the metadata
	// engine may have used part of the reserve meanwhile (a memtable
	// flush is up to 16 MiB), which is what the reserve is for.
	n := 0
	for k := range acked {
		if strings.HasPrefix(k, "big/") && n < 30 {
			if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String(k)}); err != nil {
				t.Fatalf("DeleteObject on a full disk: %v", err)
			}
			delete(acked, k)
			n++
		}
	}
	start := time.Now()
	again := randBytes(2 * mib)
	for {
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("again"), Body: bytes.NewReader(again)})
		if err == nil {
			break
		}
		if errCode(err) != "StorageFull" || time.Since(start) > 15*time.Second {
			t.Fatalf("PUT %v after deleting 30 MiB: %v", time.Since(start), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("writes accepted again %v after deleting 30 MiB", time.Since(start).Round(time.Millisecond))
	acked["again"] = again

	// Fill up again, kill -9, and find every acknowledged object.
	for i := 0; i < 200; i++ {
		key, body := fmt.Sprintf("refill/%03d", i), randBytes(mib)
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
			break
		}
		acked[key] = body
	}
	srv.kill()
	srv = startChild(t, data, crashArgs...)
	c = newClient(t, srv.endpoint)
	for k, body := range acked {
		checkBody(t, "after kill -9 on a full disk: "+k, get(t, c, b, k), body)
	}
	srv.stop()
}
