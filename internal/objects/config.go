package objects

import (
	"context"
	"errors"
	"fmt"

	"github.com/coffer-s3/coffer/internal/meta"
)

// ConfigName names a bucket configuration document. The service stores
// them opaquely with their bucket (and deletes them with it); the package
// that owns each kind encodes, validates and interprets it.
type ConfigName string

// The bucket configuration documents.
const (
	ConfigCORS      ConfigName = "cors"
	ConfigLifecycle ConfigName = "lifecycle"
	ConfigTagging   ConfigName = "tagging"
	ConfigOwnership ConfigName = "ownership"
	ConfigACL       ConfigName = "acl"
	// ConfigPublicAccessBlock is a bucket's Block Public Access
	// settings (PublicAccessBlock, encoded as JSON).
	ConfigPublicAccessBlock ConfigName = "publicAccessBlock"
)

// PutBucketConfig stores doc as bucket's configuration document name,
// replacing any; a nil doc deletes it. Errors: NoSuchBucket.
func (s *Service) PutBucketConfig(ctx context.Context, bucket string, name ConfigName, doc []byte) error {
	ctx = writeContext(ctx)
	err := s.db.PutBucketConfig(ctx, bucket, string(name), doc)
	switch {
	case errors.Is(err, meta.ErrNoBucket):
		return noSuchBucket(bucket)
	case err != nil:
		return fmt.Errorf("%s configuration of %s: %w", name, bucket, err)
	}
	s.configGen.bump()
	return nil
}

// BucketConfig returns bucket's configuration document name, and false if
// it has none. Errors: NoSuchBucket.
func (s *Service) BucketConfig(ctx context.Context, bucket string, name ConfigName) ([]byte, bool, error) {
	doc, err := s.db.BucketConfig(ctx, bucket, string(name))
	switch {
	case err == nil:
		return doc, true, nil
	case !errors.Is(err, meta.ErrNotFound):
		return nil, false, fmt.Errorf("%s configuration of %s: %w", name, bucket, err)
	}
	if err := s.checkBucket(ctx, bucket); err != nil {
		return nil, false, err
	}
	return nil, false, nil
}

// LookupBucketConfig returns bucket's configuration document name and
// true, or false if there is none, whether or not the bucket exists: one
// metadata read, for a path that must not pay a second one to tell a
// missing bucket from a missing document (CORS headers on every request
// that carries an Origin).
func (s *Service) LookupBucketConfig(ctx context.Context, bucket string, name ConfigName) ([]byte, bool, error) {
	doc, err := s.db.BucketConfig(ctx, bucket, string(name))
	switch {
	case err == nil:
		return doc, true, nil
	case errors.Is(err, meta.ErrNotFound):
		return nil, false, nil
	}
	return nil, false, fmt.Errorf("%s configuration of %s: %w", name, bucket, err)
}

// BucketConfigs returns every bucket's configuration document name, by
// bucket.
func (s *Service) BucketConfigs(ctx context.Context, name ConfigName) (map[string][]byte, error) {
	m, err := s.db.BucketConfigs(ctx, string(name))
	if err != nil {
		return nil, fmt.Errorf("list %s configurations: %w", name, err)
	}
	return m, nil
}
