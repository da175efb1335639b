package meta

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// CreateUpload records a new multipart upload. u.ID must be UploadIDLen
// bytes. It returns ErrNoBucket if the bucket does not exist.
func (db *DB) CreateUpload(ctx context.Context, u Upload) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(u.ID) != UploadIDLen {
		return fmt.Errorf("meta: upload ID %q is not %d bytes", u.ID, UploadIDLen)
	}
	bmu := db.bucketLock(u.Bucket)
	bmu.RLock()
	defer bmu.RUnlock()
	tx := db.kv.begin(ctx)
	defer tx.end()
	tx.lockBucket(u.Bucket, false)
	if err := db.checkBucket(tx, u.Bucket); err != nil {
		return err
	}
	w := db.newWriter(tx, u.Initiated)
	defer w.close()
	w.b.set(uploadKey(u.Bucket, u.Key, u.ID), appendUpload((*w.buf)[:0], &u))
	w.count(u.Bucket, Usage{Uploads: 1})
	if err := w.commit(); err != nil {
		return fmt.Errorf("meta: commit upload %s: %w", u.ID, err)
	}
	return nil
}

// Upload returns the upload record, or ErrNotFound.
func (db *DB) Upload(ctx context.Context, bucket, key, id string) (Upload, error) {
	if err := ctx.Err(); err != nil {
		return Upload{}, err
	}
	u, err := db.upload(db.kv, bucket, key, id)
	if err != nil {
		return Upload{}, err
	}
	if u == nil {
		return Upload{}, ErrNotFound
	}
	return *u, nil
}

// upload reads an upload record through r, returning nil if it does not
// exist.
func (db *DB) upload(r kvReader, bucket, key, id string) (*Upload, error) {
	if len(id) != UploadIDLen {
		return nil, nil // never created: CreateUpload insists on the length
	}
	v, err := r.get(uploadKey(bucket, key, id), nil)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("meta: read upload %s: %w", id, err)
	}
	u, err := decodeUpload(bucket, key, id, v)
	if err != nil {
		return nil, fmt.Errorf("meta: upload %s: %w", id, err)
	}
	return &u, nil
}

// PutPart stores part p of upload id, replacing (and moving to the garbage
// queue the blocks of) any earlier part with that number. It returns
// ErrNotFound if the upload does not exist (never created, completed or
// aborted), checked atomically with the commit.
func (db *DB) PutPart(ctx context.Context, bucket, key, id string, p Part, now time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	kmu := db.keyLock(bucket, key)
	kmu.Lock()
	defer kmu.Unlock()
	tx := db.kv.begin(ctx)
	defer tx.end()
	tx.lockKey(bucket, key)
	u, err := db.upload(tx, bucket, key, id)
	if err != nil {
		return err
	}
	if u == nil {
		return ErrNotFound
	}
	pk := partKey(id, p.Number)
	w := db.newWriter(tx, now)
	defer w.close()
	old, err := tx.get(pk, nil)
	delta := p.Size
	switch {
	case err == nil:
		op, err := decodePart(p.Number, old)
		if err != nil {
			return fmt.Errorf("meta: part %d of upload %s: %w", p.Number, id, err)
		}
		keep := make(map[string]bool, len(p.Blocks))
		for _, b := range p.Blocks {
			keep[b.Key] = true
		}
		w.garbage("", op.Blocks, keep)
		delta -= op.Size
	case !errors.Is(err, ErrNotFound):
		return fmt.Errorf("meta: read part %d of upload %s: %w", p.Number, id, err)
	}
	w.b.set(pk, appendPart((*w.buf)[:0], &p))
	w.count(bucket, Usage{PartBytes: delta})
	if err := w.commit(); err != nil {
		return fmt.Errorf("meta: commit part %d of upload %s: %w", p.Number, id, err)
	}
	return nil
}

// Parts returns up to limit parts of upload id with numbers greater than
// after, in order, and whether more follow.
func (db *DB) Parts(ctx context.Context, id string, after, limit int) ([]Part, bool, error) {
	return db.partsPage(ctx, db.kv, id, after, limit)
}

// UploadParts returns the record of an upload and a page of its parts, as
// Parts, both read from one snapshot: an upload completed or aborted
// between the two reads would otherwise show no parts instead of being
// gone. It returns ErrNotFound if there is no such upload.
func (db *DB) UploadParts(ctx context.Context, bucket, key, id string, after, limit int) (Upload, []Part, bool, error) {
	if err := ctx.Err(); err != nil {
		return Upload{}, nil, false, err
	}
	var u *Upload
	var parts []Part
	var truncated bool
	err := db.inSnapshot(func(r kvReader) error {
		var err error
		if u, err = db.upload(r, bucket, key, id); err != nil || u == nil {
			return err
		}
		betweenReads()
		parts, truncated, err = db.partsPage(ctx, r, id, after, limit)
		return err
	})
	if err != nil {
		return Upload{}, nil, false, err
	}
	if u == nil {
		return Upload{}, nil, false, ErrNotFound
	}
	return *u, parts, truncated, nil
}

// partsPage is Parts, read through r.
func (db *DB) partsPage(ctx context.Context, r kvReader, id string, after, limit int) ([]Part, bool, error) {
	var out []Part
	truncated := false
	start := partKey(id, max(after, 0)+1)
	if after < 0 {
		start = partPrefix(id)
	}
	err := db.scanParts(ctx, r, id, start, func(p Part) bool {
		if len(out) >= limit {
			truncated = true
			return false
		}
		out = append(out, p)
		return true
	})
	return out, truncated, err
}

// scanParts calls fn for each part of upload id from key start on, read
// through r, until fn returns false.
func (db *DB) scanParts(ctx context.Context, r kvReader, id string, start []byte, fn func(Part) bool) error {
	pp := partPrefix(id)
	it, err := r.newIter(pp, successor(pp))
	if err != nil {
		return fmt.Errorf("meta: list parts of %s: %w", id, err)
	}
	for ok := it.seekGE(start); ok; ok = it.next() {
		if err := ctx.Err(); err != nil {
			return errors.Join(err, it.close())
		}
		p, err := decodePartEntry(it)
		if err != nil {
			return errors.Join(fmt.Errorf("meta: part of upload %s: %w", id, err), it.close())
		}
		if !fn(p) {
			break
		}
	}
	if err := it.close(); err != nil {
		return fmt.Errorf("meta: list parts of %s: %w", id, err)
	}
	return nil
}

// decodePartEntry decodes the part record under the iterator.
func decodePartEntry(it kvIter) (Part, error) {
	_, n, err := decodePartKey(it.key())
	if err != nil {
		return Part{}, err
	}
	v, err := it.value()
	if err != nil {
		return Part{}, err
	}
	return decodePart(n, v)
}

// CompleteFunc decides the object a CompleteUpload creates, from the upload,
// all its parts in number order and the current object (nil if absent). It
// returns the record to store or an error to abort without writing. Like
// UpdateFunc it runs under the object's lock and must do no I/O.
type CompleteFunc func(u *Upload, parts []Part, old *Object) (*Object, error)

// CompleteUpload atomically turns upload id into the object bucket/key: in
// one batch it stores the record fn returns as the latest version (as
// UpdateObject does: the version it replaces becomes noncurrent, or its
// blocks garbage, by the bucket's versioning), deletes the upload and all
// its parts, and moves to the garbage queue every part block the new
// record does not use. It returns
// ErrNotFound if the upload does not exist, ErrNoBucket if the bucket does
// not, and fn's error unchanged.
func (db *DB) CompleteUpload(ctx context.Context, bucket, key, id string, now time.Time, fn CompleteFunc) error {
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

	u, err := db.upload(tx, bucket, key, id)
	if err != nil {
		return err
	}
	if u == nil {
		return ErrNotFound
	}
	parts, err := db.allParts(ctx, tx, id)
	if err != nil {
		return err
	}
	old, err := db.object(tx, bucket, key)
	if err != nil {
		return err
	}
	nw, err := fn(u, parts, old)
	if err != nil {
		return err
	}
	if nw == nil || nw.DeleteMarker {
		return fmt.Errorf("meta: complete upload %s: no object record", id)
	}
	w := db.newWriterFor(tx, v, now)
	defer w.close()
	if err := w.putVersion(bucket, key, v, old, nw); err != nil {
		return err
	}
	w.deleteUpload(u, parts, blockSet(nw))
	if err := w.commit(); err != nil {
		return fmt.Errorf("meta: commit completion of upload %s: %w", id, err)
	}
	return nil
}

// AbortUpload deletes upload id and its parts, moving their blocks to the
// garbage queue. It returns ErrNotFound if the upload does not exist.
func (db *DB) AbortUpload(ctx context.Context, bucket, key, id string, now time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	kmu := db.keyLock(bucket, key)
	kmu.Lock()
	defer kmu.Unlock()
	tx := db.kv.begin(ctx)
	defer tx.end()
	tx.lockKey(bucket, key)
	u, err := db.upload(tx, bucket, key, id)
	if err != nil {
		return err
	}
	if u == nil {
		return ErrNotFound
	}
	parts, err := db.allParts(ctx, tx, id)
	if err != nil {
		return err
	}
	w := db.newWriter(tx, now)
	defer w.close()
	w.deleteUpload(u, parts, nil)
	if err := w.commit(); err != nil {
		return fmt.Errorf("meta: commit abort of upload %s: %w", id, err)
	}
	return nil
}

// allParts returns every part of upload id in part-number order, read
// through r.
func (db *DB) allParts(ctx context.Context, r kvReader, id string) ([]Part, error) {
	var parts []Part
	err := db.scanParts(ctx, r, id, partPrefix(id), func(p Part) bool {
		parts = append(parts, p)
		return true
	})
	return parts, err
}

// deleteUpload deletes u and its parts, queueing the parts' blocks that are
// not in keep, and uncounts them from the bucket's usage.
func (w *writer) deleteUpload(u *Upload, parts []Part, keep map[string]bool) {
	w.b.delete(uploadKey(u.Bucket, u.Key, u.ID))
	d := Usage{Uploads: -1}
	for i := range parts {
		w.b.delete(partKey(u.ID, parts[i].Number))
		w.garbage("", parts[i].Blocks, keep)
		d.PartBytes -= parts[i].Size
	}
	w.count(u.Bucket, d)
}
