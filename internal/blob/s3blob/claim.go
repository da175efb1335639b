package s3blob

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/coffer-s3/coffer/internal/blob"
)

// ClaimName is the name, under Prefix, of the object that claims the
// prefix for one metadata store (see Claim and blob.ClaimName). The object
// service's blocks are under "b/", the only place its garbage collection
// lists.
const ClaimName = blob.ClaimName

var _ blob.Claimer = (*Store)(nil)

// Claim makes sure that the prefix belongs to the metadata store
// want.StoreID, and returns the claim it found or wrote. Garbage
// collection deletes every block under the prefix that its own metadata
// does not reference: two deployments with different metadata stores
// sharing a prefix would delete each other's blocks, whereas the nodes of
// one cluster share its store and so its ID. A server claims its prefix
// at start, before its garbage collection may run.
//
// The claim is the object Prefix+ClaimName. If it is absent, Claim writes
// want there with If-None-Match: *, so that of two deployments claiming
// at once only one succeeds; an upstream that does not implement
// conditional writes (501 NotImplemented) gets a plain PutObject instead.
// Either way Claim reads the claim back, and what it reads decides: a
// claim of another store (someone else's write came first, or last on an
// upstream without conditional writes) fails with blob.ErrClaimed, naming the
// bucket, the prefix, both IDs and what to do. want.Note is set by Claim.
//
// A prefix without a claim that holds blocks (local.Blocks) is claimed
// only by a metadata store that has buckets: a deployment that used the
// prefix before claims existed claims it at its next start, and until
// then a new, empty deployment given the same prefix (a test instance
// pointed at production's) would otherwise claim it and, an hour later,
// delete every block there. It fails with blob.ErrUnclaimedBlocks.
func (s *Store) Claim(ctx context.Context, want blob.Owner, local blob.Local) (blob.Owner, error) {
	got, wrote, err := s.claims.Claim(ctx, claimIO{s}, want, local)
	if wrote {
		s.log.InfoContext(ctx, "upstream prefix claimed", "bucket", s.bucket, "prefix", s.prefix, "store_id", want.StoreID)
	}
	return got, err
}

// CheckClaim reads the prefix's claim again and fails (blob.ErrClaimed) if it
// now names another metadata store than the one Claim claimed it for:
// garbage collection asks before every orphan sweep (blob.Claimer), so that
// a claim replaced while servers run (by hand, or by a second deployment's
// first claim on an upstream without conditional writes) stops the sweep
// instead of letting two deployments delete each other's blocks. A claim
// deleted meanwhile is written again. Before any Claim it does nothing.
func (s *Store) CheckClaim(ctx context.Context) error {
	rewrote, err := s.claims.Check(ctx, claimIO{s})
	if rewrote {
		s.log.WarnContext(ctx, "upstream prefix claim was gone: claimed it again", "bucket", s.bucket, "prefix", s.prefix)
	}
	return err
}

// claimIO is the blob.ClaimIO of a Store (List is the Store's).
type claimIO struct{ *Store }

func (c claimIO) ReadClaim(ctx context.Context) (blob.Owner, bool, error) {
	return c.Store.readClaim(ctx)
}
func (c claimIO) WriteClaim(ctx context.Context, o blob.Owner) error {
	return c.Store.writeClaim(ctx, o)
}
func (c claimIO) ClaimedError(got, want blob.Owner, local blob.Local) error {
	return c.Store.claimedError(got, want, local)
}
func (c claimIO) UnclaimedBlocksError(first string, _ blob.Local) error {
	return c.Store.unclaimedBlocksError(first)
}

// prefixSettings names where an operator sets a deployment's prefix, for
// the errors that tell one to take a prefix of its own.
const prefixSettings = "--blob.s3.prefix; for coffer admin migrate, the PREFIX of --to-s3"

// unclaimedBlocksError is Claim's error for an unclaimed prefix that
// holds the block first, claimed by a store without buckets.
func (s *Store) unclaimedBlocksError(first string) error {
	return fmt.Errorf("s3blob: unclaimed prefix %w: bucket %q, prefix %q at %s holds blocks (%s, …), and this server's metadata store has no buckets: "+
		"they belong to another deployment that has not claimed the prefix yet (it will at its next start), or to one whose metadata is lost. "+
		"Give this deployment a prefix of its own ("+prefixSettings+"); "+
		"if no deployment uses these blocks any more, delete them from the bucket by hand and start again",
		blob.ErrUnclaimedBlocks, s.bucket, s.prefix, s.endpoint, first)
}

// claimedError is Claim's error for a prefix claimed by got, not want.
// What to do depends on which deployment holds the data: one whose
// metadata store has buckets keeps its blocks under this prefix, and
// moving it to another would orphan them for the other deployment's
// garbage collection to delete.
func (s *Store) claimedError(got, want blob.Owner, local blob.Local) error {
	advice := "This server's metadata store has no buckets: give this deployment a prefix of its own (" + prefixSettings + ")."
	if local.HasBuckets {
		advice = "This server's metadata store has buckets, whose blocks may be here: do not change its prefix. " +
			"Find the deployment of store " + got.StoreID + " (coffer admin meta status shows a store's ID) and stop it; " +
			"if it was never meant to use this prefix, give it a prefix of its own, and once no deployment of that store " +
			"is left, delete the object " + s.prefix + ClaimName + " from the bucket by hand and start this one again. " +
			"Beware: that store's garbage collection deletes every block here it does not know."
	}
	if local.NewID && local.HasBuckets {
		advice += " " + blob.NewIDAdvice(got, "the object "+s.prefix+ClaimName+" from the bucket")
	}
	return fmt.Errorf("s3blob: prefix %w: bucket %q, prefix %q at %s belongs to metadata store %s (its claim %s written %s by Coffer %s), "+
		"not to this server's metadata store %s; the garbage collection of each would delete the blocks of the other. %s",
		blob.ErrClaimed, s.bucket, s.prefix, s.endpoint, got.StoreID, s.prefix+ClaimName, got.Claimed.Format(time.RFC3339), got.Version,
		want.StoreID, advice)
}

// readClaim reads the claim object; found is false if it is absent.
func (s *Store) readClaim(ctx context.Context) (o blob.Owner, found bool, err error) {
	key := s.prefix + ClaimName
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if isNotFound(err) {
		return blob.Owner{}, false, nil
	}
	if err = s.upstreamErr(ctx, err); err != nil {
		return blob.Owner{}, false, fmt.Errorf("s3blob: read the claim %s in bucket %q at %s%s: %w", key, s.bucket, s.endpoint, describeAPIError(err), err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(io.LimitReader(out.Body, blob.MaxClaimSize+1))
	if err != nil {
		return blob.Owner{}, false, fmt.Errorf("s3blob: read the claim %s in bucket %q at %s: %w", key, s.bucket, s.endpoint, err)
	}
	if err := json.Unmarshal(b, &o); err != nil || len(b) > blob.MaxClaimSize || o.StoreID == "" {
		// Not ours to overwrite: whoever wrote it may own the prefix.
		return blob.Owner{}, false, fmt.Errorf("s3blob: the claim %s in bucket %q at %s is not a claim Coffer wrote (no store_id in a small JSON object); "+
			"if the prefix is this deployment's, delete the object by hand", key, s.bucket, s.endpoint)
	}
	return o, true, nil
}

// writeClaim writes o as the claim object if there is none, or, on an
// upstream without conditional writes, whatever is there. A write that
// finds a claim already there is not an error: Claim reads it next.
func (s *Store) writeClaim(ctx context.Context, o blob.Owner) error {
	key := s.prefix + ClaimName
	body, err := json.MarshalIndent(o, "", "  ")
	if err != nil {
		return fmt.Errorf("s3blob: encode the claim: %w", err)
	}
	put := func(ifNoneMatch *string) error {
		_, err := s.client.PutObject(ctx, &s3.PutObjectInput{
			Bucket: aws.String(s.bucket), Key: aws.String(key),
			Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body))),
			ContentType: aws.String("application/json"), IfNoneMatch: ifNoneMatch,
		})
		return err
	}
	err = put(aws.String("*"))
	switch {
	case err == nil:
		return nil
	case statusOf(err) == http.StatusPreconditionFailed || statusOf(err) == http.StatusConflict:
		// 412: the claim exists; 409 ConditionalRequestConflict (AWS):
		// another conditional write of it is under way. Either way the
		// read that follows sees whose it is.
		return nil
	case statusOf(err) == http.StatusNotImplemented || codeOf(err) == "NotImplemented":
		s.log.WarnContext(ctx, "upstream does not implement conditional writes; claiming the prefix with a plain write",
			"bucket", s.bucket, "prefix", s.prefix)
		err = put(nil)
	}
	if err = s.upstreamErr(ctx, err); err != nil {
		return fmt.Errorf("s3blob: write the claim %s in bucket %q at %s%s: %w", key, s.bucket, s.endpoint, describeAPIError(err), err)
	}
	return nil
}
