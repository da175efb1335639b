package objects

import (
	"context"

	"github.com/coffer-s3/coffer/internal/meta"
	"github.com/coffer-s3/coffer/internal/s3err"
)

// DeleteObject removes bucket/key. Deleting an absent key succeeds.
// Errors: NoSuchBucket. The object's blocks go to the garbage queue in the
// same commit; a reader streaming them finishes first.
func (s *Service) DeleteObject(ctx context.Context, bucket, key string) error {
	ctx = writeContext(ctx)
	err := s.db.UpdateObject(ctx, bucket, key, s.clock(), func(*meta.Object) (*meta.Object, error) { return nil, nil })
	if err != nil {
		return s.writeErr(err, bucket, key)
	}
	return nil
}

// DeleteObjects removes up to 1000 keys in one commit, returning one result
// per key in order (an absent key succeeds). The error is for the whole
// request: NoSuchBucket, or MalformedXML for more than 1000 keys.
func (s *Service) DeleteObjects(ctx context.Context, bucket string, keys []string) ([]DeleteResult, error) {
	ctx = writeContext(ctx)
	if len(keys) > maxDeleteKeys {
		return nil, s3err.Newf(s3err.MalformedXML, bucket, "The request must contain at most 1000 keys.")
	}
	if err := s.db.DeleteObjects(ctx, bucket, keys, s.clock()); err != nil {
		return nil, s.writeErr(err, bucket, "")
	}
	out := make([]DeleteResult, len(keys))
	for i, k := range keys {
		out[i] = DeleteResult{Key: k}
	}
	return out, nil
}
