package meta

import (
	"context"
	"errors"
	"fmt"
)

// CreateBucket creates b. It returns ErrConflict if the bucket exists.
func (db *DB) CreateBucket(ctx context.Context, b Bucket) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	mu := db.bucketLock(b.Name)
	mu.Lock()
	defer mu.Unlock()
	k := bucketKey(b.Name)
	_, err := db.kv.get(k, nil)
	if err == nil {
		return ErrConflict
	}
	if !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("meta: read bucket %s: %w", b.Name, err)
	}
	batch := db.kv.newBatch()
	defer batch.close()
	batch.set(k, appendBucket(nil, &b))
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

// DeleteBucket removes bucket name. It returns ErrNotFound if it does not
// exist and ErrBucketNotEmpty if it holds objects or multipart uploads. It
// holds the bucket's stripe exclusively, so no write can commit into the
// bucket while it is checked and removed.
func (db *DB) DeleteBucket(ctx context.Context, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	mu := db.bucketLock(name)
	mu.Lock()
	defer mu.Unlock()
	k := bucketKey(name)
	if _, err := db.kv.get(k, nil); err != nil {
		if errors.Is(err, ErrNotFound) {
			return ErrNotFound
		}
		return fmt.Errorf("meta: read bucket %s: %w", name, err)
	}
	for _, t := range []byte{tableObject, tableUpload} {
		empty, err := db.emptyRange(bucketPrefix(t, name))
		if err != nil {
			return fmt.Errorf("meta: check bucket %s: %w", name, err)
		}
		if !empty {
			return ErrBucketNotEmpty
		}
	}
	batch := db.kv.newBatch()
	defer batch.close()
	batch.delete(k)
	if err := batch.commit(db.sync); err != nil {
		return fmt.Errorf("meta: delete bucket %s: %w", name, err)
	}
	return nil
}

// emptyRange reports whether no key has prefix p.
func (db *DB) emptyRange(p []byte) (bool, error) {
	it, err := db.kv.newIter(p, successor(p))
	if err != nil {
		return false, err
	}
	found := it.first()
	return !found, it.close()
}
