package meta

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
)

// TestPostgresNodesSerialise runs read-decide-write cycles on one key from
// two DBs over one PostgreSQL schema, as two nodes would: their in-process
// locks know nothing of each other, so only the transactions' advisory
// locks keep increments from being lost and make If-None-Match exact.
func TestPostgresNodesSerialise(t *testing.T) {
	ctx := context.Background()
	pg := engines[1]
	place := pg.place(t)
	nodes := []*DB{pg.openAt(t, place), pg.openAt(t, place)}
	mustCreateBucket(t, nodes[0], "bkt")

	const writers, each = 8, 20
	var wg sync.WaitGroup
	for w := range writers {
		db := nodes[w%2]
		wg.Go(func() {
			for range each {
				err := db.UpdateObject(ctx, "bkt", "ctr", testTime, func(old *Object) (*Object, error) {
					n := int64(0)
					if old != nil {
						n = old.Size
					}
					return &Object{Size: n + 1}, nil
				})
				if err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if o, err := nodes[1].Object(ctx, "bkt", "ctr"); err != nil || o.Size != writers*each {
		t.Errorf("counter = %d, %v; want %d", o.Size, err, writers*each)
	}

	// Create-if-absent on both nodes at once: exactly one wins per key.
	errExists := errors.New("exists")
	for i := range 20 {
		key := fmt.Sprint("once", i)
		var wins sync.WaitGroup
		won := make(chan int, writers)
		for w := range writers {
			db := nodes[w%2]
			wins.Go(func() {
				err := db.UpdateObject(ctx, "bkt", key, testTime, func(old *Object) (*Object, error) {
					if old != nil {
						return nil, errExists
					}
					return &Object{Size: int64(w)}, nil
				})
				switch {
				case err == nil:
					won <- w
				case !errors.Is(err, errExists):
					t.Error(err)
				}
			})
		}
		wins.Wait()
		close(won)
		var winners []int
		for w := range won {
			winners = append(winners, w)
		}
		if len(winners) != 1 {
			t.Fatalf("%s: winners %v, want exactly one", key, winners)
		}
		if o, err := nodes[0].Object(ctx, "bkt", key); err != nil || o.Size != int64(winners[0]) {
			t.Errorf("%s = size %d, %v; want the winner's %d", key, o.Size, err, winners[0])
		}
	}
	bu, err := nodes[0].BucketUsage(ctx, "bkt")
	if err != nil || bu.Usage.Objects != 21 {
		t.Errorf("usage = %+v, %v; want 21 objects", bu.Usage, err)
	}
}
