package objects

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/coffer-s3/coffer/internal/meta"
	"github.com/coffer-s3/coffer/internal/s3err"
)

// On a shared metadata store each node's GC spares the blocks of writes in
// flight on the other nodes only because they are younger than its grace,
// and frees the blocks of versions it dropped only after its free delay,
// the time it gives GETs on the other nodes. Both rest on every node's
// settings agreeing, which nothing would check: a node started with a
// shorter gc-grace than the others would collect the blocks of their
// slower writes, which then commit references to deleted blocks.
//
// So each node publishes its settings in the store (meta.NodeRecord; at
// start, then every nodeBeat), and a node counts as live until its record
// is older than its grace plus nodeSlack. A GC pass uses the largest grace
// of the live nodes (and at least its own), and prompt freeing waits the
// largest free delay: nodes with different settings are as safe as the
// most cautious of them. A node whose record may be about to stop
// counting (it could not publish for half its grace: the database was out
// of its reach) refuses writes with blocks until it publishes again.

// nodeSlack is how long past its grace a node's record still counts: room
// for clocks of nodes that disagree, which writeLimit's margin assumes
// already (a quarter of the grace, at most 5 minutes). nodeForget is how
// long after that a GC pass deletes it (a node's ID is new at each start,
// so records of nodes stopped or restarted would pile up).
func nodeSlack(grace time.Duration) time.Duration { return min(grace/4, 5*time.Minute) }

const nodeForget = 24 * time.Hour

// nodeExpiry returns when r stops counting.
func nodeExpiry(r meta.NodeRecord) time.Time { return r.Seen.Add(r.Grace + nodeSlack(r.Grace)) }

// clusterNeeds is what the live nodes' records ask of a GC pass and of
// prompt freeing: the largest grace and free delay among them.
type clusterNeeds struct {
	grace, freeDelay time.Duration
}

// nodeBeat is how often a node publishes its record: a minute, or an
// eighth of its grace if that is shorter (at least 50 ms), so that a node
// beats four times before checkPublished would refuse its writes.
func (s *Service) nodeBeat() time.Duration {
	return max(50*time.Millisecond, min(time.Minute, s.cfg.GCGrace/8))
}

// Publish stores this node's record (its GC grace and free delay) in the
// shared metadata store and reads what the live nodes' records ask for.
// The server calls it before it serves, and Run every nodeBeat. It does
// nothing on a store of one node or without a NodeID.
func (s *Service) Publish(ctx context.Context) error {
	if !s.shared || s.cfg.NodeID == "" {
		return nil
	}
	now := s.clock()
	r := meta.NodeRecord{Node: s.cfg.NodeID, Grace: s.cfg.GCGrace, FreeDelay: max(s.cfg.FreeDelay, s.cfg.SharedFreeDelay), Seen: now}
	if err := s.db.PutNode(ctx, r); err != nil {
		return fmt.Errorf("publish this node's GC settings: %w", err)
	}
	s.published.Store(now.UnixNano())
	// What the others ask is for prompt freeing; GC passes read it again.
	// A record that does not decode stops GC passes, not this node.
	needs, err := s.clusterNeeds(ctx)
	if err != nil {
		s.log.ErrorContext(ctx, "could not read the cluster's node records: GC passes fail until it is fixed", "err", err)
		return nil
	}
	s.cluster.Store(&needs)
	return nil
}

// clusterNeeds reads the nodes' records and returns what the live ones
// ask for.
func (s *Service) clusterNeeds(ctx context.Context) (clusterNeeds, error) {
	nodes, err := s.db.Nodes(ctx)
	if err != nil {
		return clusterNeeds{}, fmt.Errorf("read the nodes' GC settings: %w", err)
	}
	now := s.clock()
	var n clusterNeeds
	for _, r := range nodes {
		if now.After(nodeExpiry(r)) {
			continue // stopped publishing: its writes are over
		}
		n.grace = max(n.grace, r.Grace)
		n.freeDelay = max(n.freeDelay, r.FreeDelay)
	}
	return n, nil
}

// publishLoop publishes this node's record every nodeBeat until ctx ends.
// A failure is logged; writes stop when it lasts (checkPublished).
func (s *Service) publishLoop(ctx context.Context) {
	t := time.NewTicker(s.nodeBeat())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, max(time.Second, s.cfg.GCGrace/4))
		err := s.Publish(pctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			s.log.WarnContext(ctx, "could not publish this node's GC settings to the cluster; writes stop if it lasts", "err", err,
				"stops_after", s.cfg.GCGrace/2)
		}
	}
}

// checkPublished refuses, on a shared store where this node publishes, a
// write with blocks once the node could not publish its record for half
// its grace: other nodes may soon stop counting it, and then collect
// blocks of its writes that their own grace does not cover. It refuses
// early; what makes a commit safe is commitContext's deadline, which ends
// it before the node's last record stops counting.
func (s *Service) checkPublished(res string) error {
	last := s.published.Load()
	if last == 0 {
		return nil // publishes nothing (no NodeID): the settings must agree
	}
	since := s.clock().Sub(time.Unix(0, last))
	if since <= s.cfg.GCGrace/2 {
		return nil
	}
	return &s3err.Error{Code: s3err.ServiceUnavailable, Resource: res, Err: errUnpublished,
		Message: "This node could not reach the cluster's metadata store for " + since.Round(time.Second).String() + "; please retry."}
}

var errUnpublished = errors.New("objects: this node's GC settings are not published")

// forgetNodes deletes the records of nodes that stopped publishing more
// than nodeForget ago. A GC pass calls it under the cluster's lease; a
// failure only leaves them for the next pass.
func (s *Service) forgetNodes(ctx context.Context) {
	nodes, err := s.db.Nodes(ctx)
	if err != nil {
		return
	}
	now := s.clock()
	for _, r := range nodes {
		if now.After(nodeExpiry(r).Add(nodeForget)) {
			if err := s.db.ForgetNode(ctx, r); err != nil {
				s.log.WarnContext(ctx, "could not delete the record of a node gone long ago", "node", r.Node, "err", err)
				return
			}
		}
	}
}

// freeDelay returns how long prompt freeing waits after the commit that
// queued garbage: FreeDelay, and on a shared store at least
// SharedFreeDelay and the largest free delay of the live nodes. A node
// that publishes but could not read the others' records yet waits its
// grace: their free delays are unknown to it.
func (s *Service) freeDelay() time.Duration {
	d := s.cfg.FreeDelay
	if s.shared {
		d = max(d, s.cfg.SharedFreeDelay)
		switch n := s.cluster.Load(); {
		case n != nil:
			d = max(d, n.freeDelay)
		case s.cfg.NodeID != "":
			d = max(d, s.cfg.GCGrace)
		}
	}
	return d
}
