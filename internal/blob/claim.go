package blob

import (
	"context"
	"errors"
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
// blocks but no claim, and the claiming metadata store holds no records:
// the blocks are another deployment's that has not claimed the Store yet
// (it does at its next start), or the garbage of a lost one. Its text,
// like ErrClaimed's, continues the Store's description of itself
// ("s3blob: unclaimed prefix ").
var ErrUnclaimedBlocks = errors.New("holds blocks and the metadata store is empty")

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
	// HasRecords says its metadata store holds buckets or objects
	// (meta.DB.HasRecords).
	HasRecords bool
	// Blocks is the key prefix of the object service's blocks; "" skips
	// the check of an unclaimed Store for blocks.
	Blocks string
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
	// holds blocks under local.Blocks while local.HasRecords is false: a
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
