package objects

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/coffer-s3/coffer/internal/meta"
)

// S3 calls the version of an object written before its bucket's versioning
// was first configured, or while it was suspended, the null version, and
// names it "null" in x-amz-version-id once the bucket has versioning
// configured (Enabled or Suspended); in a bucket that never had it, reads
// send no version ID at all. See
// https://docs.aws.amazon.com/AmazonS3/latest/userguide/manage-objects-versioned-bucket.html
//
// A record says how its bucket stood when it was written
// (meta.Object.Versioning), not how it stands now: for a record written
// unversioned, the answer depends on the bucket. Reads of such records
// consult versionedCache rather than read the bucket's record each time,
// which on PostgreSQL would be one more round trip on every GET.

// versionedCache remembers which buckets have versioning configured. An
// entry is good while ConfigGeneration has not moved: PutBucketVersioning
// moves it, as do bucket creation and deletion, and so does a change of a
// bucket's record on another node (meta reports it as a ChangeConfig).
type versionedCache struct {
	mu  sync.RWMutex // guards gen, m
	gen uint64
	m   map[string]bool // by bucket: versioning configured
}

// reportedVersion is the version ID a read of record o of bucket reports in
// x-amz-version-id, when the read did not ask for a version by ID: the
// version's own ID, "null" for a null version of a bucket that has
// versioning configured, "" in a bucket that never had it. The header is
// information, not the answer: when the bucket's record cannot be read
// (PostgreSQL unreachable a moment) the read goes on without it, logged,
// rather than failing a GET, an ACL check or a tagging write that has
// already committed.
func (s *Service) reportedVersion(ctx context.Context, bucket string, o *meta.Object) string {
	if o.Versioning != meta.Unversioned {
		return o.S3VersionID()
	}
	versioned, err := s.bucketVersioned(ctx, bucket)
	if err != nil {
		s.log.WarnContext(ctx, "version ID of a null version not reported: bucket record unreadable", "bucket", bucket, "err", err)
		return ""
	}
	if !versioned {
		return ""
	}
	return meta.NullVersionID
}

// bucketVersioned reports whether bucket has versioning configured, from
// the cache when it is current. A bucket that does not exist (deleted
// since its object was read) has not.
func (s *Service) bucketVersioned(ctx context.Context, bucket string) (bool, error) {
	c := &s.versioned
	gen := s.ConfigGeneration() // before reading, so a change after it is seen next time
	c.mu.RLock()
	v, hit := c.m[bucket]
	fresh := c.gen == gen
	c.mu.RUnlock()
	if hit && fresh {
		return v, nil
	}
	b, err := s.db.Bucket(ctx, bucket)
	switch {
	case errors.Is(err, meta.ErrNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read bucket %s: %w", bucket, err)
	}
	v = b.Versioning != meta.Unversioned
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen || c.m == nil || len(c.m) >= maxCachedConfigs {
		if gen < c.gen {
			return v, nil // read under an older generation than the cache's: do not keep it
		}
		c.gen = gen
		c.m = make(map[string]bool)
	}
	c.m[bucket] = v
	return v, nil
}
