package metrics

import (
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/coffer-s3/coffer/internal/s3api"
	"github.com/coffer-s3/coffer/internal/s3err"
)

// Label values for what falls outside the bounded sets.
const (
	codeOther   = "Other" // an error code s3err's table does not have
	statusOther = "other" // a status outside 100..599
)

// ObserveRequest implements s3api.Observer. It does not retain rec.
//
// The vectors' children are looked up once per op, status and code and
// then cached here, so the hot path is one map lookup by op name, two
// atomic loads, a scan of a few cached statuses and the counter and
// histogram updates: no allocation, no lock, no label hashing.
func (r *Registry) ObserveRequest(rec *s3api.RequestRecord) {
	o := r.ops[rec.Op]
	if o == nil {
		o = r.other
	}
	b := o.base.Load()
	if b == nil {
		b = o.initBase(r)
	}
	b.duration.Observe(rec.Duration.Seconds())
	if rec.BytesIn > 0 {
		b.received.Add(float64(rec.BytesIn))
	}
	if rec.BytesOut > 0 {
		b.sent.Add(float64(rec.BytesOut))
	}
	c, ok := o.statuses.lookup(rec.Status)
	if !ok {
		c = o.statuses.add(rec.Status, func() prometheus.Counter {
			return r.requests.WithLabelValues(o.name, statusLabel(rec.Status))
		})
	}
	c.Inc()
	if rec.Code != "" {
		c, ok := o.codes.lookup(rec.Code)
		if !ok {
			code := rec.Code
			if !s3err.Known(code) {
				code = codeOther
			}
			c = o.codes.add(code, func() prometheus.Counter {
				return r.errors.WithLabelValues(o.name, string(code))
			})
		}
		c.Inc()
	}
}

// statusLabel returns the label value of an HTTP status.
func statusLabel(status int) string {
	if status < 100 || status > 599 {
		return statusOther
	}
	return strconv.Itoa(status)
}

// opMetrics is the cached state of one op: the children of each vector
// for its label value, created on first use so that ops, statuses and
// codes never seen are not exported as zeros.
type opMetrics struct {
	name     string
	base     atomic.Pointer[opBase]
	baseMu   sync.Mutex // serialises initBase
	statuses cache[int, prometheus.Counter]
	codes    cache[s3err.Code, prometheus.Counter]
}

// opBase are the children labelled by op alone. They are created together
// on the op's first request, so its byte counters exist (at 0) from then
// on and a rate over them has no gap.
type opBase struct {
	duration prometheus.Observer
	received prometheus.Counter
	sent     prometheus.Counter
}

// initBase creates o's opBase, once.
func (o *opMetrics) initBase(r *Registry) *opBase {
	o.baseMu.Lock()
	defer o.baseMu.Unlock()
	if b := o.base.Load(); b != nil {
		return b
	}
	b := &opBase{
		duration: r.duration.WithLabelValues(o.name),
		received: r.received.WithLabelValues(o.name),
		sent:     r.sent.WithLabelValues(o.name),
	}
	o.base.Store(b)
	return b
}

// cache maps a few keys to values with lock-free reads: the entries are an
// immutable slice, replaced by a longer copy when a key is added. It suits
// small, bounded key sets read far more often than they grow: an op sees
// a handful of statuses and error codes.
type cache[K comparable, V any] struct {
	mu      sync.Mutex // serialises add
	entries atomic.Pointer[[]cacheEntry[K, V]]
}

type cacheEntry[K comparable, V any] struct {
	key K
	val V
}

// lookup returns the value cached for key.
func (c *cache[K, V]) lookup(key K) (V, bool) {
	if p := c.entries.Load(); p != nil {
		for _, e := range *p {
			if e.key == key {
				return e.val, true
			}
		}
	}
	var zero V
	return zero, false
}

// add returns the value cached for key, first caching newVal() if there
// is none.
func (c *cache[K, V]) add(key K, newVal func() V) V {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.lookup(key); ok {
		return v
	}
	var entries []cacheEntry[K, V]
	if p := c.entries.Load(); p != nil {
		entries = append(entries, *p...)
	}
	v := newVal()
	entries = append(entries, cacheEntry[K, V]{key, v})
	c.entries.Store(&entries)
	return v
}
