package meta

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"
)

// The lifecycle worker (internal/lifecycle, through the object service)
// reads a bucket's versions in bounded batches with WalkVersions and acts
// on what it finds due with Expire, which decides again, under the keys'
// locks and from the records as they are then, before it removes
// anything. See docs/design/0008-lifecycle.md.

// WalkPosition is where a version walk stopped: after the current record
// of Key (HistoryID "") or after its history entry HistoryID. The zero
// value starts at the beginning.
type WalkPosition struct {
	Key       string
	HistoryID string
	Started   bool
}

// WalkOptions selects one batch of WalkVersions.
type WalkOptions struct {
	Prefix string       // only keys with this prefix
	After  WalkPosition // resume after this position
	Limit  int          // versions to return at most (> 0)
	// History asks for noncurrent versions and delete markers too; without
	// it only current objects (the object table) are read.
	History bool
	// Tags asks for each version's tags, which costs decoding more of
	// each record.
	Tags bool
}

// WalkEntry is one version found by WalkVersions: its record (summary
// fields, VersionID and flags, and Tags when asked for) and where it is.
type WalkEntry struct {
	Key    string
	Object Object
	// Latest reports that it is the key's latest version: the current
	// object, or a delete marker on top of the history. Entries of the key
	// a walk resumes in are never reported latest.
	Latest bool
	// HistoryID is its place in the history table; "" for the current
	// object.
	HistoryID string
}

// WalkVersions returns up to opt.Limit versions of bucket in key order,
// each key's newest first (the current object, then its history), from
// one snapshot, the position after the last one, and whether more may
// follow. Nothing is held between calls: a long walk is a series of short
// reads, each seeing the store as it is then. It does not check that the
// bucket exists.
func (db *DB) WalkVersions(ctx context.Context, bucket string, opt WalkOptions) ([]WalkEntry, WalkPosition, bool, error) {
	if opt.Limit <= 0 {
		return nil, opt.After, false, errors.New("meta: walk limit must be positive")
	}
	var out []WalkEntry
	var pos WalkPosition
	var more bool
	err := db.inSnapshot(func(r kvReader) error {
		w, err := newWalker(r, bucket, opt)
		if err != nil {
			return err
		}
		out, pos, more, err = w.run(ctx)
		return errors.Join(err, w.close())
	})
	if err != nil {
		return nil, opt.After, false, fmt.Errorf("meta: walk %s: %w", bucket, err)
	}
	return out, pos, more, nil
}

// versionWalker merges a scan of the object table with one of the history
// table, like versionLister, without common prefixes.
type versionWalker struct {
	opt               WalkOptions
	curBase, histBase []byte
	cur, hist         kvIter // hist is nil without opt.History
	curOK, histOK     bool
	histName          []byte
	detail            objectDetail
	pos               WalkPosition
}

func newWalker(r kvReader, bucket string, opt WalkOptions) (*versionWalker, error) {
	w := &versionWalker{
		opt:      opt,
		curBase:  bucketPrefix(tableObject, bucket),
		histBase: bucketPrefix(tableHistory, bucket),
		detail:   objectVersionSummary,
		pos:      opt.After,
	}
	if opt.Tags {
		w.detail = objectTagged
	}
	curLower := append(bytes.Clone(w.curBase), opt.Prefix...)
	histLower := escapeKey(bytes.Clone(w.histBase), opt.Prefix)
	var err error
	if w.cur, err = r.newIter(curLower, successor(curLower)); err != nil {
		return nil, err
	}
	curStart, histStart := curLower, histLower
	if opt.After.Started {
		// The key's current record was returned: the object scan goes on
		// after it, the history scan at the key's first entry, or after the
		// entry named.
		curStart = append(append(bytes.Clone(w.curBase), opt.After.Key...), 0)
		histStart = historyNamePrefix(nil, tableHistory, bucket, opt.After.Key)
		if opt.After.HistoryID != "" {
			histStart = append(historyKey(nil, tableHistory, bucket, opt.After.Key, opt.After.HistoryID), 0)
		}
	}
	w.curOK = w.cur.seekGE(maxBytes(curStart, curLower))
	if opt.History {
		betweenReads()
		if w.hist, err = r.newIter(histLower, successor(histLower)); err != nil {
			return nil, errors.Join(err, w.cur.close())
		}
		w.histOK = w.hist.seekGE(maxBytes(histStart, histLower))
	}
	return w, nil
}

func (w *versionWalker) close() error {
	err := w.cur.close()
	if w.hist != nil {
		err = errors.Join(err, w.hist.close())
	}
	return err
}

// names returns the object keys the two scans are on, nil for an
// exhausted scan; the history name is decoded into w.histName.
func (w *versionWalker) names() (cur, hist []byte, err error) {
	if w.curOK {
		cur = w.cur.key()[len(w.curBase):]
	}
	if w.histOK {
		rest := w.hist.key()[len(w.histBase):]
		n := len(rest) - VersionIDLen - 2
		if n < 0 || rest[n] != 0 || rest[n+1] != 1 {
			return nil, nil, fmt.Errorf("history key %q: %w", w.hist.key(), errBadKey)
		}
		name, ok := unescapeKey(rest[:n])
		if !ok {
			return nil, nil, fmt.Errorf("history key %q: %w", w.hist.key(), errBadKey)
		}
		w.histName = append(w.histName[:0], name...)
		hist = w.histName
	}
	return cur, hist, nil
}

func (w *versionWalker) run(ctx context.Context) ([]WalkEntry, WalkPosition, bool, error) {
	out := make([]WalkEntry, 0, min(w.opt.Limit, maxPrealloc))
	for w.curOK || w.histOK {
		if len(out)%ctxCheckEvery == ctxCheckEvery-1 {
			if err := ctx.Err(); err != nil {
				return nil, w.pos, false, err
			}
		}
		cn, hn, err := w.names()
		if err != nil {
			return nil, w.pos, false, err
		}
		if len(out) == w.opt.Limit {
			return out, w.pos, true, nil
		}
		fromCur := cn != nil && (hn == nil || bytes.Compare(cn, hn) <= 0)
		if fromCur {
			key := string(cn)
			e, err := w.entry(w.cur, key, "")
			if err != nil {
				return nil, w.pos, false, err
			}
			e.Latest = true
			out = append(out, e)
			w.pos = WalkPosition{Key: key, Started: true}
			w.curOK = w.cur.next()
			continue
		}
		key := string(hn)
		k := w.hist.key()
		hid := string(k[len(k)-VersionIDLen:])
		e, err := w.entry(w.hist, key, hid)
		if err != nil {
			return nil, w.pos, false, err
		}
		// The newest history entry of a key without a current object is
		// its latest version: the first entry of the key this walk meets,
		// unless it resumed inside the key (w.pos starts at opt.After).
		e.Latest = !(w.pos.Started && w.pos.Key == key)
		out = append(out, e)
		w.pos = WalkPosition{Key: key, HistoryID: hid, Started: true}
		w.histOK = w.hist.next()
	}
	return out, w.pos, false, nil
}

// entry decodes the record under it.
func (w *versionWalker) entry(it kvIter, key, hid string) (WalkEntry, error) {
	v, err := it.value()
	if err != nil {
		return WalkEntry{}, err
	}
	o, err := decodeObject(v, w.detail)
	if err != nil {
		return WalkEntry{}, fmt.Errorf("version of %q: %w", key, err)
	}
	return WalkEntry{Key: key, Object: o, HistoryID: hid}, nil
}

// ExpireKind says what Expire is asked to remove.
type ExpireKind uint8

// The kinds of ExpireTarget.
const (
	// ExpireCurrent expires the current object as a DeleteObject without
	// a version ID would: removed from an unversioned bucket, hidden under
	// a new delete marker in a versioned one (a null delete marker when
	// versioning is suspended, which replaces the null version).
	ExpireCurrent ExpireKind = iota + 1
	// ExpireNoncurrent removes a noncurrent version (an object or a delete
	// marker) for good.
	ExpireNoncurrent
	// ExpireDeleteMarker removes a delete marker that is its key's only
	// version, for good.
	ExpireDeleteMarker
)

// ExpireTarget names a version the caller found due, as WalkVersions
// returned it.
type ExpireTarget struct {
	Key  string
	Kind ExpireKind
	// VersionID is the version's Object.VersionID, unique to the write
	// that made it: the version is left alone if the key no longer has it
	// where it was.
	VersionID string
	// HistoryID is its place in the history table (WalkEntry.HistoryID),
	// for ExpireNoncurrent and ExpireDeleteMarker.
	HistoryID string
}

// ExpireState is what Expire tells its ExpireFunc about a target, read
// under the key's lock through the batch (so after the targets before it).
type ExpireState struct {
	// Version is the version's record as it is now, with its tags.
	Version *Object
	// Successor is when the version became noncurrent: the modification
	// time of the next newer version (ExpireNoncurrent).
	Successor time.Time
	// Newer counts the noncurrent versions newer than this one, at most
	// Expire's newerCap (ExpireNoncurrent).
	Newer int
}

// ExpireFunc decides whether target i is still due, from its state. It
// runs under the key's lock: it must be quick and do no I/O.
type ExpireFunc func(i int, st ExpireState) bool

// Expired reports what Expire did with one target.
type Expired struct {
	// Done reports that the version was removed (or hidden under a new
	// delete marker); false means it was left alone: gone, changed, no
	// longer in the place the kind needs, or not due any more.
	Done bool
	// DeleteMarker reports that a delete marker was written (ExpireCurrent
	// in a versioned bucket), or that the version removed was one.
	DeleteMarker bool
	// VersionID is the S3 version ID of the delete marker written, or of
	// the version removed; "" for an object removed from an unversioned
	// bucket.
	VersionID string
	// NullReplaced reports that the delete marker written (versioning
	// suspended) replaced the key's null version: the expired object
	// itself, or a noncurrent one. NullReplacedMarker says it was a
	// delete marker, NullReplacedSize how many bytes it held.
	NullReplaced, NullReplacedMarker bool
	NullReplacedSize                 int64
}

// Expire applies the lifecycle's decisions to bucket in one batch (one
// fsync): each target is checked again under the locks of every key
// involved (taken together, in ascending order, as DeleteVersions takes
// them), and removed only if the key still has that version in the place
// its kind needs and decide, called with the version's state as it is
// now, still finds it due. So a write that races the worker wins: a
// version overwritten, retagged, deleted or made current again since the
// caller examined it is left alone. Targets are applied in order, each
// seeing what the previous ones did; for noncurrent versions of one key,
// oldest first keeps each one's successor as the caller saw it.
//
// Removals go through the writes S3 requests use: usage is counted in
// the batch, blocks go to the garbage queue under the version's ID (a
// reader streaming it finishes first). It returns ErrNoBucket if the
// bucket does not exist.
func (db *DB) Expire(ctx context.Context, bucket string, targets []ExpireTarget, newerCap int, now time.Time, decide ExpireFunc) ([]Expired, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	bmu := db.bucketLock(bucket)
	bmu.RLock()
	defer bmu.RUnlock()
	tx := db.kv.begin(ctx)
	defer tx.end()
	tx.lockBucket(bucket, false)
	v, err := db.bucketVersioning(tx, bucket)
	if err != nil {
		return nil, err
	}
	keys := make([]string, len(targets))
	for i, t := range targets {
		keys[i] = t.Key
	}
	unlock := db.lockKeys(tx, bucket, keys)
	defer unlock()

	w := db.newIndexedWriter(tx, now)
	defer w.close()
	out := make([]Expired, len(targets))
	n := 0
	for i, t := range targets {
		var err error
		switch t.Kind {
		case ExpireCurrent:
			out[i], err = w.expireCurrent(bucket, v, t, func(st ExpireState) bool { return decide(i, st) })
		case ExpireNoncurrent:
			out[i], err = w.expireNoncurrent(bucket, t, newerCap, func(st ExpireState) bool { return decide(i, st) })
		case ExpireDeleteMarker:
			out[i], err = w.expireMarker(bucket, t, func(st ExpireState) bool { return decide(i, st) })
		default:
			err = fmt.Errorf("meta: unknown expire kind %d", t.Kind)
		}
		if err != nil {
			return nil, err
		}
		if out[i].Done {
			n++
		}
	}
	if n == 0 {
		return out, nil
	}
	if err := w.commit(); err != nil {
		return nil, fmt.Errorf("meta: commit expiry of %d versions in %s: %w", n, bucket, err)
	}
	return out, nil
}

// expireCurrent expires the current object of t.Key if it is still the
// version t names and still due.
func (w *writer) expireCurrent(bucket string, v Versioning, t ExpireTarget, due func(ExpireState) bool) (Expired, error) {
	cur, err := readCurrent(w.r, bucket, t.Key)
	if err != nil || cur == nil || cur.VersionID != t.VersionID || !due(ExpireState{Version: cur}) {
		return Expired{}, err
	}
	if v == Unversioned {
		w.deleteObject(bucket, t.Key, cur)
		w.garbage(cur.VersionID, cur.Blocks, nil)
		return Expired{Done: true}, nil
	}
	// While versioning is suspended the marker is the null version: it
	// replaces the key's null version, wherever it is (putVersion), whose
	// data is then gone for good.
	var null *Object
	if v == VersioningSuspended {
		if cur.Versioning != VersioningEnabled {
			null = cur
		} else if null, err = w.findNull(bucket, t.Key); err != nil {
			return Expired{}, err
		}
	}
	m := &Object{DeleteMarker: true, Modified: w.now}
	if err := w.putVersion(bucket, t.Key, v, cur, m); err != nil {
		return Expired{}, err
	}
	x := Expired{Done: true, DeleteMarker: true, VersionID: m.S3VersionID()}
	if null != nil {
		x.NullReplaced, x.NullReplacedMarker = true, null.DeleteMarker
		if !null.DeleteMarker {
			x.NullReplacedSize = null.Size
		}
	}
	return x, nil
}

// historyEntry reads the history record t names, or nil if the key no
// longer has that version there.
func (w *writer) historyEntry(bucket string, t ExpireTarget) (*Object, []byte, error) {
	if len(t.HistoryID) != VersionIDLen {
		return nil, nil, nil
	}
	hk := historyKey(nil, tableHistory, bucket, t.Key, t.HistoryID)
	val, err := w.r.get(hk, nil)
	if errors.Is(err, ErrNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("meta: read version of %s/%s: %w", bucket, t.Key, err)
	}
	o, err := decodeObject(val, objectLayout)
	if err != nil {
		return nil, nil, fmt.Errorf("meta: version of %s/%s: %w", bucket, t.Key, err)
	}
	if o.VersionID != t.VersionID {
		return nil, nil, nil
	}
	return &o, hk, nil
}

// expireNoncurrent removes the noncurrent version t names if it is still
// there, still noncurrent and still due. Its successor and the count of
// newer noncurrent versions are read backwards from it, newerCap+1
// entries at most, so the check costs the same however deep the key's
// history is.
func (w *writer) expireNoncurrent(bucket string, t ExpireTarget, newerCap int, due func(ExpireState) bool) (Expired, error) {
	rec, hk, err := w.historyEntry(bucket, t)
	if err != nil || rec == nil {
		return Expired{}, err
	}
	cur, err := readCurrent(w.r, bucket, t.Key)
	if err != nil {
		return Expired{}, err
	}
	p := historyNamePrefix(nil, tableHistory, bucket, t.Key)
	it, err := w.r.newIter(p, successor(p))
	if err != nil {
		return Expired{}, fmt.Errorf("meta: read versions of %s/%s: %w", bucket, t.Key, err)
	}
	// Entries before hk in the history are newer versions.
	above := 0
	var succ time.Time
	for ok := it.seekLT(hk); ok && above <= newerCap; ok = it.prev() {
		if above == 0 {
			val, err := it.value()
			if err != nil {
				return Expired{}, errors.Join(err, it.close())
			}
			s, err := decodeObject(val, objectSummary)
			if err != nil {
				return Expired{}, errors.Join(fmt.Errorf("meta: version of %s/%s: %w", bucket, t.Key, err), it.close())
			}
			succ = s.Modified
		}
		above++
	}
	if err := it.close(); err != nil {
		return Expired{}, fmt.Errorf("meta: read versions of %s/%s: %w", bucket, t.Key, err)
	}
	newer := above // with a current object, every newer history entry is noncurrent
	switch {
	case above == 0 && cur == nil:
		return Expired{}, nil // the latest version: not noncurrent
	case above == 0:
		succ = cur.Modified
	case cur == nil:
		newer-- // the newest history entry is the latest version, a delete marker
	}
	if !due(ExpireState{Version: rec, Successor: succ, Newer: min(newer, newerCap)}) {
		return Expired{}, nil
	}
	w.deleteHistory(bucket, t.Key, rec)
	w.garbage(rec.VersionID, rec.Blocks, nil)
	return Expired{Done: true, DeleteMarker: rec.DeleteMarker, VersionID: rec.S3VersionID()}, nil
}

// expireMarker removes the delete marker t names if it is still its key's
// only version and still due.
func (w *writer) expireMarker(bucket string, t ExpireTarget, due func(ExpireState) bool) (Expired, error) {
	rec, _, err := w.historyEntry(bucket, t)
	if err != nil || rec == nil || !rec.DeleteMarker {
		return Expired{}, err
	}
	if _, err := w.r.get(objectKey(nil, bucket, t.Key), nil); err == nil {
		return Expired{}, nil
	} else if !errors.Is(err, ErrNotFound) {
		return Expired{}, fmt.Errorf("meta: read object %s/%s: %w", bucket, t.Key, err)
	}
	p := historyNamePrefix(nil, tableHistory, bucket, t.Key)
	it, err := w.r.newIter(p, successor(p))
	if err != nil {
		return Expired{}, fmt.Errorf("meta: read versions of %s/%s: %w", bucket, t.Key, err)
	}
	n := 0
	for ok := it.first(); ok && n < 2; ok = it.next() {
		n++
	}
	if err := it.close(); err != nil {
		return Expired{}, fmt.Errorf("meta: read versions of %s/%s: %w", bucket, t.Key, err)
	}
	if n != 1 || !due(ExpireState{Version: rec}) {
		return Expired{}, nil
	}
	w.deleteHistory(bucket, t.Key, rec)
	return Expired{Done: true, DeleteMarker: true, VersionID: rec.S3VersionID()}, nil
}
