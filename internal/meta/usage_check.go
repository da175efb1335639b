package meta

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"
)

// The format key records which one-time migrations a database has had:
//
//	v → format version (one byte)
//
// Version 1: the usage table is complete. A database without the key was
// written before usage accounting (or is new); Open counts every bucket's
// usage from its records and writes the counts with the key in one batch,
// before anything else reads or writes.
const (
	tableFormat   = 'v'
	formatVersion = 1
)

// errFormat is returned by Open for a database written by a newer Coffer.
var errFormat = errors.New("meta: unknown database format")

// migrate brings the database to formatVersion. It runs in Open, before
// the DB is shared.
func (db *DB) migrate(ctx context.Context, log *slog.Logger) error {
	v, err := db.kv.get([]byte{tableFormat}, nil)
	switch {
	case err == nil:
		if len(v) != 1 || v[0] > formatVersion || v[0] == 0 {
			return fmt.Errorf("%w: format key %x; this Coffer knows versions up to %d", errFormat, v, formatVersion)
		}
		return nil
	case !errors.Is(err, ErrNotFound):
		return fmt.Errorf("meta: read format: %w", err)
	}
	start := time.Now()
	c, err := db.countAll(ctx)
	if err != nil {
		return fmt.Errorf("meta: count usage: %w", err)
	}
	b := db.kv.newBatch()
	defer b.close()
	var total Usage
	for _, name := range slices.Sorted(maps.Keys(c.counted)) {
		u := c.counted[name]
		b.set(usageKey(nil, name), appendUsage(nil, u))
		total = total.add(u)
	}
	for name := range c.stored {
		if _, ok := c.counted[name]; !ok {
			b.delete(usageKey(nil, name))
		}
	}
	b.set([]byte{tableFormat}, []byte{formatVersion})
	if err := b.commit(true); err != nil {
		return fmt.Errorf("meta: write usage: %w", err)
	}
	if len(c.counted) > 0 {
		log.Info("usage counted", "buckets", len(c.counted), "objects", total.Objects, "bytes", total.Bytes,
			"uploads", total.Uploads, "duration", time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// usageCount is the result of a scan: what the records add up to, and what
// the usage table says, by bucket.
type usageCount struct {
	counted map[string]Usage // every bucket, from its records
	stored  map[string]Usage // every usage key, decoded
	corrupt map[string]error // usage keys that do not decode
	// orphans are objects or uploads of buckets that do not exist, by
	// bucket name; only a bug or corruption makes them.
	orphans map[string]Usage
}

// countAll scans buckets, usage, object records (current and noncurrent),
// part records and uploads from one snapshot: the tables b, c, h, o, p and
// u lie in [b, v), and the scan seeks over the others (inline data,
// garbage, IAM) without reading them.
func (db *DB) countAll(ctx context.Context) (*usageCount, error) {
	it, err := db.kv.newIter([]byte{tableBucket}, []byte{tableFormat})
	if err != nil {
		return nil, err
	}
	c, err := countTables(ctx, it)
	return c, errors.Join(err, it.close())
}

// countTables is countAll over the iterator.
func countTables(ctx context.Context, it kvIter) (*usageCount, error) {
	c := &usageCount{counted: map[string]Usage{}, stored: map[string]Usage{}, corrupt: map[string]error{}, orphans: map[string]Usage{}}
	for ok := it.seekGE([]byte{tableBucket}); ok && it.key()[0] == tableBucket; ok = it.next() {
		c.counted[string(it.key()[1:])] = Usage{}
	}
	for ok := it.seekGE([]byte{tableUsage}); ok && it.key()[0] == tableUsage; ok = it.next() {
		name := string(it.key()[1:])
		v, err := it.value()
		if err != nil {
			return nil, err
		}
		if c.stored[name], err = decodeUsage(v); err != nil {
			c.corrupt[name] = err
		}
	}
	// The objects of a bucket are contiguous: sum them in cur and store
	// the sum once the bucket changes.
	cur, curName := Usage{}, ""
	flush := func() {
		if cur != (Usage{}) {
			c.add(curName, cur)
		}
	}
	steps := 0
	check := func() error {
		if steps++; steps%ctxCheckEvery == 0 {
			return ctx.Err()
		}
		return nil
	}
	// Current versions (o) and noncurrent ones (h) count alike.
	for _, t := range []byte{tableHistory, tableObject} {
		for ok := it.seekGE([]byte{t}); ok && it.key()[0] == t; ok = it.next() {
			if err := check(); err != nil {
				return nil, err
			}
			k := it.key()
			end := bytes.IndexByte(k, 0)
			if end < 0 {
				return nil, fmt.Errorf("object key %q: %w", k, errBadKey)
			}
			if bucket := k[1:end]; string(bucket) != curName { // no allocation to compare
				flush()
				cur, curName = Usage{}, string(bucket)
			}
			v, err := it.value()
			if err != nil {
				return nil, err
			}
			o, err := decodeObject(v, objectSummary)
			if err != nil {
				return nil, fmt.Errorf("object %q: %w", k, err)
			}
			cur = cur.add(objectUsage(&o))
		}
		flush()
		cur, curName = Usage{}, ""
	}
	// Parts are keyed by upload ID alone; their uploads come later (u
	// sorts after p), so sum them by ID first.
	parts := map[string]int64{}
	for ok := it.seekGE([]byte{tablePart}); ok && it.key()[0] == tablePart; ok = it.next() {
		if err := check(); err != nil {
			return nil, err
		}
		p, err := decodePartEntry(it)
		if err != nil {
			return nil, fmt.Errorf("part %q: %w", it.key(), err)
		}
		id, _, _ := decodePartKey(it.key())
		parts[id] += p.Size
	}
	for ok := it.seekGE([]byte{tableUpload}); ok && it.key()[0] == tableUpload; ok = it.next() {
		if err := check(); err != nil {
			return nil, err
		}
		bucket, _, id, err := decodeUploadKey(it.key())
		if err != nil {
			return nil, fmt.Errorf("upload key %q: %w", it.key(), err)
		}
		c.add(bucket, Usage{Uploads: 1, PartBytes: parts[id]})
	}
	return c, nil
}

// add counts u for bucket, or as an orphan if there is no such bucket.
func (c *usageCount) add(bucket string, u Usage) {
	if cu, ok := c.counted[bucket]; ok {
		c.counted[bucket] = cu.add(u)
		return
	}
	c.orphans[bucket] = c.orphans[bucket].add(u)
}

// UsageMismatch is a bucket whose stored usage differs from what its
// records add up to.
type UsageMismatch struct {
	Bucket  string
	Stored  Usage // what the usage table says (zero if it has nothing)
	Counted Usage // what the records add up to
	// Problem says what is wrong besides the numbers, if anything:
	// "corrupt usage value", "no usage value", "usage of a bucket that does
	// not exist", or "records of a bucket that does not exist".
	Problem string
}

// UsageCheck is the result of CheckUsage.
type UsageCheck struct {
	Buckets    int             // buckets checked
	Mismatches []UsageMismatch // in bucket name order
	Repaired   int             // mismatches repaired (with repair only)
}

// CheckUsage recounts every bucket's usage from its records and compares
// it with the usage table, both read from one snapshot, so it may run while
// the server serves: a mismatch it reports is real, not a write in flight.
// Mismatches mean a bug (or a database written by an older Coffer after
// this one had counted it: an older Coffer does not count).
//
// With repair, each mismatching bucket is then corrected while its writers
// go on (see repairUsage): it is counted again from a snapshot, and the
// difference between that count and the usage stored at the same snapshot
// is added to its usage as a merge, as writers add theirs. Only a value
// that does not decode is set instead, from a count made with the
// bucket's writers held off. Usage keys of buckets that do not exist are
// deleted. Records of buckets that do not exist are reported, never
// deleted. Repairs run one at a time, in the cluster on a shared store: a
// second waits for the first.
func (db *DB) CheckUsage(ctx context.Context, repair bool) (UsageCheck, error) {
	if repair {
		release, err := db.usageRepairLease(ctx)
		if err != nil {
			return UsageCheck{}, err
		}
		defer release()
	}
	c, err := db.countAll(ctx)
	if err != nil {
		return UsageCheck{}, fmt.Errorf("meta: check usage: %w", err)
	}
	out := UsageCheck{Buckets: len(c.counted), Mismatches: c.mismatches()}
	if !repair {
		return out, nil
	}
	for _, m := range out.Mismatches {
		if m.Problem == problemOrphanRecords {
			continue
		}
		fixed, err := db.repairUsage(ctx, m)
		if err != nil {
			return out, err
		}
		if fixed {
			out.Repaired++
		}
	}
	return out, nil
}

const (
	problemCorrupt       = "corrupt usage value"
	problemMissing       = "no usage value"
	problemOrphanUsage   = "usage of a bucket that does not exist"
	problemOrphanRecords = "records of a bucket that does not exist"
)

// mismatches lists what differs, in bucket name order.
func (c *usageCount) mismatches() []UsageMismatch {
	var out []UsageMismatch
	for name, counted := range c.counted {
		stored, ok := c.stored[name]
		switch {
		case c.corrupt[name] != nil:
			out = append(out, UsageMismatch{Bucket: name, Counted: counted, Problem: problemCorrupt})
		case !ok:
			out = append(out, UsageMismatch{Bucket: name, Counted: counted, Problem: problemMissing})
		case stored != counted:
			out = append(out, UsageMismatch{Bucket: name, Stored: stored, Counted: counted})
		}
	}
	for name, stored := range c.stored {
		if _, ok := c.counted[name]; !ok {
			out = append(out, UsageMismatch{Bucket: name, Stored: stored, Problem: problemOrphanUsage})
		}
	}
	for name, u := range c.orphans {
		out = append(out, UsageMismatch{Bucket: name, Counted: u, Problem: problemOrphanRecords})
	}
	slices.SortFunc(out, func(a, b UsageMismatch) int {
		if a.Bucket != b.Bucket {
			return cmp.Compare(a.Bucket, b.Bucket)
		}
		return cmp.Compare(a.Problem, b.Problem)
	})
	return out
}
