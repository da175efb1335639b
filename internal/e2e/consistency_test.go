package e2e

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// gcArgs run background GC often and with the shortest grace period, so
// that it races with everything else. Read-only.
var gcArgs = []string{"--gc-interval", "100ms", "--gc-grace", "1ms"}

// TestReadDuringOverwrite opens a GET of a multi-block object, overwrites
// and deletes the object while the body is half read, lets background GC
// run, and then reads the rest: it must be the old object, whole.
func TestReadDuringOverwrite(t *testing.T) {
	t.Parallel()
	ts := startServer(t, gcArgs...)
	c := ts.client(t)
	ctx := t.Context()
	b := mkBucket(t, c, "reading")

	for _, mode := range []string{"overwrite", "delete", "range"} {
		t.Run(mode, func(t *testing.T) {
			old := randBytes(12*mib + 5)
			put(t, c, b, mode, old)
			in := &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String(mode)}
			want := old
			if mode == "range" {
				in.Range = aws.String("bytes=1000-9437184")
				want = old[1000 : 9437184+1]
			}
			out, err := c.GetObject(ctx, in)
			if err != nil {
				t.Fatalf("GetObject: %v", err)
			}
			defer out.Body.Close()
			head := make([]byte, 256*kib)
			if _, err := io.ReadFull(out.Body, head); err != nil {
				t.Fatalf("read the first 256 KiB: %v", err)
			}
			if mode == "delete" {
				if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String(mode)}); err != nil {
					t.Fatalf("DeleteObject: %v", err)
				}
			} else {
				put(t, c, b, mode, randBytes(3*mib))
			}
			time.Sleep(600 * time.Millisecond) // several GC passes
			rest, err := io.ReadAll(out.Body)
			if err != nil {
				t.Fatalf("reading on after the %s: %v (after %d bytes)", mode, err, len(head)+len(rest))
			}
			checkBody(t, "body read across a "+mode+" and GC", append(head, rest...), want)
		})
	}
}

// TestUploadSurvivesGC keeps a multipart upload open across many
// background GC passes: its parts are live until Complete or Abort.
func TestUploadSurvivesGC(t *testing.T) {
	t.Parallel()
	ts := startServer(t, gcArgs...)
	c := ts.client(t)
	b := mkBucket(t, c, "upload-gc")
	u := createUpload(t, c, b, "slow")
	p1, p2 := randBytes(5*mib+3), randBytes(2*mib)
	cp1 := u.part(1, p1)
	time.Sleep(500 * time.Millisecond)
	cp2 := u.part(2, p2)
	time.Sleep(500 * time.Millisecond)
	if _, err := u.complete(cp1, cp2); err != nil {
		t.Fatalf("Complete after GC passes: %v", err)
	}
	time.Sleep(300 * time.Millisecond)
	checkBody(t, "object completed across GC passes", get(t, c, b, "slow"), append(append([]byte(nil), p1...), p2...))
}

// TestConcurrentReadersAndWriters overwrites a few keys with objects of
// varying size (inline, one block, many blocks) while readers GET them and
// background GC runs: every read must be one of the written versions,
// whole.
func TestConcurrentReadersAndWriters(t *testing.T) {
	t.Parallel()
	ts := startServer(t, gcArgs...)
	c := ts.client(t, whenRequired)
	ctx := t.Context()
	b := mkBucket(t, c, "rw")

	const keys = 3
	var mu sync.Mutex
	written := map[string]bool{} // sha256 of every version ever written
	for k := 0; k < keys; k++ {
		body := randBytes(100)
		written[sha256Hex(body)] = true
		put(t, c, b, fmt.Sprint(k), body)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var reads, writes atomic.Int64
	sizes := []int{10, 100 * kib, 200 * kib, mib + 1, 3 * mib}
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				body := randBytes(sizes[(i+w)%len(sizes)])
				mu.Lock()
				written[sha256Hex(body)] = true
				mu.Unlock()
				key := fmt.Sprint((i + w) % keys)
				if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
					t.Errorf("PutObject: %v", err)
					return
				}
				writes.Add(1)
			}
		}()
	}
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprint((i + r) % keys)
				out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String(key)})
				if err != nil {
					t.Errorf("GetObject %s: %v", key, err)
					return
				}
				body, err := io.ReadAll(out.Body)
				out.Body.Close()
				if err != nil {
					t.Errorf("GetObject %s: read after %d bytes: %v", key, len(body), err)
					return
				}
				mu.Lock()
				ok := written[sha256Hex(body)]
				mu.Unlock()
				if !ok || aws.ToInt64(out.ContentLength) != int64(len(body)) {
					t.Errorf("GetObject %s: %d bytes (Content-Length %d) that no writer wrote", key, len(body), aws.ToInt64(out.ContentLength))
					return
				}
				reads.Add(1)
			}
		}()
	}
	time.Sleep(4 * time.Second)
	close(stop)
	wg.Wait()
	t.Logf("%d writes, %d whole reads", writes.Load(), reads.Load())
	if writes.Load() < 10 || reads.Load() < 10 {
		t.Errorf("only %d writes and %d reads: the test exercised little", writes.Load(), reads.Load())
	}
}
