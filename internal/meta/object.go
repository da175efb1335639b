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
// The inline data is not read (Inline is nil): ObjectData reads it.
func (db *DB) Object(ctx context.Context, bucket, key string) (Object, error) {
	if err := ctx.Err(); err != nil {
		return Object{}, err
	}
	var o Object
	found, err := db.readObject(db.kv, bucket, key, &o)
	if err == nil && !found {
		err = ErrNotFound
	}
	return o, err
}

// errMissingData is wrapped by ObjectData when a current record's data key
// is missing or holds another version's bytes: corruption, or a bug.
var errMissingData = errors.New("meta: inline data missing")

// ObjectData reads the inline data of version versionID of bucket/key, a
// record without blocks that Object returned, into buf's memory: data
// aliases the returned buffer (buf, grown if needed), which the caller may
// reuse once it no longer needs data. The buffer is returned on error too.
//
// Record and data are two reads, not one snapshot, so the object may have
// been replaced or deleted in between: then ObjectData returns ErrNotFound
// and the caller reads the record again. It never returns the bytes of
// another version: the data key holds the version ID of its record.
func (db *DB) ObjectData(ctx context.Context, bucket, key, versionID string, buf []byte) (data, b []byte, err error) {
	if err := ctx.Err(); err != nil {
		return nil, buf, err
	}
	v, err := db.kv.get(dataKey(nil, bucket, key), buf)
	switch {
	case err == nil:
		id, data, err := decodeData(v)
		if err != nil {
			return nil, v, fmt.Errorf("meta: data of %s/%s: %w", bucket, key, err)
		}
		if string(id) == versionID {
			return data, v, nil
		}
	case !errors.Is(err, ErrNotFound):
		return nil, v, fmt.Errorf("meta: read data of %s/%s: %w", bucket, key, err)
	}
	// The data key holds another version, or none: either the record
	// changed since the caller read it, or it is a version 1 record, which
	// holds its data itself.
	v, err = db.kv.get(objectKey(nil, bucket, key), v)
	if err != nil {
		if !errors.Is(err, ErrNotFound) {
			err = fmt.Errorf("meta: read object %s/%s: %w", bucket, key, err)
		}
		return nil, v, err
	}
	o, ver, err := decodeObjectVersion(v, objectFull)
	switch {
	case err != nil:
		return nil, v, fmt.Errorf("meta: object %s/%s: %w", bucket, key, err)
	case o.VersionID != versionID:
		return nil, v, ErrNotFound
	case ver == objectV1:
		return o.Inline, v, nil
	}
	return nil, v, fmt.Errorf("meta: object %s/%s version %s: %w", bucket, key, versionID, errMissingData)
}

// object reads the record of bucket/key through r without its inline data,
// returning nil if it does not exist.
func (db *DB) object(r kvReader, bucket, key string) (*Object, error) {
	o := new(Object)
	found, err := db.readObject(r, bucket, key, o)
	if !found {
		return nil, err
	}
	return o, err
}

// readObject reads the record of bucket/key through r without its inline data into
// o, reporting whether it exists. The value is read into a pooled buffer,
// so that a version 1 record's inline data is not copied out of the store
// into fresh memory.
func (db *DB) readObject(r kvReader, bucket, key string, o *Object) (found bool, err error) {
	bp := db.getBuf()
	defer db.putBuf(bp)
	v, err := r.get(objectKey(nil, bucket, key), *bp)
	*bp = v
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("meta: read object %s/%s: %w", bucket, key, err)
	}
	if *o, err = decodeObject(v, objectLayout); err != nil {
		return false, fmt.Errorf("meta: object %s/%s: %w", bucket, key, err)
	}
	return true, nil
}

// UpdateFunc decides the new record of an object from the current one (nil
// if absent, or if the latest version is a delete marker; its Inline data
// is not read). It returns the record to store (its Inline data, if any,
// is stored under the data key in the same batch), nil or a record with
// DeleteMarker set to delete the object, or an error to abort without
// writing. It runs under the object's lock, so it must be quick and do no
// I/O; it must not retain or modify old.
type UpdateFunc func(old *Object) (*Object, error)

// UpdateObject atomically replaces the current version of bucket/key with
// what fn returns: the read of the current record, fn's decision and the
// commit are one step with respect to every other write of the key. It
// returns ErrNoBucket if the bucket does not exist and fn's error
// unchanged.
//
// What happens to the version replaced depends on the bucket's versioning
// (read atomically with the commit; see putVersion): unversioned, it is
// replaced and its blocks go to the garbage queue (time now, its version
// ID) in the same batch; with versioning enabled it becomes a noncurrent
// version; suspended, it is kept if it has an ID of its own and replaced if
// it is the null version. A delete (nil, or a record with DeleteMarker)
// removes the object of an unversioned bucket (deleting an absent one
// writes nothing) and writes a delete marker in a versioned one.
//
// UpdateObject sets the Versioning, and the VersionID if empty, of the
// record fn returns, so the caller learns the version it wrote.
func (db *DB) UpdateObject(ctx context.Context, bucket, key string, now time.Time, fn UpdateFunc) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	bmu := db.bucketLock(bucket)
	bmu.RLock()
	defer bmu.RUnlock()
	tx := db.kv.begin(ctx)
	defer tx.end()
	tx.lockBucket(bucket, false)
	v, err := db.bucketVersioning(tx, bucket)
	if err != nil {
		return err
	}
	kmu := db.keyLock(bucket, key)
	kmu.Lock()
	defer kmu.Unlock()
	tx.lockKey(bucket, key)

	old, err := db.object(tx, bucket, key)
	if err != nil {
		return err
	}
	nw, err := fn(old)
	if err != nil {
		return err
	}
	if nw == nil {
		nw = &Object{DeleteMarker: true}
	}
	if v == Unversioned && nw.DeleteMarker && old == nil {
		return nil
	}
	w := db.newWriterFor(tx, v, now)
	defer w.close()
	if err := w.putVersion(bucket, key, v, old, nw); err != nil {
		return err
	}
	if err := w.commit(); err != nil {
		return fmt.Errorf("meta: commit object %s/%s: %w", bucket, key, err)
	}
	return nil
}

// DeleteObjects deletes the current versions of the given keys of bucket in
// one batch (one fsync), as DeleteVersions does with refs without version
// IDs. It returns ErrNoBucket if the bucket does not exist.
func (db *DB) DeleteObjects(ctx context.Context, bucket string, keys []string, now time.Time) error {
	refs := make([]VersionRef, len(keys))
	for i, k := range keys {
		refs[i].Key = k
	}
	_, err := db.DeleteVersions(ctx, bucket, refs, now)
	return err
}

// lockKeys locks the stripes of the given keys of bucket, each once and in
// ascending order so that two multi-key writes cannot deadlock, then the
// keys' locks in tx, and returns the function that unlocks the stripes.
func (db *DB) lockKeys(tx kvTx, bucket string, keys []string) func() {
	stripes := make([]int, 0, len(keys))
	for _, k := range keys {
		stripes = append(stripes, db.keyStripe(bucket, k))
	}
	slices.Sort(stripes)
	stripes = slices.Compact(stripes)
	for _, s := range stripes {
		db.keyMu[s].Lock()
	}
	tx.lockKeys(bucket, keys)
	return func() {
		for _, s := range stripes {
			db.keyMu[s].Unlock()
		}
	}
}

// deleteCurrent deletes the objects of keys (absent ones are skipped) from
// an unversioned bucket in one batch, moving their blocks to the garbage
// queue. The caller holds the bucket's and the keys' stripes.
func (db *DB) deleteCurrent(tx kvTx, bucket string, keys []string, now time.Time) error {
	w := db.newWriter(tx, now)
	defer w.close()
	seen := make(map[string]bool, len(keys))
	n := 0
	for _, k := range keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		old, err := db.object(tx, bucket, k)
		if err != nil {
			return err
		}
		if old == nil {
			continue
		}
		w.deleteObject(bucket, k, old)
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
