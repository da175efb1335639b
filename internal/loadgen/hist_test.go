package loadgen

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestBucketBounds(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	values := []int64{0, 1, 63, 64, 65, 127, 128, 129, 1000, 1 << 20, math.MaxInt64, math.MaxInt64 - 1}
	for range 10000 {
		values = append(values, rng.Int64N(1<<uint(rng.IntN(62)+1)))
	}
	for _, v := range values {
		i := bucketOf(v)
		if i < 0 || i >= numBuckets {
			t.Fatalf("bucketOf(%d) = %d, out of [0, %d)", v, i, numBuckets)
		}
		lo, hi := bucketBounds(i)
		if v < lo || v > hi {
			t.Fatalf("value %d in bucket %d with bounds [%d, %d]", v, i, lo, hi)
		}
		if width := float64(hi - lo + 1); lo >= subCount && width/float64(lo) > 1.0/subCount+1e-12 {
			t.Fatalf("bucket %d [%d, %d] is %.4f wide relative to its lower bound, want ≤ 1/%d", i, lo, hi, width/float64(lo), subCount)
		}
	}
	// Buckets tile the line: each starts right after the previous one.
	for i := 1; i < numBuckets; i++ {
		_, prevHi := bucketBounds(i - 1)
		lo, _ := bucketBounds(i)
		if lo != prevHi+1 {
			t.Fatalf("bucket %d starts at %d, previous ends at %d", i, lo, prevHi)
		}
	}
}

// within reports whether got is within rel (relative) of want.
func within(got, want time.Duration, rel float64) bool {
	return math.Abs(float64(got-want)) <= rel*float64(want)
}

func TestQuantiles(t *testing.T) {
	t.Parallel()
	uniform := func() *Histogram {
		var h Histogram
		for i := 1; i <= 100000; i++ {
			h.Record(time.Duration(i) * time.Microsecond)
		}
		return &h
	}()
	// Exponential with mean 1 ms through the inverse CDF at evenly spaced
	// probabilities: its q-quantile is -ln(1-q) ms.
	exp := func() *Histogram {
		var h Histogram
		const n = 100000
		for i := range n {
			p := (float64(i) + 0.5) / n
			h.Record(time.Duration(-math.Log(1-p) * float64(time.Millisecond)))
		}
		return &h
	}()
	expQ := func(q float64) time.Duration { return time.Duration(-math.Log(1-q) * float64(time.Millisecond)) }
	for _, tc := range []struct {
		name string
		h    *Histogram
		q    float64
		want time.Duration
	}{
		{"uniform p50", uniform, 0.50, 50 * time.Millisecond},
		{"uniform p90", uniform, 0.90, 90 * time.Millisecond},
		{"uniform p99", uniform, 0.99, 99 * time.Millisecond},
		{"uniform p0 is the min", uniform, 0, time.Microsecond},
		{"uniform p100 is the max", uniform, 1, 100 * time.Millisecond},
		{"exponential p50", exp, 0.50, expQ(0.50)},
		{"exponential p90", exp, 0.90, expQ(0.90)},
		{"exponential p99", exp, 0.99, expQ(0.99)},
		{"exponential p99.9", exp, 0.999, expQ(0.999)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.h.Quantile(tc.q); !within(got, tc.want, 0.02) {
				t.Errorf("Quantile(%v) = %v, want %v ± 2%%", tc.q, got, tc.want)
			}
		})
	}
	if got, want := uniform.Max(), 100*time.Millisecond; got != want {
		t.Errorf("Max() = %v, want %v", got, want)
	}
	if got := uniform.Count(); got != 100000 {
		t.Errorf("Count() = %d, want 100000", got)
	}
}

func TestQuantileSmall(t *testing.T) {
	t.Parallel()
	var empty Histogram
	if got := empty.Quantile(0.5); got != 0 {
		t.Errorf("empty Quantile(0.5) = %v, want 0", got)
	}
	var h Histogram
	for _, v := range []time.Duration{5, 10, 20, 40, -3} { // below 64 ns values are exact
		h.Record(v)
	}
	for q, want := range map[float64]time.Duration{0.2: 0, 0.4: 5, 0.5: 10, 0.6: 10, 0.8: 20, 1: 40} {
		if got := h.Quantile(q); got != want {
			t.Errorf("Quantile(%v) = %v, want %v", q, got, want)
		}
	}
}

func TestMergeEqualsRecordingAll(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	var all, a, b Histogram
	for i := range 5000 {
		v := time.Duration(rng.Int64N(int64(time.Second)))
		all.Record(v)
		if i%3 == 0 {
			a.Record(v)
		} else {
			b.Record(v)
		}
	}
	var m Histogram
	m.Merge(&a)
	m.Merge(&b)
	m.Merge(&Histogram{}) // empty merges are no-ops
	if diff := cmp.Diff(all.Export(), m.Export()); diff != "" {
		t.Errorf("merged histogram differs from one recording all values (-all +merged):\n%s", diff)
	}
	back, ok := importHist(m.Export())
	if !ok {
		t.Fatal("importHist rejected an exported histogram")
	}
	for _, q := range []float64{0.5, 0.9, 0.99} {
		if back.Quantile(q) != all.Quantile(q) {
			t.Errorf("after export/import Quantile(%v) = %v, want %v", q, back.Quantile(q), all.Quantile(q))
		}
	}
}

func TestImportHistRejectsBadInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		j    HistJSON
	}{
		{"other layout", HistJSON{SubBuckets: 32, Buckets: []HistBucket{{Index: 1, Count: 1}}}},
		{"index out of range", HistJSON{SubBuckets: subCount, Buckets: []HistBucket{{Index: numBuckets, Count: 1}}}},
		{"negative count", HistJSON{SubBuckets: subCount, Buckets: []HistBucket{{Index: 3, Count: -1}}}},
	} {
		if _, ok := importHist(tc.j); ok {
			t.Errorf("%s: importHist accepted %+v", tc.name, tc.j)
		}
	}
}

func TestMedian(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		xs   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{7}, 7},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{100, 0, 100, 100, 5}, 100},
	} {
		orig := append([]float64(nil), tc.xs...)
		if got := median(tc.xs); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.xs, got, tc.want)
		}
		if diff := cmp.Diff(orig, tc.xs); diff != "" {
			t.Errorf("median changed its input:\n%s", diff)
		}
	}
}

func TestSummarize(t *testing.T) {
	t.Parallel()
	var h Histogram
	for range 10 {
		h.Record(2 * time.Millisecond)
	}
	// A slow start, then steady: the median of the windows ignores the
	// warm-up that the mean includes.
	got := summarize(400, 400<<20, []int64{10, 100, 100, 90, 100}, &h, 4)
	want := Summary{OpsPerSecMedian: 100, OpsPerSecMean: 100, MiBPerSec: 100, P50Ms: 2, P90Ms: 2, P99Ms: 2, MaxMs: 2}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) <= 0.02*math.Abs(b)+1e-9 })); diff != "" {
		t.Errorf("summarize (-want +got):\n%s", diff)
	}
	if z := summarize(0, 0, nil, &Histogram{}, 0); z != (Summary{}) {
		t.Errorf("summarize of nothing = %+v, want zero", z)
	}
}

func BenchmarkHistogramRecord(b *testing.B) {
	var h Histogram
	b.ReportAllocs()
	d := time.Duration(1)
	for b.Loop() {
		h.Record(d)
		d = (d*7 + 13) & (1<<40 - 1)
	}
}
