package loadgen

import (
	"math"
	"math/bits"
	"slices"
	"time"
)

// subBits sets the histogram's precision: every power of two is split into
// 1<<subBits linear buckets, so a bucket is at most 1/64 ≈ 1.6 % wide
// relative to its lower bound.
const (
	subBits  = 6
	subCount = 1 << subBits
	// numBuckets covers every non-negative int64.
	numBuckets = (64 - subBits) * subCount
)

// Histogram is a log-linear latency histogram in the style of HDR
// histograms: values below 64 ns are exact, larger ones fall into buckets
// of about 1.6 % relative width. Histograms with the same layout merge by
// adding counts. The zero value is empty and ready to use.
type Histogram struct {
	counts []int64 // allocated on first Record
	total  int64
	min    int64
	max    int64
}

// bucketOf returns the bucket index of v ≥ 0.
func bucketOf(v int64) int {
	if v < subCount {
		return int(v)
	}
	shift := bits.Len64(uint64(v)) - subBits - 1 // v>>shift is in [64, 128)
	return (shift+1)*subCount + int(v>>shift) - subCount
}

// bucketBounds returns the smallest and largest value of bucket i.
func bucketBounds(i int) (lo, hi int64) {
	if i < subCount {
		return int64(i), int64(i)
	}
	shift := i/subCount - 1
	m := int64(i%subCount + subCount)
	lo = m << shift
	return lo, lo + (int64(1) << shift) - 1
}

// Record adds one observation. Negative durations count as zero.
func (h *Histogram) Record(d time.Duration) {
	v := max(int64(d), 0)
	if h.counts == nil {
		h.counts = make([]int64, numBuckets)
	}
	h.counts[bucketOf(v)]++
	if h.total == 0 || v < h.min {
		h.min = v
	}
	h.max = max(h.max, v)
	h.total++
}

// Merge adds o's observations to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.total == 0 {
		return
	}
	if h.counts == nil {
		h.counts = make([]int64, numBuckets)
	}
	for i, n := range o.counts {
		h.counts[i] += n
	}
	if h.total == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	h.total += o.total
}

// Count returns the number of observations.
func (h *Histogram) Count() int64 { return h.total }

// Max returns the largest observation, exactly.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) }

// Quantile returns the q-quantile (0 ≤ q ≤ 1) of the observations: the
// midpoint of the bucket holding the ⌈q·n⌉-th smallest value, clamped to
// the exact minimum and maximum. It returns 0 for an empty histogram.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.total == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(h.total)))
	rank = min(max(rank, 1), h.total)
	var seen int64
	for i, n := range h.counts {
		seen += n
		if seen >= rank {
			lo, hi := bucketBounds(i)
			return time.Duration(min(max(lo+(hi-lo)/2, h.min), h.max))
		}
	}
	return time.Duration(h.max)
}

// HistBucket is one non-empty bucket of a Histogram in results.json.
type HistBucket struct {
	Index int   `json:"i"`
	LoNs  int64 `json:"lo_ns"`
	HiNs  int64 `json:"hi_ns"`
	Count int64 `json:"n"`
}

// HistJSON is the serialized form of a Histogram.
type HistJSON struct {
	SubBuckets int          `json:"sub_buckets"`
	MinNs      int64        `json:"min_ns"`
	MaxNs      int64        `json:"max_ns"`
	Buckets    []HistBucket `json:"buckets"`
}

// Export returns h in its serialized form.
func (h *Histogram) Export() HistJSON {
	j := HistJSON{SubBuckets: subCount, MinNs: h.min, MaxNs: h.max, Buckets: []HistBucket{}}
	for i, n := range h.counts {
		if n > 0 {
			lo, hi := bucketBounds(i)
			j.Buckets = append(j.Buckets, HistBucket{Index: i, LoNs: lo, HiNs: hi, Count: n})
		}
	}
	return j
}

// importHist rebuilds a Histogram from its serialized form.
func importHist(j HistJSON) (*Histogram, bool) {
	h := &Histogram{}
	if len(j.Buckets) == 0 {
		return h, true
	}
	if j.SubBuckets != subCount {
		return nil, false
	}
	h.counts = make([]int64, numBuckets)
	for _, b := range j.Buckets {
		if b.Index < 0 || b.Index >= numBuckets || b.Count < 0 {
			return nil, false
		}
		h.counts[b.Index] += b.Count
		h.total += b.Count
	}
	h.min, h.max = j.MinNs, j.MaxNs
	return h, true
}

// median returns the median of xs (the mean of the middle two for an even
// count), or 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
