package lifecycle

import (
	"context"

	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/s3err"
)

// Store reads and writes buckets' lifecycle configurations, kept by the
// object service as the bucket's objects.ConfigLifecycle document, and
// keeps them parsed for Rules, which the S3 API asks on every GET, HEAD
// and PUT of a bucket's objects (x-amz-expiration): an
// objects.ConfigCache. A Store is safe for concurrent use.
type Store struct {
	svc    *objects.Service
	parsed *objects.ConfigCache[*Configuration]
}

// NewStore returns a Store over svc.
func NewStore(svc *objects.Service) *Store {
	return &Store{svc: svc, parsed: objects.NewConfigCache(svc, objects.ConfigLifecycle, Decode)}
}

// Put stores c as bucket's configuration. c must have been validated and
// given IDs. Errors: NoSuchBucket.
func (s *Store) Put(ctx context.Context, bucket string, c *Configuration) error {
	doc, err := c.Encode()
	if err != nil {
		return err
	}
	return s.svc.PutBucketConfig(ctx, bucket, objects.ConfigLifecycle, doc)
}

// Delete removes bucket's configuration; removing none is not an error.
// Errors: NoSuchBucket.
func (s *Store) Delete(ctx context.Context, bucket string) error {
	return s.svc.PutBucketConfig(ctx, bucket, objects.ConfigLifecycle, nil)
}

// Get returns bucket's configuration as stored. Errors: NoSuchBucket,
// NoSuchLifecycleConfiguration.
func (s *Store) Get(ctx context.Context, bucket string) (*Configuration, error) {
	c, err := s.read(ctx, bucket)
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, s3err.New(s3err.NoSuchLifecycleConfiguration, bucket).With("BucketName", bucket)
	}
	return c, nil
}

// Rules returns bucket's configuration, nil if it has none, from the
// parsed configurations kept when they are current. The caller must not
// modify it. Errors: NoSuchBucket, and a stored document that does not
// decode.
func (s *Store) Rules(ctx context.Context, bucket string) (*Configuration, error) {
	c, _, err := s.parsed.Get(ctx, bucket)
	return c, err
}

// read reads and decodes bucket's configuration; nil if it has none.
func (s *Store) read(ctx context.Context, bucket string) (*Configuration, error) {
	c, _, err := s.parsed.Read(ctx, bucket)
	return c, err
}
