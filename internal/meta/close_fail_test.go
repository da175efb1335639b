package meta

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestCreateFailsDuringClose: a flush whose table creation fails while
// the DB is closing parks for ever (failFS.openFailed) with Pebble's
// flush in progress: Close returns the failure at once instead of
// waiting its whole closeTimeout for a flush that never ends.
func TestCreateFailsDuringClose(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var on atomic.Bool
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	db, err := Open(Config{Dir: dir, FailWrite: func(path string) error {
		if !on.Load() || !strings.HasSuffix(path, ".sst") {
			return nil
		}
		select {
		case entered <- struct{}{}:
		default:
		}
		<-release
		return syscall.ENOSPC
	}})
	if err != nil {
		t.Fatal(err)
	}
	mustCreateBucket(t, db, "bkt")
	on.Store(true)
	value := make([]byte, 64<<10)
	var stop atomic.Bool
	wdone := make(chan struct{})
	go func() {
		defer close(wdone)
		for i := range 4096 {
			if stop.Load() {
				return
			}
			err := db.UpdateObject(ctx, "bkt", fmt.Sprintf("k%05d", i), testTime, func(*Object) (*Object, error) {
				return &Object{VersionID: "v", Size: int64(len(value)), Inline: value}, nil
			})
			if err != nil {
				return
			}
		}
	}()
	select {
	case <-entered:
	case <-time.After(20 * time.Second):
		t.Fatal("no flush started")
	}
	stop.Store(true)
	<-wdone // no write races with Close
	if err := db.Err(); err != nil {
		t.Fatalf("failed before Close: %v", err)
	}
	closed := make(chan error, 1)
	start := time.Now()
	go func() { closed <- db.Close() }()
	time.Sleep(100 * time.Millisecond)
	close(release) // the table's creation fails: ENOSPC
	err = <-closed
	if d := time.Since(start); d > 2*time.Second || !errors.Is(err, ErrFailed) || !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Close with a create failing during it = %v after %v, want the failure at once", err, d.Round(time.Millisecond))
	}
}
