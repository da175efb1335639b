package server

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coffer-s3/coffer/internal/adminapi"
	"github.com/coffer-s3/coffer/internal/config"
	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/meta"
)

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a logger
// and the reads of a test.
type syncBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func testConfig(t *testing.T) config.Config {
	t.Helper()
	c := config.Default()
	c.StoragePath = t.TempDir()
	c.Address = "127.0.0.1:0"
	c.ConsoleAddress = "127.0.0.1:0"
	c.ShutdownTimeout = 10 * time.Second
	c.Root = iam.Config{RootAccessKey: "TESTROOTKEY", RootSecretKey: "test-root-secret"}
	return c
}

func testLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// start creates a server for cfg and runs it until the test ends. The
// returned function stops it and returns Run's error.
func start(t *testing.T, cfg config.Config, log *slog.Logger) (*Server, func() error) {
	t.Helper()
	return startWith(t, cfg, log, testHooks{})
}

// startWith is start with hooks.
func startWith(t *testing.T, cfg config.Config, log *slog.Logger, h testHooks) (*Server, func() error) {
	t.Helper()
	s, err := newServer(cfg, log, io.Discard, h)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	var once sync.Once
	var runErr error
	stop := func() error {
		once.Do(func() {
			cancel()
			select {
			case runErr = <-done:
			case <-time.After(30 * time.Second):
				runErr = errors.New("Run did not return within 30s of cancel")
			}
		})
		return runErr
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return s, stop
}

// client returns an HTTP client of its own (never http.DefaultClient or
// its transport). Without keep-alives no connection is dialed and left
// unused, which http.Server.Shutdown would wait 5 s for.
func client() *http.Client {
	return &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := client().Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: read body: %v", url, err)
	}
	return resp.StatusCode, string(body)
}

func TestServeAnonymousIsDenied(t *testing.T) {
	t.Parallel()
	s, stop := start(t, testConfig(t), testLogger(io.Discard))
	status, body := get(t, "http://"+s.Addr()+"/")
	if status != http.StatusForbidden || !strings.Contains(body, "<Code>AccessDenied</Code>") {
		t.Errorf("anonymous GET / = %d %q, want 403 with an AccessDenied error document", status, body)
	}
	if err := stop(); err != nil {
		t.Fatalf("Run after cancel = %v, want nil", err)
	}
	if _, err := net.DialTimeout("tcp", s.Addr(), time.Second); err == nil {
		t.Error("the S3 listener still accepts connections after Run returned")
	}
}

// TestGracefulShutdown checks that a request in flight when the context
// ends completes, that no new connections are accepted meanwhile, and that
// Run returns only after the request finished.
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	s, err := New(testConfig(t), testLogger(io.Discard), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	inner := s.srv.Handler
	s.srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(entered)
			<-release
			io.WriteString(w, "finished")
			return
		}
		inner.ServeHTTP(w, r)
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()

	type result struct {
		body string
		err  error
	}
	got := make(chan result, 1)
	go func() {
		resp, err := client().Get("http://" + s.Addr() + "/slow")
		if err != nil {
			got <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		got <- result{string(b), err}
	}()
	<-entered
	cancel()
	// The listener closes at once; Run waits for the slow request.
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.Addr(), time.Second)
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("listener still accepting 5s after cancel")
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("Run returned %v while a request was in flight", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if r := <-got; r.err != nil || r.body != "finished" {
		t.Errorf("in-flight request = %q, %v; want it to finish", r.body, r.err)
	}
	if err := <-done; err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
}

// TestShutdownTimeout checks that a request that outlives the shutdown
// timeout is cut off and that Run still returns and closes the storage.
func TestShutdownTimeout(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.ShutdownTimeout = 100 * time.Millisecond
	var logs syncBuffer
	s, err := New(cfg, testLogger(&logs), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	entered := make(chan struct{})
	s.srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.inflight.Add(1)
		defer s.inflight.Add(-1)
		close(entered)
		<-r.Context().Done() // a handler that stops only when its client is gone
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	clientErr := make(chan error, 1)
	go func() {
		resp, err := client().Get("http://" + s.Addr() + "/stuck")
		if err == nil {
			resp.Body.Close()
		}
		clientErr <- err
	}()
	<-entered
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the shutdown timeout")
	}
	if err := <-clientErr; err == nil {
		t.Error("the stuck request succeeded; want its connection closed")
	}
	if !strings.Contains(logs.String(), "shutdown timeout expired") {
		t.Errorf("logs lack the shutdown-timeout warning:\n%s", logs.String())
	}
	// The storage is closed: a new server can open it.
	s2, err := New(cfg, testLogger(io.Discard), io.Discard)
	if err != nil {
		t.Fatalf("New after shutdown: %v", err)
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestSecondServerOnSameStorageFails(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	first, err := New(cfg, testLogger(io.Discard), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	second, err := New(cfg, testLogger(io.Discard), io.Discard)
	if err == nil {
		second.Close()
		t.Fatal("second New on the same storage path succeeded")
	}
	if !strings.Contains(err.Error(), "locked") {
		t.Errorf("second New error = %v, want it to say the storage is locked", err)
	}
	// The failed New released what it opened, and did not disturb the
	// first server's lock.
	if _, err := GC(t.Context(), cfg, testLogger(io.Discard), time.Hour); err == nil || !strings.Contains(err.Error(), "locked") {
		t.Errorf("GC while a server holds the storage = %v, want a lock error", err)
	}
}

func TestListenFailureReleasesStorage(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	cfg := testConfig(t)
	cfg.Address = busy.Addr().String()
	if _, err := New(cfg, testLogger(io.Discard), io.Discard); err == nil || !strings.Contains(err.Error(), "listen for S3") {
		t.Fatalf("New on a busy port = %v, want a listen error", err)
	}
	cfg.Address = "127.0.0.1:0"
	s, err := New(cfg, testLogger(io.Discard), io.Discard)
	if err != nil {
		t.Fatalf("New after a failed New: %v (storage not released?)", err)
	}
	s.Close()
}

func TestNewRejectsInvalidConfig(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Objects.BlockSize = 1
	if _, err := New(cfg, testLogger(io.Discard), io.Discard); err == nil || !strings.Contains(err.Error(), "block-size") {
		t.Fatalf("New with block-size 1 = %v, want a validation error", err)
	}
	if _, err := os.Stat(filepath.Join(cfg.StoragePath, metaDir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("New with an invalid config touched the storage: %v", err)
	}
}

func TestFsyncOffWarns(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Fsync = false
	cfg.Blob.Kind = config.BlobMemory
	var logs syncBuffer
	s, err := New(cfg, testLogger(&logs), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	for _, want := range []string{"level=WARN msg=\"fsync is off", "level=WARN msg=\"blob.kind is memory"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("logs lack %q:\n%s", want, logs.String())
		}
	}
}

func TestPprof(t *testing.T) {
	t.Parallel()
	t.Run("off by default", func(t *testing.T) {
		t.Parallel()
		s, _ := start(t, testConfig(t), testLogger(io.Discard))
		if got := s.PprofAddr(); got != "" {
			t.Errorf("PprofAddr() = %q with pprof off, want \"\"", got)
		}
		// The S3 listener does not serve pprof either.
		status, body := get(t, "http://"+s.Addr()+"/debug/pprof/")
		if status == http.StatusOK || strings.Contains(body, "goroutine") {
			t.Errorf("GET /debug/pprof/ on the S3 listener = %d %q, want an S3 error", status, body)
		}
	})
	t.Run("on", func(t *testing.T) {
		t.Parallel()
		cfg := testConfig(t)
		cfg.Pprof = config.Pprof{Enabled: true, Host: "127.0.0.1", Port: 0}
		s, _ := start(t, cfg, testLogger(io.Discard))
		if s.PprofAddr() == "" || s.PprofAddr() == s.Addr() {
			t.Fatalf("PprofAddr() = %q, S3 %q: want a listener of its own", s.PprofAddr(), s.Addr())
		}
		for _, path := range []string{"/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/symbol", "/debug/pprof/goroutine?debug=1", "/debug/pprof/heap"} {
			if status, _ := get(t, "http://"+s.PprofAddr()+path); status != http.StatusOK {
				t.Errorf("GET %s on pprof = %d, want 200", path, status)
			}
		}
		if status, _ := get(t, "http://"+s.PprofAddr()+"/"); status != http.StatusNotFound {
			t.Errorf("GET / on pprof = %d, want 404", status)
		}
	})
}

func TestAccessLogInServer(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Log.AccessLogSample = 1
	var logs syncBuffer
	s, stop := start(t, cfg, testLogger(&logs))
	req, err := http.NewRequest(http.MethodGet, "http://"+s.Addr()+"/bucket/key?X-Amz-Signature=querysecret&X-Amz-Credential=QUERYKEY%2F20250101%2Fus-east-1%2Fs3%2Faws4_request", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=HEADERKEY/20250101/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-date, Signature=headersignature")
	resp, err := client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	reqID := resp.Header.Get("X-Amz-Request-Id")
	if err := stop(); err != nil { // drains the access log
		t.Fatal(err)
	}
	var access []string
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "log=access") {
			access = append(access, line)
		}
	}
	if len(access) != 1 {
		t.Fatalf("got %d access log records, want 1:\n%s", len(access), logs.String())
	}
	out := access[0]
	for _, want := range []string{"msg=request", "log=access", "method=GET", "path=/bucket/key", "access_key_id=HEADERKEY", "request_id=" + reqID, "remote=127.0.0.1"} {
		if !strings.Contains(out, want) {
			t.Errorf("access log lacks %q:\n%s", want, out)
		}
	}
	if reqID == "" {
		t.Error("response has no x-amz-request-id")
	}
	for _, secret := range []string{"headersignature", "querysecret", "QUERYKEY", "X-Amz", "20250101"} {
		if strings.Contains(out, secret) {
			t.Errorf("access log contains %q:\n%s", secret, out)
		}
	}
}

// TestStorageFailureStopsServer checks what a server does when its
// metadata store fails (here: the disk under it is full, met by the
// readiness write probe): readiness turns to "failed" with the cause, the
// server stops by itself, waiting for requests in flight no longer than
// its short failed drain (not the shutdown timeout: one stuck in the
// failed engine would never end), and Run returns the store's error, for
// the process to exit non-zero.
func TestStorageFailureStopsServer(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.ShutdownTimeout = time.Minute
	var logs syncBuffer
	var full atomic.Bool
	s, err := newServer(cfg, testLogger(&logs), io.Discard, testHooks{failWrite: func(string) error {
		if full.Load() {
			return syscall.ENOSPC
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	s.failedDrain = 2 * time.Second
	s.ready.ttl = 0 // every probe runs the checks
	entered, release := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(release) })
	inner := s.srv.Handler
	s.srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/stuck" { // like a write stuck in the failed engine
			s.inflight.Add(1)
			defer s.inflight.Add(-1)
			close(entered)
			<-release
			return
		}
		inner.ServeHTTP(w, r)
	})
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background()) }()
	ops := "http://" + s.ConsoleAddr() + "/readyz"
	if status, body := get(t, ops); status != http.StatusOK {
		t.Fatalf("GET /readyz = %d %s, want 200", status, body)
	}
	stuck := make(chan error, 1)
	go func() {
		resp, err := client().Get("http://" + s.Addr() + "/stuck")
		if err == nil {
			resp.Body.Close()
		}
		stuck <- err
	}()
	<-entered

	full.Store(true)
	failedAt := time.Now()
	want := `{"status":"failed","failed":["metadata"],"checks":{"metadata":"failed"},"reason":"metadata store failed: no space left on device"}`
	for {
		status, body := get(t, ops) // the first probe's write meets the full disk
		if status == http.StatusServiceUnavailable && strings.TrimSpace(body) == want {
			break
		}
		if time.Since(failedAt) > time.Second {
			t.Fatalf("GET /readyz after the failure = %d %s, want 503 %s", status, body, want)
		}
	}
	rec := httptest.NewRecorder()
	s.ready.healthHandler().ServeHTTP(rec, httptest.NewRequest("GET", readyPath, nil))
	if rec.Code != http.StatusServiceUnavailable || strings.TrimSpace(rec.Body.String()) != want {
		t.Errorf("GET %s after the failure = %d %s, want 503 %s", readyPath, rec.Code, rec.Body, want)
	}

	select {
	case err := <-done:
		if !errors.Is(err, meta.ErrFailed) || !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("Run = %v, want the store's failure", err)
		}
		if d := time.Since(failedAt); d > s.failedDrain+3*time.Second {
			t.Errorf("Run returned %v after the failure, want about the failed drain (%v)", d, s.failedDrain)
		}
	case <-time.After(s.failedDrain + 10*time.Second):
		t.Fatal("Run did not return after the store failed")
	}
	if err := <-stuck; err == nil {
		t.Error("the stuck request succeeded; want its connection closed")
	}
	if l := logs.String(); !strings.Contains(l, "metadata store failed: refusing writes and stopping") || !strings.Contains(l, "no space left on device") {
		t.Errorf("log lacks the failure and its cause:\n%s", l)
	}
}

// TestShutdownWithHungDisk checks that a shutdown ends in bounded time
// even when the disk under the metadata stops answering, so that closing
// the store would wait forever: Run gives up, with an error.
func TestShutdownWithHungDisk(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.ShutdownTimeout = time.Second
	var hang atomic.Bool
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	s, err := newServer(cfg, testLogger(io.Discard), io.Discard, testHooks{failWrite: func(string) error {
		if hang.Load() {
			<-release // a disk that never answers
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	s.stopBound = 500 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	if status, body := get(t, "http://"+s.ConsoleAddr()+"/readyz"); status != http.StatusOK {
		t.Fatalf("GET /readyz = %d %s, want 200", status, body)
	}
	hang.Store(true)
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "shutdown did not finish within 1.5s") {
			t.Errorf("Run with a hung disk = %v, want the shutdown bound's error", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("Run took %v to give up", d)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return with a hung disk")
	}
}

// TestAdminGCDefaultGrace: POST /gc naming no grace runs with the node's
// gc-grace, not a fixed hour; one naming a grace runs with that.
func TestAdminGCDefaultGrace(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Objects.GCGrace = 10 * time.Minute
	s, _ := start(t, cfg, testLogger(io.Discard))
	c, err := adminapi.NewClient("http://"+s.Addr(), cfg.Root.RootAccessKey, cfg.Root.RootSecretKey, cfg.S3.Region, client())
	if err != nil {
		t.Fatal(err)
	}
	asked := 30.0
	for _, tc := range []struct {
		name string
		in   adminapi.GCRequest
		want float64
	}{
		{name: "no grace", want: (10 * time.Minute).Seconds()},
		{name: "grace given", in: adminapi.GCRequest{GraceSeconds: &asked}, want: asked},
	} {
		res, err := c.GC(t.Context(), tc.in)
		if err != nil {
			t.Fatalf("%s: GC: %v", tc.name, err)
		}
		if res.GraceSeconds != tc.want {
			t.Errorf("%s: GC ran with grace %vs, want %vs", tc.name, res.GraceSeconds, tc.want)
		}
	}
}
