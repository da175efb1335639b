package objects

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/coffer-s3/coffer/internal/meta"
)

// What the lifecycle worker (internal/lifecycle) needs of the service: a
// walk over a bucket's versions in bounded batches, and Expire, which
// removes what the worker found due through the same metadata writes S3
// requests use, deciding again under the keys' locks. See
// docs/design/0008-lifecycle.md.

// Version is one version of an object as the lifecycle sees it.
type Version struct {
	Key          string
	VersionID    string // S3 version ID: "null" for the null version
	DeleteMarker bool
	// Latest reports that it is the key's latest version (the current
	// object, or a delete marker on top). Versions of the key a walk
	// resumes in are never reported latest: the previous batch saw the
	// latest.
	Latest   bool
	Size     int64
	Modified time.Time
	Tags     []Tag // only when the walk asked for them

	ref versionRef
}

// versionRef is where a Version was found, for Expire.
type versionRef struct {
	id, historyID string // meta.Object.VersionID and the history ID ("" for the current object)
}

// Noncurrent reports whether v is a noncurrent version (or a delete
// marker in the history that is not the latest version).
func (v *Version) Noncurrent() bool { return !v.Latest && v.ref.historyID != "" }

// WalkPosition is where a walk stopped; the zero value is the start.
type WalkPosition struct{ p meta.WalkPosition }

// WalkOptions selects one batch of WalkVersions.
type WalkOptions struct {
	Prefix string
	After  WalkPosition
	Limit  int // versions at most; ≤ 0 or more than 1000 means 1000
	// Noncurrent asks for noncurrent versions and delete markers too;
	// without it only current objects are read.
	Noncurrent bool
	// Tags asks for each version's tags, which costs decoding more of
	// every record; without it Tags is nil.
	Tags bool
}

// maxWalk bounds one batch of WalkVersions.
const maxWalk = 1000

// WalkVersions returns one batch of bucket's versions in key order, each
// key's newest first, the position after the last one and whether more
// may follow. Each batch is a short read of its own: nothing is held
// between batches, so a walk over millions of versions never holds up a
// request. Errors: NoSuchBucket.
func (s *Service) WalkVersions(ctx context.Context, bucket string, opt WalkOptions) ([]Version, WalkPosition, bool, error) {
	limit := opt.Limit
	if limit <= 0 || limit > maxWalk {
		limit = maxWalk
	}
	es, pos, more, err := s.db.WalkVersions(ctx, bucket, meta.WalkOptions{
		Prefix: opt.Prefix, After: opt.After.p, Limit: limit, History: opt.Noncurrent, Tags: opt.Tags,
	})
	if err != nil {
		return nil, opt.After, false, fmt.Errorf("walk %s: %w", bucket, err)
	}
	if len(es) == 0 && !opt.After.p.Started {
		// An empty walk of a missing bucket is an error, not a clean bucket.
		if err := s.checkBucket(ctx, bucket); err != nil {
			return nil, opt.After, false, err
		}
	}
	out := make([]Version, len(es))
	for i := range es {
		e := &es[i]
		out[i] = lifecycleVersion(e.Key, &e.Object)
		out[i].Latest = e.Latest
		out[i].ref.historyID = e.HistoryID
	}
	return out, WalkPosition{pos}, more, nil
}

func lifecycleVersion(key string, o *meta.Object) Version {
	return Version{
		Key: key, VersionID: o.S3VersionID(), DeleteMarker: o.DeleteMarker,
		Size: o.Size, Modified: o.Modified, Tags: fromMetaTags(o.Tags),
		ref: versionRef{id: o.VersionID},
	}
}

// ExpireKind says what Expire removes.
type ExpireKind uint8

// The kinds of ExpireTarget.
const (
	// ExpireCurrent expires a current object as a DeleteObject without a
	// version ID does: removed from an unversioned bucket, hidden under a
	// delete marker in a versioned one (a null delete marker, replacing
	// the null version, when versioning is suspended).
	ExpireCurrent ExpireKind = ExpireKind(meta.ExpireCurrent)
	// ExpireNoncurrent removes a noncurrent version for good.
	ExpireNoncurrent ExpireKind = ExpireKind(meta.ExpireNoncurrent)
	// ExpireDeleteMarker removes a delete marker that is its key's only
	// version.
	ExpireDeleteMarker ExpireKind = ExpireKind(meta.ExpireDeleteMarker)
)

// ExpireTarget is a version WalkVersions returned, and what to do with it.
type ExpireTarget struct {
	Version Version
	Kind    ExpireKind
}

// ExpireState is a target as Expire finds it under the key's lock.
type ExpireState struct {
	// Version is the version as it is now (Latest is not set); its tags
	// are always read.
	Version Version
	// NoncurrentSince is when a noncurrent version became noncurrent: the
	// Last-Modified of the version that replaced it (ExpireNoncurrent).
	NoncurrentSince time.Time
	// Newer counts the noncurrent versions newer than it, at most the
	// newerCap given to Expire (ExpireNoncurrent).
	Newer int
}

// ExpireResult is what Expire did with one target.
type ExpireResult struct {
	// Done reports that the version was removed, or hidden under a delete
	// marker; false means it was left alone because it changed, moved or
	// is no longer due.
	Done bool
	// DeleteMarker reports that a delete marker was written (VersionID is
	// its ID), or that the version removed was one.
	DeleteMarker bool
	// VersionID is the S3 version ID of the marker written or of the
	// version removed; "" for an object of an unversioned bucket.
	VersionID string
	// NullReplaced reports that the marker written (versioning suspended)
	// replaced the key's null version for good; NullReplacedMarker that
	// it was a delete marker, NullReplacedSize its bytes.
	NullReplaced, NullReplacedMarker bool
	NullReplacedSize                 int64
}

// Expire removes the targets in one commit, each only if the key still
// has that version where the walk found it and due, called under the
// key's lock with the version as it is then, still finds it due: a write
// that changed the version since (an overwrite, a retagging, a deletion,
// a version deleted above it) wins, and the version is left alone. due
// must be quick and do no I/O. Targets are applied in order; put a key's
// noncurrent versions oldest first. newerCap bounds how many newer
// noncurrent versions are counted for ExpireState.Newer (and read).
// Errors: NoSuchBucket.
func (s *Service) Expire(ctx context.Context, bucket string, targets []ExpireTarget, newerCap int, due func(i int, st ExpireState) bool) ([]ExpireResult, error) {
	ctx = writeContext(ctx)
	ts := make([]meta.ExpireTarget, len(targets))
	for i, t := range targets {
		ts[i] = meta.ExpireTarget{
			Key: t.Version.Key, Kind: meta.ExpireKind(t.Kind),
			VersionID: t.Version.ref.id, HistoryID: t.Version.ref.historyID,
		}
	}
	ds, err := s.db.Expire(ctx, bucket, ts, max(newerCap, 0), s.clock(), func(i int, st meta.ExpireState) bool {
		return due(i, ExpireState{
			Version:         lifecycleVersion(targets[i].Version.Key, st.Version),
			NoncurrentSince: st.Successor, Newer: st.Newer,
		})
	})
	switch {
	case errors.Is(err, meta.ErrNoBucket):
		return nil, noSuchBucket(bucket)
	case err != nil:
		return nil, fmt.Errorf("expire %d versions in %s: %w", len(targets), bucket, err)
	}
	out := make([]ExpireResult, len(ds))
	for i, d := range ds {
		out[i] = ExpireResult{Done: d.Done, DeleteMarker: d.DeleteMarker, VersionID: d.VersionID,
			NullReplaced: d.NullReplaced, NullReplacedMarker: d.NullReplacedMarker, NullReplacedSize: d.NullReplacedSize}
	}
	return out, nil
}

// configGen counts the changes of bucket configurations and of the set of
// buckets made through this service, so that caches of parsed
// configurations (the lifecycle rules behind x-amz-expiration) know when
// to read again.
type configGen struct{ n atomic.Uint64 }

func (g *configGen) bump() { g.n.Add(1) }

// ConfigGeneration returns a number that changes whenever this service
// stores or deletes a bucket configuration, or creates or deletes a
// bucket. A cache of something derived from configurations is current
// while the number has not changed. Another process writing the same
// metadata (scale-out) is seen once ConfigsChanged reports its change.
func (s *Service) ConfigGeneration() uint64 { return s.configGen.n.Load() }

// ConfigsChanged tells the service that another node of a shared metadata
// store changed a bucket configuration (or the set of buckets), so that
// ConfigGeneration moves and caches read again.
func (s *Service) ConfigsChanged() { s.configGen.bump() }
