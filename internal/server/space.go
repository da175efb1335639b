package server

import (
	"github.com/coffer-s3/coffer/internal/blob"
	"github.com/coffer-s3/coffer/internal/blob/s3blob"
	"github.com/coffer-s3/coffer/internal/diskspace"
	"github.com/coffer-s3/coffer/internal/metrics"
)

// registerUpstreamMetrics exports, in gateway mode, the upstream block
// store's failed requests by kind (s3blob.ErrorKinds). Other stores have
// no upstream.
func registerUpstreamMetrics(m *metrics.Registry, bs blob.Store) error {
	s, ok := bs.(*s3blob.Store)
	if !ok {
		return nil
	}
	return m.LabeledCounterFunc("coffer_upstream_errors_total",
		"Requests to the upstream block store (gateway mode) that failed after their retries, by kind: connect, dns, timeout, reset, server_error and throttled make it unavailable (503 to clients); rejected is a 4xx other than a missing key (a misconfiguration, logged).",
		"kind", s3blob.ErrorKinds[:], func(kind string) float64 { return float64(s.Stats().Errors[kind]) })
}

// registerSpaceMetrics exports the free-space reserve: free bytes (measured
// at each scrape), the reserve, and writes refused for want of room. With
// the reserve off (no guard) there is nothing to export.
func registerSpaceMetrics(m *metrics.Registry, g *diskspace.Guard) error {
	if g == nil {
		return nil
	}
	if err := m.GaugeFunc("coffer_storage_free_bytes", "Free bytes on the filesystem of the storage path with the least room (measured at each scrape).",
		func() float64 {
			_ = g.Refresh() // an unreadable filesystem shows the last figure
			return float64(g.Stats().FreeBytes)
		}); err != nil {
		return err
	}
	if err := m.GaugeFunc("coffer_storage_reserve_bytes", "Free space kept back: below it new object data is refused (disk.reserve).",
		func() float64 { return float64(g.Stats().ReserveBytes) }); err != nil {
		return err
	}
	return m.CounterFunc("coffer_storage_writes_refused_total", "Writes of object data refused with 507 StorageFull because free space was below the reserve.",
		func() float64 { return float64(g.Stats().Refused) })
}
