package objects

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/coffer-s3/coffer/internal/s3err"
)

func TestBlobKeys(t *testing.T) {
	now := time.Unix(1700000000, 123456789)
	k := newBlobKey(now)
	if len(k) != blobKeyLen || !strings.HasPrefix(k, "b/") {
		t.Fatalf("newBlobKey = %q", k)
	}
	if got, ok := blobKeyTime(k); !ok || !got.Equal(now) {
		t.Errorf("blobKeyTime(%q) = %v, %v; want %v", k, got, ok, now)
	}
	if newBlobKey(now) == k {
		t.Error("two blob keys of one instant are equal")
	}
	for _, bad := range []string{
		"", "b/", k[:len(k)-1], k + "0", "x" + k[1:], "b/zz/" + k[5:], "b/00-" + k[5:],
		"b/00/" + "g" + k[6:], "b/00/" + k[5:21] + "xyz" + k[24:],
	} {
		if _, ok := blobKeyTime(bad); ok {
			t.Errorf("blobKeyTime(%q) accepted a malformed key", bad)
		}
	}
	id := newUploadID(now)
	if len(id) != 32 || id >= newUploadID(now.Add(time.Nanosecond)) {
		t.Errorf("upload IDs %q do not sort by time", id)
	}
}

func TestInlineBodyClose(t *testing.T) {
	released := 0
	b := newInlineBody([]byte("hello"), func() { released++ })
	var out bytes.Buffer
	if n, err := io.Copy(&out, b); err != nil || n != 5 || out.String() != "hello" {
		t.Fatalf("io.Copy = %d, %v, %q", n, err, out.String())
	}
	b.Close()
	b.Close()
	if released != 1 {
		t.Errorf("buffer released %d times, want once", released)
	}
	if _, err := b.Read(make([]byte, 1)); !errors.Is(err, errClosedBody) {
		t.Errorf("Read after Close = %v", err)
	}
	if _, err := b.WriteTo(io.Discard); !errors.Is(err, errClosedBody) {
		t.Errorf("WriteTo after Close = %v", err)
	}
}

func TestCanceledContext(t *testing.T) {
	// Reads and GC stop when their context is canceled; writes whose input
	// arrived complete anyway (writeContext), so a client that half-closes
	// after sending everything is not told its write failed.
	e := newEnv(t)
	e.put(t, "k", randBytes(2*testBlock, 1))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.s.GetObject(ctx, "bkt", "k", GetOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("GetObject with canceled context = %v", err)
	}
	if _, err := e.s.GC(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("GC with canceled context = %v", err)
	}
	big := randBytes(2*testBlock+5, 2)
	if _, err := e.s.PutObject(ctx, "bkt", "k2", PutInput{Size: int64(len(big))}, bytes.NewReader(big)); err != nil {
		t.Errorf("PutObject with canceled context = %v, want it stored", err)
	}
	if _, got := e.get(t, "k2", GetOptions{}); !bytes.Equal(got, big) {
		t.Errorf("k2 reads back %d bytes, want the %d written", len(got), len(big))
	}
	if _, err := e.s.DeleteObject(ctx, "bkt", ObjectRef{Key: "k"}); err != nil {
		t.Errorf("DeleteObject with canceled context = %v", err)
	}
	if _, err := e.s.HeadObject(context.Background(), "bkt", "k", GetOptions{}); s3err.CodeOf(err) != s3err.NoSuchKey {
		t.Errorf("HeadObject after delete = %v, want NoSuchKey", err)
	}
}
