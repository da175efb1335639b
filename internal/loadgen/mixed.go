package loadgen

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Operations of the mixed workload, in report order.
const (
	opGet = iota
	opPut
	opDelete
	opStat
	opList
	opPresign
	opBadSig
	opMultipart
	opConsoleSignIn
	opConsoleBuckets
	opConsoleObjects
	opConsoleDownload
	numOps
)

// opNames are the report names of the operations.
var opNames = [numOps]string{"GET", "PUT", "DELETE", "STAT", "LIST", "PRESIGNED-GET", "BAD-SIGNATURE", "MULTIPART",
	"CONSOLE-SIGN-IN", "CONSOLE-BUCKETS", "CONSOLE-OBJECTS", "CONSOLE-DOWNLOAD"}

// MixedConfig configures RunMixed. Zero fields other than the weights take
// the defaults of `coffer bench mixed`.
type MixedConfig struct {
	Size     int64         // object size; default 100 KiB
	Workers  int           // concurrent requests per target; default 16
	Duration time.Duration // measured time per target, split over Rounds; default 60 s
	Objects  int           // objects prepared before measuring; default 1000
	Rounds   int           // interleaved rounds (A B A B …); default 1
	Payload  Payload       // how uploads are signed; default DefaultPayload

	// Weights of the operations (percentages by convention). LIST is a
	// ListObjectsV2 of up to 1000 keys of the benchmark bucket.
	// PRESIGNED-GET is a GET through a presigned URL; BAD-SIGNATURE a GET
	// signed with a wrong secret, which succeeds when the target rejects
	// it with SignatureDoesNotMatch. MULTIPART uploads an object of Size in
	// parts of partSize(Size): create, upload the parts one after the
	// other, complete.
	Get, Put, Delete, Stat, List, PresignedGet, BadSignature, Multipart int
	// The console operations (see console.go) need every target's
	// ConsoleURL, ConsoleUser and ConsolePassword.
	ConsoleSignIn, ConsoleBuckets, ConsoleObjects, ConsoleDownload int

	Keep bool // leave the benchmark buckets and their objects in place

	// Label, if set, prefixes the progress lines (the case of `coffer
	// bench cases`).
	Label string

	// Progress receives a status line every second; TTY makes it one line
	// rewritten in place, otherwise a plain line is written every 5 s and
	// at the end of each round.
	Progress io.Writer
	TTY      bool

	// Profile, if set, captures CPU and allocation profiles over the
	// measured rounds of its target, and the heap and goroutines after
	// the last round.
	Profile *Profiler

	// Flood, if set, holds hostile connections open against each target
	// during its measured rounds (see Flood).
	Flood *Flood
}

// DefaultMixed returns the defaults of `coffer bench mixed`.
func DefaultMixed() MixedConfig {
	return MixedConfig{
		Size: 100 << 10, Workers: 16, Duration: 60 * time.Second, Objects: 1000, Rounds: 1,
		Payload: DefaultPayload,
		Get:     45, Put: 15, Delete: 10, Stat: 30,
	}
}

func (c MixedConfig) weights() [numOps]int {
	return [numOps]int{c.Get, c.Put, c.Delete, c.Stat, c.List, c.PresignedGet, c.BadSignature, c.Multipart,
		c.ConsoleSignIn, c.ConsoleBuckets, c.ConsoleObjects, c.ConsoleDownload}
}

func (c MixedConfig) totalWeight() int {
	n := 0
	for _, w := range c.weights() {
		n += w
	}
	return n
}

func (c MixedConfig) validate() error {
	w := c.weights()
	switch {
	case c.Size < 0:
		return errors.New("size must not be negative")
	case c.Workers < 1:
		return errors.New("workers must be at least 1")
	case c.Duration < time.Second:
		return errors.New("duration must be at least 1s")
	case c.Objects < 1:
		return errors.New("objects must be at least 1")
	case c.Rounds < 1:
		return errors.New("rounds must be at least 1")
	case c.Duration/time.Duration(c.Rounds) < time.Second:
		return errors.New("duration per round must be at least 1s")
	case slices.Min(w[:]) < 0:
		return errors.New("operation weights must not be negative")
	case c.totalWeight() == 0:
		return errors.New("at least one operation weight must be positive")
	}
	return nil
}

// console reports whether c measures any console operation.
func (c MixedConfig) console() bool {
	w := c.weights()
	for op, n := range w {
		if n > 0 && isConsoleOp(op) {
			return true
		}
	}
	return false
}

// worker is one worker's share of a target: the keys it owns and its
// buffers. Keys are partitioned between workers so that no GET or STAT can
// meet a key another worker is deleting: no operation fails by design, and
// the hot path takes no lock.
type worker struct {
	keys []string
	seq  int
	rng  *rand.Rand
	buf  []byte
	hist [numOps]Histogram
	byts [numOps]int64
	errs map[string]int64 // by op name + "/" + code
	// session is the worker's console session cookie, for the console
	// pages; "" unless the run measures them.
	session string
}

// targetRun is the state of one target across rounds.
type targetRun struct {
	c       *client
	bucket  string
	size    int64 // object size of multipart uploads
	workers []*worker
	series  [numOps][]int64
	ops     [numOps]int64
	elapsed time.Duration
	cpu     time.Duration
}

// RunMixed runs the mixed workload against every target: it creates a
// bucket per target (the preflight request: bad credentials or an
// unreachable target fail here), prepares cfg.Objects objects, then runs
// cfg.Rounds rounds interleaving the targets, and removes the buckets
// unless cfg.Keep, also when ctx ends early. It fails if a target answers
// more than half of the requests of a round with errors. If only the
// clean-up fails, it returns the results together with the error.
func RunMixed(ctx context.Context, cfg MixedConfig, targets []Target) (res *Results, err error) {
	return run(ctx, "mixed", cfg, targets)
}

// RunSingle runs one operation alone: op is get, put, delete, stat, list,
// presigned-get, bad-signature, multipart, console-sign-in,
// console-buckets, console-objects or console-download, and cfg's weights
// are ignored. A worker that has deleted all of its objects PUTs a new
// one, which shows as PUT operations.
func RunSingle(ctx context.Context, op string, cfg MixedConfig, targets []Target) (*Results, error) {
	cfg.Get, cfg.Put, cfg.Delete, cfg.Stat, cfg.List, cfg.PresignedGet, cfg.BadSignature, cfg.Multipart = 0, 0, 0, 0, 0, 0, 0, 0
	cfg.ConsoleSignIn, cfg.ConsoleBuckets, cfg.ConsoleObjects, cfg.ConsoleDownload = 0, 0, 0, 0
	switch op {
	case "console-sign-in":
		cfg.ConsoleSignIn = 100
	case "console-buckets":
		cfg.ConsoleBuckets = 100
	case "console-objects":
		cfg.ConsoleObjects = 100
	case "console-download":
		cfg.ConsoleDownload = 100
	case "multipart":
		cfg.Multipart = 100
	case "presigned-get":
		cfg.PresignedGet = 100
	case "bad-signature":
		cfg.BadSignature = 100
	case "get":
		cfg.Get = 100
	case "put":
		cfg.Put = 100
	case "delete":
		cfg.Delete = 100
	case "stat":
		cfg.Stat = 100
	case "list":
		cfg.List = 100
	default:
		return nil, fmt.Errorf("unknown operation %q", op)
	}
	return run(ctx, op, cfg, targets)
}

// run implements RunMixed and RunSingle.
func run(ctx context.Context, workload string, cfg MixedConfig, targets []Target) (res *Results, err error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if len(targets) == 0 {
		return nil, errors.New("no target")
	}
	seen := map[string]bool{}
	for _, t := range targets {
		if seen[t.Name] {
			return nil, fmt.Errorf("target name %q used twice", t.Name)
		}
		seen[t.Name] = true
		if cfg.console() && t.ConsoleURL == "" {
			return nil, fmt.Errorf("target %s has no console (console_url, console_user and console_password in the targets file)", t.Name)
		}
	}
	var prof *profiling
	profiled := 0 // index of the profiled target
	if cfg.Profile != nil {
		if name := cfg.Profile.Target; name != "" {
			profiled = slices.IndexFunc(targets, func(t Target) bool { return t.Name == name })
			if profiled < 0 {
				return nil, fmt.Errorf("profile: %q is not one of the targets", name)
			}
		}
		if err := cfg.Profile.check(ctx); err != nil {
			return nil, err
		}
		prof = &profiling{p: cfg.Profile}
	}
	// Multipart uploads send one part-sized payload repeatedly; the other
	// objects (prepared ones included) are then part-sized too.
	payload := make([]byte, cfg.Size)
	if cfg.Multipart > 0 {
		payload = make([]byte, min(partSize(cfg.Size), cfg.Size))
	}
	_, _ = crand.Read(payload) // never fails
	if cfg.Payload == "" {
		cfg.Payload = DefaultPayload
	}
	if _, err := ParsePayload(string(cfg.Payload)); err != nil {
		return nil, err
	}
	sums := newPayloadSums(cfg.Payload, payload)

	started := time.Now().UTC()
	var runs []*targetRun
	defer func() {
		// Clean up with a context of its own: ctx may be the one that ended.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		for _, r := range runs {
			if !cfg.Keep {
				if cerr := r.cleanup(cctx, cfg.Workers); cerr != nil {
					err = errors.Join(err, fmt.Errorf("target %s: clean up bucket %s: %w", r.c.t.Name, r.bucket, cerr))
				}
			}
			r.c.close()
		}
	}()
	for _, t := range targets {
		r := &targetRun{c: newClient(t, cfg.Workers, sums), bucket: "coffer-bench-" + randomHex(6), size: cfg.Size}
		if _, err := r.c.do(ctx, http.MethodPut, "/"+r.bucket, "", nil, make([]byte, 512)); err != nil {
			r.c.close()
			return nil, fmt.Errorf("target %s (%s): create bucket: %w", t.Name, t.URL, unusable{err})
		}
		runs = append(runs, r)
		if err := r.prepare(ctx, cfg, payload); err != nil {
			return nil, fmt.Errorf("target %s (%s): prepare objects: %w", t.Name, t.URL, err)
		}
		if cfg.console() {
			if err := r.signIn(ctx); err != nil {
				return nil, fmt.Errorf("target %s (%s): console sign-in: %w", t.Name, t.ConsoleURL, err)
			}
		}
	}
	per := cfg.Duration / time.Duration(cfg.Rounds)
	for round := range cfg.Rounds {
		for i, r := range runs {
			label := fmt.Sprintf("%s round %d/%d", r.c.t.Name, round+1, cfg.Rounds)
			if cfg.Label != "" {
				label = cfg.Label + ": " + label
			}
			var capture *roundCapture
			if prof != nil && i == profiled {
				capture = prof.start(ctx, per)
			}
			var stopFlood func()
			if cfg.Flood != nil {
				var ferr error
				if stopFlood, ferr = cfg.Flood.start(ctx, r.c.t.URL); ferr != nil {
					return nil, ferr
				}
			}
			err := r.round(ctx, cfg, per, payload, label)
			if stopFlood != nil {
				stopFlood()
			}
			if capture != nil {
				if err != nil {
					capture.abort()
				} else {
					err = prof.finish(capture)
				}
			}
			if err != nil {
				return nil, fmt.Errorf("target %s (%s): %w", r.c.t.Name, r.c.t.URL, err)
			}
		}
	}
	if prof != nil {
		if err := prof.write(ctx); err != nil {
			return nil, err
		}
	}
	res = &Results{Version: ResultsVersion, Workload: workload, Started: started, Config: runConfig(cfg)}
	for _, r := range runs {
		res.Targets = append(res.Targets, r.result(cfg.weights()))
	}
	return res, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = crand.Read(b)
	return hex.EncodeToString(b)
}

// prepare creates cfg.Objects objects, spread over the workers' key sets.
func (r *targetRun) prepare(ctx context.Context, cfg MixedConfig, payload []byte) error {
	r.workers = make([]*worker, cfg.Workers)
	for i := range r.workers {
		r.workers[i] = &worker{
			rng:  rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
			buf:  make([]byte, 64<<10),
			errs: map[string]int64{},
		}
	}
	var wg sync.WaitGroup
	errc := make(chan error, cfg.Workers)
	for i, w := range r.workers {
		n := cfg.Objects / cfg.Workers
		if i < cfg.Objects%cfg.Workers {
			n++
		}
		wg.Go(func() {
			for range n {
				key := w.newKey(i)
				if _, err := r.c.upload(ctx, "/"+r.bucket+"/"+key, "", payload, w.buf); err != nil {
					errc <- err
					return
				}
				w.keys = append(w.keys, key)
			}
		})
	}
	wg.Wait()
	close(errc)
	return <-errc
}

// signIn gives every worker a console session.
func (r *targetRun) signIn(ctx context.Context) error {
	for _, w := range r.workers {
		s, err := r.c.consoleSignIn(ctx)
		if err != nil {
			return err
		}
		w.session = s
	}
	return nil
}

func (w *worker) newKey(id int) string {
	w.seq++
	return "obj-" + strconv.Itoa(id) + "-" + strconv.Itoa(w.seq)
}

// errUnusable marks the failure of a run's first request to a target,
// CreateBucket: the target cannot be reached or rejects the credentials,
// and every further run against it would fail the same way.
var errUnusable = errors.New("target unusable")

// unusable wraps an error of a target's first request; it matches
// errUnusable and unwraps to its cause.
type unusable struct{ err error }

func (u unusable) Error() string   { return u.err.Error() }
func (u unusable) Unwrap() []error { return []error{u.err, errUnusable} }

// errTooManyErrors ends a round in which most requests fail.
var errTooManyErrors = errors.New("more than half of the requests failed")

// round runs the workload against r for d.
func (r *targetRun) round(ctx context.Context, cfg MixedConfig, d time.Duration, payload []byte, label string) error {
	var live [numOps]atomic.Int64
	var liveErrs atomic.Int64
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	weights := cfg.weights()
	total := cfg.totalWeight()
	cpu0 := cpuTime()
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for i, w := range r.workers {
		wg.Go(func() {
			for rctx.Err() == nil && time.Now().Before(deadline) {
				op := pickOp(w.rng.IntN(total), weights)
				if len(w.keys) == 0 && op != opPut && op != opList && (!isConsoleOp(op) || op == opConsoleDownload) {
					op = opPut
				}
				err := r.one(rctx, w, i, op, payload)
				if err != nil {
					if rctx.Err() != nil {
						return
					}
					w.errs[opNames[op]+"/"+errCode(err)]++
					liveErrs.Add(1)
					continue
				}
				live[op].Add(1)
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var last [numOps]int64
	var lastTotal int64
	var series [numOps][]int64
	sec := 0
	window := func() int64 {
		sec++
		var now int64
		for op := range numOps {
			n := live[op].Load()
			series[op] = append(series[op], n-last[op])
			last[op] = n
			now += n
		}
		return now
	}
loop:
	for {
		select {
		case <-done:
			// The last whole second may end before its tick fires.
			if time.Since(start) >= time.Duration(sec+1)*time.Second {
				now := window()
				r.progress(cfg, label, sec, now, now-lastTotal, liveErrs.Load())
			}
			break loop
		case <-tick.C:
			now := window()
			errs := liveErrs.Load()
			if errs >= 20 && errs > now {
				cancel(errTooManyErrors)
			}
			r.progress(cfg, label, sec, now, now-lastTotal, errs)
			lastTotal = now
		}
	}
	elapsed := time.Since(start)
	r.cpu += cpuTime() - cpu0
	if cfg.Progress != nil {
		if cfg.TTY {
			fmt.Fprintln(cfg.Progress)
		} else {
			var ops int64
			for op := range numOps {
				ops += live[op].Load()
			}
			fmt.Fprintf(cfg.Progress, "%s: done in %.1fs  ops %d  errors %d\n", label, elapsed.Seconds(), ops, liveErrs.Load())
		}
	}
	if err := context.Cause(rctx); err != nil {
		if errors.Is(err, errTooManyErrors) {
			return fmt.Errorf("%w: %s", err, r.errSummary())
		}
		return err
	}
	var ops, errs int64
	for op := range numOps {
		r.ops[op] += live[op].Load()
		r.series[op] = append(r.series[op], series[op]...)
		ops += live[op].Load()
	}
	errs = liveErrs.Load()
	r.elapsed += elapsed
	if errs > ops {
		return fmt.Errorf("%w: %s", errTooManyErrors, r.errSummary())
	}
	return nil
}

// errSummary lists the error counts of all workers.
func (r *targetRun) errSummary() string {
	m := r.errCounts()
	s := ""
	for _, k := range sortedKeys(m) {
		if s != "" {
			s += ", "
		}
		s += fmt.Sprintf("%s ×%d", k, m[k])
	}
	return s
}

func (r *targetRun) errCounts() map[string]int64 {
	m := map[string]int64{}
	for _, w := range r.workers {
		for k, n := range w.errs {
			m[k] += n
		}
	}
	return m
}

func (r *targetRun) progress(cfg MixedConfig, label string, sec int, ops, cur, errs int64) {
	if cfg.Progress == nil {
		return
	}
	line := fmt.Sprintf("%s: %3ds  ops %d  %d ops/s  errors %d", label, sec, ops, cur, errs)
	if cfg.TTY {
		fmt.Fprintf(cfg.Progress, "\r\033[K%s", line)
	} else if sec%5 == 0 {
		fmt.Fprintln(cfg.Progress, line)
	}
}

// pickOp maps n in [0, sum(weights)) to an operation.
func pickOp(n int, weights [numOps]int) int {
	for op, w := range weights {
		if n < w {
			return op
		}
		n -= w
	}
	return opGet
}

// one runs op for worker w (number id) and records its latency on success.
func (r *targetRun) one(ctx context.Context, w *worker, id, op int, payload []byte) error {
	var (
		key string
		idx int
	)
	switch op {
	case opPut, opMultipart:
		key = w.newKey(id)
	case opList, opConsoleSignIn, opConsoleBuckets, opConsoleObjects:
	default:
		idx = w.rng.IntN(len(w.keys))
		key = w.keys[idx]
	}
	path := "/" + r.bucket + "/" + key
	start := time.Now()
	var (
		n   int64
		err error
	)
	switch op {
	case opGet:
		n, err = r.c.do(ctx, http.MethodGet, path, "", nil, w.buf)
	case opPut:
		_, err = r.c.upload(ctx, path, "", payload, w.buf)
		n = int64(len(payload))
	case opDelete:
		_, err = r.c.do(ctx, http.MethodDelete, path, "", nil, w.buf)
	case opStat:
		_, err = r.c.do(ctx, http.MethodHead, path, "", nil, w.buf)
	case opList:
		n, err = r.c.do(ctx, http.MethodGet, "/"+r.bucket, "list-type=2&max-keys=1000", nil, w.buf)
	case opPresign:
		n, err = r.c.presignedGet(ctx, path, w.buf)
	case opMultipart:
		err = r.c.multipart(ctx, path, r.size, payload, w.buf)
		n = r.size
	case opConsoleSignIn:
		_, err = r.c.consoleSignIn(ctx)
	case opConsoleBuckets, opConsoleObjects, opConsoleDownload:
		n, err = r.c.consoleGet(ctx, w.session, consolePath(op, r.bucket, key), w.buf)
	case opBadSig:
		_, err = r.c.doAs(ctx, r.c.badSigner, http.MethodGet, path, "", nil, w.buf)
		if oe, ok := errors.AsType[*opError](err); ok && oe.Code == "SignatureDoesNotMatch" {
			err = nil
		} else if err == nil {
			err = &opError{Code: "BadSignatureAccepted", Message: "a request with a wrong signature succeeded"}
		}
	}
	lat := time.Since(start)
	if err != nil {
		return err
	}
	w.hist[op].Record(lat)
	w.byts[op] += n
	switch op {
	case opPut, opMultipart:
		w.keys = append(w.keys, key)
	case opDelete:
		last := len(w.keys) - 1
		w.keys[idx] = w.keys[last]
		w.keys = w.keys[:last]
	}
	return nil
}

// cleanup deletes every object in the bucket (found by listing, so that
// objects of interrupted requests go too) and then the bucket.
func (r *targetRun) cleanup(ctx context.Context, workers int) error {
	for {
		// Each pass lists from the start: the previous page is gone.
		p, err := r.c.list(ctx, r.bucket, "")
		if err != nil {
			return err
		}
		if err := r.deleteKeys(ctx, p.Keys, workers); err != nil {
			return err
		}
		if !p.Truncated || len(p.Keys) == 0 {
			break
		}
	}
	_, err := r.c.do(ctx, http.MethodDelete, "/"+r.bucket, "", nil, make([]byte, 512))
	return err
}

// deleteKeys deletes keys from the bucket with up to workers requests at
// once and returns the first error.
func (r *targetRun) deleteKeys(ctx context.Context, keys []string, workers int) error {
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs error
	)
	for range min(workers, len(keys)) {
		wg.Go(func() {
			buf := make([]byte, 4<<10)
			for i := next.Add(1) - 1; i < int64(len(keys)); i = next.Add(1) - 1 {
				if _, err := r.c.do(ctx, http.MethodDelete, "/"+r.bucket+"/"+keys[i], "", nil, buf); err != nil {
					mu.Lock()
					if errs == nil {
						errs = err
					}
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return errs
}
