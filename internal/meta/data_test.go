package meta

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestInlineDataLifecycle follows one key's data key through every kind of
// replacement: it holds exactly the current inline version's bytes, and
// nothing once the object has no inline data.
func TestInlineDataLifecycle(t *testing.T) { forEachEngine(t, testInlineDataLifecycle) }

func testInlineDataLifecycle(t *testing.T, e engine) {
	ctx := context.Background()
	db := e.open(t)
	mustCreateBucket(t, db, "bkt")
	inline := func(v, data string) Object {
		return Object{VersionID: v, Size: int64(len(data)), Inline: []byte(data)}
	}
	steps := []struct {
		name     string
		obj      *Object // nil deletes
		wantData string  // "" for no data key
	}{
		{"create inline", ptr(inline("v1", "hello")), "hello"},
		{"replace inline", ptr(inline("v2", "world!")), "world!"},
		{"replace with blocks", &Object{VersionID: "v3", Size: 4, Blocks: []Block{{Key: "b/1", Size: 4}}}, ""},
		{"replace blocks with inline", ptr(inline("v4", "x")), "x"},
		{"replace with empty", &Object{VersionID: "v5"}, ""},
		{"inline again", ptr(inline("v6", "again")), "again"},
		{"delete", nil, ""},
	}
	prev := ""
	for _, st := range steps {
		err := db.UpdateObject(ctx, "bkt", "k", testTime, func(*Object) (*Object, error) { return st.obj, nil })
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if got := hasDataKey(t, db, "bkt", "k"); got != (st.wantData != "") {
			t.Errorf("%s: data key present = %v, want %v", st.name, got, !got)
		}
		if prev != "" {
			if _, _, err := db.ObjectData(ctx, "bkt", "k", prev, nil); !errors.Is(err, ErrNotFound) {
				t.Errorf("%s: ObjectData of replaced version %s = %v, want ErrNotFound", st.name, prev, err)
			}
		}
		prev = ""
		if st.obj == nil {
			continue
		}
		o, err := db.Object(ctx, "bkt", "k")
		if err != nil || o.Inline != nil || o.VersionID != st.obj.VersionID {
			t.Errorf("%s: Object = %+v, %v; want version %s without Inline", st.name, o, err, st.obj.VersionID)
		}
		if st.wantData != "" {
			if got := objectData(t, db, "bkt", "k", st.obj.VersionID); string(got) != st.wantData {
				t.Errorf("%s: ObjectData = %q, want %q", st.name, got, st.wantData)
			}
		}
		prev = st.obj.VersionID
	}
}

// TestInlineDataRemovedWithObject checks that the other writes that remove
// an inline object — DeleteObjects and a completed multipart upload over
// it — remove its data key in their batch.
func TestInlineDataRemovedWithObject(t *testing.T) { forEachEngine(t, testInlineDataRemovedWithObject) }

func testInlineDataRemovedWithObject(t *testing.T, e engine) {
	ctx := context.Background()
	db := e.open(t)
	mustCreateBucket(t, db, "bkt")
	for _, k := range []string{"a", "b", "up"} {
		putObject(t, db, "bkt", k, Object{VersionID: "v" + k, Size: 3, Inline: []byte("abc")})
	}
	if err := db.DeleteObjects(ctx, "bkt", []string{"a", "b"}, testTime); err != nil {
		t.Fatal(err)
	}
	id := strings.Repeat("c", UploadIDLen)
	if err := db.CreateUpload(ctx, Upload{Bucket: "bkt", Key: "up", ID: id}); err != nil {
		t.Fatal(err)
	}
	if err := db.PutPart(ctx, "bkt", "up", id, Part{Number: 1, Size: 1, Blocks: []Block{{Key: "b/p", Size: 1}}}, testTime); err != nil {
		t.Fatal(err)
	}
	err := db.CompleteUpload(ctx, "bkt", "up", id, testTime, func(_ *Upload, ps []Part, old *Object) (*Object, error) {
		if old == nil || old.Inline != nil || old.Size != 3 {
			t.Errorf("CompleteUpload: old = %+v, want the inline record without its data", old)
		}
		return &Object{VersionID: "m", Size: 1, Blocks: ps[0].Blocks}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b", "up"} {
		if hasDataKey(t, db, "bkt", k) {
			t.Errorf("data key of %s survives", k)
		}
	}
	if err := db.DeleteObjects(ctx, "bkt", []string{"up"}, testTime); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteBucket(ctx, "bkt", testTime); err != nil {
		t.Errorf("DeleteBucket after removing everything: %v", err)
	}
}

// TestLegacyInlineRecord reads a version 1 record, which holds its data
// itself, and replaces it.
func TestLegacyInlineRecord(t *testing.T) { forEachEngine(t, testLegacyInlineRecord) }

func testLegacyInlineRecord(t *testing.T, e engine) {
	ctx := context.Background()
	db := e.open(t)
	mustCreateBucket(t, db, "bkt")
	old := Object{VersionID: "old", Size: 6, ETag: "e", Modified: testTime, Inline: []byte("legacy")}
	b := db.kv.newBatch()
	b.set(objectKey(nil, "bkt", "k"), appendObjectV1(nil, &old))
	if err := b.commit(true); err != nil {
		t.Fatal(err)
	}
	b.close()

	o, err := db.Object(ctx, "bkt", "k")
	if err != nil || o.Inline != nil || o.Size != 6 || o.VersionID != "old" {
		t.Errorf("Object = %+v, %v", o, err)
	}
	if got := objectData(t, db, "bkt", "k", "old"); string(got) != "legacy" {
		t.Errorf("ObjectData = %q, want legacy", got)
	}
	if _, _, err := db.ObjectData(ctx, "bkt", "k", "other", nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("ObjectData of another version = %v, want ErrNotFound", err)
	}
	es, _, err := db.ListObjects(ctx, "bkt", ListOptions{Limit: 10})
	if err != nil || len(es) != 1 || es[0].Object.Size != 6 {
		t.Errorf("ListObjects = %+v, %v", es, err)
	}

	putObject(t, db, "bkt", "k", Object{VersionID: "new", Size: 3, Inline: []byte("new")})
	raw, err := db.kv.get(objectKey(nil, "bkt", "k"), nil)
	if err != nil || raw[0] != objectVersion {
		t.Errorf("record after replace: version %v, %v; want %d", raw[:1], err, objectVersion)
	}
	if got := objectData(t, db, "bkt", "k", "new"); string(got) != "new" {
		t.Errorf("ObjectData after replace = %q, want new", got)
	}
}

// TestObjectDataMissing: a current record whose data key is absent or
// holds another version's bytes is corruption, not a race.
func TestObjectDataMissing(t *testing.T) { forEachEngine(t, testObjectDataMissing) }

func testObjectDataMissing(t *testing.T, e engine) {
	ctx := context.Background()
	db := e.open(t)
	mustCreateBucket(t, db, "bkt")
	putObject(t, db, "bkt", "none", Object{VersionID: "v", Size: 3})
	putObject(t, db, "bkt", "other", Object{VersionID: "v", Size: 3, Inline: []byte("abc")})
	b := db.kv.newBatch()
	b.set(dataKey(nil, "bkt", "other"), append(appendDataHeader(nil, "w"), "abc"...))
	if err := b.commit(true); err != nil {
		t.Fatal(err)
	}
	b.close()
	for _, k := range []string{"none", "other"} {
		if _, _, err := db.ObjectData(ctx, "bkt", k, "v", nil); !errors.Is(err, errMissingData) {
			t.Errorf("ObjectData(%s) = %v, want errMissingData", k, err)
		}
	}
	if _, _, err := db.ObjectData(ctx, "bkt", "absent", "v", nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("ObjectData(absent) = %v, want ErrNotFound", err)
	}
}

// TestObjectDataReusesBuffer: the data is read into the caller's buffer
// when it fits.
func TestObjectDataReusesBuffer(t *testing.T) { forEachEngine(t, testObjectDataReusesBuffer) }

func testObjectDataReusesBuffer(t *testing.T, e engine) {
	db := e.open(t)
	mustCreateBucket(t, db, "bkt")
	putObject(t, db, "bkt", "k", Object{VersionID: "v", Size: 5, Inline: []byte("hello")})
	buf := make([]byte, 0, 64)
	data, got, err := db.ObjectData(context.Background(), "bkt", "k", "v", buf)
	if err != nil || string(data) != "hello" {
		t.Fatalf("ObjectData = %q, %v", data, err)
	}
	if &got[:1][0] != &buf[:1][0] {
		t.Error("ObjectData did not read into the given buffer")
	}
	allocs := testing.AllocsPerRun(20, func() {
		if _, _, err := db.ObjectData(context.Background(), "bkt", "k", "v", buf); err != nil {
			t.Fatal(err)
		}
	})
	// The bound is Pebble's; a query through pgx allocates more.
	if allocs > 4 && e.name == EnginePebble {
		t.Errorf("ObjectData allocates %.0f times per call, want ≤ 4", allocs)
	}
}
