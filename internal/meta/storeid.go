package meta

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
)

// The store ID names one metadata store among others that share something
// with it:
//
//	a → store ID (32 lowercase hex digits: 128 random bits)
//
// Gateway mode claims its upstream prefix with it (s3blob.Store.Claim):
// two deployments whose metadata differs must never share a prefix, since
// each one's garbage collection deletes the blocks the other's metadata
// references, while the nodes of one cluster (one PostgreSQL database) read
// the same ID and share their prefix. Open creates the ID when the store
// has none (a new store, or one written before store IDs) and reads it on
// every open.
//
// 'a' sorts before every other table, outside every range the typed layer
// scans ([b, v) for usage, [g, q) for GC, single tables otherwise) and the
// ranges HasRecords looks at. A migration neither copies nor digests it
// (copySkip): the target is another store, with an ID of its own.
const tableStoreID = 'a'

var storeIDKey = []byte{tableStoreID}

// storeIDLen is the length of a store ID in hex digits.
const storeIDLen = 32

// loadStoreID reads the store ID into db.storeID, creating it first if the
// store has none. It runs in Open, before the DB is shared. On PostgreSQL
// several nodes may open a new database at once: the read and the write
// are one transaction under a lock that every node takes, so the first
// creates the ID and the others read it. (No bucket has an empty name, so
// the lock is no record's key lock; an embedded store is open in one
// process only, and its transaction takes no lock.)
func (db *DB) loadStoreID(ctx context.Context) error {
	tx := db.kv.begin(ctx)
	defer tx.end()
	tx.lockKey("", "store id")
	v, err := tx.get(storeIDKey, nil)
	switch {
	case err == nil:
		if !validStoreID(v) {
			return fmt.Errorf("meta: store ID %q: %w", v, errCorrupt)
		}
		db.storeID = string(v)
		return nil
	case !errors.Is(err, ErrNotFound):
		return fmt.Errorf("meta: read the store ID: %w", err)
	}
	var r [storeIDLen / 2]byte
	rand.Read(r[:])
	id := hex.EncodeToString(r[:])
	b := tx.newBatch()
	defer b.close()
	b.set(storeIDKey, []byte(id))
	if err := b.commit(true); err != nil {
		return fmt.Errorf("meta: write the store ID: %w", err)
	}
	db.storeID = id
	db.storeIDNew = true
	return nil
}

// validStoreID reports whether v is a store ID as loadStoreID writes it.
func validStoreID(v []byte) bool {
	if len(v) != storeIDLen {
		return false
	}
	for _, c := range v {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// StoreID returns the ID of the store: 32 lowercase hex digits, made once
// when the store was first opened by a Coffer that knows store IDs, the
// same on every node sharing the store and across restarts, and another for
// every other store (a copy made by coffer admin migrate included). It
// names the store to things outside it; see tableStoreID.
func (db *DB) StoreID() string { return db.storeID }

// StoreIDNew reports whether this Open made the store's ID: the store is
// new, or was written before store IDs (restored from an older backup,
// or not opened since the upgrade), so a claim naming another ID may be
// its own from before.
func (db *DB) StoreIDNew() bool { return db.storeIDNew }
