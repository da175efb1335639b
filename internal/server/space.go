package server

import (
	"github.com/coffer-s3/coffer/internal/blob"
	"github.com/coffer-s3/coffer/internal/blob/fsblob"
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

// registerReuseMetrics exports the local block store's freed files kept
// for reuse (blob.fs.reuse). Other stores keep none.
func registerReuseMetrics(m *metrics.Registry, bs blob.Store) error {
	s, ok := bs.(*fsblob.Store)
	if !ok {
		return nil
	}
	if err := m.GaugeFunc("coffer_blob_reuse_kept_bytes", "Bytes of freed block files kept to be rewritten in place by new blocks of their size (blob.fs.reuse).",
		func() float64 { return float64(s.ReuseStats().Bytes) }); err != nil {
		return err
	}
	if err := m.GaugeFunc("coffer_blob_reuse_kept_files", "Freed block files kept for reuse.",
		func() float64 { return float64(s.ReuseStats().Files) }); err != nil {
		return err
	}
	if err := m.CounterFunc("coffer_blob_reused_total", "New blocks written over a kept freed file instead of a new one.",
		func() float64 { return float64(s.ReuseStats().Reused) }); err != nil {
		return err
	}
	return m.CounterFunc("coffer_blob_reuse_evicted_total", "Kept freed files deleted unused: for room, after a minute idle, or because free space neared the reserve.",
		func() float64 { return float64(s.ReuseStats().Evicted) })
}
