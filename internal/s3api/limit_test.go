package s3api

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/coffer-s3/coffer/internal/s3err"
)

// TestRequestLimit checks the admission of requests: with one slot and a
// queue of one, a request waits while the slot is taken, one more is
// answered 503 SlowDown with Retry-After at once, the waiting one gets the
// same after the queue wait, and everything is served again once the slot
// is free.
func TestRequestLimit(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, Config{MaxRequests: 1, MaxQueued: 1, QueueWait: 300 * time.Millisecond})
	hs.mkBucket("lim")
	hs.put("lim", "k", []byte("v"))

	// A PUT whose body is slow to come holds the only slot.
	pr, pw := io.Pipe()
	slow := hs.request(call{method: "PUT", path: "/lim/slow", body: make([]byte, 5), payload: "UNSIGNED-PAYLOAD"})
	slow.Body = pr
	slowDone := make(chan reply, 1)
	go func() { slowDone <- hs.send(slow) }()
	waitFor(t, func() bool { return hs.h.Load().InFlight == 1 })

	queuedDone := make(chan reply, 1)
	go func() { queuedDone <- hs.do(call{method: "GET", path: "/lim/k"}) }()
	waitFor(t, func() bool { return hs.h.Load().Queued == 1 })

	start := time.Now()
	rp := hs.do(call{method: "GET", path: "/lim/k"})
	rp.want(t, http.StatusServiceUnavailable, s3err.SlowDown)
	if time.Since(start) > 200*time.Millisecond {
		t.Errorf("a request past the queue waited %v, want an answer at once", time.Since(start))
	}
	if rp.header.Get("Retry-After") != "1" {
		t.Errorf("SlowDown without Retry-After: %v", rp.header)
	}
	(<-queuedDone).want(t, http.StatusServiceUnavailable, s3err.SlowDown)
	if st := hs.h.Load(); st.Refused != 2 || st.Queued != 0 || st.InFlight != 1 {
		t.Errorf("Load = %+v, want 2 refused, none queued, 1 in flight", st)
	}

	pw.Write([]byte("hello"))
	pw.Close()
	(<-slowDone).mustStatus(t, http.StatusOK)
	if got := hs.do(call{method: "GET", path: "/lim/slow"}).mustStatus(t, http.StatusOK); string(got.body) != "hello" {
		t.Errorf("GET after the slot was freed = %q", got.body)
	}
	if st := hs.h.Load(); st.InFlight != 0 {
		t.Errorf("Load after all answered = %+v", st)
	}
}

// waitFor polls cond for up to 5 seconds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
	}
}
