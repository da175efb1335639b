package meta

// kv is the ordered key-value engine under DB. It is deliberately small so
// that a second engine replaces one adapter file (pebble.go) without touching
// the typed layer above it.
//
// Implementations must be safe for concurrent use. Keys and values passed in
// are not retained after the call returns.
type kv interface {
	kvReader

	// newBatch returns an empty write batch.
	newBatch() kvBatch

	// newIndexedBatch returns an empty write batch whose reads see the
	// store with the batch's own writes applied: an operation that writes
	// several records of one key, each decided from what the previous one
	// left (DeleteObjects on a versioned bucket), reads through it.
	newIndexedBatch() kvIndexedBatch

	// close releases the engine.
	close() error
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
