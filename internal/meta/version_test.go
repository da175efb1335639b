package meta

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// modelVersion is one version of a key in versionModel.
type modelVersion struct {
	id     string // S3 version ID
	marker bool
	etag   string
	data   []byte   // inline data; nil for a block object or a marker
	blocks []string // blob keys
}

// versionModel is what S3 says a bucket holds: per key, its versions
// newest first.
type versionModel struct {
	v    Versioning
	keys map[string][]modelVersion
}

func (m *versionModel) put(key string, nv modelVersion) {
	vs := m.keys[key]
	switch m.v {
	case Unversioned:
		vs = nil
	case VersioningSuspended:
		vs = slices.DeleteFunc(slices.Clone(vs), func(x modelVersion) bool { return x.id == NullVersionID })
	}
	if m.v == Unversioned && nv.marker {
		delete(m.keys, key)
		return
	}
	m.keys[key] = append([]modelVersion{nv}, vs...)
}

func (m *versionModel) deleteVersion(key, id string) (modelVersion, bool) {
	vs := m.keys[key]
	for i, x := range vs {
		if x.id == id {
			m.keys[key] = slices.Delete(slices.Clone(vs), i, i+1)
			if len(m.keys[key]) == 0 {
				delete(m.keys, key)
			}
			return x, true
		}
	}
	return modelVersion{}, false
}

// listing is the model's ListVersions of everything.
func (m *versionModel) listing() []string {
	var out []string
	for _, k := range slices.Sorted(mapKeys(m.keys)) {
		for i, x := range m.keys[k] {
			out = append(out, entryString(k, x.id, i == 0, x.marker, x.etag))
		}
	}
	return out
}

func mapKeys(m map[string][]modelVersion) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func entryString(key, id string, latest, marker bool, etag string) string {
	return fmt.Sprintf("%q %s latest=%v marker=%v etag=%s", key, id, latest, marker, etag)
}

func versionStrings(es []VersionEntry) []string {
	out := make([]string, 0, len(es))
	for _, e := range es {
		if e.IsPrefix {
			out = append(out, "prefix "+e.Key)
			continue
		}
		v := e.Version
		out = append(out, entryString(e.Key, v.VersionID, v.IsLatest, v.DeleteMarker, v.ETag))
	}
	return out
}

// TestVersionsRandomized applies random puts (inline and block objects),
// deletes, deletes of chosen versions (single and batched, several of one
// key in one batch) and versioning changes, with reopens, and checks after
// each step the whole version listing, every key's current object and
// every version's record and data against a model of S3's rules, and the
// usage against a recount.
func TestVersionsRandomized(t *testing.T) { forEachEngine(t, testVersionsRandomized) }

func testVersionsRandomized(t *testing.T, e engine) {
	steps := 400
	if testing.Short() {
		steps = 150
	}
	if e.name == EnginePostgres {
		steps /= 4 // its checks make thousands of queries a step
		if raceEnabled {
			steps /= 2
		}
	}
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			t.Parallel()
			runVersionSequence(t, e, seed, steps)
		})
	}
}

func runVersionSequence(t *testing.T, e engine, seed uint64, steps int) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 0xface))
	dir := e.place(t)
	db := e.openAt(t, dir)
	mustCreateBucket(t, db, "bkt")
	m := &versionModel{keys: map[string][]modelVersion{}}
	keys := []string{"a", "a/b", "a\x00", "b/c/d", "b", "z"}
	now := testTime
	n := 0
	newObject := func() (*Object, modelVersion) {
		n++
		etag := fmt.Sprintf("e%d", n)
		o := &Object{Size: 3, ETag: etag, Modified: now}
		mv := modelVersion{etag: etag}
		if rng.IntN(2) == 0 {
			o.Inline = []byte(fmt.Sprintf("d%02d", n%100))
			mv.data = o.Inline
		} else {
			bk := fmt.Sprintf("blob%d", n)
			o.Blocks = []Block{{Key: bk, Size: 3}}
			mv.blocks = []string{bk}
		}
		return o, mv
	}
	pick := func(key string) string {
		vs := m.keys[key]
		if len(vs) == 0 || rng.IntN(5) == 0 {
			return []string{NullVersionID, strings.Repeat("0", VersionIDLen)}[rng.IntN(2)]
		}
		return vs[rng.IntN(len(vs))].id
	}
	for step := range steps {
		now = now.Add(time.Millisecond)
		if rng.IntN(7) == 0 {
			// The clock sometimes steps back: new versions must still sort
			// first.
			now = now.Add(-5 * time.Millisecond)
		}
		key := keys[rng.IntN(len(keys))]
		var what string
		switch op := rng.IntN(20); {
		case op < 8:
			o, mv := newObject()
			what = fmt.Sprintf("put %q", key)
			if err := db.UpdateObject(ctx, "bkt", key, now, func(*Object) (*Object, error) { return o, nil }); err != nil {
				t.Fatalf("step %d %s: %v", step, what, err)
			}
			mv.id = o.S3VersionID()
			m.put(key, mv)
		case op < 11:
			what = fmt.Sprintf("delete %q", key)
			d, err := db.DeleteVersions(ctx, "bkt", []VersionRef{{Key: key}}, now)
			if err != nil {
				t.Fatalf("step %d %s: %v", step, what, err)
			}
			if m.v == Unversioned {
				if d[0] != (Deleted{}) {
					t.Fatalf("step %d %s = %+v, want nothing reported", step, what, d[0])
				}
			} else if !d[0].DeleteMarker || d[0].VersionID == "" {
				t.Fatalf("step %d %s = %+v, want a delete marker", step, what, d[0])
			}
			m.put(key, modelVersion{id: d[0].VersionID, marker: true})
		case op < 16:
			refs := []VersionRef{{Key: key, VersionID: pick(key)}}
			if rng.IntN(3) == 0 {
				refs = append(refs, VersionRef{Key: key, VersionID: pick(key)}, VersionRef{Key: keys[rng.IntN(len(keys))]})
			}
			what = fmt.Sprintf("delete versions %+v", refs)
			got, err := db.DeleteVersions(ctx, "bkt", refs, now)
			if err != nil {
				t.Fatalf("step %d %s: %v", step, what, err)
			}
			for i, r := range refs {
				if r.VersionID == "" {
					if m.v == Unversioned {
						delete(m.keys, r.Key)
					} else {
						m.put(r.Key, modelVersion{id: got[i].VersionID, marker: true})
					}
					continue
				}
				x, ok := m.deleteVersion(r.Key, r.VersionID)
				want := Deleted{}
				if ok {
					want = Deleted{VersionID: r.VersionID, DeleteMarker: x.marker}
				}
				if got[i] != want {
					t.Fatalf("step %d %s: result %d = %+v, want %+v", step, what, i, got[i], want)
				}
			}
		case op < 18:
			v := []Versioning{VersioningEnabled, VersioningSuspended}[rng.IntN(2)]
			what = fmt.Sprintf("versioning %v", v)
			if err := db.SetVersioning(ctx, "bkt", v); err != nil {
				t.Fatalf("step %d %s: %v", step, what, err)
			}
			m.v = v
		case op < 19:
			what = "reopen"
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			db = e.openAt(t, dir)
		default:
			what = "compact"
			compactAll(t, db)
		}
		checkVersions(t, db, m, fmt.Sprintf("step %d (%s)", step, what), rng)
	}
}

// checkVersions compares db with the model.
func checkVersions(t *testing.T, db *DB, m *versionModel, at string, rng *rand.Rand) {
	t.Helper()
	ctx := context.Background()
	es, trunc, err := db.ListVersions(ctx, "bkt", VersionListOptions{Limit: 1000})
	if err != nil || trunc {
		t.Fatalf("%s: ListVersions: %v, truncated %v", at, err, trunc)
	}
	want := m.listing()
	if diff := cmp.Diff(want, versionStrings(es), cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("%s: versions (-model +db):\n%s", at, diff)
	}
	// Pages of every size resume exactly where the last one ended.
	limit := 1 + rng.IntN(4)
	var paged []string
	opt := VersionListOptions{Limit: limit}
	for range 1000 {
		page, more, err := db.ListVersions(ctx, "bkt", opt)
		if err != nil {
			t.Fatalf("%s: ListVersions page: %v", at, err)
		}
		paged = append(paged, versionStrings(page)...)
		if !more {
			break
		}
		last := page[len(page)-1]
		opt.KeyMarker, opt.VersionIDMarker = last.Key, last.Version.VersionID
	}
	if diff := cmp.Diff(want, paged, cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("%s: versions in pages of %d (-model +db):\n%s", at, limit, diff)
	}
	var total Usage
	for key, vs := range m.keys {
		latest := vs[0]
		cur, err := db.Object(ctx, "bkt", key)
		switch {
		case latest.marker:
			if !errors.Is(err, ErrNotFound) {
				t.Fatalf("%s: Object(%q) = %v, want ErrNotFound under a delete marker", at, key, err)
			}
			dm, err := db.LatestDeleteMarker(ctx, "bkt", key)
			if err != nil || dm.S3VersionID() != latest.id {
				t.Fatalf("%s: LatestDeleteMarker(%q) = %s, %v; want %s", at, key, dm.S3VersionID(), err, latest.id)
			}
		case err != nil || cur.ETag != latest.etag:
			t.Fatalf("%s: Object(%q) = %s, %v; want %s", at, key, cur.ETag, err, latest.etag)
		}
		for i, x := range vs {
			o, current, err := db.ObjectVersion(ctx, "bkt", key, x.id)
			if err != nil || o.ETag != x.etag || o.DeleteMarker != x.marker || current != (i == 0 && !x.marker) {
				t.Fatalf("%s: ObjectVersion(%q, %s) = %s marker=%v current=%v, %v; want %s marker=%v", at, key, x.id, o.ETag, o.DeleteMarker, current, err, x.etag, x.marker)
			}
			if x.data != nil {
				var data []byte
				if current {
					data, _, err = db.ObjectData(ctx, "bkt", key, o.VersionID, nil)
				} else {
					data, _, err = db.VersionData(ctx, "bkt", key, &o, nil)
				}
				if err != nil || !bytes.Equal(data, x.data) {
					t.Fatalf("%s: data of %q version %s = %q, %v; want %q", at, key, x.id, data, err, x.data)
				}
			}
			if !x.marker {
				total = total.add(Usage{Objects: 1, Bytes: 3})
			}
		}
	}
	u, err := db.BucketUsage(ctx, "bkt")
	if err != nil || u.Usage != total {
		t.Fatalf("%s: usage = %+v, %v; want %+v", at, u.Usage, err, total)
	}
	checkClean(t, db)
}

// TestVersionsDelimiter lists versions with a delimiter and a prefix:
// common prefixes roll up current and noncurrent versions alike, and a
// truncated page that ends on a common prefix resumes after it.
func TestVersionsDelimiter(t *testing.T) { forEachEngine(t, testVersionsDelimiter) }

func testVersionsDelimiter(t *testing.T, e engine) {
	ctx := context.Background()
	db := e.open(t)
	mustCreateBucket(t, db, "bkt")
	if err := db.SetVersioning(ctx, "bkt", VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	put := func(key string) {
		t.Helper()
		putObject(t, db, "bkt", key, Object{Size: 1, ETag: key, Inline: []byte("x")})
	}
	// "d/" holds only noncurrent versions and a delete marker; "p/"
	// only current ones.
	put("d/x")
	put("d/x")
	if _, err := db.DeleteVersions(ctx, "bkt", []VersionRef{{Key: "d/x"}}, testTime); err != nil {
		t.Fatal(err)
	}
	put("a")
	put("p/1")
	put("p/2")
	put("q")
	put("q")
	for _, tc := range []struct {
		name  string
		opt   VersionListOptions
		want  []string
		trunc bool
	}{
		{"delimiter", VersionListOptions{Delimiter: "/", Limit: 100},
			[]string{`"a" 1`, "prefix d/", "prefix p/", `"q" 1`, `"q" 0`}, false},
		{"prefix", VersionListOptions{Prefix: "d/", Limit: 100},
			[]string{`"d/x" 1 marker`, `"d/x" 0`, `"d/x" 0`}, false},
		{"page ends on prefix", VersionListOptions{Delimiter: "/", Limit: 2},
			[]string{`"a" 1`, "prefix d/"}, true},
		{"resume after prefix", VersionListOptions{Delimiter: "/", KeyMarker: "d/", Limit: 2},
			[]string{"prefix p/", `"q" 1`}, true},
		{"limit zero", VersionListOptions{Limit: 0}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			es, trunc, err := db.ListVersions(ctx, "bkt", tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range es {
				if e.IsPrefix {
					got = append(got, "prefix "+e.Key)
					continue
				}
				s := fmt.Sprintf("%q %d", e.Key, map[bool]int{true: 1}[e.Version.IsLatest])
				if e.Version.DeleteMarker {
					s += " marker"
				}
				got = append(got, s)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" || trunc != tc.trunc {
				t.Errorf("ListVersions(%+v) truncated %v (want %v), mismatch (-want +got):\n%s", tc.opt, trunc, tc.trunc, diff)
			}
		})
	}
}

// TestVersionsKeepBlocks checks that noncurrent versions keep their blocks
// out of the garbage queue and referenced for GC, and that deleting a
// version queues exactly its blocks.
func TestVersionsKeepBlocks(t *testing.T) { forEachEngine(t, testVersionsKeepBlocks) }

func testVersionsKeepBlocks(t *testing.T, e engine) {
	ctx := context.Background()
	db := e.open(t)
	mustCreateBucket(t, db, "bkt")
	if err := db.SetVersioning(ctx, "bkt", VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	v1 := Object{Size: 1, Blocks: []Block{{"b1", 1}}}
	v2 := Object{Size: 1, Blocks: []Block{{"b2", 1}}}
	putObject(t, db, "bkt", "k", v1)
	putObject(t, db, "bkt", "k", v2)
	if _, err := db.DeleteVersions(ctx, "bkt", []VersionRef{{Key: "k"}}, testTime); err != nil {
		t.Fatal(err)
	}
	if g := garbageKeys(t, db); len(g) != 0 {
		t.Fatalf("garbage after overwrite and delete marker = %v, want none", g)
	}
	var refs []string
	if err := db.ReferencedBlocks(ctx, func(k string) error { refs = append(refs, k); return nil }); err != nil {
		t.Fatal(err)
	}
	slices.Sort(refs)
	if diff := cmp.Diff([]string{"b1", "b2"}, refs); diff != "" {
		t.Fatalf("referenced blocks (-want +got):\n%s", diff)
	}
	es, _, err := db.ListVersions(ctx, "bkt", VersionListOptions{Limit: 10})
	if err != nil || len(es) != 3 {
		t.Fatalf("ListVersions = %d entries, %v", len(es), err)
	}
	// Delete the oldest version for good: only b1 becomes garbage.
	if _, err := db.DeleteVersions(ctx, "bkt", []VersionRef{{Key: "k", VersionID: es[2].Version.VersionID}}, testTime); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"b1"}, garbageKeys(t, db)); diff != "" {
		t.Fatalf("garbage (-want +got):\n%s", diff)
	}
	if err := db.DeleteBucket(ctx, "bkt", testTime); !errors.Is(err, ErrBucketNotEmpty) {
		t.Fatalf("DeleteBucket with versions = %v, want ErrBucketNotEmpty", err)
	}
}

// TestVersionIDOrder checks that version IDs sort newest first, also when
// the clock steps back.
func TestVersionIDOrder(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	a := newVersionID(t0)
	b := newVersionID(t0.Add(time.Nanosecond))
	if !(b < a) || !ValidVersionID(a) || len(a) != VersionIDLen {
		t.Fatalf("newVersionID: later %s does not sort before %s", b, a)
	}
	c := versionIDBefore(t0.Add(-time.Hour), b)
	if !(c < b) || !ValidVersionID(c) {
		t.Fatalf("versionIDBefore(earlier clock, %s) = %s, does not sort first", b, c)
	}
	for _, bad := range []string{"", "NULL", strings.Repeat("A", VersionIDLen), strings.Repeat("0", VersionIDLen-1)} {
		if ValidVersionID(bad) {
			t.Errorf("ValidVersionID(%q) = true", bad)
		}
	}
}

// TestBucketConfig stores, reads, lists and deletes configuration
// documents, and checks that they go with their bucket.
func TestBucketConfig(t *testing.T) { forEachEngine(t, testBucketConfig) }

func testBucketConfig(t *testing.T, e engine) {
	ctx := context.Background()
	db := e.open(t)
	mustCreateBucket(t, db, "a")
	mustCreateBucket(t, db, "b")
	if err := db.PutBucketConfig(ctx, "nope", "cors", []byte("x")); !errors.Is(err, ErrNoBucket) {
		t.Fatalf("PutBucketConfig(missing bucket) = %v, want ErrNoBucket", err)
	}
	for _, c := range []struct{ bucket, name, doc string }{{"a", "cors", "a-cors"}, {"a", "lifecycle", "a-lc"}, {"b", "cors", "b-cors"}} {
		if err := db.PutBucketConfig(ctx, c.bucket, c.name, []byte(c.doc)); err != nil {
			t.Fatal(err)
		}
	}
	if v, err := db.BucketConfig(ctx, "a", "lifecycle"); err != nil || string(v) != "a-lc" {
		t.Fatalf("BucketConfig(a, lifecycle) = %q, %v", v, err)
	}
	if _, err := db.BucketConfig(ctx, "b", "lifecycle"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("BucketConfig(b, lifecycle) = %v, want ErrNotFound", err)
	}
	all, err := db.BucketConfigs(ctx, "cors")
	if diff := cmp.Diff(map[string][]byte{"a": []byte("a-cors"), "b": []byte("b-cors")}, all); err != nil || diff != "" {
		t.Fatalf("BucketConfigs(cors): %v (-want +got):\n%s", err, diff)
	}
	if err := db.PutBucketConfig(ctx, "b", "cors", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := db.BucketConfig(ctx, "b", "cors"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("BucketConfig after delete = %v, want ErrNotFound", err)
	}
	if err := db.DeleteBucket(ctx, "a", testTime); err != nil {
		t.Fatal(err)
	}
	mustCreateBucket(t, db, "a")
	for _, name := range []string{"cors", "lifecycle"} {
		if _, err := db.BucketConfig(ctx, "a", name); !errors.Is(err, ErrNotFound) {
			t.Errorf("BucketConfig(a, %s) after DeleteBucket and CreateBucket = %v, want ErrNotFound", name, err)
		}
	}
}

// TestModifyVersion changes tags of current and noncurrent versions in
// place, and checks that nothing else moves: data, listing, usage.
func TestModifyVersion(t *testing.T) { forEachEngine(t, testModifyVersion) }

func testModifyVersion(t *testing.T, e engine) {
	ctx := context.Background()
	db := e.open(t)
	mustCreateBucket(t, db, "bkt")
	// A version 1 record with its data inside, as old Coffers wrote it.
	w := db.newWriter(db.kv.begin(context.Background()), testTime)
	w.b.set(objectKey(nil, "bkt", "k"), appendObjectV1(nil, &Object{VersionID: "legacy", Size: 3, ETag: "e0", Modified: testTime, Inline: []byte("old")}))
	w.count("bkt", Usage{Objects: 1, Bytes: 3})
	if err := w.commit(); err != nil {
		t.Fatal(err)
	}
	w.close()
	setTags := func(id string, tags ...Tag) (Object, error) {
		return db.ModifyVersion(ctx, "bkt", "k", id, func(o *Object) error { o.Tags = tags; return nil })
	}
	if _, err := setTags("", Tag{"a", "1"}); err != nil {
		t.Fatal(err)
	}
	if got := objectData(t, db, "bkt", "k", "legacy"); string(got) != "old" {
		t.Fatalf("data of a rewritten version 1 record = %q, want old", got)
	}
	if err := db.SetVersioning(ctx, "bkt", VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	putObject(t, db, "bkt", "k", Object{Size: 3, ETag: "e1", Inline: []byte("new")})
	if _, err := setTags(NullVersionID, Tag{"b", "2"}); err != nil {
		t.Fatalf("tag the null version in the history: %v", err)
	}
	null, current, err := db.ObjectVersion(ctx, "bkt", "k", NullVersionID)
	if err != nil || current || len(null.Tags) != 1 || null.Tags[0].Key != "b" {
		t.Fatalf("null version after tagging: %+v current=%v, %v", null.Tags, current, err)
	}
	if data, _, err := db.VersionData(ctx, "bkt", "k", &null, nil); err != nil || string(data) != "old" {
		t.Fatalf("data of the tagged null version = %q, %v", data, err)
	}
	if o, err := setTags("", Tag{"c", "3"}); err != nil || o.ETag != "e1" {
		t.Fatalf("tag the current version: %+v, %v", o, err)
	}
	if _, err := setTags(strings.Repeat("0", VersionIDLen)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("tag a missing version = %v, want ErrNotFound", err)
	}
	if _, err := db.DeleteVersions(ctx, "bkt", []VersionRef{{Key: "k"}}, testTime); err != nil {
		t.Fatal(err)
	}
	if _, err := setTags(""); !errors.Is(err, ErrNotFound) {
		t.Fatalf("tag under a delete marker = %v, want ErrNotFound", err)
	}
	es, _, err := db.ListVersions(ctx, "bkt", VersionListOptions{Limit: 10})
	if err != nil || len(es) != 3 {
		t.Fatalf("ListVersions = %d entries, %v; want 3", len(es), err)
	}
	checkClean(t, db)
}
