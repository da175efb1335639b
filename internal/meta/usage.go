package meta

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
)

// Usage accounting. Every bucket has one key in the usage table,
//
//	c bucket → usage value
//
// holding what the bucket stores: its objects (every stored version,
// current or noncurrent, but no delete marker), their bytes, and the
// multipart uploads in progress with the bytes of their parts. Every batch
// that changes those records also adds its change to the bucket's usage,
// so the counters are exactly as durable as the records: a crash loses
// both or neither.
//
// The change is added with a merge (Pebble's Merge), not a
// read-modify-write, so that writers of one bucket, which hold only their
// own key's lock and share fsyncs through group commit, do not serialise
// on the bucket's usage key. A usage value is therefore a sequence of
// records whose meaning is their sum; the merge operator sums them, and
// concatenating two values (what Pebble's default merger would do) keeps
// their meaning. See usageMerger, the merger in pebble.go, and
// docs/design/0001-storage-engine.md.
//
// The table sorts right after the bucket records and before every other
// table, on purpose. Each write batch puts the usage key in the memtable
// beside the object's keys, so every sstable flushed from it spans from its
// usage key to its highest object key. Were the usage table after the
// object table (the first draft used 's'), every sstable would span every
// object key, and the point read each PUT makes of its own (usually new)
// key would consult every sstable instead of the few whose key range holds
// it: 30-37 % more CPU per PUT of ascending keys without fsync. Between the
// bucket records and the data it widens no range that reads of a new key
// fall in, and it keeps the bucket records (read by every write) out of
// those ranges too.
const tableUsage = 'c' // c bucket → usage value

// Usage is what a bucket holds. Sizes are logical: the bytes clients
// stored, not what the store spends on them.
type Usage struct {
	// Objects are the versions in the bucket, current and noncurrent;
	// delete markers are not counted (a bucket of delete markers alone has
	// none, yet DeleteBucket refuses it as not empty).
	Objects   int64
	Bytes     int64 // sum of their sizes
	Uploads   int64 // multipart uploads in progress
	PartBytes int64 // sum of the sizes of their uploaded parts
}

// add returns u + d, wrapping on overflow (so that sums are associative and
// commutative whatever the operands, as the merge operator needs).
func (u Usage) add(d Usage) Usage {
	return Usage{
		Objects:   u.Objects + d.Objects,
		Bytes:     u.Bytes + d.Bytes,
		Uploads:   u.Uploads + d.Uploads,
		PartBytes: u.PartBytes + d.PartBytes,
	}
}

// sub returns u - d.
func (u Usage) sub(d Usage) Usage {
	return Usage{
		Objects:   u.Objects - d.Objects,
		Bytes:     u.Bytes - d.Bytes,
		Uploads:   u.Uploads - d.Uploads,
		PartBytes: u.PartBytes - d.PartBytes,
	}
}

// BucketUsage is a bucket with its usage.
type BucketUsage struct {
	Bucket
	Usage Usage
	// UsageErr is why Usage is not known, and zero: the bucket's stored
	// usage does not decode (an error wrapping errCorrupt, which only
	// corruption or a bug makes; CheckUsage with repair resets the
	// value). It is nil when Usage is the bucket's.
	UsageErr error
}

// usageKey appends the key of bucket's usage to dst.
func usageKey(dst []byte, bucket string) []byte {
	dst = append(dst, tableUsage)
	return append(dst, bucket...)
}

// A usage value is one or more records, each a tag byte followed by the
// tag's fixed number of big-endian two's-complement int64 fields. Version 1
// records hold the four fields of Usage in order. A value means the sum of
// its records, so that the concatenation of two values means the sum of
// theirs; a new field would get a new tag, and decoders sum what they know.
const (
	usageTagV1  = 1
	usageFields = 4
	usageRecLen = 1 + 8*usageFields
)

// appendUsage appends the one-record encoding of u to b.
func appendUsage(b []byte, u Usage) []byte {
	b = append(b, usageTagV1)
	for _, f := range [usageFields]int64{u.Objects, u.Bytes, u.Uploads, u.PartBytes} {
		b = binary.BigEndian.AppendUint64(b, uint64(f))
	}
	return b
}

// errBadUsage is wrapped (with errCorrupt) by decodeUsage.
var errBadUsage = errors.New("malformed usage value")

// decodeUsage returns the sum of the records of v, or an error wrapping
// errCorrupt if v is not a sequence of whole known records. An empty value
// is corrupt: every write of a usage key has at least one record.
func decodeUsage(v []byte) (Usage, error) {
	var u Usage
	n, err := sumUsage(v, &u)
	if err != nil {
		return Usage{}, err
	}
	if n == 0 {
		return Usage{}, fmt.Errorf("%w: %w: empty", errCorrupt, errBadUsage)
	}
	return u, nil
}

// sumUsage adds the records of v to *u and returns how many there were. On
// error *u holds the sum of the records before the bad one.
func sumUsage(v []byte, u *Usage) (int, error) {
	n := 0
	for len(v) > 0 {
		if v[0] != usageTagV1 {
			return n, fmt.Errorf("%w: %w: unknown record tag %d", errCorrupt, errBadUsage, v[0])
		}
		if len(v) < usageRecLen {
			return n, fmt.Errorf("%w: %w: record of %d bytes, want %d", errCorrupt, errBadUsage, len(v), usageRecLen)
		}
		*u = u.add(Usage{
			Objects:   int64(binary.BigEndian.Uint64(v[1:])),
			Bytes:     int64(binary.BigEndian.Uint64(v[9:])),
			Uploads:   int64(binary.BigEndian.Uint64(v[17:])),
			PartBytes: int64(binary.BigEndian.Uint64(v[25:])),
		})
		v = v[usageRecLen:]
		n++
	}
	return n, nil
}

// usageMerger sums merge operands of a usage key. It never fails: an
// operand that does not decode (which only corruption or a bug can make)
// is kept verbatim after the sum, so a compaction goes on, nothing is
// lost, and readers of the key report the corruption, which CheckUsage
// with repair fixes. Operands are summed as they arrive; their order does
// not matter.
type usageMerger struct {
	sum Usage
	bad []byte // undecodable operands, concatenated
}

func newUsageMerger(value []byte) *usageMerger {
	m := &usageMerger{}
	m.add(value)
	return m
}

func (m *usageMerger) add(v []byte) {
	var u Usage
	if _, err := sumUsage(v, &u); err != nil {
		m.bad = append(m.bad, v...)
		return
	}
	m.sum = m.sum.add(u)
}

// MergeNewer and MergeOlder add an operand: summing is commutative.
func (m *usageMerger) MergeNewer(v []byte) error { m.add(v); return nil }
func (m *usageMerger) MergeOlder(v []byte) error { m.add(v); return nil }

// result returns the merged value: one record, then any undecodable
// operands.
func (m *usageMerger) result() []byte {
	return append(appendUsage(make([]byte, 0, usageRecLen+len(m.bad)), m.sum), m.bad...)
}

// count adds d to bucket's usage change in this batch.
func (w *writer) count(bucket string, d Usage) {
	for i := range w.usage {
		if w.usage[i].bucket == bucket {
			w.usage[i].d = w.usage[i].d.add(d)
			return
		}
	}
	w.usage = append(w.usage, usageDelta{bucket: bucket, d: d})
}

// usageDelta is a pending change of one bucket's usage.
type usageDelta struct {
	bucket string
	d      Usage
}

// deleteUsage deletes bucket's usage key and repair generation (with the
// bucket) and drops any change counted for it in this batch, which would
// otherwise be merged after the delete and leave a usage key behind.
func (w *writer) deleteUsage(bucket string) {
	for i := range w.usage {
		if w.usage[i].bucket == bucket {
			w.usage = append(w.usage[:i], w.usage[i+1:]...)
			break
		}
	}
	w.b.delete(usageKey((*w.buf)[:0], bucket))
	w.b.delete(repairGenKey(bucket))
}

// flushUsage adds the batch's usage changes to it as merges. commit calls
// it, so that every batch counts what it changes.
func (w *writer) flushUsage() {
	for _, u := range w.usage {
		if u.d == (Usage{}) {
			continue
		}
		k := usageKey((*w.buf)[:0], u.bucket)
		v := appendUsage(k, u.d)
		w.b.merge(v[:len(k)], v[len(k):])
		*w.buf = v
	}
	w.usage = w.usage[:0]
}

// objectUsage is what object o (nil if absent) counts for: every stored
// version counts, current or not (so an overwrite in a versioned bucket
// adds one object and the new size); a delete marker counts nothing.
func objectUsage(o *Object) Usage {
	if o == nil || o.DeleteMarker {
		return Usage{}
	}
	return Usage{Objects: 1, Bytes: o.Size}
}

// BucketUsage returns bucket name with its usage, or ErrNotFound. The
// record and the usage are read from one snapshot. If the usage does not
// decode, UsageErr says so.
func (db *DB) BucketUsage(ctx context.Context, name string) (BucketUsage, error) {
	if err := ctx.Err(); err != nil {
		return BucketUsage{}, err
	}
	bk, uk := bucketKey(name), usageKey(nil, name)
	it, err := db.kv.newIter(bk, successor(uk))
	if err != nil {
		return BucketUsage{}, fmt.Errorf("meta: read usage of %s: %w", name, err)
	}
	bu, found, err := readBucketUsage(it, name, bk, uk)
	if cerr := it.close(); err == nil && cerr != nil {
		err = fmt.Errorf("meta: read usage of %s: %w", name, cerr)
	}
	if err == nil && !found {
		err = ErrNotFound
	}
	return bu, err
}

// readBucketUsage reads bucket name's record (key bk) and usage (key uk)
// with it.
func readBucketUsage(it kvIter, name string, bk, uk []byte) (BucketUsage, bool, error) {
	if !it.seekGE(bk) || !bytes.Equal(it.key(), bk) {
		return BucketUsage{}, false, nil
	}
	v, err := it.value()
	if err != nil {
		return BucketUsage{}, false, fmt.Errorf("meta: read bucket %s: %w", name, err)
	}
	b, err := decodeBucket(name, v)
	if err != nil {
		return BucketUsage{}, false, fmt.Errorf("meta: bucket %s: %w", name, err)
	}
	bu := BucketUsage{Bucket: b}
	if !it.seekGE(uk) || !bytes.Equal(it.key(), uk) {
		return bu, true, nil // a bucket without usage holds nothing
	}
	if v, err = it.value(); err != nil {
		return BucketUsage{}, false, fmt.Errorf("meta: usage of %s: %w", name, err)
	}
	bu.setUsage(v)
	return bu, true, nil
}

// setUsage sets bu's usage from the stored value v, or UsageErr if v does
// not decode: one corrupt value must not hide every bucket's usage (the
// listing, the storage metrics).
func (bu *BucketUsage) setUsage(v []byte) {
	u, err := decodeUsage(v)
	if err != nil {
		bu.Usage, bu.UsageErr = Usage{}, fmt.Errorf("meta: usage of %s: %w", bu.Name, err)
		return
	}
	bu.Usage = u
}

// BucketsUsage returns every bucket with its usage, in name order, read
// from one snapshot. A bucket whose usage does not decode is listed with
// UsageErr set.
func (db *DB) BucketsUsage(ctx context.Context) ([]BucketUsage, error) {
	it, err := db.kv.newIter([]byte{tableBucket}, []byte{tableUsage + 1})
	if err != nil {
		return nil, fmt.Errorf("meta: list usage: %w", err)
	}
	out, err := scanBucketsUsage(ctx, it)
	if cerr := it.close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("meta: list usage: %w", err)
	}
	return out, nil
}

// scanBucketsUsage reads the bucket table, then the usage table after it,
// and joins the two, both being in name order.
func scanBucketsUsage(ctx context.Context, it kvIter) ([]BucketUsage, error) {
	var out []BucketUsage
	for ok := it.seekGE([]byte{tableBucket}); ok && it.key()[0] == tableBucket; ok = it.next() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		name := string(it.key()[1:])
		v, err := it.value()
		if err != nil {
			return nil, err
		}
		b, err := decodeBucket(name, v)
		if err != nil {
			return nil, fmt.Errorf("bucket %s: %w", name, err)
		}
		out = append(out, BucketUsage{Bucket: b})
	}
	i := 0
	for ok := it.seekGE([]byte{tableUsage}); ok && i < len(out); ok = it.next() {
		name := string(it.key()[1:])
		for i < len(out) && out[i].Name < name {
			i++
		}
		if i == len(out) || out[i].Name != name {
			continue // usage of no bucket: CheckUsage reports it
		}
		v, err := it.value()
		if err != nil {
			return nil, fmt.Errorf("usage of %s: %w", name, err)
		}
		out[i].setUsage(v)
	}
	return out, nil
}
