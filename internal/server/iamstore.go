package server

import (
	"context"
	"errors"

	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/meta"
)

// iamStore keeps iam's state and reads bucket policies in the metadata
// store: iam never imports meta, and meta knows nothing of IAM.
type iamStore struct{ db *meta.DB }

var _ iam.Store = iamStore{}

// IAMState implements iam.Store.
func (s iamStore) IAMState(ctx context.Context) ([]byte, error) { return s.db.IAMState(ctx) }

// PutIAMState implements iam.Store.
func (s iamStore) PutIAMState(ctx context.Context, doc []byte) error {
	return s.db.PutIAMState(ctx, doc)
}

// BucketPolicy implements iam.Store: a missing bucket has no policy.
func (s iamStore) BucketPolicy(ctx context.Context, bucket string) ([]byte, error) {
	doc, err := s.db.BucketPolicy(ctx, bucket)
	if errors.Is(err, meta.ErrNoBucket) {
		return nil, nil
	}
	return doc, err
}

// BucketPolicies implements iam.Store.
func (s iamStore) BucketPolicies(ctx context.Context) (map[string][]byte, error) {
	return s.db.BucketPolicies(ctx)
}
