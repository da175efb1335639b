package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"
)

// metric reads one unlabelled value from a Prometheus /metrics page.
func metric(t *testing.T, url, name string) float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^` + name + ` ([0-9.e+]+)$`).FindSubmatch(body)
	if m == nil {
		t.Fatalf("no %s in /metrics", name)
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}

// TestStalledUploads: 300 anonymous connections each send a PUT's headers
// (Content-Length 256 KiB) and 100 bytes of body, then nothing. Each gets
// its 403 within seconds, and the server's goroutines and memory come back
// down: strangers that never send a body cannot pin the server (issue 15).
func TestStalledUploads(t *testing.T) {
	t.Parallel()
	ops := freeAddr(t)
	srv := startChild(t, t.TempDir(), "--console-address", ops)
	metrics := "http://" + ops + "/metrics"
	base := metric(t, metrics, "go_goroutines")

	const conns = 300
	var wg sync.WaitGroup
	answered := make(chan time.Duration, conns)
	start := time.Now()
	for i := range conns {
		wg.Go(func() {
			c, err := net.Dial("tcp", srv.addr)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			fmt.Fprintf(c, "PUT /bucket/key-%d HTTP/1.1\r\nHost: %s\r\nContent-Length: 262144\r\n\r\n", i, srv.addr)
			c.Write(make([]byte, 100))
			c.SetReadDeadline(time.Now().Add(30 * time.Second))
			if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
				resp.Body.Close()
				answered <- time.Since(start)
			}
			// Keep the connection open, sending nothing, until the
			// server closes it or the test moves on.
			io.Copy(io.Discard, c)
		})
	}
	time.Sleep(time.Second)
	peak := metric(t, metrics, "go_goroutines")
	wg.Wait()
	close(answered)
	var slowest time.Duration
	n := 0
	for d := range answered {
		n++
		slowest = max(slowest, d)
	}
	if n != conns || slowest > 10*time.Second {
		t.Errorf("%d of %d stalled uploads answered, the last after %v", n, conns, slowest)
	}
	deadline := time.Now().Add(10 * time.Second)
	var after float64
	for {
		after = metric(t, metrics, "go_goroutines")
		if after <= base+10 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	rss := metric(t, metrics, "process_resident_memory_bytes")
	t.Logf("goroutines %v before, %v with %d stalled uploads, %v after; answered in at most %v; RSS %.0f MiB", base, peak, conns, after, slowest.Round(time.Millisecond), rss/(1<<20))
	if after > base+10 {
		t.Errorf("goroutines did not come back down: %v before, %v after", base, after)
	}
	if rss > 150<<20 {
		t.Errorf("RSS %.0f MiB after the stalled uploads", rss/(1<<20))
	}
	srv.stop()
}
