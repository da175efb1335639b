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
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Pebble tuning for a small-memory server, measured under the mixed
// benchmark (bench/README.md, 2026-11-22; RSS stays under ~100 MiB):
//
//   - One block cache of cacheSize and memtables of memTableSize, at most
//     memTableStopWrites of them queued. Pebble reserves each memtable's
//     size in the block cache, so cache and memtables together stay near
//     cacheSize. Doubling both from 16 and 8 MiB cut server CPU per
//     operation by ~12 % under inline-heavy load (32 KiB objects) for
//     ~16 MiB more RSS; 48 MiB of cache saved another ~13 % but passed the
//     RSS budget. The static build's cache and memtables are smaller
//     (heap_nocgo.go).
//   - Bloom filters on every level, so that a point read (every HEAD, GET
//     and overwrite reads a record) skips sstables that cannot hold its key
//     instead of reading their index and data blocks; they matter more with
//     the deeper L0 below.
//   - L0 compacts at 8 sublevels (default 4) and LBase holds up to 256 MiB
//     (default 64): fewer, larger compactions out of L0, so less rewriting
//     of LBase per byte written (~3 % less CPU per operation). The static
//     build, whose memtables are a quarter of the size, compacts L0 at 32
//     sublevels, so that an L0 compaction still takes ~128 MiB.
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
// never what finds the disk full. It is four memtables of the cgo build's
// 16 MiB in either build: the static build's smaller memtables shrink the
// flush and the WAL, not a compaction's output.
const MinFreeSpace = 64 << 20

const (
	memTableStopWrites = 3
	maxOpenFiles       = 256
	lBaseMaxBytes      = 256 << 20
	bloomBitsPerKey    = 10
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

// closeTimeout bounds how long close waits for Pebble. Pebble's Close waits
// for the commit pipeline and for running flushes and compactions; a write
// stuck on a hung disk would hold it forever, and a stopping server must
// stop.
const closeTimeout = 10 * time.Second

// pebbleKV adapts a Pebble database to kv.
//
// Every method that calls into Pebble defers fail.recoverInto: Pebble
// panics when it meets a state it cannot continue from (its commit
// pipeline panics on a WAL write error, and pebbleLogger.Fatalf panics),
// often with its own locks held. The adapter turns such a panic into the
// store's failure (see DB.Err) and returns it as the call's error, so the
// request that met it gets an error and no caller's recover can swallow
// the panic and carry on; and every later commit checks the failure
// before it enters Pebble, so none queues up behind the locks the panic
// left held.
type pebbleKV struct {
	db           *pebble.DB
	lock         *pebble.Lock
	fail         *failure
	closeTimeout time.Duration
}

var (
	_ kv   = (*pebbleKV)(nil)
	_ kvTx = (*pebbleKV)(nil)
)

// openPebble opens or creates the database in dir, taking its directory lock
// first so that a second process (or a second Open in this one) fails with a
// clear error instead of Pebble's. Pebble's files are written through a
// failFS, which records the first write or sync error in fail (failWrite,
// if not nil, injects errors: Config.FailWrite).
func openPebble(dir string, log *slog.Logger, fail *failure, failWrite func(string) error) (*pebbleKV, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("meta: resolve %s: %w", dir, err)
	}
	if err := os.MkdirAll(abs, dirPerm); err != nil {
		return nil, fmt.Errorf("meta: create %s: %w", abs, err)
	}
	fsys := &failFS{FS: vfs.Default, fail: fail, inject: failWrite}
	lock, err := pebble.LockDirectory(abs, fsys)
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
	makePrivate(abs, log)
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
		Logger:                      pebbleLogger{log: log, fail: fail},
		Merger:                      merger,
		FormatMajorVersion:          pebble.FormatNewest,
		FS:                          fsys,
	}
	for i := range opts.Levels {
		opts.Levels[i].FilterPolicy = bloom.FilterPolicy(bloomBitsPerKey)
		opts.Levels[i].FilterType = pebble.TableFilter
	}
	db, err := openGuarded(abs, opts, fail)
	if err != nil {
		err = fmt.Errorf("meta: open %s: %w", abs, err)
		if fail.get() != nil {
			return nil, err // Pebble may still run: it keeps the lock
		}
		return nil, errors.Join(err, lock.Close())
	}
	return &pebbleKV{db: db, lock: lock, fail: fail, closeTimeout: closeTimeout}, nil
}

// makePrivate takes group's and others' permissions away from the
// database directory dir and everything in it (the LOCK file included),
// which a store made before Coffer kept them private, or a directory made
// by hand, may have: its files hold the IAM state (console password
// hashes, sealed secrets), bucket policies and inline object data. It
// logs what it changed as a warning, since whoever could read them may
// have; an entry it cannot change (another user's) is logged too, and
// does not stop the store from opening. Symbolic links are not followed.
func makePrivate(dir string, log *slog.Logger) {
	var changed int
	var failed []string
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			failed = append(failed, path)
			return nil // go on with the rest; a directory not read is skipped
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil // removed meanwhile
		}
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			if err := os.Chmod(path, perm&^0o077); err != nil {
				failed = append(failed, path)
				return nil
			}
			changed++
		}
		return nil
	})
	if changed > 0 {
		log.Warn("metadata was open to group or others: made it private to its owner; whoever could read it may hold console password hashes and inline object data",
			"dir", dir, "entries", changed)
	}
	if len(failed) > 0 {
		log.Warn("cannot make metadata private to its owner: make the directory mode 700 and its files mode 600",
			"dir", dir, "entries", len(failed), "first", failed[0])
	}
}

// openGuarded is pebble.Open, with a panic turned into the failure, that
// gives up as soon as the store fails. Pebble's Open flushes the log it
// replays and waits for the flush; on a full disk the flush fails, and
// Pebble retries it forever (failFS parks the retry), so without this a
// server with a full disk would hang at start instead of saying why. The
// goroutine that runs Open is left behind then, on purpose: the process
// cannot go on without its metadata, and exits.
func openGuarded(dir string, opts *pebble.Options, fail *failure) (*pebble.DB, error) {
	type result struct {
		db  *pebble.DB
		err error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		defer func() { done <- r }()
		defer fail.recoverInto(&r.err)
		r.db, r.err = pebble.Open(dir, opts)
	}()
	select {
	case r := <-done:
		if r.err != nil && fail.get() != nil {
			return nil, fail.get() // what Pebble met first, and the state
		}
		return r.db, r.err
	case <-fail.done:
		return nil, fail.get()
	}
}

func (p *pebbleKV) get(key, dst []byte) ([]byte, error) { return pebbleGet(p.db, p.fail, key, dst) }

// pebbleGet and pebbleNewIter read any of Pebble's readers (the database,
// an indexed batch, a snapshot) for the adapters' get and newIter.
func pebbleGet(r pebble.Reader, fail *failure, key, dst []byte) (_ []byte, err error) {
	defer fail.recoverInto(&err)
	v, closer, err := r.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return dst[:0], ErrNotFound
	}
	if err != nil {
		return dst[:0], err
	}
	out := append(dst[:0], v...)
	return out, closer.Close()
}

func pebbleNewIter(r pebble.Reader, fail *failure, lower, upper []byte) (_ kvIter, err error) {
	defer fail.recoverInto(&err)
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, err
	}
	return &pebbleIter{it: it, fail: fail}, nil
}

// begin returns p itself: the in-process locks DB takes are exact for an
// embedded store, so a transaction is just the store, and costs nothing.
func (p *pebbleKV) begin(context.Context) kvTx { return p }

func (p *pebbleKV) lockBucket(string, bool)   {}
func (p *pebbleKV) lockKey(string, string)    {}
func (p *pebbleKV) lockKeys(string, []string) {}
func (p *pebbleKV) lockRepair(string)         {}
func (p *pebbleKV) end()                      {}

func (p *pebbleKV) newBatch() kvBatch { return &pebbleBatch{b: p.db.NewBatch(), fail: p.fail} }

func (p *pebbleKV) newIndexedBatch() kvIndexedBatch {
	return &pebbleIndexedBatch{pebbleBatch{b: p.db.NewIndexedBatch(), fail: p.fail}}
}

func (p *pebbleKV) newIter(lower, upper []byte) (kvIter, error) {
	return pebbleNewIter(p.db, p.fail, lower, upper)
}

func (p *pebbleKV) snapshot() (_ kvSnapshot, err error) {
	if err := p.fail.get(); err != nil {
		return nil, err
	}
	defer p.fail.recoverInto(&err)
	return &pebbleSnapshot{s: p.db.NewSnapshot(), fail: p.fail}, nil
}

// pebbleSnapshot adapts *pebble.Snapshot, which reads the database as of
// its creation.
type pebbleSnapshot struct {
	s    *pebble.Snapshot
	fail *failure
}

func (s *pebbleSnapshot) get(key, dst []byte) ([]byte, error) {
	return pebbleGet(s.s, s.fail, key, dst)
}

func (s *pebbleSnapshot) newIter(lower, upper []byte) (kvIter, error) {
	return pebbleNewIter(s.s, s.fail, lower, upper)
}

func (s *pebbleSnapshot) close() (err error) {
	defer s.fail.recoverInto(&err)
	return s.s.Close()
}

// close closes Pebble, waiting at most p.closeTimeout. If Pebble has not
// closed by then, close returns an error and leaves the goroutine that
// waits for it behind, on purpose: the process is about to exit, and
// Pebble's log holds every acknowledged write.
func (p *pebbleKV) close() error {
	done := make(chan error, 1)
	go func() {
		var err error
		defer func() { done <- err }()
		defer p.fail.recoverInto(&err)
		err = p.db.Close()
	}()
	select {
	case err := <-done:
		return errors.Join(err, p.lock.Close())
	case <-p.fail.done:
		// The store failed while closing (a flush could not create its
		// table): the goroutine that met it is parked (failFS.openFailed)
		// and Pebble would wait for it for ever. Left open, as a store
		// that failed earlier is (DB.Close).
		return p.fail.get()
	case <-time.After(p.closeTimeout):
		return fmt.Errorf("meta: close: the engine did not close within %v (a write stuck on the disk?); "+
			"it is left open, and its log holds every acknowledged write", p.closeTimeout)
	}
}

// pebbleBatch adapts *pebble.Batch. Pebble's Set and Delete report errors only
// for misuse (a committed batch); the first one is kept and returned by commit.
type pebbleBatch struct {
	b    *pebble.Batch
	err  error
	fail *failure
	// abandoned, once commit gave up on a commit still running in Pebble
	// (the store failed meanwhile), yields that commit's result; the
	// batch is closed only after it.
	abandoned <-chan error
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

// commit fails at once, without entering Pebble, once the store has
// failed: a commit pipeline that panicked may hold its locks forever. A
// commit that is in Pebble when the store fails is given up on: one that
// waits for room in the memtables behind a flush that failed (the disk is
// full) would never return, and its request would never be answered. So
// Pebble's Commit runs on a goroutine of its own, and this call returns
// the failure at most abandonAfter after the store fails; the commit may
// still complete (a write answered 503 may have happened, as after any
// 503), and the batch is closed once it does. The goroutine costs about a microsecond
// per commit, against the millisecond of a synced one.
func (b *pebbleBatch) commit(sync bool) error {
	if b.err != nil {
		return b.err
	}
	if err := b.fail.get(); err != nil {
		return err
	}
	opt := pebble.NoSync
	if sync {
		opt = pebble.Sync
	}
	done := make(chan error, 1)
	go func() {
		var err error
		defer func() { done <- err }()
		defer b.fail.recoverInto(&err)
		err = b.b.Commit(opt)
	}()
	select {
	case err := <-done:
		return err
	case <-b.fail.done:
	}
	// A commit that met the failure itself (its log write failed) ends
	// within microseconds, with Pebble's own error and log line; give it
	// that long, and give up on one that waits for something else.
	t := time.NewTimer(abandonAfter)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		b.abandoned = done
		return b.fail.get()
	}
}

// abandonAfter is how long a commit in Pebble when the store fails may
// still take before commit gives up on it.
const abandonAfter = 200 * time.Millisecond

func (b *pebbleBatch) close() {
	if b.abandoned != nil {
		go func() {
			<-b.abandoned
			_ = b.b.Close()
		}()
		return
	}
	_ = b.b.Close()
}

// pebbleIndexedBatch adapts an indexed *pebble.Batch, which reads the
// database with the batch's writes applied.
type pebbleIndexedBatch struct{ pebbleBatch }

func (b *pebbleIndexedBatch) get(key, dst []byte) ([]byte, error) {
	return pebbleGet(b.b, b.fail, key, dst)
}

func (b *pebbleIndexedBatch) newIter(lower, upper []byte) (kvIter, error) {
	return pebbleNewIter(b.b, b.fail, lower, upper)
}

// pebbleIter adapts *pebble.Iterator. A panic in a step ends the iteration
// (the step reports no key) and is reported by value and close.
type pebbleIter struct {
	it   *pebble.Iterator
	fail *failure
	err  error // the failure a step's panic recorded
}

// The positioning calls report no key once a call has panicked: Pebble's
// iterator is left as the panic left it.

func (i *pebbleIter) first() (ok bool) {
	if i.err != nil {
		return false
	}
	defer i.recover()
	return i.it.First()
}

func (i *pebbleIter) next() (ok bool) {
	if i.err != nil {
		return false
	}
	defer i.recover()
	return i.it.Next()
}

func (i *pebbleIter) prev() (ok bool) {
	if i.err != nil {
		return false
	}
	defer i.recover()
	return i.it.Prev()
}

func (i *pebbleIter) seekGE(k []byte) (ok bool) {
	if i.err != nil {
		return false
	}
	defer i.recover()
	return i.it.SeekGE(k)
}

func (i *pebbleIter) seekLT(k []byte) (ok bool) {
	if i.err != nil {
		return false
	}
	defer i.recover()
	return i.it.SeekLT(k)
}

func (i *pebbleIter) key() []byte { return i.it.Key() }

func (i *pebbleIter) value() (v []byte, err error) {
	if i.err != nil {
		return nil, i.err
	}
	defer i.fail.recoverInto(&err)
	return i.it.ValueAndErr()
}

func (i *pebbleIter) close() (err error) {
	if i.err != nil {
		return i.err // Pebble's iterator is left as the panic left it
	}
	defer i.fail.recoverInto(&err)
	return i.it.Close()
}

// recover is deferred by the positioning calls: it records a panic in
// i.err.
func (i *pebbleIter) recover() {
	if r := recover(); r != nil {
		i.err = i.fail.fromPanic(r)
	}
}

// pebbleLogger routes Pebble's log lines to slog: its routine chatter
// (compactions, WAL recycling) at Debug, errors at Error (at Debug once the
// store has failed: Pebble then retries in vain what failed, and the
// failure was logged once). Fatalf is for states Pebble cannot continue
// from; see its comment.
type pebbleLogger struct {
	log  *slog.Logger
	fail *failure
}

func (l pebbleLogger) Infof(format string, args ...any) {
	if l.log.Enabled(context.Background(), slog.LevelDebug) {
		l.log.Debug("pebble", "msg", fmt.Sprintf(format, args...))
	}
}

func (l pebbleLogger) Errorf(format string, args ...any) {
	if l.fail.get() != nil {
		l.Infof(format, args...)
		return
	}
	l.log.Error("pebble error", "msg", fmt.Sprintf(format, args...))
}

// Fatalf is called by Pebble when it cannot continue: a commit whose log
// write failed, a manifest write that failed, corruption, a broken
// invariant. Pebble requires that it not return. It records the store's
// failure first (so the server learns of it whatever happens next), then:
//
//   - on a goroutine inside an adapter call (a request's commit or read,
//     or Open), it panics with a *fatalPanic, which that call's deferred
//     recoverInto turns into the call's error;
//   - on one of Pebble's own goroutines (a flush, a compaction), no
//     recover of ours can be reached, and a panic would crash the process
//     at once, without draining requests or saying why in the server's
//     terms. It blocks that goroutine forever instead: Pebble does nothing
//     more on it (as if the process had exited), writes are already
//     refused, and the server stops the process (DB.Failed).
func (l pebbleLogger) Fatalf(format string, args ...any) {
	err := fatalError(format, args)
	fe := l.fail.set(err)
	if fe.Err != err { // a failure was recorded before, and logged then
		l.log.Debug("pebble fatal error", "msg", err.Error())
	}
	if inAdapterCall() {
		panic(&fatalPanic{err: fe})
	}
	l.log.Error("pebble stopped on a fatal error in one of its goroutines; it stays parked until the process exits",
		"msg", fmt.Sprintf(format, args...))
	select {}
}

// UnflushedBytes returns the bytes of the engine's memtables: data
// acknowledged but not yet in its tables, which a flush will write to the
// disk at once (up to memTableStopWrites memtables when flushes lag, as
// on a busy machine). A free-space reserve counts them (diskspace's
// Config.Pending): a statfs does not see them, and a small metadata
// volume filled by a flush of memtables the reserve let pile up.
// 0 on PostgreSQL, and once the store has failed or closed.
func (db *DB) UnflushedBytes() int64 {
	p, ok := db.kv.(*pebbleKV)
	if !ok || db.closed.Load() || db.Err() != nil {
		return 0
	}
	return int64(p.db.Metrics().MemTable.Size)
}

// HeapCacheBytes returns the bytes of the live Go heap that the engine
// holds in caches of bounded size: Pebble's block cache and memtables in a
// build without cgo; 0 with cgo (Pebble's memory is then outside the Go
// heap) and on PostgreSQL, and once the store has failed or closed (a
// failed Pebble may hold the locks its metrics take). The server's garbage
// collector pacing (memlimit.Pace) leaves them out of the heap growth it
// allows.
func (db *DB) HeapCacheBytes() int64 {
	p, ok := db.kv.(*pebbleKV)
	if !ok || !cachesOnGoHeap || db.closed.Load() || db.Err() != nil {
		return 0
	}
	m := p.db.Metrics()
	// Zombie memtables (flushed, still read by an iterator, or kept for
	// reuse) hold their arenas too; and a memtable Pebble has freed stays
	// on the heap until nothing references its arena, which was seen to
	// take a while after a flush: one more memtable's worth is counted
	// while any is allocated (Pace caps the figure at the live heap).
	n := m.BlockCache.Size + int64(m.MemTable.Size+m.MemTable.ZombieSize)
	if m.MemTable.Size > 0 {
		n += memTableSize
	}
	return n
}
