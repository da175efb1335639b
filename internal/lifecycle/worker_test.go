package lifecycle

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/coffer-s3/coffer/internal/blob/memblob"
	"github.com/coffer-s3/coffer/internal/meta"
	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/s3err"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// recorder is an Observer that keeps the actions.
type recorder struct {
	mu      sync.Mutex
	actions []Action
}

func (r *recorder) ObserveLifecycle(a *Action) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.actions = append(r.actions, *a)
}

// strings returns the actions as "kind key rule" lines.
func (r *recorder) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, a := range r.actions {
		s := fmt.Sprintf("%s %s %s", a.Kind, a.Key, a.RuleID)
		if a.UploadID != "" {
			s += " upload"
		}
		out = append(out, s)
	}
	return out
}

// t0 is when the tests' objects are written: mid-afternoon, so that S3's
// rounding to midnight shows.
var t0 = time.Date(2026, 3, 10, 15, 0, 0, 0, time.UTC)

// env is a worker over a real object service (meta in a temporary
// directory, blocks in memory), both on fake clocks.
type env struct {
	t        *testing.T
	svc      *objects.Service
	store    *memblob.Store
	w        *Worker
	obs      *recorder
	svcClock *fakeClock // when objects are written
	clock    *fakeClock // when the worker looks
}

func newEnv(t *testing.T, cfg Config) *env {
	t.Helper()
	db, err := meta.Open(meta.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	e := &env{t: t, store: memblob.New(), obs: &recorder{}, svcClock: &fakeClock{t: t0}, clock: &fakeClock{t: t0}}
	e.svc, err = objects.New(objects.Config{InlineThreshold: 64, BlockSize: 256, GCInterval: -1, Clock: e.svcClock.Now}, db, e.store, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Clock = e.clock.Now
	e.w, err = New(cfg, e.svc, nil, e.obs)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) bucket(name, versioning string) {
	e.t.Helper()
	ctx := context.Background()
	if err := e.svc.CreateBucket(ctx, name, objects.CreateBucketInput{}); err != nil {
		e.t.Fatal(err)
	}
	if versioning != "" {
		if err := e.svc.PutBucketVersioning(ctx, name, "Enabled", ""); err != nil {
			e.t.Fatal(err)
		}
		if err := e.svc.PutBucketVersioning(ctx, name, versioning, ""); err != nil {
			e.t.Fatal(err)
		}
	}
}

func (e *env) rules(bucket string, rules ...Rule) {
	e.t.Helper()
	c := &Configuration{Rules: rules}
	if err := c.Validate(); err != nil {
		e.t.Fatalf("rules: %v", err)
	}
	st := NewStore(e.svc)
	if err := st.Put(context.Background(), bucket, c); err != nil {
		e.t.Fatal(err)
	}
}

// put writes bucket/key with size bytes and tags at the service clock.
func (e *env) put(bucket, key string, size int, tags ...Tag) {
	e.t.Helper()
	data := bytes.Repeat([]byte{'x'}, size)
	if _, err := e.svc.PutObject(context.Background(), bucket, key, objects.PutInput{Size: int64(size), Tags: tags}, bytes.NewReader(data)); err != nil {
		e.t.Fatalf("put %s/%s: %v", bucket, key, err)
	}
}

func (e *env) del(bucket, key string) {
	e.t.Helper()
	if _, err := e.svc.DeleteObject(context.Background(), bucket, objects.ObjectRef{Key: key}); err != nil {
		e.t.Fatal(err)
	}
}

// pass runs a pass with the worker's clock at now.
func (e *env) pass(now time.Time) BucketResult {
	e.t.Helper()
	e.clock.Set(now)
	res, err := e.w.RunPass(context.Background(), "")
	if err != nil {
		e.t.Fatalf("RunPass: %v", err)
	}
	tot := res.Totals()
	if tot.Err != nil {
		e.t.Fatalf("RunPass: bucket error %v", tot.Err)
	}
	return tot
}

// versions lists bucket's versions as "key" (current object), "key~"
// (noncurrent), "key dm" (latest delete marker), "key dm~" (noncurrent
// marker).
func (e *env) versions(bucket string) []string {
	e.t.Helper()
	res, err := e.svc.ListObjectVersions(context.Background(), bucket, objects.ListVersionsInput{MaxKeys: 1000})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, v := range res.Versions {
		s := v.Key
		if v.DeleteMarker {
			s += " dm"
		}
		if !v.IsLatest {
			s += "~"
		}
		out = append(out, s)
	}
	return out
}

func (e *env) wantVersions(bucket string, want ...string) {
	e.t.Helper()
	if diff := cmp.Diff(want, e.versions(bucket), cmpopts.EquateEmpty()); diff != "" {
		e.t.Fatalf("versions of %s (-want +got):\n%s", bucket, diff)
	}
}

func day(n int) time.Duration { return time.Duration(n) * 24 * time.Hour }

func TestWorkerUnversioned(t *testing.T) {
	e := newEnv(t, Config{})
	e.bucket("bkt", "")
	e.rules("bkt", prefixRule("logs", "logs/", days(1)))
	e.put("bkt", "logs/a", 10)
	e.put("bkt", "logs/big", 1000) // block object
	e.put("bkt", "other", 10)

	// Created 15:00 on the 10th with 1 day: due at midnight starting the 12th.
	if got := e.pass(t0.Add(day(1))); got.ObjectsExpired != 0 || got.Examined != 2 {
		t.Fatalf("pass before the due time = %+v", got)
	}
	e.wantVersions("bkt", "logs/a", "logs/big", "other")
	got := e.pass(time.Date(2026, 3, 12, 0, 0, 0, 0, time.UTC))
	if got.ObjectsExpired != 2 || got.DeleteMarkersCreated != 0 || got.DeletedBytes != 1010 {
		t.Fatalf("pass at the due time = %+v", got)
	}
	e.wantVersions("bkt", "other")
	if diff := cmp.Diff([]string{"S3.EXPIRE.OBJECT logs/a logs", "S3.EXPIRE.OBJECT logs/big logs"}, e.obs.lines()); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
	u, err := e.svc.BucketUsage(context.Background(), "bkt")
	if err != nil || u.Usage.Objects != 1 || u.Usage.Bytes != 10 {
		t.Errorf("usage = %+v, %v", u.Usage, err)
	}
	// The big object's blocks went to the garbage queue with it.
	e.svcClock.Set(t0.Add(day(3)))
	if _, err := e.svc.GC(context.Background(), time.Hour); err != nil {
		t.Fatal(err)
	}
	n := 0
	_ = e.store.List(context.Background(), "", func(string) error { n++; return nil })
	if n != 0 {
		t.Errorf("%d blobs left after GC", n)
	}
	st := e.w.Stats()
	if st.Passes != 2 || st.ObjectsExpired != 2 || st.Examined != 4 || st.LastPassEnd.IsZero() {
		t.Errorf("stats = %+v", st)
	}
}

func TestWorkerVersioned(t *testing.T) {
	e := newEnv(t, Config{})
	e.bucket("bkt", "Enabled")
	e.rules("bkt",
		Rule{ID: "cur", Status: Enabled, Filter: &Filter{Prefix: ptr("cur/")}, Expiration: days(2)},
		Rule{ID: "nc", Status: Enabled, Filter: &Filter{Prefix: ptr("nc/")},
			NoncurrentVersionExpiration: &NoncurrentVersionExpiration{NoncurrentDays: ptr(1), NewerNoncurrentVersions: ptr(2)}},
		Rule{ID: "dm", Status: Enabled, Filter: &Filter{Prefix: ptr("dm/")}, Expiration: &Expiration{ExpiredObjectDeleteMarker: ptr(true)}},
	)
	e.put("bkt", "cur/a", 5)
	for i := range 5 { // nc/k: one current and four noncurrent versions
		e.svcClock.Set(t0.Add(time.Duration(i) * time.Hour))
		e.put("bkt", "nc/k", 5+i)
	}
	e.svcClock.Set(t0)
	e.del("bkt", "dm/alone")   // a delete marker on nothing: alone at once
	e.put("bkt", "dm/over", 5) // a delete marker over a version: not alone
	e.del("bkt", "dm/over")    //
	e.wantVersions("bkt", "cur/a", "dm/alone dm", "dm/over dm", "dm/over~", "nc/k", "nc/k~", "nc/k~", "nc/k~", "nc/k~")

	// A day later nothing is due but the lone marker; the noncurrent
	// versions became noncurrent on the 10th (15:00 to 18:00) and are due
	// at midnight starting the 12th.
	got := e.pass(t0.Add(day(1)))
	if got.DeleteMarkersRemoved != 1 || got.VersionsRemoved != 0 || got.ObjectsExpired != 0 {
		t.Fatalf("first pass = %+v", got)
	}
	e.wantVersions("bkt", "cur/a", "dm/over dm", "dm/over~", "nc/k", "nc/k~", "nc/k~", "nc/k~", "nc/k~")
	// Two days later: nc/k keeps its 2 newest noncurrent versions, and
	// cur/a (2 days, due the 13th) is not due yet.
	got = e.pass(time.Date(2026, 3, 12, 0, 0, 0, 0, time.UTC))
	if got.VersionsRemoved != 2 || got.ObjectsExpired != 0 {
		t.Fatalf("second pass = %+v", got)
	}
	e.wantVersions("bkt", "cur/a", "dm/over dm", "dm/over~", "nc/k", "nc/k~", "nc/k~")
	got = e.pass(time.Date(2026, 3, 13, 0, 0, 0, 0, time.UTC))
	if got.ObjectsExpired != 1 || got.DeleteMarkersCreated != 1 {
		t.Fatalf("third pass = %+v", got)
	}
	e.wantVersions("bkt", "cur/a dm", "cur/a~", "dm/over dm", "dm/over~", "nc/k", "nc/k~", "nc/k~")
	want := []string{"S3.EXPIRE.OBJECT dm/alone dm", "S3.EXPIRE.OBJECT nc/k nc", "S3.EXPIRE.OBJECT nc/k nc", "S3.CREATE.DELETEMARKER cur/a cur"}
	if diff := cmp.Diff(want, e.obs.lines()); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
	for _, a := range e.obs.actions {
		if a.VersionID == "" || len(a.VersionID) != 32 {
			t.Errorf("action %+v without the version ID", a)
		}
	}
}

func TestWorkerMarkersAndNoncurrent(t *testing.T) {
	// s3-tests' test_lifecycle_deletemarker_expiration: the noncurrent
	// version goes after a day, and the delete marker left alone with it,
	// in the same pass; the other prefix is untouched.
	e := newEnv(t, Config{})
	e.bucket("bkt", "Enabled")
	e.rules("bkt", Rule{ID: "rule1", Status: Enabled, Prefix: ptr("test1/"),
		NoncurrentVersionExpiration: &NoncurrentVersionExpiration{NoncurrentDays: ptr(1)},
		Expiration:                  &Expiration{ExpiredObjectDeleteMarker: ptr(true)}})
	for _, k := range []string{"test1/a", "test2/abc"} {
		e.put("bkt", k, 3)
		e.del("bkt", k)
	}
	got := e.pass(t0.Add(day(2)))
	if got.VersionsRemoved != 1 || got.DeleteMarkersRemoved != 1 {
		t.Fatalf("pass = %+v", got)
	}
	e.wantVersions("bkt", "test2/abc dm", "test2/abc~")

	// With Days instead, a marker left alone goes once it is that old
	// (test_lifecycle_deletemarker_expiration_with_days_tag).
	e2 := newEnv(t, Config{})
	e2.bucket("bkt", "Enabled")
	e2.rules("bkt", Rule{ID: "rule1", Status: Enabled, Prefix: ptr("test1/"),
		NoncurrentVersionExpiration: &NoncurrentVersionExpiration{NoncurrentDays: ptr(1)}, Expiration: days(5)})
	e2.put("bkt", "test1/a", 3)
	e2.del("bkt", "test1/a")
	e2.pass(t0.Add(day(2)))
	e2.wantVersions("bkt", "test1/a dm")
	e2.pass(t0.Add(day(4)))
	e2.wantVersions("bkt", "test1/a dm")
	e2.pass(t0.Add(day(6)))
	e2.wantVersions("bkt")
}

func TestWorkerSuspended(t *testing.T) {
	e := newEnv(t, Config{})
	e.bucket("bkt", "Suspended")
	e.rules("bkt", prefixRule("all", "", days(1)))
	e.put("bkt", "k", 4)
	got := e.pass(t0.Add(day(2)))
	if got.ObjectsExpired != 1 || got.DeleteMarkersCreated != 1 {
		t.Fatalf("pass = %+v", got)
	}
	// The null version is replaced by a null delete marker.
	e.wantVersions("bkt", "k dm")
	res, err := e.svc.ListObjectVersions(context.Background(), "bkt", objects.ListVersionsInput{MaxKeys: 10})
	if err != nil || res.Versions[0].VersionID != "null" {
		t.Fatalf("marker = %+v, %v; want the null version", res.Versions, err)
	}
	// A day later the marker is alone and as old as the rule says: gone.
	e.pass(t0.Add(day(4)))
	e.wantVersions("bkt")
}

func TestWorkerFilters(t *testing.T) {
	e := newEnv(t, Config{})
	e.bucket("bkt", "")
	e.rules("bkt",
		Rule{ID: "tag", Status: Enabled, Filter: &Filter{Tag: &Tag{Key: "tmp", Value: "yes"}}, Expiration: days(1)},
		Rule{ID: "gt", Status: Enabled, Filter: &Filter{And: &And{Prefix: ptr("size/"), ObjectSizeGreaterThan: ptr[int64](100)}}, Expiration: days(1)},
		Rule{ID: "lt", Status: Enabled, Filter: &Filter{And: &And{Prefix: ptr("small/"), ObjectSizeLessThan: ptr[int64](10)}}, Expiration: days(1)},
	)
	e.put("bkt", "t/yes", 5, Tag{Key: "tmp", Value: "yes"})
	e.put("bkt", "t/no", 5, Tag{Key: "tmp", Value: "no"})
	e.put("bkt", "t/none", 5)
	e.put("bkt", "size/big", 101)
	e.put("bkt", "size/edge", 100)
	e.put("bkt", "small/tiny", 9)
	e.put("bkt", "small/edge", 10)
	e.pass(t0.Add(day(2)))
	e.wantVersions("bkt", "size/edge", "small/edge", "t/no", "t/none")
	if diff := cmp.Diff([]string{"S3.EXPIRE.OBJECT size/big gt", "S3.EXPIRE.OBJECT small/tiny lt", "S3.EXPIRE.OBJECT t/yes tag"}, e.obs.lines()); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
}

func TestWorkerDateAndDisabled(t *testing.T) {
	e := newEnv(t, Config{})
	e.bucket("bkt", "")
	e.rules("bkt",
		legacyRule("past", "past/", &Expiration{Date: ptr(time.Date(2015, 1, 1, 0, 0, 0, 0, time.UTC))}),
		legacyRule("future", "future/", &Expiration{Date: ptr(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))}),
		Rule{ID: "off", Status: Disabled, Prefix: ptr("off/"), Expiration: days(1)},
	)
	e.put("bkt", "past/foo", 1)
	e.put("bkt", "future/bar", 1)
	e.put("bkt", "off/x", 1)
	e.pass(t0)
	e.wantVersions("bkt", "future/bar", "off/x")
	e.pass(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	e.wantVersions("bkt", "off/x")
}

func TestWorkerUploads(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, Config{Batch: 1})
	e.bucket("bkt", "")
	e.rules("bkt", Rule{ID: "abort", Status: Enabled, Prefix: ptr("test1/"),
		AbortIncompleteMultipartUpload: &AbortIncompleteMultipartUpload{DaysAfterInitiation: ptr(2)}})
	var ids []string
	for _, k := range []string{"test1/a", "test1/b", "test2/"} {
		u, err := e.svc.CreateMultipartUpload(ctx, "bkt", k, objects.CreateUploadInput{})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, u.UploadID)
	}
	if _, err := e.svc.UploadPart(ctx, "bkt", "test1/a", ids[0], 1, objects.PartInput{Size: 300}, bytes.NewReader(make([]byte, 300))); err != nil {
		t.Fatal(err)
	}
	if got := e.pass(t0.Add(day(2))); got.UploadsAborted != 0 {
		t.Fatalf("abort before due: %+v", got)
	}
	got := e.pass(time.Date(2026, 3, 13, 0, 0, 0, 0, time.UTC))
	if got.UploadsAborted != 2 {
		t.Fatalf("pass = %+v", got)
	}
	res, err := e.svc.ListMultipartUploads(ctx, "bkt", objects.ListUploadsInput{})
	if err != nil || len(res.Uploads) != 1 || res.Uploads[0].Key != "test2/" {
		t.Fatalf("uploads left = %+v, %v", res.Uploads, err)
	}
	u, err := e.svc.BucketUsage(ctx, "bkt")
	if err != nil || u.Usage.Uploads != 1 || u.Usage.PartBytes != 0 {
		t.Errorf("usage = %+v, %v", u.Usage, err)
	}
	if diff := cmp.Diff([]string{"S3.DELETE.UPLOAD test1/a abort upload", "S3.DELETE.UPLOAD test1/b abort upload"}, e.obs.lines()); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
}

// TestWorkerBatches checks that tiny batches (one version read, one
// removal committed at a time) do what one batch does, across keys with
// many versions.
func TestWorkerBatches(t *testing.T) {
	build := func(cfg Config) *env {
		e := newEnv(t, cfg)
		e.bucket("bkt", "Enabled")
		e.rules("bkt",
			Rule{ID: "nc", Status: Enabled, Filter: &Filter{}, NoncurrentVersionExpiration: &NoncurrentVersionExpiration{NoncurrentDays: ptr(1), NewerNoncurrentVersions: ptr(2)}},
			Rule{ID: "dm", Status: Enabled, Filter: &Filter{Prefix: ptr("gone/")}, Expiration: &Expiration{ExpiredObjectDeleteMarker: ptr(true)}},
		)
		for k := range 4 {
			for i := range 6 {
				e.svcClock.Set(t0.Add(time.Duration(k*10+i) * time.Minute))
				e.put("bkt", fmt.Sprint("k", k), 3)
			}
		}
		for i := range 3 {
			e.put("bkt", "gone/x", 3)
			_ = i
		}
		e.del("bkt", "gone/x")
		return e
	}
	big := build(Config{})
	small := build(Config{Batch: 1, ActBatch: 1})
	for _, e := range []*env{big, small} {
		e.pass(t0.Add(day(3)))
	}
	want := big.versions("bkt")
	if len(want) != 4*3+3 { // each key keeps its current and 2 noncurrent versions
		t.Fatalf("after a pass: %v", want)
	}
	if diff := cmp.Diff(want, small.versions("bkt")); diff != "" {
		t.Errorf("batches of 1 (-batches of 1000 +batches of 1):\n%s", diff)
	}
	// The marker over noncurrent versions kept stays.
	if !slices.Contains(want, "gone/x dm") {
		t.Errorf("marker over kept versions removed: %v", want)
	}
}

// TestWorkerRaces races writes against the worker between its walk and
// its commit: every write that changed the version wins, and the
// version is left alone.
func TestWorkerRaces(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		setup func(e *env)
		race  func(e *env)
		want  []string
	}{
		{
			name:  "overwrite of an expiring object",
			setup: func(e *env) { e.bucket("bkt", ""); e.rules("bkt", prefixRule("r", "", days(1))); e.put("bkt", "k", 3) },
			race:  func(e *env) { e.svcClock.Set(t0.Add(day(3))); e.put("bkt", "k", 4) },
			want:  []string{"k"},
		},
		{
			name: "retagging out of the rule",
			setup: func(e *env) {
				e.bucket("bkt", "")
				e.rules("bkt", Rule{ID: "r", Status: Enabled, Filter: &Filter{Tag: &Tag{Key: "t", Value: "1"}}, Expiration: days(1)})
				e.put("bkt", "k", 3, Tag{Key: "t", Value: "1"})
			},
			race: func(e *env) {
				if _, err := e.svc.PutObjectTagging(ctx, "bkt", "k", "", objects.Pin{}, []Tag{{Key: "t", Value: "2"}}); err != nil {
					e.t.Fatal(err)
				}
			},
			want: []string{"k"},
		},
		{
			name: "a newer noncurrent version deleted: fewer than NewerNoncurrentVersions left",
			setup: func(e *env) {
				e.bucket("bkt", "Enabled")
				e.rules("bkt", Rule{ID: "r", Status: Enabled, Filter: &Filter{},
					NoncurrentVersionExpiration: &NoncurrentVersionExpiration{NoncurrentDays: ptr(1), NewerNoncurrentVersions: ptr(1)}})
				for range 3 {
					e.put("bkt", "k", 3)
				}
			},
			race: func(e *env) {
				res, err := e.svc.ListObjectVersions(ctx, "bkt", objects.ListVersionsInput{MaxKeys: 10})
				if err != nil {
					e.t.Fatal(err)
				}
				if _, err := e.svc.DeleteObject(ctx, "bkt", objects.ObjectRef{Key: "k", VersionID: res.Versions[1].VersionID}); err != nil {
					e.t.Fatal(err)
				}
			},
			want: []string{"k", "k~"},
		},
		{
			name: "an object written over a lone delete marker",
			setup: func(e *env) {
				e.bucket("bkt", "Enabled")
				e.rules("bkt", Rule{ID: "r", Status: Enabled, Filter: &Filter{}, Expiration: &Expiration{ExpiredObjectDeleteMarker: ptr(true)}})
				e.del("bkt", "k")
			},
			race: func(e *env) { e.put("bkt", "k", 3) },
			want: []string{"k", "k dm~"},
		},
		{
			name:  "the configuration deleted",
			setup: func(e *env) { e.bucket("bkt", ""); e.rules("bkt", prefixRule("r", "", days(1))); e.put("bkt", "k", 3) },
			race: func(e *env) {
				if err := NewStore(e.svc).Delete(ctx, "bkt"); err != nil {
					e.t.Fatal(err)
				}
			},
			want: []string{"k"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, Config{})
			tc.setup(e)
			raced := false
			e.w.testHookFlush = func() {
				if !raced {
					raced = true
					tc.race(e)
				}
			}
			e.clock.Set(t0.Add(day(3)))
			res, err := e.w.RunPass(ctx, "")
			if err != nil || res.Totals().Err != nil {
				t.Fatalf("RunPass: %v, %v", err, res.Totals().Err)
			}
			if !raced {
				t.Fatal("the pass found nothing due to race with")
			}
			e.wantVersions("bkt", tc.want...)
			if n := len(e.obs.lines()); n != 0 {
				t.Errorf("actions recorded for versions left alone: %v", e.obs.lines())
			}
		})
	}
}

// TestWorkerConcurrentWrites runs passes while writers overwrite keys
// with new objects: every key's latest write must survive, whatever the
// interleaving (old versions are due, new ones are not).
func TestWorkerConcurrentWrites(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, Config{Batch: 7, ActBatch: 3})
	e.bucket("bkt", "")
	e.rules("bkt", prefixRule("r", "", days(2)))
	const keys = 60
	for i := range keys {
		e.put("bkt", fmt.Sprint("k", i), 3)
	}
	e.svcClock.Set(t0.Add(day(10))) // new writes are not due
	e.clock.Set(t0.Add(day(5)))     // old ones are
	var wg sync.WaitGroup
	last := make([]int, keys)
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < keys; i += 3 {
				for n := range 3 {
					data := []byte(fmt.Sprint("new", i, "-", n))
					if _, err := e.svc.PutObject(ctx, "bkt", fmt.Sprint("k", i), objects.PutInput{Size: int64(len(data))}, bytes.NewReader(data)); err != nil {
						t.Error(err)
						return
					}
					last[i] = n
				}
			}
		}()
	}
	for range 5 {
		if _, err := e.w.RunPass(ctx, ""); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	e.w.RunPass(ctx, "")
	for i := range keys {
		o, err := e.svc.GetObject(ctx, "bkt", fmt.Sprint("k", i), objects.GetOptions{})
		if err != nil {
			t.Fatalf("k%d: %v (a new write was expired)", i, err)
		}
		b, _ := io.ReadAll(o.Body)
		o.Body.Close()
		if want := fmt.Sprint("new", i, "-", last[i]); string(b) != want {
			t.Errorf("k%d = %q, want %q", i, b, want)
		}
	}
}

func TestRunPassErrors(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, Config{})
	e.bucket("bkt", "")
	if _, err := e.w.RunPass(ctx, "bkt"); s3err.CodeOf(err) != s3err.NoSuchLifecycleConfiguration {
		t.Errorf("RunPass of a bucket without rules = %v", err)
	}
	if _, err := e.w.RunPass(ctx, "nope"); s3err.CodeOf(err) != s3err.NoSuchBucket {
		t.Errorf("RunPass of a missing bucket = %v", err)
	}
	// A corrupt configuration fails its bucket, not the pass.
	e.bucket("good", "")
	e.rules("good", prefixRule("r", "", days(1)))
	e.put("good", "k", 1)
	if err := e.svc.PutBucketConfig(ctx, "bkt", objects.ConfigLifecycle, []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	e.clock.Set(t0.Add(day(3)))
	res, err := e.w.RunPass(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Buckets) != 2 || res.Buckets[0].Err == nil || res.Buckets[1].ObjectsExpired != 1 {
		t.Errorf("pass = %+v", res.Buckets)
	}
	if e.w.Stats().Errors != 1 {
		t.Errorf("errors = %d, want 1", e.w.Stats().Errors)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := e.w.RunPass(cctx, ""); err == nil {
		t.Error("RunPass with a canceled context succeeded")
	}
	if _, err := New(Config{Day: -time.Second}, e.svc, nil, nil); err == nil {
		t.Error("New with a negative day succeeded")
	}
	if _, err := New(Config{}, nil, nil, nil); err == nil {
		t.Error("New without a service succeeded")
	}
}

// TestRun starts the background loop with a short interval and waits for
// a pass to act, through the observer: no sleeping.
func TestRun(t *testing.T) {
	e := newEnv(t, Config{Interval: 5 * time.Millisecond})
	e.bucket("bkt", "")
	e.rules("bkt", prefixRule("r", "", days(1)))
	e.put("bkt", "k", 1)
	e.clock.Set(t0.Add(day(3)))
	acted := make(chan struct{})
	e.w.obs = observerFunc(func(*Action) { close(acted) })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.w.Run(ctx) }()
	select {
	case <-acted:
	case <-time.After(30 * time.Second):
		t.Fatal("no pass acted")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v after cancel, want nil", err)
	}
	off := newEnv(t, Config{Interval: -1})
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	if err := off.w.Run(ctx); err != nil {
		t.Errorf("Run with passes off = %v", err)
	}
}

type observerFunc func(*Action)

func (f observerFunc) ObserveLifecycle(a *Action) { f(a) }

// TestTestDay checks the test-only day: a day of seconds, not rounded.
func TestTestDay(t *testing.T) {
	e := newEnv(t, Config{Day: 10 * time.Second})
	e.bucket("bkt", "")
	e.rules("bkt", prefixRule("r", "", days(1)))
	e.put("bkt", "k", 1)
	e.pass(t0.Add(9 * time.Second))
	e.wantVersions("bkt", "k")
	e.pass(t0.Add(10 * time.Second))
	e.wantVersions("bkt")
}

// TestWorkerManyDueVersionsOldestFirst: a key with more noncurrent versions
// due than a pass holds (4 × ActBatch) has its oldest removed first. The
// newer ones, removed first, would make the older ones noncurrent only
// since the current version was written, and no longer due: here the
// three untagged versions are due under the 30-day rule only because the
// tagged versions above them were written long ago.
func TestWorkerManyDueVersionsOldestFirst(t *testing.T) {
	e := newEnv(t, Config{ActBatch: 1})
	e.bucket("bkt", "Enabled")
	e.rules("bkt",
		Rule{ID: "tmp", Status: Enabled, Filter: &Filter{Tag: &Tag{Key: "tmp", Value: "1"}},
			NoncurrentVersionExpiration: &NoncurrentVersionExpiration{NoncurrentDays: ptr(1)}},
		Rule{ID: "all", Status: Enabled, Filter: &Filter{},
			NoncurrentVersionExpiration: &NoncurrentVersionExpiration{NoncurrentDays: ptr(30)}},
	)
	for i := range 3 { // days 0–2: untagged
		e.svcClock.Set(t0.Add(day(i)))
		e.put("bkt", "k", 3)
	}
	for i := range 4 { // days 3–6: tagged, as many as a pass holds
		e.svcClock.Set(t0.Add(day(3 + i)))
		e.put("bkt", "k", 3, Tag{Key: "tmp", Value: "1"})
	}
	e.svcClock.Set(t0.Add(day(50)))
	e.put("bkt", "k", 3) // current
	for range 2 {
		e.pass(t0.Add(day(52)))
	}
	e.wantVersions("bkt", "k")
}

// TestBucketDeletedDuringPass: a bucket deleted after the pass listed the
// configurations is skipped quietly, not counted as a failure.
func TestBucketDeletedDuringPass(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, Config{})
	e.bucket("aaa", "")
	e.bucket("bbb", "")
	e.rules("aaa", prefixRule("r", "", days(1)))
	e.rules("bbb", prefixRule("r", "", days(1)))
	e.put("aaa", "k", 3)
	done := false
	e.w.testHookFlush = func() {
		if !done {
			done = true
			if err := e.svc.DeleteBucket(ctx, "bbb"); err != nil {
				t.Fatal(err)
			}
		}
	}
	e.clock.Set(t0.Add(day(3)))
	res, err := e.w.RunPass(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if !done {
		t.Fatal("the hook never ran: the test deleted nothing")
	}
	if tot := res.Totals(); tot.Err != nil || e.w.Stats().Errors != 0 {
		t.Errorf("pass reports an error for a bucket deleted meanwhile: %v (errors metric %d)", tot.Err, e.w.Stats().Errors)
	}
	e.wantVersions("aaa")
}

// TestSuspendedExpiryRemovesNull: while versioning is suspended an expiry
// writes a null delete marker, which replaces the key's null version for
// good (S3: it "replaces any object version with a null version ID"),
// whether that was the expired object or a noncurrent version: the pass
// reports that version removed, with its bytes.
func TestSuspendedExpiryRemovesNull(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, Config{})
	e.bucket("bkt", "Suspended")
	e.rules("bkt", prefixRule("all", "", days(1)))
	e.put("bkt", "k", 1000) // the null version, current
	e.bucket("ver", "Suspended")
	e.rules("ver", prefixRule("all", "", days(1)))
	e.put("ver", "k", 700) // the null version...
	if err := e.svc.PutBucketVersioning(ctx, "ver", "Enabled", ""); err != nil {
		t.Fatal(err)
	}
	e.put("ver", "k", 50) // ...now noncurrent under a version of its own
	if err := e.svc.PutBucketVersioning(ctx, "ver", "Suspended", ""); err != nil {
		t.Fatal(err)
	}
	before := map[string]int64{}
	for _, b := range []string{"bkt", "ver"} {
		u, err := e.svc.BucketUsage(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		before[b] = u.Usage.Bytes
	}
	e.clock.Set(t0.Add(day(2)))
	for _, b := range []string{"bkt", "ver"} {
		res, err := e.w.RunPass(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		got := res.Totals()
		u, err := e.svc.BucketUsage(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		if freed := before[b] - u.Usage.Bytes; got.DeletedBytes != freed || freed == 0 || got.VersionsRemoved != 1 {
			t.Errorf("%s: DeletedBytes %d, VersionsRemoved %d; %d bytes were removed for good", b, got.DeletedBytes, got.VersionsRemoved, freed)
		}
	}
	// The replaced version is reported first, as replaced, then the
	// marker that replaced it.
	var seen []string
	for _, a := range e.obs.actions {
		seen = append(seen, fmt.Sprintf("%v %s/%s %s %d replaced=%v", a.Kind, a.Bucket, a.Key, a.VersionID, a.Size, a.Replaced))
	}
	want := []string{
		fmt.Sprintf("%v bkt/k null 1000 replaced=true", VersionRemoved),
		fmt.Sprintf("%v bkt/k null 0 replaced=false", DeleteMarkerCreated),
		fmt.Sprintf("%v ver/k null 700 replaced=true", VersionRemoved),
		fmt.Sprintf("%v ver/k null 0 replaced=false", DeleteMarkerCreated),
	}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("actions observed (-want +got):\n%s", diff)
	}
}
