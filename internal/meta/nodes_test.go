package meta

import (
	"errors"
	"testing"
	"time"
)

// TestNodes: node records round-trip, replace the node's earlier record,
// are deleted by ForgetNode only while unchanged, are left out of a
// migration's copy and digest, and a record that does not decode is an
// error (GC must not go on without it).
func TestNodes(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine) {
		ctx := t.Context()
		db := e.open(t)
		seen := time.Date(2026, 11, 29, 6, 0, 0, 123, time.UTC)
		a := NodeRecord{Node: "a1", Grace: time.Hour, FreeDelay: 5 * time.Minute, Seen: seen}
		b := NodeRecord{Node: "b2", Grace: 2 * time.Hour, FreeDelay: time.Minute, Seen: seen}
		for _, r := range []NodeRecord{a, b, {Node: "a1", Grace: 3 * time.Hour, Seen: seen.Add(time.Minute)}} {
			if err := db.PutNode(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		ns, err := db.Nodes(ctx)
		same := func(x, y NodeRecord) bool {
			return x.Node == y.Node && x.Grace == y.Grace && x.FreeDelay == y.FreeDelay && x.Seen.Equal(y.Seen)
		}
		if err != nil || len(ns) != 2 || !same(ns[0], NodeRecord{Node: "a1", Grace: 3 * time.Hour, Seen: seen.Add(time.Minute)}) || !same(ns[1], b) {
			t.Fatalf("Nodes = %+v, %v", ns, err)
		}
		// ForgetNode deletes a record only as it was read: a1 published
		// again since is kept, b2 goes.
		if err := db.PutNode(ctx, a); err != nil {
			t.Fatal(err)
		}
		for _, r := range ns {
			if err := db.ForgetNode(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		if ns, err = db.Nodes(ctx); err != nil || len(ns) != 1 || !same(ns[0], a) {
			t.Fatalf("after forgetting b2 and an old a1: %+v, %v", ns, err)
		}
		if err := db.ForgetNode(ctx, a); err == nil {
			t.Error("ForgetNode of a record Nodes did not return succeeded")
		}
		if err := db.PutNode(ctx, NodeRecord{Grace: time.Hour}); err == nil {
			t.Error("a record without a node ID was stored")
		}
		if !copySkip(tableNodes) {
			t.Error("node records are copied by a migration")
		}
		b2 := db.kv.newBatch()
		b2.set(nodeKey("bad"), []byte("{"))
		if err := b2.commit(true); err != nil {
			t.Fatal(err)
		}
		b2.close()
		if _, err := db.Nodes(ctx); !errors.Is(err, errCorrupt) {
			t.Errorf("Nodes with a record that does not decode: %v", err)
		}
	})
}
