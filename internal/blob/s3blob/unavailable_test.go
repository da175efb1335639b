package s3blob_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coffer-s3/coffer/internal/blob"
	"github.com/coffer-s3/coffer/internal/blob/s3blob"
)

// TestUnavailable checks how the store reports an upstream that fails:
// refusing connections, answering 5xx or SlowDown, hanging (before the
// answer, while taking a Put's body, in the middle of a Get's body) are
// blob.ErrUnavailable, each of its kind and within the bound that
// Config.Timeout and the retries set; a 403 is not. The store works again
// once the upstream does, and counts what failed.
func TestUnavailable(t *testing.T) {
	t.Parallel()
	u := startUpstream(t)
	bucket := u.newBucket(t)

	const timeout = 300 * time.Millisecond
	// Attempts × timeout, plus the backoff before attempt 2 (< 1s),
	// plus a second for a loaded machine.
	const bound = 2*timeout + 3*time.Second

	// release unblocks hanging handlers before the proxy's server closes
	// (cleanups run last first).
	release := make(chan struct{})
	var releaseOnce sync.Once
	p := startProxy(t, u)
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
	hang := func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}

	logs := &syncBuffer{}
	cfg := u.config(bucket, u.prefix())
	cfg.Endpoint = p.endpoint
	cfg.Timeout = timeout
	cfg.MaxAttempts = 2
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	s := newStore(t, cfg)
	ctx := t.Context()
	data := pattern(7, 256<<10)
	if err := s.Put(ctx, "keep/a", bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatalf("Put before the outage: %v", err)
	}

	for _, tc := range []struct {
		name     string
		hook     func(w http.ResponseWriter, r *http.Request) bool
		size     int64 // of the Put
		wantKind string
	}{
		{name: "internal error", size: 1 << 10, wantKind: s3blob.KindServerError,
			hook: func(w http.ResponseWriter, r *http.Request) bool {
				writeS3Error(w, http.StatusInternalServerError, "InternalError", "We encountered an internal error.")
				return true
			}},
		{name: "slow down", size: 1 << 10, wantKind: s3blob.KindThrottled,
			hook: func(w http.ResponseWriter, r *http.Request) bool {
				writeS3Error(w, http.StatusServiceUnavailable, "SlowDown", "Please reduce your request rate.")
				return true
			}},
		{name: "no answer", size: 1 << 10, wantKind: s3blob.KindTimeout,
			hook: func(w http.ResponseWriter, r *http.Request) bool {
				io.Copy(io.Discard, r.Body)
				hang(w, r)
				return true
			}},
		{name: "body not taken", size: 16 << 20, wantKind: s3blob.KindTimeout,
			hook: func(w http.ResponseWriter, r *http.Request) bool {
				// Take a little of the body (which also answers 100
				// Continue), then stop reading, as a stopped process
				// would: the store's writes block once the socket
				// buffers are full.
				io.CopyN(io.Discard, r.Body, 64<<10)
				hang(w, r)
				return true
			}},
		{name: "connection dropped", size: 1 << 10, wantKind: s3blob.KindReset,
			hook: func(w http.ResponseWriter, r *http.Request) bool {
				conn, _, err := http.NewResponseController(w).Hijack()
				if err == nil {
					conn.Close()
				}
				return true
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p.setHook(tc.hook)
			defer p.setHook(nil)
			before := s.Stats().Errors[tc.wantKind]
			big := pattern(8, tc.size)
			start := time.Now()
			err := s.Put(ctx, "down/"+strings.ReplaceAll(tc.name, " ", "-"), bytes.NewReader(big), int64(len(big)))
			wantDown(t, "Put", err, tc.wantKind, time.Since(start), bound)
			start = time.Now()
			rc, err := s.Get(ctx, "keep/a", 0, -1)
			if err == nil {
				rc.Close()
			}
			wantDown(t, "Get", err, tc.wantKind, time.Since(start), bound)
			start = time.Now()
			err = s.Check(ctx)
			checkKind := tc.wantKind
			if checkKind == s3blob.KindThrottled {
				checkKind = s3blob.KindServerError // a 503 to HEAD has no body to say SlowDown
			}
			wantDown(t, "Check", err, checkKind, time.Since(start), bound)
			if got := s.Stats().Errors[tc.wantKind] - before; got < 2 {
				t.Errorf("Stats().Errors[%s] grew by %d, want at least 2 (Put and Get)", tc.wantKind, got)
			}
		})
	}

	t.Run("stall mid body", func(t *testing.T) {
		p.setHook(func(w http.ResponseWriter, r *http.Request) bool {
			if r.Method != http.MethodGet {
				return false
			}
			w.Header().Set("Content-Length", "262144")
			w.WriteHeader(http.StatusOK)
			w.Write(data[:1000])
			http.NewResponseController(w).Flush()
			hang(w, r)
			return true
		})
		defer p.setHook(nil)
		rc, err := s.Get(ctx, "keep/a", 0, -1)
		if err != nil {
			t.Fatalf("Get whose body stalls = %v, want a reader", err)
		}
		defer rc.Close()
		start := time.Now()
		_, err = io.ReadAll(rc)
		wantDown(t, "reading a stalled Get body", err, s3blob.KindTimeout, time.Since(start), bound)
	})

	t.Run("stall mid list", func(t *testing.T) {
		// A listing whose answer starts and then stops: the SDK reads
		// the page whole, so without a deadline of its own List (and a GC
		// pass) would wait for ever.
		p.setHook(func(w http.ResponseWriter, r *http.Request) bool {
			if r.Method != http.MethodGet || !r.URL.Query().Has("list-type") {
				return false
			}
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>`)
			http.NewResponseController(w).Flush()
			hang(w, r)
			return true
		})
		defer p.setHook(nil)
		start := time.Now()
		err := s.List(ctx, "keep/", func(string) error { return nil })
		wantDown(t, "List whose body stalls", err, s3blob.KindTimeout, time.Since(start), bound+2*4*time.Second)
	})

	t.Run("refused", func(t *testing.T) {
		// A store opened through a relay that then goes away: nothing
		// listens on its port, so connections are refused.
		fwd := startForwarder(t, p.endpoint)
		rcfg := cfg
		rcfg.Endpoint = fwd.endpoint
		rs := newStore(t, rcfg)
		fwd.stop()
		start := time.Now()
		err := rs.Put(ctx, "down/refused", bytes.NewReader(data), int64(len(data)))
		wantDown(t, "Put", err, s3blob.KindConnect, time.Since(start), bound)
		start = time.Now()
		_, err = rs.Get(ctx, "keep/a", 0, -1)
		wantDown(t, "Get", err, s3blob.KindConnect, time.Since(start), bound)
		err = rs.Check(ctx)
		wantDown(t, "Check", err, s3blob.KindConnect, 0, bound)
	})

	t.Run("forbidden", func(t *testing.T) {
		p.setHook(func(w http.ResponseWriter, r *http.Request) bool {
			writeS3Error(w, http.StatusForbidden, "AccessDenied", "Access Denied")
			return true
		})
		defer p.setHook(nil)
		before := s.Stats().Errors[s3blob.KindRejected]
		err := s.Put(ctx, "down/forbidden", bytes.NewReader(data), int64(len(data)))
		if err == nil || errors.Is(err, blob.ErrUnavailable) || !strings.Contains(err.Error(), "AccessDenied") {
			t.Errorf("Put answered 403 = %v, want the upstream's AccessDenied, not ErrUnavailable", err)
		}
		if _, err := s.Get(ctx, "keep/a", 0, -1); err == nil || errors.Is(err, blob.ErrUnavailable) {
			t.Errorf("Get answered 403 = %v, want an error that is not ErrUnavailable", err)
		}
		if got := s.Stats().Errors[s3blob.KindRejected] - before; got != 2 {
			t.Errorf("Stats().Errors[rejected] grew by %d, want 2", got)
		}
	})

	// The upstream is back: the store works, and says so once.
	if err := s.Check(ctx); err != nil {
		t.Fatalf("Check after the outage: %v", err)
	}
	if got := readAll(t, s, "keep/a", 0, -1); !bytes.Equal(got, data) {
		t.Errorf("Get after the outage returned %d bytes that differ", len(got))
	}
	if err := s.Put(ctx, "keep/b", bytes.NewReader(data), int64(len(data))); err != nil {
		t.Errorf("Put after the outage: %v", err)
	}
	l := logs.String()
	if !strings.Contains(l, "upstream block store unavailable") || !strings.Contains(l, "upstream block store reachable again") {
		t.Errorf("log does not report the outage and its end:\n%s", tail(l, 4<<10))
	}
}

// wantDown fails unless err wraps a *blob.UnavailableError of kind, and
// took at most bound (0: not checked).
func wantDown(t *testing.T, what string, err error, kind string, took, bound time.Duration) {
	t.Helper()
	ue, ok := errors.AsType[*blob.UnavailableError](err)
	switch {
	case !ok || !errors.Is(err, blob.ErrUnavailable):
		t.Errorf("%s = %v, want blob.ErrUnavailable (%s)", what, err, kind)
	case ue.Kind != kind:
		t.Errorf("%s = %v, kind %q, want %q", what, err, ue.Kind, kind)
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		// The S3 layer would take it for a client that went away.
		t.Errorf("%s = %v, which wraps a context error though the caller's context is live", what, err)
	}
	if took > bound {
		t.Errorf("%s took %v to fail, more than %v", what, took.Round(time.Millisecond), bound)
	}
}

// forwarder is a TCP relay to an endpoint that can be stopped, so that a
// store opened through it finds its port closed.
type forwarder struct {
	endpoint string
	stop     func() // closes the listener and every relayed connection
}

// startForwarder relays connections to the host:port of endpoint.
func startForwarder(t *testing.T, endpoint string) *forwarder {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	target := strings.TrimPrefix(endpoint, "http://")
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	var once sync.Once
	f := &forwarder{endpoint: "http://" + l.Addr().String(), stop: func() {
		once.Do(func() {
			cancel()
			l.Close()
			wg.Wait()
		})
	}}
	t.Cleanup(f.stop)
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				var d net.Dialer
				up, err := d.DialContext(ctx, "tcp", target)
				if err != nil {
					return
				}
				defer up.Close()
				stop := context.AfterFunc(ctx, func() { c.Close(); up.Close() })
				defer stop()
				var cw sync.WaitGroup
				cw.Go(func() { io.Copy(up, c); up.Close() })
				io.Copy(c, up)
				c.Close()
				cw.Wait()
			})
		}
	})
	return f
}

// TestUnavailableFailsFast: once the upstream is known to be unavailable,
// one request at a time finds out whether it is back, with one attempt;
// the others fail at once with the outage instead of each waiting out
// every attempt's timeout (about 33 s at the defaults, holding a request
// slot of the server meanwhile). A probe that succeeds ends the outage.
func TestUnavailableFailsFast(t *testing.T) {
	t.Parallel()
	u := startUpstream(t)
	bucket := u.newBucket(t)
	const timeout = 300 * time.Millisecond
	release := make(chan struct{})
	var releaseOnce sync.Once
	p := startProxy(t, u)
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
	cfg := u.config(bucket, u.prefix())
	cfg.Endpoint = p.endpoint
	cfg.Timeout = timeout
	cfg.MaxAttempts = 3
	s := newStore(t, cfg)
	ctx := t.Context()
	var requests atomic.Int64
	p.setHook(func(w http.ResponseWriter, r *http.Request) bool {
		requests.Add(1)
		select { // a frozen upstream
		case <-release:
		case <-r.Context().Done():
		}
		return true
	})
	if _, err := s.Get(ctx, "k", 0, -1); !errors.Is(err, blob.ErrUnavailable) {
		t.Fatalf("Get from a frozen upstream = %v, want ErrUnavailable", err)
	}
	if n := requests.Load(); n != 3 {
		t.Fatalf("%d attempts while reachable, want 3", n)
	}
	// Down: a probe (one attempt) and, meanwhile, requests that fail at once.
	probed := make(chan error, 1)
	before := requests.Load()
	go func() {
		_, err := s.Get(ctx, "k", 0, -1)
		probed <- err
	}()
	for requests.Load() == before {
		time.Sleep(time.Millisecond)
	}
	for range 5 {
		start := time.Now()
		_, err := s.Get(ctx, "other", 0, -1)
		wantDown(t, "Get during a probe", err, s3blob.KindTimeout, time.Since(start), 50*time.Millisecond)
		start = time.Now()
		err = s.Put(ctx, "other", bytes.NewReader([]byte("x")), 1)
		wantDown(t, "Put during a probe", err, s3blob.KindTimeout, time.Since(start), 50*time.Millisecond)
	}
	wantDown(t, "the probe", <-probed, s3blob.KindTimeout, 0, time.Hour)
	if n := requests.Load() - before; n != 1 {
		t.Errorf("%d upstream requests while down, want the probe's one attempt", n)
	}
	// Back: the next request is a probe that succeeds, and ends the outage.
	p.setHook(nil)
	data := []byte("back")
	if err := s.Put(ctx, "k", bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatalf("Put once the upstream is back: %v", err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if got := readAll(t, s, "k", 0, -1); !bytes.Equal(got, data) {
				t.Errorf("Get after the outage: %q", got)
			}
		})
	}
	wg.Wait()
}
