package server

import (
	"context"
	"net/http"

	"github.com/coffer-s3/coffer/internal/metrics"
)

// opsHandler serves the ops listener (console-address): the Prometheus
// metrics and the health endpoints, on a mux of its own. The web console
// will be mounted here too. Metrics are served nowhere else: the S3
// listener faces clients, this one operators and their scrapers.
func (s *Server) opsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", s.metrics.Handler()) // GET patterns match HEAD too
	mux.HandleFunc("GET /healthz", serveLive)
	mux.HandleFunc("GET /readyz", s.ready.serveReady)
	return mux
}

// storageTotals sums the buckets' usage for the coffer_storage_* gauges.
// The usage records are kept exact by the metadata store, so a scrape
// reads one small record per bucket, never the objects.
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
