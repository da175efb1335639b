package meta

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// CreateBucket creates b. It returns ErrConflict if the bucket exists.
func (db *DB) CreateBucket(ctx context.Context, b Bucket) error {
	return db.CreateBucketWith(ctx, b, nil)
}

// CreateBucketWith creates b with configuration documents (by name, see
// PutBucketConfig) in the same batch, so that a bucket never exists
// without them (an ACL given at creation, say). It returns ErrConflict if
// the bucket exists.
func (db *DB) CreateBucketWith(ctx context.Context, b Bucket, configs map[string][]byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	mu := db.bucketLock(b.Name)
	mu.Lock()
	defer mu.Unlock()
	tx := db.kv.begin(ctx)
	defer tx.end()
	tx.lockBucket(b.Name, true)
	k := bucketKey(b.Name)
	_, err := tx.get(k, nil)
	if err == nil {
		return ErrConflict
	}
	if !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("meta: read bucket %s: %w", b.Name, err)
	}
	batch := tx.newBatch()
	defer batch.close()
	batch.set(k, appendBucket(nil, &b))
	// An explicit zero, replacing whatever a bucket of the same name left
	// (DeleteBucket removes it, so nothing should be there).
	batch.set(usageKey(nil, b.Name), appendUsage(nil, Usage{}))
	for name, doc := range configs {
		if name == "" || doc == nil {
			return fmt.Errorf("meta: bucket %s: configuration %q without a document", b.Name, name)
		}
		batch.set(configKey(b.Name, name), doc)
	}
	if err := batch.commit(db.sync); err != nil {
		return fmt.Errorf("meta: commit bucket %s: %w", b.Name, err)
	}
	return nil
}

// Bucket returns the record of bucket name, or ErrNotFound.
func (db *DB) Bucket(ctx context.Context, name string) (Bucket, error) {
	if err := ctx.Err(); err != nil {
		return Bucket{}, err
	}
	v, err := db.kv.get(bucketKey(name), nil)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return Bucket{}, ErrNotFound
		}
		return Bucket{}, fmt.Errorf("meta: read bucket %s: %w", name, err)
	}
	b, err := decodeBucket(name, v)
	if err != nil {
		return Bucket{}, fmt.Errorf("meta: bucket %s: %w", name, err)
	}
	return b, nil
}

// Buckets returns all buckets in name order.
func (db *DB) Buckets(ctx context.Context) ([]Bucket, error) {
	it, err := db.kv.newIter([]byte{tableBucket}, []byte{tableBucket + 1})
	if err != nil {
		return nil, fmt.Errorf("meta: list buckets: %w", err)
	}
	var out []Bucket
	for ok := it.first(); ok; ok = it.next() {
		if err := ctx.Err(); err != nil {
			return nil, errors.Join(err, it.close())
		}
		name := string(it.key()[1:])
		v, err := it.value()
		if err != nil {
			return nil, errors.Join(fmt.Errorf("meta: list buckets: %w", err), it.close())
		}
		b, err := decodeBucket(name, v)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("meta: bucket %s: %w", name, err), it.close())
		}
		out = append(out, b)
	}
	if err := it.close(); err != nil {
		return nil, fmt.Errorf("meta: list buckets: %w", err)
	}
	return out, nil
}

// DeleteBucket removes bucket name if it holds no object version and no
// delete marker. Multipart
// uploads in progress do not keep a bucket alive, as in S3: they are
// aborted in the same batch and their parts' blocks queued as garbage
// (timestamped now). It returns ErrNotFound or ErrBucketNotEmpty.
func (db *DB) DeleteBucket(ctx context.Context, name string, now time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	mu := db.bucketLock(name)
	mu.Lock()
	defer mu.Unlock()
	tx := db.kv.begin(ctx)
	defer tx.end()
	tx.lockBucket(name, true)
	k := bucketKey(name)
	if _, err := tx.get(k, nil); err != nil {
		if errors.Is(err, ErrNotFound) {
			return ErrNotFound
		}
		return fmt.Errorf("meta: read bucket %s: %w", name, err)
	}
	// Noncurrent versions and delete markers keep a bucket as its objects
	// do, as in S3.
	for _, t := range []byte{tableObject, tableHistory} {
		empty, err := emptyRange(tx, bucketPrefix(t, name))
		if err != nil {
			return fmt.Errorf("meta: check bucket %s: %w", name, err)
		}
		if !empty {
			return ErrBucketNotEmpty
		}
	}
	uploads, err := db.bucketUploads(ctx, tx, name)
	if err != nil {
		return err
	}
	// CreateUpload and CompleteUpload hold the bucket lock, but PutPart
	// holds only its key's lock: take those (in stripe order, after the
	// bucket lock, as every writer does) so no part lands after its upload
	// is gone.
	unlock := db.lockKeyStripes(tx, uploads)
	defer unlock()
	w := db.newWriter(tx, now)
	defer w.close()
	for _, u := range uploads {
		parts, err := db.allParts(ctx, tx, u.ID)
		if err != nil {
			return err
		}
		w.deleteUpload(u, parts, nil)
	}
	configs, err := db.bucketConfigNames(tx, name)
	if err != nil {
		return fmt.Errorf("meta: read configurations of %s: %w", name, err)
	}
	for _, c := range configs {
		w.b.delete(configKey(name, c))
	}
	w.b.delete(k)
	w.b.delete(policyKey(name))
	w.deleteUsage(name)
	if err := w.commit(); err != nil {
		return fmt.Errorf("meta: delete bucket %s: %w", name, err)
	}
	return nil
}

// bucketUploads returns every upload in progress in bucket, read through
// r.
func (db *DB) bucketUploads(ctx context.Context, r kvReader, bucket string) ([]*Upload, error) {
	var out []*Upload
	opt := UploadListOptions{Limit: 1000}
	for {
		page, more, err := db.listUploads(ctx, r, bucket, opt)
		if err != nil {
			return nil, err
		}
		for _, e := range page {
			if e.Upload != nil {
				out = append(out, e.Upload)
				opt.KeyMarker, opt.UploadIDMarker = e.Upload.Key, e.Upload.ID
			}
		}
		if !more || len(page) == 0 {
			return out, nil
		}
	}
}

// lockKeyStripes locks the key stripes of uploads in ascending order, each
// once, then their keys' locks in tx, and returns the function that
// unlocks the stripes.
func (db *DB) lockKeyStripes(tx kvTx, uploads []*Upload) func() {
	stripes := make([]int, 0, len(uploads))
	for _, u := range uploads {
		stripes = append(stripes, db.keyStripe(u.Bucket, u.Key))
	}
	slices.Sort(stripes)
	stripes = slices.Compact(stripes)
	for _, i := range stripes {
		db.keyMu[i].Lock()
	}
	if len(uploads) > 0 {
		keys := make([]string, len(uploads))
		for i, u := range uploads {
			keys[i] = u.Key
		}
		tx.lockKeys(uploads[0].Bucket, keys)
	}
	return func() {
		for _, i := range stripes {
			db.keyMu[i].Unlock()
		}
	}
}

// emptyRange reports whether no key has prefix p, read through r.
func emptyRange(r kvReader, p []byte) (bool, error) {
	it, err := r.newIter(p, successor(p))
	if err != nil {
		return false, err
	}
	found := it.first()
	return !found, it.close()
}
