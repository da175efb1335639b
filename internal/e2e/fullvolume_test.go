//go:build linux

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Settings of the full-volume test: the probe of issue 15 filled a 24 MiB
// storage path with 30 KB PUTs (inline: every one goes to the metadata
// log).
const (
	fullVolumeSize    = "24m"
	fullVolumeObject  = 30_000
	fullVolumeWriters = 8
	// fullVolumeOpLimit is how long any one request may take before the
	// test calls it hung (the server used to hang them for good).
	fullVolumeOpLimit = 20 * time.Second
)

// mountTmpfs mounts a tmpfs of size (e.g. "24m") on a new temporary
// directory for the rest of the test, and returns the directory. It skips
// the test where mounting is not permitted (not root, or a container
// without CAP_SYS_ADMIN).
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("cannot mount a tmpfs on %s (%v): this test needs root", dir, err)
	}
	// Registered after TempDir's removal, so it runs before it; and after
	// startChild's kills, which run first.
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// resizeTmpfs changes the size of the tmpfs mounted on dir.
func resizeTmpfs(t *testing.T, dir, size string) {
	t.Helper()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_REMOUNT, "size="+size); err != nil {
		t.Fatalf("remount %s with size %s: %v", dir, size, err)
	}
}

// consoleAddrRE finds the ops listener's address in a server's log.
var consoleAddrRE = regexp.MustCompile(`msg="serving the web console, metrics and health checks" address=(\S+)`)

// consoleAddr returns the address of c's ops listener, from its log.
func (c *child) consoleAddr(t *testing.T) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if m := consoleAddrRE.FindStringSubmatch(c.out.String()); m != nil {
			return m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no ops listener address in the server's log:\n%s", tail(c.out.String(), 4*kib))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// readyDoc is the readiness document, as far as the test reads it.
type readyDoc struct {
	Status string            `json:"status"`
	Checks map[string]string `json:"checks"`
	Reason string            `json:"reason"`
	Blocks string            `json:"blocks"`
}

// getReady fetches a readiness endpoint; err is set if nothing answered.
func getReady(u string) (int, readyDoc, error) {
	hc := &http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get(u)
	if err != nil {
		return 0, readyDoc{}, err
	}
	defer resp.Body.Close()
	var doc readyDoc
	body, err := io.ReadAll(resp.Body)
	if err == nil {
		err = json.Unmarshal(body, &doc)
	}
	return resp.StatusCode, doc, err
}

// fullVolumeWriter PUTs and DELETEs keys of the crash test's key space
// until stop is closed, recording every write in a ledger.
type fullVolumeWriter struct {
	t      *testing.T
	c      *s3.Client
	bucket string
	led    *ledger
	rng    *mrand.Rand
	failed chan<- time.Time // told the time of each refused write
	// refused counts writes answered ServiceUnavailable, gone those that
	// got no answer (the server had stopped listening, or closed their
	// connection when it exited).
	refused, gone *atomic.Int64
}

func (w *fullVolumeWriter) run(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		key := fmt.Sprintf("key-%03d", w.rng.IntN(crashKeys))
		ctx, cancel := context.WithTimeout(context.Background(), fullVolumeOpLimit)
		var op *ledgerOp
		var err error
		start := time.Now()
		if w.rng.IntN(100) < 80 {
			body := randBytes(fullVolumeObject)
			op = w.led.begin(key, "PUT "+key, version{hash: sha256Hex(body), size: len(body), etag: md5Hex(body)})
			_, err = w.c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(w.bucket), Key: aws.String(key), Body: bytes.NewReader(body)})
		} else {
			op = w.led.begin(key, "DELETE "+key, version{absent: true})
			_, err = w.c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(w.bucket), Key: aws.String(key)})
		}
		cancel()
		switch {
		case err == nil:
			w.led.ack(op)
		case errors.Is(err, context.DeadlineExceeded):
			w.t.Errorf("%s hung: no answer after %v", op.what, time.Since(start).Round(time.Millisecond))
		case errCode(err) == "ServiceUnavailable" && errStatus(err) == http.StatusServiceUnavailable:
			w.refused.Add(1)
			select {
			case w.failed <- time.Now():
			default:
			}
		case errStatus(err) != 0:
			w.t.Errorf("%s answered %d %s, want 200/204 or 503 ServiceUnavailable: %v", op.what, errStatus(err), errCode(err), err)
		default: // no answer: the server stopped
			w.gone.Add(1)
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// TestFullMetadataVolume fills a small storage path (a 24 MiB tmpfs, as
// issue 15's probe did) with 30 KB PUTs and DELETEs from 8 writers until
// the disk is full, and checks docs/design/0010-fatal-storage-errors.md end
// to end: writes are answered at once, 200 or 503 ServiceUnavailable (never
// 500, never a hang; a write waiting in the engine when a background flush
// fails is refused too); readiness turns to "failed" naming the full disk; the
// server stops by itself, or on SIGTERM, within seconds, with a non-zero
// status and a clear log line; and once space is freed a restart finds
// every acknowledged write (the crash test's checker: ledger, listing and
// usage), serves writes and is ready again.
func TestFullMetadataVolume(t *testing.T) {
	for _, sigterm := range []bool{false, true} {
		name := map[bool]string{false: "stops by itself", true: "SIGTERM"}[sigterm]
		t.Run(name, func(t *testing.T) { fillVolume(t, sigterm) })
	}
}

func fillVolume(t *testing.T, sigterm bool) {
	mnt := mountTmpfs(t, fullVolumeSize)
	dir := filepath.Join(mnt, "data")
	// A long shutdown timeout: a failed store's drain must not wait for it.
	// No free-space reserve: this is what happens when the metadata
	// engine meets a full disk anyway (TestDiskFull shows the reserve
	// keeping it from doing so).
	srv := startChild(t, dir, "--shutdown-timeout", "60s", "--disk.reserve", "0")
	ops := "http://" + srv.consoleAddr(t) + "/readyz"
	c := newClient(t, srv.endpoint)
	const bucket = "full"
	if _, err := c.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatalf("CreateBucket: %v", err)
	}
	if status, doc, err := getReady(ops); status != http.StatusOK || doc.Checks["metadata_write"] != "ok" {
		t.Fatalf("GET /readyz before = %d %+v %v, want 200 with metadata_write ok", status, doc, err)
	}

	// An upload in flight through the failure, whose body trickles: it
	// holds the server's drain open, so readiness can be watched then.
	slowBody, slowW := io.Pipe()
	slowDone := make(chan *http.Response, 1)
	go func() {
		r := rawReq{method: "PUT", target: "/" + bucket + "/slow", hash: "UNSIGNED-PAYLOAD"}.build(t, srv.endpoint)
		r.Body, r.ContentLength = slowBody, 1<<20
		resp, err := (&http.Client{Timeout: time.Minute}).Do(r)
		if err != nil {
			slowDone <- nil
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		slowDone <- resp
	}()
	if _, err := slowW.Write([]byte{0}); err != nil {
		t.Fatal(err)
	}

	state := make(map[string]version, crashKeys)
	for i := range crashKeys {
		state[fmt.Sprintf("key-%03d", i)] = version{absent: true}
	}
	led := newLedger(state, time.Now())
	stop := make(chan struct{})
	failed := make(chan time.Time, 1)
	var refused, gone atomic.Int64
	var wg sync.WaitGroup
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	for i := range fullVolumeWriters {
		w := &fullVolumeWriter{t: t, c: c, bucket: bucket, led: led, rng: mrand.New(mrand.NewPCG(seed, uint64(i))),
			failed: failed, refused: &refused, gone: &gone}
		wg.Go(func() { w.run(stop) })
	}
	defer func() { // on every way out, so that no writer outlives the test
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	}()

	// The store fails either in a write, which is refused, or in the
	// background (a memtable flush that finds the disk full), which the
	// server logs; writes after it are refused, or find the server
	// stopping.
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			if strings.Contains(srv.out.String(), `msg="metadata store failed: refusing writes and stopping`) {
				select {
				case failed <- time.Now():
				default:
				}
				return
			}
		}
	}()
	var failedAt time.Time
	select {
	case failedAt = <-failed:
	case <-srv.done:
		t.Fatalf("the server exited before the store failed or any write was refused:\n%s", tail(srv.out.String(), 8*kib))
	case <-time.After(2 * time.Minute):
		t.Fatal("no write was refused after 2 minutes of filling a 24 MiB volume")
	}
	if sigterm {
		if err := syscall.Kill(srv.cmd.Process.Pid, syscall.SIGTERM); err != nil {
			t.Fatalf("SIGTERM: %v", err)
		}
	} else {
		// Readiness, while the slow upload holds the drain open.
		status, doc, err := getReady(ops)
		if status != http.StatusServiceUnavailable || doc.Status != "failed" || doc.Checks["metadata"] != "failed" ||
			doc.Reason != "metadata store failed: no space left on device" {
			t.Errorf("GET /readyz after the failure = %d %+v %v, want 503 failed: no space left on device", status, doc, err)
		}
		// The slow upload ends: it is refused too.
		go func() { slowW.Write(make([]byte, 1<<20-1)); slowW.Close() }()
		if resp := <-slowDone; resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("the upload in flight through the failure answered %v, want 503", resp)
		}
	}

	select {
	case <-srv.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the server still runs 30s after the store failed:\n%s", tail(srv.out.String(), 8*kib))
	}
	exitAfter := time.Since(failedAt)
	slowW.CloseWithError(errors.New("test over"))
	close(stop)
	wg.Wait()
	var ee *exec.ExitError
	if !errors.As(srv.waitErr, &ee) || ee.ExitCode() != 1 {
		t.Errorf("coffer serve exited with %v, want status 1", srv.waitErr)
	}
	out := srv.out.String()
	for _, want := range []string{`msg="metadata store failed: refusing writes and stopping`, "no space left on device", `msg="server failed"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the server's log lacks %q:\n%s", want, tail(out, 8*kib))
		}
	}
	if strings.Contains(out, "handler panic") || strings.Contains(out, "code=InternalError") {
		t.Errorf("the server's log shows a panic or an internal error:\n%s", tail(out, 8*kib))
	}
	if exitAfter > 15*time.Second {
		t.Errorf("the server took %v to exit after the failure, want seconds", exitAfter)
	}

	// Space is freed; the supervisor restarts the server.
	resizeTmpfs(t, mnt, "96m")
	srv = startChild(t, dir, "--disk.reserve", "0")
	c = newClient(t, srv.endpoint)
	got := readState(t, c, bucket, nil)
	acked, unacked := checkLedger(t, led, got, "after the restart")
	t.Logf("%d writes acknowledged, %d refused with 503, %d unanswered; the server exited %v after the failure",
		acked, refused.Load(), gone.Load(), exitAfter.Round(time.Millisecond))
	if acked < 50 || unacked == 0 {
		t.Errorf("%d writes acknowledged and %d not: the test exercised little", acked, unacked)
	}
	checkUsageAfterCrash(t, srv.endpoint, c, bucket, "after the restart")
	put(t, c, bucket, "after-restart", randBytes(fullVolumeObject))
	if status, doc, err := getReady(srv.endpoint + "/_coffer/health/ready"); status != http.StatusOK || doc.Status != "ok" {
		t.Errorf("readiness after the restart = %d %+v %v, want 200 ok", status, doc, err)
	}
	srv.stop()
}
