package objects

import (
	"context"
	"fmt"

	"github.com/coffer-s3/coffer/internal/meta"
)

// ListObjects returns one page of keys in bucket: objects and common
// prefixes in key order, at most in.MaxKeys of both together. Objects carry
// Key, Size, ETag, LastModified and Checksum (not Meta or PartSizes). A
// common prefix is skipped with one seek however many keys it holds.
// Errors: NoSuchBucket.
func (s *Service) ListObjects(ctx context.Context, bucket string, in ListInput) (ListResult, error) {
	if err := s.checkBucket(ctx, bucket); err != nil {
		return ListResult{}, err
	}
	es, truncated, err := s.db.ListObjects(ctx, bucket, meta.ListOptions{
		Prefix: in.Prefix, Delimiter: in.Delimiter, StartAfter: in.StartAfter, Limit: max(in.MaxKeys, 0),
	})
	if err != nil {
		return ListResult{}, fmt.Errorf("list %s: %w", bucket, err)
	}
	r := ListResult{IsTruncated: truncated}
	nObjects := 0
	for _, e := range es {
		if !e.IsPrefix {
			nObjects++
		}
	}
	r.Objects = make([]ObjectInfo, 0, nObjects)
	for _, e := range es {
		if e.IsPrefix {
			r.CommonPrefixes = append(r.CommonPrefixes, e.Key)
			continue
		}
		r.Objects = append(r.Objects, ObjectInfo{
			Bucket: bucket, Key: e.Key, Size: e.Object.Size, ETag: e.Object.ETag,
			LastModified: e.Object.Modified, Checksum: fromMetaChecksum(e.Object.Checksum),
		})
	}
	if truncated && len(es) > 0 {
		r.NextMarker = es[len(es)-1].Key
	}
	return r, nil
}
