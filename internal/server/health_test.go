package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/coffer-s3/coffer/internal/blob"
	"github.com/coffer-s3/coffer/internal/meta"
)

// do sends method url and returns the status, the headers and the body.
func do(t *testing.T, method, url string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, url, err)
	}
	return resp.StatusCode, resp.Header, string(body)
}

// report decodes a health document.
func report(t *testing.T, body string) readyReport {
	t.Helper()
	var rp readyReport
	if err := json.Unmarshal([]byte(body), &rp); err != nil {
		t.Fatalf("health document %q: %v", body, err)
	}
	return rp
}

func TestHealthEndpoints(t *testing.T) {
	t.Parallel()
	s, _ := start(t, testConfig(t), testLogger(io.Discard))
	s3 := "http://" + s.Addr()
	ops := "http://" + s.ConsoleAddr()
	if s.ConsoleAddr() == "" || s.ConsoleAddr() == s.Addr() {
		t.Fatalf("ConsoleAddr() = %q, S3 %q: want a listener of its own", s.ConsoleAddr(), s.Addr())
	}
	for _, tc := range []struct {
		method, url string
		status      int
		want        string // the document, "" for no body
	}{
		{"GET", s3 + livePath, 200, `{"status":"ok"}`},
		{"HEAD", s3 + livePath, 200, ""},
		{"GET", s3 + readyPath, 200, `{"status":"ok","checks":{"blocks":"ok","metadata":"ok","metadata_write":"ok"},"disk":"ok"}`},
		{"HEAD", s3 + readyPath, 200, ""},
		{"GET", ops + "/healthz", 200, `{"status":"ok"}`},
		{"HEAD", ops + "/healthz", 200, ""},
		{"GET", ops + "/readyz", 200, `{"status":"ok","checks":{"blocks":"ok","metadata":"ok","metadata_write":"ok"},"disk":"ok"}`},
		{"HEAD", ops + "/readyz", 200, ""},
		{"POST", s3 + readyPath, 405, `{"status":"method not allowed"}`},
		{"DELETE", s3 + livePath, 405, `{"status":"method not allowed"}`},
		{"GET", s3 + healthPrefix + "other", 404, `{"status":"no such endpoint"}`},
	} {
		status, hdr, body := do(t, tc.method, tc.url)
		if status != tc.status || strings.TrimSuffix(body, "\n") != tc.want {
			t.Errorf("%s %s = %d %q, want %d %q", tc.method, tc.url, status, body, tc.status, tc.want)
		}
		if ct := hdr.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s %s: Content-Type %q, want application/json", tc.method, tc.url, ct)
		}
		if status == 200 && hdr.Get("Cache-Control") != "no-store" {
			t.Errorf("%s %s: Cache-Control %q, want no-store", tc.method, tc.url, hdr.Get("Cache-Control"))
		}
		if status == 405 && hdr.Get("Allow") != "GET, HEAD" {
			t.Errorf("%s %s: Allow %q, want GET, HEAD", tc.method, tc.url, hdr.Get("Allow"))
		}
	}
	// Every other path of the ops listener is the web console, and the S3
	// listener serves no metrics: /metrics there is a bucket, which does
	// not exist.
	if status, _, body := do(t, "GET", ops+"/"); status != http.StatusOK || !strings.Contains(body, `action="/login"`) {
		t.Errorf("GET / on the ops listener = %d, want the console's sign-in page", status)
	}
	if status, _, _ := do(t, "POST", ops+"/readyz"); status != http.StatusMethodNotAllowed {
		t.Errorf("POST /readyz = %d, want 405", status)
	}
	if status, _, body := do(t, "GET", s3+"/metrics"); status != http.StatusNotFound || !strings.Contains(body, "<Code>NoSuchBucket</Code>") {
		t.Errorf("GET /metrics on the S3 listener = %d %q, want an S3 NoSuchBucket", status, body)
	}
}

func TestMetricsOnOpsListener(t *testing.T) {
	t.Parallel()
	s, _ := start(t, testConfig(t), testLogger(io.Discard))
	// Anonymous requests: one ListBuckets (denied), one GetObject (of a
	// bucket that does not exist).
	get(t, "http://"+s.Addr()+"/")
	get(t, "http://"+s.Addr()+"/bucket/key")
	// Health checks and the admin API are not S3 requests.
	get(t, "http://"+s.Addr()+readyPath)
	status, body := get(t, "http://"+s.ConsoleAddr()+"/metrics")
	if status != http.StatusOK {
		t.Fatalf("GET /metrics = %d %q", status, body)
	}
	for _, want := range []string{
		`coffer_s3_requests_total{op="ListBuckets",status="403"} 1`,
		`coffer_s3_requests_total{op="GetObject",status="404"} 1`,
		`coffer_s3_errors_total{code="NoSuchBucket",op="GetObject"} 1`,
		`coffer_s3_request_duration_seconds_count{op="ListBuckets"} 1`,
		`coffer_s3_requests_in_flight 0`,
		`coffer_build_info{go_version="go`,
		`go_goroutines `,
		`promhttp_metric_handler_requests_total{code="200"} 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(body, `bucket="`) || strings.Contains(body, "key=") {
		t.Error("/metrics has a bucket or key label")
	}
	if n := strings.Count(body, "coffer_s3_requests_total{"); n != 2 {
		t.Errorf("%d series of coffer_s3_requests_total, want 2 (health checks are not S3 requests)", n)
	}
}

func TestConsoleDisabled(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.ConsoleAddress = ""
	s, _ := start(t, cfg, testLogger(io.Discard))
	if got := s.ConsoleAddr(); got != "" {
		t.Errorf("ConsoleAddr() = %q with console-address \"\", want \"\"", got)
	}
	if s.metrics != nil {
		t.Error("metrics are collected with the ops listener off")
	}
	// Health checks are still on the S3 listener.
	if status, body := get(t, "http://"+s.Addr()+readyPath); status != http.StatusOK {
		t.Errorf("GET %s = %d %q, want 200", readyPath, status, body)
	}
	if status, _ := get(t, "http://"+s.Addr()+"/"); status != http.StatusForbidden {
		t.Errorf("anonymous GET / = %d, want 403", status)
	}
}

func TestConsoleAddressInUse(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	cfg := testConfig(t)
	cfg.ConsoleAddress = busy.Addr().String()
	if _, err := New(cfg, testLogger(io.Discard), io.Discard); err == nil || !strings.Contains(err.Error(), "console-address") {
		t.Fatalf("New with a busy console address = %v, want a listen error naming console-address", err)
	}
	cfg.ConsoleAddress = "127.0.0.1:0"
	s, err := New(cfg, testLogger(io.Discard), io.Discard)
	if err != nil {
		t.Fatalf("New after a failed New: %v (storage not released?)", err)
	}
	s.Close()
}

// TestReadyFailingCheck checks that readiness fails, with 503 and the
// name of the check, when a check errs or hangs, and recovers after.
func TestReadyFailingCheck(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	var logs syncBuffer
	s, err := New(cfg, testLogger(&logs), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	rd := s.ready
	rd.ttl = 0 // every probe runs the checks
	rd.timeout = 100 * time.Millisecond
	blocks := rd.checks[1]
	if blocks.name != "blocks" {
		t.Fatalf("check 1 is %q, want blocks", blocks.name)
	}
	real := blocks.fn
	var mode atomic.Int32 // 0 real, 1 error, 2 hang, 3 upstream unavailable
	release := make(chan struct{})
	var calls atomic.Int32
	blocks.fn = func(ctx context.Context) error {
		calls.Add(1)
		switch mode.Load() {
		case 1:
			return errors.New("disk on fire at " + cfg.StoragePath)
		case 2:
			<-release // ignores ctx, like a read stuck on a hung disk
			return nil
		case 3:
			return fmt.Errorf("head: %w", &blob.UnavailableError{Kind: "connect", Err: errors.New("dial tcp 10.1.2.3:9000: connection refused")})
		}
		return real(ctx)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	for _, url := range []string{"http://" + s.Addr() + readyPath, "http://" + s.ConsoleAddr() + "/readyz"} {
		if status, body := get(t, url); status != http.StatusOK {
			t.Fatalf("GET %s = %d %q, want 200", url, status, body)
		}
		mode.Store(1)
		status, body := get(t, url)
		want := readyReport{Status: "unavailable", Failed: []string{"blocks"}, Checks: map[string]string{"blocks": "error", "metadata": "ok"}}
		if got := report(t, body); status != http.StatusServiceUnavailable || got.Status != want.Status || strings.Join(got.Failed, ",") != "blocks" ||
			got.Checks["blocks"] != "error" || got.Checks["metadata"] != "ok" {
			t.Errorf("GET %s with a failing check = %d %s, want 503 %+v", url, status, body, want)
		}
		if strings.Contains(body, cfg.StoragePath) || strings.Contains(body, "fire") {
			t.Errorf("readiness document %s reveals the error", body)
		}
		// An upstream block store out of reach degrades the server but
		// leaves it ready: inline objects, listings and deletes work.
		mode.Store(3)
		status, body = get(t, url)
		if got := report(t, body); status != http.StatusOK || got.Status != "degraded" || got.Blocks != "unavailable (connect)" ||
			got.Checks["blocks"] != "error" || strings.Join(got.Failed, ",") != "blocks" {
			t.Errorf("GET %s with the upstream unreachable = %d %s, want 200, status degraded, blocks unavailable (connect)", url, status, body)
		}
		if strings.Contains(body, "10.1.2.3") {
			t.Errorf("readiness document %s reveals the error", body)
		}
		mode.Store(0)
		if status, body := get(t, url); status != http.StatusOK || report(t, body).Status != "ok" {
			t.Errorf("GET %s after recovery = %d %q, want 200 ok", url, status, body)
		}
	}
	if l := logs.String(); !strings.Contains(l, `msg="not ready"`) || !strings.Contains(l, "failed=[blocks]") || !strings.Contains(l, "disk on fire") || !strings.Contains(l, `msg="ready again"`) {
		t.Errorf("logs lack the readiness transitions with the cause:\n%s", logs.String())
	}

	// A check that hangs times out; while it is stuck, later rounds do not
	// call it again.
	mode.Store(2)
	url := "http://" + s.ConsoleAddr() + "/readyz"
	before := calls.Load()
	for range 3 {
		start := time.Now()
		status, body := get(t, url)
		if got := report(t, body); status != http.StatusServiceUnavailable || got.Checks["blocks"] != "timeout" {
			t.Errorf("GET /readyz with a hung check = %d %s, want 503 with blocks timeout", status, body)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("readiness with a hung check took %v", d)
		}
	}
	if n := calls.Load() - before; n != 1 {
		t.Errorf("the hung check was called %d times, want once", n)
	}
	close(release)
	mode.Store(0)
	deadline := time.Now().Add(5 * time.Second)
	for {
		status, _ := get(t, url)
		if status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("not ready 5s after the hung check returned")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestReadyShared checks that concurrent probes share one round of checks
// and that a result is reused for the cache period.
func TestReadyShared(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	entered, release := make(chan struct{}), make(chan struct{})
	rd := newReadiness([]*check{{name: "slow", fn: func(context.Context) error {
		if calls.Add(1) == 1 {
			close(entered)
		}
		<-release
		return nil
	}}}, testLogger(io.Discard))
	rd.ttl = time.Hour
	var wg sync.WaitGroup
	reports := make(chan readyReport, 10)
	for range 10 {
		wg.Go(func() { reports <- rd.check(context.Background()) })
	}
	<-entered
	time.Sleep(20 * time.Millisecond) // let the others join the round
	close(release)
	wg.Wait()
	close(reports)
	for rp := range reports {
		if !rp.ready() {
			t.Errorf("report %+v, want ok", rp)
		}
	}
	if rp := rd.check(context.Background()); !rp.ready() {
		t.Errorf("cached report %+v, want ok", rp)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("check called %d times for 11 probes, want once", n)
	}
	// A probe whose client goes away returns at once.
	rd.ttl = 0
	block := make(chan struct{})
	rd.checks[0].fn = func(context.Context) error { <-block; return nil }
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if rp := rd.check(ctx); rp.ready() {
		t.Errorf("report for a canceled probe %+v, want not ready", rp)
	}
	close(block)
	rd.drain(5 * time.Second)
	if rp := rd.check(context.Background()); rp.Status != "shutting down" {
		t.Errorf("report after drain %+v, want shutting down", rp)
	}
}

// TestReadyDuringShutdown checks that once shutdown begins readiness
// answers 503 on the ops listener while S3 requests drain, that liveness
// and metrics are still served meanwhile, and that the ops listener closes
// after.
func TestReadyDuringShutdown(t *testing.T) {
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
	ops := "http://" + s.ConsoleAddr()
	if status, _ := get(t, ops+"/readyz"); status != http.StatusOK {
		t.Fatalf("GET /readyz before shutdown = %d, want 200", status)
	}
	slow := make(chan error, 1)
	go func() {
		resp, err := client().Get("http://" + s.Addr() + "/slow")
		if err == nil {
			resp.Body.Close()
		}
		slow <- err
	}()
	<-entered
	cancel()
	deadline := time.Now().Add(5 * time.Second)
	for {
		status, body := get(t, ops+"/readyz")
		if status == http.StatusServiceUnavailable {
			if got := report(t, body); got.Status != "shutting down" {
				t.Errorf("GET /readyz during shutdown = %s, want status shutting down", body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /readyz still %d 5s after shutdown began", status)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if status, _ := get(t, ops+"/healthz"); status != http.StatusOK {
		t.Errorf("GET /healthz during shutdown = %d, want 200", status)
	}
	if status, body := get(t, ops+"/metrics"); status != http.StatusOK || !strings.Contains(body, "coffer_build_info") {
		t.Errorf("GET /metrics during shutdown = %d, want 200 with metrics", status)
	}
	close(release)
	if err := <-slow; err != nil {
		t.Errorf("in-flight request failed: %v", err)
	}
	if err := <-done; err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
	if _, err := net.DialTimeout("tcp", s.ConsoleAddr(), time.Second); err == nil {
		t.Error("the ops listener still accepts connections after Run returned")
	}
}

// TestReadyStorageFailed checks that once the metadata store has failed
// every probe answers "failed" with the cause (and no file name) at once,
// without running the checks, without caching, and even during shutdown,
// where it would otherwise say "shutting down".
func TestReadyStorageFailed(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	rd := newReadiness([]*check{{name: "metadata", fn: func(context.Context) error { calls.Add(1); return nil }}}, testLogger(io.Discard))
	rd.ttl = time.Hour
	var failure atomic.Pointer[meta.FailedError]
	rd.storageErr = func() error {
		if fe := failure.Load(); fe != nil {
			return fe
		}
		return nil
	}
	if rp := rd.check(context.Background()); !rp.ready() || calls.Load() != 1 {
		t.Fatalf("report %+v after %d calls, want ok after one", rp, calls.Load())
	}
	failure.Store(&meta.FailedError{Err: &fs.PathError{Op: "write", Path: "/data/meta/000007.log", Err: syscall.ENOSPC}})
	want := readyReport{Status: "failed", Failed: []string{"metadata"}, Checks: map[string]string{"metadata": "failed"},
		Reason: "metadata store failed: no space left on device"}
	for _, draining := range []bool{false, true} {
		if draining {
			rd.startDrain()
		}
		rec := httptest.NewRecorder()
		rd.serveReady(rec, httptest.NewRequest("GET", "/readyz", nil))
		if got := report(t, rec.Body.String()); rec.Code != http.StatusServiceUnavailable || !cmp.Equal(got, want, cmpopts.IgnoreUnexported(readyReport{})) {
			t.Errorf("draining %v: readiness = %d %s, want 503 %+v", draining, rec.Code, rec.Body, want)
		}
		if strings.Contains(rec.Body.String(), "/data") {
			t.Errorf("readiness %s names a file", rec.Body)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("checks ran %d times, want once (before the failure)", n)
	}
}
