package meta

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// Repairing usage. A bucket's usage is wrong by some difference D: the
// count of its records minus its stored usage. Every write adds to both
// the records and the usage the same change, in one commit, so D stays
// the same however many writes commit: count D from a snapshot (the
// records and the usage as of one moment) and add it to the usage as a
// merge, and the usage is right, whatever was committed after the
// snapshot, because those commits carried their own changes. Neither the
// count nor the merge holds off the bucket's writers; the merge takes the
// bucket's lock shared, as every writer does, to see that the bucket is
// still the one counted.
//
// Besides writes, three things change a usage value without a change of
// the records to match: DeleteBucket (the usage goes with the bucket),
// CreateBucket (a zero for a new bucket of the same name as the one
// counted, told apart by its creation time, to the nanosecond) and
// another repair, which may have counted and added the same difference,
// or set the value from a count. A repair that changes the value bumps
// the bucket's repair generation in the same batch. A merge adds D only
// if the generation, read again under the bucket's repair lock (which no
// two merges of the bucket hold at once, and no writer takes), is the one
// read with the count: otherwise another repair changed the usage after
// the snapshot, either adding this same D (it counted at the same
// generation, and writes leave D as it is) or setting the usage from a
// count, and adding D again would count it twice. So a difference is
// added once however many repairs count it, whatever becomes of the lease
// that runs repairs one at a time (usageRepairLease: a holder on
// PostgreSQL loses it unawares if its lease connection drops); the lease
// only spares a second repair the scan.
//
// A value that does not decode cannot be corrected by adding to it: it is
// set (resetUsage) from a count made with the bucket's writers held off.

// The repair generation of a bucket is one key beside its usage:
//
//	x bucket → generation (8 bytes, big-endian; no key means zero)
//
// It goes with the bucket (DeleteBucket, deleteOrphanUsage). 'x' lies
// outside every range the typed layer scans ([b, v) for usage, [g, q) for
// GC, single tables otherwise), so neither CheckUsage nor the usage
// listings take it for usage; a migration copies it unchanged.
const tableRepairGen = 'x'

// repairGenKey returns the key of bucket's repair generation.
func repairGenKey(bucket string) []byte {
	k := make([]byte, 0, 1+len(bucket))
	k = append(k, tableRepairGen)
	return append(k, bucket...)
}

// readRepairGen returns bucket's repair generation as stored, read
// through r; nil if it has none. Generations are compared as stored, so
// that even a value that does not decode (only corruption makes one) is
// seen to change.
func readRepairGen(r kvReader, bucket string) ([]byte, error) {
	v, err := r.get(repairGenKey(bucket), nil)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("meta: read repair generation of %s: %w", bucket, err)
	}
	return v, nil
}

// nextRepairGen returns the generation after the stored value v: one
// more, or 1 after no value or one that does not decode. It always
// differs from v.
func nextRepairGen(v []byte) []byte {
	var n uint64
	if len(v) == 8 {
		n = binary.BigEndian.Uint64(v)
	}
	return binary.BigEndian.AppendUint64(nil, n+1)
}

// repairUsage repairs what m reports of m.Bucket and reports whether it
// changed the stored usage.
func (db *DB) repairUsage(ctx context.Context, m UsageMismatch) (bool, error) {
	switch m.Problem {
	case problemCorrupt:
		return db.resetUsage(ctx, m.Bucket)
	case problemOrphanUsage:
		return db.deleteOrphanUsage(ctx, m.Bucket)
	default:
		return db.correctUsage(ctx, m.Bucket)
	}
}

// correctUsage counts bucket from a snapshot and adds the difference
// between the count and the usage stored at that snapshot to its usage,
// without holding off its writers. It reports whether it added a
// difference: not if there was none, or if the bucket or its repair
// generation changed since the snapshot.
func (db *DB) correctUsage(ctx context.Context, bucket string) (bool, error) {
	var (
		created time.Time // of the bucket counted
		found   bool      // the bucket exists at the snapshot
		corrupt bool      // its usage value does not decode
		gen     []byte    // its repair generation at the snapshot
		d       Usage     // count - stored
	)
	err := db.inSnapshot(func(r kvReader) error {
		b, err := readBucket(r, bucket)
		if err != nil || b == nil {
			return err
		}
		found, created = true, b.Created
		if gen, err = readRepairGen(r, bucket); err != nil {
			return err
		}
		var stored Usage
		switch v, err := r.get(usageKey(nil, bucket), nil); {
		case err == nil:
			if stored, err = decodeUsage(v); err != nil {
				corrupt = true
				return nil
			}
		case !errors.Is(err, ErrNotFound):
			return fmt.Errorf("meta: read usage of %s: %w", bucket, err)
		}
		uploads, err := db.bucketUploads(ctx, r, bucket)
		if err != nil {
			return err
		}
		counted, err := db.countBucket(ctx, r, bucket, uploads)
		if err != nil {
			return err
		}
		d = counted.sub(stored)
		return nil
	})
	switch {
	case err != nil:
		return false, err
	case corrupt:
		return db.resetUsage(ctx, bucket)
	case !found || d == (Usage{}):
		return false, nil // deleted since the check, with its usage; or right
	}
	repairWindow(bucket)
	return db.mergeRepair(ctx, bucket, created, gen, d)
}

// mergeRepair adds d to bucket's usage and bumps its repair generation,
// in one batch, if the bucket is still the one created at created and
// its generation is still gen, as when d was counted. It holds off no
// writer: it takes the bucket's lock shared, as writers do, and the
// bucket's repair lock, which only merges take.
func (db *DB) mergeRepair(ctx context.Context, bucket string, created time.Time, gen []byte, d Usage) (bool, error) {
	mu := db.bucketLock(bucket)
	mu.RLock()
	defer mu.RUnlock()
	if _, shared := db.kv.(*pgKV); !shared {
		// PostgreSQL's repair lock (below) keeps merges apart there,
		// across nodes; held here too, it would make every merge of
		// the process wait for one blocked on another node's.
		db.repairMu.Lock()
		defer db.repairMu.Unlock()
	}
	tx := db.kv.begin(ctx)
	defer tx.end()
	tx.lockBucket(bucket, false)
	tx.lockRepair(bucket)
	b, err := readBucket(tx, bucket)
	if err != nil {
		return false, err
	}
	if b == nil || !b.Created.Equal(created) {
		// Deleted (with its usage) since the snapshot, and perhaps
		// created again, from zero: the difference was another bucket's.
		return false, nil
	}
	now, err := readRepairGen(tx, bucket)
	if err != nil {
		return false, err
	}
	if !bytes.Equal(now, gen) {
		// Another repair added this difference since the snapshot, or
		// set the usage from a count.
		return false, nil
	}
	if testHookRepairMerge != nil {
		testHookRepairMerge(bucket)
	}
	batch := tx.newBatch()
	defer batch.close()
	batch.merge(usageKey(nil, bucket), appendUsage(nil, d))
	batch.set(repairGenKey(bucket), nextRepairGen(now))
	if err := batch.commit(db.sync); err != nil {
		return false, fmt.Errorf("meta: correct usage of %s: %w", bucket, err)
	}
	return true, nil
}

// readBucket reads bucket's record through r, returning nil if there is
// none.
func readBucket(r kvReader, bucket string) (*Bucket, error) {
	v, err := r.get(bucketKey(bucket), nil)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("meta: read bucket %s: %w", bucket, err)
	}
	b, err := decodeBucket(bucket, v)
	if err != nil {
		return nil, fmt.Errorf("meta: bucket %s: %w", bucket, err)
	}
	return &b, nil
}

// resetUsage counts bucket's usage with its writers held off and sets it,
// reporting whether the stored value changed: the repair of a value that
// does not decode. Writes into the bucket (and into buckets that share its
// lock stripe, with Pebble) wait for one scan of it. A change bumps the
// bucket's repair generation, so that a correctUsage that counted before
// it adds nothing on top of the count; the bucket's exclusive lock keeps
// every merge (which takes it shared) out meanwhile.
func (db *DB) resetUsage(ctx context.Context, bucket string) (bool, error) {
	mu := db.bucketLock(bucket)
	mu.Lock()
	defer mu.Unlock()
	tx := db.kv.begin(ctx)
	defer tx.end()
	tx.lockBucket(bucket, true)
	if err := db.checkBucket(tx, bucket); errors.Is(err, ErrNoBucket) {
		return false, nil // deleted since the check, with its usage
	} else if err != nil {
		return false, err
	}
	// CreateUpload and CompleteUpload need the bucket lock, held here;
	// PutPart and AbortUpload need their key's: take those of every
	// upload, as DeleteBucket does. No upload can start meanwhile, but one
	// can be aborted between the listing and the locks: count the uploads
	// listed again under the locks (a subset of the first listing, whose
	// keys are all locked).
	listed, err := db.bucketUploads(ctx, tx, bucket)
	if err != nil {
		return false, err
	}
	repairWindow(bucket)
	unlock := db.lockKeyStripes(tx, listed)
	defer unlock()
	uploads, err := db.bucketUploads(ctx, tx, bucket)
	if err != nil {
		return false, err
	}
	u, err := db.countBucket(ctx, tx, bucket, uploads)
	if err != nil {
		return false, err
	}
	uk := usageKey(nil, bucket)
	switch v, err := tx.get(uk, nil); {
	case err == nil:
		if su, err := decodeUsage(v); err == nil && su == u {
			return false, nil
		}
	case !errors.Is(err, ErrNotFound):
		return false, fmt.Errorf("meta: read usage of %s: %w", bucket, err)
	}
	gen, err := readRepairGen(tx, bucket)
	if err != nil {
		return false, err
	}
	b := tx.newBatch()
	defer b.close()
	b.set(uk, appendUsage(nil, u))
	b.set(repairGenKey(bucket), nextRepairGen(gen))
	if err := b.commit(db.sync); err != nil {
		return false, fmt.Errorf("meta: repair usage of %s: %w", bucket, err)
	}
	return true, nil
}

// deleteOrphanUsage deletes the usage key of bucket, with its repair
// generation, if the bucket does not exist, reporting whether it did.
func (db *DB) deleteOrphanUsage(ctx context.Context, bucket string) (bool, error) {
	mu := db.bucketLock(bucket)
	mu.Lock()
	defer mu.Unlock()
	tx := db.kv.begin(ctx)
	defer tx.end()
	tx.lockBucket(bucket, true)
	switch err := db.checkBucket(tx, bucket); {
	case err == nil:
		return false, nil // created since the check, with a zero usage
	case !errors.Is(err, ErrNoBucket):
		return false, err
	}
	uk := usageKey(nil, bucket)
	switch _, err := tx.get(uk, nil); {
	case errors.Is(err, ErrNotFound):
		return false, nil // already gone
	case err != nil:
		return false, fmt.Errorf("meta: read usage of %s: %w", bucket, err)
	}
	b := tx.newBatch()
	defer b.close()
	b.delete(uk)
	b.delete(repairGenKey(bucket))
	if err := b.commit(db.sync); err != nil {
		return false, fmt.Errorf("meta: delete usage of %s: %w", bucket, err)
	}
	return true, nil
}

// countBucket sums bucket's objects and the given uploads with their parts,
// read through r.
func (db *DB) countBucket(ctx context.Context, r kvReader, bucket string, uploads []*Upload) (Usage, error) {
	var u Usage
	for _, t := range []byte{tableHistory, tableObject} {
		p := bucketPrefix(t, bucket)
		it, err := r.newIter(p, successor(p))
		if err != nil {
			return Usage{}, err
		}
		for ok := it.first(); ok; ok = it.next() {
			if err := ctx.Err(); err != nil {
				return Usage{}, errors.Join(err, it.close())
			}
			v, err := it.value()
			if err != nil {
				return Usage{}, errors.Join(err, it.close())
			}
			o, err := decodeObject(v, objectSummary)
			if err != nil {
				return Usage{}, errors.Join(fmt.Errorf("meta: object %q: %w", it.key(), err), it.close())
			}
			u = u.add(objectUsage(&o))
		}
		if err := it.close(); err != nil {
			return Usage{}, err
		}
	}
	for _, up := range uploads {
		parts, err := db.allParts(ctx, r, up.ID)
		if err != nil {
			return Usage{}, err
		}
		u.Uploads++
		for _, p := range parts {
			u.PartBytes += p.Size
		}
	}
	return u, nil
}

// usageRepairName names the cluster's usage repair lease (pgKV.tryLease).
const usageRepairName = "usage-repair"

// usageLeaseRetry is how often a repair waiting for another node's asks
// again.
const usageLeaseRetry = 250 * time.Millisecond

// usageRepairLease waits until no other usage repair runs, in this process
// and, on a shared store, in the cluster, and returns the function that
// lets the next one run. Two repairs at once would each count the same
// difference from their own snapshot; the repair generation keeps the
// second to merge from adding it again (see the top of this file), so
// the lease is for efficiency: it spares the second a scan whose result
// it would drop.
func (db *DB) usageRepairLease(ctx context.Context) (func(), error) {
	select {
	case db.repairSem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	p, shared := db.kv.(*pgKV)
	if !shared {
		return func() { <-db.repairSem }, nil
	}
	for {
		release, ok, err := p.tryLease(ctx, usageRepairName)
		if err != nil {
			<-db.repairSem
			return nil, fmt.Errorf("meta: usage repair lease: %w", err)
		}
		if ok {
			return func() { release(); <-db.repairSem }, nil
		}
		select {
		case <-time.After(usageLeaseRetry):
		case <-ctx.Done():
			<-db.repairSem
			return nil, ctx.Err()
		}
	}
}

// testHookRepairWindow, when a test sets it, runs in a repair of bucket's
// usage where a write may commit between what the repair reads and what
// it stores: between the count from a snapshot and the merge of the
// difference (correctUsage), and between the listing of the bucket's
// uploads and the locks of their keys (resetUsage).
var testHookRepairWindow func(bucket string)

// testHookRepairMerge, when a test sets it, runs in the merge of a
// correctUsage of bucket once it has found the repair generation
// unchanged, and before it commits: no other merge of the bucket may get
// there meanwhile.
var testHookRepairMerge func(bucket string)

func repairWindow(bucket string) {
	if testHookRepairWindow != nil {
		testHookRepairWindow(bucket)
	}
}
