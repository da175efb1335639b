package meta

import (
	"context"
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
// another repair (which may have counted and added the same difference:
// repairs run one at a time, usageRepairLease).
//
// A value that does not decode cannot be corrected by adding to it: it is
// set (resetUsage) from a count made with the bucket's writers held off.

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
// without holding off its writers. It reports whether there was a
// difference to add.
func (db *DB) correctUsage(ctx context.Context, bucket string) (bool, error) {
	uk := usageKey(nil, bucket)
	var (
		created time.Time // of the bucket counted
		found   bool      // the bucket exists at the snapshot
		corrupt bool      // its usage value does not decode
		d       Usage     // count - stored
	)
	err := db.inSnapshot(func(r kvReader) error {
		b, err := readBucket(r, bucket)
		if err != nil || b == nil {
			return err
		}
		found, created = true, b.Created
		var stored Usage
		switch v, err := r.get(uk, nil); {
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
	mu := db.bucketLock(bucket)
	mu.RLock()
	defer mu.RUnlock()
	tx := db.kv.begin(ctx)
	defer tx.end()
	tx.lockBucket(bucket, false)
	b, err := readBucket(tx, bucket)
	if err != nil {
		return false, err
	}
	if b == nil || !b.Created.Equal(created) {
		// Deleted (with its usage) since the snapshot, and perhaps
		// created again, from zero: the difference was another bucket's.
		return false, nil
	}
	batch := tx.newBatch()
	defer batch.close()
	batch.merge(uk, appendUsage(nil, d))
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
// lock stripe, with Pebble) wait for one scan of it.
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
	b := tx.newBatch()
	defer b.close()
	b.set(uk, appendUsage(nil, u))
	if err := b.commit(db.sync); err != nil {
		return false, fmt.Errorf("meta: repair usage of %s: %w", bucket, err)
	}
	return true, nil
}

// deleteOrphanUsage deletes the usage key of bucket if the bucket does
// not exist, reporting whether it did.
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
// lets the next one run. Two repairs at once could each count the same
// difference from their own snapshot and add it twice.
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

func repairWindow(bucket string) {
	if testHookRepairWindow != nil {
		testHookRepairWindow(bucket)
	}
}
