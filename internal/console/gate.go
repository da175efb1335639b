package console

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// errBusy means a sign-in found no hashing slot within the queue's
// deadline, or the queue full: the client should retry later (503).
var errBusy = errors.New("console: too many sign-ins in progress")

// gate bounds how many password checks run at once. Each argon2id hash
// takes its memory cost (19 MiB by default) for tens of milliseconds;
// running more at once than there are CPUs finishes none sooner and only
// adds memory, so a storm of sign-ins waits here, in a queue of bounded
// length for at most a deadline, and is then refused. Safe for
// concurrent use.
type gate struct {
	slots    chan struct{}
	wait     time.Duration
	maxQueue int64
	queued   atomic.Int64
}

func newGate(slots, maxQueue int, wait time.Duration) *gate {
	return &gate{slots: make(chan struct{}, slots), wait: wait, maxQueue: int64(maxQueue)}
}

// acquire takes a slot, waiting at most the gate's deadline. It returns
// errBusy if none came free in time or too many are waiting already, or
// ctx's error. A nil error must be followed by release.
func (g *gate) acquire(ctx context.Context) error {
	select {
	case g.slots <- struct{}{}:
		return nil
	default:
	}
	if g.queued.Add(1) > g.maxQueue {
		g.queued.Add(-1)
		return errBusy
	}
	defer g.queued.Add(-1)
	t := time.NewTimer(g.wait)
	defer t.Stop()
	select {
	case g.slots <- struct{}{}:
		return nil
	case <-t.C:
		return errBusy
	case <-ctx.Done():
		return ctx.Err()
	}
}

// release frees a slot acquire took.
func (g *gate) release() { <-g.slots }
