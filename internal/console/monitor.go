package console

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// MetricsSeries is the in-memory history of the server's own metrics
// that the Metrics page charts. *metrics.Sampler implements it.
type MetricsSeries interface {
	// WriteJSON writes the samples taken after since as a document of
	// columns (see metrics.Sampler.WriteJSON), which web/static/monitor.js
	// reads.
	WriteJSON(w io.Writer, since time.Time) error
	// Interval is the time between samples.
	Interval() time.Duration
}

// Health is the server's readiness, as its /readyz reports it.
type Health struct {
	Ready  bool
	Status string            // "ok", "unavailable", "failed" or "shutting down"
	Checks map[string]string // check name → ok, error, timeout or failed
	Disk   string            // "ok", "full: writes refused", or "" when unknown
}

// MonitorDeps are what the Metrics page shows. Each may be nil or empty;
// the page then leaves its part out.
type MonitorDeps struct {
	Metrics MetricsSeries
	// Health runs the readiness checks (or returns their cached result)
	// and returns within ctx.
	Health  func(ctx context.Context) Health
	Version string
}

// Defaults of Config.MetricsInterval, and its bounds.
const (
	DefaultMetricsInterval = 5 * time.Second
	MinMetricsInterval     = 100 * time.Millisecond
	MaxMetricsInterval     = time.Minute
)

// metricsWindow is how far back the Metrics page charts.
const metricsWindow = time.Hour

// MaxMetricsSamples bounds the samples kept, whatever MetricsInterval:
// with an interval under a second, the charts cover less than an hour.
const MaxMetricsSamples = 3600

// MetricsSamples returns how many samples of the metrics the server keeps
// for an interval: an hour's worth, at most MaxMetricsSamples.
func MetricsSamples(interval time.Duration) int {
	if interval <= 0 {
		interval = DefaultMetricsInterval
	}
	return int(min(int64(metricsWindow/interval), MaxMetricsSamples))
}

// metricsSummaryWindow is the span of the page's table of current values.
const metricsSummaryWindow = time.Minute

// metricsPage shows the last hour of request rates, errors, latencies
// and bytes, per operation and in total, and the objects and bytes
// stored, as charts that web/static/monitor.js draws and refreshes from
// GET /monitoring/data; without JavaScript, a table of the last minute.
// Plus the readiness checks and the version. It is not at /metrics,
// which on the ops listener is the Prometheus endpoint. Both routes need
// admin:ServerInfo.
func metricsPage() page {
	return page{
		title:     "Metrics",
		path:      "/monitoring",
		need:      "ServerInfo",
		templates: []string{"monitoring.html"},
		routes: []pageRoute{
			{"GET /monitoring", func(h *Handler) sessionHandler { return h.monitoring }},
			{"GET /monitoring/data", func(h *Handler) sessionHandler { return h.monitoringData }},
		},
	}
}

// seriesDoc is the part of metrics.Sampler.WriteJSON's document the
// page's table reads.
type seriesDoc struct {
	Interval     float64                `json:"interval"`
	Time         []int64                `json:"time"`
	Requests     []*float64             `json:"requests"`
	ClientErrors []*float64             `json:"clientErrors"`
	ServerErrors []*float64             `json:"serverErrors"`
	P50          []*float64             `json:"p50"`
	P99          []*float64             `json:"p99"`
	BytesIn      []*float64             `json:"bytesIn"`
	BytesOut     []*float64             `json:"bytesOut"`
	Objects      []*float64             `json:"objects"`
	Bytes        []*float64             `json:"bytes"`
	Ops          map[string]opSeriesDoc `json:"ops"`
}

type opSeriesDoc struct {
	Requests []*float64 `json:"requests"`
	Errors   []*float64 `json:"errors"`
	P50      []*float64 `json:"p50"`
	P99      []*float64 `json:"p99"`
}

// metricValue is one value of the summary; Known is false when there was
// nothing to measure (a latency without requests).
type metricValue struct {
	V     float64
	Known bool
}

type opSummary struct {
	Op               string
	Requests, Errors metricValue // per second
	P50, P99         metricValue // milliseconds
}

type monitorView struct {
	Version  string
	Health   *Health
	Checks   []struct{ Name, State string }
	Charts   bool    // there are metrics to chart
	Interval float64 // seconds between samples
	// The last minute: rates averaged, latencies and storage the latest.
	Requests, ClientErrors, ServerErrors metricValue
	P50, P99                             metricValue // milliseconds
	BytesIn, BytesOut                    metricValue
	Objects, Bytes                       metricValue
	Ops                                  []opSummary
	Samples                              int
}

func (h *Handler) monitoring(w http.ResponseWriter, r *http.Request, s *session) error {
	if err := h.mayAdmin(r, s, "ServerInfo"); err != nil {
		return err
	}
	v := monitorView{Version: h.monitor.Version}
	if h.monitor.Health != nil {
		hl := h.monitor.Health(r.Context())
		v.Health = &hl
		for name, state := range hl.Checks {
			v.Checks = append(v.Checks, struct{ Name, State string }{name, state})
		}
		slices.SortFunc(v.Checks, func(a, b struct{ Name, State string }) int { return cmpString(a.Name, b.Name) })
	}
	if m := h.monitor.Metrics; m != nil {
		v.Charts, v.Interval = true, m.Interval().Seconds()
		var buf bytes.Buffer
		if err := m.WriteJSON(&buf, h.clock().Add(-metricsSummaryWindow)); err != nil {
			return err
		}
		var doc seriesDoc
		if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
			return err
		}
		v.summarize(&doc)
	}
	h.render(w, r, http.StatusOK, "monitoring.html", s, "Metrics", v)
	return nil
}

// summarize fills in the table of the last minute from doc.
func (v *monitorView) summarize(doc *seriesDoc) {
	v.Samples = len(doc.Time)
	v.Requests, v.ClientErrors, v.ServerErrors = mean(doc.Requests), mean(doc.ClientErrors), mean(doc.ServerErrors)
	v.BytesIn, v.BytesOut = mean(doc.BytesIn), mean(doc.BytesOut)
	v.P50, v.P99 = millis(latest(doc.P50)), millis(latest(doc.P99))
	v.Objects, v.Bytes = latest(doc.Objects), latest(doc.Bytes)
	for name, o := range doc.Ops {
		v.Ops = append(v.Ops, opSummary{Op: name, Requests: mean(o.Requests), Errors: mean(o.Errors),
			P50: millis(latest(o.P50)), P99: millis(latest(o.P99))})
	}
	slices.SortFunc(v.Ops, func(a, b opSummary) int {
		if a.Requests.V != b.Requests.V {
			if a.Requests.V > b.Requests.V {
				return -1
			}
			return 1
		}
		return cmpString(a.Op, b.Op)
	})
}

func mean(col []*float64) metricValue {
	var sum float64
	var n int
	for _, x := range col {
		if x != nil {
			sum += *x
			n++
		}
	}
	if n == 0 {
		return metricValue{}
	}
	return metricValue{sum / float64(n), true}
}

func latest(col []*float64) metricValue {
	for i := len(col) - 1; i >= 0; i-- {
		if col[i] != nil {
			return metricValue{*col[i], true}
		}
	}
	return metricValue{}
}

func millis(v metricValue) metricValue { v.V *= 1000; return v }

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// monitoringData answers the charts' fetch: the samples after since
// (milliseconds since the Unix epoch; the last hour when absent or
// older), as JSON.
func (h *Handler) monitoringData(w http.ResponseWriter, r *http.Request, s *session) error {
	if err := h.mayAdmin(r, s, "ServerInfo"); err != nil {
		return err
	}
	m := h.monitor.Metrics
	if m == nil {
		return pageError(http.StatusNotFound, "Metrics are off on this server.")
	}
	since := h.clock().Add(-metricsWindow)
	if v := r.URL.Query().Get("since"); v != "" {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return pageError(http.StatusBadRequest, "since=%q: want milliseconds since the Unix epoch.", v)
		}
		if t := time.UnixMilli(ms); t.After(since) {
			since = t
		}
	}
	var buf bytes.Buffer
	if err := m.WriteJSON(&buf, since); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(buf.Bytes())
	return nil
}

// Rate formats a value per second, or a count, for the table.
func (v metricValue) Rate() string {
	if !v.Known {
		return "–"
	}
	switch a := math.Abs(v.V); {
	case a == 0:
		return "0"
	case a < 0.1:
		return strconv.FormatFloat(v.V, 'f', 3, 64)
	case a < 100:
		return strconv.FormatFloat(v.V, 'f', 1, 64)
	}
	return strconv.FormatFloat(v.V, 'f', 0, 64)
}

// Millis formats a latency in milliseconds for the table.
func (v metricValue) Millis() string {
	if !v.Known {
		return "–"
	}
	return strconv.FormatFloat(v.V, 'f', 1, 64) + " ms"
}

// Bytes formats a size, or a size per second, for the table.
func (v metricValue) Bytes() string {
	if !v.Known {
		return "–"
	}
	return humanBytes(int64(v.V))
}
