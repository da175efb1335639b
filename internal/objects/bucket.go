package objects

import (
	"context"
	"errors"
	"fmt"

	"github.com/coffer-s3/coffer/internal/meta"
	"github.com/coffer-s3/coffer/internal/s3err"
)

// ListBuckets returns all buckets in name order.
func (s *Service) ListBuckets(ctx context.Context) ([]Bucket, error) {
	bs, err := s.db.Buckets(ctx)
	if err != nil {
		return nil, fmt.Errorf("list buckets: %w", err)
	}
	out := make([]Bucket, len(bs))
	for i, b := range bs {
		out[i] = Bucket{Name: b.Name, Region: b.Region, Created: b.Created}
	}
	return out, nil
}

// CreateBucket creates a bucket. Errors: InvalidBucketName,
// BucketAlreadyOwnedByYou. region is recorded as given; the caller checks
// it against the server's.
func (s *Service) CreateBucket(ctx context.Context, name, region string) error {
	ctx = writeContext(ctx)
	if err := checkBucketName(name); err != nil {
		return err
	}
	err := s.db.CreateBucket(ctx, meta.Bucket{Name: name, Region: region, Created: s.clock()})
	if errors.Is(err, meta.ErrConflict) {
		return s3err.New(s3err.BucketAlreadyOwnedByYou, name).With("BucketName", name)
	}
	if err != nil {
		return fmt.Errorf("create bucket %s: %w", name, err)
	}
	return nil
}

// HeadBucket returns a bucket. Errors: NoSuchBucket.
func (s *Service) HeadBucket(ctx context.Context, name string) (Bucket, error) {
	b, err := s.db.Bucket(ctx, name)
	if errors.Is(err, meta.ErrNotFound) {
		return Bucket{}, noSuchBucket(name)
	}
	if err != nil {
		return Bucket{}, fmt.Errorf("read bucket %s: %w", name, err)
	}
	return Bucket{Name: b.Name, Region: b.Region, Created: b.Created}, nil
}

// DeleteBucket removes a bucket that holds no object. Multipart uploads in
// progress are aborted with it, as S3 does. Errors: NoSuchBucket,
// BucketNotEmpty. The check and the delete are atomic with respect to
// writes into the bucket.
func (s *Service) DeleteBucket(ctx context.Context, name string) error {
	ctx = writeContext(ctx)
	err := s.db.DeleteBucket(ctx, name, s.clock())
	switch {
	case errors.Is(err, meta.ErrNotFound):
		return noSuchBucket(name)
	case errors.Is(err, meta.ErrBucketNotEmpty):
		return s3err.New(s3err.BucketNotEmpty, name).With("BucketName", name)
	case err != nil:
		return fmt.Errorf("delete bucket %s: %w", name, err)
	}
	return nil
}
