package meta

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"
)

// ListOptions selects one page of a listing.
type ListOptions struct {
	Prefix    string
	Delimiter string // "" for none; may be several bytes
	// StartAfter is exclusive: only keys (and common prefixes) greater than
	// it are returned.
	StartAfter string
	Limit      int // entries to return; 0 returns none but reports truncation
}

// Entry is one item of an object listing: an object or a common prefix.
type Entry struct {
	Key      string // object key, or the common prefix when IsPrefix
	IsPrefix bool
	Object   Summary // zero for a common prefix
}

// Summary is the part of an object record a listing returns; metadata,
// blocks and data are not read.
type Summary struct {
	Size     int64
	ETag     string
	Modified time.Time
	Checksum Checksum
}

// ListObjects returns up to opt.Limit entries of bucket in key order,
// objects and common prefixes merged, and whether more follow. With a
// delimiter, keys that contain it after the prefix are rolled up into one
// common prefix, and the scan then seeks past every key starting with it: a
// prefix holding a million keys costs one seek. A common prefix not greater
// than StartAfter is skipped as already returned. It does not check that
// the bucket exists.
func (db *DB) ListObjects(ctx context.Context, bucket string, opt ListOptions) ([]Entry, bool, error) {
	return db.listObjects(ctx, bucket, opt, nil, nil)
}

// ListObjectsOwners is ListObjects that also returns, for each entry in
// order, what owner makes of its ACL (Object.ACL, read past the record's
// metadata, which ListObjects does not read; nil for an object without
// one): a listing that reports owners needs them. "" for a common prefix.
// owner sees the ACL as the scan holds it, valid during the call only, so
// that a page keeps owners (a few dozen bytes each), not ACLs (up to
// kilobytes, one per object).
func (db *DB) ListObjectsOwners(ctx context.Context, bucket string, opt ListOptions, owner func(acl []byte) string) ([]Entry, []string, bool, error) {
	owners := make([]string, 0, min(max(opt.Limit, 0), maxPrealloc))
	es, truncated, err := db.listObjects(ctx, bucket, opt, owner, &owners)
	if err != nil {
		return nil, nil, false, err
	}
	return es, owners, truncated, nil
}

// listObjects is ListObjects, appending owner of each entry's ACL to
// owners unless owners is nil.
func (db *DB) listObjects(ctx context.Context, bucket string, opt ListOptions, owner func([]byte) string, owners *[]string) ([]Entry, bool, error) {
	out := make([]Entry, 0, min(max(opt.Limit, 0), maxPrealloc))
	detail := objectSummary
	if owners != nil {
		detail = objectSummaryACL
	}
	var memo ownerMemo
	w := walker{
		base:   bucketPrefix(tableObject, bucket),
		prefix: opt.Prefix, delim: opt.Delimiter, after: opt.StartAfter, limit: opt.Limit,
		nameEnd: func(k []byte) int { return len(k) },
		emitPrefix: func(p string) {
			out = append(out, Entry{Key: p, IsPrefix: true})
			if owners != nil {
				*owners = append(*owners, "")
			}
		},
		emit: func(k, name []byte, it kvIter) error {
			v, err := it.value()
			if err != nil {
				return err
			}
			o, err := decodeObject(v, detail)
			if err != nil {
				return fmt.Errorf("object %q: %w", name, err)
			}
			out = append(out, Entry{Key: string(name), Object: Summary{
				Size: o.Size, ETag: o.ETag, Modified: o.Modified, Checksum: o.Checksum}})
			if owners != nil {
				*owners = append(*owners, memo.of(o.ACL, owner))
			}
			return nil
		},
	}
	var start []byte
	if opt.StartAfter != "" {
		start = append(append(bytes.Clone(w.base), opt.StartAfter...), 0)
	}
	truncated, err := db.walk(ctx, db.kv, &w, start)
	if err != nil {
		return nil, false, fmt.Errorf("meta: list %s: %w", bucket, err)
	}
	return out, truncated, nil
}

// UploadListOptions selects one page of ListUploads.
type UploadListOptions struct {
	Prefix, Delimiter string
	// KeyMarker and UploadIDMarker are exclusive: with both, uploads of
	// KeyMarker with greater IDs and uploads of greater keys follow; with
	// KeyMarker alone, uploads of greater keys.
	KeyMarker, UploadIDMarker string
	Limit                     int
}

// UploadEntry is one item of an upload listing: an upload or a common
// prefix of keys.
type UploadEntry struct {
	Prefix string // the common prefix, when Upload is nil
	Upload *Upload
}

// ListUploads returns up to opt.Limit uploads of bucket ordered by key, then
// by upload ID (which orders uploads of one key by initiation time), with
// common prefixes rolled up as in ListObjects, and whether more follow.
// Keys containing 0x00 may sort out of place relative to a prefix of
// themselves: the upload ID follows the key after a 0x00 separator.
func (db *DB) ListUploads(ctx context.Context, bucket string, opt UploadListOptions) ([]UploadEntry, bool, error) {
	return db.listUploads(ctx, db.kv, bucket, opt)
}

// listUploads is ListUploads, read through r.
func (db *DB) listUploads(ctx context.Context, r kvReader, bucket string, opt UploadListOptions) ([]UploadEntry, bool, error) {
	var out []UploadEntry
	w := walker{
		base:   bucketPrefix(tableUpload, bucket),
		prefix: opt.Prefix, delim: opt.Delimiter, after: opt.KeyMarker, limit: opt.Limit,
		nameEnd: func(k []byte) int { return len(k) - UploadIDLen - 1 },
		emitPrefix: func(p string) {
			out = append(out, UploadEntry{Prefix: p})
		},
		emit: func(k, _ []byte, it kvIter) error {
			b, key, id, err := decodeUploadKey(k)
			if err != nil {
				return err
			}
			v, err := it.value()
			if err != nil {
				return err
			}
			u, err := decodeUpload(b, key, id, v)
			if err != nil {
				return fmt.Errorf("upload %s: %w", id, err)
			}
			out = append(out, UploadEntry{Upload: &u})
			return nil
		},
	}
	var start []byte
	switch {
	case opt.KeyMarker != "" && opt.UploadIDMarker != "":
		start = append(bytes.Clone(w.base), opt.KeyMarker...)
		start = append(start, 0)
		start = append(start, opt.UploadIDMarker...)
		start = append(start, 0)
	case opt.KeyMarker != "":
		start = append(append(bytes.Clone(w.base), opt.KeyMarker...), 1)
	}
	truncated, err := db.walk(ctx, r, &w, start)
	if err != nil {
		return nil, false, fmt.Errorf("meta: list uploads of %s: %w", bucket, err)
	}
	return out, truncated, nil
}

// ownerMemo calls a listing's owner function once for each run of equal
// ACLs: the objects of a page mostly share a few (nil, the default, above
// all). It keeps the last ACL it saw (a copy, since the scan's value
// changes) and its owner.
type ownerMemo struct {
	last  []byte
	owner string
	valid bool
}

// of returns owner(doc), or the previous result if doc equals the
// previous ACL.
func (m *ownerMemo) of(doc []byte, owner func([]byte) string) string {
	if !m.valid || !bytes.Equal(doc, m.last) {
		m.owner = owner(doc)
		m.last = append(m.last[:0], doc...)
		m.valid = true
	}
	return m.owner
}

// maxPrealloc bounds the capacity a listing allocates up front.
const maxPrealloc = 1000

// walker holds the state of one listing scan over the keys base+name….
type walker struct {
	base          []byte // table and bucket prefix of every key scanned
	prefix, delim string
	after         string // common prefixes not greater than this are skipped
	limit         int
	// nameEnd returns where the name (object key) ends in key k.
	nameEnd    func(k []byte) int
	emit       func(k, name []byte, it kvIter) error
	emitPrefix func(p string)
}

// ctxCheckEvery is how many keys a scan steps between context checks.
const ctxCheckEvery = 256

// walk scans from start (or the first key with the prefix) through r and
// emits up to w.limit entries; it reports whether another entry follows.
func (db *DB) walk(ctx context.Context, r kvReader, w *walker, start []byte) (bool, error) {
	lower := append(bytes.Clone(w.base), w.prefix...)
	it, err := r.newIter(lower, successor(lower))
	if err != nil {
		return false, err
	}
	if bytes.Compare(start, lower) < 0 {
		start = lower
	}
	delim := []byte(w.delim)
	after := []byte(w.after)
	n, steps := 0, 0
	truncated := false
	for ok := it.seekGE(start); ok; {
		if steps++; steps%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return false, errors.Join(err, it.close())
			}
		}
		k := it.key()
		end := w.nameEnd(k)
		if end < len(w.base) {
			return false, errors.Join(fmt.Errorf("key %q: %w", k, errBadKey), it.close())
		}
		if end < len(lower) {
			// An upload key whose object key is shorter than a prefix
			// that reaches into the 0x00 separator: not a match.
			ok = it.next()
			continue
		}
		name := k[len(w.base):end]
		if len(delim) > 0 {
			if i := bytes.Index(name[len(w.prefix):], delim); i >= 0 {
				cp := name[:len(w.prefix)+i+len(delim)]
				if len(after) == 0 || bytes.Compare(cp, after) > 0 {
					if n == w.limit {
						truncated = true
						break
					}
					w.emitPrefix(string(cp))
					n++
				}
				next := successor(k[:len(w.base)+len(cp)])
				if next == nil {
					break
				}
				ok = it.seekGE(next)
				continue
			}
		}
		if n == w.limit {
			truncated = true
			break
		}
		if err := w.emit(k, name, it); err != nil {
			return false, errors.Join(err, it.close())
		}
		n++
		ok = it.next()
	}
	return truncated, it.close()
}
