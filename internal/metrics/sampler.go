package metrics

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// Defaults of SamplerConfig: a sample every 5 seconds, an hour of them.
const (
	DefaultSampleInterval = 5 * time.Second
	DefaultSamples        = 720
)

// SamplerConfig configures a Sampler. Zero fields take the defaults.
type SamplerConfig struct {
	Interval time.Duration // between samples
	Samples  int           // how many the ring keeps; older ones are dropped
	// Clock returns the current time; nil means time.Now.
	Clock func() time.Time
}

// A Sampler keeps the recent history of the server's own metrics in
// memory, for the console's Metrics page, so that live charts need no
// Prometheus server. Every Interval it gathers the Registry (what a
// scrape would read) and stores, per interval, the request, error and
// byte rates, the p50 and p99 latency (from the duration histogram's
// bucket counts in that interval, as Prometheus's histogram_quantile
// estimates them), per operation and in total, and the objects and bytes
// stored. The ring holds Samples of them: memory is bounded by Samples ×
// (the totals, 120 bytes, + 48 bytes per operation active in the
// interval, at most the op table's 52): under 2 MiB for 720 samples. It
// is safe for concurrent use.
type Sampler struct {
	gather   func() ([]*dto.MetricFamily, error)
	clock    func() time.Time
	interval time.Duration

	mu   sync.Mutex // guards ring, next, full, prev, prevAt
	ring []Sample
	next int  // where the next sample goes
	full bool // the ring has wrapped
	// prev is the cumulative state at the last gather, whose differences
	// with the next make a sample; nil before the first.
	prev   *gathered
	prevAt time.Time
}

// Sample is the metrics of one interval, ending at Time. Rates are per
// second over the interval. A latency is NaN when no request ended in
// the interval; Objects and Bytes are NaN when the storage totals could
// not be read.
type Sample struct {
	Time                 time.Time
	Requests             float64    // requests/s
	ClientErrors         float64    // requests/s answered 4xx
	ServerErrors         float64    // requests/s answered 5xx
	P50, P99             float64    // seconds
	BytesIn, BytesOut    float64    // bytes/s of request and response bodies
	Objects, StoredBytes float64    // at Time
	Ops                  []OpSample // the operations with requests in the interval, by name
}

// OpSample is one operation's part of a Sample.
type OpSample struct {
	Op       string
	Requests float64 // requests/s
	Errors   float64 // requests/s answered 4xx or 5xx
	P50, P99 float64 // seconds
}

// NewSampler returns a Sampler of r's metrics. Run takes the samples.
func (r *Registry) NewSampler(cfg SamplerConfig) *Sampler {
	return newSampler(cfg, r.reg.Gather)
}

func newSampler(cfg SamplerConfig, gather func() ([]*dto.MetricFamily, error)) *Sampler {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultSampleInterval
	}
	if cfg.Samples <= 0 {
		cfg.Samples = DefaultSamples
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	return &Sampler{gather: gather, clock: cfg.Clock, interval: cfg.Interval, ring: make([]Sample, cfg.Samples)}
}

// Interval returns the time between samples.
func (s *Sampler) Interval() time.Duration { return s.interval }

// Run samples every Interval until ctx ends, and returns nil then.
func (s *Sampler) Run(ctx context.Context) error {
	t := time.NewTicker(s.interval)
	defer t.Stop()
	s.Sample()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			s.Sample()
		}
	}
}

// Sample gathers the metrics now and, from the second call on, adds the
// sample of the interval since the previous call to the ring. A failed
// collection (such as the storage totals) leaves its values out.
func (s *Sampler) Sample() {
	mfs, _ := s.gather() // on error, the families that were collected
	g := readFamilies(mfs)
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	prev, prevAt := s.prev, s.prevAt
	s.prev, s.prevAt = g, now
	if prev == nil {
		return
	}
	secs := now.Sub(prevAt).Seconds()
	if secs <= 0 {
		return
	}
	s.ring[s.next] = g.since(prev, secs, now)
	s.next++
	if s.next == len(s.ring) {
		s.next, s.full = 0, true
	}
}

// Samples returns the samples taken after since, oldest first.
func (s *Sampler) Samples(since time.Time) []Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Sample
	add := func(part []Sample) {
		for _, x := range part {
			if x.Time.After(since) {
				out = append(out, x)
			}
		}
	}
	if s.full {
		add(s.ring[s.next:])
	}
	add(s.ring[:s.next])
	return out
}

// opCounts are one operation's cumulative counts.
type opCounts struct {
	requests, clientErrors, serverErrors float64
	bytesIn, bytesOut                    float64
	buckets                              []float64 // cumulative histogram counts per DurationBuckets bound
	count                                float64   // observations, +Inf included
}

// gathered is the cumulative state of one gather.
type gathered struct {
	ops                  map[string]*opCounts
	objects, storedBytes float64
}

func (g *gathered) op(name string) *opCounts {
	o := g.ops[name]
	if o == nil {
		o = &opCounts{}
		g.ops[name] = o
	}
	return o
}

// readFamilies extracts what a Sample needs from a gather.
func readFamilies(mfs []*dto.MetricFamily) *gathered {
	g := &gathered{ops: map[string]*opCounts{}, objects: math.NaN(), storedBytes: math.NaN()}
	for _, mf := range mfs {
		switch mf.GetName() {
		case "coffer_s3_requests_total":
			for _, m := range mf.GetMetric() {
				o := g.op(label(m, "op"))
				v := m.GetCounter().GetValue()
				o.requests += v
				if st, err := strconv.Atoi(label(m, "status")); err == nil {
					switch {
					case st >= 500:
						o.serverErrors += v
					case st >= 400:
						o.clientErrors += v
					}
				}
			}
		case "coffer_s3_received_bytes_total":
			for _, m := range mf.GetMetric() {
				g.op(label(m, "op")).bytesIn += m.GetCounter().GetValue()
			}
		case "coffer_s3_sent_bytes_total":
			for _, m := range mf.GetMetric() {
				g.op(label(m, "op")).bytesOut += m.GetCounter().GetValue()
			}
		case "coffer_s3_request_duration_seconds":
			for _, m := range mf.GetMetric() {
				o := g.op(label(m, "op"))
				h := m.GetHistogram()
				o.count = float64(h.GetSampleCount())
				o.buckets = make([]float64, len(DurationBuckets))
				for _, b := range h.GetBucket() {
					if i, ok := slices.BinarySearch(DurationBuckets, b.GetUpperBound()); ok {
						o.buckets[i] = float64(b.GetCumulativeCount())
					}
				}
			}
		case "coffer_storage_objects":
			g.objects = gaugeValue(mf)
		case "coffer_storage_bytes":
			g.storedBytes = gaugeValue(mf)
		}
	}
	return g
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func gaugeValue(mf *dto.MetricFamily) float64 {
	if ms := mf.GetMetric(); len(ms) == 1 {
		return ms[0].GetGauge().GetValue()
	}
	return math.NaN()
}

// since returns the sample of the interval from prev to g, secs long.
func (g *gathered) since(prev *gathered, secs float64, at time.Time) Sample {
	smp := Sample{Time: at, Objects: g.objects, StoredBytes: g.storedBytes}
	total := make([]float64, len(DurationBuckets))
	var totalCount float64
	names := make([]string, 0, len(g.ops))
	for name := range g.ops {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		o, p := g.ops[name], prev.ops[name]
		if p == nil {
			p = &opCounts{}
		}
		d := func(cur, old float64) float64 { return max(cur-old, 0) } // counters never go down; a reset counts from 0
		reqs := d(o.requests, p.requests)
		smp.Requests += reqs / secs
		smp.ClientErrors += d(o.clientErrors, p.clientErrors) / secs
		smp.ServerErrors += d(o.serverErrors, p.serverErrors) / secs
		smp.BytesIn += d(o.bytesIn, p.bytesIn) / secs
		smp.BytesOut += d(o.bytesOut, p.bytesOut) / secs
		buckets := make([]float64, len(DurationBuckets))
		for i := range buckets {
			var old float64
			if p.buckets != nil {
				old = p.buckets[i]
			}
			if o.buckets != nil {
				buckets[i] = d(o.buckets[i], old)
			}
			total[i] += buckets[i]
		}
		count := d(o.count, p.count)
		totalCount += count
		if reqs == 0 && count == 0 {
			continue
		}
		smp.Ops = append(smp.Ops, OpSample{
			Op:       name,
			Requests: reqs / secs,
			Errors:   (d(o.clientErrors, p.clientErrors) + d(o.serverErrors, p.serverErrors)) / secs,
			P50:      quantile(0.5, buckets, count),
			P99:      quantile(0.99, buckets, count),
		})
	}
	smp.P50 = quantile(0.5, total, totalCount)
	smp.P99 = quantile(0.99, total, totalCount)
	return smp
}

// quantile estimates the q-quantile of observations counted in buckets
// (cumulative counts per DurationBuckets bound; count includes the +Inf
// bucket), interpolating linearly within the bucket it falls in, as
// Prometheus's histogram_quantile does. It is NaN without observations,
// and the largest finite bound when it falls in the +Inf bucket.
func quantile(q float64, buckets []float64, count float64) float64 {
	if count <= 0 {
		return math.NaN()
	}
	rank := q * count
	lower, below := 0.0, 0.0
	for i, c := range buckets {
		if c >= rank {
			if c == below {
				return DurationBuckets[i]
			}
			return lower + (DurationBuckets[i]-lower)*(rank-below)/(c-below)
		}
		lower, below = DurationBuckets[i], c
	}
	return DurationBuckets[len(DurationBuckets)-1]
}

// WriteJSON writes the samples taken after since as one JSON document of
// columns, for the console's charts:
//
//	{"interval": 5, "time": [unix ms, …], "requests": […], "clientErrors": […],
//	 "serverErrors": […], "p50": […], "p99": […], "bytesIn": […], "bytesOut": […],
//	 "objects": […], "bytes": […],
//	 "ops": {"GetObject": {"requests": […], "errors": […], "p50": […], "p99": […]}, …}}
//
// Every column has one value per time; latencies are in seconds, rates
// per second, and a value that is not known (a latency without requests,
// an operation without requests then) is null.
func (s *Sampler) WriteJSON(w io.Writer, since time.Time) error {
	smps := s.Samples(since)
	n := len(smps)
	type opCols struct {
		Requests []jsonNum `json:"requests"`
		Errors   []jsonNum `json:"errors"`
		P50      []jsonNum `json:"p50"`
		P99      []jsonNum `json:"p99"`
	}
	doc := struct {
		Interval     float64            `json:"interval"`
		Time         []int64            `json:"time"`
		Requests     []jsonNum          `json:"requests"`
		ClientErrors []jsonNum          `json:"clientErrors"`
		ServerErrors []jsonNum          `json:"serverErrors"`
		P50          []jsonNum          `json:"p50"`
		P99          []jsonNum          `json:"p99"`
		BytesIn      []jsonNum          `json:"bytesIn"`
		BytesOut     []jsonNum          `json:"bytesOut"`
		Objects      []jsonNum          `json:"objects"`
		Bytes        []jsonNum          `json:"bytes"`
		Ops          map[string]*opCols `json:"ops"`
	}{Interval: s.interval.Seconds(), Time: make([]int64, n), Ops: map[string]*opCols{}}
	col := func(f func(Sample) float64) []jsonNum {
		c := make([]jsonNum, n)
		for i, x := range smps {
			c[i] = jsonNum(f(x))
		}
		return c
	}
	for i, x := range smps {
		doc.Time[i] = x.Time.UnixMilli()
	}
	doc.Requests = col(func(x Sample) float64 { return x.Requests })
	doc.ClientErrors = col(func(x Sample) float64 { return x.ClientErrors })
	doc.ServerErrors = col(func(x Sample) float64 { return x.ServerErrors })
	doc.P50 = col(func(x Sample) float64 { return x.P50 })
	doc.P99 = col(func(x Sample) float64 { return x.P99 })
	doc.BytesIn = col(func(x Sample) float64 { return x.BytesIn })
	doc.BytesOut = col(func(x Sample) float64 { return x.BytesOut })
	doc.Objects = col(func(x Sample) float64 { return x.Objects })
	doc.Bytes = col(func(x Sample) float64 { return x.StoredBytes })
	nan := jsonNum(math.NaN())
	for i, x := range smps {
		for _, o := range x.Ops {
			c := doc.Ops[o.Op]
			if c == nil {
				// Without requests in an interval: rates 0, latencies unknown.
				c = &opCols{Requests: make([]jsonNum, n), Errors: make([]jsonNum, n), P50: make([]jsonNum, n), P99: make([]jsonNum, n)}
				for j := range n {
					c.P50[j], c.P99[j] = nan, nan
				}
				doc.Ops[o.Op] = c
			}
			c.Requests[i], c.Errors[i], c.P50[i], c.P99[i] = jsonNum(o.Requests), jsonNum(o.Errors), jsonNum(o.P50), jsonNum(o.P99)
		}
	}
	if err := json.NewEncoder(w).Encode(&doc); err != nil {
		return fmt.Errorf("metrics: write samples: %w", err)
	}
	return nil
}

// jsonNum is a float64 whose JSON is null when it is NaN or infinite.
type jsonNum float64

// MarshalJSON implements json.Marshaler.
func (v jsonNum) MarshalJSON() ([]byte, error) {
	f := float64(v)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, f, 'g', 6, 64), nil
}
