package meta

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"
)

// VersionListOptions selects one page of ListVersions.
type VersionListOptions struct {
	Prefix    string
	Delimiter string
	// KeyMarker and VersionIDMarker say where the previous page ended:
	// with KeyMarker alone, the page starts after every version of it; with
	// both, after that version of KeyMarker.
	KeyMarker, VersionIDMarker string
	Limit                      int // entries (versions and common prefixes) to return
	// Owner, if set, is called with each version's ACL (read past the
	// record's metadata; nil for a version without one, valid during the
	// call only), and VersionSummary.Owner is what it returns: a listing
	// that reports owners needs it (see ListObjectsOwners).
	Owner func(acl []byte) string
}

// VersionEntry is one item of a version listing: a version (an object or
// a delete marker) or a common prefix.
type VersionEntry struct {
	Key      string // object key, or the common prefix when IsPrefix
	IsPrefix bool
	Version  VersionSummary // zero for a common prefix
}

// VersionSummary is what a version listing says of one version.
type VersionSummary struct {
	VersionID    string // the S3 version ID ("null" for the null version)
	IsLatest     bool
	DeleteMarker bool
	Size         int64
	ETag         string
	Modified     time.Time
	Checksum     Checksum
	// Owner is what VersionListOptions.Owner made of the version's ACL;
	// "" without it.
	Owner string
}

// ListVersions returns up to opt.Limit entries of bucket's versions: keys
// in order, each key's versions newest first, with common prefixes rolled
// up as in ListObjects (a common prefix is skipped with one seek in each
// table, however many versions it holds), and whether more follow. It
// merges the current versions (the object table) with the others (the
// history table), both read through one snapshot: a write moves a
// version from one table to the other, and two views of them could show
// it twice, lose it or mark the wrong version latest. It does not check
// that the bucket exists.
func (db *DB) ListVersions(ctx context.Context, bucket string, opt VersionListOptions) (_ []VersionEntry, _ bool, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("meta: list versions of %s: %w", bucket, err)
		}
	}()
	var out []VersionEntry
	var truncated bool
	err = db.inSnapshot(func(r kvReader) error {
		l, err := newVersionLister(r, bucket, opt)
		if err != nil {
			return err
		}
		out, truncated, err = l.run(ctx)
		return errors.Join(err, l.cur.close(), l.hist.close())
	})
	if err != nil {
		return nil, false, err
	}
	return out, truncated, nil
}

// inSnapshot runs fn with a reader whose reads all see the store as of
// one moment (kv.snapshot).
func (db *DB) inSnapshot(fn func(r kvReader) error) (err error) {
	snap, err := db.kv.snapshot()
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, snap.close()) }()
	return fn(snap)
}

// testHookBetweenReads, when a test sets it, runs between two reads that
// must see the same state (of the object table and of the history table
// in ListVersions, WalkVersions, ObjectVersion, LatestDeleteMarker; of an
// upload and of its parts in UploadParts): a write it makes must not be
// seen by the second.
var testHookBetweenReads func()

func betweenReads() {
	if testHookBetweenReads != nil {
		testHookBetweenReads()
	}
}

// versionLister merges two scans: cur over the object table ("o" bucket
// 0x00 key) and hist over the history table ("h" bucket 0x00 esc(key)
// 0x00 0x01 vid). Both are positioned on their next unread entry.
type versionLister struct {
	opt               VersionListOptions
	curBase, histBase []byte
	cur, hist         kvIter
	curOK, histOK     bool
	histName          []byte // the decoded name of the history entry
	// skipLatest is a key whose first history entry in this page is known
	// not to be its latest version: the page resumes within its versions.
	skipLatest string
	owners     ownerMemo
	out        []VersionEntry
}

func newVersionLister(r kvReader, bucket string, opt VersionListOptions) (*versionLister, error) {
	l := &versionLister{
		opt:      opt,
		curBase:  bucketPrefix(tableObject, bucket),
		histBase: bucketPrefix(tableHistory, bucket),
	}
	curLower := append(bytes.Clone(l.curBase), opt.Prefix...)
	histLower := escapeKey(bytes.Clone(l.histBase), opt.Prefix)
	curStart, histStart := curLower, histLower
	if opt.KeyMarker != "" {
		// After every version of KeyMarker: the first name greater than
		// it is KeyMarker+"\x00", whose escaped form begins 0x00 0xFF, past
		// KeyMarker's own versions (0x00 0x01 …).
		curStart = append(append(bytes.Clone(l.curBase), opt.KeyMarker...), 0)
		histStart = append(escapeKey(bytes.Clone(l.histBase), opt.KeyMarker), 0, 2)
	}
	if opt.KeyMarker != "" && opt.VersionIDMarker != "" {
		m, err := resumeInKey(r, bucket, opt.KeyMarker, opt.VersionIDMarker)
		if err != nil {
			return nil, err
		}
		if m.withCurrent {
			curStart = curStart[:len(curStart)-1] // KeyMarker itself
		}
		histStart = m.hist
		if !m.latestInHistory {
			l.skipLatest = opt.KeyMarker
		}
	}
	var err error
	if l.cur, err = r.newIter(curLower, successor(curLower)); err != nil {
		return nil, err
	}
	l.curOK = l.cur.seekGE(maxBytes(curStart, curLower))
	betweenReads()
	if l.hist, err = r.newIter(histLower, successor(histLower)); err != nil {
		return nil, errors.Join(err, l.cur.close())
	}
	l.histOK = l.hist.seekGE(maxBytes(histStart, histLower))
	return l, nil
}

// keyResume says where a page that ended within key's versions resumes.
type keyResume struct {
	withCurrent     bool   // list key's current record (the object table's)
	hist            []byte // the first history key to list
	latestInHistory bool   // the first of key's history entries listed is its latest version
}

// resumeInKey returns where a listing resumes after version id of key. A
// version-id-marker names a place among key's versions (newest first),
// not a version that must still exist: versions may be deleted between
// two pages, and deleting the newest one moves the next into the object
// table, so the page resumes at id's place in the history order (its
// history ID, which is id itself for every version with an ID of its
// own) and lists the current record too if that is older, that is, sorts
// after the marker: otherwise a client emptying a bucket page by page,
// deleting what each page lists, would never see that version (and find
// the bucket not empty). The null version's place is that of the null
// version there is now; if there is none, the page lists all of key's
// versions again: a version listed twice is better than one never listed.
func resumeInKey(r kvReader, bucket, key, id string) (keyResume, error) {
	cur, err := readCurrent(r, bucket, key)
	if err != nil {
		return keyResume{}, err
	}
	betweenReads()
	pos := id
	switch {
	case cur != nil && cur.S3VersionID() == id:
		pos = historyID(cur)
	case id == NullVersionID:
		null, err := findNull(r, bucket, key)
		if err != nil {
			return keyResume{}, err
		}
		pos = ""
		if null != nil {
			pos = historyID(null)
		}
	}
	names := historyNamePrefix(nil, tableHistory, bucket, key)
	m := keyResume{hist: names}
	if pos != "" {
		m.hist = append(historyKey(nil, tableHistory, bucket, key, pos), 0)
	}
	if cur != nil {
		// The current version is the newest: history entries are never
		// the latest.
		m.withCurrent = pos == "" || historyID(cur) > pos
		return m, nil
	}
	// No current record: the latest version, if any, is the key's first
	// history entry (a delete marker); it is latest on this page if the
	// page starts at or before it.
	it, err := r.newIter(names, successor(names))
	if err != nil {
		return keyResume{}, err
	}
	if it.first() && bytes.Compare(it.key(), m.hist) >= 0 {
		m.latestInHistory = true
	}
	return m, it.close()
}

func maxBytes(a, b []byte) []byte {
	if bytes.Compare(a, b) >= 0 {
		return a
	}
	return b
}

// names returns the object keys the two scans are on (nil when a scan is
// exhausted); the history name is decoded into l.histName.
func (l *versionLister) names() (cur, hist []byte, err error) {
	if l.curOK {
		cur = l.cur.key()[len(l.curBase):]
	}
	if l.histOK {
		rest := l.hist.key()[len(l.histBase):]
		n := len(rest) - VersionIDLen - 2
		if n < 0 || rest[n] != 0 || rest[n+1] != 1 {
			return nil, nil, fmt.Errorf("history key %q: %w", l.hist.key(), errBadKey)
		}
		name, ok := unescapeKey(rest[:n])
		if !ok {
			return nil, nil, fmt.Errorf("history key %q: %w", l.hist.key(), errBadKey)
		}
		l.histName = append(l.histName[:0], name...)
		hist = l.histName
	}
	return cur, hist, nil
}

// run emits entries until the limit, reporting whether more follow.
func (l *versionLister) run(ctx context.Context) ([]VersionEntry, bool, error) {
	prefix, delim := []byte(l.opt.Prefix), []byte(l.opt.Delimiter)
	marker := []byte(l.opt.KeyMarker)
	steps := 0
	for l.curOK || l.histOK {
		if steps++; steps%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, false, err
			}
		}
		cn, hn, err := l.names()
		if err != nil {
			return nil, false, err
		}
		name := cn
		if name == nil || hn != nil && bytes.Compare(hn, name) < 0 {
			name = hn
		}
		if len(delim) > 0 {
			if i := bytes.Index(name[len(prefix):], delim); i >= 0 {
				cp := bytes.Clone(name[:len(prefix)+i+len(delim)])
				if len(marker) == 0 || bytes.Compare(cp, marker) > 0 {
					if len(l.out) == l.opt.Limit {
						return l.out, true, nil
					}
					l.out = append(l.out, VersionEntry{Key: string(cp), IsPrefix: true})
				}
				l.seekPast(cp)
				continue
			}
		}
		key := string(name) // name aliases scratch space the next names call reuses
		hasCur := cn != nil && string(cn) == key
		if hasCur {
			if len(l.out) == l.opt.Limit {
				return l.out, true, nil
			}
			if err := l.emit(l.cur, key, true); err != nil {
				return nil, false, err
			}
			l.curOK = l.cur.next()
		}
		first := !hasCur && key != l.skipLatest
		for l.histOK {
			_, hn, err := l.names()
			if err != nil {
				return nil, false, err
			}
			if string(hn) != key {
				break
			}
			if len(l.out) == l.opt.Limit {
				return l.out, true, nil
			}
			if err := l.emit(l.hist, key, first); err != nil {
				return nil, false, err
			}
			first = false
			l.histOK = l.hist.next()
		}
	}
	return l.out, false, nil
}

// emit appends the version under it.
func (l *versionLister) emit(it kvIter, key string, latest bool) error {
	v, err := it.value()
	if err != nil {
		return err
	}
	detail := objectVersionSummary
	if l.opt.Owner != nil {
		detail = objectVersionSummaryACL
	}
	o, err := decodeObject(v, detail)
	if err != nil {
		return fmt.Errorf("version of %q: %w", key, err)
	}
	l.out = append(l.out, VersionEntry{Key: key, Version: VersionSummary{
		VersionID: o.S3VersionID(), IsLatest: latest, DeleteMarker: o.DeleteMarker,
		Size: o.Size, ETag: o.ETag, Modified: o.Modified, Checksum: o.Checksum,
	}})
	if l.opt.Owner != nil {
		l.out[len(l.out)-1].Version.Owner = l.owners.of(o.ACL, l.opt.Owner)
	}
	return nil
}

// seekPast moves both scans past every key starting with common prefix cp.
func (l *versionLister) seekPast(cp []byte) {
	if l.curOK {
		next := successor(append(bytes.Clone(l.curBase), cp...))
		l.curOK = next != nil && l.cur.seekGE(next)
	}
	if l.histOK {
		next := successor(escapeKey(bytes.Clone(l.histBase), string(cp)))
		l.histOK = next != nil && l.hist.seekGE(next)
	}
}
