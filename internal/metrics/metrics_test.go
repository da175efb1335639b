package metrics

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/prometheus/common/expfmt"

	"github.com/coffer-s3/coffer/internal/s3api"
	"github.com/coffer-s3/coffer/internal/s3err"
)

// sample is one line of the exposition: a metric name, its labels and its
// value. Histograms come as their _bucket, _sum and _count samples.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// exposition is a parsed scrape.
type exposition []sample

// scrape GETs the registry's handler and parses the text format.
func scrape(t *testing.T, r *Registry) exposition {
	t.Helper()
	rec := httptest.NewRecorder()
	r.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type %q, want the text format", ct)
	}
	return parse(t, rec.Body)
}

// parse parses the Prometheus text format.
func parse(t *testing.T, body io.Reader) exposition {
	t.Helper()
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(body)
	if err != nil {
		t.Fatalf("parse exposition: %v", err)
	}
	var out exposition
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			switch {
			case m.GetCounter() != nil:
				out = append(out, sample{name, labels, m.GetCounter().GetValue()})
			case m.GetGauge() != nil:
				out = append(out, sample{name, labels, m.GetGauge().GetValue()})
			case m.GetUntyped() != nil:
				out = append(out, sample{name, labels, m.GetUntyped().GetValue()})
			case m.GetHistogram() != nil:
				h := m.GetHistogram()
				out = append(out, sample{name + "_count", labels, float64(h.GetSampleCount())})
				out = append(out, sample{name + "_sum", labels, h.GetSampleSum()})
				for _, b := range h.GetBucket() {
					bl := map[string]string{"le": fmt.Sprint(b.GetUpperBound())}
					for k, v := range labels {
						bl[k] = v
					}
					out = append(out, sample{name + "_bucket", bl, float64(b.GetCumulativeCount())})
				}
			case m.GetSummary() != nil:
				out = append(out, sample{name + "_count", labels, float64(m.GetSummary().GetSampleCount())})
			}
		}
	}
	return out
}

// get returns the value of the sample named name with exactly the given
// labels (name, value pairs), and whether there is one.
func (e exposition) get(name string, kv ...string) (float64, bool) {
	for _, s := range e {
		if s.name != name || len(s.labels) != len(kv)/2 {
			continue
		}
		match := true
		for i := 0; i < len(kv); i += 2 {
			if s.labels[kv[i]] != kv[i+1] {
				match = false
				break
			}
		}
		if match {
			return s.value, true
		}
	}
	return 0, false
}

// want checks the value of one sample.
func (e exposition) want(t *testing.T, value float64, name string, kv ...string) {
	t.Helper()
	got, ok := e.get(name, kv...)
	if !ok {
		t.Errorf("no sample %s%v", name, kv)
		return
	}
	if got != value {
		t.Errorf("%s%v = %v, want %v", name, kv, got, value)
	}
}

// series returns the samples named name.
func (e exposition) series(name string) []sample {
	var out []sample
	for _, s := range e {
		if s.name == name {
			out = append(out, s)
		}
	}
	return out
}

func newRegistry(t testing.TB) *Registry {
	t.Helper()
	r, err := New(Config{Version: "v1.2.3"})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return r
}

func TestObserveRequest(t *testing.T) {
	t.Parallel()
	r := newRegistry(t)
	at := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	recs := []s3api.RequestRecord{
		{Op: "PutObject", Status: 200, BytesIn: 1000, Duration: 50 * time.Microsecond, Bucket: "photos", Key: "cat.jpg"},
		{Op: "PutObject", Status: 200, BytesIn: 2000, Duration: 3 * time.Millisecond, Bucket: "photos", Key: "dog.jpg"},
		{Op: "PutObject", Status: 200, BytesIn: 3000, Duration: 3 * time.Millisecond, Bucket: "photos", Key: "eel.jpg"},
		{Op: "GetObject", Status: 200, BytesOut: 1000, Duration: 200 * time.Millisecond, Bucket: "photos", Key: "cat.jpg"},
		{Op: "GetObject", Status: 206, BytesOut: 10, Duration: 2 * time.Minute, Bucket: "photos", Key: "cat.jpg"},
		{Op: "GetObject", Status: 404, Code: s3err.NoSuchKey, BytesOut: 300, Duration: time.Millisecond, Bucket: "photos", Key: "nope"},
		{Op: "GetObject", Status: 404, Code: s3err.NoSuchKey, BytesOut: 300, Duration: time.Millisecond, Bucket: "photos", Key: "nada"},
		{Op: "GetObject", Status: 200, Code: s3err.InternalError, BytesOut: 5, Duration: time.Millisecond, Bucket: "photos", Key: "broken"},
		{Op: "GetObject", Status: s3api.StatusClientClosed, Duration: time.Millisecond, Bucket: "photos", Key: "gone"},
		{Op: s3api.OpUnknown, Status: 400, Code: s3err.InvalidBucketName, BytesIn: 7, Duration: time.Millisecond},
		{Op: "NoSuchOp", Status: 400, Code: "NoSuchCode", Duration: time.Millisecond},
	}
	for i := range recs {
		recs[i].Start = at
		recs[i].AccessKeyID = "AKIAEXAMPLE"
		recs[i].RemoteAddr = "192.0.2.1:5000"
		recs[i].RequestID = fmt.Sprintf("REQ%d", i)
		r.ObserveRequest(&recs[i])
	}
	e := scrape(t, r)

	e.want(t, 3, "coffer_s3_requests_total", "op", "PutObject", "status", "200")
	e.want(t, 2, "coffer_s3_requests_total", "op", "GetObject", "status", "200")
	e.want(t, 1, "coffer_s3_requests_total", "op", "GetObject", "status", "206")
	e.want(t, 2, "coffer_s3_requests_total", "op", "GetObject", "status", "404")
	e.want(t, 1, "coffer_s3_requests_total", "op", "GetObject", "status", "499")
	// Records of an op outside the table count as Unknown.
	e.want(t, 2, "coffer_s3_requests_total", "op", s3api.OpUnknown, "status", "400")
	if n := len(e.series("coffer_s3_requests_total")); n != 6 {
		t.Errorf("%d series of coffer_s3_requests_total, want 6", n)
	}

	e.want(t, 2, "coffer_s3_errors_total", "op", "GetObject", "code", "NoSuchKey")
	e.want(t, 1, "coffer_s3_errors_total", "op", "GetObject", "code", "InternalError")
	e.want(t, 1, "coffer_s3_errors_total", "op", s3api.OpUnknown, "code", "InvalidBucketName")
	e.want(t, 1, "coffer_s3_errors_total", "op", s3api.OpUnknown, "code", codeOther)
	if n := len(e.series("coffer_s3_errors_total")); n != 4 {
		t.Errorf("%d series of coffer_s3_errors_total, want 4", n)
	}

	e.want(t, 6000, "coffer_s3_received_bytes_total", "op", "PutObject")
	e.want(t, 0, "coffer_s3_sent_bytes_total", "op", "PutObject")
	e.want(t, 0, "coffer_s3_received_bytes_total", "op", "GetObject")
	e.want(t, 1615, "coffer_s3_sent_bytes_total", "op", "GetObject")
	e.want(t, 7, "coffer_s3_received_bytes_total", "op", s3api.OpUnknown)

	e.want(t, 3, "coffer_s3_request_duration_seconds_count", "op", "PutObject")
	e.want(t, 1, "coffer_s3_request_duration_seconds_bucket", "op", "PutObject", "le", "0.0001")
	e.want(t, 1, "coffer_s3_request_duration_seconds_bucket", "op", "PutObject", "le", "0.0025")
	e.want(t, 3, "coffer_s3_request_duration_seconds_bucket", "op", "PutObject", "le", "0.005")
	e.want(t, 3, "coffer_s3_request_duration_seconds_bucket", "op", "PutObject", "le", "60")
	if sum, _ := e.get("coffer_s3_request_duration_seconds_sum", "op", "PutObject"); math.Abs(sum-0.00605) > 1e-9 {
		t.Errorf("PutObject duration sum %v, want 0.00605", sum)
	}
	e.want(t, 6, "coffer_s3_request_duration_seconds_count", "op", "GetObject")
	e.want(t, 5, "coffer_s3_request_duration_seconds_bucket", "op", "GetObject", "le", "60") // the 2-minute one is past the last bound
	e.want(t, 6, "coffer_s3_request_duration_seconds_bucket", "op", "GetObject", "le", "+Inf")
	if n := len(e.series("coffer_s3_request_duration_seconds_count")); n != 3 {
		t.Errorf("%d ops in the duration histogram, want 3 (ops never seen are not exported)", n)
	}
	var bounds []string
	for _, s := range e.series("coffer_s3_request_duration_seconds_bucket") {
		if s.labels["op"] == "PutObject" && s.labels["le"] != "+Inf" {
			bounds = append(bounds, s.labels["le"])
		}
	}
	if len(bounds) != len(DurationBuckets) {
		t.Errorf("%d finite buckets, want %d: %v", len(bounds), len(DurationBuckets), bounds)
	}

	e.want(t, 0, "coffer_s3_requests_in_flight")
	e.want(t, 1, "coffer_build_info", "version", "v1.2.3", "go_version", runtime.Version())
	if _, ok := e.get("go_goroutines"); !ok {
		t.Error("no go_goroutines: the Go collector is missing")
	}
	if runtime.GOOS == "linux" {
		if _, ok := e.get("process_resident_memory_bytes"); !ok {
			t.Error("no process_resident_memory_bytes: the process collector is missing")
		}
	}
}

// TestLabelsBounded feeds records for many buckets, keys, clients and odd
// codes and checks that no label carries them: the series stay few.
func TestLabelsBounded(t *testing.T) {
	t.Parallel()
	r := newRegistry(t)
	for i := range 2000 {
		rec := s3api.RequestRecord{
			Op:          "GetObject",
			Status:      404,
			Code:        s3err.Code(fmt.Sprintf("Code%d", i)),
			Bucket:      fmt.Sprintf("bucket-%d", i),
			Key:         fmt.Sprintf("key/%d", i),
			AccessKeyID: fmt.Sprintf("AK%d", i),
			RemoteAddr:  fmt.Sprintf("192.0.2.%d:%d", i%256, i),
			RequestID:   fmt.Sprintf("REQ%d", i),
		}
		if i%2 == 0 {
			rec.Op = fmt.Sprintf("Op%d", i)
			rec.Status = 1000 + i
		}
		r.ObserveRequest(&rec)
	}
	e := scrape(t, r)
	for _, s := range e {
		if !strings.HasPrefix(s.name, "coffer_s3_") {
			continue
		}
		for k, v := range s.labels {
			switch k {
			case "op", "status", "code", "le":
			default:
				t.Errorf("%s has label %s=%q", s.name, k, v)
			}
			if strings.HasPrefix(v, "bucket-") || strings.HasPrefix(v, "key/") || strings.HasPrefix(v, "AK") || strings.HasPrefix(v, "192.0.2.") || strings.HasPrefix(v, "REQ") {
				t.Errorf("%s has label %s=%q from a record's identity", s.name, k, v)
			}
		}
	}
	e.want(t, 1000, "coffer_s3_requests_total", "op", "GetObject", "status", "404")
	e.want(t, 1000, "coffer_s3_requests_total", "op", s3api.OpUnknown, "status", statusOther)
	e.want(t, 1000, "coffer_s3_errors_total", "op", "GetObject", "code", codeOther)
	e.want(t, 1000, "coffer_s3_errors_total", "op", s3api.OpUnknown, "code", codeOther)
	for _, name := range []string{"coffer_s3_requests_total", "coffer_s3_errors_total"} {
		if n := len(e.series(name)); n != 2 {
			t.Errorf("%d series of %s, want 2", n, name)
		}
	}
}

// TestObserveConcurrent observes from many goroutines at once, creating
// children concurrently, and checks that no update is lost.
func TestObserveConcurrent(t *testing.T) {
	t.Parallel()
	r := newRegistry(t)
	codes := []s3err.Code{s3err.NoSuchKey, s3err.AccessDenied, s3err.SlowDown, s3err.InternalError}
	const workers, each = 8, 500
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				rec := s3api.RequestRecord{Op: "HeadObject", Status: 200 + i%3, Code: codes[(w+i)%len(codes)], BytesIn: 1, BytesOut: 2, Duration: time.Millisecond}
				r.ObserveRequest(&rec)
			}
		})
	}
	wg.Wait()
	e := scrape(t, r)
	var requests, errors float64
	for _, s := range e.series("coffer_s3_requests_total") {
		requests += s.value
	}
	for _, s := range e.series("coffer_s3_errors_total") {
		errors += s.value
	}
	if requests != workers*each || errors != workers*each {
		t.Errorf("requests %v errors %v, want %d each", requests, errors, workers*each)
	}
	if n := len(e.series("coffer_s3_requests_total")); n != 3 {
		t.Errorf("%d status series, want 3", n)
	}
	if n := len(e.series("coffer_s3_errors_total")); n != len(codes) {
		t.Errorf("%d code series, want %d", n, len(codes))
	}
	e.want(t, workers*each, "coffer_s3_received_bytes_total", "op", "HeadObject")
	e.want(t, 2*workers*each, "coffer_s3_sent_bytes_total", "op", "HeadObject")
	e.want(t, workers*each, "coffer_s3_request_duration_seconds_count", "op", "HeadObject")
}

func TestTrackInFlight(t *testing.T) {
	t.Parallel()
	r := newRegistry(t)
	entered, release := make(chan struct{}), make(chan struct{})
	h := r.TrackInFlight(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		entered <- struct{}{}
		<-release
	}))
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() { h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil)) })
	}
	for range 3 {
		<-entered
	}
	scrape(t, r).want(t, 3, "coffer_s3_requests_in_flight")
	close(release)
	wg.Wait()
	scrape(t, r).want(t, 0, "coffer_s3_requests_in_flight")

	// A panicking handler leaves the gauge where it was.
	p := r.TrackInFlight(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) }))
	func() {
		defer func() { _ = recover() }()
		p.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	}()
	scrape(t, r).want(t, 0, "coffer_s3_requests_in_flight")
}

func TestFuncMetrics(t *testing.T) {
	t.Parallel()
	r := newRegistry(t)
	used := 42.0
	if err := r.GaugeFunc("coffer_storage_used_bytes", "Bytes stored.", func() float64 { return used }); err != nil {
		t.Fatal(err)
	}
	if err := r.CounterFunc("coffer_gc_runs_total", "GC passes run.", func() float64 { return 7 }); err != nil {
		t.Fatal(err)
	}
	e := scrape(t, r)
	e.want(t, 42, "coffer_storage_used_bytes")
	e.want(t, 7, "coffer_gc_runs_total")
	used = 43
	scrape(t, r).want(t, 43, "coffer_storage_used_bytes")

	for _, tc := range []struct {
		name string
		err  string
	}{
		{"storage_used_bytes", `does not start with "coffer_"`},
		{"coffer_", `does not start with "coffer_"`},
		{"coffer_storage_used_bytes", "previously registered"},
		{"coffer_s3_requests_total", "previously registered"},
	} {
		if err := r.GaugeFunc(tc.name, "x", func() float64 { return 0 }); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("GaugeFunc(%q) = %v, want an error containing %q", tc.name, err, tc.err)
		}
	}
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "coffer_gc_removed_total", Help: "Blobs removed."}, []string{"reason"})
	if err := r.Register(c); err != nil {
		t.Fatal(err)
	}
	c.WithLabelValues("orphan").Add(3)
	scrape(t, r).want(t, 3, "coffer_gc_removed_total", "reason", "orphan")
}

// TestLint runs Prometheus's metric linter over everything Coffer exports
// (the Go and process collectors are the library's own).
func TestLint(t *testing.T) {
	t.Parallel()
	r := newRegistry(t)
	rec := s3api.RequestRecord{Op: "GetObject", Status: 404, Code: s3err.NoSuchKey}
	r.ObserveRequest(&rec)
	rw := httptest.NewRecorder()
	r.Handler().ServeHTTP(rw, httptest.NewRequest("GET", "/metrics", nil))
	problems, err := promlint.New(rw.Body).Lint()
	if err != nil {
		t.Fatal(err)
	}
	var ours []string
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "coffer_") {
			ours = append(ours, p.Metric+": "+p.Text)
		}
	}
	sort.Strings(ours)
	if len(ours) > 0 {
		t.Errorf("lint problems:\n%s", strings.Join(ours, "\n"))
	}
}

// TestObserveAllocs checks the hot path: once an op's, status's and code's
// children exist, observing allocates nothing.
func TestObserveAllocs(t *testing.T) {
	r := newRegistry(t)
	ok := s3api.RequestRecord{Op: "GetObject", Status: 200, BytesOut: 4096, Duration: 3 * time.Millisecond, Bucket: "b", Key: "k"}
	fail := s3api.RequestRecord{Op: "GetObject", Status: 404, Code: s3err.NoSuchKey, BytesOut: 300, Duration: time.Millisecond}
	r.ObserveRequest(&ok)
	r.ObserveRequest(&fail)
	if n := testing.AllocsPerRun(1000, func() { r.ObserveRequest(&ok); r.ObserveRequest(&fail) }); n != 0 {
		t.Errorf("ObserveRequest allocates %v times, want 0", n)
	}
}

func BenchmarkObserve(b *testing.B) {
	r := newRegistry(b)
	recs := []s3api.RequestRecord{
		{Op: "GetObject", Status: 200, BytesOut: 100 << 10, Duration: 2 * time.Millisecond, Bucket: "bench", Key: "object"},
		{Op: "PutObject", Status: 200, BytesIn: 100 << 10, Duration: 4 * time.Millisecond, Bucket: "bench", Key: "object"},
		{Op: "HeadObject", Status: 200, Duration: 300 * time.Microsecond, Bucket: "bench", Key: "object"},
		{Op: "GetObject", Status: 404, Code: s3err.NoSuchKey, BytesOut: 300, Duration: time.Millisecond, Bucket: "bench", Key: "missing"},
	}
	for _, rec := range recs {
		name := rec.Op + "/" + fmt.Sprint(rec.Status)
		b.Run("serial/"+name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r.ObserveRequest(&rec)
			}
		})
	}
	b.Run("parallel/mixed", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				r.ObserveRequest(&recs[i%len(recs)])
				i++
			}
		})
	})
}
