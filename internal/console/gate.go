package console

import (
	"context"
	"errors"
	"runtime"
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
	released atomic.Int64 // password checks done, for collectGarbage
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

// release frees a slot acquire took, after a garbage collection every
// slots checks. Each argon2id hash leaves its memory cost (19 MiB) behind
// as garbage, and left to the runtime's pace (a collection once the heap
// doubles) a storm of sign-ins took the server's peak RSS from 55 to
// 150–205 MiB (120–130 with the collections); collecting once per round
// of hashes, before the slot is given back, keeps about one round's
// memory as garbage at most, for a few milliseconds of CPU per round of
// hashes that take tens.
func (g *gate) release() {
	if g.released.Add(1)%int64(cap(g.slots)) == 0 {
		runtime.GC()
	}
	<-g.slots
}
