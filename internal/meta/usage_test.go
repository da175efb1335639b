package meta

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/google/go-cmp/cmp"
)

// usageModel is what a sequence of operations should leave, kept apart
// from meta so that the test does not check meta's arithmetic with itself.
type usageModel map[string]*modelBucket

type modelBucket struct {
	objects map[string]int64        // key → size
	uploads map[string]*modelUpload // upload ID → upload
}

type modelUpload struct {
	key   string
	parts map[int]int64 // part number → size
}

func (m usageModel) usage() map[string]Usage {
	out := map[string]Usage{}
	for name, b := range m {
		var u Usage
		for _, size := range b.objects {
			u.Objects++
			u.Bytes += size
		}
		for _, up := range b.uploads {
			u.Uploads++
			for _, size := range up.parts {
				u.PartBytes += size
			}
		}
		out[name] = u
	}
	return out
}

// dbUsage returns BucketsUsage as a map, and checks that BucketUsage
// agrees for each bucket.
func dbUsage(t *testing.T, db *DB) map[string]Usage {
	t.Helper()
	ctx := context.Background()
	all, err := db.BucketsUsage(ctx)
	if err != nil {
		t.Fatalf("BucketsUsage: %v", err)
	}
	out := map[string]Usage{}
	for _, bu := range all {
		out[bu.Name] = bu.Usage
		one, err := db.BucketUsage(ctx, bu.Name)
		if err != nil || one != bu {
			t.Fatalf("BucketUsage(%s) = %+v, %v; BucketsUsage has %+v", bu.Name, one, err, bu)
		}
	}
	return out
}

// checkClean fails unless CheckUsage finds every bucket's usage equal to a
// recount of its records.
func checkClean(t *testing.T, db *DB) {
	t.Helper()
	c, err := db.CheckUsage(context.Background(), false)
	if err != nil {
		t.Fatalf("CheckUsage: %v", err)
	}
	if len(c.Mismatches) > 0 {
		t.Fatalf("CheckUsage mismatches: %+v", c.Mismatches)
	}
}

// compactAll flushes the memtable and compacts everything, so that usage
// operands are merged by the merger in a compaction, not only by reads.
func compactAll(t testing.TB, db *DB) {
	t.Helper()
	pk, ok := db.kv.(*pebbleKV)
	if !ok {
		return // PostgreSQL: nothing to compact
	}
	p := pk.db
	if err := p.Compact(context.Background(), []byte{0}, []byte{0xff}, false); err != nil {
		t.Fatalf("Compact: %v", err)
	}
}

// TestUsageRandomized applies random sequences of every operation that
// changes what a bucket holds — puts of inline and block objects,
// overwrites, deletes, DeleteObjects, failed conditional writes, multipart
// create, part upload and overwrite, complete (also failing), abort, bucket
// delete and re-create — with reopens and compactions in between, and
// checks after each step that the usage equals the model's and, often,
// that it equals a recount of the records.
func TestUsageRandomized(t *testing.T) { forEachEngine(t, testUsageRandomized) }

func testUsageRandomized(t *testing.T, e engine) {
	steps := 600
	if testing.Short() {
		steps = 200
	}
	if e.name == EnginePostgres && raceEnabled {
		steps /= 3
	}
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			t.Parallel()
			runUsageSequence(t, e, seed, steps)
		})
	}
}

var errCondition = errors.New("precondition failed")

func runUsageSequence(t *testing.T, e engine, seed uint64, steps int) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	place := e.place(t)
	open := func() *DB {
		db, err := Open(e.config(place))
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	db := open()
	t.Cleanup(func() { db.Close() })

	model := usageModel{}
	buckets := []string{"a", "bb", "c"}
	keys := []string{"k0", "k1", "k2", "dir/k3", "k4"}
	nextID, nextBlob := 0, 0
	pick := func(s []string) string { return s[rng.IntN(len(s))] }
	newObject := func() (*Object, int64) {
		nextBlob++
		v := fmt.Sprint("v", nextBlob)
		if rng.IntN(2) == 0 { // inline, possibly empty
			size := rng.IntN(64)
			return &Object{VersionID: v, Size: int64(size), Inline: make([]byte, size)}, int64(size)
		}
		size := int64(100<<10 + rng.IntN(20<<20))
		return &Object{VersionID: v, Size: size, Blocks: []Block{{Key: fmt.Sprint("b/", nextBlob), Size: size}}}, size
	}
	// anyUpload returns an existing upload of bucket, or a made-up one.
	anyUpload := func(bucket string) (string, *modelUpload) {
		if b := model[bucket]; b != nil && len(b.uploads) > 0 && rng.IntN(6) > 0 {
			ids := slices.Sorted(maps.Keys(b.uploads))
			id := pick(ids)
			return id, b.uploads[id]
		}
		return fmt.Sprintf("%032d", 999999), &modelUpload{key: pick(keys)}
	}
	wantErr := func(op string, err, want error) {
		t.Helper()
		if !errors.Is(err, want) && !(err == nil && want == nil) {
			t.Fatalf("%s = %v, want %v", op, err, want)
		}
	}

	for step := range steps {
		bucket, key := pick(buckets), pick(keys)
		b := model[bucket]
		var noBucket error
		if b == nil {
			noBucket = ErrNoBucket
		}
		switch r := rng.IntN(100); {
		case r < 25: // put or overwrite
			o, size := newObject()
			err := db.UpdateObject(ctx, bucket, key, testTime, func(*Object) (*Object, error) { return o, nil })
			wantErr("put", err, noBucket)
			if err == nil {
				b.objects[key] = size
			}
		case r < 32: // conditional put that fails
			o, _ := newObject()
			err := db.UpdateObject(ctx, bucket, key, testTime, func(old *Object) (*Object, error) { return o, errCondition })
			want := errCondition
			if noBucket != nil {
				want = noBucket
			}
			wantErr("failed conditional put", err, want)
		case r < 42: // delete
			err := db.UpdateObject(ctx, bucket, key, testTime, func(*Object) (*Object, error) { return nil, nil })
			wantErr("delete", err, noBucket)
			if err == nil {
				delete(b.objects, key)
			}
		case r < 48: // DeleteObjects, with absent keys and duplicates
			var ks []string
			for range rng.IntN(6) {
				ks = append(ks, pick(keys))
			}
			err := db.DeleteObjects(ctx, bucket, ks, testTime)
			wantErr("DeleteObjects", err, noBucket)
			if err == nil {
				for _, k := range ks {
					delete(b.objects, k)
				}
			}
		case r < 56: // create upload
			nextID++
			id := fmt.Sprintf("%032d", nextID)
			err := db.CreateUpload(ctx, Upload{Bucket: bucket, Key: key, ID: id, Initiated: testTime})
			wantErr("CreateUpload", err, noBucket)
			if err == nil {
				b.uploads[id] = &modelUpload{key: key, parts: map[int]int64{}}
			}
		case r < 70: // upload or replace a part
			id, up := anyUpload(bucket)
			n := 1 + rng.IntN(4)
			nextBlob++
			size := int64(rng.IntN(6 << 20))
			p := Part{Number: n, Size: size, ETag: "e", Blocks: []Block{{Key: fmt.Sprint("p/", nextBlob), Size: size}}}
			err := db.PutPart(ctx, bucket, up.key, id, p, testTime)
			if up.parts == nil {
				wantErr("PutPart of no upload", err, ErrNotFound)
			} else {
				wantErr("PutPart", err, nil)
				up.parts[n] = size
			}
		case r < 80: // complete, or fail to
			id, up := anyUpload(bucket)
			fail := rng.IntN(4) == 0
			var size int64
			err := db.CompleteUpload(ctx, bucket, up.key, id, testTime, func(_ *Upload, parts []Part, _ *Object) (*Object, error) {
				if fail {
					return nil, errCondition
				}
				o := &Object{VersionID: "mp"}
				for _, p := range parts { // use a random subset of the parts
					if rng.IntN(3) > 0 {
						o.Blocks = append(o.Blocks, p.Blocks...)
						o.Size += p.Size
						o.PartSizes = append(o.PartSizes, p.Size)
					}
				}
				size = o.Size
				return o, nil
			})
			switch {
			case noBucket != nil:
				wantErr("CompleteUpload", err, noBucket)
			case up.parts == nil:
				wantErr("CompleteUpload of no upload", err, ErrNotFound)
			case fail:
				wantErr("failed CompleteUpload", err, errCondition)
			default:
				wantErr("CompleteUpload", err, nil)
				b.objects[up.key] = size
				delete(b.uploads, id)
			}
		case r < 86: // abort
			id, up := anyUpload(bucket)
			err := db.AbortUpload(ctx, bucket, up.key, id, testTime)
			if up.parts == nil {
				wantErr("AbortUpload of no upload", err, ErrNotFound)
			} else {
				wantErr("AbortUpload", err, nil)
				delete(b.uploads, id)
			}
		case r < 90: // delete the bucket, aborting its uploads
			err := db.DeleteBucket(ctx, bucket, testTime)
			switch {
			case b == nil:
				wantErr("DeleteBucket", err, ErrNotFound)
			case len(b.objects) > 0:
				wantErr("DeleteBucket", err, ErrBucketNotEmpty)
			default:
				wantErr("DeleteBucket", err, nil)
				delete(model, bucket)
			}
		case r < 97: // create the bucket
			err := db.CreateBucket(ctx, Bucket{Name: bucket, Created: testTime})
			if b != nil {
				wantErr("CreateBucket", err, ErrConflict)
			} else {
				wantErr("CreateBucket", err, nil)
				model[bucket] = &modelBucket{objects: map[string]int64{}, uploads: map[string]*modelUpload{}}
			}
		case r < 99:
			compactAll(t, db)
		default:
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			db = open()
		}
		if diff := cmp.Diff(model.usage(), dbUsage(t, db)); diff != "" {
			t.Fatalf("step %d: usage mismatch (-model +db):\n%s", step, diff)
		}
		if step%20 == 0 {
			checkClean(t, db)
		}
	}
	checkClean(t, db)
}

// TestUsageConcurrentWriters has writers in one bucket put, overwrite and
// delete objects and upload parts at once, and checks that the totals are
// exact: per-writer keys have a known final state, and a key all writers
// fight over is checked against a recount.
func TestUsageConcurrentWriters(t *testing.T) { forEachEngine(t, testUsageConcurrentWriters) }

func testUsageConcurrentWriters(t *testing.T, e engine) {
	ctx := context.Background()
	db := e.open(t)
	db.sync = false // the race is in the locks and batches, not the fsync
	mustCreateBucket(t, db, "bkt")
	const writers, rounds = 8, 60
	want := make([]Usage, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			sizes := map[string]int64{}
			id := fmt.Sprintf("%031d%d", 0, w)
			if err := db.CreateUpload(ctx, Upload{Bucket: "bkt", Key: "mp", ID: id}); err != nil {
				t.Error(err)
				return
			}
			parts := map[int]int64{}
			for i := range rounds {
				key := fmt.Sprintf("w%d/%d", w, rng.IntN(5))
				size := int64(rng.IntN(1000))
				var err error
				switch i % 4 {
				case 0, 1:
					err = db.UpdateObject(ctx, "bkt", key, testTime, func(*Object) (*Object, error) {
						return &Object{VersionID: "v", Size: size, Inline: make([]byte, size)}, nil
					})
					sizes[key] = size
				case 2:
					err = db.UpdateObject(ctx, "bkt", key, testTime, func(*Object) (*Object, error) { return nil, nil })
					delete(sizes, key)
				case 3:
					n := 1 + rng.IntN(3)
					err = db.PutPart(ctx, "bkt", "mp", id, Part{Number: n, Size: size}, testTime)
					parts[n] = size
				}
				if err != nil {
					t.Error(err)
					return
				}
				// The shared key: its final state is whoever wrote last.
				if err := db.UpdateObject(ctx, "bkt", "shared", testTime, func(*Object) (*Object, error) {
					if i%5 == 0 {
						return nil, nil
					}
					return &Object{VersionID: "s", Size: size, Inline: make([]byte, size)}, nil
				}); err != nil {
					t.Error(err)
					return
				}
			}
			u := Usage{Uploads: 1}
			for _, s := range sizes {
				u.Objects++
				u.Bytes += s
			}
			for _, s := range parts {
				u.PartBytes += s
			}
			want[w] = u
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	var total Usage
	for _, u := range want {
		total = total.add(u)
	}
	if o, err := db.Object(ctx, "bkt", "shared"); err == nil {
		total = total.add(Usage{Objects: 1, Bytes: o.Size})
	} else if !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	got, err := db.BucketUsage(ctx, "bkt")
	if err != nil {
		t.Fatal(err)
	}
	if got.Usage != total {
		t.Errorf("usage after concurrent writers = %+v, want %+v", got.Usage, total)
	}
	checkClean(t, db)
}

// legacyOptions are the options of a Coffer before usage accounting, as
// far as merging goes: Pebble's defaults.
func legacyOptions() *pebble.Options {
	log := slog.New(slog.DiscardHandler)
	return &pebble.Options{FormatMajorVersion: pebble.FormatNewest, Logger: pebbleLogger{log: log, fail: newFailure(log)}}
}

// legacyObject is an object record as Coffer wrote it before usage
// accounting: the record format has not changed.
func legacyObject(size int64, blocks bool) []byte {
	o := Object{VersionID: "v", Size: size}
	if blocks {
		o.Blocks = []Block{{Key: "b/x", Size: size}}
	}
	return appendObject(nil, &o)
}

// writeLegacyDB creates, with Pebble's default options (the default merger,
// as every Coffer before usage accounting did), a database holding two
// buckets with objects, an upload with parts and an empty bucket, and no
// usage table or format key.
func writeLegacyDB(t *testing.T, dir string) {
	t.Helper()
	p, err := pebble.Open(dir, legacyOptions())
	if err != nil {
		t.Fatal(err)
	}
	b := p.NewBatch()
	set := func(k, v []byte) {
		if err := b.Set(k, v, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"empty", "one", "two"} {
		set(bucketKey(name), appendBucket(nil, &Bucket{Name: name, Created: testTime}))
	}
	set(objectKey(nil, "one", "a"), legacyObject(10, false))
	set(objectKey(nil, "one", "b"), legacyObject(0, false))
	set(objectKey(nil, "one", "c"), legacyObject(50<<20, true))
	set(objectKey(nil, "two", "x"), legacyObject(7, false))
	id := strings.Repeat("7", UploadIDLen)
	set(uploadKey("two", "mp", id), appendUpload(nil, &Upload{Bucket: "two", Key: "mp", ID: id}))
	set(partKey(id, 1), appendPart(nil, &Part{Number: 1, Size: 5 << 20}))
	set(partKey(id, 2), appendPart(nil, &Part{Number: 2, Size: 3}))
	if err := b.Commit(pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestUsageLegacyDatabase opens a database made before usage accounting:
// Open counts its usage once and records that it did.
func TestUsageLegacyDatabase(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	writeLegacyDB(t, dir)
	db := openAt(t, dir)
	want := map[string]Usage{
		"empty": {},
		"one":   {Objects: 3, Bytes: 10 + 50<<20},
		"two":   {Objects: 1, Bytes: 7, Uploads: 1, PartBytes: 5<<20 + 3},
	}
	if diff := cmp.Diff(want, dbUsage(t, db)); diff != "" {
		t.Fatalf("usage of a legacy database (-want +got):\n%s", diff)
	}
	checkClean(t, db)
	if v, err := db.kv.get([]byte{tableFormat}, nil); err != nil || string(v) != string([]byte{formatVersion}) {
		t.Fatalf("format key = %x, %v", v, err)
	}

	// The count happens once: a usage value made wrong behind meta's back
	// stays wrong across a reopen (so Open did not count again), and
	// CheckUsage finds and repairs it.
	b := db.kv.newBatch()
	b.set(usageKey(nil, "one"), appendUsage(nil, Usage{Objects: 99}))
	if err := b.commit(true); err != nil {
		t.Fatal(err)
	}
	b.close()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openAt(t, dir)
	if got, _ := db.BucketUsage(ctx, "one"); got.Usage.Objects != 99 {
		t.Fatalf("usage after reopen = %+v; Open recounted a counted database", got.Usage)
	}
	c, err := db.CheckUsage(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	wantCheck := UsageCheck{Buckets: 3, Repaired: 1, Mismatches: []UsageMismatch{{Bucket: "one", Stored: Usage{Objects: 99}, Counted: want["one"]}}}
	if diff := cmp.Diff(wantCheck, c); diff != "" {
		t.Errorf("CheckUsage (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, dbUsage(t, db)); diff != "" {
		t.Errorf("usage after repair (-want +got):\n%s", diff)
	}
	checkClean(t, db)
}

// TestUsageOlderCoffer opens a counted database the way a Coffer before
// usage accounting would (default merger: it concatenates usage operands in
// its compactions), then again with meta: the concatenated operands mean
// the same sum.
func TestUsageOlderCoffer(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := openAt(t, dir)
	mustCreateBucket(t, db, "bkt")
	for i := range 5 {
		putObject(t, db, "bkt", fmt.Sprint(i), Object{VersionID: "v", Size: int64(i), Inline: make([]byte, i)})
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	p, err := pebble.Open(dir, legacyOptions())
	if err != nil {
		t.Fatalf("open with the default merger: %v", err)
	}
	if err := p.Compact(ctx, []byte{0}, []byte{0xff}, false); err != nil {
		t.Fatal(err)
	}
	v, closer, err := p.Get(usageKey(nil, "bkt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(v) <= usageRecLen {
		t.Errorf("the default merger left %d bytes; want a concatenation of operands", len(v))
	}
	closer.Close()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	db = openAt(t, dir)
	got, err := db.BucketUsage(ctx, "bkt")
	if err != nil || got.Usage != (Usage{Objects: 5, Bytes: 10}) {
		t.Errorf("usage after an older Coffer compacted = %+v, %v", got.Usage, err)
	}
	compactAll(t, db)
	checkClean(t, db)
}

func TestUsageNewerFormat(t *testing.T) {
	dir := t.TempDir()
	db := openAt(t, dir)
	b := db.kv.newBatch()
	b.set([]byte{tableFormat}, []byte{formatVersion + 1})
	if err := b.commit(true); err != nil {
		t.Fatal(err)
	}
	b.close()
	db.Close()
	// Twice: the failed Open released the database's lock.
	for range 2 {
		if _, err := Open(Config{Dir: dir}); !errors.Is(err, errFormat) {
			t.Fatalf("Open of a newer format = %v, want errFormat", err)
		}
	}
}

// TestUsageCheckProblems damages the usage table every way CheckUsage
// knows and checks that it reports and repairs each.
func TestUsageCheckProblems(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	for _, n := range []string{"corrupt", "fine", "missing"} {
		mustCreateBucket(t, db, n)
		putObject(t, db, n, "k", Object{VersionID: "v", Size: 3, Inline: []byte("abc")})
	}
	b := db.kv.newBatch()
	b.merge(usageKey(nil, "corrupt"), []byte{7, 7})
	b.delete(usageKey(nil, "missing"))
	b.set(usageKey(nil, "ghost"), appendUsage(nil, Usage{Objects: 1}))
	b.set(objectKey(nil, "nobucket", "k"), legacyObject(4, false))
	if err := b.commit(true); err != nil {
		t.Fatal(err)
	}
	b.close()
	compactAll(t, db) // the corrupt operand goes through the merger

	// A value that does not decode is reported with its bucket, whose
	// usage is zero; the other buckets are listed as they are.
	one := Usage{Objects: 1, Bytes: 3}
	bu, err := db.BucketUsage(ctx, "corrupt")
	if err != nil || bu.Usage != (Usage{}) || !errors.Is(bu.UsageErr, errCorrupt) {
		t.Errorf("BucketUsage of a corrupt value = %+v, %v; want zero usage with errCorrupt", bu, err)
	}
	all, err := db.BucketsUsage(ctx)
	if err != nil {
		t.Fatalf("BucketsUsage with a corrupt value: %v", err)
	}
	for i, want := range []BucketUsage{
		{Bucket: Bucket{Name: "corrupt", Created: testTime}},
		{Bucket: Bucket{Name: "fine", Created: testTime}, Usage: one},
		{Bucket: Bucket{Name: "missing", Created: testTime}},
	} {
		if i >= len(all) {
			t.Fatalf("BucketsUsage = %+v, want 3 buckets", all)
		}
		if got := all[i]; got.Name != want.Name || !got.Created.Equal(want.Created) || got.Usage != want.Usage ||
			(got.UsageErr != nil) != (want.Name == "corrupt") || got.UsageErr != nil && !errors.Is(got.UsageErr, errCorrupt) {
			t.Errorf("BucketsUsage[%d] = %+v, want %+v (with errCorrupt if corrupt)", i, got, want)
		}
	}
	want := []UsageMismatch{
		{Bucket: "corrupt", Counted: one, Problem: problemCorrupt},
		{Bucket: "ghost", Stored: Usage{Objects: 1}, Problem: problemOrphanUsage},
		{Bucket: "missing", Counted: one, Problem: problemMissing},
		{Bucket: "nobucket", Counted: Usage{Objects: 1, Bytes: 4}, Problem: problemOrphanRecords},
	}
	c, err := db.CheckUsage(ctx, false)
	if diff := cmp.Diff(UsageCheck{Buckets: 3, Mismatches: want}, c); err != nil || diff != "" {
		t.Fatalf("CheckUsage: %v (-want +got):\n%s", err, diff)
	}
	c, err = db.CheckUsage(ctx, true)
	if diff := cmp.Diff(UsageCheck{Buckets: 3, Mismatches: want, Repaired: 3}, c); err != nil || diff != "" {
		t.Fatalf("CheckUsage with repair: %v (-want +got):\n%s", err, diff)
	}
	c, err = db.CheckUsage(ctx, false)
	if diff := cmp.Diff(UsageCheck{Buckets: 3, Mismatches: want[3:]}, c); err != nil || diff != "" {
		t.Errorf("CheckUsage after repair: %v (-want +got):\n%s", err, diff)
	}
	if diff := cmp.Diff(map[string]Usage{"corrupt": one, "fine": one, "missing": one}, dbUsage(t, db)); diff != "" {
		t.Errorf("usage after repair (-want +got):\n%s", diff)
	}
}

// TestUsageRepairWhileWriting repairs a bucket's usage while writers keep
// changing it (objects, parts, uploads created and aborted): the result is
// exact.
func TestUsageRepairWhileWriting(t *testing.T) { forEachEngine(t, testUsageRepairWhileWriting) }

func testUsageRepairWhileWriting(t *testing.T, e engine) {
	ctx := context.Background()
	db := e.open(t)
	db.sync = false
	mustCreateBucket(t, db, "bkt")
	id := strings.Repeat("9", UploadIDLen)
	if err := db.CreateUpload(ctx, Upload{Bucket: "bkt", Key: "mp", ID: id}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var err error
				switch w {
				case 0:
					err = db.PutPart(ctx, "bkt", "mp", id, Part{Number: 1 + i%3, Size: int64(i)}, testTime)
				case 1:
					// AbortUpload takes only its key's lock, as PutPart does.
					err = createPartAbort(ctx, db, "bkt", fmt.Sprint("ab/", i%5), fmt.Sprintf("%0*d", UploadIDLen, i), int64(i))
				default:
					err = db.UpdateObject(ctx, "bkt", fmt.Sprint(w, "/", i%7), testTime, func(*Object) (*Object, error) {
						if i%3 == 0 {
							return nil, nil
						}
						return &Object{VersionID: "v", Size: int64(i), Inline: make([]byte, i%100)}, nil
					})
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for range 20 {
		b := db.kv.newBatch()
		b.merge(usageKey(nil, "bkt"), appendUsage(nil, Usage{Objects: 1000}))
		if err := b.commit(false); err != nil {
			t.Fatal(err)
		}
		b.close()
		c, err := db.CheckUsage(ctx, true)
		if err != nil {
			t.Fatal(err)
		}
		if c.Repaired != 1 {
			t.Fatalf("CheckUsage = %+v, want one repair", c)
		}
	}
	close(stop)
	wg.Wait()
	checkClean(t, db)
}

// createPartAbort creates upload id of bucket/key, uploads a part of size
// bytes and aborts it.
func createPartAbort(ctx context.Context, db *DB, bucket, key, id string, size int64) error {
	if err := createPart(ctx, db, bucket, key, id, size); err != nil {
		return err
	}
	return db.AbortUpload(ctx, bucket, key, id, testTime)
}

// createPart creates upload id of bucket/key with one part of size bytes.
func createPart(ctx context.Context, db *DB, bucket, key, id string, size int64) error {
	if err := db.CreateUpload(ctx, Upload{Bucket: bucket, Key: key, ID: id}); err != nil {
		return err
	}
	return db.PutPart(ctx, bucket, key, id, Part{Number: 1, Size: size}, testTime)
}

// An upload aborted while a repair counts the bucket is counted as
// aborted, both by a repair that corrects a difference (the abort commits
// between its snapshot and its merge) and by one that resets a value that
// does not decode (the abort commits between its listing of the uploads
// and its taking their keys' locks; AbortUpload takes only its key's
// lock, and the lifecycle worker aborts incomplete uploads).
func TestUsageRepairAbortRace(t *testing.T) { forEachEngine(t, testUsageRepairAbortRace) }

func testUsageRepairAbortRace(t *testing.T, e engine) {
	for _, tc := range []struct {
		name   string
		damage []byte // merged into the usage value
	}{
		{name: "difference", damage: appendUsage(nil, Usage{Objects: 1000})},
		{name: "corrupt", damage: []byte{7, 7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := decodeUsage(tc.damage); err != nil && e.name == EnginePostgres {
				t.Skip("PostgreSQL stores usage as numbers: a value cannot be corrupt")
			}
			ctx := context.Background()
			db := e.open(t)
			mustCreateBucket(t, db, "bkt")
			id := strings.Repeat("7", UploadIDLen)
			if err := db.CreateUpload(ctx, Upload{Bucket: "bkt", Key: "mp", ID: id}); err != nil {
				t.Fatal(err)
			}
			if err := db.PutPart(ctx, "bkt", "mp", id, Part{Number: 1, Size: 5}, testTime); err != nil {
				t.Fatal(err)
			}
			b := db.kv.newBatch()
			b.merge(usageKey(nil, "bkt"), tc.damage)
			if err := b.commit(true); err != nil {
				t.Fatal(err)
			}
			b.close()
			var once sync.Once
			testHookRepairWindow = func(string) {
				once.Do(func() {
					if err := db.AbortUpload(ctx, "bkt", "mp", id, testTime); err != nil {
						t.Errorf("AbortUpload: %v", err)
					}
				})
			}
			t.Cleanup(func() { testHookRepairWindow = nil })
			c, err := db.CheckUsage(ctx, true)
			if err != nil || c.Repaired != 1 {
				t.Fatalf("CheckUsage = %+v, %v; want one repair", c, err)
			}
			if diff := cmp.Diff(map[string]Usage{"bkt": {}}, dbUsage(t, db)); diff != "" {
				t.Errorf("usage after a repair that met an abort (-want +got):\n%s", diff)
			}
			checkClean(t, db)
		})
	}
}

// A repair holds off no writer while it counts (the bucket's writers on
// every node; on Pebble, writers of the buckets that share its lock
// stripe), and what they write while it counts is neither lost nor
// counted twice.
func TestUsageRepairWritesGoOn(t *testing.T) { forEachEngine(t, testUsageRepairWritesGoOn) }

func testUsageRepairWritesGoOn(t *testing.T, e engine) {
	ctx := context.Background()
	db := e.open(t)
	mustCreateBucket(t, db, "bkt")
	for i := range 5 {
		putObject(t, db, "bkt", fmt.Sprint("k", i), Object{VersionID: "v", Size: int64(10 + i)})
	}
	old := strings.Repeat("1", UploadIDLen)
	if err := db.CreateUpload(ctx, Upload{Bucket: "bkt", Key: "mp", ID: old}); err != nil {
		t.Fatal(err)
	}
	if err := db.PutPart(ctx, "bkt", "mp", old, Part{Number: 1, Size: 100}, testTime); err != nil {
		t.Fatal(err)
	}
	b := db.kv.newBatch()
	b.merge(usageKey(nil, "bkt"), appendUsage(nil, Usage{Objects: 1000, Bytes: -7, Uploads: 3, PartBytes: 9}))
	if err := b.commit(true); err != nil {
		t.Fatal(err)
	}
	b.close()

	// While the repair is between its count and what it stores, write
	// every kind of change into the bucket, each from its own goroutine.
	nu := strings.Repeat("2", UploadIDLen)
	writes := []func() error{
		func() error { return db.UpdateObject(ctx, "bkt", "new", testTime, putFunc(1000)) }, // +1, +1000
		func() error { return db.UpdateObject(ctx, "bkt", "k0", testTime, putFunc(20)) },    // +10
		func() error { return db.UpdateObject(ctx, "bkt", "k1", testTime, putFunc(-1)) },    // -1, -11
		func() error { return db.AbortUpload(ctx, "bkt", "mp", old, testTime) },             // -1 upload, -100
		func() error { return createPart(ctx, db, "bkt", "mp2", nu, 50) },                   // +1 upload, +50
	}
	var written sync.WaitGroup
	testHookRepairWindow = func(bucket string) {
		if bucket != "bkt" {
			return
		}
		testHookRepairWindow = nil // once
		done := make(chan struct{})
		go func() {
			var wg sync.WaitGroup
			for _, w := range writes {
				wg.Go(func() {
					if err := w(); err != nil {
						t.Errorf("write during the repair: %v", err)
					}
				})
			}
			wg.Wait()
			close(done)
		}()
		written.Add(1)
		go func() { <-done; written.Done() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("writes into the bucket still wait for the repair after 10 s")
		}
	}
	t.Cleanup(func() { testHookRepairWindow = nil })
	c, err := db.CheckUsage(ctx, true)
	written.Wait()
	if err != nil || c.Repaired != 1 {
		t.Fatalf("CheckUsage = %+v, %v; want one repair", c, err)
	}
	want := Usage{Objects: 5, Bytes: 10 + 11 + 12 + 13 + 14 + 1000 + 10 - 11, Uploads: 1, PartBytes: 50}
	if diff := cmp.Diff(map[string]Usage{"bkt": want}, dbUsage(t, db)); diff != "" {
		t.Errorf("usage after a repair with writes (-want +got):\n%s", diff)
	}
	checkClean(t, db)
}

// putFunc is an UpdateFunc that stores an inline object of size bytes,
// or deletes the object if size is negative.
func putFunc(size int) UpdateFunc {
	return func(*Object) (*Object, error) {
		if size < 0 {
			return nil, nil
		}
		return &Object{VersionID: "v", Size: int64(size), Inline: make([]byte, size)}, nil
	}
}

// Repairs run one at a time (in the cluster, with PostgreSQL): a second
// one started while the first counts would count the same difference and
// add it again.
func TestUsageRepairsOneAtATime(t *testing.T) { forEachEngine(t, testUsageRepairsOneAtATime) }

func testUsageRepairsOneAtATime(t *testing.T, e engine) {
	ctx := context.Background()
	place := e.place(t)
	db := e.openAt(t, place)
	other := db // another node of the cluster, with PostgreSQL
	if e.name == EnginePostgres {
		other = e.openAt(t, place)
	}
	mustCreateBucket(t, db, "bkt")
	putObject(t, db, "bkt", "k", Object{VersionID: "v", Size: 3, Inline: []byte("abc")})
	b := db.kv.newBatch()
	b.merge(usageKey(nil, "bkt"), appendUsage(nil, Usage{Objects: 1000}))
	if err := b.commit(true); err != nil {
		t.Fatal(err)
	}
	b.close()
	var (
		once   sync.Once
		second = make(chan UsageCheck, 1)
	)
	testHookRepairWindow = func(string) {
		once.Do(func() {
			go func() {
				c, err := other.CheckUsage(ctx, true)
				if err != nil {
					t.Errorf("second CheckUsage: %v", err)
				}
				second <- c
			}()
			// Give the second repair the time to count and add, were it
			// not held off.
			select {
			case <-second:
				t.Errorf("a second repair ran while the first counted")
			case <-time.After(time.Second):
			}
		})
	}
	t.Cleanup(func() { testHookRepairWindow = nil })
	c, err := db.CheckUsage(ctx, true)
	if err != nil || c.Repaired != 1 {
		t.Fatalf("CheckUsage = %+v, %v; want one repair", c, err)
	}
	select {
	case c := <-second:
		if c.Repaired != 0 || len(c.Mismatches) != 0 {
			t.Errorf("second CheckUsage = %+v, want nothing to repair", c)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("the second repair did not end after the first")
	}
	if diff := cmp.Diff(map[string]Usage{"bkt": {Objects: 1, Bytes: 3}}, dbUsage(t, db)); diff != "" {
		t.Errorf("usage after two repairs (-want +got):\n%s", diff)
	}
	checkClean(t, db)
}

// A repair whose bucket is deleted, or deleted and created again, between
// its count and its merge adds nothing: the difference was the old
// bucket's, and its usage went with it.
func TestUsageRepairBucketGone(t *testing.T) { forEachEngine(t, testUsageRepairBucketGone) }

func testUsageRepairBucketGone(t *testing.T, e engine) {
	for _, tc := range []struct {
		name     string
		recreate bool
		want     map[string]Usage
	}{
		{name: "deleted", want: map[string]Usage{}},
		{name: "created again", recreate: true, want: map[string]Usage{"bkt": {}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			db := e.open(t)
			mustCreateBucket(t, db, "bkt")
			b := db.kv.newBatch()
			b.merge(usageKey(nil, "bkt"), appendUsage(nil, Usage{Objects: 1000}))
			if err := b.commit(true); err != nil {
				t.Fatal(err)
			}
			b.close()
			testHookRepairWindow = func(string) {
				testHookRepairWindow = nil // once
				if err := db.DeleteBucket(ctx, "bkt", testTime); err != nil {
					t.Errorf("DeleteBucket: %v", err)
				}
				if tc.recreate {
					if err := db.CreateBucket(ctx, Bucket{Name: "bkt", Created: testTime.Add(time.Second)}); err != nil {
						t.Errorf("CreateBucket: %v", err)
					}
				}
			}
			t.Cleanup(func() { testHookRepairWindow = nil })
			c, err := db.CheckUsage(ctx, true)
			if err != nil || c.Repaired != 0 {
				t.Fatalf("CheckUsage = %+v, %v; want no repair", c, err)
			}
			if diff := cmp.Diff(tc.want, dbUsage(t, db)); diff != "" {
				t.Errorf("usage (-want +got):\n%s", diff)
			}
			checkClean(t, db)
		})
	}
}
