package meta

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Pebble tuning for a small-memory server, measured under the mixed
// benchmark (bench/README.md, 2026-11-22; RSS stays under ~100 MiB):
//
//   - One block cache of cacheSize and memtables of memTableSize, at most
//     memTableStopWrites of them queued. Doubling both from 16 and 8 MiB cut
//     server CPU per operation by ~12 % under inline-heavy load (32 KiB
//     objects) for ~16 MiB more RSS; 48 MiB of cache saved another ~13 %
//     but passed the RSS budget.
//   - Bloom filters on every level, so that a point read (every HEAD, GET
//     and overwrite reads a record) skips sstables that cannot hold its key
//     instead of reading their index and data blocks; they matter more with
//     the deeper L0 below.
//   - L0 compacts at 8 sublevels (default 4) and LBase holds up to 256 MiB
//     (default 64): fewer, larger compactions out of L0, so less rewriting
//     of LBase per byte written (~3 % less CPU per operation).
//   - One compaction at a time and Snappy (the default) compression. No
//     compression saved ~6 % of CPU on the benchmark's random payloads but
//     would waste disk on compressible data; MinLZ was no faster here.
//
// Value separation (blob files) is left off: Pebble v2.1 offers it only
// under Options.Experimental. See docs/design/0001-storage-engine.md.
// MinFreeSpace is the free space the engine needs to go on working when
// writes of object data stop: a memtable flush (at most memTableSize), the
// next preallocated WAL and the output of a compaction. A free-space reserve
// (internal/diskspace) should keep at least this much, so that Pebble is
// never what finds the disk full.
const MinFreeSpace = 4 * memTableSize

const (
	cacheSize             = 32 << 20
	memTableSize          = 16 << 20
	memTableStopWrites    = 3
	maxOpenFiles          = 256
	l0CompactionThreshold = 8
	l0StopWrites          = 24
	lBaseMaxBytes         = 256 << 20
	bloomBitsPerKey       = 10
)

// merger sums the merge operands of usage keys (see usage.go) and
// concatenates those of any other key, as pebble.DefaultMerger does.
//
// It keeps DefaultMerger's name, "pebble.concatenate", on purpose. Pebble
// records the merger's name in the OPTIONS file and refuses to open a
// database with a merger of another name, and every database made before
// usage accounting was created with the default merger: a new name would
// lock those out. Keeping the name is honest because a usage value means
// the sum of its records, so concatenating operands and summing them give
// values of the same meaning: an older Coffer opening a newer database
// (which never reads the usage table) concatenates usage operands in its
// compactions, and this merger or decodeUsage sums them later. No other
// key has ever been written with a merge, so for them the concatenation is
// only the inherited contract.
var merger = &pebble.Merger{
	Name: pebble.DefaultMerger.Name,
	Merge: func(key, value []byte) (pebble.ValueMerger, error) {
		if len(key) > 0 && key[0] == tableUsage {
			return pebbleUsageMerger{newUsageMerger(value)}, nil
		}
		return pebble.DefaultMerger.Merge(key, value)
	},
}

// pebbleUsageMerger adapts usageMerger to pebble.ValueMerger.
type pebbleUsageMerger struct{ *usageMerger }

func (m pebbleUsageMerger) Finish(bool) ([]byte, io.Closer, error) { return m.result(), nil, nil }

// pebbleKV adapts a Pebble database to kv.
type pebbleKV struct {
	db   *pebble.DB
	lock *pebble.Lock
}

var _ kv = (*pebbleKV)(nil)

// openPebble opens or creates the database in dir, taking its directory lock
// first so that a second process (or a second Open in this one) fails with a
// clear error instead of Pebble's.
func openPebble(dir string, log *slog.Logger) (*pebbleKV, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("meta: resolve %s: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("meta: create %s: %w", abs, err)
	}
	lock, err := pebble.LockDirectory(abs, vfs.Default)
	if err != nil {
		// Creating the LOCK file fails with a *fs.PathError (permissions,
		// read-only disk); taking the lock fails with a bare errno, or
		// Pebble's in-process check, when someone holds it.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("meta: lock %s: %w", abs, err)
		}
		return nil, fmt.Errorf("meta: database %s is locked by another process: %w", abs, err)
	}
	cache := pebble.NewCache(cacheSize)
	defer cache.Unref() // the DB holds its own reference
	opts := &pebble.Options{
		Cache:                       cache,
		MemTableSize:                memTableSize,
		MemTableStopWritesThreshold: memTableStopWrites,
		MaxOpenFiles:                maxOpenFiles,
		L0CompactionThreshold:       l0CompactionThreshold,
		L0StopWritesThreshold:       l0StopWrites,
		LBaseMaxBytes:               lBaseMaxBytes,
		Lock:                        lock,
		Logger:                      pebbleLogger{log},
		Merger:                      merger,
		FormatMajorVersion:          pebble.FormatNewest,
	}
	for i := range opts.Levels {
		opts.Levels[i].FilterPolicy = bloom.FilterPolicy(bloomBitsPerKey)
		opts.Levels[i].FilterType = pebble.TableFilter
	}
	db, err := pebble.Open(abs, opts)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("meta: open %s: %w", abs, err), lock.Close())
	}
	return &pebbleKV{db: db, lock: lock}, nil
}

func (p *pebbleKV) get(key, dst []byte) ([]byte, error) {
	v, closer, err := p.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return dst[:0], ErrNotFound
	}
	if err != nil {
		return dst[:0], err
	}
	out := append(dst[:0], v...)
	return out, closer.Close()
}

func (p *pebbleKV) newBatch() kvBatch { return &pebbleBatch{b: p.db.NewBatch()} }

func (p *pebbleKV) newIndexedBatch() kvIndexedBatch {
	return &pebbleIndexedBatch{pebbleBatch{b: p.db.NewIndexedBatch()}}
}

func (p *pebbleKV) newIter(lower, upper []byte) (kvIter, error) {
	it, err := p.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, err
	}
	return pebbleIter{it}, nil
}

func (p *pebbleKV) close() error {
	err := p.db.Close()
	return errors.Join(err, p.lock.Close())
}

// pebbleBatch adapts *pebble.Batch. Pebble's Set and Delete report errors only
// for misuse (a committed batch); the first one is kept and returned by commit.
type pebbleBatch struct {
	b   *pebble.Batch
	err error
}

func (b *pebbleBatch) set(key, value []byte) {
	if err := b.b.Set(key, value, nil); err != nil && b.err == nil {
		b.err = err
	}
}

func (b *pebbleBatch) setJoined(key, head, tail []byte) {
	op := b.b.SetDeferred(len(key), len(head)+len(tail))
	copy(op.Key, key)
	copy(op.Value[copy(op.Value, head):], tail)
	if err := op.Finish(); err != nil && b.err == nil {
		b.err = err
	}
}

func (b *pebbleBatch) delete(key []byte) {
	if err := b.b.Delete(key, nil); err != nil && b.err == nil {
		b.err = err
	}
}

func (b *pebbleBatch) merge(key, value []byte) {
	if err := b.b.Merge(key, value, nil); err != nil && b.err == nil {
		b.err = err
	}
}

func (b *pebbleBatch) commit(sync bool) error {
	if b.err != nil {
		return b.err
	}
	opt := pebble.NoSync
	if sync {
		opt = pebble.Sync
	}
	return b.b.Commit(opt)
}

func (b *pebbleBatch) close() { _ = b.b.Close() }

// pebbleIndexedBatch adapts an indexed *pebble.Batch, which reads the
// database with the batch's writes applied.
type pebbleIndexedBatch struct{ pebbleBatch }

func (b *pebbleIndexedBatch) get(key, dst []byte) ([]byte, error) {
	v, closer, err := b.b.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return dst[:0], ErrNotFound
	}
	if err != nil {
		return dst[:0], err
	}
	out := append(dst[:0], v...)
	return out, closer.Close()
}

func (b *pebbleIndexedBatch) newIter(lower, upper []byte) (kvIter, error) {
	it, err := b.b.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, err
	}
	return pebbleIter{it}, nil
}

// pebbleIter adapts *pebble.Iterator.
type pebbleIter struct{ it *pebble.Iterator }

func (i pebbleIter) first() bool            { return i.it.First() }
func (i pebbleIter) seekGE(k []byte) bool   { return i.it.SeekGE(k) }
func (i pebbleIter) seekLT(k []byte) bool   { return i.it.SeekLT(k) }
func (i pebbleIter) next() bool             { return i.it.Next() }
func (i pebbleIter) prev() bool             { return i.it.Prev() }
func (i pebbleIter) key() []byte            { return i.it.Key() }
func (i pebbleIter) value() ([]byte, error) { return i.it.ValueAndErr() }
func (i pebbleIter) close() error           { return i.it.Close() }

// pebbleLogger routes Pebble's log lines to slog: its routine chatter
// (compactions, WAL recycling) at Debug, errors at Error. Fatalf is for
// states Pebble cannot continue from (corruption): it logs and panics.
type pebbleLogger struct{ log *slog.Logger }

func (l pebbleLogger) Infof(format string, args ...any) {
	if l.log.Enabled(context.Background(), slog.LevelDebug) {
		l.log.Debug("pebble", "msg", fmt.Sprintf(format, args...))
	}
}

func (l pebbleLogger) Errorf(format string, args ...any) {
	l.log.Error("pebble error", "msg", fmt.Sprintf(format, args...))
}

func (l pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.log.Error("pebble fatal", "msg", msg)
	panic("meta: pebble: " + msg)
}
