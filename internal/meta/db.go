// Package meta is Coffer's metadata index: buckets, object records and
// multipart state in an ordered key-value store (Pebble), with an
// order-preserving key encoding so that listing is a range scan.
//
// Every write that must be atomic with a read — replacing an object only if
// it is still the version a precondition was checked against, committing a
// part only while its upload exists, deleting a bucket only while it is
// empty — is one method here that holds a striped lock around "read, decide,
// write batch". The caller's decision runs as a callback under that lock, so
// objects never needs locks of its own and a second engine (PostgreSQL) can
// implement the same methods as transactions.
//
// Blocks of records that are replaced or deleted are never removed here:
// the same batch moves them to the garbage queue, which the object service's
// GC drains. The same batch also adds the change to the bucket's usage
// (objects, bytes, uploads in progress and their part bytes; usage.go), so
// usage is exactly as durable as the records it counts.
package meta

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// ErrNotFound is returned when a record does not exist.
var ErrNotFound = errors.New("meta: not found")

// ErrConflict is returned when a conditional write finds a different state:
// creating a bucket that exists.
var ErrConflict = errors.New("meta: conflict")

// ErrNoBucket is returned by writes into a bucket that does not exist.
var ErrNoBucket = errors.New("meta: no such bucket")

// ErrBucketNotEmpty is returned by DeleteBucket for a bucket that holds
// objects or multipart uploads.
var ErrBucketNotEmpty = errors.New("meta: bucket not empty")

// Engines Config.Kind names.
const (
	EnginePebble   = "pebble"   // embedded, in Config.Dir (the default)
	EnginePostgres = "postgres" // shared by every node, at Config.Postgres.URL
)

// Config configures the metadata store.
type Config struct {
	// Kind is the engine: EnginePebble (or "") or EnginePostgres.
	Kind string
	Dir  string // directory of the Pebble database
	Sync bool   // make every commit durable (group-committed); default true via config
	// Postgres configures the PostgreSQL engine.
	Postgres PostgresConfig
	// Logger receives Pebble's messages (routine ones at Debug) and the
	// report of a failure (see DB.Err). Nil discards them.
	Logger *slog.Logger `toml:"-"`
	// FailWrite, if not nil, is called before every creation (or opening
	// for writing), write and sync of a file of the database with the
	// file's path; an error it returns fails that call as a failing disk
	// would, without touching the file. It lets tests drive the whole server into the failed
	// state (DB.Err) through the engine's real error paths. Production
	// leaves it nil.
	FailWrite func(path string) error `toml:"-"`
}

// Lock striping. Bucket stripes are read-locked by every write into a
// bucket and write-locked by CreateBucket and DeleteBucket; key stripes
// serialise read-modify-write cycles on one object key (and its uploads).
const (
	bucketStripes = 64
	keyStripes    = 1024
)

// DB is the metadata store. It is safe for concurrent use.
type DB struct {
	kv     kv
	sync   bool
	seed   maphash.Seed
	bufs   sync.Pool // *[]byte encoding buffers
	closed atomic.Bool
	// onGarbage, if set, is called after each commit that queued garbage.
	onGarbage atomic.Pointer[func()]
	fail      *failure // shared with the engine adapter, which sets it
	// storeID is the store's ID, read (or made) by Open: see StoreID.
	storeID string
	// storeIDNew says that this Open made the ID: see StoreIDNew.
	storeIDNew bool
	// own holds the garbage entries this process's commits queued, on a
	// shared store only (nil with Pebble): see QueuedHere.
	own *ownGarbage

	bucketMu [bucketStripes]sync.RWMutex
	keyMu    [keyStripes]sync.Mutex
	// repairSem holds a token while a usage repair runs in this process
	// (usageRepairLease).
	repairSem chan struct{}
	// repairMu is held by the merge of a usage repair on Pebble, whose
	// transactions take no locks (kvTx.lockRepair is PostgreSQL's): it
	// is what keeps two merges apart; one lock for every bucket is
	// enough, as a merge is one short transaction.
	repairMu sync.Mutex
}

// Open opens or creates the database: in cfg.Dir with Pebble, where it
// fails if another process (or another DB in this process) has the
// database open; or in PostgreSQL, whose schema it creates or upgrades
// first (postgres_schema.go). A
// database written before usage accounting has its usage counted from its
// records here, once (a scan of every object record); one without a store
// ID gets one (see StoreID).
func Open(cfg Config) (*DB, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	fail := newFailure(log)
	var e kv
	switch cfg.Kind {
	case "", EnginePebble:
		if cfg.Dir == "" {
			return nil, errors.New("meta: no directory configured")
		}
		p, err := openPebble(cfg.Dir, log, fail, cfg.FailWrite)
		if err != nil {
			return nil, err
		}
		e = p
	case EnginePostgres:
		p, err := openPostgres(context.Background(), cfg.Postgres, log)
		if err != nil {
			return nil, err
		}
		e = p
	default:
		return nil, fmt.Errorf("meta: unknown engine %q", cfg.Kind)
	}
	db := &DB{kv: e, sync: cfg.Sync, seed: maphash.MakeSeed(), fail: fail, repairSem: make(chan struct{}, 1)}
	if _, shared := e.(*pgKV); shared {
		db.own = &ownGarbage{m: make(map[string]time.Time)}
	}
	if err := db.migrate(context.Background(), log); err != nil {
		return nil, errors.Join(err, db.Close())
	}
	if err := db.loadStoreID(context.Background()); err != nil {
		return nil, errors.Join(err, db.Close())
	}
	return db, nil
}

// Close closes the database; it waits at most about ten seconds for the
// engine (a write stuck on a hung disk would hold it forever) and then
// returns an error, leaving the engine open. Closing a closed DB does
// nothing.
//
// Close of a failed DB (see Err) releases nothing and returns nil: the
// engine cannot be closed safely, and what was acknowledged is in its log.
// The process should exit.
func (db *DB) Close() error {
	if !db.closed.CompareAndSwap(false, true) {
		return nil
	}
	if db.fail.get() != nil {
		return nil
	}
	return db.kv.close()
}

func (db *DB) bucketLock(bucket string) *sync.RWMutex {
	return &db.bucketMu[maphash.String(db.seed, bucket)%bucketStripes]
}

func (db *DB) keyStripe(bucket, key string) int {
	var h maphash.Hash
	h.SetSeed(db.seed)
	h.WriteString(bucket)
	h.WriteByte(0)
	h.WriteString(key)
	return int(h.Sum64() % keyStripes)
}

func (db *DB) keyLock(bucket, key string) *sync.Mutex {
	return &db.keyMu[db.keyStripe(bucket, key)]
}

// maxPooledBuf bounds the encoding buffers kept for reuse.
const maxPooledBuf = 1 << 20

func (db *DB) getBuf() *[]byte {
	if b, ok := db.bufs.Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, 0, 512)
	return &b
}

func (db *DB) putBuf(b *[]byte) {
	if cap(*b) > maxPooledBuf {
		return
	}
	*b = (*b)[:0]
	db.bufs.Put(b)
}

// writer accumulates one atomic batch, encoding records into pooled buffers.
// Every change of an object or upload record also counts its change of
// the bucket's usage (see usage.go), which commit merges into the batch.
type writer struct {
	db  *DB
	b   kvBatch
	r   kvReader // reads the store; through b if the batch is indexed
	buf *[]byte
	now time.Time

	usage    []usageDelta  // pending usage changes, by bucket
	usageBuf [1]usageDelta // usage's first backing array: most batches touch one bucket
	queued   bool          // the batch queues garbage
	// ownGarbage are the entries the batch queues, recorded in db.own
	// after the commit; only on a shared store (db.own != nil).
	ownGarbage []Garbage
}

func (db *DB) newWriter(tx kvTx, now time.Time) *writer {
	w := &writer{db: db, b: tx.newBatch(), r: tx, buf: db.getBuf(), now: now}
	w.usage = w.usageBuf[:0]
	return w
}

// newIndexedWriter returns a writer whose reads (w.r) see its own writes.
// Versioned writes use one: they move records between tables and decide
// from what the batch already holds.
func (db *DB) newIndexedWriter(tx kvTx, now time.Time) *writer {
	b := tx.newIndexedBatch()
	w := &writer{db: db, b: b, r: b, buf: db.getBuf(), now: now}
	w.usage = w.usageBuf[:0]
	return w
}

func (w *writer) close() {
	w.b.close()
	w.db.putBuf(w.buf)
}

func (w *writer) commit() error {
	w.flushUsage()
	if err := w.b.commit(w.db.sync); err != nil {
		return err
	}
	if w.queued {
		if w.db.own != nil {
			w.db.own.add(w.ownGarbage)
		}
		if f := w.db.onGarbage.Load(); f != nil {
			(*f)()
		}
	}
	return nil
}

// putObject stores nw as bucket/key in place of old (nil if absent): the
// record under the object key and nw.Inline under the data key, which a
// replacing inline write simply overwrites. If nw has no inline data, old's
// is deleted. The bucket's usage changes by nw's less old's.
func (w *writer) putObject(bucket, key string, old, nw *Object) {
	w.count(bucket, objectUsage(nw).sub(objectUsage(old)))
	k := objectKey((*w.buf)[:0], bucket, key)
	v := appendObject(k, nw)
	w.b.set(v[:len(k)], v[len(k):])
	dk := dataKey(v[:0], bucket, key)
	switch {
	case len(nw.Inline) > 0:
		v = appendDataHeader(dk, nw.VersionID)
		w.b.setJoined(v[:len(dk)], v[len(dk):], nw.Inline)
	case hasData(old):
		v = dk
		w.b.delete(dk)
	}
	*w.buf = v
}

// deleteObject deletes bucket/key, whose current record is old.
func (w *writer) deleteObject(bucket, key string, old *Object) {
	w.count(bucket, Usage{}.sub(objectUsage(old)))
	k := objectKey((*w.buf)[:0], bucket, key)
	w.b.delete(k)
	if hasData(old) {
		k = dataKey(k[:0], bucket, key)
		w.b.delete(k)
	}
	*w.buf = k
}

// hasData reports whether o (nil if absent) may have inline data under its
// data key: it has bytes and no blocks. (A version 1 record kept its data
// inside; deleting its absent data key is harmless.)
func hasData(o *Object) bool { return o != nil && len(o.Blocks) == 0 && o.Size > 0 }

// garbage queues blocks for deletion, except those kept (still referenced
// by the record being written).
func (w *writer) garbage(versionID string, blocks []Block, keep map[string]bool) {
	for _, bl := range blocks {
		if keep[bl.Key] {
			continue
		}
		g := Garbage{VersionID: versionID, Size: bl.Size}
		w.b.set(garbageKey(w.now, bl.Key), appendGarbage((*w.buf)[:0], &g))
		w.queued = true
		if w.db.own != nil {
			w.ownGarbage = append(w.ownGarbage, Garbage{Time: w.now, BlobKey: bl.Key})
		}
	}
}

// blockSet returns the set of block keys of o, or nil.
func blockSet(o *Object) map[string]bool {
	if o == nil || len(o.Blocks) == 0 {
		return nil
	}
	m := make(map[string]bool, len(o.Blocks))
	for _, b := range o.Blocks {
		m[b.Key] = true
	}
	return m
}

// checkBucket returns ErrNoBucket if bucket does not exist, read through
// r. The caller holds the bucket's stripe.
func (db *DB) checkBucket(r kvReader, bucket string) error {
	_, err := db.bucketVersioning(r, bucket)
	return err
}

// bucketVersioning returns bucket's versioning state, or ErrNoBucket. The
// caller holds the bucket's stripe, so the state holds until it lets go:
// SetVersioning takes the stripe exclusively.
func (db *DB) bucketVersioning(r kvReader, bucket string) (Versioning, error) {
	bp := db.getBuf()
	defer db.putBuf(bp)
	v, err := r.get(bucketKey(bucket), *bp)
	*bp = v
	if errors.Is(err, ErrNotFound) {
		return 0, ErrNoBucket
	}
	if err != nil {
		return 0, fmt.Errorf("meta: read bucket %s: %w", bucket, err)
	}
	b, err := decodeBucket(bucket, v)
	if err != nil {
		return 0, fmt.Errorf("meta: bucket %s: %w", bucket, err)
	}
	return b.Versioning, nil
}
