package meta

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Moving a store to another engine (coffer admin migrate, Pebble to
// PostgreSQL): the engines share the key layout and the record codecs, so
// the copy is of key-value pairs, in key order, in batches. Each batch
// commits with the migration's progress (the migration key) in the same
// transaction of the target, so that an interrupted copy resumes after
// the last batch that committed and never leaves half a batch. See
// docs/design/0011-postgres-metadata.md ("Moving a single node").

// tableMigration holds the progress of a migration into this store (in
// a target) and the mark of a migration from it (in a source). 'w' is
// outside every range the typed layer scans ([b, v) for usage, [g, q)
// for GC, single tables otherwise), and neither copied nor digested.
const tableMigration = 'w'

var migrationKey = []byte{tableMigration}

// markKey holds a MigrationMark: in a migration's source, not its target.
var markKey = []byte{tableMigration, 'm'}

// Phases of a Migration.
const (
	MigrationCopying   = "copying"   // records are being copied from the source
	MigrationVerifying = "verifying" // every record is copied; data is being read back
	MigrationFailed    = "failed"    // verification ended with mismatches
	MigrationDone      = "done"      // copied and verified
)

// Migration is the progress of a migration into this store, stored in it.
type Migration struct {
	// Source identifies what is copied (the source's storage path); a
	// migration from another source into the same store is refused.
	Source string `json:"source"`
	// Target is where the blocks go: the upstream bucket and prefix
	// ("bucket/prefix/"); a run that would send them elsewhere is refused.
	// TargetEndpoint is the endpoint the bucket was last reached at,
	// which may change (a proxy, another network path to the bucket).
	Target         string    `json:"target,omitempty"`
	TargetEndpoint string    `json:"target_endpoint,omitempty"`
	Phase          string    `json:"phase"`
	Started        time.Time `json:"started"`
	// SourceDigest is the source's Digest when the migration began: a
	// run refuses to go on if the source's is another now (something
	// wrote to it in between), and the migration is done only once the
	// target's equals it.
	SourceDigest []TableDigest `json:"source_digest"`
	// Cursor is the next key to handle: a source key while copying, a key
	// of this store while verifying; nil for the start.
	Cursor []byte `json:"cursor,omitempty"`
	// Keys counts the key-value pairs copied; Blocks and BlockBytes the
	// blocks copied with them (a block copied again after an interruption
	// counts again).
	Keys       int64 `json:"keys"`
	Blocks     int64 `json:"blocks"`
	BlockBytes int64 `json:"block_bytes"`
	// Verified counts the records read back and found intact.
	Verified int64 `json:"verified"`
	// Mismatches are the records whose data did not match, at most
	// MaxMismatches of them; Mismatched counts all.
	Mismatches []Mismatch `json:"mismatches,omitempty"`
	Mismatched int64      `json:"mismatched"`
}

// MaxMismatches bounds Migration.Mismatches: they are for the report
// (which names ten; the log names every one), and the whole Migration is
// saved again after each page of verified records, so a long list made
// every save large.
const MaxMismatches = 100

// Mismatch is a record whose data read back from the target did not match
// what the record says.
type Mismatch struct {
	Key     []byte `json:"key"`     // the record's key in the store
	Record  string `json:"record"`  // the record, for people: "bucket/key version V"
	Problem string `json:"problem"` // what did not match
}

// Migration returns the migration stored in db, or ErrNotFound.
func (db *DB) Migration(ctx context.Context) (Migration, error) {
	if err := ctx.Err(); err != nil {
		return Migration{}, err
	}
	v, err := db.kv.get(migrationKey, nil)
	if err != nil {
		return Migration{}, err
	}
	var m Migration
	if err := json.Unmarshal(v, &m); err != nil {
		return Migration{}, fmt.Errorf("meta: migration state: %w", errCorrupt)
	}
	return m, nil
}

// SaveMigration stores m, durably.
func (db *DB) SaveMigration(ctx context.Context, m *Migration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b := db.kv.newBatch()
	defer b.close()
	if err := setMigration(b, m); err != nil {
		return err
	}
	return b.commit(true)
}

func setMigration(b kvBatch, m *Migration) error {
	v, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("meta: encode migration state: %w", err)
	}
	b.set(migrationKey, v)
	return nil
}

// MigrationMark marks a store that is the source of a migration, begun
// or done: a server must not open it (its writes would not reach the
// copy; after the migration, it would serve an old copy). Only removing
// the mark (DeleteMigrationMark: coffer admin migrate --abandon) lets one
// open it again.
type MigrationMark struct {
	Target  string    `json:"target"` // where to, for people
	Started time.Time `json:"started"`
	Done    bool      `json:"done,omitempty"` // the migration is done
}

// MigrationMark returns db's MigrationMark, or ErrNotFound.
func (db *DB) MigrationMark(ctx context.Context) (MigrationMark, error) {
	if err := ctx.Err(); err != nil {
		return MigrationMark{}, err
	}
	v, err := db.kv.get(markKey, nil)
	if err != nil {
		return MigrationMark{}, err
	}
	var mk MigrationMark
	if err := json.Unmarshal(v, &mk); err != nil {
		return MigrationMark{}, fmt.Errorf("meta: migration mark: %w", errCorrupt)
	}
	return mk, nil
}

// SetMigrationMark stores mk, durably. It is outside every table a copy
// or a Digest reads.
func (db *DB) SetMigrationMark(ctx context.Context, mk MigrationMark) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	v, err := json.Marshal(mk)
	if err != nil {
		return fmt.Errorf("meta: encode migration mark: %w", err)
	}
	b := db.kv.newBatch()
	defer b.close()
	b.set(markKey, v)
	return b.commit(true)
}

// DeleteMigrationMark removes db's MigrationMark, if any, durably.
func (db *DB) DeleteMigrationMark(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b := db.kv.newBatch()
	defer b.close()
	b.delete(markKey)
	return b.commit(true)
}

// TableDigest sums up the key-value pairs of one table.
type TableDigest struct {
	Table  string `json:"table"` // the table's key prefix: "o" for objects
	Keys   int64  `json:"keys"`
	SHA256 string `json:"sha256"` // of the pairs in key order, each as len(k) k len(v) v
}

// Digest returns a TableDigest of every table that CopyFrom copies and
// that holds a key, in key order: two stores with equal digests hold the
// same key-value pairs (a usage value counting as the sum it means,
// whatever records it is written in). It reads every pair (for a
// migration: when it begins or continues, and once more of the target
// before it is done).
func (db *DB) Digest(ctx context.Context) ([]TableDigest, error) {
	it, err := db.kv.newIter(nil, pgMaxKey)
	if err != nil {
		return nil, fmt.Errorf("meta: digest: %w", err)
	}
	var (
		out   []TableDigest
		h     = sha256.New()
		cur   *TableDigest
		n     [binary.MaxVarintLen64]byte
		usage []byte
	)
	finish := func() {
		if cur != nil {
			cur.SHA256 = hex.EncodeToString(h.Sum(nil))
			out = append(out, *cur)
			h.Reset()
		}
	}
	ok := it.first()
	for i := 0; ok; i++ {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, errors.Join(err, it.close())
			}
		}
		k := it.key()
		if copySkip(k[0]) {
			ok = it.seekGE([]byte{k[0] + 1})
			continue
		}
		if cur == nil || cur.Table[0] != k[0] {
			finish()
			cur = &TableDigest{Table: string(k[:1])}
		}
		v, err := it.value()
		if err != nil {
			return nil, errors.Join(fmt.Errorf("meta: digest at %q: %w", k, err), it.close())
		}
		if k[0] == tableUsage {
			// A usage value means the sum of its records, and PostgreSQL
			// keeps the sum: digested as the one record of the sum.
			if u, err := decodeUsage(v); err == nil {
				usage = appendUsage(usage[:0], u)
				v = usage
			}
		}
		cur.Keys++
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(k)))])
		h.Write(k)
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(v)))])
		h.Write(v)
		ok = it.next()
	}
	if err := it.close(); err != nil {
		return nil, fmt.Errorf("meta: digest: %w", err)
	}
	finish()
	return out, nil
}

// DigestDiff says, for people, how the digest got differs from want
// (named as what), table by table; "" if they are equal.
func DigestDiff(want, got []TableDigest, what string) string {
	find := func(ds []TableDigest, t string) TableDigest {
		for _, d := range ds {
			if d.Table == t {
				return d
			}
		}
		return TableDigest{Table: t}
	}
	var tables []string
	for _, d := range append(slices.Clone(want), got...) {
		if !slices.Contains(tables, d.Table) {
			tables = append(tables, d.Table)
		}
	}
	slices.Sort(tables)
	var diffs []string
	for _, t := range tables {
		w, g := find(want, t), find(got, t)
		switch {
		case w.Keys != g.Keys:
			diffs = append(diffs, fmt.Sprintf("table %s: %d keys, %s %d", t, g.Keys, what, w.Keys))
		case w.SHA256 != g.SHA256:
			diffs = append(diffs, fmt.Sprintf("table %s: %d keys, other pairs than %s", t, g.Keys, what))
		}
	}
	return strings.Join(diffs, "; ")
}

// HasRecords reports whether db holds any bucket, usage, IAM state or
// bucket policy: a store a migration must not write into, since it would
// mix two stores.
func (db *DB) HasRecords(ctx context.Context) (bool, error) {
	for _, r := range [][2]byte{{tableBucket, tableFormat}, {tablePolicy, tablePolicy + 1}} {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		it, err := db.kv.newIter([]byte{r[0]}, []byte{r[1]})
		if err != nil {
			return false, err
		}
		found := it.first()
		if err := it.close(); err != nil {
			return false, err
		}
		if found {
			return true, nil
		}
	}
	return false, nil
}

// HasBuckets reports whether db holds any bucket: what a store must hold
// to have blocks of its own in a block store. (HasRecords counts more: a
// PostgreSQL store holds IAM state from its first node's first start.)
func (db *DB) HasBuckets(ctx context.Context) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	it, err := db.kv.newIter([]byte{tableBucket}, []byte{tableBucket + 1})
	if err != nil {
		return false, err
	}
	found := it.first()
	return found, it.close()
}

// copySkip reports whether the keys of table t stay behind in a copy: the
// garbage queue (blocks nothing references, not copied either: the
// target's GC would only delete them), the format key and the readiness
// probe (each engine has its own), a migration's progress, the store ID
// (the target is another store, with the ID its Open made: two stores
// with one ID would pass each other's claims of an upstream prefix) and
// the records of a shared store's nodes (the target's publish their own).
func copySkip(t byte) bool {
	return t == tableGarbage || t == tableFormat || t == tableProbe || t == tableMigration || t == tableStoreID || t == tableNodes
}

// CopyLimits bound one batch of CopyFrom. A batch holds at least one key.
type CopyLimits struct {
	Keys       int   // key-value pairs
	Bytes      int   // bytes of keys and values
	BlockBytes int64 // bytes of the blocks its records reference
}

// CopyFrom copies the next batch of src's key-value pairs into db,
// starting at m.Cursor, within lim. Before the batch commits it calls
// blocks with the blocks its records reference (object versions and
// parts), which the caller copies to db's block store; the batch commits
// only if blocks returns nil, and commits m, moved past the batch, with
// it. When src has no more keys m.Phase becomes MigrationVerifying, in the
// same commit, and CopyFrom reports done.
//
// Every table is copied as it is, but the garbage queue, the format key,
// the readiness probe, the migration's progress and the store ID
// (copySkip). A usage value is read from src merged and written to db
// whole, which on PostgreSQL replaces the bucket's counter shards with one
// row.
func (db *DB) CopyFrom(ctx context.Context, src *DB, m *Migration, lim CopyLimits, blocks func(context.Context, []Block) error) (done bool, err error) {
	if m.Phase != MigrationCopying {
		return false, fmt.Errorf("meta: copy in phase %q", m.Phase)
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	it, err := src.kv.newIter(m.Cursor, pgMaxKey)
	if err != nil {
		return false, fmt.Errorf("meta: read the source: %w", err)
	}
	type pair struct{ k, v []byte }
	var (
		pairs      []pair
		refs       []Block
		size       int
		blockBytes int64
		more       bool
	)
	ok := it.first()
	for ok {
		k := it.key()
		if copySkip(k[0]) {
			ok = it.seekGE([]byte{k[0] + 1})
			continue
		}
		if len(pairs) > 0 && (len(pairs) >= lim.Keys || size >= lim.Bytes || blockBytes >= lim.BlockBytes) {
			more = true
			break
		}
		v, err := it.value()
		if err != nil {
			return false, errors.Join(fmt.Errorf("meta: read the source at %q: %w", k, err), it.close())
		}
		p := pair{bytes.Clone(k), bytes.Clone(v)}
		bs, err := recordBlocks(p.k, p.v)
		if err != nil {
			return false, errors.Join(fmt.Errorf("meta: source record %q: %w", k, err), it.close())
		}
		for _, b := range bs {
			blockBytes += b.Size
		}
		refs = append(refs, bs...)
		pairs = append(pairs, p)
		size += len(p.k) + len(p.v)
		ok = it.next()
	}
	if err := it.close(); err != nil {
		return false, fmt.Errorf("meta: read the source: %w", err)
	}
	if len(refs) > 0 {
		if err := blocks(ctx, refs); err != nil {
			return false, err
		}
	}
	next := *m
	next.Keys += int64(len(pairs))
	next.Blocks += int64(len(refs))
	next.BlockBytes += blockBytes
	if more {
		last := pairs[len(pairs)-1].k
		next.Cursor = append(bytes.Clone(last), 0) // the least key after last
	} else {
		next.Phase, next.Cursor = MigrationVerifying, nil
	}
	b := db.kv.newBatch()
	defer b.close()
	for _, p := range pairs {
		b.set(p.k, p.v)
	}
	if err := setMigration(b, &next); err != nil {
		return false, err
	}
	if err := b.commit(true); err != nil {
		return false, fmt.Errorf("meta: write the target: %w", err)
	}
	*m = next
	return !more, nil
}

// recordBlocks returns the blocks the record k = v references: those of
// an object version or a part; none for other tables.
func recordBlocks(k, v []byte) ([]Block, error) {
	switch k[0] {
	case tableObject, tableHistory:
		o, err := decodeObject(v, objectLayout)
		return o.Blocks, err
	case tablePart:
		_, n, err := decodePartKey(k)
		if err != nil {
			return nil, err
		}
		p, err := decodePart(n, v)
		return p.Blocks, err
	}
	return nil, nil
}

// StoredRecord is a record that holds data: an object version (current or
// noncurrent) or a part of an upload in progress.
type StoredRecord struct {
	Key    []byte // the record's key in the store
	Bucket string // of an object version
	Object string // key of an object version
	// Version is the object version's record (with its blocks, without
	// inline data: RecordData reads that); nil for a part.
	Version *Object
	Current bool // Version is the current version of the object
	// Upload and Part are a part's upload ID and record; Part is nil for
	// an object version.
	Upload string
	Part   *Part
}

// String names the record for people.
func (r *StoredRecord) String() string {
	if r.Part != nil {
		return fmt.Sprintf("part %d of upload %s", r.Part.Number, r.Upload)
	}
	s := r.Bucket + "/" + r.Object + " version " + r.Version.S3VersionID()
	if !r.Current {
		s += " (noncurrent)"
	}
	return s
}

// Records returns up to limit records that hold data (see StoredRecord),
// in key order from cursor (nil: the first), and the cursor of the next
// call, nil after the last record.
func (db *DB) Records(ctx context.Context, cursor []byte, limit int) ([]StoredRecord, []byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	lower := []byte{tableHistory}
	if bytes.Compare(cursor, lower) > 0 {
		lower = cursor
	}
	it, err := db.kv.newIter(lower, []byte{tablePart + 1})
	if err != nil {
		return nil, nil, fmt.Errorf("meta: scan records: %w", err)
	}
	var out []StoredRecord
	for ok := it.first(); ok; ok = it.next() {
		k := it.key()
		switch k[0] {
		case tableHistory, tableObject, tablePart:
		default:
			continue
		}
		if len(out) >= limit {
			next := bytes.Clone(k)
			return out, next, it.close()
		}
		v, err := it.value()
		if err != nil {
			return nil, nil, errors.Join(err, it.close())
		}
		r, err := decodeStored(bytes.Clone(k), v)
		if err != nil {
			return nil, nil, errors.Join(fmt.Errorf("meta: record %q: %w", k, err), it.close())
		}
		out = append(out, r)
	}
	return out, nil, it.close()
}

// RecordAt returns the record under key, which Records returned.
func (db *DB) RecordAt(ctx context.Context, key []byte) (StoredRecord, error) {
	if err := ctx.Err(); err != nil {
		return StoredRecord{}, err
	}
	if len(key) == 0 {
		return StoredRecord{}, errBadKey
	}
	switch key[0] {
	case tableHistory, tableObject, tablePart:
	default:
		return StoredRecord{}, errBadKey
	}
	v, err := db.kv.get(key, nil)
	if err != nil {
		return StoredRecord{}, err
	}
	return decodeStored(bytes.Clone(key), v)
}

func decodeStored(k, v []byte) (StoredRecord, error) {
	r := StoredRecord{Key: k}
	switch k[0] {
	case tableObject:
		bucket, key, err := decodeObjectKey(k)
		if err != nil {
			return r, err
		}
		o, err := decodeObject(v, objectLayout)
		if err != nil {
			return r, err
		}
		r.Bucket, r.Object, r.Version, r.Current = bucket, key, &o, true
	case tableHistory:
		i := bytes.IndexByte(k[1:], 0)
		if i < 0 {
			return r, errBadKey
		}
		key, _, err := decodeHistoryName(k[2+i:])
		if err != nil {
			return r, err
		}
		o, err := decodeObject(v, objectLayout)
		if err != nil {
			return r, err
		}
		r.Bucket, r.Object, r.Version = string(k[1:1+i]), key, &o
	case tablePart:
		id, n, err := decodePartKey(k)
		if err != nil {
			return r, err
		}
		p, err := decodePart(n, v)
		if err != nil {
			return r, err
		}
		r.Upload, r.Part = id, &p
	default:
		return r, errBadKey
	}
	return r, nil
}

// RecordData returns the inline data of an object version that has no
// blocks (nil for an empty one), read as a GET would read it, appending to
// buf[:0]; it returns the buffer for reuse.
func (db *DB) RecordData(ctx context.Context, r *StoredRecord, buf []byte) (data, b []byte, err error) {
	if r.Version == nil || len(r.Version.Blocks) > 0 || r.Version.Size == 0 {
		return nil, buf, nil
	}
	if r.Current {
		return db.ObjectData(ctx, r.Bucket, r.Object, r.Version.VersionID, buf)
	}
	return db.VersionData(ctx, r.Bucket, r.Object, r.Version, buf)
}
