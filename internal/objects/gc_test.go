package objects

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/coffer-s3/coffer/internal/blob"
	"github.com/coffer-s3/coffer/internal/blob/memblob"
)

// TestGCCollectsExactlyGarbage drives every way blobs become garbage and
// checks that one GC pass leaves the store holding exactly the blobs the
// visible objects and uploads reference.
func TestGCCollectsExactlyGarbage(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	big := func(seed uint64) []byte { return randBytes(3*testBlock+5, seed) }
	e.put(t, "overwritten", big(1))
	e.put(t, "overwritten", big(2))
	e.put(t, "overwritten", []byte("inline now"))
	e.put(t, "deleted", big(3))
	if _, err := e.s.DeleteObject(ctx, "bkt", ObjectRef{Key: "deleted"}); err != nil {
		t.Fatal(err)
	}
	e.put(t, "multi1", big(4))
	e.put(t, "multi2", big(5))
	if _, err := e.s.DeleteObjects(ctx, "bkt", refs("multi1", "multi2")); err != nil {
		t.Fatal(err)
	}
	e.put(t, "kept", big(6))
	if _, err := e.s.CopyObject(ctx, "bkt", "copy", CopyInput{SrcBucket: "bkt", SrcKey: "kept"}); err != nil {
		t.Fatal(err)
	}
	aborted, err := e.s.CreateMultipartUpload(ctx, "bkt", "mp", CreateUploadInput{})
	if err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 2; n++ {
		b := big(uint64(10 + n))
		if _, err := e.s.UploadPart(ctx, "bkt", "mp", aborted.UploadID, n, PartInput{Size: int64(len(b))}, bytes.NewReader(b)); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.s.AbortMultipartUpload(ctx, "bkt", "mp", aborted.UploadID); err != nil {
		t.Fatal(err)
	}
	e.multipart(t, "mp", "", "", big(20), big(21)) // replaced below
	e.multipart(t, "mp", "", "", big(22), big(23))
	open, err := e.s.CreateMultipartUpload(ctx, "bkt", "open", CreateUploadInput{})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second replaces the first
		if _, err := e.s.UploadPart(ctx, "bkt", "open", open.UploadID, 1, PartInput{Size: 3 * testBlock}, bytes.NewReader(big(30)[:3*testBlock])); err != nil {
			t.Fatal(err)
		}
	}

	before := len(e.blobs(t))
	st, err := e.s.GC(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	live := e.liveBlocks(t)
	if diff := cmp.Diff(live, e.blobs(t)); diff != "" {
		t.Errorf("store vs referenced after GC (-want +got):\n%s", diff)
	}
	if st.Deleted != before-len(live) || st.Scanned != len(live) || st.DeletedBytes <= 0 {
		t.Errorf("GC stats %+v; want %d deleted of %d", st, before-len(live), before)
	}
	// Everything visible still reads back.
	for _, k := range []string{"overwritten", "kept", "copy", "mp"} {
		e.get(t, k, GetOptions{})
	}
	// A second pass finds nothing.
	if st, err := e.s.GC(ctx, 0); err != nil || st.Deleted != 0 {
		t.Errorf("second GC = %+v, %v", st, err)
	}
}

// gatedReader yields data but blocks after gate bytes until release is
// closed, signalling reached when it gets there.
type gatedReader struct {
	r       io.Reader
	gate    int
	reached chan struct{}
	release chan struct{}
	once    sync.Once
}

func (g *gatedReader) Read(p []byte) (int, error) {
	if g.gate <= 0 {
		g.once.Do(func() { close(g.reached) })
		<-g.release
		return g.r.Read(p)
	}
	n, err := g.r.Read(p[:min(len(p), g.gate)])
	g.gate -= n
	return n, err
}

func TestGCSparesWriteInFlight(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	data := randBytes(4*testBlock, 8)
	g := &gatedReader{r: bytes.NewReader(data), gate: 2*testBlock + 10, reached: make(chan struct{}), release: make(chan struct{})}
	errc := make(chan error, 1)
	go func() {
		_, err := e.s.PutObject(ctx, "bkt", "slow", PutInput{Size: int64(len(data))}, g)
		errc <- err
	}()
	<-g.reached // two blocks are in the store, uncommitted; the third is being written
	if n := len(e.blobs(t)); n != 2 {
		t.Fatalf("store holds %d blobs mid-write, want 2", n)
	}
	st, err := e.s.GC(ctx, 0)
	if err != nil || st.Deleted != 0 || st.Scanned != 2 {
		t.Fatalf("GC during the write = %+v, %v; want nothing deleted", st, err)
	}
	close(g.release)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if _, got := e.get(t, "slow", GetOptions{}); !bytes.Equal(got, data) {
		t.Error("object written across a GC pass reads back wrong")
	}
	if st, err := e.s.GC(ctx, 0); err != nil || st.Deleted != 0 {
		t.Errorf("GC after the write = %+v, %v", st, err)
	}
}

func TestGCSparesOpenReader(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	old := randBytes(4*testBlock, 1)
	e.put(t, "k", old)
	o, err := e.s.GetObject(ctx, "bkt", "k", GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	head := make([]byte, 10)
	if _, err := io.ReadFull(o.Body, head); err != nil {
		t.Fatal(err)
	}
	e.put(t, "k", randBytes(2*testBlock, 2)) // overwrite while reading
	st, err := e.s.GC(ctx, 0)
	if err != nil || st.Deleted != 0 {
		t.Fatalf("GC with an open reader = %+v, %v; want nothing deleted", st, err)
	}
	rest, err := io.ReadAll(o.Body)
	if err != nil {
		t.Fatalf("reading the old version after overwrite and GC: %v", err)
	}
	if !bytes.Equal(append(head, rest...), old) {
		t.Error("reader of the old version got other data")
	}
	if err := o.Body.Close(); err != nil {
		t.Fatal(err)
	}
	st, err = e.s.GC(ctx, 0)
	if err != nil || st.Deleted != 4 {
		t.Errorf("GC after the reader closed = %+v, %v; want the 4 old blocks", st, err)
	}
	if diff := cmp.Diff(e.liveBlocks(t), e.blobs(t)); diff != "" {
		t.Errorf("store vs referenced (-want +got):\n%s", diff)
	}
}

// failDeletes is a blob.Store whose Delete fails, so a failed write leaves
// its blocks behind as a crash would.
type failDeletes struct{ blob.Store }

func (failDeletes) Delete(context.Context, string) error { return errors.New("disk gone") }

func TestGCAfterCrash(t *testing.T) {
	ctx := context.Background()
	cfg := Config{InlineThreshold: testInline, BlockSize: testBlock}
	e := newEnv(t)
	keep := randBytes(2*testBlock, 1)
	e.put(t, "keep", keep)
	// A write that fails mid-body and cannot clean up...
	failing, err := New(cfg, e.db, failDeletes{e.store}, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.s = failing
	data := randBytes(3*testBlock, 2)
	_, err = e.s.PutObject(ctx, "bkt", "lost", PutInput{Size: int64(len(data)) + 1}, bytes.NewReader(data))
	wantCode(t, "short PUT", err, "IncompleteBody")
	// ...and blocks written by a process that died before committing.
	for range 2 {
		if err := e.store.Put(ctx, newBlobKey(time.Now()), strings.NewReader("orphan"), 6); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.db.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(e.blobs(t)); n != 2+3+2 {
		t.Fatalf("store holds %d blobs before recovery, want 7", n)
	}
	e.open(t, cfg, e.store) // restart
	st, err := e.s.GC(ctx, 0)
	if err != nil || st.Deleted != 5 {
		t.Errorf("GC after restart = %+v, %v; want 5 orphans deleted", st, err)
	}
	if diff := cmp.Diff(e.liveBlocks(t), e.blobs(t)); diff != "" {
		t.Errorf("store vs referenced (-want +got):\n%s", diff)
	}
	if _, got := e.get(t, "keep", GetOptions{}); !bytes.Equal(got, keep) {
		t.Error("committed object damaged by GC")
	}
}

func TestGCGrace(t *testing.T) {
	ctx := context.Background()
	var now atomic.Int64
	now.Store(time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	e := newEnvConfig(t, Config{InlineThreshold: testInline, BlockSize: testBlock, Clock: clock})
	e.put(t, "k", randBytes(2*testBlock, 1))
	e.put(t, "k", []byte("small")) // two blocks to the queue
	if err := e.store.Put(ctx, newBlobKey(clock()), strings.NewReader("x"), 1); err != nil {
		t.Fatal(err) // an orphan, created now
	}
	if err := e.store.Put(ctx, "b/zz/not-ours", strings.NewReader("x"), 1); err != nil {
		t.Fatal(err) // a key of another format: never collected
	}
	if st, err := e.s.GC(ctx, time.Hour); err != nil || st.Deleted != 0 {
		t.Errorf("GC within the grace period = %+v, %v", st, err)
	}
	now.Add(int64(2 * time.Hour))
	if st, err := e.s.GC(ctx, time.Hour); err != nil || st.Deleted != 3 {
		t.Errorf("GC after the grace period = %+v, %v; want 3 deleted", st, err)
	}
	if got := e.blobs(t); len(got) != 1 || got[0] != "b/zz/not-ours" {
		t.Errorf("store after GC = %v", got)
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestRun(t *testing.T) {
	for _, tc := range []struct {
		name     string
		interval time.Duration
		collect  bool
	}{{"periodic", 5 * time.Millisecond, true}, {"disabled", -1, false}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			var logs syncBuffer
			s, err := New(Config{InlineThreshold: testInline, BlockSize: testBlock, GCInterval: tc.interval, GCGrace: time.Nanosecond, FreeDelay: -1},
				e.db, e.store, slog.New(slog.NewTextHandler(&logs, nil)))
			if err != nil {
				t.Fatal(err)
			}
			e.s = s
			e.put(t, "k", randBytes(2*testBlock, 1))
			e.put(t, "k", []byte("x"))
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- s.Run(ctx) }()
			deadline := time.Now().Add(10 * time.Second)
			// Until the blobs are gone and the pass has logged its summary:
			// cancelling between the two would end the pass unlogged.
			for tc.collect && (len(e.blobs(t)) != 0 || !strings.Contains(logs.String(), "gc pass")) {
				if time.Now().After(deadline) {
					t.Fatal("background GC did not collect the garbage")
				}
				time.Sleep(time.Millisecond)
			}
			if !tc.collect {
				time.Sleep(20 * time.Millisecond)
			}
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run = %v", err)
			}
			if tc.collect && !strings.Contains(logs.String(), "gc pass") {
				t.Errorf("no gc summary logged: %q", logs.String())
			}
			if !tc.collect && len(e.blobs(t)) != 2 {
				t.Errorf("disabled GC collected blobs: %v", e.blobs(t))
			}
		})
	}
}

// TestFreePromptly: with the default FreeDelay, blocks of overwritten and
// deleted objects and of aborted uploads leave the block store within
// seconds of the commit, far inside the GC grace; a reader streaming an
// old version keeps its blocks until it is done; a blob no record ever
// mentioned waits for the GC and its grace.
func TestFreePromptly(t *testing.T) {
	e := newEnv(t)
	s, err := New(Config{InlineThreshold: testInline, BlockSize: testBlock, MinPartSize: 2 * testBlock, GCInterval: time.Hour, GCGrace: time.Hour},
		e.db, e.store, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.s = s
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	// A blob that no record mentions (a crash's leftover): the GC's.
	if err := e.store.Put(ctx, "orphan/x", bytes.NewReader([]byte("x")), 1); err != nil {
		t.Fatal(err)
	}
	waitBlobs := func(what string, want int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for len(e.blobs(t)) != want+1 { // +1: the orphan
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d blobs after 10 s, want %d: %v", what, len(e.blobs(t))-1, want, e.blobs(t))
			}
			time.Sleep(5 * time.Millisecond)
		}
	}

	e.put(t, "k", randBytes(3*testBlock, 1))
	waitBlobs("written", 3)
	e.put(t, "k", randBytes(2*testBlock, 2))
	waitBlobs("overwritten", 2)
	if _, err := s.DeleteObject(ctx, "bkt", ObjectRef{Key: "k"}); err != nil {
		t.Fatal(err)
	}
	waitBlobs("deleted", 0)

	// A reader of the old version keeps its blocks.
	old := randBytes(2*testBlock, 3)
	e.put(t, "r", old)
	o, err := s.GetObject(ctx, "bkt", "r", GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.put(t, "r", []byte("small"))
	time.Sleep(3 * time.Second) // past a free pass and a retry
	got, err := io.ReadAll(o.Body)
	o.Body.Close()
	if err != nil || !bytes.Equal(got, old) {
		t.Fatalf("reading the overwritten version: %d bytes, %v", len(got), err)
	}
	waitBlobs("reader done", 0)

	// An aborted upload's parts.
	u, err := s.CreateMultipartUpload(ctx, "bkt", "mp", CreateUploadInput{})
	if err != nil {
		t.Fatal(err)
	}
	part := randBytes(2*testBlock, 4)
	if _, err := s.UploadPart(ctx, u.Bucket, u.Key, u.UploadID, 1, PartInput{Size: int64(len(part))}, bytes.NewReader(part)); err != nil {
		t.Fatal(err)
	}
	waitBlobs("part uploaded", 2)
	if err := s.AbortMultipartUpload(ctx, "bkt", "mp", u.UploadID); err != nil {
		t.Fatal(err)
	}
	waitBlobs("upload aborted", 0)
}

// listHookStore runs hook once before its first List: a write that
// happens after the orphan sweep's reference scan.
type listHookStore struct {
	*memblob.Store
	hook func()
}

func (s *listHookStore) List(ctx context.Context, prefix string, fn func(string) error) error {
	if h := s.hook; h != nil {
		s.hook = nil
		h()
	}
	return s.Store.List(ctx, prefix, fn)
}

// A write that begins after the sweep's in-flight snapshot and commits
// before the listing reaches its blocks, with a clock stepped back past
// the grace (its keys look old), is neither in the snapshot nor in the
// reference scan: the sweep must spare it all the same.
func TestGCSparesWriteAfterClockStep(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	store := &listHookStore{Store: memblob.New()}
	e := &env{store: store.Store, dir: t.TempDir()}
	cfg := Config{InlineThreshold: testInline, BlockSize: testBlock, MinPartSize: 2 * testBlock, Clock: func() time.Time { return clock() }}
	e.open(t, cfg, store)
	if err := e.s.CreateBucket(ctx, "bkt", CreateBucketInput{}); err != nil {
		t.Fatal(err)
	}
	data := randBytes(2*testBlock, 3)
	store.hook = func() {
		stepped := now.Add(-2 * time.Hour) // the clock steps back past the grace
		clock = func() time.Time { return stepped }
		if _, err := e.s.PutObject(ctx, "bkt", "k", PutInput{Size: int64(len(data))}, bytes.NewReader(data)); err != nil {
			t.Errorf("PutObject: %v", err)
		}
	}
	st, err := e.s.GC(ctx, time.Hour)
	if err != nil || st.Deleted != 0 {
		t.Fatalf("GC = %+v, %v; want nothing deleted", st, err)
	}
	if _, got := e.get(t, "k", GetOptions{}); !bytes.Equal(got, data) {
		t.Error("the object written during the sweep lost its blocks")
	}
}

// claimedStore is a block store under a claim (blob.Claimer) that err says
// is lost, or not.
type claimedStore struct {
	blob.Store
	mu  sync.Mutex
	err error
}

func (c *claimedStore) Claim(_ context.Context, want blob.Owner, _ blob.Local) (blob.Owner, error) {
	return want, c.CheckClaim(context.Background())
}

func (c *claimedStore) CheckClaim(context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *claimedStore) setErr(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.err = err
}

// A block store whose claim names another metadata store (another
// deployment claimed the prefix while this one ran) gets no orphan sweep:
// the blobs there are no longer this store's to judge.
func TestGCSweepsOnlyUnderOwnClaim(t *testing.T) {
	ctx := context.Background()
	e := &env{store: memblob.New(), dir: t.TempDir()}
	cs := &claimedStore{Store: e.store}
	e.open(t, Config{InlineThreshold: testInline, BlockSize: testBlock}, cs)
	old := time.Now().Add(-48 * time.Hour)
	if err := e.store.Put(ctx, newBlobKey(old), strings.NewReader("x"), 1); err != nil {
		t.Fatal(err) // someone's block, old: an orphan to this store
	}
	lost := errors.New("prefix claimed by another metadata store")
	cs.setErr(lost)
	if st, err := e.s.GC(ctx, time.Hour); !errors.Is(err, lost) || st.Deleted != 0 {
		t.Errorf("GC under a lost claim = %+v, %v; want no deletion and the claim's error", st, err)
	}
	if got := e.blobs(t); len(got) != 1 {
		t.Errorf("store after GC under a lost claim = %v, want the block kept", got)
	}
	cs.setErr(nil)
	if st, err := e.s.GC(ctx, time.Hour); err != nil || st.Deleted != 1 {
		t.Errorf("GC under its own claim = %+v, %v; want the orphan deleted", st, err)
	}
}
