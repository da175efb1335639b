package s3blob

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// ClaimName is the name, under Prefix, of the object that claims the
// prefix for one metadata store (see Claim). It is a valid blob key, but
// not one the object service makes (its blocks are under "b/", the only
// place its garbage collection lists), and List skips it, so nothing that
// lists blobs ever sees it, let alone deletes it.
const ClaimName = "coffer-owner.json"

// maxClaimSize bounds what Claim reads of a claim object: it is a few
// hundred bytes, and anything much larger was not written by Claim.
const maxClaimSize = 64 << 10

// ErrClaimed is returned (wrapped) by Claim when the prefix is claimed by
// another metadata store.
var ErrClaimed = errors.New("s3blob: prefix claimed by another metadata store")

// Owner is the content of a claim object: the metadata store that claims
// the prefix, and for the operator who finds it, when and by which Coffer.
type Owner struct {
	StoreID string    `json:"store_id"`       // the metadata store's ID (meta.DB.StoreID)
	Claimed time.Time `json:"claimed"`        // when the claim was written
	Version string    `json:"coffer_version"` // the version of the Coffer that wrote it
	// Note says what the object is for, to whoever lists the bucket.
	Note string `json:"note,omitempty"`
}

// claimNote is Owner.Note of the claims Claim writes.
const claimNote = "Coffer keeps the blocks of the metadata store store_id under this prefix; " +
	"its garbage collection deletes every block here that store does not reference. " +
	"Do not point another Coffer deployment at this prefix."

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
// upstream without conditional writes) fails with ErrClaimed, naming the
// bucket, the prefix, both IDs and what to do. want.Note is set by Claim.
func (s *Store) Claim(ctx context.Context, want Owner) (Owner, error) {
	if want.StoreID == "" {
		return Owner{}, errors.New("s3blob: claim without a store ID")
	}
	got, found, err := s.readClaim(ctx)
	if err != nil {
		return Owner{}, err
	}
	if !found {
		want.Note = claimNote
		if err := s.writeClaim(ctx, want); err != nil {
			return Owner{}, err
		}
		if got, found, err = s.readClaim(ctx); err != nil {
			return Owner{}, err
		}
		if !found {
			return Owner{}, fmt.Errorf("s3blob: claim %s in bucket %q at %s: written, but not found when read back", s.prefix+ClaimName, s.bucket, s.endpoint)
		}
		if got.StoreID == want.StoreID {
			s.log.InfoContext(ctx, "upstream prefix claimed", "bucket", s.bucket, "prefix", s.prefix, "store_id", want.StoreID)
		}
	}
	if got.StoreID != want.StoreID {
		return got, s.claimedError(got, want)
	}
	return got, nil
}

// claimedError is Claim's error for a prefix claimed by got, not want.
func (s *Store) claimedError(got, want Owner) error {
	return fmt.Errorf("%w: bucket %q, prefix %q at %s belongs to metadata store %s (claimed %s by Coffer %s), "+
		"not to this server's metadata store %s; its garbage collection would delete the blocks of the other, "+
		"and the other's would delete this one's. Give this deployment a prefix of its own (--blob.s3.prefix; "+
		"for coffer admin migrate, the PREFIX of --to-s3); "+
		"or, if this metadata store really is the owner now (its database was restored to a new server, "+
		"and the old one is gone), delete the object %s from the bucket by hand and start again",
		ErrClaimed, s.bucket, s.prefix, s.endpoint, got.StoreID, got.Claimed.Format(time.RFC3339), got.Version,
		want.StoreID, s.prefix+ClaimName)
}

// readClaim reads the claim object; found is false if it is absent.
func (s *Store) readClaim(ctx context.Context) (o Owner, found bool, err error) {
	key := s.prefix + ClaimName
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if isNotFound(err) {
		return Owner{}, false, nil
	}
	if err = s.upstreamErr(ctx, err); err != nil {
		return Owner{}, false, fmt.Errorf("s3blob: read the claim %s in bucket %q at %s%s: %w", key, s.bucket, s.endpoint, describeAPIError(err), err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(io.LimitReader(out.Body, maxClaimSize+1))
	if err != nil {
		return Owner{}, false, fmt.Errorf("s3blob: read the claim %s in bucket %q at %s: %w", key, s.bucket, s.endpoint, err)
	}
	if err := json.Unmarshal(b, &o); err != nil || len(b) > maxClaimSize || o.StoreID == "" {
		// Not ours to overwrite: whoever wrote it may own the prefix.
		return Owner{}, false, fmt.Errorf("s3blob: the claim %s in bucket %q at %s is not a claim Coffer wrote (no store_id in a small JSON object); "+
			"if the prefix is this deployment's, delete the object by hand", key, s.bucket, s.endpoint)
	}
	return o, true, nil
}

// writeClaim writes o as the claim object if there is none, or, on an
// upstream without conditional writes, whatever is there. A write that
// finds a claim already there is not an error: Claim reads it next.
func (s *Store) writeClaim(ctx context.Context, o Owner) error {
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
