package metrics

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/coffer-s3/coffer/internal/s3api"
	"github.com/coffer-s3/coffer/internal/s3err"
)

// stepClock is a clock that tests move by hand.
type stepClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *stepClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *stepClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newTestSampler(t *testing.T, samples int) (*Registry, *Sampler, *stepClock) {
	t.Helper()
	r, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	objects := int64(0)
	if err := r.StorageFunc(func(context.Context) (Storage, error) {
		objects++
		return Storage{Objects: objects, Bytes: objects * 1000}, nil
	}); err != nil {
		t.Fatal(err)
	}
	c := &stepClock{t: time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)}
	return r, r.NewSampler(SamplerConfig{Interval: 5 * time.Second, Samples: samples, Clock: c.now}), c
}

func observe(r *Registry, op string, status int, code s3err.Code, d time.Duration, in, out int64, n int) {
	for range n {
		r.ObserveRequest(&s3api.RequestRecord{Op: op, Status: status, Code: code, Duration: d, BytesIn: in, BytesOut: out})
	}
}

// TestSamplerRates checks that a sample's rates are the counters'
// differences over the interval, its latencies the histogram's quantiles
// of that interval only, and its storage values the gauges'.
func TestSamplerRates(t *testing.T) {
	t.Parallel()
	r, s, c := newTestSampler(t, 10)
	observe(r, "GetObject", 200, "", time.Second, 0, 0, 50) // before the first sample: not counted
	s.Sample()
	if got := s.Samples(time.Time{}); len(got) != 0 {
		t.Fatalf("after the first gather: %d samples, want 0", len(got))
	}
	observe(r, "GetObject", 200, "", 3*time.Millisecond, 0, 4096, 16)
	observe(r, "GetObject", 404, s3err.NoSuchKey, 3*time.Millisecond, 0, 200, 2)
	observe(r, "PutObject", 500, s3err.InternalError, 40*time.Millisecond, 1000, 0, 2)
	c.add(4 * time.Second)
	s.Sample()
	got := s.Samples(time.Time{})
	if len(got) != 1 {
		t.Fatalf("%d samples, want 1", len(got))
	}
	x := got[0]
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	near("requests/s", x.Requests, 20.0/4)
	near("4xx/s", x.ClientErrors, 2.0/4)
	near("5xx/s", x.ServerErrors, 2.0/4)
	near("bytes in/s", x.BytesIn, 2000.0/4)
	near("bytes out/s", x.BytesOut, (16*4096+2*200)/4.0)
	near("objects", x.Objects, 2)
	near("stored bytes", x.StoredBytes, 2000)
	if !x.Time.Equal(c.now()) {
		t.Errorf("time %v, want %v", x.Time, c.now())
	}
	// 18 of 20 requests took 3 ms, in the bucket (2.5 ms, 5 ms]; the 1 s
	// requests before the first sample are not in this interval.
	if x.P50 <= 0.0025 || x.P50 > 0.005 {
		t.Errorf("p50 = %v, want in (0.0025, 0.005]", x.P50)
	}
	if x.P99 <= 0.025 || x.P99 > 0.05 {
		t.Errorf("p99 = %v, want in (0.025, 0.05]", x.P99)
	}
	if len(x.Ops) != 2 || x.Ops[0].Op != "GetObject" || x.Ops[1].Op != "PutObject" {
		t.Fatalf("ops = %+v, want GetObject and PutObject", x.Ops)
	}
	near("GetObject requests/s", x.Ops[0].Requests, 18.0/4)
	near("GetObject errors/s", x.Ops[0].Errors, 2.0/4)
	near("PutObject errors/s", x.Ops[1].Errors, 2.0/4)
	if p := x.Ops[1].P50; p <= 0.025 || p > 0.05 {
		t.Errorf("PutObject p50 = %v, want in (0.025, 0.05]", p)
	}

	// An interval without requests: zero rates, unknown latencies, no ops.
	c.add(5 * time.Second)
	s.Sample()
	x = s.Samples(time.Time{})[1]
	if x.Requests != 0 || !math.IsNaN(x.P50) || !math.IsNaN(x.P99) || len(x.Ops) != 0 {
		t.Errorf("idle sample = %+v, want zero rates, NaN latencies, no ops", x)
	}
}

// TestSamplerRing checks that the ring keeps the last Samples samples,
// oldest first, and that Samples(since) cuts by time.
func TestSamplerRing(t *testing.T) {
	t.Parallel()
	const size = 4
	r, s, c := newTestSampler(t, size)
	start := c.now()
	s.Sample()
	for i := 1; i <= 3*size+1; i++ {
		observe(r, "HeadObject", 200, "", time.Millisecond, 0, 0, i)
		c.add(time.Second)
		s.Sample()
		got := s.Samples(time.Time{})
		if want := min(i, size); len(got) != want {
			t.Fatalf("after %d samples: %d kept, want %d", i, len(got), want)
		}
		for j, x := range got {
			n := i - len(got) + 1 + j // the sample's number, 1-based
			if want := start.Add(time.Duration(n) * time.Second); !x.Time.Equal(want) {
				t.Errorf("after %d samples: sample %d at %v, want %v", i, j, x.Time, want)
			}
			if x.Requests != float64(n) {
				t.Errorf("after %d samples: sample %d has %v requests/s, want %d", i, j, x.Requests, n)
			}
		}
	}
	if got := s.Samples(c.now().Add(-2 * time.Second)); len(got) != 2 {
		t.Errorf("samples of the last 2 s: %d, want 2", len(got))
	}
}

func TestQuantile(t *testing.T) {
	t.Parallel()
	n := len(DurationBuckets)
	cum := func(perBucket map[int]float64) []float64 {
		b := make([]float64, n)
		var sum float64
		for i := range b {
			sum += perBucket[i]
			b[i] = sum
		}
		return b
	}
	for _, tc := range []struct {
		name    string
		q       float64
		buckets []float64
		count   float64
		want    float64
	}{
		{"empty", 0.5, cum(nil), 0, math.NaN()},
		{"all in the first bucket", 0.5, cum(map[int]float64{0: 10}), 10, 0.00005},
		{"halfway into the second bucket", 0.5, cum(map[int]float64{1: 10}), 10, 0.0001 + 0.5*(0.00025-0.0001)},
		{"beyond the last bound", 0.99, cum(map[int]float64{0: 1}), 100, 60},
		{"p99 at the top of a bucket", 0.99, cum(map[int]float64{3: 99, 9: 1}), 100, 0.001},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := quantile(tc.q, tc.buckets, tc.count)
			if math.IsNaN(tc.want) != math.IsNaN(got) || (!math.IsNaN(got) && math.Abs(got-tc.want) > 1e-12) {
				t.Errorf("quantile(%v) = %v, want %v", tc.q, got, tc.want)
			}
		})
	}
}

// TestSamplerJSON checks the document the console's charts read: columns
// of equal length, null for unknown values, and an operation's column
// with zero requests where it had none.
func TestSamplerJSON(t *testing.T) {
	t.Parallel()
	r, s, c := newTestSampler(t, 10)
	s.Sample()
	c.add(5 * time.Second)
	s.Sample() // idle
	observe(r, "PutObject", 200, "", 2*time.Millisecond, 10, 0, 5)
	c.add(5 * time.Second)
	s.Sample()
	var buf bytes.Buffer
	if err := s.WriteJSON(&buf, time.Time{}); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Interval float64    `json:"interval"`
		Time     []int64    `json:"time"`
		Requests []float64  `json:"requests"`
		P50      []*float64 `json:"p50"`
		Objects  []float64  `json:"objects"`
		Ops      map[string]struct {
			Requests []float64  `json:"requests"`
			P99      []*float64 `json:"p99"`
		} `json:"ops"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("decode %s: %v", buf.String(), err)
	}
	if doc.Interval != 5 || len(doc.Time) != 2 || len(doc.Requests) != 2 || len(doc.P50) != 2 || len(doc.Objects) != 2 {
		t.Fatalf("document %s: want interval 5 and columns of 2", buf.String())
	}
	if doc.P50[0] != nil || doc.P50[1] == nil || doc.Requests[1] != 1 {
		t.Errorf("p50 %v, requests %v: want null then a value, 0 then 1", doc.P50, doc.Requests)
	}
	put, ok := doc.Ops["PutObject"]
	if !ok || len(put.Requests) != 2 || put.Requests[0] != 0 || put.Requests[1] != 1 || put.P99[0] != nil || put.P99[1] == nil {
		t.Errorf("PutObject columns %+v in %s", put, buf.String())
	}
	if got, want := doc.Time[1], c.now().UnixMilli(); got != want {
		t.Errorf("last time %d, want %d", got, want)
	}
}
