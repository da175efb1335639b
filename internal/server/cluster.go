package server

import (
	"context"

	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/meta"
)

// sharedIAMStore is the iam.Store of a node whose metadata store other
// nodes share (PostgreSQL): IAM changes apply to the stored state under
// the store's lock (meta.DB.UpdateIAMState), so that concurrent changes
// through different nodes are all kept.
type sharedIAMStore struct{ iamStore }

var _ iam.UpdateStore = sharedIAMStore{}

// UpdateIAMState implements iam.UpdateStore.
func (s sharedIAMStore) UpdateIAMState(ctx context.Context, fn func(old []byte) ([]byte, error)) error {
	return s.db.UpdateIAMState(ctx, fn)
}

// applyChange brings this node's cached state up to date with a change
// another node (or this one) committed to the shared metadata store:
// meta.DB.WatchChanges reports it within a second. A configuration change
// moves the object service's configuration generation, which caches of
// parsed configurations (lifecycle rules) follow.
func (s *Server) applyChange(c meta.Change) error {
	ctx := context.Background()
	switch c.Kind {
	case meta.ChangeIAM:
		return s.iam.Reload(ctx)
	case meta.ChangePolicy:
		if c.Bucket == "" {
			return s.iam.ReloadBucketPolicies(ctx)
		}
		return s.iam.RefreshBucketPolicy(ctx, c.Bucket)
	case meta.ChangeConfig:
		s.st.objects.ConfigsChanged()
	}
	return nil
}
