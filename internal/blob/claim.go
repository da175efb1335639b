package blob

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Claims. Garbage collection deletes every block of a Store that its own
// metadata store does not reference (the orphan sweep), so two deployments
// with different metadata stores on one Store — two gateways on one
// upstream prefix, a PostgreSQL deployment and a single-node one on one
// storage path, a test instance pointed at production's — would delete
// each other's blocks, silently and for good. A Store that others could
// reach too is therefore claimed for one metadata store by a small object
// or file named ClaimName, which a server writes or checks at start and
// its garbage collection reads again before every sweep. The nodes of one
// cluster share their metadata store, and so its claim.

// ClaimName is the name, in a Store's root (under s3blob's prefix, in
// fsblob's directory), of the claim. It is no blob key: the Stores that
// claim refuse it to Put, Get and Delete and List skips it, so nothing
// that handles blobs ever sees it, let alone deletes it.
const ClaimName = "coffer-owner.json"

// MaxClaimSize bounds what a Store reads of a claim: it is a few hundred
// bytes, and anything much larger was not written by Coffer.
const MaxClaimSize = 64 << 10

// ErrClaimed is returned (wrapped) by Claim when the Store is claimed by
// another metadata store, and by CheckClaim when its claim changed to
// another store's. Its text continues the Store's description of itself
// ("s3blob: prefix ", "fsblob: blob directory ").
var ErrClaimed = errors.New("claimed by another metadata store")

// ErrUnclaimedBlocks is returned (wrapped) by Claim when the Store holds
// blocks but no claim, and the claiming metadata store has no buckets (or
// other metadata lies beside the blocks, Local.Beside):
// the blocks are another deployment's that has not claimed the Store yet
// (it does at its next start), or the garbage of a lost one. Its text,
// like ErrClaimed's, continues the Store's description of itself
// ("s3blob: unclaimed prefix ").
var ErrUnclaimedBlocks = errors.New("holds blocks but no claim")

// Owner is the content of a claim: the metadata store that claims a Store,
// and, for the operator who finds it, when and by which Coffer.
type Owner struct {
	StoreID string    `json:"store_id"`       // the metadata store's ID (meta.DB.StoreID)
	Claimed time.Time `json:"claimed"`        // when the claim was written
	Version string    `json:"coffer_version"` // the version of the Coffer that wrote it
	// Note says what the claim is for, to whoever finds it.
	Note string `json:"note,omitempty"`
}

// ClaimNote is Owner.Note of the claims Stores write.
const ClaimNote = "Coffer keeps the blocks of the metadata store store_id here; " +
	"its garbage collection deletes every block here that store does not reference. " +
	"Do not point another Coffer deployment here."

// Local describes the deployment that claims a Store, for Claim's checks
// and messages.
type Local struct {
	// HasBuckets says its metadata store holds buckets
	// (meta.DB.HasBuckets): only then can blocks of its own be in the
	// Store.
	HasBuckets bool
	// Blocks is the key prefix of the object service's blocks; "" skips
	// the check of an unclaimed Store for blocks.
	Blocks string
	// Shared says the metadata is not kept beside the blocks but in a
	// database (PostgreSQL) that names itself: a wrong storage path or
	// database URL is then the likely mistake, not a lost metadata
	// directory.
	Shared bool
	// NewID says the metadata store got its ID at this start
	// (meta.DB.StoreIDNew): if it has buckets, a claim naming another ID
	// may be its own, made before its metadata was restored from a backup
	// older than store IDs.
	NewID bool
	// Beside names the metadata of another deployment found beside the
	// Store (a single node's meta directory next to the blob directory a
	// PostgreSQL node was given): an unclaimed Store holding blocks is
	// then refused even to a metadata store with buckets, since they are
	// most likely that deployment's.
	Beside string
}

// NewIDAdvice is the advice a Store adds to a ClaimedError when
// Local.NewID is set: the claim may be this store's own from before, what
// is to be deleted by hand then.
func NewIDAdvice(got Owner, what string) string {
	return "This server's metadata store got its ID at this start: it was written before store IDs (restored from a backup made before Coffer " +
		"had them, or not opened since the upgrade). If it is the store that claimed this as " + got.StoreID +
		" (claimed " + got.Claimed.Format(time.RFC3339) + ") and no other deployment uses it, delete " + what +
		" by hand and start again."
}

// Claimer is implemented by a Store that holds its blobs where other
// deployments could too: s3blob (an upstream prefix) and fsblob (a
// directory, which a storage path on a shared filesystem or a second
// configuration may name).
type Claimer interface {
	// Claim makes sure that the Store belongs to the metadata store
	// want.StoreID, writing want as its claim if it has none, and returns
	// the claim it found or wrote. It fails with ErrClaimed if another
	// store claimed it, and with ErrUnclaimedBlocks if it has no claim but
	// holds blocks under local.Blocks while local.HasBuckets is false (or
	// local.Beside names other metadata beside them): a
	// deployment that used the Store before claims existed claims it at
	// its next start, and until then a new, empty deployment given the
	// same Store would otherwise claim it and, an hour later, delete every
	// block there. A server claims at start, before its garbage
	// collection may run. want.Note is set by Claim.
	Claim(ctx context.Context, want Owner, local Local) (Owner, error)
	// CheckClaim reads the claim again and fails (ErrClaimed) if it now
	// names another metadata store than the one Claim claimed it for;
	// garbage collection asks before every sweep for orphans and, on an
	// error, deletes nothing. A claim deleted meanwhile is written again.
	// Before any Claim it does nothing.
	CheckClaim(ctx context.Context) error
}

// ClaimIO is what a Store gives Claims to read and write its claim.
type ClaimIO interface {
	// ReadClaim reads the claim; found is false if there is none. A claim
	// Coffer did not write is an error: whoever wrote it may own the
	// Store, and it is not Claims' to replace.
	ReadClaim(ctx context.Context) (o Owner, found bool, err error)
	// WriteClaim writes o as the claim if there is none. Finding one
	// there is not an error: Claims reads whichever is there next.
	WriteClaim(ctx context.Context, o Owner) error
	// List is the Store's List (Claims looks for blocks with it).
	List(ctx context.Context, prefix string, fn func(key string) error) error
	// ClaimedError is the error (wrapping ErrClaimed) for a Store claimed
	// by got, not want; UnclaimedBlocksError (wrapping
	// ErrUnclaimedBlocks) the one for an unclaimed Store holding the
	// block first. Their advice is the Store's: where an operator sets
	// its location.
	ClaimedError(got, want Owner, local Local) error
	UnclaimedBlocksError(first string, local Local) error
}

// errFound stops Claim's look for blocks at the first.
var errFound = errors.New("found")

// Claims runs the claim protocol of Claimer over a Store's ClaimIO and
// remembers what it claimed, for Check. The zero value is ready; a Store
// embeds one.
type Claims struct {
	claimed atomic.Pointer[claimed]
}

// claimed is what Claims.Claim claimed, and for whom.
type claimed struct {
	want  Owner
	local Local
}

// Claim is Claimer.Claim over cio. wrote reports that this call wrote the
// claim it returns (for the Store's log).
//
// The claim is written only where there was none, and always read back:
// what the read finds decides, so that of two deployments claiming at once
// the one whose write landed wins on both. A claim written at the same
// moment by another node of the cluster may not be readable at once (a
// 409 from AWS: another conditional write under way), so the read back is
// tried a few times over about three seconds.
func (c *Claims) Claim(ctx context.Context, cio ClaimIO, want Owner, local Local) (got Owner, wrote bool, err error) {
	if want.StoreID == "" {
		return Owner{}, false, errors.New("blob: claim without a store ID")
	}
	got, found, err := cio.ReadClaim(ctx)
	if err != nil {
		return Owner{}, false, err
	}
	if !found && (!local.HasBuckets || local.Beside != "") && local.Blocks != "" {
		var first string
		err := cio.List(ctx, local.Blocks, func(k string) error {
			first = k
			return errFound
		})
		if err != nil && !errors.Is(err, errFound) {
			return Owner{}, false, fmt.Errorf("blob: look for blocks under %q in an unclaimed store: %w", local.Blocks, err)
		}
		if first != "" {
			return Owner{}, false, cio.UnclaimedBlocksError(first, local)
		}
	}
	if !found {
		want.Note = ClaimNote
		if err := cio.WriteClaim(ctx, want); err != nil {
			return Owner{}, false, err
		}
		for wait := 100 * time.Millisecond; ; wait *= 2 {
			if got, found, err = cio.ReadClaim(ctx); err != nil {
				return Owner{}, false, err
			}
			if found || wait > 2*time.Second {
				break
			}
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return Owner{}, false, ctx.Err()
			}
		}
		if !found {
			return Owner{}, false, errors.New("blob: claim written, but not found when read back")
		}
		wrote = got.StoreID == want.StoreID
	}
	if got.StoreID != want.StoreID {
		return got, false, cio.ClaimedError(got, want, local)
	}
	c.claimed.Store(&claimed{want, local})
	return got, wrote, nil
}

// Check is Claimer.CheckClaim over cio. rewrote reports that the claim was
// gone and has been written again (for the Store's log).
func (c *Claims) Check(ctx context.Context, cio ClaimIO) (rewrote bool, err error) {
	cl := c.claimed.Load()
	if cl == nil {
		return false, nil
	}
	// The Store was claimed, so its blocks are this store's: a claim
	// written again needs no look for blocks.
	local := cl.local
	local.HasBuckets, local.Beside = true, ""
	got, found, err := cio.ReadClaim(ctx)
	switch {
	case err != nil:
		return false, err
	case !found:
		_, wrote, err := c.Claim(ctx, cio, cl.want, local)
		return wrote, err
	case got.StoreID != cl.want.StoreID:
		return false, cio.ClaimedError(got, cl.want, local)
	}
	return false, nil
}
