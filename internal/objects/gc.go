package objects

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/coffer-s3/coffer/internal/blob"
	"github.com/coffer-s3/coffer/internal/meta"
)

// gcPage is how many garbage entries GC reads and deletes per batch.
const gcPage = 1000

// GC runs one garbage-collection pass, removing blobs that no object or
// part references and that are older than grace:
//
//  1. The garbage queue: blobs of overwritten or deleted objects, replaced
//     parts and aborted or completed uploads, queued in the commit that
//     dropped them. An entry older than grace is deleted from the block
//     store, then from the queue, unless a reader still streams its object
//     version.
//  2. The orphan sweep, for blobs no record ever referenced (a crash
//     between writing blocks and committing): snapshot the in-flight set,
//     scan every reference in one consistent snapshot of the metadata into
//     a Bloom filter (refSet), then list the block store and delete the
//     listed blobs older than grace that are surely not referenced and
//     were not in flight at the snapshot or since (inflightSet.watch). A
//     blob a record references now was either referenced at the scan, or
//     its record committed after it, so its write was in flight at the
//     snapshot or began after it: a blob is in flight from before its
//     first byte until after its record commits. Memory is the filter's, about 1.5 bytes
//     per referenced block, whatever the store holds; a blob the filter
//     takes for referenced by mistake (about 0.3 %) waits for a later
//     pass, which hashes anew.
//
// One pass runs at a time. The error is the first failure; the stats count
// what was done until then.
//
// On a store shared by several nodes a pass runs under the cluster's GC
// lease (meta.DB.GCLease): if another node holds it, GC returns at once
// with Elsewhere set. Blobs of writes in flight on other nodes are not in
// this node's in-flight set; they are spared by the grace period, which
// every write on a shared store must beat (writeLimit). That limit derives
// from the configured GCGrace, so on a shared store a pass asked for a
// shorter grace (an operator's `coffer admin gc --grace 0s`) runs with
// GCGrace instead, or with the longest grace a live node published if
// that is longer (nodes.go); GCStats.Grace says which it used.
func (s *Service) GC(ctx context.Context, grace time.Duration) (GCStats, error) {
	s.gcMu.Lock()
	defer s.gcMu.Unlock()
	st := GCStats{Grace: grace}
	if s.shared {
		st.Grace = max(grace, s.cfg.GCGrace)
	}
	release, ok, err := s.db.GCLease(ctx)
	if err != nil {
		return st, fmt.Errorf("gc: %w", err)
	}
	if !ok {
		st.Elsewhere = true
		return st, nil
	}
	defer release()
	drainAge := st.Grace
	if s.shared {
		s.forgetNodes(ctx)
		needs, err := s.clusterNeeds(ctx)
		if err != nil {
			return st, fmt.Errorf("gc: %w", err)
		}
		// The longest grace and free delay of the live nodes (nodes.go):
		// the blocks of their writes in flight, and of the versions their
		// GETs stream, are kept.
		st.Grace = max(st.Grace, needs.grace)
		drainAge = max(st.Grace, needs.freeDelay, s.freeDelay())
	}
	now := s.clock()
	cutoff := now.Add(-st.Grace)
	if err := s.drainGarbage(ctx, now.Add(-drainAge), false, &st); err != nil {
		return st, err
	}
	if err := s.sweepOrphans(ctx, cutoff, &st); err != nil {
		return st, err
	}
	return st, nil
}

// drainGarbage deletes the blobs of garbage entries queued before cutoff
// whose versions have no readers; with own, only of entries this node
// queued (meta.DB.QueuedHere).
func (s *Service) drainGarbage(ctx context.Context, cutoff time.Time, own bool, st *GCStats) error {
	s.drainMu.Lock()
	defer s.drainMu.Unlock()
	var after *meta.Garbage
	for {
		page, err := s.db.Garbage(ctx, cutoff, after, gcPage)
		if err != nil {
			return fmt.Errorf("gc: %w", err)
		}
		if len(page) == 0 {
			return nil
		}
		after = &page[len(page)-1]
		done := page[:0:0]
		for _, g := range page {
			if own && !s.db.QueuedHere(g) {
				continue // another node's to free, or the GC pass's
			}
			if g.VersionID != "" && s.readers.active(g.VersionID) {
				st.Busy++
				continue // a reader streams it; a later pass takes it
			}
			if err := s.store.Delete(ctx, g.BlobKey); err != nil {
				return errors.Join(fmt.Errorf("gc: delete blob %s: %w", g.BlobKey, err), s.db.DeleteGarbage(ctx, done))
			}
			st.Deleted++
			st.DeletedBytes += g.Size
			done = append(done, g)
		}
		if err := s.db.DeleteGarbage(ctx, done); err != nil {
			return fmt.Errorf("gc: %w", err)
		}
		if len(page) < gcPage {
			return nil
		}
	}
}

// sweepOrphans deletes blobs older than cutoff that nothing references.
// The order (in-flight set, references, listing) is what makes it safe:
// see GC.
func (s *Service) sweepOrphans(ctx context.Context, cutoff time.Time, st *GCStats) error {
	spared, stop := s.inflight.watch()
	defer stop()
	refs := newRefSet(int(s.lastRefs.Load()) * 5 / 4)
	err := s.db.ReferencedBlocks(ctx, func(k string) error {
		refs.add(k)
		return nil
	})
	if err != nil {
		return fmt.Errorf("gc: %w", err)
	}
	s.lastRefs.Store(int64(refs.n))
	if c, ok := s.store.(blob.Claimer); ok {
		// The blobs under a claimed prefix are this store's to judge
		// only while the claim is still its own.
		if err := c.CheckClaim(ctx); err != nil {
			return fmt.Errorf("gc: no orphan sweep: %w", err)
		}
	}
	err = s.store.List(ctx, blobPrefix, func(k string) error {
		st.Scanned++
		// Keys of another format are not ours to judge; keys younger
		// than the grace period may belong to a writer elsewhere.
		t, ok := blobKeyTime(k)
		if !ok || t.After(cutoff) || refs.mayHave(k) || spared(k) {
			return nil
		}
		if err := s.store.Delete(ctx, k); err != nil {
			return fmt.Errorf("gc: delete orphan blob %s: %w", k, err)
		}
		st.Deleted++
		s.log.DebugContext(ctx, "gc deleted orphan blob", "blob", k)
		return nil
	})
	if err != nil {
		return fmt.Errorf("gc: sweep blobs: %w", err)
	}
	return nil
}

// Run runs background work until ctx is done, and returns nil then:
// prompt freeing of queued garbage (FreeDelay) and the periodic GC (every
// GCInterval, with GCGrace). A failed pass is logged and retried later.
func (s *Service) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	if s.cfg.FreeDelay >= 0 {
		wg.Go(func() { s.freeLoop(ctx) })
	}
	if s.cfg.GCInterval >= 0 {
		wg.Go(func() { s.gcLoop(ctx) })
	}
	if s.shared && s.cfg.NodeID != "" {
		wg.Go(func() { s.publishLoop(ctx) })
	}
	<-ctx.Done()
	wg.Wait()
	return nil
}

// garbageQueued is meta's OnGarbage hook: it wakes freeLoop, without
// blocking the commit.
func (s *Service) garbageQueued() {
	select {
	case s.freed <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// Bounds of prompt freeing: passes start at most once per freePause, so
// that a burst of deletes costs one scan of the queue, and entries kept
// for a reader are retried after freeRetry.
const (
	freePause = time.Second
	freeRetry = 2 * time.Second
)

// freeLoop frees queued garbage soon after the commits that queued it:
// the commit knows its blocks are garbage, so deleting objects gives their
// space back within seconds, without waiting for the GC's grace, which is
// for blobs no record mentions. Readers are safe: GetObject registers as a
// reader of a version before it trusts the version's blocks, and a drain
// keeps the blocks of versions with readers (and comes back for them).
//
// On a shared store a node sees neither the readers nor the commits of the
// others. It frees only the entries its own commits queued — it knows
// those blocks are garbage, and it leaves each node's entries to that
// node — and waits at least SharedFreeDelay, the time a GET through
// another node has to finish streaming a version dropped here. What a
// node queued and never freed (it died) is the GC pass's, after its grace.
func (s *Service) freeLoop(ctx context.Context) {
	pause := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return true
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.freed:
		}
		delay := s.freeDelay()
		if delay > 0 && !pause(delay) {
			return
		}
		var st GCStats
		// Entries queued at or before now less the delay.
		cutoff := s.clock().Add(time.Nanosecond - delay)
		err := s.drainGarbage(ctx, cutoff, s.shared, &st)
		if s.shared {
			// What this node queued and did not free by now (kept for
			// readers past the grace) is the GC pass's.
			s.db.ForgetQueued(s.clock().Add(-max(s.cfg.GCGrace, delay)))
		}
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			s.log.WarnContext(ctx, "freeing garbage failed", "err", err, "deleted", st.Deleted)
			s.garbageQueued() // try again after the pause
		case st.Deleted > 0:
			s.log.DebugContext(ctx, "freed garbage", "deleted", st.Deleted, "deleted_bytes", st.DeletedBytes, "kept_for_readers", st.Busy)
		}
		if st.Busy > 0 {
			time.AfterFunc(freeRetry, s.garbageQueued)
		}
		if !pause(freePause) {
			return
		}
	}
}

// gcLoop runs a GC pass every GCInterval.
func (s *Service) gcLoop(ctx context.Context) {
	t := time.NewTicker(s.cfg.GCInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		start := time.Now()
		st, err := s.GC(ctx, s.cfg.GCGrace)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			s.log.WarnContext(ctx, "gc pass failed", "err", err, "deleted", st.Deleted)
		case st.Elsewhere:
			s.log.DebugContext(ctx, "gc pass left to the node that holds the lease")
		case st.Deleted > 0:
			s.log.InfoContext(ctx, "gc pass", "scanned", st.Scanned, "deleted", st.Deleted,
				"deleted_bytes", st.DeletedBytes, "duration", time.Since(start))
		}
	}
}
