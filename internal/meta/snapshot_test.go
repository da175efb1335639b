package meta

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// betweenReadsOnce makes the next pair of reads that must see one state
// (testHookBetweenReads) run write in between, once; the hook is removed
// when t ends. Tests that use it must not run in parallel.
func betweenReadsOnce(t *testing.T, write func()) {
	t.Helper()
	var once sync.Once
	testHookBetweenReads = func() { once.Do(write) }
	t.Cleanup(func() { testHookBetweenReads = nil })
}

// A write that moves a version from the object table to the history table
// while a version listing reads them shows it neither twice nor never: the
// listing is the bucket before the write or after it.
func TestListVersionsOneSnapshot(t *testing.T) { forEachEngine(t, testListVersionsOneSnapshot) }

func testListVersionsOneSnapshot(t *testing.T, e engine) {
	db := e.open(t)
	ctx := context.Background()
	mustCreateBucket(t, db, "bkt")
	if err := db.SetVersioning(ctx, "bkt", VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	v1 := putVersionAt(t, db, "bkt", "k", testTime, Object{Size: 1, ETag: "e1"})
	var v2 Object
	betweenReadsOnce(t, func() { v2 = putVersionAt(t, db, "bkt", "k", testTime.Add(time.Second), Object{Size: 1, ETag: "e2"}) })
	es, more, err := db.ListVersions(ctx, "bkt", VersionListOptions{Limit: 1000})
	if err != nil || more {
		t.Fatalf("ListVersions: %v, more %v", err, more)
	}
	got := versionStrings(es)
	before := []string{entryString("k", v1.S3VersionID(), true, false, "e1")}
	after := []string{entryString("k", v2.S3VersionID(), true, false, "e2"), entryString("k", v1.S3VersionID(), false, false, "e1")}
	if !slices.Equal(got, before) && !slices.Equal(got, after) {
		t.Errorf("listing during an overwrite = %q,\nwant the bucket before it %q\nor after it %q", got, before, after)
	}
}

// The same for the lifecycle worker's walk.
func TestWalkVersionsOneSnapshot(t *testing.T) { forEachEngine(t, testWalkVersionsOneSnapshot) }

func testWalkVersionsOneSnapshot(t *testing.T, e engine) {
	db := e.open(t)
	ctx := context.Background()
	mustCreateBucket(t, db, "bkt")
	if err := db.SetVersioning(ctx, "bkt", VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	v1 := putVersionAt(t, db, "bkt", "k", testTime, Object{Size: 1, ETag: "e1"})
	var v2 Object
	betweenReadsOnce(t, func() { v2 = putVersionAt(t, db, "bkt", "k", testTime.Add(time.Second), Object{Size: 1, ETag: "e2"}) })
	es, _, more, err := db.WalkVersions(ctx, "bkt", WalkOptions{Limit: 1000, History: true})
	if err != nil || more {
		t.Fatalf("WalkVersions: %v, more %v", err, more)
	}
	var got []string
	for _, e := range es {
		got = append(got, walkString(e))
	}
	before := []string{entryString("k", v1.S3VersionID(), true, false, "e1")}
	after := []string{entryString("k", v2.S3VersionID(), true, false, "e2"), entryString("k", v1.S3VersionID(), false, false, "e1")}
	if !slices.Equal(got, before) && !slices.Equal(got, after) {
		t.Errorf("walk during an overwrite = %q,\nwant the bucket before it %q\nor after it %q", got, before, after)
	}
}

// A noncurrent version that becomes current (the version above it is
// deleted) while ObjectVersion looks for it is found.
func TestObjectVersionOneSnapshot(t *testing.T) { forEachEngine(t, testObjectVersionOneSnapshot) }

func testObjectVersionOneSnapshot(t *testing.T, e engine) {
	db := e.open(t)
	ctx := context.Background()
	mustCreateBucket(t, db, "bkt")
	if err := db.SetVersioning(ctx, "bkt", VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	v1 := putVersionAt(t, db, "bkt", "k", testTime, Object{Size: 1, ETag: "e1"})
	v2 := putVersionAt(t, db, "bkt", "k", testTime.Add(time.Second), Object{Size: 1, ETag: "e2"})
	betweenReadsOnce(t, func() {
		if _, err := db.DeleteVersions(ctx, "bkt", []VersionRef{{Key: "k", VersionID: v2.S3VersionID()}}, testTime); err != nil {
			t.Errorf("DeleteVersions: %v", err)
		}
	})
	o, _, err := db.ObjectVersion(ctx, "bkt", "k", v1.S3VersionID())
	if err != nil {
		t.Fatalf("ObjectVersion(v1) while v2 above it is deleted: %v", err)
	}
	if o.ETag != "e1" {
		t.Errorf("ObjectVersion(v1) = ETag %q, want e1", o.ETag)
	}
	// After it, v1 is current.
	if o, cur, err := db.ObjectVersion(ctx, "bkt", "k", v1.S3VersionID()); err != nil || !cur || o.ETag != "e1" {
		t.Errorf("ObjectVersion(v1) after = %q current %v, %v; want e1, current", o.ETag, cur, err)
	}
}

// A key's latest delete marker, read while it is deleted (which makes the
// object under it current), is the marker that was latest or none: never
// an older marker.
func TestLatestDeleteMarkerOneSnapshot(t *testing.T) {
	forEachEngine(t, testLatestDeleteMarkerOneSnapshot)
}

func testLatestDeleteMarkerOneSnapshot(t *testing.T, e engine) {
	db := e.open(t)
	ctx := context.Background()
	mustCreateBucket(t, db, "bkt")
	if err := db.SetVersioning(ctx, "bkt", VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	marker := func(at time.Time) string {
		d, err := db.DeleteVersions(ctx, "bkt", []VersionRef{{Key: "k"}}, at)
		if err != nil || !d[0].DeleteMarker {
			t.Fatalf("DeleteVersions = %+v, %v; want a delete marker", d, err)
		}
		return d[0].VersionID
	}
	putVersionAt(t, db, "bkt", "k", testTime, Object{Size: 1, ETag: "e1"})
	old := marker(testTime.Add(time.Second))
	putVersionAt(t, db, "bkt", "k", testTime.Add(2*time.Second), Object{Size: 1, ETag: "e2"})
	top := marker(testTime.Add(3 * time.Second))
	betweenReadsOnce(t, func() {
		if _, err := db.DeleteVersions(ctx, "bkt", []VersionRef{{Key: "k", VersionID: top}}, testTime); err != nil {
			t.Errorf("DeleteVersions: %v", err)
		}
	})
	m, err := db.LatestDeleteMarker(ctx, "bkt", "k")
	switch {
	case errors.Is(err, ErrNotFound): // after the delete: e2 is current
	case err != nil:
		t.Fatalf("LatestDeleteMarker: %v", err)
	case m.S3VersionID() != top:
		t.Errorf("LatestDeleteMarker while the top marker %s is deleted = %s (the older marker is %s), want the top one or none",
			top, m.S3VersionID(), old)
	}
}

// An upload aborted (or completed) while its parts are listed is gone,
// not an upload without parts.
func TestUploadPartsOneSnapshot(t *testing.T) { forEachEngine(t, testUploadPartsOneSnapshot) }

func testUploadPartsOneSnapshot(t *testing.T, e engine) {
	db := e.open(t)
	ctx := context.Background()
	mustCreateBucket(t, db, "bkt")
	id := strings.Repeat("u", UploadIDLen)
	if err := db.CreateUpload(ctx, Upload{Bucket: "bkt", Key: "k", ID: id}); err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 2; n++ {
		if err := db.PutPart(ctx, "bkt", "k", id, Part{Number: n, Size: 1, ETag: "e", Blocks: []Block{{Key: "p" + strconv.Itoa(n), Size: 1}}}, testTime); err != nil {
			t.Fatal(err)
		}
	}
	betweenReadsOnce(t, func() {
		if err := db.AbortUpload(ctx, "bkt", "k", id, testTime); err != nil {
			t.Errorf("AbortUpload: %v", err)
		}
	})
	u, parts, _, err := db.UploadParts(ctx, "bkt", "k", id, 0, 1000)
	switch {
	case errors.Is(err, ErrNotFound): // after the abort
	case err != nil:
		t.Fatalf("UploadParts: %v", err)
	case u.ID != id || len(parts) != 2:
		t.Errorf("UploadParts while the upload is aborted = %q with %d parts, want the upload with its 2 parts, or none", u.ID, len(parts))
	}
}
