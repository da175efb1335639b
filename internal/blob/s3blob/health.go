package s3blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/coffer-s3/coffer/internal/blob"
)

// Kinds of upstream error, as blob.UnavailableError and Stats name them.
// All but KindRejected make the upstream unavailable.
const (
	KindConnect     = "connect"      // the connection was refused or could not be made
	KindDNS         = "dns"          // the endpoint's name did not resolve
	KindTimeout     = "timeout"      // no answer, or no progress, within Config.Timeout
	KindReset       = "reset"        // the connection broke mid-request
	KindServerError = "server_error" // a 5xx answer, after the retries
	KindThrottled   = "throttled"    // 503 SlowDown or 429, after the retries
	// KindRejected is a 4xx answer other than a missing key or range: a
	// misconfiguration (credentials, policy, bucket) or a request the
	// upstream does not support. It is an error, not an outage.
	KindRejected = "rejected"
)

// ErrorKinds lists every kind Stats counts, in a fixed order.
var ErrorKinds = [...]string{KindConnect, KindDNS, KindTimeout, KindReset, KindServerError, KindThrottled, KindRejected}

// errStalled is the cause of an attempt the Store cancelled because the
// upstream made no progress within Config.Timeout.
var errStalled = errors.New("s3blob: upstream made no progress within the timeout")

// stalled returns err, an error of a request the Store cancelled because
// the upstream stalled it, as an error wrapping errStalled but not the
// context.Canceled or DeadlineExceeded in err: those would say that the
// caller went away (the S3 layer then answers nothing), which it did not.
func stalled(err error) error {
	return fmt.Errorf("%w: %v", errStalled, err)
}

// checkKeyName is the key Check looks up: it never exists, since it is not a
// valid blob key for Put (checkKey refuses upper case).
const checkKeyName = "s3blob-probe/READY"

// defaultTimeout is Config.Timeout's default.
const defaultTimeout = 10 * time.Second

// classify returns the kind of an upstream error, and whether it makes the
// upstream unavailable (transient: the same request may succeed later).
// A missing key or range and errors that did not come from the upstream
// (a context of the caller's, a body) are kind "".
func classify(err error) (kind string, unavailable bool) {
	switch status := statusOf(err); {
	case status == http.StatusServiceUnavailable && codeOf(err) == "SlowDown", status == http.StatusTooManyRequests:
		return KindThrottled, true
	case status >= 500:
		return KindServerError, true
	case status == http.StatusNotFound && isNotFound(err), status == http.StatusRequestedRangeNotSatisfiable:
		return "", false
	case status >= 400:
		return KindRejected, false
	case status != 0:
		return "", false
	}
	if errors.Is(err, errStalled) {
		return KindTimeout, true
	}
	if _, ok := errors.AsType[*net.DNSError](err); ok {
		return KindDNS, true
	}
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		return KindTimeout, true
	}
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH) {
		return KindConnect, true
	}
	if oe, ok := errors.AsType[*net.OpError](err); ok && oe.Op == "dial" {
		return KindConnect, true
	}
	if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
		return KindReset, true
	}
	return "", false
}

// health is what the Store knows of the upstream's state, from every
// request's outcome and from Check.
type health struct {
	errs [len(ErrorKinds)]atomic.Uint64 // by ErrorKinds index

	mu    sync.Mutex // guards down, kind, since
	down  bool
	kind  string
	since time.Time

	probing atomic.Bool // a data request is finding out whether an unavailable upstream is back (gate)
}

// gate admits a request for block data (Get, Put). While the upstream is
// reachable every request goes, with the retries. While it is known to be
// unavailable one request at a time goes, with one attempt, to find out
// whether it is back (a success, or Check, ends the outage); the others
// fail at once with the outage's *blob.UnavailableError (503 and
// Retry-After to the client) instead of each waiting out every attempt's
// Timeout and the backoff between — about 33 s for a frozen upstream at
// the defaults — while holding one of the server's request slots (reads
// go on after their client left: a dozen abandoned GETs a second kept
// every slot, so that even requests for inline objects were refused). A
// probe calls done when it has its answer.
func (s *Store) gate() (probe bool, done func(), err error) {
	h := &s.health
	h.mu.Lock()
	down, kind, since := h.down, h.kind, h.since
	h.mu.Unlock()
	if !down {
		return false, func() {}, nil
	}
	if h.probing.CompareAndSwap(false, true) {
		return true, func() { h.probing.Store(false) }, nil
	}
	return false, nil, &blob.UnavailableError{Kind: kind,
		Err: fmt.Errorf("unavailable since %s; another request is finding out whether it is back", since.UTC().Format(time.RFC3339))}
}

// upstreamErr classifies err, an error of a request to the upstream made
// under ctx, counts it, and marks the upstream unavailable if it says so:
// the error returned then wraps a *blob.UnavailableError. A nil err marks
// the upstream available. An error after ctx ended is the caller's doing,
// and is returned unchanged.
func (s *Store) upstreamErr(ctx context.Context, err error) error {
	if err == nil {
		s.markUp(ctx)
		return nil
	}
	if ctx.Err() != nil {
		return err
	}
	kind, unavailable := classify(err)
	if kind == "" {
		if errors.Is(err, blob.ErrNotFound) {
			s.markUp(ctx) // the upstream answered
		}
		return err
	}
	for i, k := range ErrorKinds {
		if k == kind {
			s.health.errs[i].Add(1)
		}
	}
	if !unavailable {
		return err
	}
	s.markDown(ctx, kind, err)
	if errors.Is(err, blob.ErrUnavailable) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		// A timeout of the transport's (net/http's matches
		// DeadlineExceeded) or a cancellation of the Store's: not the
		// caller's, whose ctx is live, so not to be taken for it.
		err = errors.New(err.Error())
	}
	return &blob.UnavailableError{Kind: kind, Err: err}
}

func (s *Store) markUp(ctx context.Context) {
	h := &s.health
	h.mu.Lock()
	was, since := h.down, h.since
	h.down = false
	h.mu.Unlock()
	if was {
		s.log.InfoContext(ctx, "upstream block store reachable again",
			"endpoint", s.endpoint, "bucket", s.bucket, "down_for", time.Since(since).Round(time.Millisecond))
	}
}

func (s *Store) markDown(ctx context.Context, kind string, err error) {
	h := &s.health
	h.mu.Lock()
	was := h.down
	h.down, h.kind = true, kind
	if !was {
		h.since = time.Now()
	}
	h.mu.Unlock()
	if !was {
		// Once per outage: every request meets it until it ends, and
		// each answers 503.
		s.log.WarnContext(ctx, "upstream block store unavailable; writes and reads of block data answer 503 until it returns",
			"endpoint", s.endpoint, "bucket", s.bucket, "kind", kind, "err", err)
	}
}

// Stats are the Store's counters since New.
type Stats struct {
	// Errors counts failed upstream requests by kind (ErrorKinds), after
	// the retries: one per request the Store gave up on.
	Errors map[string]uint64
}

// Stats returns the Store's counters.
func (s *Store) Stats() Stats {
	st := Stats{Errors: make(map[string]uint64, len(ErrorKinds))}
	for i, k := range ErrorKinds {
		st.Errors[k] = s.health.errs[i].Load()
	}
	return st
}

// Check reports whether the upstream answers: one HeadObject of a key that
// never exists, without retries, within ctx and Config.Timeout (and at most
// checkTimeout, so that a readiness probe gets its answer in time). It
// returns nil when the upstream answered 404 (or 200), an error wrapping a
// *blob.UnavailableError when it cannot be reached, timed out or answered
// 5xx, and other errors (403: a misconfiguration) as they are. It updates
// the state the Store logs, so that the return of the upstream is noticed
// without a request from a client.
func (s *Store) Check(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, min(s.timeout, checkTimeout))
	defer cancel()
	_, err := s.client.HeadObject(cctx, &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: s.objectKey(checkKeyName)},
		func(o *s3.Options) { o.Retryer = aws.NopRetryer{} })
	if err != nil && ctx.Err() == nil && cctx.Err() != nil {
		err = stalled(err)
	}
	if err != nil && isNotFound(err) {
		err = nil
	}
	return s.upstreamErr(ctx, err)
}

// checkTimeout bounds Check, below the server's readiness timeout (2s).
const checkTimeout = 1500 * time.Millisecond

// stallReader is the body of a GetObject answer, read with a deadline: a
// Read that waits more than timeout for the upstream cancels the request
// (the connection is closed) and fails, counted as a timeout, instead of
// hanging. Time between Reads (a slow client) does not count.
type stallReader struct {
	rc      io.ReadCloser
	s       *Store
	ctx     context.Context // the caller's
	cancel  context.CancelCauseFunc
	timer   *time.Timer
	timeout time.Duration
	done    bool // an error was seen and reported
}

func (s *Store) newStallReader(ctx context.Context, rc io.ReadCloser, cancel context.CancelCauseFunc) *stallReader {
	t := time.AfterFunc(time.Hour, func() { cancel(errStalled) })
	t.Stop()
	return &stallReader{rc: rc, s: s, ctx: ctx, cancel: cancel, timer: t, timeout: s.timeout}
}

func (r *stallReader) Read(p []byte) (int, error) {
	r.timer.Reset(r.timeout)
	n, err := r.rc.Read(p)
	timedOut := !r.timer.Stop()
	if err != nil && err != io.EOF && !r.done {
		r.done = true
		if timedOut {
			err = stalled(err)
		}
		err = r.s.upstreamErr(r.ctx, err)
	}
	return n, err
}

func (r *stallReader) Close() error {
	r.timer.Stop()
	err := r.rc.Close()
	r.cancel(context.Canceled)
	return err
}
