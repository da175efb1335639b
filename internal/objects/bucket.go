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
		out[i] = bucketInfo(b)
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
	s.configGen.bump()
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
	return bucketInfo(b), nil
}

func bucketInfo(b meta.Bucket) Bucket {
	return Bucket{Name: b.Name, Region: b.Region, Created: b.Created, Versioning: b.Versioning.String()}
}

// PutBucketVersioning sets a bucket's versioning to status "Enabled" or
// "Suspended". Versioning once enabled can be suspended but not turned
// off, as in S3. MFA delete is not supported: mfaDelete "Enabled" is
// NotImplemented. Errors: NoSuchBucket, MalformedXML (another status).
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutBucketVersioning.html
func (s *Service) PutBucketVersioning(ctx context.Context, bucket, status, mfaDelete string) error {
	ctx = writeContext(ctx)
	var v meta.Versioning
	switch status {
	case "Enabled":
		v = meta.VersioningEnabled
	case "Suspended":
		v = meta.VersioningSuspended
	default:
		return s3err.Newf(s3err.MalformedXML, bucket, "The XML you provided was not well-formed or did not validate against our published schema: Status must be Enabled or Suspended.")
	}
	switch mfaDelete {
	case "", "Disabled":
	case "Enabled":
		return s3err.Newf(s3err.NotImplemented, bucket, "MFA delete is not implemented.")
	default:
		return s3err.New(s3err.MalformedXML, bucket)
	}
	err := s.db.SetVersioning(ctx, bucket, v)
	if errors.Is(err, meta.ErrNotFound) {
		return noSuchBucket(bucket)
	}
	if err != nil {
		return fmt.Errorf("set versioning of %s: %w", bucket, err)
	}
	return nil
}

// DeleteBucket removes a bucket that holds no object version and no
// delete marker. Multipart uploads in
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
	s.configGen.bump() // its configurations went with it
	return nil
}
