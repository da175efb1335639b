package meta

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// addToUsage merges d into bucket's stored usage, as a bug would: the
// records stay as they are.
func addToUsage(t *testing.T, db *DB, bucket string, d Usage) {
	t.Helper()
	b := db.kv.newBatch()
	defer b.close()
	b.merge(usageKey(nil, bucket), appendUsage(nil, d))
	if err := b.commit(true); err != nil {
		t.Fatal(err)
	}
}

// hasKey reports whether db holds key k.
func hasKey(t *testing.T, db *DB, k []byte) bool {
	t.Helper()
	_, err := db.kv.get(k, nil)
	if err != nil && !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	return err == nil
}

// Two repairs of one bucket that both count it before either merges add
// the difference once, without the lease that runs repairs one at a time
// (a holder whose lease connection dropped, with PostgreSQL, has lost it
// unawares): the one to merge second finds that the bucket's repair
// generation moved since its snapshot.
func TestUsageRepairsCountedTogether(t *testing.T) { forEachEngine(t, testUsageRepairsCountedTogether) }

func testUsageRepairsCountedTogether(t *testing.T, e engine) {
	ctx := context.Background()
	place := e.place(t)
	db := e.openAt(t, place)
	other := db // another node of the cluster, with PostgreSQL
	if e.name == EnginePostgres {
		other = e.openAt(t, place)
	}
	mustCreateBucket(t, db, "bkt")
	putObject(t, db, "bkt", "k", Object{VersionID: "v", Size: 3, Inline: []byte("abc")})
	addToUsage(t, db, "bkt", Usage{Objects: 1000})

	// Neither repair merges before both have counted.
	var counted sync.WaitGroup
	counted.Add(2)
	both := make(chan struct{})
	go func() { counted.Wait(); close(both) }()
	testHookRepairWindow = func(string) {
		counted.Done()
		select {
		case <-both:
		case <-time.After(10 * time.Second):
			t.Errorf("the other repair did not count within 10 s")
		}
	}
	t.Cleanup(func() { testHookRepairWindow = nil })
	// Nor do their merges overlap: each waits where a second, were it not
	// held off, would find the generation it counted at too.
	var merging atomic.Int32
	testHookRepairMerge = func(string) {
		if merging.Add(1) > 1 {
			t.Errorf("two merges of one bucket found its repair generation unchanged at once")
		}
		time.Sleep(500 * time.Millisecond)
		merging.Add(-1)
	}
	t.Cleanup(func() { testHookRepairMerge = nil })
	fixed := make(chan bool, 2)
	var wg sync.WaitGroup
	for _, node := range []*DB{db, other} {
		wg.Go(func() {
			// correctUsage, not CheckUsage: without the lease.
			f, err := node.correctUsage(ctx, "bkt")
			if err != nil {
				t.Errorf("correctUsage: %v", err)
			}
			fixed <- f
		})
	}
	wg.Wait()
	close(fixed)
	n := 0
	for f := range fixed {
		if f {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d of two repairs that counted together reported a change, want 1", n)
	}
	if diff := cmp.Diff(map[string]Usage{"bkt": {Objects: 1, Bytes: 3}}, dbUsage(t, db)); diff != "" {
		t.Errorf("usage after two repairs that counted together (-want +got):\n%s", diff)
	}
	checkClean(t, db)
}

// A repair that counted a bucket before its usage was reset (set from a
// count: the repair of a value that does not decode) adds nothing: the
// reset made the usage right, and the difference counted before it is
// gone with the old value.
func TestUsageRepairBeforeReset(t *testing.T) { forEachEngine(t, testUsageRepairBeforeReset) }

func testUsageRepairBeforeReset(t *testing.T, e engine) {
	ctx := context.Background()
	db := e.open(t)
	mustCreateBucket(t, db, "bkt")
	putObject(t, db, "bkt", "k", Object{VersionID: "v", Size: 3, Inline: []byte("abc")})
	addToUsage(t, db, "bkt", Usage{Objects: 1000})
	testHookRepairWindow = func(bucket string) {
		testHookRepairWindow = nil // once: resetUsage passes here too
		if fixed, err := db.resetUsage(ctx, bucket); err != nil || !fixed {
			t.Errorf("resetUsage = %v, %v; want a change", fixed, err)
		}
	}
	t.Cleanup(func() { testHookRepairWindow = nil })
	if fixed, err := db.correctUsage(ctx, "bkt"); err != nil || fixed {
		t.Errorf("correctUsage that counted before a reset = %v, %v; want no change", fixed, err)
	}
	if diff := cmp.Diff(map[string]Usage{"bkt": {Objects: 1, Bytes: 3}}, dbUsage(t, db)); diff != "" {
		t.Errorf("usage after a reset and a repair that counted before it (-want +got):\n%s", diff)
	}
	checkClean(t, db)
}

// A bucket's repair generation, which a repair writes, is not taken for
// usage by the check, and goes with the bucket: with DeleteBucket, and
// with the usage of a bucket that does not exist.
func TestUsageRepairGenerationGoes(t *testing.T) { forEachEngine(t, testUsageRepairGenerationGoes) }

func testUsageRepairGenerationGoes(t *testing.T, e engine) {
	ctx := context.Background()
	db := e.open(t)
	mustCreateBucket(t, db, "bkt")
	addToUsage(t, db, "bkt", Usage{Objects: 1000})
	if c, err := db.CheckUsage(ctx, true); err != nil || c.Repaired != 1 {
		t.Fatalf("CheckUsage = %+v, %v; want one repair", c, err)
	}
	if !hasKey(t, db, repairGenKey("bkt")) {
		t.Fatal("no repair generation after a repair")
	}
	checkClean(t, db)
	if diff := cmp.Diff(map[string]Usage{"bkt": {}}, dbUsage(t, db)); diff != "" {
		t.Errorf("usage after a repair (-want +got):\n%s", diff)
	}
	if err := db.DeleteBucket(ctx, "bkt", testTime); err != nil {
		t.Fatal(err)
	}
	if hasKey(t, db, repairGenKey("bkt")) {
		t.Error("DeleteBucket left the repair generation behind")
	}

	b := db.kv.newBatch()
	b.set(usageKey(nil, "ghost"), appendUsage(nil, Usage{Objects: 1}))
	b.set(repairGenKey("ghost"), nextRepairGen(nil))
	if err := b.commit(true); err != nil {
		t.Fatal(err)
	}
	b.close()
	if c, err := db.CheckUsage(ctx, true); err != nil || c.Repaired != 1 {
		t.Fatalf("CheckUsage = %+v, %v; want the usage of a bucket that does not exist deleted", c, err)
	}
	if hasKey(t, db, repairGenKey("ghost")) {
		t.Error("the repair generation of a bucket that does not exist outlived its usage")
	}
	checkClean(t, db)
}
