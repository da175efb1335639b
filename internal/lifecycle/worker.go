package lifecycle

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/s3err"
)

// Defaults for zero Config fields.
const (
	// DefaultInterval is how often the worker runs a pass. S3 applies
	// lifecycle rules once a day, asynchronously; an hour makes expired
	// objects go within an hour of their midnight.
	DefaultInterval = time.Hour
	// DefaultBatch is how many versions one read of a walk returns.
	DefaultBatch = 1000
	// DefaultActBatch is how many removals one commit makes at most; a
	// commit holds the locks of the keys it touches while it is made.
	DefaultActBatch = 100
)

// firstPassDelay bounds the wait for the first pass after the worker
// starts, so that a server restarted more often than the interval still
// applies its rules.
const firstPassDelay = time.Minute

// Config tunes a Worker. Zero values take the defaults noted.
type Config struct {
	// Interval is the time between passes (default 1h); negative turns
	// background passes off (RunPass still works).
	Interval time.Duration
	// Day is the length of a lifecycle day, for tests only (default 24h,
	// S3's; with another length due times are not rounded; see Calendar).
	Day time.Duration
	// Batch is how many versions (or uploads) one read returns (default
	// 1000, at most 1000).
	Batch int
	// ActBatch is how many removals one commit makes at most (default
	// 100).
	ActBatch int
	// Clock returns the time rules are due against; nil means time.Now.
	// Tests move it instead of waiting.
	Clock func() time.Time `toml:"-"`
}

func (c Config) withDefaults() (Config, error) {
	switch {
	case c.Day < 0:
		return c, fmt.Errorf("lifecycle: negative day %v", c.Day)
	case c.Batch < 0 || c.ActBatch < 0:
		return c, errors.New("lifecycle: negative batch size")
	}
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if c.Batch == 0 || c.Batch > DefaultBatch {
		c.Batch = DefaultBatch
	}
	if c.ActBatch == 0 {
		c.ActBatch = DefaultActBatch
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	return c, nil
}

// ActionKind is what the worker did to a version or an upload.
type ActionKind uint8

// The kinds of Action. Their names follow the operations S3 logs for
// lifecycle actions.
const (
	// ObjectExpired: a current version of an unversioned bucket deleted.
	ObjectExpired ActionKind = iota + 1
	// DeleteMarkerCreated: a current version of a versioned bucket
	// expired under a new delete marker.
	DeleteMarkerCreated
	// VersionRemoved: a noncurrent version (or noncurrent delete marker)
	// removed for good; also the null version a DeleteMarkerCreated
	// replaced while versioning is suspended (Action.Replaced).
	VersionRemoved
	// DeleteMarkerRemoved: a delete marker left alone removed; also a null
	// delete marker a DeleteMarkerCreated replaced (Action.Replaced).
	DeleteMarkerRemoved
	// UploadAborted: an incomplete multipart upload aborted.
	UploadAborted
)

// String returns the operation name S3's server access logs use for the
// action.
func (k ActionKind) String() string {
	switch k {
	case ObjectExpired, VersionRemoved, DeleteMarkerRemoved:
		return "S3.EXPIRE.OBJECT"
	case DeleteMarkerCreated:
		return "S3.CREATE.DELETEMARKER"
	case UploadAborted:
		return "S3.DELETE.UPLOAD"
	}
	return "S3.LIFECYCLE"
}

// Action is one thing the worker did.
type Action struct {
	Time   time.Time
	Kind   ActionKind
	Bucket string
	Key    string
	// VersionID is the version removed, or the delete marker written
	// (DeleteMarkerCreated); "" for an object of an unversioned bucket.
	VersionID string
	UploadID  string // UploadAborted
	RuleID    string // the rule that was due
	Size      int64  // the bytes removed (ObjectExpired, VersionRemoved)
	// Replaced reports a null version removed because the null delete
	// marker an expiry wrote (versioning suspended) replaced it, as S3's
	// null versions replace each other; it is reported just before that
	// DeleteMarkerCreated.
	Replaced bool
}

// Observer is told about every action the worker takes, after it is
// committed: the audit log records them. It must not block.
type Observer interface {
	ObserveLifecycle(a *Action)
}

// BucketResult is what a pass did in one bucket.
type BucketResult struct {
	Bucket               string
	Examined             int // versions and uploads looked at
	ObjectsExpired       int // current versions deleted or hidden under a delete marker
	DeleteMarkersCreated int // of those, hidden under a delete marker
	VersionsRemoved      int // noncurrent versions removed, and null versions a null delete marker replaced
	DeleteMarkersRemoved int // delete markers left alone removed, and null ones a null delete marker replaced
	UploadsAborted       int
	Skipped              int   // found due, left alone: changed since, or no longer due
	DeletedBytes         int64 // bytes of the versions removed (not of those hidden under a marker)
	Err                  error
}

// PassResult is what one pass did.
type PassResult struct {
	Buckets  []BucketResult // in name order
	Duration time.Duration
}

// Totals sums the buckets' results (Err is the first error).
func (p *PassResult) Totals() BucketResult {
	var t BucketResult
	for _, b := range p.Buckets {
		t.Examined += b.Examined
		t.ObjectsExpired += b.ObjectsExpired
		t.DeleteMarkersCreated += b.DeleteMarkersCreated
		t.VersionsRemoved += b.VersionsRemoved
		t.DeleteMarkersRemoved += b.DeleteMarkersRemoved
		t.UploadsAborted += b.UploadsAborted
		t.Skipped += b.Skipped
		t.DeletedBytes += b.DeletedBytes
		if t.Err == nil {
			t.Err = b.Err
		}
	}
	return t
}

// Stats counts what the worker did since it started, for metrics.
type Stats struct {
	Passes, Errors                                uint64
	Examined, ObjectsExpired, VersionsRemoved     uint64
	DeleteMarkersRemoved, UploadsAborted, Skipped uint64
	PassSeconds, LastPassSeconds                  float64
	LastPassEnd                                   time.Time // zero before the first pass
}

// Worker applies buckets' lifecycle rules. It is safe for concurrent use;
// one pass runs at a time.
type Worker struct {
	cfg Config
	svc *objects.Service
	log *slog.Logger
	obs Observer
	cal Calendar

	passMu sync.Mutex // serialises passes

	// testHookFlush, if set, runs before each commit of removals: tests
	// race writes against the worker with it.
	testHookFlush func()

	passes, errs, examined, expired, removed, markers, aborted, skipped atomic.Uint64
	statsMu                                                             sync.Mutex // guards passSeconds, lastPass, lastEnd
	passSeconds, lastPass                                               float64
	lastEnd                                                             time.Time
}

// New returns a Worker over svc. A nil log discards; obs may be nil.
func New(cfg Config, svc *objects.Service, log *slog.Logger, obs Observer) (*Worker, error) {
	if svc == nil {
		return nil, errors.New("lifecycle: nil object service")
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Worker{cfg: cfg, svc: svc, log: log, obs: obs, cal: Calendar{Day: cfg.Day}}, nil
}

// Stats returns the counters.
func (w *Worker) Stats() Stats {
	w.statsMu.Lock()
	defer w.statsMu.Unlock()
	return Stats{
		Passes: w.passes.Load(), Errors: w.errs.Load(), Examined: w.examined.Load(),
		ObjectsExpired: w.expired.Load(), VersionsRemoved: w.removed.Load(), DeleteMarkersRemoved: w.markers.Load(),
		UploadsAborted: w.aborted.Load(), Skipped: w.skipped.Load(),
		PassSeconds: w.passSeconds, LastPassSeconds: w.lastPass, LastPassEnd: w.lastEnd,
	}
}

// Run runs a pass over every bucket with a configuration every Interval,
// the first after at most a minute, until ctx ends; it returns nil then.
// A failed pass is logged and counted, and the next one tries again.
func (w *Worker) Run(ctx context.Context) error {
	if w.cfg.Interval < 0 {
		<-ctx.Done()
		return nil
	}
	t := time.NewTimer(min(w.cfg.Interval, firstPassDelay))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		res, err := w.RunPass(ctx, "")
		if ctx.Err() != nil {
			return nil
		}
		tot := res.Totals()
		switch {
		case err != nil || tot.Err != nil:
			w.log.WarnContext(ctx, "lifecycle pass failed", "err", errors.Join(err, tot.Err), "buckets", len(res.Buckets))
		case tot.ObjectsExpired+tot.VersionsRemoved+tot.DeleteMarkersRemoved+tot.UploadsAborted > 0:
			w.log.InfoContext(ctx, "lifecycle pass", "buckets", len(res.Buckets), "examined", tot.Examined,
				"objects_expired", tot.ObjectsExpired, "versions_removed", tot.VersionsRemoved,
				"delete_markers_removed", tot.DeleteMarkersRemoved, "uploads_aborted", tot.UploadsAborted,
				"skipped", tot.Skipped, "duration", res.Duration)
		}
		t.Reset(w.cfg.Interval)
	}
}

// RunPass applies the rules of bucket now, or of every bucket with a
// lifecycle configuration if bucket is "". It waits for a pass in
// progress to end first. Errors: NoSuchBucket and
// NoSuchLifecycleConfiguration for a named bucket, a failure to list the
// configurations, and the context's; a failure in one bucket is that
// bucket's Err, and the pass goes on with the others.
func (w *Worker) RunPass(ctx context.Context, bucket string) (PassResult, error) {
	w.passMu.Lock()
	defer w.passMu.Unlock()
	start := time.Now() // durations are measured, not decided: the real clock
	var res PassResult
	docs, err := w.configs(ctx, bucket)
	if err == nil {
		for _, b := range slices.Sorted(mapKeys(docs)) {
			if err = ctx.Err(); err != nil {
				break
			}
			br := w.runBucket(ctx, b, docs[b])
			if br.Err != nil {
				w.errs.Add(1)
				w.log.WarnContext(ctx, "lifecycle failed in a bucket", "bucket", b, "err", br.Err)
			}
			res.Buckets = append(res.Buckets, br)
		}
	}
	res.Duration = time.Since(start)
	w.passes.Add(1)
	if err != nil && ctx.Err() == nil && s3err.CodeOf(err) == s3err.InternalError {
		w.errs.Add(1) // not a missing bucket or configuration asked for by name
	}
	w.statsMu.Lock()
	w.passSeconds += res.Duration.Seconds()
	w.lastPass, w.lastEnd = res.Duration.Seconds(), time.Now()
	w.statsMu.Unlock()
	return res, err
}

func mapKeys(m map[string][]byte) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// configs returns the configuration documents of the pass, by bucket.
func (w *Worker) configs(ctx context.Context, bucket string) (map[string][]byte, error) {
	if bucket == "" {
		return w.svc.BucketConfigs(ctx, objects.ConfigLifecycle)
	}
	doc, ok, err := w.svc.BucketConfig(ctx, bucket, objects.ConfigLifecycle)
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, s3err.New(s3err.NoSuchLifecycleConfiguration, bucket).With("BucketName", bucket)
	}
	return map[string][]byte{bucket: doc}, nil
}

// bucketRun is the state of one bucket's part of a pass.
type bucketRun struct {
	w      *Worker
	bucket string
	doc    []byte // the configuration the pass applies
	c      *Configuration
	plan   Plan
	now    time.Time
	res    BucketResult

	pending []objects.ExpireTarget // targets not yet applied, whole keys
	key     keyState               // the key the walk is in
}

// keyState follows one key through the walk: its versions come newest
// first, possibly over several batches.
type keyState struct {
	name        string
	versions    int                    // versions seen
	noncurrent  int                    // noncurrent versions seen: the newer count of the next one
	successor   time.Time              // Last-Modified of the last version seen
	marker      *objects.Version       // the latest version, if it is a delete marker
	targets     []objects.ExpireTarget // noncurrent targets, newest first
	current     *objects.ExpireTarget  // the current version, if due
	allTargeted bool                   // every version but the latest is a target
}

func (w *Worker) runBucket(ctx context.Context, bucket string, doc []byte) BucketResult {
	r := &bucketRun{w: w, bucket: bucket, doc: doc, now: w.cfg.Clock(), res: BucketResult{Bucket: bucket}}
	c, err := Decode(doc)
	if err != nil {
		r.res.Err = err
		return r.res
	}
	r.c, r.plan = c, c.Plan()
	switch err := r.run(ctx); {
	case errors.Is(err, errConfigChanged):
		w.log.InfoContext(ctx, "lifecycle configuration changed during a pass; the next pass applies it", "bucket", bucket)
	case s3err.CodeOf(err) == s3err.NoSuchBucket:
		// Deleted since the pass listed the configurations: nothing is
		// left to apply them to, and nothing failed.
		w.log.InfoContext(ctx, "bucket deleted during a lifecycle pass", "bucket", bucket)
	case err != nil:
		r.res.Err = err
	}
	return r.res
}

// run walks what the plan says to.
func (r *bucketRun) run(ctx context.Context) error {
	if r.plan.Current || r.plan.Noncurrent {
		for _, p := range r.plan.Prefixes {
			if err := r.walk(ctx, p); err != nil {
				return err
			}
		}
	}
	if r.plan.Uploads {
		for _, p := range r.plan.UploadPrefixes {
			if err := r.uploads(ctx, p); err != nil {
				return err
			}
		}
	}
	return nil
}

// errConfigChanged stops a bucket's walk when its configuration changed
// during the pass: the next pass applies the new one.
var errConfigChanged = errors.New("lifecycle: configuration changed during the pass")

// walk goes through the versions under prefix in batches, collecting what
// is due and applying it a commit at a time.
func (r *bucketRun) walk(ctx context.Context, prefix string) error {
	opt := objects.WalkOptions{Prefix: prefix, Limit: r.w.cfg.Batch, Noncurrent: r.plan.Noncurrent, Tags: r.plan.Tags}
	r.key = keyState{}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		vs, pos, more, err := r.w.svc.WalkVersions(ctx, r.bucket, opt)
		if err != nil {
			return err
		}
		r.res.Examined += len(vs)
		r.w.examined.Add(uint64(len(vs)))
		for i := range vs {
			if err := r.visit(ctx, &vs[i]); err != nil {
				return err
			}
		}
		if !more {
			r.endKey()
			return r.flush(ctx)
		}
		opt.After = pos
	}
}

// visit looks at one version, the next of the walk.
func (r *bucketRun) visit(ctx context.Context, v *objects.Version) error {
	if v.Key != r.key.name {
		r.endKey()
		if len(r.pending) >= r.w.cfg.ActBatch {
			if err := r.flush(ctx); err != nil {
				return err
			}
		}
		r.key = keyState{name: v.Key, allTargeted: true}
	}
	k := &r.key
	k.versions++
	switch {
	case v.Latest && v.DeleteMarker:
		k.marker = v
	case v.Latest:
		if d, ok := r.c.Expiry(object(v), v.Modified, r.w.cal); ok && !d.At.After(r.now) {
			k.current = &objects.ExpireTarget{Version: *v, Kind: objects.ExpireCurrent}
		}
	default:
		due := false
		if !k.successor.IsZero() {
			d, ok := r.c.NoncurrentExpiry(object(v), k.successor, k.noncurrent, r.w.cal)
			due = ok && !d.At.After(r.now)
		}
		if due {
			if len(k.targets) >= 4*r.w.cfg.ActBatch {
				// A key with very many versions due: hold only the
				// oldest of them, which the walk (newest first) sees
				// last, and leave the newer ones to the next pass.
				// Removing a version changes when the next older one
				// became noncurrent (its successor is then a newer
				// version), so a newer due version must never go
				// before the older ones.
				k.targets = append(k.targets[:0], k.targets[1:]...)
				k.allTargeted = false
			}
			k.targets = append(k.targets, objects.ExpireTarget{Version: *v, Kind: objects.ExpireNoncurrent})
		} else {
			k.allTargeted = false
		}
		k.noncurrent++
	}
	k.successor = v.Modified
	return nil
}

// object is what a rule's filter sees of v.
func object(v *objects.Version) Object {
	return Object{Key: v.Key, Size: v.Size, Tags: v.Tags}
}

// moveTargets moves the key's noncurrent targets to pending, oldest
// first, so that removing one never changes the successor of another.
func (r *bucketRun) moveTargets() {
	k := &r.key
	for i := len(k.targets) - 1; i >= 0; i-- {
		r.pending = append(r.pending, k.targets[i])
	}
	k.targets = k.targets[:0]
}

// endKey adds the key's targets to pending: its noncurrent versions, its
// delete marker if it is (or will be, once they are gone) the key's only
// version, or its current version.
func (r *bucketRun) endKey() {
	k := &r.key
	if k.name == "" {
		return
	}
	r.moveTargets()
	if k.marker != nil && (k.versions == 1 || k.allTargeted) {
		if d, ok := r.c.MarkerExpiry(k.name, k.marker.Modified, r.w.cal); ok && !d.At.After(r.now) {
			r.pending = append(r.pending, objects.ExpireTarget{Version: *k.marker, Kind: objects.ExpireDeleteMarker})
		}
	}
	if k.current != nil {
		r.pending = append(r.pending, *k.current)
	}
	r.key = keyState{}
}

// flush applies the pending targets in commits of at most ActBatch,
// after checking that the configuration is still the one the pass began
// with. Each target is decided again under its key's lock from the
// version as it is then (Service.Expire); the rule that was due is
// recorded with the action.
func (r *bucketRun) flush(ctx context.Context) error {
	for len(r.pending) > 0 {
		n := min(len(r.pending), r.w.cfg.ActBatch)
		chunk := r.pending[:n]
		if r.w.testHookFlush != nil {
			r.w.testHookFlush()
		}
		doc, ok, err := r.w.svc.BucketConfig(ctx, r.bucket, objects.ConfigLifecycle)
		if err != nil {
			return err
		}
		if !ok || !bytes.Equal(doc, r.doc) {
			r.pending = r.pending[:0]
			return errConfigChanged
		}
		rules := make([]string, n)
		res, err := r.w.svc.Expire(ctx, r.bucket, chunk, r.plan.NewerCap, func(i int, st objects.ExpireState) bool {
			d, ok := r.due(chunk[i], &st)
			rules[i] = d.RuleID
			return ok
		})
		if err != nil {
			return err
		}
		for i, x := range res {
			r.record(&chunk[i], x, rules[i])
		}
		r.pending = r.pending[n:]
	}
	r.pending = r.pending[:0]
	return nil
}

// due decides a target from the state Expire found: the same decision the
// walk made, from the version as it is now.
func (r *bucketRun) due(t objects.ExpireTarget, st *objects.ExpireState) (Due, bool) {
	v := &st.Version
	var d Due
	var ok bool
	switch t.Kind {
	case objects.ExpireCurrent:
		d, ok = r.c.Expiry(object(v), v.Modified, r.w.cal)
	case objects.ExpireNoncurrent:
		d, ok = r.c.NoncurrentExpiry(object(v), st.NoncurrentSince, st.Newer, r.w.cal)
	case objects.ExpireDeleteMarker:
		d, ok = r.c.MarkerExpiry(v.Key, v.Modified, r.w.cal)
	}
	return d, ok && !d.At.After(r.now)
}

// record counts one outcome and tells the observer.
func (r *bucketRun) record(t *objects.ExpireTarget, x objects.ExpireResult, ruleID string) {
	if !x.Done {
		r.res.Skipped++
		r.w.skipped.Add(1)
		return
	}
	a := Action{Time: r.w.cfg.Clock(), Bucket: r.bucket, Key: t.Version.Key, RuleID: ruleID}
	switch t.Kind {
	case objects.ExpireCurrent:
		r.res.ObjectsExpired++
		r.w.expired.Add(1)
		a.Kind, a.VersionID, a.Size = ObjectExpired, t.Version.VersionID, t.Version.Size
		if x.DeleteMarker {
			r.res.DeleteMarkersCreated++
			a.Kind, a.VersionID, a.Size = DeleteMarkerCreated, x.VersionID, 0
		} else {
			a.VersionID = ""
			r.res.DeletedBytes += t.Version.Size
		}
	case objects.ExpireNoncurrent:
		r.res.VersionsRemoved++
		r.res.DeletedBytes += t.Version.Size
		r.w.removed.Add(1)
		a.Kind, a.VersionID, a.Size = VersionRemoved, x.VersionID, t.Version.Size
	case objects.ExpireDeleteMarker:
		r.res.DeleteMarkersRemoved++
		r.w.markers.Add(1)
		a.Kind, a.VersionID = DeleteMarkerRemoved, x.VersionID
	}
	if x.NullReplaced {
		// The marker, being the null version, replaced the key's null
		// version (the object just expired, or a noncurrent one): that
		// version is gone for good, and is reported removed, first.
		n := Action{Time: a.Time, Bucket: r.bucket, Key: t.Version.Key, RuleID: ruleID, VersionID: "null", Replaced: true}
		if x.NullReplacedMarker {
			r.res.DeleteMarkersRemoved++
			r.w.markers.Add(1)
			n.Kind = DeleteMarkerRemoved
		} else {
			r.res.VersionsRemoved++
			r.res.DeletedBytes += x.NullReplacedSize
			r.w.removed.Add(1)
			n.Kind, n.Size = VersionRemoved, x.NullReplacedSize
		}
		if r.w.obs != nil {
			r.w.obs.ObserveLifecycle(&n)
		}
	}
	if r.w.obs != nil {
		r.w.obs.ObserveLifecycle(&a)
	}
}

// uploads aborts the incomplete multipart uploads under prefix that a
// rule has made due, reading them a batch at a time.
func (r *bucketRun) uploads(ctx context.Context, prefix string) error {
	in := objects.ListUploadsInput{Prefix: prefix, MaxUploads: r.w.cfg.Batch}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		page, err := r.w.svc.ListMultipartUploads(ctx, r.bucket, in)
		if err != nil {
			return err
		}
		r.res.Examined += len(page.Uploads)
		r.w.examined.Add(uint64(len(page.Uploads)))
		for _, u := range page.Uploads {
			d, ok := r.c.AbortExpiry(u.Key, u.Initiated, r.w.cal)
			if !ok || d.At.After(r.now) {
				continue
			}
			if err := r.abort(ctx, u, d.RuleID); err != nil {
				return err
			}
		}
		if !page.IsTruncated {
			return nil
		}
		in.KeyMarker, in.UploadIDMarker = page.NextKeyMarker, page.NextUploadIDMarker
	}
}

// abort aborts one upload, unless the configuration changed. An upload
// completed or aborted since it was listed is skipped.
func (r *bucketRun) abort(ctx context.Context, u objects.Upload, ruleID string) error {
	if r.w.testHookFlush != nil {
		r.w.testHookFlush()
	}
	doc, ok, err := r.w.svc.BucketConfig(ctx, r.bucket, objects.ConfigLifecycle)
	if err != nil {
		return err
	}
	if !ok || !bytes.Equal(doc, r.doc) {
		return errConfigChanged
	}
	err = r.w.svc.AbortMultipartUpload(ctx, r.bucket, u.Key, u.UploadID)
	if s3err.Is(err, s3err.NoSuchUpload) {
		r.res.Skipped++
		r.w.skipped.Add(1)
		return nil
	}
	if err != nil {
		return err
	}
	r.res.UploadsAborted++
	r.w.aborted.Add(1)
	if r.w.obs != nil {
		r.w.obs.ObserveLifecycle(&Action{Time: r.w.cfg.Clock(), Kind: UploadAborted, Bucket: r.bucket, Key: u.Key, UploadID: u.UploadID, RuleID: ruleID})
	}
	return nil
}
