// Package metrics is Coffer's Prometheus instrumentation: a registry of its
// own (never the client library's global one) holding the S3 request
// metrics, build information and the Go runtime and process collectors,
// and the handler that serves it in the text exposition format.
//
// A Registry is an s3api.Observer: the S3 handler reports every request to
// it once, and ObserveRequest turns the record into counter and histogram
// updates without allocating or taking a lock (see observe.go). Label
// values are bounded by construction: op names come from the op table,
// error codes from s3err's table (anything else is counted as "Other"),
// statuses are HTTP status codes. Bucket names, keys, access keys and
// addresses are never labels.
//
// Other parts of the server add their own metrics (storage usage, GC)
// with GaugeFunc and CounterFunc, which read a value at scrape time, or
// Register for a collector of their own. Every metric name starts with
// "coffer_". docs/observability.md lists the metrics and their meaning.
package metrics

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/coffer-s3/coffer/internal/s3api"
)

// DurationBuckets are the upper bounds, in seconds, of the request duration
// histogram: from 100 µs (a HEAD answered from the block cache) to 60 s (a
// multi-GiB transfer), about three per decade. Slower requests land in the
// +Inf bucket. A read-only lookup table.
var DurationBuckets = []float64{
	0.0001, 0.00025, 0.0005,
	0.001, 0.0025, 0.005,
	0.01, 0.025, 0.05,
	0.1, 0.25, 0.5,
	1, 2.5, 5,
	10, 30, 60,
}

// maxScrapes bounds concurrent scrapes; more are answered 503 at once, so
// a misconfigured scraper cannot pile up collections.
const maxScrapes = 4

// namePrefix starts every metric name Coffer exports.
const namePrefix = "coffer_"

// Config configures a Registry. The zero value is usable.
type Config struct {
	// Version is the Coffer version coffer_build_info reports; "" is
	// reported as "devel".
	Version string
	// Logger receives the errors of failed collections during a scrape.
	// Nil discards them.
	Logger *slog.Logger
}

// Registry holds Coffer's metrics and serves them. It implements
// s3api.Observer. It is safe for concurrent use.
type Registry struct {
	reg     *prometheus.Registry
	handler http.Handler

	requests *prometheus.CounterVec   // op, status
	errors   *prometheus.CounterVec   // op, code
	duration *prometheus.HistogramVec // op
	received *prometheus.CounterVec   // op
	sent     *prometheus.CounterVec   // op
	inFlight prometheus.Gauge

	// ops holds the per-op state of every name s3api.OpNames returns.
	// Read-only after New.
	ops map[string]*opMetrics
	// other is where records with an op outside s3api.OpNames go, so
	// that a label value never comes from anywhere else.
	other *opMetrics
}

var _ s3api.Observer = (*Registry)(nil)

// New returns a Registry with the S3 request metrics, coffer_build_info
// and the Go and process collectors registered.
func New(cfg Config) (*Registry, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	version := cfg.Version
	if version == "" {
		version = "devel"
	}
	r := &Registry{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "coffer_s3_requests_total",
			Help: "S3 requests served, by operation and HTTP status (499: the client went away before an answer).",
		}, []string{"op", "status"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "coffer_s3_errors_total",
			Help: "S3 requests that failed, by operation and S3 error code.",
		}, []string{"op", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "coffer_s3_request_duration_seconds",
			Help:    "Time from the start of an S3 request to the last byte of its response, by operation.",
			Buckets: DurationBuckets,
		}, []string{"op"}),
		received: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "coffer_s3_received_bytes_total",
			Help: "Request body bytes read by S3 requests, as sent on the wire, by operation.",
		}, []string{"op"}),
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "coffer_s3_sent_bytes_total",
			Help: "Response body bytes written by S3 requests, by operation.",
		}, []string{"op"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "coffer_s3_requests_in_flight",
			Help: "S3 requests being served.",
		}),
	}
	buildInfo := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "coffer_build_info",
		Help:        "Always 1; the labels say which Coffer version and Go release are running.",
		ConstLabels: prometheus.Labels{"version": version, "go_version": runtime.Version()},
	})
	buildInfo.Set(1)
	for _, c := range []prometheus.Collector{
		r.requests, r.errors, r.duration, r.received, r.sent, r.inFlight, buildInfo,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		if err := r.reg.Register(c); err != nil {
			return nil, fmt.Errorf("metrics: register: %w", err)
		}
	}
	names := s3api.OpNames()
	r.ops = make(map[string]*opMetrics, len(names))
	for _, name := range names {
		r.ops[name] = &opMetrics{name: name}
	}
	r.other = r.ops[s3api.OpUnknown]
	r.handler = promhttp.InstrumentMetricHandler(r.reg, promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{
		ErrorLog:            errorLog{log},
		ErrorHandling:       promhttp.ContinueOnError,
		Registry:            r.reg,
		MaxRequestsInFlight: maxScrapes,
	}))
	return r, nil
}

// Handler returns the handler of GET /metrics: every metric in the
// Prometheus text format (or a negotiated protobuf), gzipped when the
// scraper accepts it. A collector that fails is logged and left out; the
// rest is still served.
func (r *Registry) Handler() http.Handler { return r.handler }

// TrackInFlight returns next counted in coffer_s3_requests_in_flight
// while it runs. The server wraps the S3 handler in it.
func (r *Registry) TrackInFlight(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.inFlight.Inc()
		defer r.inFlight.Dec()
		next.ServeHTTP(w, req)
	})
}

// GaugeFunc registers a gauge without labels whose value fn returns at
// each scrape, such as the bytes stored. fn runs on the scraping goroutine,
// concurrently with everything else, and must be cheap. name must start
// with "coffer_" and be unique.
func (r *Registry) GaugeFunc(name, help string, fn func() float64) error {
	if err := checkName(name); err != nil {
		return err
	}
	return r.register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, fn))
}

// CounterFunc registers a counter without labels whose value fn returns at
// each scrape, such as the blobs GC removed since start. The value must
// never decrease. The rules of GaugeFunc apply.
func (r *Registry) CounterFunc(name, help string, fn func() float64) error {
	if err := checkName(name); err != nil {
		return err
	}
	return r.register(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, fn))
}

// LabeledCounterFunc registers a counter with one label, whose values
// are exactly values (a small fixed set, never user data): for each, fn
// returns its count at each scrape. The rules of CounterFunc apply.
func (r *Registry) LabeledCounterFunc(name, help, label string, values []string, fn func(value string) float64) error {
	if err := checkName(name); err != nil {
		return err
	}
	for _, v := range values {
		c := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: prometheus.Labels{label: v}},
			func() float64 { return fn(v) })
		if err := r.register(c); err != nil {
			return err
		}
	}
	return nil
}

// Register adds a collector of its own, for metrics with labels or
// values that several metrics share. Its metric names must start with
// "coffer_" and its label values must be bounded (never bucket names,
// keys or addresses). Only the composition root calls it: Prometheus types
// travel no further.
func (r *Registry) Register(c prometheus.Collector) error { return r.register(c) }

func (r *Registry) register(c prometheus.Collector) error {
	if err := r.reg.Register(c); err != nil {
		return fmt.Errorf("metrics: register: %w", err)
	}
	return nil
}

func checkName(name string) error {
	if !strings.HasPrefix(name, namePrefix) || len(name) == len(namePrefix) {
		return fmt.Errorf("metrics: name %q does not start with %q", name, namePrefix)
	}
	return nil
}

// errorLog adapts slog to promhttp's error logger.
type errorLog struct{ log *slog.Logger }

// Println implements promhttp.Logger.
func (l errorLog) Println(v ...any) {
	l.log.Error("metrics collection failed", "err", errors.New(fmt.Sprint(v...)))
}
