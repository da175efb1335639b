package s3api

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/coffer-s3/coffer/internal/s3err"
)

// Defaults of the request limit (Config.MaxRequests, MaxQueued, QueueWait).
const (
	// DefaultMaxRequests is how many requests a Handler serves at once.
	// Each holds a goroutine and, while it moves data, a copy buffer; a
	// thousand fit in well under 100 MiB.
	DefaultMaxRequests = 1024
	// DefaultMaxQueued is how many more may wait for one of those.
	DefaultMaxQueued = 4096
	// DefaultQueueWait is the longest a request waits before it is
	// answered 503 SlowDown, as MinIO's requests_deadline.
	DefaultQueueWait = 10 * time.Second
	// retryAfter is the Retry-After of a SlowDown, in seconds.
	retryAfter = "1"
	// formShare: one form upload in this many requests may be reading its
	// fields at once (Handler.forms), and as many more wait: 128 of the
	// default 1,024 (each holding at most maxPostPreData, 64 KiB, of them
	// in memory) and 512 waiting, for at most QueueWait; but at least
	// minForms, or all requests if fewer, so that a small limit still
	// takes a few forms at once.
	formShare = 8
	minForms  = 8
)

// admission bounds the requests served at once: a slot is taken before a
// request is parsed, authenticated or has its body read, and given back
// when it has been answered. Past the slots, requests wait in a bounded
// queue for at most a set time; past the queue or the time they are
// answered 503 SlowDown with Retry-After, as S3 answers a request rate it
// will not take, instead of the server growing without bound. A nil
// *admission admits everything.
type admission struct {
	slots   chan struct{}
	maxWait int64
	wait    time.Duration

	waiting atomic.Int64 // requests in the queue now
	refused atomic.Int64 // requests answered SlowDown
}

func newAdmission(max, queued int, wait time.Duration) *admission {
	if max <= 0 {
		return nil
	}
	return &admission{slots: make(chan struct{}, max), maxWait: int64(queued), wait: wait}
}

// errSlowDown is what a request the admission refused is answered.
func errSlowDown() error {
	return s3err.New(s3err.SlowDown, "")
}

// acquire takes a slot, waiting in the queue if there is room in it, for
// at most a.wait or until ctx ends.
func (a *admission) acquire(ctx context.Context) error {
	if a == nil {
		return nil
	}
	select {
	case a.slots <- struct{}{}:
		return nil
	default:
	}
	if a.waiting.Add(1) > a.maxWait {
		a.waiting.Add(-1)
		a.refused.Add(1)
		return errSlowDown()
	}
	defer a.waiting.Add(-1)
	t := time.NewTimer(a.wait)
	defer t.Stop()
	select {
	case a.slots <- struct{}{}:
		return nil
	case <-t.C:
		a.refused.Add(1)
		return errSlowDown()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// enter is acquire answering as S3 does: a SlowDown gets its Retry-After.
func (a *admission) enter(w http.ResponseWriter, ctx context.Context) error {
	err := a.acquire(ctx)
	if s3err.Is(err, s3err.SlowDown) {
		w.Header().Set("Retry-After", retryAfter)
	}
	return err
}

// release gives back the slot acquire took.
func (a *admission) release() {
	if a != nil {
		<-a.slots
	}
}

// LoadStats are the request limit's figures.
type LoadStats struct {
	InFlight int   // requests holding a slot now
	Queued   int   // requests waiting for one
	Refused  int64 // requests answered SlowDown since start
}

// Load returns the request limit's figures (zero when there is none).
func (h *Handler) Load() LoadStats {
	a := h.admit
	if a == nil {
		return LoadStats{}
	}
	st := LoadStats{InFlight: len(a.slots), Queued: int(a.waiting.Load()), Refused: a.refused.Load()}
	if f := h.forms; f != nil {
		// Forms reading their fields hold no request slot but are served.
		st.InFlight += len(f.slots)
		st.Queued += int(f.waiting.Load())
		st.Refused += f.refused.Load()
	}
	return st
}
