package meta

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"testing"
)

// TestHeapCacheBytes: with cgo Pebble's caches are off the Go heap and the
// figure is 0; without cgo (the static build) it covers the memtables that
// writes filled, so that the garbage collector's pacing leaves them out.
func TestHeapCacheBytes(t *testing.T) {
	db, err := Open(Config{Dir: t.TempDir()}) // unsynced: 200 commits
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			_ = db.Close()
		}
	}()
	p := db.kv.(*pebbleKV)
	val := make([]byte, 100_000)
	for i := range 200 {
		b := p.db.NewBatch()
		if err := b.Set(fmt.Appendf(nil, "zz-heap-test/%08d", i), val, nil); err != nil {
			t.Fatal(err)
		}
		if err := b.Commit(nil); err != nil {
			t.Fatal(err)
		}
	}
	got := db.HeapCacheBytes()
	if !cachesOnGoHeap {
		if got != 0 {
			t.Fatalf("HeapCacheBytes with cgo = %d, want 0", got)
		}
		return
	}
	// 20 MB written: the figure covers what Pebble holds on the heap —
	// nearly all of this test's live heap — give or take the one
	// memtable it counts for arenas freed but not yet collected.
	runtime.GC()
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(live)
	l := int64(live[0].Value.Uint64())
	if got < memTableSize || got < l-8<<20 || got > l+memTableSize+8<<20 {
		t.Fatalf("HeapCacheBytes = %d MiB after 20 MB of writes with %d MiB live, want within a memtable of it", got>>20, l>>20)
	}
	closed = true
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if got := db.HeapCacheBytes(); got != 0 {
		t.Fatalf("HeapCacheBytes after Close = %d, want 0", got)
	}
}
