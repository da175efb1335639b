package objects

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/coffer-s3/coffer/internal/blob"
	"github.com/coffer-s3/coffer/internal/blob/memblob"
	"github.com/coffer-s3/coffer/internal/s3err"
)

// downStore is memblob behind an upstream that can go away: once down, or
// once putsLeft Puts have succeeded, every Put and Get fails with err.
type downStore struct {
	*memblob.Store
	down     atomic.Bool
	putsLeft atomic.Int64 // Puts that still succeed while not down; <0 for any number
	err      error
	puts     atomic.Int64 // Puts attempted
}

func (s *downStore) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	s.puts.Add(1)
	if s.down.Load() || s.putsLeft.Add(-1) == -1 {
		s.down.Store(true)
		return s.err
	}
	return s.Store.Put(ctx, key, r, size)
}

func (s *downStore) Get(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	if s.down.Load() {
		return nil, s.err
	}
	return s.Store.Get(ctx, key, off, n)
}

func (s *downStore) Delete(ctx context.Context, key string) error {
	if s.down.Load() {
		return s.err
	}
	return s.Store.Delete(ctx, key)
}

// newDownEnv is newEnv over a downStore failing with err.
func newDownEnv(t *testing.T, err error) (*env, *downStore) {
	t.Helper()
	ds := &downStore{Store: memblob.New(), err: err}
	ds.putsLeft.Store(-1 << 40)
	e := &env{store: ds.Store, dir: t.TempDir()}
	e.open(t, Config{InlineThreshold: testInline, BlockSize: testBlock, MinPartSize: 2 * testBlock}, ds)
	if err := e.s.CreateBucket(t.Context(), "bkt", CreateBucketInput{}); err != nil {
		t.Fatal(err)
	}
	return e, ds
}

// TestBlockStoreUnavailable checks that an upstream block store that cannot
// be reached makes the requests that need it ServiceUnavailable with
// Retry-After, commits nothing, and leaves the rest working.
func TestBlockStoreUnavailable(t *testing.T) {
	ctx := t.Context()
	unreachable := &blob.UnavailableError{Kind: "connect", Err: errors.New("dial tcp: connection refused")}
	e, ds := newDownEnv(t, unreachable)
	oldBig := randBytes(3*testBlock, 1)
	small := randBytes(testInline/2, 2)
	e.put(t, "big", oldBig)
	e.put(t, "small", small)

	// The second block of a new version fails: nothing is committed, the
	// old version is still the one read, and the first block is left for
	// GC rather than deleted through the unreachable store.
	ds.putsLeft.Store(1)
	before := ds.puts.Load()
	newBig := randBytes(3*testBlock, 3)
	_, err := e.s.PutObject(ctx, "bkt", "big", PutInput{Size: int64(len(newBig))}, bytes.NewReader(newBig))
	wantUnavailable(t, "PutObject with the store failing at its second block", err)
	if n := ds.puts.Load() - before; n != 2 {
		t.Errorf("PutObject tried %d blocks, want 2 (the second failed)", n)
	}
	if n := len(e.s.inflight.snapshot()); n != 0 {
		t.Errorf("%d blocks still in flight after the failed write; want 0 so that GC may collect them", n)
	}

	// While down: block data answers 503, everything else works.
	if _, err := e.s.GetObject(ctx, "bkt", "big", GetOptions{}); err != nil {
		wantUnavailable(t, "GetObject of a block object", err)
	} else {
		t.Errorf("GetObject of a block object while the store is down succeeded, want ServiceUnavailable before any byte")
	}
	if _, got := e.get(t, "small", GetOptions{}); !bytes.Equal(got, small) {
		t.Errorf("GetObject of an inline object while the store is down returned %d bytes that differ", len(got))
	}
	if info, err := e.s.HeadObject(ctx, "bkt", "big", GetOptions{}); err != nil || info.Info.Size != int64(len(oldBig)) {
		t.Errorf("HeadObject of the block object while down = %v, size %d; want the old version's %d", err, info.Info.Size, len(oldBig))
	}
	_, err = e.s.CopyObject(ctx, "bkt", "copy", CopyInput{SrcBucket: "bkt", SrcKey: "big"})
	wantUnavailable(t, "CopyObject of a block object", err)
	u, err := e.s.CreateMultipartUpload(ctx, "bkt", "mp", CreateUploadInput{})
	if err != nil {
		t.Fatalf("CreateMultipartUpload while the store is down: %v", err)
	}
	part := randBytes(2*testBlock, 4)
	_, err = e.s.UploadPart(ctx, "bkt", "mp", u.UploadID, 1, PartInput{Size: int64(len(part))}, bytes.NewReader(part))
	wantUnavailable(t, "UploadPart", err)
	if _, err := e.s.PutObject(ctx, "bkt", "small2", PutInput{Size: int64(len(small))}, bytes.NewReader(small)); err != nil {
		t.Errorf("PutObject of an inline object while the store is down: %v", err)
	}

	// Back up: the old version was never replaced, and writes work.
	ds.down.Store(false)
	ds.putsLeft.Store(-1 << 40)
	if _, got := e.get(t, "big", GetOptions{}); !bytes.Equal(got, oldBig) {
		t.Errorf("GetObject after the outage returned %d bytes that are not the version stored before it", len(got))
	}
	e.put(t, "big", newBig)
	if _, got := e.get(t, "big", GetOptions{}); !bytes.Equal(got, newBig) {
		t.Errorf("GetObject after a PutObject once the store is back returned %d bytes that differ", len(got))
	}

	// The block the failed write left is an orphan that GC removes.
	live := map[string]bool{}
	for _, k := range e.liveBlocks(t) {
		live[k] = true
	}
	orphans := 0
	for _, k := range e.blobs(t) {
		if !live[k] {
			orphans++
		}
	}
	if orphans == 0 {
		t.Errorf("no orphaned block after a write that stored one block and failed; want the first block left for GC")
	}
	if _, err := e.s.GC(ctx, 0); err != nil {
		t.Fatalf("GC: %v", err)
	}
	if got, want := len(e.blobs(t)), len(e.liveBlocks(t)); got != want {
		t.Errorf("after GC the store holds %d blocks, want the %d live ones", got, want)
	}
}

// TestBlockStoreError checks that an error of the block store that is not
// an outage (a misconfiguration: 403) stays an internal error.
func TestBlockStoreError(t *testing.T) {
	e, ds := newDownEnv(t, errors.New("put: AccessDenied (403)"))
	data := randBytes(2*testBlock, 5)
	e.put(t, "big", data)
	ds.down.Store(true)
	_, err := e.s.PutObject(t.Context(), "bkt", "big", PutInput{Size: int64(len(data))}, bytes.NewReader(data))
	if err == nil || s3err.CodeOf(err) == s3err.ServiceUnavailable {
		t.Errorf("PutObject over a store answering 403 = %v, want a plain (internal) error", err)
	}
	_, err = e.s.GetObject(t.Context(), "bkt", "big", GetOptions{})
	if err == nil || s3err.CodeOf(err) == s3err.ServiceUnavailable {
		t.Errorf("GetObject over a store answering 403 = %v, want a plain (internal) error", err)
	}
}

// wantUnavailable fails unless err is ServiceUnavailable with Retry-After.
func wantUnavailable(t *testing.T, what string, err error) {
	t.Helper()
	e, ok := errors.AsType[*s3err.Error](err)
	if !ok || e.Code != s3err.ServiceUnavailable {
		t.Errorf("%s = %v, want ServiceUnavailable", what, err)
		return
	}
	for _, f := range e.Header {
		if f.Name == "Retry-After" && f.Value != "" {
			return
		}
	}
	t.Errorf("%s: ServiceUnavailable without Retry-After (headers %v)", what, e.Header)
}

// TestBlockStoreFull: a block store that refuses a block for want of
// space (ENOSPC, EDQUOT: another process filled the disk, or the blocks'
// own filesystem filled first) makes the write StorageFull (507), as the
// reserve's refusal would, not an internal error; nothing is committed
// and the old version stays.
func TestBlockStoreFull(t *testing.T) {
	ctx := t.Context()
	for _, errno := range []error{syscall.ENOSPC, syscall.EDQUOT} {
		e, ds := newDownEnv(t, &fs.PathError{Op: "write", Path: "blobs/.tmp/x", Err: errno})
		old := randBytes(3*testBlock, 1)
		e.put(t, "big", old)
		ds.putsLeft.Store(1)
		_, err := e.s.PutObject(ctx, "bkt", "big", PutInput{Size: int64(3 * testBlock)}, bytes.NewReader(randBytes(3*testBlock, 2)))
		if !s3err.Is(err, s3err.StorageFull) || !errors.Is(err, errno) {
			t.Errorf("PutObject with the block store out of space (%v) = %v, want StorageFull", errno, err)
		}
		ds.down.Store(false)
		if _, got := e.get(t, "big", GetOptions{}); !bytes.Equal(got, old) {
			t.Errorf("%v: the old version changed", errno)
		}
	}
}
