package meta

import (
	"context"
	"errors"
	"fmt"
)

// Two small tables hold access control, beside the object records so that
// they share the store's durability and, later, its replacement engine:
//
//	y bucket → the bucket's policy in iam's stored form: the document as
//	           PutBucketPolicy gave it, bound to the users it names
//	i        → the IAM state document (users, keys, groups, policies)
//
// Both are opaque bytes here; iam owns their meaning and encryption.
const (
	tablePolicy = 'y'
	tableIAM    = 'i'
)

// policyKey returns the key of bucket's policy.
func policyKey(bucket string) []byte {
	k := make([]byte, 0, 1+len(bucket))
	k = append(k, tablePolicy)
	return append(k, bucket...)
}

// PutBucketPolicy stores doc as bucket's policy, replacing any. It returns
// ErrNoBucket if the bucket does not exist. DeleteBucket removes the policy
// with the bucket, so a bucket created again under the name starts without
// one.
func (db *DB) PutBucketPolicy(ctx context.Context, bucket string, doc []byte) error {
	return db.putBucketDoc(ctx, bucket, policyKey(bucket), "policy", doc)
}

// DeleteBucketPolicy removes bucket's policy; removing none is not an
// error. It returns ErrNoBucket if the bucket does not exist.
func (db *DB) DeleteBucketPolicy(ctx context.Context, bucket string) error {
	return db.putBucketDoc(ctx, bucket, policyKey(bucket), "policy", nil)
}

// BucketPolicy returns bucket's policy, or nil if it has none. It returns
// ErrNoBucket if the bucket does not exist.
func (db *DB) BucketPolicy(ctx context.Context, bucket string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	mu := db.bucketLock(bucket)
	mu.RLock()
	defer mu.RUnlock()
	if err := db.checkBucket(db.kv, bucket); err != nil {
		return nil, err
	}
	v, err := db.kv.get(policyKey(bucket), nil)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("meta: read policy of %s: %w", bucket, err)
	}
	return v, nil
}

// BucketPolicies returns every bucket policy, by bucket name.
func (db *DB) BucketPolicies(ctx context.Context) (map[string][]byte, error) {
	it, err := db.kv.newIter([]byte{tablePolicy}, []byte{tablePolicy + 1})
	if err != nil {
		return nil, fmt.Errorf("meta: list policies: %w", err)
	}
	out := make(map[string][]byte)
	for ok := it.first(); ok; ok = it.next() {
		if err := ctx.Err(); err != nil {
			return nil, errors.Join(err, it.close())
		}
		v, err := it.value()
		if err != nil {
			return nil, errors.Join(fmt.Errorf("meta: list policies: %w", err), it.close())
		}
		out[string(it.key()[1:])] = append([]byte(nil), v...)
	}
	if err := it.close(); err != nil {
		return nil, fmt.Errorf("meta: list policies: %w", err)
	}
	return out, nil
}

// IAMState returns the stored IAM document, or nil if none was saved.
func (db *DB) IAMState(ctx context.Context) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	v, err := db.kv.get([]byte{tableIAM}, nil)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("meta: read iam state: %w", err)
	}
	return v, nil
}

// PutIAMState replaces the IAM document durably. Callers serialize their
// read-modify-write cycles themselves.
func (db *DB) PutIAMState(ctx context.Context, doc []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b := db.kv.newBatch()
	defer b.close()
	b.set([]byte{tableIAM}, doc)
	if err := b.commit(db.sync); err != nil {
		return fmt.Errorf("meta: write iam state: %w", err)
	}
	return nil
}

// iamLockBucket names the lock of the IAM state document: no bucket name
// holds a 0x00 byte.
const iamLockBucket = "\x00iam"

// UpdateIAMState replaces the IAM document with what fn makes of the
// stored one (nil if none was saved), under a lock that every node of a
// shared store respects: concurrent changes through different nodes are
// serialised, so none is lost. fn may be called with a document another
// node wrote since this one last read it; its error aborts the update.
func (db *DB) UpdateIAMState(ctx context.Context, fn func(old []byte) ([]byte, error)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	mu := db.keyLock(iamLockBucket, "")
	mu.Lock()
	defer mu.Unlock()
	tx := db.kv.begin(ctx)
	defer tx.end()
	tx.lockKey(iamLockBucket, "")
	old, err := tx.get([]byte{tableIAM}, nil)
	switch {
	case errors.Is(err, ErrNotFound):
		old = nil
	case err != nil:
		return fmt.Errorf("meta: read iam state: %w", err)
	}
	doc, err := fn(old)
	if err != nil {
		return err
	}
	b := tx.newBatch()
	defer b.close()
	b.set([]byte{tableIAM}, doc)
	if err := b.commit(db.sync); err != nil {
		return fmt.Errorf("meta: write iam state: %w", err)
	}
	return nil
}
