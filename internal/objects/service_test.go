package objects

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/coffer-s3/coffer/internal/blob/memblob"
	"github.com/coffer-s3/coffer/internal/meta"
	"github.com/coffer-s3/coffer/internal/s3err"
)

// TestErrAfterStorageFailure checks what the service tells its callers
// once the metadata store has failed under it: the write that met the
// failure fails with it, Err turns to ServiceUnavailable naming the cause
// (and not the files), and reads go on.
func TestErrAfterStorageFailure(t *testing.T) {
	ctx := context.Background()
	var full atomic.Bool
	db, err := meta.Open(meta.Config{Dir: t.TempDir(), Sync: true, FailWrite: func(path string) error {
		if full.Load() {
			return syscall.ENOSPC
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	s, err := New(Config{InlineThreshold: testInline, BlockSize: testBlock}, db, memblob.New(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateBucket(ctx, "bkt", CreateBucketInput{}); err != nil {
		t.Fatal(err)
	}
	data := []byte("acknowledged")
	if _, err := s.PutObject(ctx, "bkt", "a", PutInput{Size: int64(len(data))}, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if err := s.Err(); err != nil {
		t.Fatalf("Err() = %v while the store works", err)
	}

	full.Store(true)
	_, err = s.PutObject(ctx, "bkt", "b", PutInput{Size: 1}, strings.NewReader("b"))
	if !errors.Is(err, meta.ErrFailed) {
		t.Fatalf("PutObject on a full disk = %v, want meta.ErrFailed", err)
	}
	e, ok := errors.AsType[*s3err.Error](s.Err())
	if !ok || e.Code != s3err.ServiceUnavailable || !strings.Contains(e.Message, "no space left on device") ||
		strings.Contains(e.Message, ".log") || !errors.Is(e, meta.ErrFailed) {
		t.Fatalf("Err() after the failure = %#v, want ServiceUnavailable naming the full disk", s.Err())
	}
	if o, err := s.GetObject(ctx, "bkt", "a", GetOptions{}); err != nil {
		t.Errorf("GetObject after the failure: %v", err)
	} else {
		o.Body.Close()
	}
}
