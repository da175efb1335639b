package meta

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func openTest(t testing.TB) *DB {
	t.Helper()
	return openAt(t, t.TempDir())
}

func openAt(t testing.TB, dir string) *DB {
	t.Helper()
	db, err := Open(Config{Dir: dir, Sync: true})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func mustCreateBucket(t testing.TB, db *DB, name string) {
	t.Helper()
	if err := db.CreateBucket(context.Background(), Bucket{Name: name, Created: testTime}); err != nil {
		t.Fatalf("CreateBucket(%s): %v", name, err)
	}
}

func putObject(t testing.TB, db *DB, bucket, key string, o Object) {
	t.Helper()
	err := db.UpdateObject(context.Background(), bucket, key, testTime, func(*Object) (*Object, error) { return &o, nil })
	if err != nil {
		t.Fatalf("UpdateObject(%s/%s): %v", bucket, key, err)
	}
}

// objectData returns the inline data of version v of bucket/key.
func objectData(t testing.TB, db *DB, bucket, key, v string) []byte {
	t.Helper()
	data, _, err := db.ObjectData(context.Background(), bucket, key, v, nil)
	if err != nil {
		t.Fatalf("ObjectData(%s/%s, %s): %v", bucket, key, v, err)
	}
	return data
}

// hasDataKey reports whether bucket/key's data key exists.
func hasDataKey(t testing.TB, db *DB, bucket, key string) bool {
	t.Helper()
	_, err := db.kv.get(dataKey(nil, bucket, key), nil)
	if err != nil && !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	return err == nil
}

func garbageKeys(t testing.TB, db *DB) []string {
	t.Helper()
	gs, err := db.Garbage(context.Background(), time.Now().Add(time.Hour), nil, 1000)
	if err != nil {
		t.Fatalf("Garbage: %v", err)
	}
	var keys []string
	for _, g := range gs {
		keys = append(keys, g.BlobKey)
	}
	slices.Sort(keys)
	return keys
}

func TestOpenLocked(t *testing.T) {
	dir := t.TempDir()
	db := openAt(t, dir)
	_, err := Open(Config{Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "is locked by another process") {
		t.Fatalf("second Open error = %v, want a lock error", err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	db2, err := Open(Config{Dir: dir})
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	if err := db2.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := Open(Config{}); err == nil {
		t.Error("Open with no directory succeeded")
	}
}

// TestOpenLockedOtherProcess holds the database open in a child process
// (this test binary, re-run as a helper) and checks that Open here fails
// with the lock error.
func TestOpenLockedOtherProcess(t *testing.T) {
	if dir := os.Getenv("COFFER_META_LOCK_HELPER"); dir != "" {
		db, err := Open(Config{Dir: dir})
		if err != nil {
			fmt.Println("open:", err)
			os.Exit(1)
		}
		fmt.Println("ready")
		_, _ = io.Copy(io.Discard, os.Stdin) // hold the lock until stdin closes
		_ = db.Close()
		os.Exit(0)
	}
	dir := t.TempDir()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestOpenLockedOtherProcess$")
	cmd.Env = append(os.Environ(), "COFFER_META_LOCK_HELPER="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("helper said %q, %v", line, err)
	}
	_, err = Open(Config{Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "meta: database "+dir+" is locked by another process") {
		t.Errorf("Open while another process holds the database = %v", err)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
	db, err := Open(Config{Dir: dir})
	if err != nil {
		t.Fatalf("Open after the other process exited: %v", err)
	}
	db.Close()
}

func TestOpenUnwritableDir(t *testing.T) {
	file := t.TempDir() + "/file"
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Config{Dir: file + "/db"}); err == nil || strings.Contains(err.Error(), "locked") {
		t.Errorf("Open under a file = %v, want a non-lock error", err)
	}
}

func TestBuckets(t *testing.T) { forEachEngine(t, testBuckets) }

func testBuckets(t *testing.T, e engine) {
	ctx := context.Background()
	db := e.open(t)
	for _, n := range []string{"b", "a", "c"} {
		mustCreateBucket(t, db, n)
	}
	if err := db.CreateBucket(ctx, Bucket{Name: "a"}); !errors.Is(err, ErrConflict) {
		t.Errorf("CreateBucket(existing) = %v, want ErrConflict", err)
	}
	bs, err := db.Buckets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []Bucket{{Name: "a", Created: testTime}, {Name: "b", Created: testTime}, {Name: "c", Created: testTime}}
	if diff := cmp.Diff(want, bs); diff != "" {
		t.Errorf("Buckets mismatch (-want +got):\n%s", diff)
	}
	if _, err := db.Bucket(ctx, "zz"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Bucket(missing) = %v, want ErrNotFound", err)
	}

	putObject(t, db, "a", "k", Object{VersionID: "v"})
	upID := strings.Repeat("1", UploadIDLen)
	if err := db.CreateUpload(ctx, Upload{Bucket: "b", Key: "k", ID: upID}); err != nil {
		t.Fatal(err)
	}
	if err := db.PutPart(ctx, "b", "k", upID, Part{Number: 1, Size: 1, ETag: "e1", Blocks: []Block{{Key: "b-part1", Size: 1}}}, testTime); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		want error
	}{
		{"a", ErrBucketNotEmpty}, // object
		{"b", nil},               // an upload in progress is aborted with its bucket, as in S3
		{"c", nil},
		{"c", ErrNotFound},
	} {
		if err := db.DeleteBucket(ctx, tc.name, testTime); !errors.Is(err, tc.want) {
			t.Errorf("DeleteBucket(%s) = %v, want %v", tc.name, err, tc.want)
		}
	}
	if g := garbageKeys(t, db); !slices.Contains(g, "b-part1") {
		t.Errorf("garbage after deleting a bucket with an upload = %v, want its part's block", g)
	}
	if _, err := db.Upload(ctx, "b", "k", upID); !errors.Is(err, ErrNotFound) {
		t.Errorf("Upload after its bucket was deleted = %v, want ErrNotFound", err)
	}
	if err := db.UpdateObject(ctx, "c", "k", testTime, func(*Object) (*Object, error) { return &Object{}, nil }); !errors.Is(err, ErrNoBucket) {
		t.Errorf("UpdateObject into deleted bucket = %v, want ErrNoBucket", err)
	}
	if err := db.CreateUpload(ctx, Upload{Bucket: "c", Key: "k", ID: strings.Repeat("1", UploadIDLen)}); !errors.Is(err, ErrNoBucket) {
		t.Errorf("CreateUpload into deleted bucket = %v, want ErrNoBucket", err)
	}
}

func TestUpdateObject(t *testing.T) { forEachEngine(t, testUpdateObject) }

func testUpdateObject(t *testing.T, e engine) {
	ctx := context.Background()
	db := e.open(t)
	mustCreateBucket(t, db, "bkt")
	v1 := Object{VersionID: "v1", Size: 20, Blocks: []Block{{"b/1", 10}, {"b/2", 10}}}
	putObject(t, db, "bkt", "k", v1)
	got, err := db.Object(ctx, "bkt", "k")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(v1, got, cmpopts.EquateEmpty(), cmp.AllowUnexported(Object{})); diff != "" {
		t.Errorf("Object mismatch (-want +got):\n%s", diff)
	}

	// A failing decision writes nothing and returns its error unchanged.
	errNo := errors.New("precondition")
	err = db.UpdateObject(ctx, "bkt", "k", testTime, func(old *Object) (*Object, error) {
		if old == nil || old.VersionID != "v1" {
			t.Errorf("fn saw old = %+v, want v1", old)
		}
		return nil, errNo
	})
	if err != errNo {
		t.Errorf("UpdateObject = %v, want fn's error", err)
	}
	if g := garbageKeys(t, db); len(g) != 0 {
		t.Errorf("garbage after aborted update = %v, want none", g)
	}

	// Replacing moves the old blocks to the garbage queue.
	putObject(t, db, "bkt", "k", Object{VersionID: "v2", Inline: []byte("x"), Size: 1})
	if diff := cmp.Diff([]string{"b/1", "b/2"}, garbageKeys(t, db)); diff != "" {
		t.Errorf("garbage after replace (-want +got):\n%s", diff)
	}
	gs, _ := db.Garbage(ctx, time.Now(), nil, 10)
	if len(gs) != 2 || gs[0].VersionID != "v1" || gs[0].Size != 10 {
		t.Errorf("garbage entries = %+v, want v1's blocks", gs)
	}

	// Deleting; deleting again is a no-op.
	for range 2 {
		if err := db.UpdateObject(ctx, "bkt", "k", testTime, func(*Object) (*Object, error) { return nil, nil }); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Object(ctx, "bkt", "k"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Object after delete = %v, want ErrNotFound", err)
	}
}

func TestDeleteObjects(t *testing.T) { forEachEngine(t, testDeleteObjects) }

func testDeleteObjects(t *testing.T, e engine) {
	ctx := context.Background()
	db := e.open(t)
	mustCreateBucket(t, db, "bkt")
	for i := range 50 {
		putObject(t, db, "bkt", fmt.Sprint(i), Object{VersionID: fmt.Sprint(i), Blocks: []Block{{Key: fmt.Sprintf("b/%02d", i), Size: 1}}})
	}
	var keys []string
	for i := range 60 { // ten absent
		keys = append(keys, fmt.Sprint(i), fmt.Sprint(i)) // and duplicates
	}
	if err := db.DeleteObjects(ctx, "bkt", keys, testTime); err != nil {
		t.Fatal(err)
	}
	entries, _, err := db.ListObjects(ctx, "bkt", ListOptions{Limit: 100})
	if err != nil || len(entries) != 0 {
		t.Errorf("after DeleteObjects: %d entries, %v", len(entries), err)
	}
	if g := garbageKeys(t, db); len(g) != 50 {
		t.Errorf("garbage entries = %d, want 50", len(g))
	}
	if err := db.DeleteObjects(ctx, "nope", keys, testTime); !errors.Is(err, ErrNoBucket) {
		t.Errorf("DeleteObjects(missing bucket) = %v, want ErrNoBucket", err)
	}
}

func TestConcurrentUpdatesSerialise(t *testing.T) { forEachEngine(t, testConcurrentUpdatesSerialise) }

func testConcurrentUpdatesSerialise(t *testing.T, e engine) {
	ctx := context.Background()
	db := e.open(t)
	mustCreateBucket(t, db, "bkt")
	// Each writer increments a counter stored in the ETag; lost updates
	// would show as a final count below the number of increments.
	const writers, each = 8, 25
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for range each {
				err := db.UpdateObject(ctx, "bkt", "ctr", testTime, func(old *Object) (*Object, error) {
					n := 0
					if old != nil {
						n = int(old.Size)
					}
					return &Object{Size: int64(n + 1)}, nil
				})
				if err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	o, err := db.Object(ctx, "bkt", "ctr")
	if err != nil || o.Size != writers*each {
		t.Errorf("counter = %d, %v; want %d", o.Size, err, writers*each)
	}
}

func TestUploads(t *testing.T) { forEachEngine(t, testUploads) }

func testUploads(t *testing.T, e engine) {
	ctx := context.Background()
	db := e.open(t)
	mustCreateBucket(t, db, "bkt")
	id := strings.Repeat("a", UploadIDLen)
	if err := db.CreateUpload(ctx, Upload{Bucket: "bkt", Key: "k", ID: "short"}); err == nil {
		t.Error("CreateUpload with a short ID succeeded")
	}
	u := Upload{Bucket: "bkt", Key: "k", ID: id, Initiated: testTime, ChecksumAlgorithm: "CRC32"}
	if err := db.CreateUpload(ctx, u); err != nil {
		t.Fatal(err)
	}
	got, err := db.Upload(ctx, "bkt", "k", id)
	if diff := cmp.Diff(u, got); err != nil || diff != "" {
		t.Errorf("Upload: %v (-want +got):\n%s", err, diff)
	}
	for _, tc := range []struct{ bucket, key, id string }{{"bkt", "other", id}, {"bkt", "k", "x"}, {"x", "k", id}} {
		if _, err := db.Upload(ctx, tc.bucket, tc.key, tc.id); !errors.Is(err, ErrNotFound) {
			t.Errorf("Upload(%v) = %v, want ErrNotFound", tc, err)
		}
	}
	part := func(n int, blocks ...string) Part {
		p := Part{Number: n, Size: int64(len(blocks)), ETag: fmt.Sprint("e", n)}
		for _, b := range blocks {
			p.Blocks = append(p.Blocks, Block{Key: b, Size: 1})
		}
		return p
	}
	for _, p := range []Part{part(1, "p1a"), part(2, "p2"), part(3, "p3"), part(1, "p1b"), part(10000, "pX")} {
		if err := db.PutPart(ctx, "bkt", "k", id, p, testTime); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{"p1a"}, garbageKeys(t, db)); diff != "" {
		t.Errorf("garbage after part replace (-want +got):\n%s", diff)
	}
	if err := db.PutPart(ctx, "bkt", "k", strings.Repeat("b", UploadIDLen), part(1), testTime); !errors.Is(err, ErrNotFound) {
		t.Errorf("PutPart(unknown upload) = %v, want ErrNotFound", err)
	}

	for _, tc := range []struct {
		after, limit int
		want         []int
		truncated    bool
	}{
		{0, 10, []int{1, 2, 3, 10000}, false},
		{0, 2, []int{1, 2}, true},
		{2, 1, []int{3}, true},
		{3, 1, []int{10000}, false},
		{10000, 5, nil, false},
		{0, 0, nil, true},
	} {
		ps, trunc, err := db.Parts(ctx, id, tc.after, tc.limit)
		if err != nil {
			t.Fatal(err)
		}
		var nums []int
		for _, p := range ps {
			nums = append(nums, p.Number)
		}
		if !slices.Equal(nums, tc.want) || trunc != tc.truncated {
			t.Errorf("Parts(after %d, limit %d) = %v, %v; want %v, %v", tc.after, tc.limit, nums, trunc, tc.want, tc.truncated)
		}
	}

	// Complete with parts 1 and 3; 2 and 10000 become garbage, as do the
	// blocks of the object replaced.
	putObject(t, db, "bkt", "k", Object{VersionID: "old", Blocks: []Block{{"old1", 1}}})
	errStop := errors.New("stop")
	if err := db.CompleteUpload(ctx, "bkt", "k", id, testTime, func(*Upload, []Part, *Object) (*Object, error) { return nil, errStop }); err != errStop {
		t.Errorf("CompleteUpload with failing fn = %v", err)
	}
	err = db.CompleteUpload(ctx, "bkt", "k", id, testTime, func(u *Upload, parts []Part, old *Object) (*Object, error) {
		if len(parts) != 4 || old == nil || old.VersionID != "old" || u.ChecksumAlgorithm != "CRC32" {
			t.Errorf("fn saw %d parts, old %+v, upload %+v", len(parts), old, u)
		}
		o := &Object{VersionID: "new"}
		for _, p := range []Part{parts[0], parts[2]} {
			o.Blocks = append(o.Blocks, p.Blocks...)
		}
		return o, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"old1", "p1a", "p2", "pX"}, garbageKeys(t, db)); diff != "" {
		t.Errorf("garbage after complete (-want +got):\n%s", diff)
	}
	o, _ := db.Object(ctx, "bkt", "k")
	if diff := cmp.Diff([]Block{{"p1b", 1}, {"p3", 1}}, o.Blocks); diff != "" {
		t.Errorf("completed blocks (-want +got):\n%s", diff)
	}
	if _, err := db.Upload(ctx, "bkt", "k", id); !errors.Is(err, ErrNotFound) {
		t.Errorf("upload after complete = %v, want ErrNotFound", err)
	}
	if ps, _, _ := db.Parts(ctx, id, 0, 10); len(ps) != 0 {
		t.Errorf("parts after complete = %v", ps)
	}
	if err := db.CompleteUpload(ctx, "bkt", "k", id, testTime, nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("second CompleteUpload = %v, want ErrNotFound", err)
	}

	// Abort.
	id2 := strings.Repeat("c", UploadIDLen)
	if err := db.CreateUpload(ctx, Upload{Bucket: "bkt", Key: "k2", ID: id2}); err != nil {
		t.Fatal(err)
	}
	if err := db.PutPart(ctx, "bkt", "k2", id2, part(1, "q1"), testTime); err != nil {
		t.Fatal(err)
	}
	if err := db.AbortUpload(ctx, "bkt", "k2", id2, testTime); err != nil {
		t.Fatal(err)
	}
	if err := db.AbortUpload(ctx, "bkt", "k2", id2, testTime); !errors.Is(err, ErrNotFound) {
		t.Errorf("second AbortUpload = %v, want ErrNotFound", err)
	}
	if g := garbageKeys(t, db); !slices.Contains(g, "q1") {
		t.Errorf("garbage after abort = %v, want q1", g)
	}
	if err := db.DeleteBucket(ctx, "bkt", testTime); !errors.Is(err, ErrBucketNotEmpty) {
		t.Errorf("DeleteBucket = %v, want ErrBucketNotEmpty", err)
	}
}

func TestGarbageAndReferences(t *testing.T) { forEachEngine(t, testGarbageAndReferences) }

func testGarbageAndReferences(t *testing.T, e engine) {
	ctx := context.Background()
	db := e.open(t)
	mustCreateBucket(t, db, "bkt")
	t0 := time.Unix(1700000000, 0)
	for i := range 5 {
		o := Object{VersionID: fmt.Sprint("v", i), Blocks: []Block{{Key: fmt.Sprint("g", i), Size: int64(i)}}}
		if err := db.UpdateObject(ctx, "bkt", "k", t0.Add(time.Duration(i)*time.Second), func(*Object) (*Object, error) { return &o, nil }); err != nil {
			t.Fatal(err)
		}
	}
	// g0..g3 are garbage at t0+1s..t0+4s; g4 is live.
	id := strings.Repeat("d", UploadIDLen)
	if err := db.CreateUpload(ctx, Upload{Bucket: "bkt", Key: "u", ID: id}); err != nil {
		t.Fatal(err)
	}
	if err := db.PutPart(ctx, "bkt", "u", id, Part{Number: 1, Blocks: []Block{{Key: "part", Size: 1}}}, t0); err != nil {
		t.Fatal(err)
	}
	putObject(t, db, "bkt", "inline", Object{Inline: []byte("data")})

	var refs []string
	if err := db.ReferencedBlocks(ctx, func(k string) error { refs = append(refs, k); return nil }); err != nil {
		t.Fatal(err)
	}
	slices.Sort(refs)
	if diff := cmp.Diff([]string{"g0", "g1", "g2", "g3", "g4", "part"}, refs); diff != "" {
		t.Errorf("ReferencedBlocks (-want +got):\n%s", diff)
	}
	errStop := errors.New("stop")
	if err := db.ReferencedBlocks(ctx, func(string) error { return errStop }); !errors.Is(err, errStop) {
		t.Errorf("ReferencedBlocks with failing fn = %v", err)
	}

	// Pages of 2, before t0+3s: g0 (t0+1s), g1 (t0+2s).
	page, err := db.Garbage(ctx, t0.Add(3*time.Second), nil, 1)
	if err != nil || len(page) != 1 || page[0].BlobKey != "g0" || page[0].VersionID != "v0" {
		t.Fatalf("Garbage page 1 = %+v, %v", page, err)
	}
	page, err = db.Garbage(ctx, t0.Add(3*time.Second), &page[0], 5)
	if err != nil || len(page) != 1 || page[0].BlobKey != "g1" {
		t.Fatalf("Garbage page 2 = %+v, %v", page, err)
	}
	all, _ := db.Garbage(ctx, t0.Add(time.Hour), nil, 100)
	if err := db.DeleteGarbage(ctx, all[:2]); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"g2", "g3"}, garbageKeys(t, db)); diff != "" {
		t.Errorf("garbage after DeleteGarbage (-want +got):\n%s", diff)
	}
}

func TestReopenKeepsData(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := Open(Config{Dir: dir, Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.CreateBucket(ctx, Bucket{Name: "bkt", Created: testTime}); err != nil {
		t.Fatal(err)
	}
	if err := db.UpdateObject(ctx, "bkt", "k", testTime, func(*Object) (*Object, error) {
		return &Object{Size: 3, Inline: []byte("abc")}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openAt(t, dir)
	o, err := db.Object(ctx, "bkt", "k")
	if err != nil || o.Size != 3 {
		t.Fatalf("after reopen: %+v, %v", o, err)
	}
	if data := objectData(t, db, "bkt", "k", o.VersionID); string(data) != "abc" {
		t.Errorf("data after reopen = %q, want abc", data)
	}
}

func TestCanceledContext(t *testing.T) { forEachEngine(t, testCanceledContext) }

func testCanceledContext(t *testing.T, e engine) {
	db := e.open(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for name, err := range map[string]error{
		"CreateBucket": db.CreateBucket(ctx, Bucket{Name: "x"}),
		"UpdateObject": db.UpdateObject(ctx, "x", "k", testTime, nil),
		"DeleteBucket": db.DeleteBucket(ctx, "x", testTime),
		"PutPart":      db.PutPart(ctx, "x", "k", "i", Part{}, testTime),
	} {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with canceled context = %v", name, err)
		}
	}
}
