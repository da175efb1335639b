package console

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeSeries is a MetricsSeries that writes a fixed document and
// remembers the since it was asked for.
type fakeSeries struct {
	doc string
	mu  sync.Mutex
	got []time.Time
}

func (s *fakeSeries) WriteJSON(w io.Writer, since time.Time) error {
	s.mu.Lock()
	s.got = append(s.got, since)
	s.mu.Unlock()
	_, err := io.WriteString(w, s.doc)
	return err
}

func (s *fakeSeries) Interval() time.Duration { return 5 * time.Second }

func (s *fakeSeries) lastSince() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.got[len(s.got)-1]
}

// seriesFixture is two samples: 2 then 4 requests/s, GetObject's p99
// 12 ms, 1,000 objects of 1 MiB in all.
const seriesFixture = `{"interval":5,"time":[1,2],"requests":[2,4],"clientErrors":[0,1],"serverErrors":[0,0],
"p50":[null,0.004],"p99":[null,0.012],"bytesIn":[0,2048],"bytesOut":[0,0],"objects":[1000,1000],"bytes":[1048576,1048576],
"ops":{"GetObject":{"requests":[0,3],"errors":[0,1],"p50":[null,0.004],"p99":[null,0.012]},"PutObject":{"requests":[2,1],"errors":[0,0],"p50":[0.002,0.003],"p99":[0.005,0.006]}}}`

func withMonitor(f *fixture) *fakeSeries {
	s := &fakeSeries{doc: seriesFixture}
	f.h.monitor = MonitorDeps{
		Metrics: s,
		Version: "v1.2.3-test",
		Health: func(context.Context) Health {
			return Health{Ready: false, Status: "unavailable", Checks: map[string]string{"metadata": "ok", "blobs": "timeout"}, Disk: "ok"}
		},
	}
	return s
}

func TestMetricsPage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, 1)
	s := withMonitor(f)
	id, _ := f.signIn(t, testRootKey, testRootSecret)
	code, page := f.get(t, id, "/monitoring")
	if code != http.StatusOK {
		t.Fatalf("GET /monitoring: %d\n%s", code, page)
	}
	for _, want := range []string{
		`<code id="version">v1.2.3-test</code>`,
		`id="health">unavailable</span>`,
		`data-check="blobs">blobs <span class="badge off">timeout</span>`,
		`data-check="metadata">metadata <span class="badge on">ok</span>`,
		`<section id="charts" data-interval="5">`,
		`<script src="/static/monitor.js" defer></script>`,
		`data-v="requests">3.0</td>`,  // the mean of 2 and 4
		`data-v="p99">12.0 ms</td>`,   // the latest
		`data-v="objects">1000</td>`,  // the latest
		`data-v="bytes">1.0 MiB</td>`, // the latest
		`<tr data-op="GetObject"><td>GetObject</td><td class="num">1.5</td><td class="num">0.5</td><td class="num">4.0 ms</td><td class="num">12.0 ms</td></tr>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if strings.Index(page, `data-op="GetObject"`) > strings.Index(page, `data-op="PutObject"`) {
		t.Error("operations are not ordered by request rate")
	}
	if got, want := s.lastSince(), f.clock.now().Add(-time.Minute); !got.Equal(want) {
		t.Errorf("the table read samples since %v, want %v", got, want)
	}
	if strings.Contains(page, "<script>") {
		t.Error("inline script on the page")
	}
}

func TestMetricsData(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, 1)
	s := withMonitor(f)
	id, _ := f.signIn(t, testRootKey, testRootSecret)
	now := f.clock.now()
	for _, tc := range []struct {
		query string
		since time.Time
	}{
		{"", now.Add(-time.Hour)},
		{"?since=1", now.Add(-time.Hour)}, // older than the window
		{fmt.Sprintf("?since=%d", now.Add(-time.Minute).UnixMilli()), now.Add(-time.Minute)},
	} {
		resp := f.do(t, request{method: "GET", path: "/monitoring/data" + tc.query, cookie: id})
		b := body(t, resp)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || !json.Valid([]byte(b)) {
			t.Fatalf("GET /monitoring/data%s: %d %s %q", tc.query, resp.StatusCode, resp.Header.Get("Content-Type"), b)
		}
		if got := s.lastSince(); !got.Equal(tc.since) {
			t.Errorf("GET /monitoring/data%s read since %v, want %v", tc.query, got, tc.since)
		}
	}
	if code, _ := f.get(t, id, "/monitoring/data?since=soon"); code != http.StatusBadRequest {
		t.Errorf("since=soon: %d, want 400", code)
	}
}

// TestMetricsAuthorization checks that the page and its data need
// admin:ServerInfo.
func TestMetricsAuthorization(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, 1)
	withMonitor(f)
	f.user(t, "admin", "admin-password", "admin")
	f.user(t, "writer", "writer-password", "readwrite")
	for _, tc := range []struct {
		user, password string
		want           int
	}{
		{testRootKey, testRootSecret, 200},
		{"admin", "admin-password", 200},
		{"writer", "writer-password", 403},
	} {
		id, _ := f.signIn(t, tc.user, tc.password)
		for _, p := range []string{"/monitoring", "/monitoring/data"} {
			if code, _ := f.get(t, id, p); code != tc.want {
				t.Errorf("%s GET %s: %d, want %d", tc.user, p, code, tc.want)
			}
		}
	}
	resp := f.do(t, request{method: "GET", path: "/monitoring/data"})
	if resp.StatusCode != http.StatusSeeOther {
		t.Errorf("GET /monitoring/data without a session: %d, want 303", resp.StatusCode)
	}
}

func TestMetricsOff(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, 1)
	id, _ := f.signIn(t, testRootKey, testRootSecret)
	if code, page := f.get(t, id, "/monitoring"); code != 200 || !strings.Contains(page, `id="no-metrics"`) {
		t.Errorf("GET /monitoring without metrics: %d", code)
	}
	if code, _ := f.get(t, id, "/monitoring/data"); code != http.StatusNotFound {
		t.Errorf("GET /monitoring/data without metrics: %d, want 404", code)
	}
}

func TestMetricsSamples(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		interval time.Duration
		want     int
	}{
		{0, 720}, {5 * time.Second, 720}, {time.Minute, 60}, {time.Second, 3600}, {100 * time.Millisecond, MaxMetricsSamples},
	} {
		if got := MetricsSamples(tc.interval); got != tc.want {
			t.Errorf("MetricsSamples(%v) = %d, want %d", tc.interval, got, tc.want)
		}
	}
}
