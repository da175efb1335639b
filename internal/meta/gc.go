package meta

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// OnGarbage makes the store call f after every commit that queues
// garbage (blocks an object, version, part or upload no longer references),
// so that they can be freed promptly. f runs on the committing goroutine:
// it must not block. A nil f stops the calls.
func (db *DB) OnGarbage(f func()) {
	if f == nil {
		db.onGarbage.Store(nil)
		return
	}
	db.onGarbage.Store(&f)
}

// Garbage returns up to limit entries of the garbage queue that became
// garbage before the given time, oldest first, starting after the entry
// after (nil to start at the beginning).
func (db *DB) Garbage(ctx context.Context, before time.Time, after *Garbage, limit int) ([]Garbage, error) {
	lower := []byte{tableGarbage}
	start := lower
	if after != nil {
		start = append(garbageKey(after.Time, after.BlobKey), 0)
	}
	it, err := db.kv.newIter(lower, garbageBound(before))
	if err != nil {
		return nil, fmt.Errorf("meta: read garbage queue: %w", err)
	}
	var out []Garbage
	for ok := it.seekGE(start); ok && len(out) < limit; ok = it.next() {
		if err := ctx.Err(); err != nil {
			return nil, errors.Join(err, it.close())
		}
		g, err := decodeGarbageEntry(it)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("meta: garbage entry %q: %w", it.key(), err), it.close())
		}
		out = append(out, g)
	}
	if err := it.close(); err != nil {
		return nil, fmt.Errorf("meta: read garbage queue: %w", err)
	}
	return out, nil
}

func decodeGarbageEntry(it kvIter) (Garbage, error) {
	t, blobKey, err := decodeGarbageKey(it.key())
	if err != nil {
		return Garbage{}, err
	}
	v, err := it.value()
	if err != nil {
		return Garbage{}, err
	}
	return decodeGarbage(t, blobKey, v)
}

// DeleteGarbage removes entries from the garbage queue, after their blobs
// were deleted. The commit is not synced: an entry that reappears after a
// crash names a blob already gone, and deleting it again is harmless.
func (db *DB) DeleteGarbage(ctx context.Context, gs []Garbage) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(gs) == 0 {
		return nil
	}
	b := db.kv.newBatch()
	defer b.close()
	for i := range gs {
		b.delete(garbageKey(gs[i].Time, gs[i].BlobKey))
	}
	if err := b.commit(false); err != nil {
		return fmt.Errorf("meta: delete %d garbage entries: %w", len(gs), err)
	}
	if db.own != nil {
		db.own.remove(gs)
	}
	return nil
}

// QueuedHere reports whether g was queued by a commit of this process. On
// a store shared by several nodes, prompt freeing (objects' freeLoop)
// frees only such entries: what another node queued is that node's to
// free, or the GC pass's once its grace has passed. With an embedded
// store every entry is this process's.
func (db *DB) QueuedHere(g Garbage) bool {
	return db.own == nil || db.own.has(g)
}

// ForgetQueued forgets the entries this process queued before t, which
// QueuedHere then no longer reports: the GC pass, on whichever node holds
// the lease, frees those older than its grace.
func (db *DB) ForgetQueued(t time.Time) {
	if db.own != nil {
		db.own.forget(t)
	}
}

// ownGarbage is a set of garbage entries, by blob key.
type ownGarbage struct {
	mu sync.Mutex // guards m
	m  map[string]time.Time
}

func (o *ownGarbage) add(gs []Garbage) {
	o.mu.Lock()
	for _, g := range gs {
		o.m[g.BlobKey] = g.Time
	}
	o.mu.Unlock()
}

func (o *ownGarbage) has(g Garbage) bool {
	o.mu.Lock()
	_, ok := o.m[g.BlobKey] // a blob key is queued once: it is never reused
	o.mu.Unlock()
	return ok
}

func (o *ownGarbage) remove(gs []Garbage) {
	o.mu.Lock()
	for _, g := range gs {
		delete(o.m, g.BlobKey)
	}
	o.mu.Unlock()
}

func (o *ownGarbage) forget(before time.Time) {
	o.mu.Lock()
	for k, t := range o.m {
		if t.Before(before) {
			delete(o.m, k)
		}
	}
	o.mu.Unlock()
}

// ReferencedBlocks calls fn with the key of every blob that an object
// record (current or noncurrent), a part record or a garbage entry
// references. It reads one
// consistent snapshot taken when it starts, so a blob that moves between
// records while it runs (a part becoming an object's block, an object's
// block becoming garbage) is seen exactly where the snapshot has it. Records
// are decoded without their inline data.
func (db *DB) ReferencedBlocks(ctx context.Context, fn func(key string) error) error {
	// g, h, o and p are the only tables that reference blobs, and they
	// sort together: one iterator over ['g', 'q') is one snapshot of all.
	it, err := db.kv.newIter([]byte{tableGarbage}, []byte{tablePart + 1})
	if err != nil {
		return fmt.Errorf("meta: scan references: %w", err)
	}
	steps := 0
	for ok := it.first(); ok; ok = it.next() {
		if steps++; steps%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return errors.Join(err, it.close())
			}
		}
		if err := referencedBy(it, fn); err != nil {
			return errors.Join(fmt.Errorf("meta: scan references at %q: %w", it.key(), err), it.close())
		}
	}
	if err := it.close(); err != nil {
		return fmt.Errorf("meta: scan references: %w", err)
	}
	return nil
}

// referencedBy calls fn for each blob the record under it references.
func referencedBy(it kvIter, fn func(string) error) error {
	var blocks []Block
	switch it.key()[0] {
	case tableGarbage:
		_, blobKey, err := decodeGarbageKey(it.key())
		if err != nil {
			return err
		}
		return fn(blobKey)
	case tableObject, tableHistory:
		v, err := it.value()
		if err != nil {
			return err
		}
		o, err := decodeObject(v, objectLayout)
		if err != nil {
			return err
		}
		blocks = o.Blocks
	case tablePart:
		p, err := decodePartEntry(it)
		if err != nil {
			return err
		}
		blocks = p.Blocks
	default:
		return nil
	}
	for _, b := range blocks {
		if err := fn(b.Key); err != nil {
			return err
		}
	}
	return nil
}
