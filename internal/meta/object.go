package meta

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Object returns the record of bucket/key, or ErrNotFound. It does not tell
// a missing bucket from a missing key; callers that need to ask Bucket.
// Inline aliases a fresh copy of the stored value.
func (db *DB) Object(ctx context.Context, bucket, key string) (Object, error) {
	o, _, err := db.ObjectBuf(ctx, bucket, key, nil)
	return o, err
}

// ObjectBuf is Object reading into buf's memory: the record's Inline
// aliases the returned buffer (buf, grown if needed), which the caller may
// reuse once it no longer needs Inline. Every other field is a copy. The
// buffer is returned on error too.
func (db *DB) ObjectBuf(ctx context.Context, bucket, key string, buf []byte) (Object, []byte, error) {
	if err := ctx.Err(); err != nil {
		return Object{}, buf, err
	}
	v, err := db.kv.get(objectKey(nil, bucket, key), buf)
	if err != nil {
		if !errors.Is(err, ErrNotFound) {
			err = fmt.Errorf("meta: read object %s/%s: %w", bucket, key, err)
		}
		return Object{}, v, err
	}
	o, err := decodeObject(v, objectFull)
	if err != nil {
		return Object{}, v, fmt.Errorf("meta: object %s/%s: %w", bucket, key, err)
	}
	return o, v, nil
}

// object reads the layout of bucket/key (everything but the inline data),
// returning nil if it does not exist. It reads into a pooled buffer, so
// replacing a large inline object does not allocate a copy of it.
func (db *DB) object(bucket, key string) (*Object, error) {
	bp := db.getBuf()
	defer db.putBuf(bp)
	v, err := db.kv.get(objectKey(nil, bucket, key), *bp)
	*bp = v
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("meta: read object %s/%s: %w", bucket, key, err)
	}
	o, err := decodeObject(v, objectLayout)
	if err != nil {
		return nil, fmt.Errorf("meta: object %s/%s: %w", bucket, key, err)
	}
	return &o, nil
}

// UpdateFunc decides the new record of an object from the current one (nil
// if absent; its Inline data is not read). It returns the record to store, or nil to delete the object,
// or an error to abort without writing. It runs under the object's lock, so
// it must be quick and do no I/O; it must not retain or modify old.
type UpdateFunc func(old *Object) (*Object, error)

// UpdateObject atomically replaces the record of bucket/key with what fn
// returns: the read of the current record, fn's decision and the commit are
// one step with respect to every other write of the key. The blocks of the
// replaced record go to the garbage queue (time now, its version ID) in the
// same batch. It returns ErrNoBucket if the bucket does not exist and fn's
// error unchanged. Deleting an absent object writes nothing.
func (db *DB) UpdateObject(ctx context.Context, bucket, key string, now time.Time, fn UpdateFunc) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	bmu := db.bucketLock(bucket)
	bmu.RLock()
	defer bmu.RUnlock()
	if err := db.checkBucket(bucket); err != nil {
		return err
	}
	kmu := db.keyLock(bucket, key)
	kmu.Lock()
	defer kmu.Unlock()

	old, err := db.object(bucket, key)
	if err != nil {
		return err
	}
	nw, err := fn(old)
	if err != nil {
		return err
	}
	if nw == nil && old == nil {
		return nil
	}
	w := db.newWriter(now)
	defer w.close()
	if nw != nil {
		w.setObject(bucket, key, nw)
	} else {
		w.b.delete(objectKey(nil, bucket, key))
	}
	if old != nil {
		w.garbage(old.VersionID, old.Blocks, blockSet(nw))
	}
	if err := w.commit(); err != nil {
		return fmt.Errorf("meta: commit object %s/%s: %w", bucket, key, err)
	}
	return nil
}

// DeleteObjects deletes the given keys of bucket in one batch (one fsync),
// moving their blocks to the garbage queue. Absent keys are skipped. It
// returns ErrNoBucket if the bucket does not exist.
func (db *DB) DeleteObjects(ctx context.Context, bucket string, keys []string, now time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	bmu := db.bucketLock(bucket)
	bmu.RLock()
	defer bmu.RUnlock()
	if err := db.checkBucket(bucket); err != nil {
		return err
	}
	// Lock every stripe involved, in ascending order so that two
	// multi-key deletes cannot deadlock.
	stripes := make([]int, 0, len(keys))
	for _, k := range keys {
		stripes = append(stripes, db.keyStripe(bucket, k))
	}
	slices.Sort(stripes)
	stripes = slices.Compact(stripes)
	for _, s := range stripes {
		db.keyMu[s].Lock()
	}
	defer func() {
		for _, s := range stripes {
			db.keyMu[s].Unlock()
		}
	}()

	w := db.newWriter(now)
	defer w.close()
	seen := make(map[string]bool, len(keys))
	n := 0
	for _, k := range keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		old, err := db.object(bucket, k)
		if err != nil {
			return err
		}
		if old == nil {
			continue
		}
		w.b.delete(objectKey(nil, bucket, k))
		w.garbage(old.VersionID, old.Blocks, nil)
		n++
	}
	if n == 0 {
		return nil
	}
	if err := w.commit(); err != nil {
		return fmt.Errorf("meta: commit delete of %d objects in %s: %w", n, bucket, err)
	}
	return nil
}
