package meta

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// TestVersionsResumeAfterChange: a version-id-marker is a place among the
// key's versions, not a version that must still exist. Versions deleted
// between two pages (the marker's own, or newer ones, which moves an older
// version into the object table) must not hide the versions older than
// the marker, and IsLatest must say what is latest when the page is read.
func TestVersionsResumeAfterChange(t *testing.T) { forEachEngine(t, testVersionsResumeAfterChange) }

func testVersionsResumeAfterChange(t *testing.T, e engine) {
	ctx := context.Background()
	now := testTime
	put := func(db *DB, key, etag string) string {
		t.Helper()
		now = now.Add(time.Millisecond)
		o := &Object{Size: 3, ETag: etag, Modified: now, Inline: []byte("abc")}
		if err := db.UpdateObject(ctx, "bkt", key, now, func(*Object) (*Object, error) { return o, nil }); err != nil {
			t.Fatal(err)
		}
		return o.S3VersionID()
	}
	marker := func(db *DB, key string) string {
		t.Helper()
		now = now.Add(time.Millisecond)
		d, err := db.DeleteVersions(ctx, "bkt", []VersionRef{{Key: key}}, now)
		if err != nil {
			t.Fatal(err)
		}
		return d[0].VersionID
	}
	del := func(db *DB, key, id string) {
		t.Helper()
		now = now.Add(time.Millisecond)
		if _, err := db.DeleteVersions(ctx, "bkt", []VersionRef{{Key: key, VersionID: id}}, now); err != nil {
			t.Fatal(err)
		}
	}
	page := func(db *DB, key, id string) []string {
		t.Helper()
		es, _, err := db.ListVersions(ctx, "bkt", VersionListOptions{KeyMarker: key, VersionIDMarker: id, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		return versionStrings(es)
	}
	setup := func(t *testing.T, v Versioning) *DB {
		db := e.open(t)
		mustCreateBucket(t, db, "bkt")
		if err := db.SetVersioning(ctx, "bkt", v); err != nil {
			t.Fatal(err)
		}
		return db
	}
	check := func(t *testing.T, got []string, want ...string) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("next page =\n  %q\nwant\n  %q", got, want)
		}
	}

	t.Run("marker deleted", func(t *testing.T) {
		db := setup(t, VersioningEnabled)
		v0 := put(db, "k", "e0")
		v1 := put(db, "k", "e1")
		v2 := put(db, "k", "e2")
		// A page ended on v2; v2 is deleted, v1 becomes current.
		del(db, "k", v2)
		check(t, page(db, "k", v2),
			entryString("k", v1, true, false, "e1"), entryString("k", v0, false, false, "e0"))
		// A page ended on v1 (then current); it and a newer one go.
		del(db, "k", v1)
		check(t, page(db, "k", v1), entryString("k", v0, true, false, "e0"))
	})
	t.Run("newer version written", func(t *testing.T) {
		db := setup(t, VersioningEnabled)
		v0 := put(db, "k", "e0")
		v1 := put(db, "k", "e1")
		put(db, "k", "e2")
		check(t, page(db, "k", v1), entryString("k", v0, false, false, "e0"))
	})
	t.Run("undelete", func(t *testing.T) {
		db := setup(t, VersioningEnabled)
		v0 := put(db, "k", "e0")
		v1 := put(db, "k", "e1")
		m := marker(db, "k")
		del(db, "k", m)
		check(t, page(db, "k", m),
			entryString("k", v1, true, false, "e1"), entryString("k", v0, false, false, "e0"))
	})
	t.Run("latest delete marker below the marker", func(t *testing.T) {
		db := setup(t, VersioningEnabled)
		v0 := put(db, "k", "e0")
		m1 := marker(db, "k")
		m2 := marker(db, "k")
		del(db, "k", m2)
		check(t, page(db, "k", m2),
			entryString("k", m1, true, true, ""), entryString("k", v0, false, false, "e0"))
	})
	t.Run("null marker deleted", func(t *testing.T) {
		db := setup(t, VersioningEnabled)
		v0 := put(db, "k", "e0")
		if err := db.SetVersioning(ctx, "bkt", VersioningSuspended); err != nil {
			t.Fatal(err)
		}
		put(db, "k", "null")
		if err := db.SetVersioning(ctx, "bkt", VersioningEnabled); err != nil {
			t.Fatal(err)
		}
		v1 := put(db, "k", "e1")
		// A page ended on the null version, which went with v1 (a client
		// deleting what it listed): the null version's place is unknown,
		// so the key is listed again from its newest version.
		del(db, "k", NullVersionID)
		del(db, "k", v1)
		check(t, page(db, "k", NullVersionID), entryString("k", v0, true, false, "e0"))
	})
}

// TestVersionsPagingUnderChange pages through a versioned bucket while
// versions are written and deleted between pages: every version that
// exists for the whole paging must be listed.
func TestVersionsPagingUnderChange(t *testing.T) { forEachEngine(t, testVersionsPagingUnderChange) }

func testVersionsPagingUnderChange(t *testing.T, e engine) {
	ctx := context.Background()
	seeds := uint64(24)
	if e.name == EnginePostgres {
		seeds = 6
	}
	db := e.open(t)
	keys := []string{"a", "a\x00", "b", "c/d", "z"}
	now := testTime
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(seed, 0xbeef))
		bucket := fmt.Sprint("bkt", seed)
		mustCreateBucket(t, db, bucket)
		if err := db.SetVersioning(ctx, bucket, VersioningEnabled); err != nil {
			t.Fatal(err)
		}
		// A version is named by key, ID and time: a null version replaced
		// by another is another version under the same ID.
		name := func(e VersionEntry) string {
			return fmt.Sprintf("%s@%s@%d", e.Key, e.Version.VersionID, e.Version.Modified.UnixNano())
		}
		live := map[string]bool{}
		all := func() []VersionEntry {
			es, _, err := db.ListVersions(ctx, bucket, VersionListOptions{Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			return es
		}
		mutate := func() {
			now = now.Add(time.Millisecond)
			key := keys[rng.IntN(len(keys))]
			switch op := rng.IntN(10); {
			case op < 4:
				if rng.IntN(4) == 0 {
					v := []Versioning{VersioningEnabled, VersioningSuspended}[rng.IntN(2)]
					if err := db.SetVersioning(ctx, bucket, v); err != nil {
						t.Fatal(err)
					}
				}
				o := &Object{Size: 1, ETag: "e", Modified: now, Inline: []byte("x")}
				if err := db.UpdateObject(ctx, bucket, key, now, func(*Object) (*Object, error) { return o, nil }); err != nil {
					t.Fatal(err)
				}
			case op < 5:
				if _, err := db.DeleteVersions(ctx, bucket, []VersionRef{{Key: key}}, now); err != nil {
					t.Fatal(err)
				}
			default:
				vs := all()
				if len(vs) == 0 {
					return
				}
				v := vs[rng.IntN(len(vs))]
				if _, err := db.DeleteVersions(ctx, bucket, []VersionRef{{Key: v.Key, VersionID: v.Version.VersionID}}, now); err != nil {
					t.Fatal(err)
				}
			}
		}
		for range 30 {
			mutate()
		}
		for _, v := range all() {
			live[name(v)] = true
		}
		limit := 1 + rng.IntN(3)
		opt := VersionListOptions{Limit: limit}
		listed := map[string]bool{}
		for range 1000 {
			// Between pages: a few writes and deletes. A version that any
			// of them removes need not be listed.
			for range rng.IntN(3) {
				mutate()
				present := map[string]bool{}
				for _, v := range all() {
					present[name(v)] = true
				}
				for v := range live {
					if !present[v] {
						delete(live, v)
					}
				}
			}
			es, more, err := db.ListVersions(ctx, bucket, opt)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range es {
				listed[name(e)] = true
			}
			if !more {
				break
			}
			last := es[len(es)-1]
			opt.KeyMarker, opt.VersionIDMarker = last.Key, last.Version.VersionID
		}
		for v := range live {
			if !listed[v] {
				t.Errorf("seed %d, pages of %d: version %q existed throughout and was never listed", seed, limit, v)
			}
		}
	}
}
