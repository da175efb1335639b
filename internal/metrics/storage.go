package metrics

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Storage is what the whole store holds, summed over its buckets. Sizes
// are logical: the bytes clients stored.
type Storage struct {
	Buckets   int64
	Objects   int64 // object versions, current and noncurrent; not delete markers
	Bytes     int64 // their sizes
	Uploads   int64 // multipart uploads in progress
	PartBytes int64 // bytes of their parts, stored but in no object yet
}

// storageTimeout bounds one read of the storage totals during a scrape.
const storageTimeout = 5 * time.Second

var storageDescs = struct {
	buckets, objects, bytes, uploads, partBytes *prometheus.Desc
}{
	buckets:   prometheus.NewDesc("coffer_storage_buckets", "Buckets.", nil, nil),
	objects:   prometheus.NewDesc("coffer_storage_objects", "Object versions stored in all buckets, current and noncurrent; delete markers are not counted.", nil, nil),
	bytes:     prometheus.NewDesc("coffer_storage_bytes", "Logical size of those object versions (the bytes clients stored).", nil, nil),
	uploads:   prometheus.NewDesc("coffer_storage_multipart_uploads", "Multipart uploads started and neither completed nor aborted.", nil, nil),
	partBytes: prometheus.NewDesc("coffer_storage_multipart_part_bytes", "Bytes of the parts of multipart uploads in progress.", nil, nil),
}

// StorageFunc registers the coffer_storage_* gauges, whose values fn
// returns at each scrape (once for all five). fn gets a context that
// ends after a few seconds; when it fails, the scrape leaves the gauges
// out and logs the error, and the other metrics are still served.
// It may be called once.
func (r *Registry) StorageFunc(fn func(ctx context.Context) (Storage, error)) error {
	return r.register(storageCollector(fn))
}

type storageCollector func(ctx context.Context) (Storage, error)

func (c storageCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- storageDescs.buckets
	ch <- storageDescs.objects
	ch <- storageDescs.bytes
	ch <- storageDescs.uploads
	ch <- storageDescs.partBytes
}

func (c storageCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), storageTimeout)
	defer cancel()
	s, err := c(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(storageDescs.bytes, fmt.Errorf("storage totals: %w", err))
		return
	}
	for _, m := range []struct {
		d *prometheus.Desc
		v int64
	}{
		{storageDescs.buckets, s.Buckets},
		{storageDescs.objects, s.Objects},
		{storageDescs.bytes, s.Bytes},
		{storageDescs.uploads, s.Uploads},
		{storageDescs.partBytes, s.PartBytes},
	} {
		ch <- prometheus.MustNewConstMetric(m.d, prometheus.GaugeValue, float64(m.v))
	}
}
