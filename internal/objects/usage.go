package objects

import (
	"context"
	"errors"
	"fmt"

	"github.com/coffer-s3/coffer/internal/meta"
)

// Usage is what a bucket holds, counted exactly: the metadata store updates
// it in the same atomic batch as every record it counts
// (docs/design/0001-storage-engine.md, "Usage accounting"). Sizes are
// logical, the bytes clients stored.
type Usage struct {
	Objects   int64 // object versions, current and noncurrent; not delete markers
	Bytes     int64 // sum of their sizes
	Uploads   int64 // multipart uploads in progress
	PartBytes int64 // bytes of their uploaded parts: stored, but not yet in any object
}

// BucketUsage is a bucket with its usage.
type BucketUsage struct {
	Bucket
	Usage Usage
	// UsageCorrupt says that the bucket's stored usage does not decode
	// (corruption, or a bug): Usage is zero, not what the bucket holds,
	// until CheckUsage with repair resets it.
	UsageCorrupt bool
}

// UsageMismatch is a bucket whose recorded usage differs from a recount of
// its records.
type UsageMismatch struct {
	Bucket  string
	Stored  Usage
	Counted Usage
	Problem string // what is wrong besides the numbers; "" if nothing
}

// UsageCheck is the result of CheckUsage.
type UsageCheck struct {
	Buckets    int
	Mismatches []UsageMismatch
	Repaired   int
}

// BucketUsage returns a bucket with its usage. Errors: NoSuchBucket.
func (s *Service) BucketUsage(ctx context.Context, name string) (BucketUsage, error) {
	bu, err := s.db.BucketUsage(ctx, name)
	if errors.Is(err, meta.ErrNotFound) {
		return BucketUsage{}, noSuchBucket(name)
	}
	if err != nil {
		return BucketUsage{}, fmt.Errorf("usage of bucket %s: %w", name, err)
	}
	return s.bucketUsage(ctx, bu), nil
}

// BucketsUsage returns every bucket with its usage, in name order. A
// bucket whose stored usage does not decode is listed with UsageCorrupt
// (and logged), so that it hides neither the others nor the totals.
func (s *Service) BucketsUsage(ctx context.Context) ([]BucketUsage, error) {
	bus, err := s.db.BucketsUsage(ctx)
	if err != nil {
		return nil, fmt.Errorf("usage of buckets: %w", err)
	}
	out := make([]BucketUsage, len(bus))
	for i, bu := range bus {
		out[i] = s.bucketUsage(ctx, bu)
	}
	return out, nil
}

// CheckUsage recounts every bucket's usage from its records and reports
// where it differs from the recorded usage; with repair it also corrects
// those buckets while their writers go on (only a corrupt value is reset
// with the bucket's writers held off while it is counted). It is safe
// while the server serves. See meta.DB.CheckUsage.
func (s *Service) CheckUsage(ctx context.Context, repair bool) (UsageCheck, error) {
	c, err := s.db.CheckUsage(ctx, repair)
	out := UsageCheck{Buckets: c.Buckets, Repaired: c.Repaired}
	for _, m := range c.Mismatches {
		out.Mismatches = append(out.Mismatches, UsageMismatch{
			Bucket: m.Bucket, Stored: Usage(m.Stored), Counted: Usage(m.Counted), Problem: m.Problem,
		})
	}
	if err != nil {
		return out, fmt.Errorf("check usage: %w", err)
	}
	return out, nil
}

// bucketUsage converts bu, logging a usage value that does not decode:
// an operator must repair it.
func (s *Service) bucketUsage(ctx context.Context, bu meta.BucketUsage) BucketUsage {
	if bu.UsageErr != nil {
		s.log.ErrorContext(ctx, "bucket usage unreadable", "bucket", bu.Name, "err", bu.UsageErr)
	}
	return BucketUsage{
		Bucket:       Bucket{Name: bu.Name, Region: bu.Region, Created: bu.Created},
		Usage:        Usage(bu.Usage),
		UsageCorrupt: bu.UsageErr != nil,
	}
}
