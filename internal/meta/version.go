package meta

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Versions. The current version of a key, when it is an object, is its
// record in the object table (o), exactly as in a bucket that was never
// versioned, so reads and listings of current objects never step over old
// versions. Every other version — noncurrent versions and delete markers,
// including a delete marker that is the latest version — is a record in
// the history table (h), keyed by object key and version ID, newest first;
// the inline data of a noncurrent version lives in its own table (e),
// mirroring h as d mirrors o. The invariant that makes "latest" cheap:
//
//	if the key has an o record, it is the latest version; if it has none,
//	its newest h record, if any, is a delete marker and the latest version.
//
// Writes keep it: a new version moves the o record to h (archive); deleting
// the latest version promotes the newest h record to o when that is an
// object (settle). See docs/design/0005-versioning.md.

// newVersionID returns a version ID for a version written at t: 16 hex
// digits of the bitwise complement of t's unix nanoseconds, then 16 random
// ones. IDs of later versions sort first, as S3 lists versions.
func newVersionID(t time.Time) string {
	return versionIDAt(^uint64(t.UnixNano()))
}

// versionIDAt returns a version ID with time part inv (complemented unix
// nanoseconds) and a random tail.
func versionIDAt(inv uint64) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], inv)
	_, _ = rand.Read(b[8:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// versionIDBefore returns a version ID for a version written at t that
// sorts before (is newer than) latest, the history ID of the key's latest
// version, even if the clock stepped back since that was written.
func versionIDBefore(t time.Time, latest string) string {
	id := newVersionID(t)
	if latest == "" || id < latest {
		return id
	}
	inv, err := strconv.ParseUint(latest[:16], 16, 64)
	if err != nil || inv == 0 {
		return id // not one of ours; order cannot be helped
	}
	return versionIDAt(inv - 1)
}

// ValidVersionID reports whether id can name a version: NullVersionID, or
// VersionIDLen lowercase hex digits.
func ValidVersionID(id string) bool {
	if id == NullVersionID {
		return true
	}
	if len(id) != VersionIDLen {
		return false
	}
	for i := range len(id) {
		c := id[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// historyID returns the ID that places o among the versions of its key in
// the history table: its VersionID when that came from newVersionID,
// otherwise (a record written before versioning, with a random ID) one
// made from its modification time and its ID, the same every time.
func historyID(o *Object) string {
	if o.orderedID {
		return o.VersionID
	}
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], ^uint64(o.Modified.UnixNano()))
	tail, err := hex.DecodeString(o.VersionID)
	if err != nil || len(tail) < 8 {
		tail = []byte(o.VersionID + "\x00\x00\x00\x00\x00\x00\x00\x00")
	}
	copy(b[8:], tail)
	return hex.EncodeToString(b[:])
}

// newWriterFor returns the writer a write under versioning v needs: an
// indexed one for versioned buckets, whose writes move records between
// tables and read what the batch already changed.
func (db *DB) newWriterFor(tx kvTx, v Versioning, now time.Time) *writer {
	if v == Unversioned {
		return db.newWriter(tx, now)
	}
	return db.newIndexedWriter(tx, now)
}

// putVersion makes nw the latest version of bucket/key in a bucket with
// versioning v, whose current version is cur (nil if none). nw's
// Versioning is set, and its VersionID if empty. A nw with DeleteMarker is
// a delete: it removes cur when unversioned, else it is stored as the
// latest version, in the history table.
//
//   - Unversioned: nw replaces cur; cur's blocks (but those nw keeps) become
//     garbage.
//   - Enabled: cur becomes a noncurrent version.
//   - Suspended: nw is the null version and replaces the key's null version,
//     wherever it is (cur, or in the history); a cur with an ID of its own
//     becomes noncurrent.
func (w *writer) putVersion(bucket, key string, v Versioning, cur, nw *Object) error {
	nw.Versioning = v
	if nw.DeleteMarker && nw.Modified.IsZero() {
		nw.Modified = w.now
	}
	if nw.VersionID == "" {
		latest := ""
		if v != Unversioned {
			var err error
			if latest, err = w.latestID(bucket, key, cur); err != nil {
				return err
			}
		}
		nw.VersionID = versionIDBefore(w.now, latest)
		nw.orderedID = true
	}
	if v == Unversioned {
		if nw.DeleteMarker {
			if cur != nil {
				w.deleteObject(bucket, key, cur)
				w.garbage(cur.VersionID, cur.Blocks, nil)
			}
			return nil
		}
		w.putObject(bucket, key, cur, nw)
		if cur != nil {
			w.garbage(cur.VersionID, cur.Blocks, blockSet(nw))
		}
		return nil
	}
	nullReplaced := false
	if cur != nil {
		if v == VersioningSuspended && cur.Versioning != VersioningEnabled {
			w.deleteObject(bucket, key, cur)
			w.garbage(cur.VersionID, cur.Blocks, blockSet(nw))
			nullReplaced = true // a key has one null version at most
		} else if err := w.archive(bucket, key, cur); err != nil {
			return err
		}
	}
	if v == VersioningSuspended && !nullReplaced {
		null, err := w.findNull(bucket, key)
		if err != nil {
			return err
		}
		if null != nil {
			w.deleteHistory(bucket, key, null)
			w.garbage(null.VersionID, null.Blocks, blockSet(nw))
		}
	}
	if nw.DeleteMarker {
		w.putHistory(bucket, key, nw)
	} else {
		w.putObject(bucket, key, nil, nw)
	}
	return nil
}

// latestID returns the history ID of the latest version of bucket/key:
// cur's, or that of the newest history record if cur is nil; "" if the key
// has no version.
func (w *writer) latestID(bucket, key string, cur *Object) (string, error) {
	if cur != nil {
		return historyID(cur), nil
	}
	p := historyNamePrefix((*w.buf)[:0], tableHistory, bucket, key)
	it, err := w.r.newIter(p, successor(p))
	if err != nil {
		return "", fmt.Errorf("meta: read versions of %s/%s: %w", bucket, key, err)
	}
	id := ""
	if it.first() {
		id = string(it.key()[len(p):])
	}
	return id, it.close()
}

// archive moves cur, the current version of bucket/key, to the history:
// its record from o to h and its inline data from d to e.
func (w *writer) archive(bucket, key string, cur *Object) error {
	moved := *cur
	if hasData(cur) {
		data, err := w.db.currentData(w.r, bucket, key, cur)
		if err != nil {
			return err
		}
		moved.Inline = data
	}
	w.deleteObject(bucket, key, cur)
	w.putHistory(bucket, key, &moved)
	return nil
}

// promote makes rec, the newest version in bucket/key's history and an
// object, the current version: its record moves from h to o and its inline
// data from e to d.
func (w *writer) promote(bucket, key string, rec *Object) error {
	moved := *rec
	if hasData(rec) {
		data, err := w.db.historyData(w.r, bucket, key, rec)
		if err != nil {
			return err
		}
		moved.Inline = data
	}
	w.deleteHistory(bucket, key, rec)
	w.putObject(bucket, key, nil, &moved)
	return nil
}

// putHistory stores rec (a noncurrent version or a delete marker) in
// bucket/key's history, with its Inline data under its e key. The bucket's
// usage grows by rec's.
func (w *writer) putHistory(bucket, key string, rec *Object) {
	w.count(bucket, objectUsage(rec))
	hid := historyID(rec)
	k := historyKey((*w.buf)[:0], tableHistory, bucket, key, hid)
	v := appendObject(k, rec)
	w.b.set(v[:len(k)], v[len(k):])
	if len(rec.Inline) > 0 {
		ek := historyKey(v[:0], tableOldData, bucket, key, hid)
		v = appendDataHeader(ek, rec.VersionID)
		w.b.setJoined(v[:len(ek)], v[len(ek):], rec.Inline)
	}
	*w.buf = v
}

// deleteHistory deletes rec from bucket/key's history, with its data. Its
// blocks are the caller's to queue or keep.
func (w *writer) deleteHistory(bucket, key string, rec *Object) {
	w.count(bucket, Usage{}.sub(objectUsage(rec)))
	hid := historyID(rec)
	k := historyKey((*w.buf)[:0], tableHistory, bucket, key, hid)
	w.b.delete(k)
	if hasData(rec) {
		k = historyKey(k[:0], tableOldData, bucket, key, hid)
		w.b.delete(k)
	}
	*w.buf = k
}

// findNull returns the null version in bucket/key's history (a record not
// written with versioning enabled), or nil. A key has one at most; finding
// it reads the summaries of the key's noncurrent versions.
func (w *writer) findNull(bucket, key string) (*Object, error) {
	return findNull(w.r, bucket, key)
}

func findNull(r kvReader, bucket, key string) (*Object, error) {
	p := historyNamePrefix(nil, tableHistory, bucket, key)
	it, err := r.newIter(p, successor(p))
	if err != nil {
		return nil, fmt.Errorf("meta: read versions of %s/%s: %w", bucket, key, err)
	}
	for ok := it.first(); ok; ok = it.next() {
		v, err := it.value()
		if err != nil {
			return nil, errors.Join(err, it.close())
		}
		s, err := decodeObject(v, objectSummary)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("meta: version of %s/%s: %w", bucket, key, err), it.close())
		}
		if s.Versioning == VersioningEnabled {
			continue
		}
		o, err := decodeObject(v, objectLayout)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("meta: version of %s/%s: %w", bucket, key, err), it.close())
		}
		return &o, it.close()
	}
	return nil, it.close()
}

// topHistory returns the newest record of bucket/key's history, or nil.
func topHistory(r kvReader, bucket, key string) (*Object, error) {
	p := historyNamePrefix(nil, tableHistory, bucket, key)
	it, err := r.newIter(p, successor(p))
	if err != nil {
		return nil, fmt.Errorf("meta: read versions of %s/%s: %w", bucket, key, err)
	}
	if !it.first() {
		return nil, it.close()
	}
	v, err := it.value()
	if err != nil {
		return nil, errors.Join(err, it.close())
	}
	o, err := decodeObject(v, objectLayout)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("meta: version of %s/%s: %w", bucket, key, err), it.close())
	}
	return &o, it.close()
}

// historyByID returns the version of bucket/key with S3 version ID id (not
// NullVersionID) from the history, or nil.
func historyByID(r kvReader, bucket, key, id string) (*Object, error) {
	if len(id) != VersionIDLen {
		return nil, nil
	}
	v, err := r.get(historyKey(nil, tableHistory, bucket, key, id), nil)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("meta: read version %s of %s/%s: %w", id, bucket, key, err)
	}
	o, err := decodeObject(v, objectLayout)
	if err != nil {
		return nil, fmt.Errorf("meta: version %s of %s/%s: %w", id, bucket, key, err)
	}
	if o.S3VersionID() != id {
		return nil, nil // a null version whose history ID happens to be id
	}
	return &o, nil
}

// readCurrent reads the current record of bucket/key through r, or nil.
func readCurrent(r kvReader, bucket, key string) (*Object, error) {
	v, err := r.get(objectKey(nil, bucket, key), nil)
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

// currentData returns a copy of the inline data of cur, the current
// record of bucket/key, read through r.
func (db *DB) currentData(r kvReader, bucket, key string, cur *Object) ([]byte, error) {
	v, err := r.get(dataKey(nil, bucket, key), nil)
	if err == nil {
		id, data, err := decodeData(v)
		if err != nil {
			return nil, fmt.Errorf("meta: data of %s/%s: %w", bucket, key, err)
		}
		if string(id) == cur.VersionID {
			return data, nil
		}
	} else if !errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("meta: read data of %s/%s: %w", bucket, key, err)
	}
	// A version 1 record holds its data itself.
	v, err = r.get(objectKey(nil, bucket, key), nil)
	if err != nil {
		return nil, fmt.Errorf("meta: read object %s/%s: %w", bucket, key, err)
	}
	o, ver, err := decodeObjectVersion(v, objectFull)
	if err != nil {
		return nil, fmt.Errorf("meta: object %s/%s: %w", bucket, key, err)
	}
	if ver != objectV1 || o.VersionID != cur.VersionID {
		return nil, fmt.Errorf("meta: object %s/%s version %s: %w", bucket, key, cur.VersionID, errMissingData)
	}
	return o.Inline, nil
}

// historyData returns a copy of the inline data of rec, a version in
// bucket/key's history, read through r.
func (db *DB) historyData(r kvReader, bucket, key string, rec *Object) ([]byte, error) {
	v, err := r.get(historyKey(nil, tableOldData, bucket, key, historyID(rec)), nil)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			err = errMissingData
		}
		return nil, fmt.Errorf("meta: data of version %s of %s/%s: %w", rec.VersionID, bucket, key, err)
	}
	id, data, err := decodeData(v)
	if err != nil {
		return nil, fmt.Errorf("meta: data of version %s of %s/%s: %w", rec.VersionID, bucket, key, err)
	}
	if string(id) != rec.VersionID {
		return nil, fmt.Errorf("meta: data of version %s of %s/%s: %w", rec.VersionID, bucket, key, errMissingData)
	}
	return data, nil
}

// Deleted reports what a delete did.
type Deleted struct {
	// VersionID is the S3 version ID of the version removed or of the
	// delete marker written; "" if nothing was, or if an unversioned
	// object was removed.
	VersionID string
	// DeleteMarker reports that the version removed, or written, is a
	// delete marker.
	DeleteMarker bool
	// Err is the error the ref's Check returned; nothing was written for
	// the ref then.
	Err error
}

// VersionRef names a version to delete: VersionID "" means the latest (a
// delete marker in a versioned bucket).
type VersionRef struct {
	Key, VersionID string
	// Check, if not nil, makes the delete conditional. It is called under
	// the key's lock, before anything is written for the ref, with the
	// version the delete acts on: the version named, or without a version
	// ID the latest one (the current object, or the delete marker on top
	// of the key's history). If there is no such version, Check is not
	// called and nothing is written for the ref (not even a delete
	// marker). An error from Check fails the ref alone: it is returned in
	// Deleted.Err and nothing is written for the ref.
	Check func(target *Object) error
}

// deleteRef applies one delete to the batch, under bucket versioning v,
// reading the key's state through the batch.
func (w *writer) deleteRef(bucket string, v Versioning, ref VersionRef) (Deleted, error) {
	if ref.VersionID != "" {
		return w.deleteVersion(bucket, ref.Key, ref.VersionID, ref.Check)
	}
	cur, err := readCurrent(w.r, bucket, ref.Key)
	if err != nil {
		return Deleted{}, err
	}
	if ref.Check != nil {
		target := cur
		if target == nil && v != Unversioned {
			top, err := topHistory(w.r, bucket, ref.Key)
			if err != nil {
				return Deleted{}, err
			}
			if top != nil && top.DeleteMarker {
				target = top
			}
		}
		if target == nil {
			return Deleted{}, nil
		}
		if err := ref.Check(target); err != nil {
			return Deleted{Err: err}, nil
		}
	}
	if v == Unversioned {
		if cur != nil {
			w.deleteObject(bucket, ref.Key, cur)
			w.garbage(cur.VersionID, cur.Blocks, nil)
		}
		return Deleted{}, nil
	}
	m := &Object{DeleteMarker: true, Modified: w.now}
	if err := w.putVersion(bucket, ref.Key, v, cur, m); err != nil {
		return Deleted{}, err
	}
	return Deleted{VersionID: m.S3VersionID(), DeleteMarker: true}, nil
}

// deleteVersion removes the version of bucket/key whose S3 version ID is
// id, if there is one and check (if not nil) accepts it, and promotes the
// next version if the removed one was the latest.
func (w *writer) deleteVersion(bucket, key, id string, check func(*Object) error) (Deleted, error) {
	cur, err := readCurrent(w.r, bucket, key)
	if err != nil {
		return Deleted{}, err
	}
	var target *Object
	current := false
	switch {
	case cur != nil && cur.S3VersionID() == id:
		target, current = cur, true
	case id == NullVersionID:
		target, err = w.findNull(bucket, key)
	default:
		target, err = historyByID(w.r, bucket, key, id)
	}
	if err != nil || target == nil {
		return Deleted{}, err
	}
	if check != nil {
		if err := check(target); err != nil {
			return Deleted{Err: err}, nil
		}
	}
	if current {
		w.deleteObject(bucket, key, cur)
	} else {
		w.deleteHistory(bucket, key, target)
	}
	w.garbage(target.VersionID, target.Blocks, nil)
	if current || cur == nil {
		// The removed version may have been the latest: if the key has
		// no current object now, its newest version becomes current
		// unless that is a delete marker.
		top, err := topHistory(w.r, bucket, key)
		if err != nil {
			return Deleted{}, err
		}
		if top != nil && !top.DeleteMarker {
			if err := w.promote(bucket, key, top); err != nil {
				return Deleted{}, err
			}
		}
	}
	return Deleted{VersionID: id, DeleteMarker: target.DeleteMarker}, nil
}

// DeleteVersions applies up to 1000 deletes to bucket in one batch (one
// fsync) and returns what each did, in order. A ref without a version ID
// deletes the latest version: removing the object of an unversioned
// bucket, writing a delete marker in a versioned one. A ref with one
// removes that version for good (deleting an absent version does nothing).
// A ref with a Check is conditional (see VersionRef). The stripes of every
// key involved are held together, in ascending order. It returns
// ErrNoBucket if the bucket does not exist.
func (db *DB) DeleteVersions(ctx context.Context, bucket string, refs []VersionRef, now time.Time) ([]Deleted, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	bmu := db.bucketLock(bucket)
	bmu.RLock()
	defer bmu.RUnlock()
	tx := db.kv.begin(ctx)
	defer tx.end()
	tx.lockBucket(bucket, false)
	v, err := db.bucketVersioning(tx, bucket)
	if err != nil {
		return nil, err
	}
	keys := make([]string, len(refs))
	indexed := v != Unversioned
	for i, r := range refs {
		keys[i] = r.Key
		if r.VersionID != "" || r.Check != nil {
			indexed = true
		}
	}
	unlock := db.lockKeys(tx, bucket, keys)
	defer unlock()

	out := make([]Deleted, len(refs))
	if !indexed {
		return out, db.deleteCurrent(tx, bucket, keys, now)
	}
	w := db.newIndexedWriter(tx, now)
	defer w.close()
	for i, r := range refs {
		if out[i], err = w.deleteRef(bucket, v, r); err != nil {
			return nil, err
		}
	}
	if err := w.commit(); err != nil {
		return nil, fmt.Errorf("meta: commit delete of %d versions in %s: %w", len(refs), bucket, err)
	}
	return out, nil
}

// ObjectVersion returns the version of bucket/key with S3 version ID id
// and whether it is the current version (its inline data is then read
// with ObjectData, else with VersionData). It returns ErrNotFound if there
// is no such version. The object and history tables are read from one
// snapshot: a version that moves between them meanwhile (made current by
// deleting the one above it) is found in one or the other.
func (db *DB) ObjectVersion(ctx context.Context, bucket, key, id string) (Object, bool, error) {
	if err := ctx.Err(); err != nil {
		return Object{}, false, err
	}
	var o *Object
	var current bool
	err := db.inSnapshot(func(r kvReader) error {
		cur, err := readCurrent(r, bucket, key)
		if err != nil || cur != nil && cur.S3VersionID() == id {
			o, current = cur, true
			return err
		}
		betweenReads()
		if id == NullVersionID {
			o, err = findNull(r, bucket, key)
		} else {
			o, err = historyByID(r, bucket, key, id)
		}
		return err
	})
	if err != nil {
		return Object{}, false, err
	}
	if o == nil {
		return Object{}, false, ErrNotFound
	}
	return *o, current, nil
}

// VersionData reads the inline data of rec, a noncurrent version of
// bucket/key that ObjectVersion returned, into buf's memory, like
// ObjectData. It returns ErrNotFound if the version is no longer in the
// history (it was deleted, or became current again): the caller reads the
// version again.
func (db *DB) VersionData(ctx context.Context, bucket, key string, rec *Object, buf []byte) (data, b []byte, err error) {
	if err := ctx.Err(); err != nil {
		return nil, buf, err
	}
	hid := historyID(rec)
	v, err := db.kv.get(historyKey(nil, tableOldData, bucket, key, hid), buf)
	if err == nil {
		id, data, err := decodeData(v)
		if err != nil {
			return nil, v, fmt.Errorf("meta: data of version %s of %s/%s: %w", rec.VersionID, bucket, key, err)
		}
		if string(id) == rec.VersionID {
			return data, v, nil
		}
		return nil, v, ErrNotFound
	}
	if !errors.Is(err, ErrNotFound) {
		return nil, v, fmt.Errorf("meta: read data of version %s of %s/%s: %w", rec.VersionID, bucket, key, err)
	}
	// Gone, or corrupt: it is corrupt only if the record is still there.
	if _, gerr := db.kv.get(historyKey(nil, tableHistory, bucket, key, hid), nil); gerr == nil {
		return nil, v, fmt.Errorf("meta: version %s of %s/%s: %w", rec.VersionID, bucket, key, errMissingData)
	}
	return nil, v, ErrNotFound
}

// LatestDeleteMarker returns the delete marker that is the latest version
// of bucket/key, which has no current object; ErrNotFound if the key's
// latest version is not a delete marker (or it has none). A GET of such a
// key answers 404 with the marker's version ID.
func (db *DB) LatestDeleteMarker(ctx context.Context, bucket, key string) (Object, error) {
	if err := ctx.Err(); err != nil {
		return Object{}, err
	}
	var top *Object
	err := db.inSnapshot(func(r kvReader) error {
		_, err := r.get(objectKey(nil, bucket, key), nil)
		if err == nil || !errors.Is(err, ErrNotFound) {
			return err // a current object: no marker is latest
		}
		betweenReads()
		top, err = topHistory(r, bucket, key)
		return err
	})
	if err != nil {
		return Object{}, err
	}
	if top == nil || !top.DeleteMarker {
		return Object{}, ErrNotFound
	}
	return *top, nil
}

// SetVersioning sets bucket's versioning state. Writes into the bucket are
// held off while it does (it takes the bucket's lock exclusively), so every
// write sees one state from its start to its commit. It returns
// ErrNotFound if the bucket does not exist.
func (db *DB) SetVersioning(ctx context.Context, bucket string, v Versioning) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if v > VersioningSuspended {
		return fmt.Errorf("meta: unknown versioning state %d", v)
	}
	mu := db.bucketLock(bucket)
	mu.Lock()
	defer mu.Unlock()
	tx := db.kv.begin(ctx)
	defer tx.end()
	tx.lockBucket(bucket, true)
	k := bucketKey(bucket)
	val, err := tx.get(k, nil)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return ErrNotFound
		}
		return fmt.Errorf("meta: read bucket %s: %w", bucket, err)
	}
	b, err := decodeBucket(bucket, val)
	if err != nil {
		return fmt.Errorf("meta: bucket %s: %w", bucket, err)
	}
	if b.Versioning == v {
		return nil
	}
	b.Versioning = v
	batch := tx.newBatch()
	defer batch.close()
	batch.set(k, appendBucket(nil, &b))
	if err := batch.commit(db.sync); err != nil {
		return fmt.Errorf("meta: commit versioning of %s: %w", bucket, err)
	}
	return nil
}

// ModifyFunc changes the record of a version in place: its tags or its
// ACL. It must not change anything that describes the version's data or
// place (ID, size, blocks, flags); it runs under the key's lock and must
// do no I/O. An error aborts without writing.
type ModifyFunc func(o *Object) error

// ModifyVersion rewrites the record of the version of bucket/key with S3
// version ID id ("" for the current version) as fn changes it, where it is
// (current or noncurrent): no new version, no change of usage. It returns
// the record after fn, or ErrNotFound if there is no such version (with id
// "", also when the latest version is a delete marker), ErrNoBucket, or
// fn's error. A delete marker named by ID is passed to fn, which decides.
func (db *DB) ModifyVersion(ctx context.Context, bucket, key, id string, fn ModifyFunc) (Object, error) {
	if err := ctx.Err(); err != nil {
		return Object{}, err
	}
	bmu := db.bucketLock(bucket)
	bmu.RLock()
	defer bmu.RUnlock()
	tx := db.kv.begin(ctx)
	defer tx.end()
	tx.lockBucket(bucket, false)
	if err := db.checkBucket(tx, bucket); err != nil {
		return Object{}, err
	}
	kmu := db.keyLock(bucket, key)
	kmu.Lock()
	defer kmu.Unlock()
	tx.lockKey(bucket, key)

	cur, err := readCurrent(tx, bucket, key)
	if err != nil {
		return Object{}, err
	}
	var rec *Object
	current := false
	switch {
	case cur != nil && (id == "" || cur.S3VersionID() == id):
		rec, current = cur, true
	case id == "":
	case id == NullVersionID:
		rec, err = findNull(tx, bucket, key)
	default:
		rec, err = historyByID(tx, bucket, key, id)
	}
	if err != nil {
		return Object{}, err
	}
	if rec == nil {
		return Object{}, ErrNotFound
	}
	if err := fn(rec); err != nil {
		return Object{}, err
	}
	b := tx.newBatch()
	defer b.close()
	if current {
		// A version 1 record holds its inline data; the rewritten record
		// does not, so the data moves to the data key in the same batch.
		raw, err := tx.get(objectKey(nil, bucket, key), nil)
		if err != nil {
			return Object{}, fmt.Errorf("meta: read object %s/%s: %w", bucket, key, err)
		}
		if old, ver, err := decodeObjectVersion(raw, objectFull); err == nil && ver == objectV1 && len(old.Inline) > 0 {
			b.setJoined(dataKey(nil, bucket, key), appendDataHeader(nil, rec.VersionID), old.Inline)
		}
		b.set(objectKey(nil, bucket, key), appendObject(nil, rec))
	} else {
		b.set(historyKey(nil, tableHistory, bucket, key, historyID(rec)), appendObject(nil, rec))
	}
	if err := b.commit(db.sync); err != nil {
		return Object{}, fmt.Errorf("meta: commit version of %s/%s: %w", bucket, key, err)
	}
	return *rec, nil
}
