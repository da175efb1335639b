package e2e

import (
	"bytes"
	"errors"
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
	// Readiness says so, and stays ready: reads and deletes work. The
	// metadata engine may give room back meanwhile (a memtable flushed
	// into a smaller table and its log deleted, a compaction) and the
	// audit log take some, so readiness is asked right after a refused
	// write, with writes of 10 KiB until one is refused: then it must say
	// the disk is full, unless 10 KiB came back in between (readiness
	// measures again, and a refusal holds only until what it refused
	// would fit), which on a machine this busy can happen a few times in
	// a row; never being told "full" is the failure.
	var okAfterRefusal []string
	for try := 0; ; try++ {
		key, body := fmt.Sprintf("probe/%03d", try), randBytes(10*kib)
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(key), Body: bytes.NewReader(body)})
		if err == nil {
			acked[key] = body
			if try == 500 {
				t.Fatalf("500 more PUTs of 10 KiB on a full disk all succeeded")
			}
			continue
		}
		if errCode(err) != "StorageFull" {
			t.Fatalf("PUT on a full disk: %v", err)
		}
		resp, err := http.Get(srv.endpoint + "/_coffer/health/ready")
		if err != nil {
			t.Fatal(err)
		}
		ready, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("readiness on a full disk: %d %s", resp.StatusCode, ready)
		}
		if strings.Contains(string(ready), `"disk":"full: writes refused"`) {
			break
		}
		if okAfterRefusal = append(okAfterRefusal, string(ready)); len(okAfterRefusal) == 10 {
			t.Fatalf("readiness right after each of 10 refused writes: %q", okAfterRefusal)
		}
	}
	if len(okAfterRefusal) > 0 {
		t.Logf("room came back between a refused write and readiness %d times", len(okAfterRefusal))
	}
	for k, body := range acked {
		checkBody(t, "on a full disk: "+k, get(t, c, b, k), body)
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

// slowBody sends left bytes, chunk bytes every interval: an upload on a
// slow link.
type slowBody struct {
	left     int64
	chunk    int64
	interval time.Duration
	inChunk  int64 // bytes of the current chunk not sent yet
}

func (b *slowBody) Read(p []byte) (int, error) {
	if b.left == 0 {
		return 0, io.EOF
	}
	if b.inChunk == 0 {
		time.Sleep(b.interval)
		b.inChunk = b.chunk
	}
	n := int(min(int64(len(p)), b.inChunk, b.left))
	clear(p[:n])
	b.inChunk -= int64(n)
	b.left -= int64(n)
	return n, nil
}

// TestDiskFullInFlight fills a 200 MiB filesystem with uploads that take
// seconds each and overlap, started further apart than the reserve's
// measurements: each write holds its room until it is done, so the ones
// that do not fit are refused at once with 507 StorageFull and the disk
// never fills. (A measurement once forgot the writes admitted before it:
// all four were admitted, and the disk filled under them and under the
// metadata engine.) A form upload, whose size is not known ahead, is
// refused with StorageFull once it runs past the room (it was admitted
// as 0 bytes and wrote until the disk was full: 500).
func TestDiskFullInFlight(t *testing.T) {
	t.Parallel()
	dir := mountTmpfs(t, "200m")
	data := dir + "/data"
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	srv := startChild(t, data, crashArgs...)
	c := newClient(t, srv.endpoint)
	ctx := t.Context()
	const b = "inflight"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
		t.Fatal(err)
	}
	presign := s3.NewPresignClient(c)
	const size = 50 * mib
	hc := &http.Client{Transport: &http.Transport{ExpectContinueTimeout: 10 * time.Second}}
	statuses := make(chan int, 4)
	var unknown [4]bool // the connection closed before the answer was read
	for i := range 4 {
		req, err := presign.PresignPutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(fmt.Sprintf("slow/%d", i))})
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			hr, err := http.NewRequestWithContext(ctx, http.MethodPut, req.URL, &slowBody{left: size, chunk: mib, interval: 40 * time.Millisecond})
			if err != nil {
				t.Error(err)
				statuses <- 0
				return
			}
			hr.ContentLength = size
			hr.Header.Set("Expect", "100-continue") // a refusal comes before the body
			resp, err := hc.Do(hr)
			if err != nil && (errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)) {
				// A refused upload's body is drained for at most 2 s
				// (the server's bound for clients that send it without
				// waiting for 100 Continue), then the connection closes:
				// a body slower than that (a loaded machine) meets the
				// close before the client reads the 507. Nothing may be
				// stored for it: checked below.
				t.Logf("upload %d: connection closed while sending: %v", i, err)
				unknown[i] = true
				statuses <- -1
				return
			}
			if err != nil {
				t.Errorf("upload %d: %v", i, err)
				statuses <- 0
				return
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK && (resp.StatusCode != http.StatusInsufficientStorage || !bytes.Contains(body, []byte("<Code>StorageFull</Code>"))) {
				t.Errorf("upload %d: %d\n%s", i, resp.StatusCode, body)
			}
			statuses <- resp.StatusCode
		}()
		time.Sleep(500 * time.Millisecond) // two of the reserve's measurements
	}
	ok, full := 0, 0
	for range 4 {
		switch <-statuses {
		case http.StatusOK:
			ok++
		case http.StatusInsufficientStorage, -1:
			full++
		}
	}
	for i, u := range unknown {
		if !u {
			continue
		}
		_, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String(fmt.Sprintf("slow/%d", i))})
		if errCode(err) != "NotFound" {
			t.Errorf("upload %d, cut off while sending: HeadObject = %v, want NotFound (nothing stored)", i, err)
		}
	}
	if ok < 1 || full < 1 {
		t.Errorf("4 uploads of 50 MiB on a 200 MiB filesystem: %d stored, %d refused; want both", ok, full)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	if free := int64(st.Bavail) * st.Bsize; free < 32*mib {
		t.Errorf("%d MiB free after the uploads: the reserve did not hold", free>>20)
	}

	t.Logf("4 uploads of 50 MiB: %d stored, %d refused", ok, full)
	// Everything stored reads back, and goes.
	for i := range 4 {
		k := fmt.Sprintf("slow/%d", i)
		out, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String(k)})
		if err == nil && aws.ToInt64(out.ContentLength) != size {
			t.Errorf("%s: %d bytes", k, aws.ToInt64(out.ContentLength))
		}
		if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String(k)}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2 * time.Second) // the blocks are freed within about a second

	// A form upload larger than the room (about 136 MiB).
	post, err := presign.PresignPostObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("form")},
		func(o *s3.PresignPostOptions) { o.Conditions = []any{[]any{"content-length-range", 1, 200 * mib}} })
	if err != nil {
		t.Fatal(err)
	}
	resp, body := postFields(t, http.DefaultClient, post.URL, post.Values, "big.bin", make([]byte, 160*mib))
	if resp.StatusCode != http.StatusInsufficientStorage || !bytes.Contains(body, []byte("<Code>StorageFull</Code>")) {
		t.Errorf("form upload past the room left: %d\n%s", resp.StatusCode, body)
	}
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	if free := int64(st.Bavail) * st.Bsize; free < 32*mib {
		t.Errorf("%d MiB free after the form upload: the reserve did not hold", free>>20)
	}
	// One that fits is stored.
	small := randBytes(20 * mib)
	if resp, body := postFields(t, http.DefaultClient, post.URL, post.Values, "small.bin", small); resp.StatusCode/100 != 2 {
		t.Errorf("form upload that fits: %d\n%s", resp.StatusCode, body)
	} else if got := get(t, c, b, "form"); !bytes.Equal(got, small) {
		t.Errorf("form upload that fits: %d bytes read back", len(got))
	}
}

// TestDiskFullSeparateMounts puts the metadata and the blocks each on a
// filesystem of their own under the storage path: the reserve watches
// both, so each fills up to its reserve and writes are then refused with
// 507 StorageFull. (It watched the storage path's filesystem alone: the
// blocks' filesystem filled and PUTs failed with 500, and the metadata's
// filled under the metadata engine, which stopped the server.)
func TestDiskFullSeparateMounts(t *testing.T) {
	t.Parallel()
	dir := mountTmpfs(t, "400m")
	data := dir + "/data"
	for sub, size := range map[string]string{"meta": "100m", "blobs": "100m"} {
		p := data + "/" + sub
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mount("tmpfs", p, "tmpfs", 0, "size="+size+",mode=0700"); err != nil {
			t.Skipf("cannot mount a tmpfs on %s (%v): this test needs root", p, err)
		}
		t.Cleanup(func() { _ = syscall.Unmount(p, syscall.MNT_DETACH) })
	}
	srv := startChild(t, data, crashArgs...) // 256 KiB blocks, 32 KiB inline
	c := newClient(t, srv.endpoint)
	ctx := t.Context()
	const b = "mounts"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
		t.Fatal(err)
	}
	free := func(sub string) int64 {
		var st syscall.Statfs_t
		if err := syscall.Statfs(data+"/"+sub, &st); err != nil {
			t.Fatal(err)
		}
		return int64(st.Bavail) * st.Bsize
	}
	fill := func(what string, size, most int) int {
		t.Helper()
		for i := range most {
			_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(fmt.Sprintf("%s/%05d", what, i)),
				Body: bytes.NewReader(randBytes(size))})
			if err == nil {
				continue
			}
			if errCode(err) != "StorageFull" || errStatus(err) != http.StatusInsufficientStorage {
				t.Fatalf("PUT %d of %s on a full filesystem: %v (status %d), want 507 StorageFull", i, what, err, errStatus(err))
			}
			t.Logf("%s: %d stored before StorageFull", what, i)
			return i
		}
		t.Fatalf("%d PUTs of %d bytes all stored on a 100 MiB filesystem", most, size)
		return 0
	}
	n := fill("blocks", mib, 100)
	if f := free("blobs"); f < 32*mib {
		t.Errorf("blocks' filesystem: %d MiB free, the reserve did not hold", f>>20)
	}
	// Deleting the blocks gives their filesystem back; then the metadata's
	// fills with inline objects.
	for i := range n {
		if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String(fmt.Sprintf("blocks/%05d", i))}); err != nil {
			t.Fatalf("DELETE with the blocks' filesystem at its reserve: %v", err)
		}
	}
	time.Sleep(2 * time.Second) // blocks are freed within about a second
	if m := fill("inline", 30*kib, 3000); m < 200 {
		t.Errorf("only %d inline objects stored on a metadata filesystem with %d MiB free", m, free("meta")>>20)
	}
	if f := free("meta"); f < 32*mib {
		t.Errorf("metadata's filesystem: %d MiB free, the reserve did not hold", f>>20)
	}
	// Still serving, and deletes work.
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String("inline/00001")}); err != nil {
		t.Errorf("DELETE with both filesystems at their reserve: %v", err)
	}
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String("inline/00000")}); err != nil {
		t.Errorf("HEAD with both filesystems at their reserve: %v", err)
	}
}
