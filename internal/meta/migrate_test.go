package meta

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fillSource writes a store with every kind of record a migration moves:
// buckets (one versioned), inline, block and empty objects, noncurrent
// versions and a delete marker, an upload with parts, IAM state, a bucket
// policy and configuration, usage, and garbage (which stays behind).
func fillSource(t *testing.T, db *DB) {
	t.Helper()
	ctx := t.Context()
	mustCreateBucket(t, db, "plain")
	mustCreateBucket(t, db, "versioned")
	if err := db.SetVersioning(ctx, "versioned", VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	putObject(t, db, "plain", "small", Object{Size: 5, ETag: "e1", Inline: []byte("hello")})
	putObject(t, db, "plain", "big", Object{Size: 30, ETag: "e2", Blocks: []Block{{Key: "b/00/big1", Size: 20}, {Key: "b/00/big2", Size: 10}}})
	putObject(t, db, "plain", "empty", Object{ETag: "e3"})
	putObject(t, db, "plain", "replaced", Object{Size: 4, ETag: "e4", Blocks: []Block{{Key: "b/00/old", Size: 4}}})
	putObject(t, db, "plain", "replaced", Object{Size: 4, ETag: "e5", Blocks: []Block{{Key: "b/00/new", Size: 4}}}) // b/00/old → garbage
	putObject(t, db, "versioned", "k\x00nul", Object{Size: 2, ETag: "v1", Inline: []byte("v1")})
	putObject(t, db, "versioned", "k\x00nul", Object{Size: 3, ETag: "v2", Blocks: []Block{{Key: "b/01/v2", Size: 3}}})
	putObject(t, db, "versioned", "k\x00nul", Object{DeleteMarker: true})
	if err := db.CreateUpload(ctx, Upload{Bucket: "plain", Key: "mp", ID: "0123456789abcdef0123456789abcdef", Initiated: testTime}); err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 3; n++ {
		p := Part{Number: n, Size: 7, ETag: fmt.Sprint("p", n), Modified: testTime, Blocks: []Block{{Key: fmt.Sprintf("b/02/part%d", n), Size: 7}}}
		if err := db.PutPart(ctx, "plain", "mp", "0123456789abcdef0123456789abcdef", p, testTime); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.PutIAMState(ctx, []byte(`{"sealed":"state"}`)); err != nil {
		t.Fatal(err)
	}
	if err := db.PutBucketPolicy(ctx, "plain", []byte(`{"Statement":[]}`)); err != nil {
		t.Fatal(err)
	}
	if err := db.PutBucketConfig(ctx, "plain", "cors", []byte("<CORSConfiguration/>")); err != nil {
		t.Fatal(err)
	}
}

// dump returns every key-value pair of db a migration copies, in order.
func dump(t *testing.T, db *DB) []string {
	t.Helper()
	it, err := db.kv.newIter(nil, pgMaxKey)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for ok := it.first(); ok; ok = it.next() {
		if copySkip(it.key()[0]) {
			continue
		}
		v, err := it.value()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%q = %x", it.key(), v))
	}
	if err := it.close(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestCopyFrom(t *testing.T) { forEachEngine(t, testCopyFrom) }

// testCopyFrom copies a Pebble store into a store of e, in batches of one
// key, with the block callback failing now and then (an interrupted run):
// each retry resumes from the stored progress, and the end state is the
// source's key-value pairs exactly, usage included, without garbage.
func testCopyFrom(t *testing.T, e engine) {
	ctx := t.Context()
	src := openTest(t)
	fillSource(t, src)
	dst := e.open(t)
	if has, err := dst.HasRecords(ctx); err != nil || has {
		t.Fatalf("HasRecords of an empty store = %v, %v", has, err)
	}
	if _, err := dst.Migration(ctx); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Migration of a new store: %v, want ErrNotFound", err)
	}
	m := Migration{Source: "test", Phase: MigrationCopying, Started: testTime}
	if err := dst.SaveMigration(ctx, &m); err != nil {
		t.Fatal(err)
	}
	var copied []string
	calls, runs := 0, 0
	fail := errors.New("injected")
	for done := false; !done; {
		runs++
		if runs > 100 {
			t.Fatal("copy does not end")
		}
		// Each run starts from what is stored, as a new process would.
		var err error
		if m, err = dst.Migration(ctx); err != nil {
			t.Fatal(err)
		}
		done, err = dst.CopyFrom(ctx, src, &m, CopyLimits{Keys: 1, Bytes: 1 << 20, BlockBytes: 1 << 20}, func(_ context.Context, bs []Block) error {
			if calls++; calls%3 == 0 {
				return fail
			}
			for _, b := range bs {
				copied = append(copied, b.Key)
			}
			return nil
		})
		if err != nil && !errors.Is(err, fail) {
			t.Fatal(err)
		}
	}
	if m.Phase != MigrationVerifying || m.Cursor != nil {
		t.Errorf("after the copy: phase %q cursor %q, want verifying from the start", m.Phase, m.Cursor)
	}
	if diff := cmp.Diff(dump(t, src), dump(t, dst)); diff != "" {
		t.Errorf("target differs from the source (-source +target):\n%s", diff)
	}
	// Their digests agree, table by table; the migration's and a
	// source's mark (in 'w') are in neither.
	if err := src.SetMigrationMark(ctx, MigrationMark{Target: "elsewhere", Started: testTime}); err != nil {
		t.Fatal(err)
	}
	sd, err := src.Digest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dd, err := dst.Digest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(sd, dd); diff != "" || len(sd) < 8 {
		t.Errorf("digests (-source +target):\n%s\nsource: %+v", diff, sd)
	}
	if gs := garbageKeys(t, dst); len(gs) != 0 {
		t.Errorf("garbage copied: %q", gs)
	}
	// The target keeps the store ID of its own: it is another store.
	if v, err := dst.kv.get(storeIDKey, nil); err != nil || string(v) != dst.StoreID() || string(v) == src.StoreID() {
		t.Errorf("target's stored store ID = %q, %v; want its own %q, not the source's %q", v, err, dst.StoreID(), src.StoreID())
	}
	slices.Sort(copied)
	copied = slices.Compact(copied)
	want := []string{"b/00/big1", "b/00/big2", "b/00/new", "b/01/v2", "b/02/part1", "b/02/part2", "b/02/part3"}
	if diff := cmp.Diff(want, copied); diff != "" {
		t.Errorf("blocks handed to the callback (-want +got):\n%s", diff)
	}
	su, err := src.BucketsUsage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	du, err := dst.BucketsUsage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(su, du); diff != "" {
		t.Errorf("usage (-source +target):\n%s", diff)
	}
	if check, err := dst.CheckUsage(ctx, false); err != nil || len(check.Mismatches) != 0 {
		t.Errorf("CheckUsage of the target: %+v, %v", check, err)
	}
	if has, err := dst.HasRecords(ctx); err != nil || !has {
		t.Errorf("HasRecords after the copy = %v, %v", has, err)
	}

	// The records that hold data, in pages of two.
	var got []string
	var cursor []byte
	for {
		rs, next, err := dst.Records(ctx, cursor, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			data, _, err := dst.RecordData(ctx, &r, nil)
			if err != nil {
				t.Fatalf("RecordData(%s): %v", r.String(), err)
			}
			at, err := dst.RecordAt(ctx, r.Key)
			if err != nil || at.String() != r.String() {
				t.Errorf("RecordAt(%q) = %s, %v; want %s", r.Key, at.String(), err, r.String())
			}
			got = append(got, fmt.Sprintf("%s data %q", r.String(), data))
		}
		if next == nil {
			break
		}
		cursor = next
	}
	wantRecs := []string{
		`versioned/k` + "\x00" + `nul version ` + versionOf(t, dst, "versioned", "k\x00nul", "v2") + ` (noncurrent) data ""`,
		`versioned/k` + "\x00" + `nul version ` + versionOf(t, dst, "versioned", "k\x00nul", "v1") + ` (noncurrent) data "v1"`,
		`plain/big version null data ""`,
		`plain/empty version null data ""`,
		`plain/replaced version null data ""`,
		`plain/small version null data "hello"`,
		`part 1 of upload 0123456789abcdef0123456789abcdef data ""`,
		`part 2 of upload 0123456789abcdef0123456789abcdef data ""`,
		`part 3 of upload 0123456789abcdef0123456789abcdef data ""`,
	}
	// The delete marker is the versioned key's current version: a history
	// record of its own, first (newest).
	if len(got) != len(wantRecs)+1 || !bytes.Contains([]byte(got[0]), []byte("versioned/k\x00nul version ")) {
		t.Fatalf("records:\n%q\nwant a delete marker then\n%q", got, wantRecs)
	}
	if diff := cmp.Diff(wantRecs, got[1:]); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
}

// versionOf returns the S3 version ID of the version of bucket/key whose
// ETag is etag.
func versionOf(t *testing.T, db *DB, bucket, key, etag string) string {
	t.Helper()
	vs, _, err := db.ListVersions(t.Context(), bucket, VersionListOptions{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		if v.Key == key && v.Version.ETag == etag {
			return v.Version.VersionID
		}
	}
	t.Fatalf("no version of %s/%s with ETag %s in %+v", bucket, key, etag, vs)
	return ""
}

func TestDigestUsage(t *testing.T) { forEachEngine(t, testDigestUsage) }

// testDigestUsage: a usage value written as several records (it means
// their sum) digests as the one record PostgreSQL keeps of a copy of it,
// so that a migration's target is found complete.
func testDigestUsage(t *testing.T, e engine) {
	ctx := t.Context()
	src := openTest(t)
	mustCreateBucket(t, src, "b")
	b := src.kv.newBatch()
	b.set(usageKey(nil, "b"), appendUsage(appendUsage(nil, Usage{Objects: 1, Bytes: 10}), Usage{Objects: 2, Bytes: 5}))
	if err := b.commit(true); err != nil {
		t.Fatal(err)
	}
	b.close()
	dst := e.open(t)
	m := Migration{Source: "test", Phase: MigrationCopying}
	lim := CopyLimits{Keys: 100, Bytes: 1 << 20, BlockBytes: 1 << 20}
	if _, err := dst.CopyFrom(ctx, src, &m, lim, func(context.Context, []Block) error { return nil }); err != nil {
		t.Fatal(err)
	}
	sd, err := src.Digest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dd, err := dst.Digest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := DigestDiff(sd, dd, "the source"); diff != "" {
		t.Errorf("digest of the copy: %s", diff)
	}
}

func TestDigestDiff(t *testing.T) {
	a := []TableDigest{{Table: "b", Keys: 2, SHA256: "x"}, {Table: "o", Keys: 4, SHA256: "y"}}
	for _, tc := range []struct {
		name string
		got  []TableDigest
		want string
	}{
		{name: "equal", got: slices.Clone(a), want: ""},
		{name: "a key more", got: []TableDigest{a[0], {Table: "o", Keys: 5, SHA256: "z"}}, want: "table o: 5 keys, then 4"},
		{name: "a value changed", got: []TableDigest{{Table: "b", Keys: 2, SHA256: "w"}, a[1]}, want: "table b: 2 keys, other pairs than then"},
		{name: "a table more and one gone", got: []TableDigest{a[0], {Table: "p", Keys: 1, SHA256: "v"}}, want: "table o: 0 keys, then 4; table p: 1 keys, then 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := DigestDiff(a, tc.got, "then"); got != tc.want {
				t.Errorf("DigestDiff = %q, want %q", got, tc.want)
			}
		})
	}
}
