package meta

import "context"

// kv is the ordered key-value engine under DB. It is deliberately small so
// that an engine is one adapter (pebble.go; postgres.go and its helpers)
// without touching the typed layer above it.
//
// Implementations must be safe for concurrent use. Keys and values passed in
// are not retained after the call returns.
type kv interface {
	kvReader

	// begin starts a transaction: the read-decide-write of one DB method.
	// The method takes its in-process locks first, then the same locks in
	// the transaction (lockBucket, lockKey), reads through it and commits
	// one of its batches. An engine shared by several processes
	// (PostgreSQL) makes the locks exact across them; an embedded one
	// (Pebble), whose in-process locks are already exact, returns a
	// transaction that is the store itself. ctx bounds the transaction's
	// I/O. end must be called.
	begin(ctx context.Context) kvTx

	// newBatch returns an empty write batch.
	newBatch() kvBatch

	// newIndexedBatch returns an empty write batch whose reads see the
	// store with the batch's own writes applied: an operation that writes
	// several records of one key, each decided from what the previous one
	// left (DeleteObjects on a versioned bucket), reads through it.
	newIndexedBatch() kvIndexedBatch

	// snapshot returns a reader whose gets and iterators all see the store
	// as of one moment, for a read that takes several of them and must
	// not see a write between them: a version listing merges the object
	// and history tables, and a version moves from one to the other.
	snapshot() (kvSnapshot, error)

	// close releases the engine.
	close() error
}

// kvTx is a transaction of the typed layer: reads, locks and at most one
// batch that commits. Reads see the store as of each read, with every
// write committed by an earlier holder of the locks taken; the locks hold
// until end. A kvTx is used by one goroutine.
type kvTx interface {
	kvReader
	// lockBucket takes bucket's lock, shared or exclusive, and lockKey
	// and lockKeys the locks of keys of bucket, in the transaction. A
	// method takes its bucket lock (if any) before its key locks, and all
	// its key locks at once, so that locks are taken in one global order.
	// Errors are reported by the next read or commit.
	lockBucket(bucket string, exclusive bool)
	lockKey(bucket, key string)
	lockKeys(bucket string, keys []string)
	// lockRepair takes bucket's usage repair lock, exclusive, in the
	// transaction, after the bucket's lock and with no key lock. Only
	// the merge of a usage repair takes it (usage_repair.go), so that
	// two merges of one bucket cannot both find the repair generation
	// they counted at; no writer waits for it.
	lockRepair(bucket string)
	// newBatch and newIndexedBatch return a batch whose commit commits
	// the transaction.
	newBatch() kvBatch
	newIndexedBatch() kvIndexedBatch
	// end releases the transaction, rolling it back if no batch
	// committed.
	end()
}

// kvReader reads the store, or the store through an indexed batch.
type kvReader interface {
	// get appends the value stored under key to dst[:0] and returns the
	// result, owned by the caller, or ErrNotFound.
	get(key, dst []byte) ([]byte, error)

	// newIter returns an iterator over keys in [lower, upper). The iterator
	// sees a consistent snapshot of the store as of its creation: writes
	// committed later are invisible to it. GC relies on this.
	newIter(lower, upper []byte) (kvIter, error)
}

// kvSnapshot is a consistent view of the store: every read through it
// sees the same committed state, whatever is committed meanwhile. It is
// used by one goroutine; close releases it (its iterators first).
type kvSnapshot interface {
	kvReader
	close() error
}

// kvIndexedBatch is a batch that can be read.
type kvIndexedBatch interface {
	kvBatch
	kvReader
}

// kvBatch is an atomic group of writes. Set and delete copy their arguments.
type kvBatch interface {
	set(key, value []byte)
	// setJoined sets key to head followed by tail, copying each once: an
	// inline object's data goes into the batch without being joined to
	// its header in another buffer first.
	setJoined(key, head, tail []byte)
	delete(key []byte)
	// merge adds value to key with the engine's merge operator, which for
	// the usage table sums (see usage.go); no read, no lock.
	merge(key, value []byte)
	// commit applies the batch atomically; with sync it returns only once
	// the batch is durable. Concurrent synced commits share one fsync.
	commit(sync bool) error
	// close releases the batch; it must be called whether or not commit was.
	close()
}

// kvIter walks keys in order. Key and value are valid only until the next
// positioning call.
type kvIter interface {
	first() bool
	seekGE(key []byte) bool
	// seekLT positions at the last key less than key.
	seekLT(key []byte) bool
	next() bool
	prev() bool
	key() []byte
	value() ([]byte, error)
	// close releases the iterator and returns any error met while iterating.
	close() error
}
