package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coffer-s3/coffer/internal/blob"
	"github.com/coffer-s3/coffer/internal/diskspace"
	"github.com/coffer-s3/coffer/internal/meta"
)

// The health endpoints of the S3 listener. They live under the reserved
// /_coffer/ prefix, like the admin API: "_" is never in a bucket name, so
// they shadow no bucket, and on a virtual-hosted bucket the same paths are
// object keys. They need no authentication and reveal nothing but the
// names of the checks.
const (
	healthPrefix = "/_coffer/health/"
	livePath     = healthPrefix + "live"
	readyPath    = healthPrefix + "ready"
)

// Readiness probing.
const (
	// readyTimeout bounds one round of readiness checks. A check that has
	// not answered by then counts as failed ("timeout").
	readyTimeout = 2 * time.Second
	// readyCacheTTL is how long the result of a round answers further
	// probes: load balancers and orchestrators may probe often, and an
	// unauthenticated endpoint must not let anyone drive storage reads
	// at will.
	readyCacheTTL = time.Second
	// readyProbeBucket and readyProbeKey are what the checks read. Neither
	// can exist (bucket names have no "_"; the object service makes no
	// such blob key), so the reads are as cheap as reads get.
	readyProbeBucket = "_coffer-ready-probe"
	readyProbeKey    = "_coffer-ready-probe"
)

// Check results, as the readiness document reports them.
const (
	checkOK      = "ok"
	checkError   = "error"
	checkTimeout = "timeout"
	// checkFailed is the metadata check of a server whose metadata store
	// has failed (meta.DB.Err): for good, until the process exits.
	checkFailed = "failed"
)

// A check is one readiness condition: fn returns nil while the component
// it probes works.
type check struct {
	name string
	fn   func(ctx context.Context) error
	// busy is set while a call of fn runs. A call stuck past its timeout
	// (a read blocked on a hung disk ignores its context) keeps it set, so
	// later rounds report a timeout instead of piling up goroutines.
	busy atomic.Bool
}

// blockChecker is a block store that checks its backing service itself
// (s3blob: one HEAD without retries, bounded below readyTimeout, whose
// failure to reach the upstream is a blob.ErrUnavailable).
type blockChecker interface {
	Check(ctx context.Context) error
}

// storageChecks returns the readiness checks of st: the metadata store
// answers a read and makes a write durable (a tiny synced commit of a
// reserved key: at most one per readyCacheTTL, whoever probes), and the
// block store answers a lookup of an absent key (which reaches the disk, or
// an upstream store, without moving data). A full disk under the metadata
// fails the write, and with it the whole store (see readiness.storageErr).
func storageChecks(st *storage) []*check {
	blocks := func(ctx context.Context) error {
		rc, err := st.blobs.Get(ctx, readyProbeKey, 0, 0)
		if errors.Is(err, blob.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		return rc.Close()
	}
	if bc, ok := st.blobs.(blockChecker); ok {
		blocks = bc.Check
	}
	return []*check{
		{name: "metadata", fn: func(ctx context.Context) error {
			_, err := st.db.Bucket(ctx, readyProbeBucket)
			if errors.Is(err, meta.ErrNotFound) {
				return nil
			}
			return err
		}},
		{name: blocksCheck, fn: blocks},
		{name: "metadata_write", fn: st.db.ProbeWrite},
	}
}

// blocksCheck is the name of the block store's check.
const blocksCheck = "blocks"

// readyReport is the document the readiness endpoints answer with.
type readyReport struct {
	// Status is "ok", "degraded" (ready, but the upstream block store
	// cannot be reached: see Blocks), "unavailable" (a check failed),
	// "failed" (the metadata store failed: the server is stopping) or
	// "shutting down".
	Status string `json:"status"`
	// Failed names the checks that failed, in order.
	Failed []string `json:"failed,omitempty"`
	// Checks maps every check's name to ok, error or timeout; with Status
	// "failed", only metadata, to failed.
	Checks map[string]string `json:"checks,omitempty"`
	// Reason is why the metadata store failed, without file names ("no
	// space left on device"); set only with Status "failed".
	Reason string `json:"reason,omitempty"`
	// Disk is "ok", or "full: writes refused" while free space is below
	// the reserve (disk.reserve); absent with the reserve off. A full disk
	// leaves the server ready: reads, deletes (which make room) and
	// metadata changes still work, and a load balancer that took the only
	// node out would stop those too. Writes answer 507 StorageFull.
	Disk string `json:"disk,omitempty"`
	// Blocks is set, with Status "degraded", while the upstream block
	// store (gateway mode) cannot be reached: "unavailable (KIND)", KIND
	// one of s3blob's error kinds (connect, dns, timeout, reset,
	// server_error, throttled). That leaves the server ready, as a full
	// disk does: what needs no block (inline objects, HEAD, listings,
	// deletes, bucket and IAM changes) still works, and every node of a
	// cluster shares the upstream, so a load balancer that took them out
	// would gain nothing and stop those too. Writes of block data and
	// reads of block objects answer 503 ServiceUnavailable meanwhile.
	Blocks string `json:"blocks,omitempty"`

	errs []error // why each failed check failed, for the log only
}

func (rp *readyReport) ready() bool { return rp.Status == "ok" || rp.Status == "degraded" }

var shuttingDown = readyReport{Status: "shutting down"}

// failedReport is the readiness of a server whose metadata store failed
// with err: not ready, for good, whatever the checks say; the server stops.
func failedReport(err error) readyReport {
	reason := "storage engine error"
	if fe, ok := errors.AsType[*meta.FailedError](err); ok {
		reason = fe.Reason()
	}
	return readyReport{Status: "failed", Failed: []string{"metadata"}, Checks: map[string]string{"metadata": checkFailed},
		Reason: "metadata store failed: " + reason}
}

// readiness answers whether the server can serve: its checks pass and it is
// not shutting down. Concurrent probes share one round of checks, and a
// round's result is reused for readyCacheTTL.
type readiness struct {
	checks  []*check
	timeout time.Duration
	ttl     time.Duration
	log     *slog.Logger
	// storageErr, if not nil, is the metadata store's Err, read (one
	// atomic load) before anything else on every probe: once the store
	// has failed, every probe answers failedReport at once, uncached,
	// even while the server drains.
	storageErr func() error
	// space, if not nil, is the free-space reserve, whose state a report
	// shows (Disk) without making the server unready.
	space *diskspace.Guard

	draining atomic.Bool    // set by drain: answer "shutting down"
	wg       sync.WaitGroup // rounds and the check calls they started

	mu       sync.Mutex // guards last, lastAt, round, wasReady
	last     readyReport
	lastAt   time.Time
	round    *readyRound // the round running, nil if none
	wasReady bool
}

// A readyRound is one run of every check; done closes when report is set.
type readyRound struct {
	done   chan struct{}
	report readyReport
}

func newReadiness(checks []*check, log *slog.Logger) *readiness {
	return &readiness{checks: checks, timeout: readyTimeout, ttl: readyCacheTTL, log: log, wasReady: true}
}

// check returns the current readiness: a cached result, the result of the
// round running, or of a new one. It returns early, unready, if ctx ends.
func (rd *readiness) check(ctx context.Context) readyReport {
	if rd.storageErr != nil {
		if err := rd.storageErr(); err != nil {
			return failedReport(err)
		}
	}
	if rd.draining.Load() {
		return shuttingDown
	}
	rd.mu.Lock()
	if rd.draining.Load() {
		rd.mu.Unlock()
		return shuttingDown
	}
	if !rd.lastAt.IsZero() && time.Since(rd.lastAt) < rd.ttl {
		rp := rd.last
		rd.mu.Unlock()
		return rp
	}
	rnd := rd.round
	if rnd == nil {
		rnd = &readyRound{done: make(chan struct{})}
		rd.round = rnd
		rd.wg.Add(1) // under mu, after the draining check: drain's Wait sees it
		go rd.run(rnd)
	}
	rd.mu.Unlock()
	select {
	case <-rnd.done:
		return rnd.report
	case <-ctx.Done():
		return readyReport{Status: "unavailable"}
	}
}

// run runs every check once, concurrently, within rd.timeout, and
// publishes the report.
func (rd *readiness) run(rnd *readyRound) {
	defer rd.wg.Done()
	ctx, cancel := context.WithTimeout(context.Background(), rd.timeout)
	defer cancel()
	type result struct {
		i   int
		err error
	}
	results := make(chan result, len(rd.checks)) // never blocks a check
	errs := make([]error, len(rd.checks))
	done := make([]bool, len(rd.checks))
	running := 0
	for i, c := range rd.checks {
		if !c.busy.CompareAndSwap(false, true) {
			errs[i] = context.DeadlineExceeded // the previous call is still stuck
			done[i] = true
			continue
		}
		running++
		rd.wg.Add(1)
		go func() {
			defer rd.wg.Done()
			err := c.fn(ctx)
			c.busy.Store(false)
			results <- result{i, err}
		}()
	}
wait:
	for ; running > 0; running-- {
		select {
		case res := <-results:
			errs[res.i], done[res.i] = res.err, true
		case <-ctx.Done():
			break wait
		}
	}
	rp := readyReport{Status: "ok", Checks: make(map[string]string, len(rd.checks))}
	var blocksDown *blob.UnavailableError // the block store's upstream, if that is all that failed
	for i, c := range rd.checks {
		state := checkOK
		switch err := errs[i]; {
		case done[i] && errors.Is(err, blob.ErrUnavailable):
			// An upstream that timed out is unavailable, whatever
			// deadline the error also carries.
			state = checkError
			rp.errs = append(rp.errs, err)
		case !done[i] || errors.Is(err, context.DeadlineExceeded):
			state = checkTimeout
			if err == nil {
				err = context.DeadlineExceeded
			}
			rp.errs = append(rp.errs, err)
		case err != nil:
			state = checkError
			rp.errs = append(rp.errs, err)
		}
		rp.Checks[c.name] = state
		if state == checkOK {
			continue
		}
		rp.Failed = append(rp.Failed, c.name)
		if ue, ok := errors.AsType[*blob.UnavailableError](errs[i]); ok && c.name == blocksCheck && state == checkError {
			blocksDown = ue
			continue
		}
		rp.Status = "unavailable"
	}
	if blocksDown != nil && rp.Status == "ok" {
		rp.Status, rp.Blocks = "degraded", "unavailable ("+blocksDown.Kind+")"
	}
	if rd.space != nil {
		rp.Disk = "ok"
		if err := rd.space.Refresh(); err == nil {
			if st := rd.space.Stats(); st.FreeBytes < st.ReserveBytes {
				rp.Disk = "full: writes refused"
			}
		}
	}
	rd.mu.Lock()
	rd.last, rd.lastAt, rd.round = rp, time.Now(), nil
	changed := rp.ready() != rd.wasReady
	rd.wasReady = rp.ready()
	rd.mu.Unlock()
	rnd.report = rp
	close(rnd.done)
	if changed && !rp.ready() {
		rd.log.Warn("not ready", "failed", rp.Failed, "err", errors.Join(rp.errs...))
	} else if changed {
		rd.log.Info("ready again")
	}
}

// drain makes every later check answer "shutting down", so load balancers
// stop sending requests, and then waits (at most for timeout; not at all
// if timeout is 0) for the checks still running, so the storage they read
// can be closed.
func (rd *readiness) drain(timeout time.Duration) {
	rd.startDrain()
	if timeout <= 0 {
		return
	}
	done := make(chan struct{})
	go func() {
		rd.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(timeout):
		rd.log.Warn("readiness checks still running at shutdown")
	}
}

// startDrain makes every later check answer "shutting down" without
// waiting for anything.
func (rd *readiness) startDrain() {
	rd.mu.Lock()
	rd.draining.Store(true)
	rd.mu.Unlock()
}

// serveReady answers a readiness probe: 200 when ready, else 503, with
// the report.
func (rd *readiness) serveReady(w http.ResponseWriter, r *http.Request) {
	rp := rd.check(r.Context())
	status := http.StatusOK
	if !rp.ready() {
		status = http.StatusServiceUnavailable
	}
	writeHealth(w, r, status, &rp)
}

// liveReport is the whole liveness document: a process that can answer is
// alive. It stays so during shutdown, so an orchestrator does not kill a
// server that is draining.
var liveReport = readyReport{Status: "ok"}

// serveLive answers a liveness probe.
func serveLive(w http.ResponseWriter, r *http.Request) {
	writeHealth(w, r, http.StatusOK, &liveReport)
}

// writeHealth writes a health document (no body for HEAD), never cached.
func writeHealth(w http.ResponseWriter, r *http.Request, status int, rp *readyReport) {
	body, err := json.Marshal(rp)
	if err != nil { // unreachable: a struct of strings
		status, body = http.StatusInternalServerError, []byte(`{"status":"error"}`)
	}
	body = append(body, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// healthHandler serves the health endpoints of the S3 listener: GET and
// HEAD of livePath and readyPath.
func (rd *readiness) healthHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var serve http.HandlerFunc
		switch r.URL.Path {
		case livePath:
			serve = serveLive
		case readyPath:
			serve = rd.serveReady
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"status":"no such endpoint"}`+"\n")
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusMethodNotAllowed)
			_, _ = io.WriteString(w, `{"status":"method not allowed"}`+"\n")
			return
		}
		serve(w, r)
	})
}
