package lifecycle

import (
	"context"
	"fmt"
	"sync"

	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/s3err"
)

// maxCached bounds the configurations a Store keeps parsed: one per
// bucket read since the last change, so a store with more buckets than
// this starts over rather than grow.
const maxCached = 10000

// Store reads and writes buckets' lifecycle configurations, kept by the
// object service as the bucket's objects.ConfigLifecycle document, and
// keeps them parsed for Rules, which the S3 API asks on every GET, HEAD
// and PUT of a bucket's objects (x-amz-expiration). A parsed
// configuration is reused until the object service's ConfigGeneration
// changes: any configuration put or deleted, any bucket created or
// deleted through it. A Store is safe for concurrent use.
type Store struct {
	svc *objects.Service

	mu     sync.RWMutex // guards gen, parsed
	gen    uint64
	parsed map[string]*Configuration // by bucket; nil: the bucket has none
}

// NewStore returns a Store over svc.
func NewStore(svc *objects.Service) *Store {
	return &Store{svc: svc, parsed: map[string]*Configuration{}}
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
	gen := s.svc.ConfigGeneration() // before reading, so a change after it is seen next time
	s.mu.RLock()
	c, ok := s.parsed[bucket]
	fresh := s.gen == gen
	s.mu.RUnlock()
	if ok && fresh {
		return c, nil
	}
	c, err := s.read(ctx, bucket)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen != gen || len(s.parsed) >= maxCached {
		if gen < s.gen {
			return c, nil // read under an older generation than the cache's: do not keep it
		}
		s.gen = gen
		clear(s.parsed)
	}
	s.parsed[bucket] = c
	return c, nil
}

// read reads and decodes bucket's configuration; nil if it has none.
func (s *Store) read(ctx context.Context, bucket string) (*Configuration, error) {
	doc, ok, err := s.svc.BucketConfig(ctx, bucket, objects.ConfigLifecycle)
	if err != nil || !ok {
		return nil, err
	}
	c, err := Decode(doc)
	if err != nil {
		return nil, fmt.Errorf("lifecycle configuration of %s: %w", bucket, err)
	}
	return c, nil
}
