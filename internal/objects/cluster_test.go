package objects

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coffer-s3/coffer/internal/blob"
	"github.com/coffer-s3/coffer/internal/blob/memblob"
	"github.com/coffer-s3/coffer/internal/meta"
	"github.com/coffer-s3/coffer/internal/meta/pgtest"
	"github.com/coffer-s3/coffer/internal/s3err"
)

// testPG is the PostgreSQL server of this test binary, started by the
// first test that needs it.
var testPG pgtest.Lazy

func TestMain(m *testing.M) {
	code := m.Run()
	testPG.Stop()
	os.Exit(code)
}

// pgNodes returns two services over one PostgreSQL schema and one block
// store, as two nodes of a cluster, with a bucket "bkt".
func pgNodes(t *testing.T, cfg Config, store blob.Store) (a, b *Service) {
	t.Helper()
	nodes := pgNodesWith(t, store, cfg, cfg)
	return nodes[0], nodes[1]
}

// wantObject reads bkt/key through s and fails t unless it is data, whole.
func wantObject(t *testing.T, s *Service, key string, data []byte, what string) {
	t.Helper()
	got, err := s.GetObject(t.Context(), "bkt", key, GetOptions{})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	body, err := io.ReadAll(got.Body)
	got.Body.Close()
	if err != nil || !bytes.Equal(body, data) {
		t.Fatalf("%s: %d bytes, %v; want %d intact", what, len(body), err, len(data))
	}
}

var clusterCfg = Config{InlineThreshold: testInline, BlockSize: testBlock, MinPartSize: 2 * testBlock,
	GCInterval: -1, FreeDelay: -1, GCGrace: 2 * time.Second}

// slowList is a block store whose List takes a while and counts how many
// run at once: GC passes list the store.
type slowList struct {
	blob.Store
	active, most atomic.Int32
}

func (s *slowList) List(ctx context.Context, prefix string, fn func(string) error) error {
	n := s.active.Add(1)
	defer s.active.Add(-1)
	for {
		m := s.most.Load()
		if n <= m || s.most.CompareAndSwap(m, n) {
			break
		}
	}
	time.Sleep(20 * time.Millisecond)
	return s.Store.List(ctx, prefix, fn)
}

// TestClusterGCLease runs GC on two nodes at once, repeatedly: only one
// pass runs at a time, the other node's reports Elsewhere.
func TestClusterGCLease(t *testing.T) {
	store := &slowList{Store: memblob.New()}
	a, b := pgNodes(t, clusterCfg, store)
	var elsewhere atomic.Int32
	var wg sync.WaitGroup
	for _, s := range []*Service{a, b} {
		wg.Go(func() {
			for range 20 {
				st, err := s.GC(t.Context(), time.Hour)
				if err != nil {
					t.Error(err)
				}
				if st.Elsewhere {
					elsewhere.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if m := store.most.Load(); m != 1 {
		t.Errorf("%d GC passes ran at once, want 1", m)
	}
	if elsewhere.Load() == 0 {
		t.Error("no pass found the lease held by the other node")
	}
	t.Logf("%d of 40 passes left to the other node", elsewhere.Load())
}

// TestClusterGCSparesRemoteWrite writes an object through node B slowly
// while node A runs GC passes: the blocks B has stored and not yet
// committed are in no record and not in A's in-flight set, but younger
// than the grace, so A keeps them, and B's object is whole — also when A's
// passes ask for a shorter grace (`coffer admin gc --grace 0s`), which a
// shared store raises to GCGrace, the grace B's write limit rests on. A write that
// takes longer than writeLimit is refused instead of committed, since
// another node's GC may already have taken its blocks.
func TestClusterGCSparesRemoteWrite(t *testing.T) {
	store := memblob.New()
	a, b := pgNodes(t, clusterCfg, store)
	ctx := t.Context()
	data := randBytes(3*testBlock, 1)

	slowPut := func(key string, stall time.Duration, duringStall func()) error {
		pr, pw := io.Pipe()
		go func() {
			_, _ = pw.Write(data[:testBlock+1]) // the first block, stored
			time.Sleep(stall)
			if duringStall != nil {
				duringStall()
			}
			_, _ = pw.Write(data[testBlock+1:])
			_ = pw.Close()
		}()
		_, err := b.PutObject(ctx, "bkt", key, PutInput{Size: int64(len(data))}, pr)
		return err
	}
	gcs := 0
	err := slowPut("k", 500*time.Millisecond, func() {
		for _, grace := range []time.Duration{clusterCfg.GCGrace, 0, time.Millisecond} {
			st, err := a.GC(ctx, grace)
			if err != nil {
				t.Error(err)
			}
			if st.Grace != clusterCfg.GCGrace {
				t.Errorf("GC(%v) on a shared store ran with grace %v, want GCGrace %v", grace, st.Grace, clusterCfg.GCGrace)
			}
			gcs++
		}
	})
	if err != nil {
		t.Fatalf("slow put through B: %v", err)
	}
	wantObject(t, a, "k", data, fmt.Sprintf("object written through B during A's %d GC passes", gcs))

	// Past writeLimit (1.5s of the 2s grace): refused, and nothing left
	// behind but what GC collects.
	err = slowPut("late", b.writeLimit()+200*time.Millisecond, nil)
	if !s3err.Is(err, s3err.RequestTimeout) {
		t.Fatalf("put slower than the write limit = %v, want RequestTimeout", err)
	}

	// Prompt freeing: the node that dropped the blocks frees them; the
	// other leaves them.
	if _, err := a.DeleteObject(ctx, "bkt", ObjectRef{Key: "k"}); err != nil {
		t.Fatal(err)
	}
	gs, err := a.db.Garbage(ctx, time.Now().Add(time.Hour), nil, 100)
	if err != nil || len(gs) != 3 {
		t.Fatalf("garbage after the delete = %d entries, %v; want 3", len(gs), err)
	}
	for _, g := range gs {
		if !a.db.QueuedHere(g) || b.db.QueuedHere(g) {
			t.Errorf("garbage %s: queued here on A %v, on B %v; want A only", g.BlobKey, a.db.QueuedHere(g), b.db.QueuedHere(g))
		}
	}
}

// TestClusterCommitDeadline: a write whose body ended within writeLimit
// but whose commit then waits (here for the key's lock, held by node A)
// past the margin is refused with RequestTimeout, not committed late:
// another node's GC may have taken its blocks by then.
func TestClusterCommitDeadline(t *testing.T) {
	store := memblob.New()
	a, b := pgNodes(t, clusterCfg, store)
	ctx := t.Context()
	data := randBytes(2*testBlock, 2)
	errHeld := errors.New("held")
	locked, released := make(chan struct{}), make(chan struct{})
	defer func() { <-released }()
	go func() {
		defer close(released)
		_ = a.db.UpdateObject(ctx, "bkt", "slow", time.Now(), func(*meta.Object) (*meta.Object, error) {
			close(locked)
			time.Sleep(clusterCfg.GCGrace + 500*time.Millisecond)
			return nil, errHeld
		})
	}()
	pr, pw := io.Pipe()
	go func() {
		_, _ = pw.Write(data[:testBlock+1]) // the first block, stored now
		<-locked
		time.Sleep(b.writeLimit() - 300*time.Millisecond)
		_, _ = pw.Write(data[testBlock+1:])
		_ = pw.Close()
	}()
	_, err := b.PutObject(ctx, "bkt", "slow", PutInput{Size: int64(len(data))}, pr)
	if !s3err.Is(err, s3err.RequestTimeout) {
		t.Fatalf("put whose commit waited past the margin = %v, want RequestTimeout", err)
	}
	if _, err := a.HeadObject(ctx, "bkt", "slow", GetOptions{}); !s3err.Is(err, s3err.NoSuchKey) {
		t.Fatalf("HEAD after the refused put = %v, want NoSuchKey", err)
	}
}

// pgNodesWith returns services over one PostgreSQL schema and one block
// store, one per config, as nodes of a cluster configured differently,
// with a bucket "bkt".
func pgNodesWith(t *testing.T, store blob.Store, cfgs ...Config) []*Service {
	t.Helper()
	url := testPG.Get(t).NewSchema(t)
	var nodes []*Service
	for _, cfg := range cfgs {
		db, err := meta.Open(meta.Config{Kind: meta.EnginePostgres, Postgres: meta.PostgresConfig{URL: url, MaxConns: 4}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		s, err := New(cfg, db, store, nil)
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, s)
	}
	if err := nodes[0].CreateBucket(t.Context(), "bkt", CreateBucketInput{}); err != nil {
		t.Fatal(err)
	}
	return nodes
}

// TestClusterNodeSettings: nodes configured with different GC graces and
// free delays are as safe as the most cautious of them. Node A (grace 2s)
// runs GC passes while node B (grace 1h) writes slowly: A's passes use
// B's published grace, so B's blocks are kept past A's own grace and B's
// object is whole; A's prompt freeing waits B's free delay. Once B's
// record is older than its grace plus nodeSlack it stops counting, and
// after nodeForget more a pass deletes it. A node that could not publish
// for half its grace refuses writes with blocks.
func TestClusterNodeSettings(t *testing.T) {
	store := memblob.New()
	var skew atomic.Int64 // added to every node's clock
	clock := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	cfgA := clusterCfg
	cfgA.NodeID, cfgA.Clock = "node-a", clock
	cfgB := clusterCfg
	cfgB.NodeID, cfgB.Clock, cfgB.GCGrace, cfgB.SharedFreeDelay = "node-b", clock, time.Hour, 7*time.Minute
	nodes := pgNodesWith(t, store, cfgA, cfgB)
	a, b := nodes[0], nodes[1]
	ctx := t.Context()
	for _, s := range nodes {
		if err := s.Publish(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Publish(ctx); err != nil { // reads B's record too
		t.Fatal(err)
	}
	if d := a.freeDelay(); d != 7*time.Minute {
		t.Errorf("A's prompt freeing waits %v, want B's 7m", d)
	}

	data := randBytes(3*testBlock, 3)
	pr, pw := io.Pipe()
	go func() {
		_, _ = pw.Write(data[:testBlock+1]) // the first block, stored
		time.Sleep(clusterCfg.GCGrace + 500*time.Millisecond)
		for _, grace := range []time.Duration{0, clusterCfg.GCGrace} {
			st, err := a.GC(ctx, grace)
			if err != nil {
				t.Error(err)
			}
			if st.Grace != time.Hour {
				t.Errorf("A's GC(%v) ran with grace %v, want B's 1h", grace, st.Grace)
			}
		}
		_, _ = pw.Write(data[testBlock+1:])
		_ = pw.Close()
	}()
	if _, err := b.PutObject(ctx, "bkt", "k", PutInput{Size: int64(len(data))}, pr); err != nil {
		t.Fatalf("slow put through B: %v", err)
	}
	wantObject(t, a, "k", data, "object written through B while A collected")

	// Past half its grace without publishing, B refuses writes with
	// blocks (inline ones need no block and go on); A, which publishes,
	// does not.
	skew.Store(int64(31 * time.Minute))
	if err := a.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	big := randBytes(2*testBlock, 4)
	if _, err := b.PutObject(ctx, "bkt", "big", PutInput{Size: int64(len(big))}, bytes.NewReader(big)); !s3err.Is(err, s3err.ServiceUnavailable) {
		t.Errorf("a write with blocks on a node that could not publish for 31m = %v, want ServiceUnavailable", err)
	}
	if _, err := b.PutObject(ctx, "bkt", "small", PutInput{Size: 3}, bytes.NewReader([]byte("abc"))); err != nil {
		t.Errorf("an inline write on that node: %v", err)
	}
	if _, err := a.PutObject(ctx, "bkt", "big", PutInput{Size: int64(len(big))}, bytes.NewReader(big)); err != nil {
		t.Errorf("a write with blocks on a node that publishes: %v", err)
	}
	if err := b.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.PutObject(ctx, "bkt", "big", PutInput{Size: int64(len(big))}, bytes.NewReader(big)); err != nil {
		t.Errorf("a write with blocks once the node published again: %v", err)
	}

	// B stops publishing: its grace counts until 1h + nodeSlack after its
	// last record, then not; the record goes nodeForget later.
	skew.Add(int64(time.Hour + nodeSlack(time.Hour) - time.Minute))
	if st, err := a.GC(ctx, 0); err != nil || st.Grace != time.Hour {
		t.Errorf("GC with B's record %v old: grace %v, %v; want 1h", time.Hour+nodeSlack(time.Hour)-time.Minute, st.Grace, err)
	}
	skew.Add(int64(2 * time.Minute))
	if err := a.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	if st, err := a.GC(ctx, 0); err != nil || st.Grace != clusterCfg.GCGrace {
		t.Errorf("GC once B's record stopped counting: grace %v, %v; want A's own %v", st.Grace, err, clusterCfg.GCGrace)
	}
	if d := a.freeDelay(); d != clusterCfg.SharedFreeDelay && d != DefaultSharedFreeDelay {
		t.Errorf("A's prompt freeing waits %v once B stopped counting, want its own", d)
	}
	if ns, err := a.db.Nodes(ctx); err != nil || len(ns) != 2 {
		t.Fatalf("node records before nodeForget: %d, %v; want 2", len(ns), err)
	}
	skew.Add(int64(nodeForget))
	if err := a.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.GC(ctx, 0); err != nil {
		t.Fatal(err)
	}
	ns, err := a.db.Nodes(ctx)
	if err != nil || len(ns) != 1 || ns[0].Node != "node-a" {
		t.Fatalf("node records after nodeForget: %+v, %v; want only node-a's", ns, err)
	}
}

// TestClusterCommitDeadlineRecord: a commit must be done before this
// node's last published record stops counting on the others, whatever
// time the write itself has left: a write that began long after the last
// record was published (the database out of reach meanwhile) and whose
// commit then waits gets a deadline at the record's expiry less half the
// slack, not at its own write limit.
func TestClusterCommitDeadlineRecord(t *testing.T) {
	var skew atomic.Int64
	cfg := clusterCfg
	cfg.NodeID, cfg.GCGrace = "node-b", time.Hour
	cfg.Clock = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	b := pgNodesWith(t, memblob.New(), cfg)[0]
	if err := b.Publish(t.Context()); err != nil {
		t.Fatal(err)
	}
	published := time.Unix(0, b.published.Load())
	data := &ingested{blocks: []meta.Block{{Key: newBlobKey(b.clock())}}}
	ctx, cancel := b.commitContext(t.Context(), data)
	dl, _ := ctx.Deadline()
	cancel()
	if left := time.Until(dl); left < b.writeLimit() || left > time.Hour {
		t.Errorf("a commit right after publishing has %v, want its write limit and a half margin", left)
	}
	skew.Store(int64(20 * time.Minute)) // no record since
	data = &ingested{blocks: []meta.Block{{Key: newBlobKey(b.clock())}}}
	ctx, cancel = b.commitContext(t.Context(), data)
	dl, _ = ctx.Deadline()
	cancel()
	want := published.Add(time.Hour + nodeSlack(time.Hour)/2).Sub(b.clock())
	if left := time.Until(dl); left > want+time.Second || left < want-time.Second {
		t.Errorf("a commit 20m after the last record has %v left, want %v (the record's expiry less half the slack)", left, want)
	}
}

// TestClusterPublishLoop: with a short grace a node's own publish loop
// keeps its record fresh enough that its writes are never refused as
// unpublished. (4 s, refused after 2 s without a record, and 3 s of
// writes: without the loop they would be; with a 1 s grace a busy CI
// machine's PostgreSQL sometimes took the 500 ms a record may be late.)
func TestClusterPublishLoop(t *testing.T) {
	cfg := clusterCfg
	cfg.NodeID, cfg.GCGrace = "node-a", 4*time.Second
	s := pgNodesWith(t, memblob.New(), cfg)[0]
	ctx := t.Context()
	if err := s.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = s.Run(rctx); close(done) }()
	defer func() { cancel(); <-done }()
	data := randBytes(2*testBlock, 5)
	var ok, refused int
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); {
		_, err := s.PutObject(ctx, "bkt", "k", PutInput{Size: int64(len(data))}, bytes.NewReader(data))
		switch {
		case err == nil:
			ok++
		case s3err.Is(err, s3err.ServiceUnavailable):
			refused++
		default:
			t.Fatal(err)
		}
	}
	if refused > 0 || ok == 0 {
		t.Errorf("grace 4s with the publish loop: %d writes, %d refused as unpublished", ok+refused, refused)
	}
}

// TestClusterDrainWaitsFreeDelay: a GC pass frees the garbage another
// node queued only once it is older than the longest free delay a live
// node published, the time that node's GETs may stream a dropped version.
func TestClusterDrainWaitsFreeDelay(t *testing.T) {
	var skew atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	cfgA := clusterCfg
	cfgA.NodeID, cfgA.Clock = "node-a", clock
	cfgB := clusterCfg
	cfgB.NodeID, cfgB.Clock, cfgB.SharedFreeDelay = "node-b", clock, 7*time.Minute
	nodes := pgNodesWith(t, memblob.New(), cfgA, cfgB)
	a, b := nodes[0], nodes[1]
	ctx := t.Context()
	for _, s := range nodes {
		if err := s.Publish(ctx); err != nil {
			t.Fatal(err)
		}
	}
	data := randBytes(2*testBlock, 6)
	if _, err := b.PutObject(ctx, "bkt", "k", PutInput{Size: int64(len(data))}, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.DeleteObject(ctx, "bkt", ObjectRef{Key: "k"}); err != nil {
		t.Fatal(err)
	}
	skew.Store(int64(3 * time.Second)) // past A's 2s grace, not B's 7m
	if st, err := a.GC(ctx, 0); err != nil || st.Deleted != 0 {
		t.Fatalf("a pass 3s after B's delete: %+v, %v; want nothing freed", st, err)
	}
	skew.Store(int64(7*time.Minute + time.Second))
	for _, s := range nodes {
		if err := s.Publish(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if st, err := a.GC(ctx, 0); err != nil || st.Deleted != 2 {
		t.Fatalf("a pass 7m after B's delete: %+v, %v; want its 2 blocks freed", st, err)
	}
}

// TestClusterFreeDelayUnread: a node that publishes but has not read the
// other nodes' records (the read failed) frees its garbage no sooner than
// its grace, not after its own free delay alone, which another node may
// have published longer.
func TestClusterFreeDelayUnread(t *testing.T) {
	cfg := clusterCfg
	cfg.NodeID, cfg.GCGrace, cfg.SharedFreeDelay = "node-a", time.Minute, 5*time.Second
	a := pgNodesWith(t, memblob.New(), cfg)[0]
	if d := a.freeDelay(); d != time.Minute {
		t.Errorf("before it read the records: prompt freeing waits %v, want the grace 1m", d)
	}
	if err := a.Publish(t.Context()); err != nil {
		t.Fatal(err)
	}
	if d := a.freeDelay(); d != 5*time.Second {
		t.Errorf("after it read the records: prompt freeing waits %v, want its own 5s", d)
	}
}
