package meta

import (
	"bytes"
	"context"
	"errors"
	"fmt"
)

// Bucket configurations (CORS rules, lifecycle rules, bucket tags, …) are
// documents stored by name beside the bucket, opaque to meta:
//
//	f bucket 0x00 name → document
//
// The table sorts before the garbage table, outside every scan that reads
// records ([g, q) for GC, the tables of the usage count). DeleteBucket
// removes a bucket's documents with it, so a bucket created again under the
// name starts with none.
const tableConfig = 'f'

// configKey returns the key of bucket's configuration document name.
func configKey(bucket, name string) []byte {
	k := bucketPrefix(tableConfig, bucket)
	return append(k, name...)
}

// PutBucketConfig stores doc as bucket's configuration document name,
// replacing any; a nil doc deletes it (deleting none is not an error). It
// returns ErrNoBucket if the bucket does not exist; no document outlives
// its bucket (see putBucketDoc).
func (db *DB) PutBucketConfig(ctx context.Context, bucket, name string, doc []byte) error {
	if name == "" {
		return errors.New("meta: empty configuration name")
	}
	return db.putBucketDoc(ctx, bucket, configKey(bucket, name), name+" configuration", doc)
}

// putBucketDoc sets (doc != nil) or deletes the document of bucket under
// key: a configuration or the policy; what names it in an error. It
// returns ErrNoBucket if the bucket does not exist. The bucket's read lock
// excludes DeleteBucket, which takes it exclusively and removes the
// bucket's documents, so no document outlives its bucket.
func (db *DB) putBucketDoc(ctx context.Context, bucket string, key []byte, what string, doc []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	mu := db.bucketLock(bucket)
	mu.RLock()
	defer mu.RUnlock()
	tx := db.kv.begin(ctx)
	defer tx.end()
	tx.lockBucket(bucket, false)
	if err := db.checkBucket(tx, bucket); err != nil {
		return err
	}
	b := tx.newBatch()
	defer b.close()
	if doc == nil {
		b.delete(key)
	} else {
		b.set(key, doc)
	}
	if err := b.commit(db.sync); err != nil {
		return fmt.Errorf("meta: write %s of %s: %w", what, bucket, err)
	}
	return nil
}

// BucketConfig returns bucket's configuration document name, or
// ErrNotFound if it has none (or the bucket does not exist).
func (db *DB) BucketConfig(ctx context.Context, bucket, name string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	v, err := db.kv.get(configKey(bucket, name), nil)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("meta: read %s configuration of %s: %w", name, bucket, err)
	}
	return v, err
}

// BucketConfigs returns the configuration document name of every bucket
// that has one, by bucket name: what a background worker (lifecycle) or a
// cache (CORS) loads at once.
func (db *DB) BucketConfigs(ctx context.Context, name string) (map[string][]byte, error) {
	it, err := db.kv.newIter([]byte{tableConfig}, []byte{tableConfig + 1})
	if err != nil {
		return nil, fmt.Errorf("meta: read %s configurations: %w", name, err)
	}
	out := map[string][]byte{}
	for ok := it.first(); ok; ok = it.next() {
		if err := ctx.Err(); err != nil {
			return nil, errors.Join(err, it.close())
		}
		k := it.key()[1:]
		i := bytes.IndexByte(k, 0)
		if i < 0 {
			return nil, errors.Join(fmt.Errorf("meta: configuration key %q: %w", it.key(), errBadKey), it.close())
		}
		if string(k[i+1:]) != name {
			continue
		}
		v, err := it.value()
		if err != nil {
			return nil, errors.Join(err, it.close())
		}
		out[string(k[:i])] = bytes.Clone(v)
	}
	if err := it.close(); err != nil {
		return nil, fmt.Errorf("meta: read %s configurations: %w", name, err)
	}
	return out, nil
}

// bucketConfigNames returns the names of bucket's configuration documents,
// read through r.
func (db *DB) bucketConfigNames(r kvReader, bucket string) ([]string, error) {
	p := bucketPrefix(tableConfig, bucket)
	it, err := r.newIter(p, successor(p))
	if err != nil {
		return nil, err
	}
	var names []string
	for ok := it.first(); ok; ok = it.next() {
		names = append(names, string(it.key()[len(p):]))
	}
	return names, it.close()
}
