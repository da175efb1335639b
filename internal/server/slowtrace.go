package server

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"runtime/trace"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Bounds of a slow-request capture (GET /debug/pprof/slow on the pprof
// listener).
const (
	slowDefaultThreshold = 100 * time.Millisecond
	slowDefaultTimeout   = 60 * time.Second
	slowMaxTimeout       = 10 * time.Minute
	// The flight recorder keeps about this much of the most recent trace:
	// enough for a slow request and what led up to it, bounded in memory.
	slowWindow   = 5 * time.Second
	slowMaxBytes = 32 << 20
)

// slowTrace captures an execution trace around the first S3 request that
// takes longer than a threshold: the tool for a latency tail, which
// averages and CPU profiles hide. While a capture waits, a flight recorder
// (runtime/trace) keeps the last few seconds of the trace; the request
// wrapper reports every request's duration (observe), and the first slow
// one ends the wait and the window is written out, covering the request
// and what ran around it. Requests that start while a capture waits are
// trace tasks ("s3 GET", …), so that `go tool trace` lists their
// latencies and timelines.
type slowTrace struct {
	busy  sync.Mutex                // one capture at a time
	watch atomic.Pointer[slowWatch] // the capture waiting, or nil
}

type slowWatch struct {
	threshold time.Duration
	hit       chan slowHit // buffered: the first slow request
}

type slowHit struct {
	method, path string
	dur          time.Duration
}

// wrap reports every request's duration and, while a capture waits (the
// flight recorder runs only then), makes the request a trace task; at
// other times it costs a clock read and an atomic load.
func (st *slowTrace) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		if st.watch.Load() == nil {
			next.ServeHTTP(w, r)
		} else {
			ctx, task := trace.NewTask(r.Context(), "s3 "+r.Method)
			next.ServeHTTP(w, r.WithContext(ctx))
			task.End()
		}
		st.observe(r, time.Since(start))
	})
}

// observe reports a finished request to the capture waiting, if any.
func (st *slowTrace) observe(r *http.Request, d time.Duration) {
	w := st.watch.Load()
	if w == nil || d < w.threshold {
		return
	}
	select {
	case w.hit <- slowHit{method: r.Method, path: r.URL.Path, dur: d}:
	default: // another slow request was first
	}
}

// ServeHTTP answers GET /debug/pprof/slow?threshold=100ms&timeout=60s: it
// waits up to timeout for an S3 request slower than threshold and answers
// with the execution trace of the last few seconds (open it with `go tool
// trace`); 204 if none was that slow in time, 409 if another capture is
// running.
func (st *slowTrace) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	threshold, err := durationParam(r, "threshold", slowDefaultThreshold, time.Millisecond, slowMaxTimeout)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	timeout, err := durationParam(r, "timeout", slowDefaultTimeout, time.Second, slowMaxTimeout)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if !st.busy.TryLock() {
		http.Error(w, "another slow-request capture is running", http.StatusConflict)
		return
	}
	defer st.busy.Unlock()
	fr := trace.NewFlightRecorder(trace.FlightRecorderConfig{MinAge: slowWindow, MaxBytes: slowMaxBytes})
	if err := fr.Start(); err != nil {
		http.Error(w, "cannot start the flight recorder: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	defer fr.Stop()
	watch := &slowWatch{threshold: threshold, hit: make(chan slowHit, 1)}
	st.watch.Store(watch)
	defer st.watch.Store(nil)

	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	select {
	case hit := <-watch.hit:
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", `attachment; filename="slow.trace"`)
		// The path is escaped: a key may hold bytes a header cannot.
		w.Header().Set("X-Coffer-Slow-Request", fmt.Sprintf("%s %s %s", hit.method, (&url.URL{Path: hit.path}).EscapedPath(), hit.dur))
		_, _ = fr.WriteTo(w) // a client gone mid-write has nothing to be told
	case <-ctx.Done():
		if r.Context().Err() == nil {
			w.WriteHeader(http.StatusNoContent)
		}
	}
}

// durationParam parses the query parameter name as a Go duration within
// [lo, hi], or returns def when it is absent.
func durationParam(r *http.Request, name string, def, lo, hi time.Duration) (time.Duration, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < lo || d > hi {
		return 0, fmt.Errorf("%s=%s: want a duration from %v to %v", name, strconv.Quote(v), lo, hi)
	}
	return d, nil
}
