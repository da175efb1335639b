package meta

import (
	"fmt"
	"sync"
	"testing"
)

func TestStoreID(t *testing.T) { forEachEngine(t, testStoreID) }

// testStoreID checks that a store gets an ID when first opened, keeps it
// across opens, gets one on the first open after an upgrade (a store
// written before store IDs), and that another store has another; and that
// the ID is no record: neither HasRecords nor Digest see it.
func testStoreID(t *testing.T, e engine) {
	ctx := t.Context()
	place := e.place(t)
	db := e.openAt(t, place)
	id := db.StoreID()
	if !validStoreID([]byte(id)) {
		t.Fatalf("StoreID() = %q, want 32 lowercase hex digits", id)
	}
	if has, err := db.HasRecords(ctx); err != nil || has {
		t.Errorf("HasRecords of a new store = %v, %v; want false", has, err)
	}
	if d, err := db.Digest(ctx); err != nil || len(d) != 0 {
		t.Errorf("Digest of a new store = %v, %v; want none", d, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = e.openAt(t, place)
	if got := db.StoreID(); got != id {
		t.Errorf("StoreID() after reopening = %q, want %q", got, id)
	}
	if other := e.open(t).StoreID(); other == id {
		t.Errorf("two stores have one ID %q", id)
	}

	// A store written before store IDs: the first open makes one.
	b := db.kv.newBatch()
	b.delete(storeIDKey)
	if err := b.commit(true); err != nil {
		t.Fatal(err)
	}
	b.close()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = e.openAt(t, place)
	upgraded := db.StoreID()
	if !validStoreID([]byte(upgraded)) || upgraded == id {
		t.Errorf("StoreID() after the upgrade = %q, want a new valid ID", upgraded)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if got := e.openAt(t, place).StoreID(); got != upgraded {
		t.Errorf("StoreID() after the upgrade and a reopen = %q, want %q", got, upgraded)
	}
}

// TestStoreIDSharedPostgres opens one new PostgreSQL database from several
// nodes at once: they all read the one ID the first of them made. Opens
// are staggered by the schema lock, so the nodes then also make the ID of
// a database without one all at the same moment (loadStoreID, as Open
// calls it), which only the transaction's lock keeps to one ID.
func TestStoreIDSharedPostgres(t *testing.T) {
	e := engines[1]
	if e.name != EnginePostgres {
		t.Fatalf("engines[1] is %s", e.name)
	}
	place := e.place(t)
	const nodes = 6
	dbs := make([]*DB, nodes)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Go(func() {
			db, err := Open(e.config(place))
			if err != nil {
				t.Errorf("Open: %v", err)
				return
			}
			t.Cleanup(func() { _ = db.Close() })
			dbs[i] = db
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	checkOneID := func(when string) {
		t.Helper()
		for i, db := range dbs {
			if id := db.StoreID(); id != dbs[0].StoreID() || !validStoreID([]byte(id)) {
				t.Fatalf("%s: node %d has store ID %q, node 0 %q", when, i, id, dbs[0].StoreID())
			}
		}
	}
	checkOneID("after opening")

	for round := range 5 {
		b := dbs[0].kv.newBatch()
		b.delete(storeIDKey)
		if err := b.commit(true); err != nil {
			t.Fatal(err)
		}
		b.close()
		start := make(chan struct{})
		for _, db := range dbs {
			wg.Go(func() {
				<-start
				if err := db.loadStoreID(t.Context()); err != nil {
					t.Errorf("loadStoreID: %v", err)
				}
			})
		}
		close(start)
		wg.Wait()
		checkOneID(fmt.Sprintf("round %d of making the ID at once", round))
	}
}
