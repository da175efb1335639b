package fsblob

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/coffer-s3/coffer/internal/blob"
)

var _ blob.Claimer = (*Store)(nil)

// Claim makes sure that the directory belongs to the metadata store
// want.StoreID (see blob.Claimer). The lock Open takes keeps a second
// process out while this one runs; the claim keeps out a second
// deployment after it, such as a server started with meta.kind postgres
// on the storage path of a single-node one, or two PostgreSQL
// deployments on one shared filesystem: either's garbage collection would
// delete the other's blocks.
//
// The claim is the file blob.ClaimName in the root. If it is absent,
// Claim writes want to a file in .tmp, syncs it, and links it into place,
// which fails if a claim appeared meanwhile; then it reads the claim back,
// and what it reads decides (blob.Claims): another store's fails with
// blob.ErrClaimed, naming the directory, both IDs and what to do. An
// unclaimed directory holding blocks (local.Blocks) is claimed only by a
// metadata store that has buckets and no other metadata beside it
// (local.Beside), or fails with blob.ErrUnclaimedBlocks.
func (s *Store) Claim(ctx context.Context, want blob.Owner, local blob.Local) (blob.Owner, error) {
	got, _, err := s.claims.Claim(ctx, claimIO{s}, want, local)
	return got, err
}

// CheckClaim reads the claim again and fails (blob.ErrClaimed) if it now
// names another metadata store than the one Claim claimed the directory
// for: a claim file replaced by hand, or copied over with a backup of
// another store's blocks. A claim deleted meanwhile is written again.
// Before any Claim it does nothing.
func (s *Store) CheckClaim(ctx context.Context) error {
	_, err := s.claims.Check(ctx, claimIO{s})
	return err
}

// claimPath is the claim file's path, for messages.
func (s *Store) claimPath() string { return s.root.Name() + string(os.PathSeparator) + blob.ClaimName }

// claimIO is the blob.ClaimIO of a Store (List is the Store's).
type claimIO struct{ *Store }

func (c claimIO) ReadClaim(context.Context) (blob.Owner, bool, error) { return c.Store.readClaim() }
func (c claimIO) WriteClaim(_ context.Context, o blob.Owner) error    { return c.Store.writeClaim(o) }
func (c claimIO) ClaimedError(got, want blob.Owner, local blob.Local) error {
	return c.Store.claimedError(got, want, local)
}

// UnclaimedBlocksError is Claim's error for an unclaimed directory that
// holds the block first, claimed by a store without buckets or with other
// metadata beside the directory.
func (c claimIO) UnclaimedBlocksError(first string, local blob.Local) error {
	dir := c.Store.root.Name()
	var why string
	switch {
	case local.Beside != "":
		why = "beside the metadata of another deployment (" + local.Beside + "), whose blocks they most likely are " +
			"(it claims the directory at its next start). This server keeps its metadata elsewhere: check --storage-path, " +
			"and give this deployment a storage path of its own; to serve that deployment's objects from PostgreSQL, use coffer admin migrate"
	case local.Shared:
		why = "and this server's metadata store (PostgreSQL) has no buckets: they belong to another deployment that has not claimed " +
			"the directory yet (it will at its next start), or to one whose metadata is lost. Check --storage-path and meta.postgres.url, " +
			"and give this deployment a storage path of its own"
	default:
		why = "and this server's metadata (the meta directory of its storage path) has no buckets: if the meta directory was removed " +
			"or replaced, restore it; otherwise the blocks belong to another deployment that has not claimed the directory yet (it will " +
			"at its next start), and this one needs a storage path of its own (--storage-path)"
	}
	return fmt.Errorf("fsblob: unclaimed blob directory %w: %s holds blocks (%s, …) but no %s, %s. "+
		"If no deployment uses these blocks any more, delete them by hand and start again",
		blob.ErrUnclaimedBlocks, dir, first, blob.ClaimName, why)
}

// claimedError is Claim's error for a directory claimed by got, not want.
// What to do depends on where this deployment keeps its metadata and
// whether it has buckets, whose blocks must not be moved away from.
func (s *Store) claimedError(got, want blob.Owner, local blob.Local) error {
	other := "Find the deployment of store " + got.StoreID + " (coffer admin meta status shows a store's ID); "
	release := "once no deployment of that store is left, delete " + s.claimPath() + " by hand and start this one again. " +
		"Beware: that store's garbage collection deletes every block here it does not know."
	var advice string
	switch {
	case local.Shared:
		advice = "This server keeps its metadata in PostgreSQL (meta.postgres.url), and each such node its blocks in a storage path " +
			"of its own: check that --storage-path and meta.postgres.url name this deployment's. " + other +
			"if this directory is not that deployment's either, " + release
	case local.HasBuckets:
		advice = "This server's metadata (the meta directory of its storage path) has buckets, whose blocks are here: do not move it. " +
			other + "stop it, and if it was never meant to use this directory, give it a storage path of its own; " + release
	default:
		advice = "This server's metadata (the meta directory of its storage path) has no buckets: if the meta directory was removed " +
			"or replaced, restore it; otherwise give this deployment a storage path of its own (--storage-path)."
	}
	if local.NewID && local.HasBuckets {
		advice += " " + blob.NewIDAdvice(got, s.claimPath())
	}
	return fmt.Errorf("fsblob: blob directory %w: %s belongs to metadata store %s (its claim %s written %s by Coffer %s), "+
		"not to this server's metadata store %s; the garbage collection of each would delete the blocks of the other. %s",
		blob.ErrClaimed, s.root.Name(), got.StoreID, blob.ClaimName, got.Claimed.Format(time.RFC3339), got.Version,
		want.StoreID, advice)
}

// readClaim reads the claim file; found is false if it is absent.
func (s *Store) readClaim() (o blob.Owner, found bool, err error) {
	f, err := s.root.Open(blob.ClaimName)
	if errors.Is(err, fs.ErrNotExist) {
		return blob.Owner{}, false, nil
	}
	if err != nil {
		return blob.Owner{}, false, fmt.Errorf("fsblob: read the claim: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, blob.MaxClaimSize+1))
	if err != nil {
		return blob.Owner{}, false, fmt.Errorf("fsblob: read the claim %s: %w", s.claimPath(), err)
	}
	if err := json.Unmarshal(b, &o); err != nil || len(b) > blob.MaxClaimSize || o.StoreID == "" {
		// Not ours to overwrite: whoever wrote it may own the directory.
		return blob.Owner{}, false, fmt.Errorf("fsblob: the claim %s is not a claim Coffer wrote (no store_id in a small JSON object); "+
			"if the directory is this deployment's, delete the file by hand", s.claimPath())
	}
	return o, true, nil
}

// writeClaim writes o as the claim file if there is none. The file is
// written and synced in .tmp and linked into place, so that the name never
// shows a partial claim and a claim that appeared meanwhile is kept: Claim
// reads whichever is there next.
func (s *Store) writeClaim(o blob.Owner) error {
	body, err := json.MarshalIndent(o, "", "  ")
	if err != nil {
		return fmt.Errorf("fsblob: encode the claim: %w", err)
	}
	body = append(body, '\n')
	// "claim." never starts a temporary file's name (tmpPrefix is digits
	// and letters and a dash).
	tmp := tmpDir + "/claim." + s.tmpPrefix
	f, err := s.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, filePerm)
	if err != nil {
		return fmt.Errorf("fsblob: write the claim: %w", err)
	}
	defer s.root.Remove(tmp)
	// Synced whatever Config.Sync says: a claim emptied by a power loss
	// would stop every start until deleted by hand.
	_, err = f.Write(body)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fsblob: write the claim: %w", err)
	}
	if err := s.root.Link(tmp, blob.ClaimName); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("fsblob: write the claim %s: %w", s.claimPath(), err)
	}
	if err := s.fsyncDir("."); err != nil {
		return fmt.Errorf("fsblob: write the claim %s: %w", s.claimPath(), err)
	}
	return nil
}
