package server

import (
	"context"
	"net/http"

	"github.com/coffer-s3/coffer/internal/console"
	"github.com/coffer-s3/coffer/internal/metrics"
)

// opsHandler serves the ops listener (console-address): the Prometheus
// metrics and the health endpoints, on a mux of its own, and the web
// console under every other path. Metrics are served nowhere else: the
// S3 listener faces clients, this one operators and their scrapers.
func (s *Server) opsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", s.metrics.Handler()) // GET patterns match HEAD too
	mux.HandleFunc("GET /healthz", serveLive)
	mux.HandleFunc("GET /readyz", s.ready.serveReady)
	// Other methods on the ops endpoints are 405, not console pages.
	for _, p := range []string{"/metrics", "/healthz", "/readyz"} {
		mux.HandleFunc(p, opsMethodNotAllowed)
	}
	mux.Handle("/", s.webUI)
	return mux
}

// consoleHealth is the readiness the console's Metrics page shows: the
// report /readyz answers with.
func (rd *readiness) consoleHealth(ctx context.Context) console.Health {
	rp := rd.check(ctx)
	return console.Health{Ready: rp.ready(), Status: rp.Status, Checks: rp.Checks, Disk: rp.Disk}
}

// opsMethodNotAllowed answers a method other than GET or HEAD on an ops
// endpoint.
func opsMethodNotAllowed(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Allow", "GET, HEAD")
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
}

// storageTotals sums the buckets' usage for the coffer_storage_* gauges.
// The usage records are kept exact by the metadata store, so a scrape
// reads one small record per bucket, never the objects. A bucket whose
// usage is corrupt counts zero (the object service logs it).
func (st *storage) storageTotals(ctx context.Context) (metrics.Storage, error) {
	bus, err := st.objects.BucketsUsage(ctx)
	if err != nil {
		return metrics.Storage{}, err
	}
	t := metrics.Storage{Buckets: int64(len(bus))}
	for _, bu := range bus {
		t.Objects += bu.Usage.Objects
		t.Bytes += bu.Usage.Bytes
		t.Uploads += bu.Usage.Uploads
		t.PartBytes += bu.Usage.PartBytes
	}
	return t, nil
}
