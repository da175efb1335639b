package console

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestGateBound runs many more sign-ins than slots at once and checks
// that no more than the slots ever run together, and that the others
// wait for their turn rather than fail while the deadline allows.
func TestGateBound(t *testing.T) {
	t.Parallel()
	const slots, callers = 2, 40
	g := newGate(slots, callers, 10*time.Second)
	var running, peak atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for range callers {
		wg.Go(func() {
			if err := g.acquire(t.Context()); err != nil {
				errs <- err
				return
			}
			defer g.release()
			n := running.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			time.Sleep(2 * time.Millisecond) // the hash
			running.Add(-1)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("acquire: %v", err)
	}
	if p := peak.Load(); p > slots || p < 1 {
		t.Errorf("%d ran at once, want at most %d", p, slots)
	}
}

func TestGateRefuses(t *testing.T) {
	t.Parallel()
	// A deadline long enough for the test to see the waiter queued on a
	// busy machine: with 20 ms the waiter could give up between two looks,
	// and the loop below waited for ever.
	const wait = time.Second
	g := newGate(1, 1, wait)
	if err := g.acquire(t.Context()); err != nil {
		t.Fatal(err)
	}
	// The slot is taken: one waiter may queue, until the deadline.
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- g.acquire(t.Context()) }()
	for g.queued.Load() == 0 {
		if time.Since(start) > wait/2 {
			t.Fatal("the waiter did not queue")
		}
		time.Sleep(time.Millisecond)
	}
	// The queue is full: refused at once.
	if err := g.acquire(t.Context()); !errors.Is(err, errBusy) {
		t.Errorf("acquire with a full queue = %v, want errBusy", err)
	}
	if err := <-done; !errors.Is(err, errBusy) || time.Since(start) < wait {
		t.Errorf("queued acquire = %v after %v, want errBusy after the deadline", err, time.Since(start))
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := g.acquire(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("acquire with a canceled context = %v", err)
	}
	g.release()
	if err := g.acquire(t.Context()); err != nil {
		t.Errorf("acquire after release: %v", err)
	}
}
