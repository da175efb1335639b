package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/prometheus/common/expfmt"

	"github.com/coffer-s3/coffer/internal/config"
	"github.com/coffer-s3/coffer/internal/server"
)

// startWithConsole is startServer with the ops listener on a free port; it
// also returns the listener's address.
func startWithConsole(t *testing.T, extra ...string) (*testServer, string) {
	t.Helper()
	dir := t.TempDir()
	args := append([]string{"--storage-path", dir}, inProcessArgs...)
	args = append(args, "--console-address", "127.0.0.1:0")
	args = append(args, extra...)
	env := map[string]string{"COFFER_ROOT_ACCESS_KEY": testAccessKey, "COFFER_ROOT_SECRET_KEY": testSecretKey}
	cfg, err := config.Load(args, func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("config.Load(%q): %v", args, err)
	}
	logs := &syncBuffer{}
	srv, err := server.New(cfg, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), logs)
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("server Run returned %v after shutdown, want nil", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("server did not shut down within 30s")
		}
		if t.Failed() {
			t.Logf("server log (tail):\n%s", tail(logs.String(), 6*kib))
		}
	})
	if srv.ConsoleAddr() == "" {
		t.Fatal("ConsoleAddr() is empty with --console-address set")
	}
	return &testServer{dir: dir, addr: srv.Addr(), endpoint: "http://" + srv.Addr(), ak: testAccessKey, sk: testSecretKey, cfg: cfg, logs: logs}, srv.ConsoleAddr()
}

// countingTransport counts the request and response body bytes that cross
// the connection, as the client sends and receives them. A response body
// closed before its end is read to the end first, so every byte the server
// sent is counted.
type countingTransport struct {
	next          http.RoundTripper
	sent, receive atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil && r.Body != http.NoBody {
		r2 := r.Clone(r.Context())
		r2.Body = &countingBody{rc: r.Body, n: &c.sent}
		r = r2
	}
	resp, err := c.next.RoundTrip(r)
	if resp != nil && resp.Body != nil {
		resp.Body = &countingBody{rc: resp.Body, n: &c.receive, drain: true}
	}
	return resp, err
}

type countingBody struct {
	rc    io.ReadCloser
	n     *atomic.Int64
	drain bool
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.n.Add(int64(n))
	return n, err
}

func (b *countingBody) Close() error {
	if b.drain {
		n, _ := io.Copy(io.Discard, b.rc)
		b.n.Add(n)
	}
	return b.rc.Close()
}

// metricSample is one sample of a scrape: histograms give their _count.
type metricSample struct {
	name   string
	labels map[string]string
	value  float64
}

// scrapeMetrics GETs /metrics from the ops listener at addr and parses it
// with Prometheus's own text parser.
func scrapeMetrics(t *testing.T, addr string) []metricSample {
	t.Helper()
	resp, err := newHTTPClient().Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d", resp.StatusCode)
	}
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	var out []metricSample
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			s := metricSample{name: name, labels: labels}
			switch {
			case m.GetCounter() != nil:
				s.value = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				s.value = m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				s.name += "_count"
				s.value = float64(m.GetHistogram().GetSampleCount())
			default:
				continue
			}
			out = append(out, s)
		}
	}
	return out
}

// metricValue returns the value of the sample with exactly these labels
// (name, value pairs), or -1 if there is none.
func metricValue(samples []metricSample, name string, kv ...string) float64 {
	for _, s := range samples {
		if s.name != name || len(s.labels) != len(kv)/2 {
			continue
		}
		ok := true
		for i := 0; i < len(kv); i += 2 {
			ok = ok && s.labels[kv[i]] == kv[i+1]
		}
		if ok {
			return s.value
		}
	}
	return -1
}

// TestMetrics drives a server with the SDK and checks what /metrics says
// about it, to the request and the byte; then the health endpoints on both
// listeners, and that a bucket's keys under /_coffer/ are still objects.
func TestMetrics(t *testing.T) {
	t.Parallel()
	ts, console := startWithConsole(t, "--domain", vhostDomain)
	ct := &countingTransport{next: newHTTPClient().Transport}
	c := newClient(t, ts.endpoint, func(o *s3.Options) {
		o.HTTPClient = &http.Client{Transport: ct, Timeout: time.Minute}
	})
	ctx := t.Context()
	bucket := mkBucket(t, c, "metrics")

	// Three PUTs: inline, inline, and one of several blocks.
	sizes := []int{1000, 100 * kib, 3*mib + 17}
	bodies := map[string][]byte{}
	ct.sent.Store(0)
	for i, n := range sizes {
		key := fmt.Sprintf("obj-%d", i)
		bodies[key] = randBytes(n)
		put(t, c, bucket, key, bodies[key])
	}
	putSent := ct.sent.Load()

	// Two GETs and a NoSuchKey.
	ct.receive.Store(0)
	for _, key := range []string{"obj-0", "obj-2"} {
		checkBody(t, "GetObject "+key, get(t, c, bucket, key), bodies[key])
	}
	_, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("no-such-key")})
	wantErr(t, "GetObject of a missing key", err, "NoSuchKey", http.StatusNotFound)
	getReceived := ct.receive.Load()

	t.Logf("the client sent %d body bytes for the PUTs and received %d for the GETs", putSent, getReceived)
	m := scrapeMetrics(t, console)
	for _, tc := range []struct {
		name string
		kv   []string
		want float64
	}{
		{"coffer_s3_requests_total", []string{"op", "CreateBucket", "status", "200"}, 1},
		{"coffer_s3_requests_total", []string{"op", "PutObject", "status", "200"}, 3},
		{"coffer_s3_requests_total", []string{"op", "GetObject", "status", "200"}, 2},
		{"coffer_s3_requests_total", []string{"op", "GetObject", "status", "404"}, 1},
		{"coffer_s3_errors_total", []string{"op", "GetObject", "code", "NoSuchKey"}, 1},
		{"coffer_s3_request_duration_seconds_count", []string{"op", "PutObject"}, 3},
		{"coffer_s3_request_duration_seconds_count", []string{"op", "GetObject"}, 3},
		{"coffer_s3_received_bytes_total", []string{"op", "PutObject"}, float64(putSent)},
		{"coffer_s3_sent_bytes_total", []string{"op", "GetObject"}, float64(getReceived)},
		{"coffer_s3_received_bytes_total", []string{"op", "GetObject"}, 0},
		{"coffer_s3_requests_in_flight", nil, 0},
	} {
		if got := metricValue(m, tc.name, tc.kv...); got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.kv, got, tc.want)
		}
	}
	// The counted bytes are the objects (the SDK sends checksums in
	// headers over http), and the NoSuchKey document on top of the GETs.
	if want := int64(sizes[0] + sizes[1] + sizes[2]); putSent != want {
		t.Errorf("the client sent %d body bytes for the PUTs, want %d", putSent, want)
	}
	if min := int64(sizes[0] + sizes[2]); getReceived <= min || getReceived > min+2*kib {
		t.Errorf("the client received %d body bytes for the GETs, want the objects' %d plus an error document", getReceived, min)
	}
	var s3series int
	for _, s := range m {
		if !strings.HasPrefix(s.name, "coffer_s3_") {
			continue
		}
		s3series++
		for k, v := range s.labels {
			if k != "op" && k != "status" && k != "code" {
				t.Errorf("%s has a label %s=%q", s.name, k, v)
			}
			if v == bucket || strings.HasPrefix(v, "obj-") || v == "no-such-key" {
				t.Errorf("%s has the bucket or a key as a label: %s=%q", s.name, k, v)
			}
		}
	}
	if s3series == 0 {
		t.Error("no coffer_s3_ series")
	}
	// The storage gauges come from the buckets' usage records: this
	// server holds one bucket with the three objects.
	for name, want := range map[string]float64{
		"coffer_storage_buckets":              1,
		"coffer_storage_objects":              float64(len(sizes)),
		"coffer_storage_bytes":                float64(sizes[0] + sizes[1] + sizes[2]),
		"coffer_storage_multipart_uploads":    0,
		"coffer_storage_multipart_part_bytes": 0,
	} {
		if got := metricValue(m, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	// The audit log (on by default) recorded CreateBucket and the PUTs
	// and dropped nothing.
	if got := metricValue(m, "coffer_audit_events_recorded_total"); got < 4 {
		t.Errorf("coffer_audit_events_recorded_total = %v, want at least 4", got)
	}
	if got := metricValue(m, "coffer_audit_events_dropped_total"); got != 0 {
		t.Errorf("coffer_audit_events_dropped_total = %v, want 0", got)
	}
	if metricValue(m, "coffer_build_info", "version", "devel", "go_version", runtimeVersion(m)) != 1 {
		t.Error("no coffer_build_info{version=\"devel\"} 1")
	}

	// Health: on the ops listener and, unauthenticated, on the S3 one.
	hc := newHTTPClient()
	for _, u := range []string{
		"http://" + console + "/healthz",
		"http://" + console + "/readyz",
		ts.endpoint + "/_coffer/health/live",
		ts.endpoint + "/_coffer/health/ready",
	} {
		resp, body := do(t, hc, mustRequest(t, "GET", u))
		var doc struct{ Status string }
		if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &doc) != nil || doc.Status != "ok" {
			t.Errorf("GET %s = %d %q, want 200 with status ok", u, resp.StatusCode, body)
		}
	}
	// The S3 listener does not serve metrics.
	if resp, body := do(t, hc, mustRequest(t, "GET", ts.endpoint+"/metrics")); resp.StatusCode == http.StatusOK || bytes.Contains(body, []byte("coffer_s3_")) {
		t.Errorf("GET /metrics on the S3 listener = %d %.200q, want an S3 error", resp.StatusCode, body)
	}

	// On a virtual-hosted bucket the health paths are object keys.
	_, port, _ := net.SplitHostPort(ts.addr)
	vhc := vhostHTTPClient(ts.addr)
	vc := newClient(t, "http://"+vhostDomain+":"+port, func(o *s3.Options) {
		o.UsePathStyle = false
		o.HTTPClient = vhc
	})
	for _, key := range []string{"_coffer/health/live", "_coffer/health/ready", "_coffer/admin/v1/users"} {
		body := []byte("an object named " + key)
		put(t, vc, bucket, key, body)
		checkBody(t, "GetObject virtual-hosted "+key, get(t, vc, bucket, key), body)
		checkBody(t, "GetObject path-style "+key, get(t, c, bucket, key), body)
	}
	resp, body := do(t, vhc, mustRequest(t, "GET", "http://"+bucket+"."+vhostDomain+":"+port+"/_coffer/health/live"))
	if resp.StatusCode != http.StatusForbidden || !bytes.Contains(body, []byte("<Code>AccessDenied</Code>")) {
		t.Errorf("anonymous virtual-hosted GET /_coffer/health/live = %d %.200q, want S3's AccessDenied for the object", resp.StatusCode, body)
	}
	m = scrapeMetrics(t, console)
	if got := metricValue(m, "coffer_s3_requests_total", "op", "PutObject", "status", "200"); got != 6 {
		t.Errorf("PutObject 200 after the virtual-hosted PUTs = %v, want 6", got)
	}
}

// runtimeVersion returns the go_version label of coffer_build_info.
func runtimeVersion(m []metricSample) string {
	for _, s := range m {
		if s.name == "coffer_build_info" {
			return s.labels["go_version"]
		}
	}
	return ""
}

// TestMetricsConsoleOff checks that the ops listener can be turned off
// and that the S3 listener's health endpoints remain.
func TestMetricsConsoleOff(t *testing.T) {
	t.Parallel()
	ts := startServer(t, "--console-address", "")
	for _, path := range []string{"/_coffer/health/live", "/_coffer/health/ready"} {
		resp, body := do(t, newHTTPClient(), mustRequest(t, "HEAD", ts.endpoint+path))
		if resp.StatusCode != http.StatusOK || len(body) != 0 {
			t.Errorf("HEAD %s = %d %q, want 200 without a body", path, resp.StatusCode, body)
		}
	}
}
