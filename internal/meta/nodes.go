package meta

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// The nodes of a shared store (PostgreSQL) each publish what the safety of
// the cluster's garbage collection rests on, so that a GC pass on any node
// spares what every node's writes and reads need, whatever each node was
// configured with:
//
//	N node ID → JSON NodeRecord (its GC grace and free delay, and when it
//	            last published them)
//
// A node publishes at start and then periodically (objects.Service). 'N'
// sorts before every typed table and lies outside every range the typed
// layer scans ([b, v) for usage, [g, q) for GC, single tables otherwise)
// and the ranges HasRecords looks at. A migration neither copies nor
// digests it (copySkip): the target's nodes publish their own. A node's ID
// is new at each start; a record that stopped being published stops
// counting after a while and is deleted after a longer one
// (objects.Service).
const tableNodes = 'N'

// NodeRecord is what one node of a shared store published.
type NodeRecord struct {
	Node string `json:"-"` // its ID (the key)
	// Grace is its GC grace: its writes commit before their first block is
	// that old (objects' writeLimit), so no pass may take a block younger.
	Grace time.Duration `json:"grace"`
	// FreeDelay is how long it waits before it frees the blocks of versions
	// it dropped, the time it lets a GET through another node finish.
	FreeDelay time.Duration `json:"freeDelay"`
	// Seen is when it published the record, by its clock.
	Seen time.Time `json:"seen"`

	raw []byte // the stored bytes Nodes decoded it from
}

// maxNodeID bounds a node ID's length.
const maxNodeID = 64

func nodeKey(node string) []byte {
	return append([]byte{tableNodes}, node...)
}

// nodesLockBucket names the lock that serialises the writes of node
// records: no bucket name holds a 0x00 byte.
const nodesLockBucket = "\x00nodes"

// PutNode stores r under its node's ID, replacing what the node published
// before, durably.
func (db *DB) PutNode(ctx context.Context, r NodeRecord) error {
	if r.Node == "" || len(r.Node) > maxNodeID {
		return fmt.Errorf("meta: node ID %q: want 1 to %d bytes", r.Node, maxNodeID)
	}
	v, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("meta: encode node record: %w", err)
	}
	return db.updateNode(ctx, r.Node, func([]byte) ([]byte, bool) { return v, true })
}

// ForgetNode deletes r's record if it is still the one Nodes returned as
// r (the same stored bytes): a record its node published again meanwhile
// stays.
func (db *DB) ForgetNode(ctx context.Context, r NodeRecord) error {
	v := r.raw
	if v == nil {
		return fmt.Errorf("meta: forget node %q: not a record Nodes returned", r.Node)
	}
	return db.updateNode(ctx, r.Node, func(old []byte) ([]byte, bool) {
		return nil, bytes.Equal(old, v)
	})
}

// updateNode replaces node's record by what fn makes of the stored one
// (nil if none): a value to store, nil to delete it, and whether to write
// at all. Writes of node records are serialised across the nodes.
func (db *DB) updateNode(ctx context.Context, node string, fn func(old []byte) ([]byte, bool)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	mu := db.keyLock(nodesLockBucket, node)
	mu.Lock()
	defer mu.Unlock()
	tx := db.kv.begin(ctx)
	defer tx.end()
	tx.lockKey(nodesLockBucket, node)
	old, err := tx.get(nodeKey(node), nil)
	switch {
	case errors.Is(err, ErrNotFound):
		old = nil
	case err != nil:
		return fmt.Errorf("meta: read node record: %w", err)
	}
	v, write := fn(old)
	if !write {
		return nil
	}
	b := tx.newBatch()
	defer b.close()
	if v == nil {
		b.delete(nodeKey(node))
	} else {
		b.set(nodeKey(node), v)
	}
	if err := b.commit(true); err != nil {
		return fmt.Errorf("meta: write node record: %w", err)
	}
	return nil
}

// Nodes returns every node record, in node ID order, each with the stored
// bytes it decoded from (for ForgetNode). A record that does not decode
// is an error: the GC that reads them must not go on without what a node
// published (delete such a record by hand: its key is "N" and the ID).
func (db *DB) Nodes(ctx context.Context) ([]NodeRecord, error) {
	it, err := db.kv.newIter([]byte{tableNodes}, []byte{tableNodes + 1})
	if err != nil {
		return nil, fmt.Errorf("meta: list nodes: %w", err)
	}
	var out []NodeRecord
	for ok := it.first(); ok; ok = it.next() {
		if err := ctx.Err(); err != nil {
			return nil, errors.Join(err, it.close())
		}
		v, err := it.value()
		if err != nil {
			return nil, errors.Join(fmt.Errorf("meta: list nodes: %w", err), it.close())
		}
		var r NodeRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return nil, errors.Join(fmt.Errorf("meta: node record %q: %w: %w", it.key()[1:], errCorrupt, err), it.close())
		}
		r.Node, r.raw = string(it.key()[1:]), append([]byte(nil), v...)
		out = append(out, r)
	}
	if err := it.close(); err != nil {
		return nil, fmt.Errorf("meta: list nodes: %w", err)
	}
	return out, nil
}
