package objects

import (
	"context"
	"fmt"
	"sync"
)

// maxCachedConfigs bounds the documents a ConfigCache keeps decoded: one
// per bucket asked about since the last change, so a store with more
// buckets than this starts over rather than grow.
const maxCachedConfigs = 10000

// ConfigCache keeps buckets' configuration documents of one name decoded,
// for paths that consult them on every request (the lifecycle rules
// behind x-amz-expiration, Block Public Access on anonymous reads). A
// decoded document is reused until ConfigGeneration changes: any
// configuration put or deleted, any bucket created or deleted, through
// this service or (ConfigsChanged) another node. Safe for concurrent use.
type ConfigCache[T any] struct {
	svc    *Service
	name   ConfigName
	decode func([]byte) (T, error)

	mu  sync.RWMutex // guards gen, m
	gen uint64
	m   map[string]cachedConfig[T] // by bucket
}

type cachedConfig[T any] struct {
	v  T
	ok bool // the bucket has the document
}

// NewConfigCache returns a cache of svc's documents name, decoded with
// decode.
func NewConfigCache[T any](svc *Service, name ConfigName, decode func([]byte) (T, error)) *ConfigCache[T] {
	return &ConfigCache[T]{svc: svc, name: name, decode: decode, m: map[string]cachedConfig[T]{}}
}

// Get returns bucket's document decoded, and false if it has none. The
// caller must not modify it. Errors: NoSuchBucket, and a stored document
// that does not decode.
func (c *ConfigCache[T]) Get(ctx context.Context, bucket string) (T, bool, error) {
	gen := c.svc.ConfigGeneration() // before reading, so a change after it is seen next time
	c.mu.RLock()
	e, hit := c.m[bucket]
	fresh := c.gen == gen
	c.mu.RUnlock()
	if hit && fresh {
		return e.v, e.ok, nil
	}
	v, ok, err := c.Read(ctx, bucket)
	if err != nil {
		return v, false, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen || len(c.m) >= maxCachedConfigs {
		if gen < c.gen {
			return v, ok, nil // read under an older generation than the cache's: do not keep it
		}
		c.gen = gen
		clear(c.m)
	}
	c.m[bucket] = cachedConfig[T]{v: v, ok: ok}
	return v, ok, nil
}

// Read reads and decodes bucket's document, bypassing the cache, and
// reports false if it has none. Errors: as Get.
func (c *ConfigCache[T]) Read(ctx context.Context, bucket string) (T, bool, error) {
	var zero T
	doc, ok, err := c.svc.BucketConfig(ctx, bucket, c.name)
	if err != nil || !ok {
		return zero, false, err
	}
	v, err := c.decode(doc)
	if err != nil {
		return zero, false, fmt.Errorf("%s configuration of %s: %w", c.name, bucket, err)
	}
	return v, true, nil
}
