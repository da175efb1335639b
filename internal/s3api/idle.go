package s3api

import (
	"io"
	"net/http"
	"time"
)

// Defaults of the body timeouts (Config.BodyIdleTimeout, drainTimeout).
const (
	// DefaultBodyIdleTimeout is how long a request body may send nothing
	// before the request fails with RequestTimeout. S3 gives up on a
	// stalled upload after about 20 s.
	DefaultBodyIdleTimeout = 20 * time.Second
	// drainTimeout bounds the time writeError spends discarding the body of
	// a request it refuses, whatever the client does.
	drainTimeout = 2 * time.Second
	// strangerDrainTimeout is drainTimeout for a request without a
	// verified identity: time for what it already sent to arrive, not for
	// a body it has not sent (a stranger could otherwise hold a
	// connection for drainTimeout with every request).
	strangerDrainTimeout = 100 * time.Millisecond
	// DefaultFormFieldsTimeout is Config.FormFieldsTimeout's default:
	// time for 64 KiB of fields at 6.5 KB/s.
	DefaultFormFieldsTimeout = 10 * time.Second
)

// idleBody is a request body with a progress deadline: the connection's
// read deadline is kept at most idle after the last read that returned
// data (moved forward at most every idle/4, so that a fast upload pays for
// it rarely), so a client that stops sending fails the read with a
// timeout (RequestTimeout) instead of holding a goroutine, a connection
// and buffers forever. Reads after final use a fixed deadline.
type idleBody struct {
	rc    io.ReadCloser
	w     http.ResponseWriter // for the deadline, through http.ResponseController
	ctl   *http.ResponseController
	idle  time.Duration
	set   time.Time // when the deadline was last moved; zero before
	fixed bool      // final set a deadline that reads no longer move
	// limit, when not zero, caps every deadline (until): the time a
	// stranger's bytes may take as a whole, whatever their pace.
	limit time.Time
	// started reports that the body was read: for a request with
	// "Expect: 100-continue", net/http has asked the client for it.
	started bool
}

// start sets the first deadline, when the request arrives: a body that is
// never read (an op that fails before reading it) is bounded too, since
// net/http reads what is left of it before the answer goes out.
func (b *idleBody) start() {
	if b.idle > 0 {
		b.set = time.Now()
		b.deadline(b.set.Add(b.idle))
	}
}

// Read implements io.Reader.
func (b *idleBody) Read(p []byte) (int, error) {
	b.started = true
	if !b.fixed && b.idle > 0 {
		// The wall clock, not the Handler's: deadlines are real time.
		if now := time.Now(); now.Sub(b.set) >= b.idle/4 {
			b.deadline(now.Add(b.idle))
			b.set = now
		}
	}
	return b.rc.Read(p)
}

// Close implements io.Closer.
func (b *idleBody) Close() error { return b.rc.Close() }

// final fixes the read deadline at d from now, for the reads that are left
// (draining a refused request's body, and net/http's own discard after
// the handler).
func (b *idleBody) final(d time.Duration) {
	b.fixed = true
	b.deadline(time.Now().Add(d))
}

// until caps the read deadline at t, however the body progresses, and
// applies it now; a zero t lifts the cap. postObject bounds the form
// fields it must read before it can check their signature so: a stranger
// sending a byte every few seconds would otherwise hold a request slot
// for as long as it likes.
func (b *idleBody) until(t time.Time) {
	b.limit = t
	if b.fixed {
		return
	}
	now := time.Now()
	b.set = now
	switch {
	case b.idle > 0:
		b.deadline(now.Add(b.idle))
	default:
		b.deadline(t) // zero: none
	}
}

func (b *idleBody) deadline(t time.Time) {
	if !b.limit.IsZero() && (t.IsZero() || t.After(b.limit)) {
		t = b.limit
	}
	if b.ctl == nil {
		b.ctl = http.NewResponseController(b.w)
	}
	// A writer without deadlines (a test recorder) has no connection to
	// hold: nothing to bound.
	_ = b.ctl.SetReadDeadline(t)
}
