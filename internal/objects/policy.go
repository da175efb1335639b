package objects

import (
	"context"
	"errors"
	"fmt"

	"github.com/coffer-s3/coffer/internal/meta"
	"github.com/coffer-s3/coffer/internal/s3err"
)

// Bucket policies are stored with their bucket and deleted with it. The
// service keeps them as opaque documents: iam parses and enforces them, and
// the caller validates a document before PutBucketPolicy.

// PutBucketPolicy stores doc as bucket's policy. Errors: NoSuchBucket.
func (s *Service) PutBucketPolicy(ctx context.Context, bucket string, doc []byte) error {
	ctx = writeContext(ctx)
	return policyError(bucket, s.db.PutBucketPolicy(ctx, bucket, doc))
}

// DeleteBucketPolicy removes bucket's policy, if any. Errors: NoSuchBucket.
func (s *Service) DeleteBucketPolicy(ctx context.Context, bucket string) error {
	ctx = writeContext(ctx)
	return policyError(bucket, s.db.DeleteBucketPolicy(ctx, bucket))
}

// BucketPolicy returns bucket's policy. Errors: NoSuchBucket,
// NoSuchBucketPolicy.
func (s *Service) BucketPolicy(ctx context.Context, bucket string) ([]byte, error) {
	doc, err := s.db.BucketPolicy(ctx, bucket)
	if err != nil {
		return nil, policyError(bucket, err)
	}
	if doc == nil {
		return nil, s3err.New(s3err.NoSuchBucketPolicy, bucket).With("BucketName", bucket)
	}
	return doc, nil
}

// BucketPolicies returns every bucket's policy by bucket name, for iam to
// load at start.
func (s *Service) BucketPolicies(ctx context.Context) (map[string][]byte, error) {
	m, err := s.db.BucketPolicies(ctx)
	if err != nil {
		return nil, fmt.Errorf("list bucket policies: %w", err)
	}
	return m, nil
}

func policyError(bucket string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, meta.ErrNoBucket):
		return noSuchBucket(bucket)
	default:
		return fmt.Errorf("bucket policy of %s: %w", bucket, err)
	}
}
