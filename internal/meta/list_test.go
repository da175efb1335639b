package meta

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// listKeys holds keys with awkward bytes: 0x01, 0xFF-ish UTF-8, NUL, '/',
// multi-byte delimiters and unicode.
var listKeys = []string{
	"a", "a/", "a/b", "a/b/c", "a/c", "a//d", "a\x01", "a\x01/x", "a\x00z",
	"b", "b::c", "b::d::e", "b:x", "photos/2024/jan.jpg", "photos/2024/feb.jpg",
	"photos/2025/x.jpg", "photos/readme", "\U0010FFFF", "\uFFFD/x", "日本/語/1",
	"日本/語/2", "日本語", "z\xef\xbf\xbf", "z\xef\xbf\xbf/", "zz",
}

// refList is the listing semantics written the obvious way.
func refList(keys []string, opt ListOptions) ([]Entry, bool) {
	sorted := slices.Clone(keys)
	slices.Sort(sorted)
	var out []Entry
	seen := map[string]bool{}
	for _, k := range sorted {
		if !strings.HasPrefix(k, opt.Prefix) {
			continue
		}
		e := Entry{Key: k}
		if opt.Delimiter != "" {
			if i := strings.Index(k[len(opt.Prefix):], opt.Delimiter); i >= 0 {
				e = Entry{Key: k[:len(opt.Prefix)+i+len(opt.Delimiter)], IsPrefix: true}
			}
		}
		if e.Key <= opt.StartAfter || seen[e.Key] {
			continue
		}
		seen[e.Key] = true
		if len(out) == opt.Limit {
			return out, true
		}
		out = append(out, e)
	}
	return out, false
}

func seedList(t testing.TB, db *DB) {
	t.Helper()
	for _, b := range []string{"bk", "bkt", "bkt2"} {
		mustCreateBucket(t, db, b)
	}
	for _, k := range listKeys {
		putObject(t, db, "bkt", k, Object{VersionID: "v", Size: int64(len(k)), ETag: k})
	}
	putObject(t, db, "bk", "t\x00a", Object{}) // sorts right before bkt's keys
	putObject(t, db, "bkt2", "a", Object{})
}

func TestListObjects(t *testing.T) { forEachEngine(t, testListObjects) }

func testListObjects(t *testing.T, e engine) {
	db := e.open(t)
	seedList(t, db)
	for _, tc := range []struct {
		name string
		opt  ListOptions
	}{
		{"all", ListOptions{Limit: 1000}},
		{"limit 0", ListOptions{Limit: 0}},
		{"limit 3", ListOptions{Limit: 3}},
		{"prefix", ListOptions{Prefix: "photos/", Limit: 1000}},
		{"prefix delimiter", ListOptions{Prefix: "photos/", Delimiter: "/", Limit: 1000}},
		{"delimiter", ListOptions{Delimiter: "/", Limit: 1000}},
		{"delimiter limit", ListOptions{Delimiter: "/", Limit: 4}},
		{"multibyte delimiter", ListOptions{Delimiter: "::", Limit: 1000}},
		{"unicode delimiter", ListOptions{Delimiter: "語", Limit: 1000}},
		{"start after key", ListOptions{StartAfter: "a/b", Limit: 1000}},
		{"start after inside prefix", ListOptions{StartAfter: "a/b", Delimiter: "/", Limit: 1000}},
		{"start after common prefix", ListOptions{StartAfter: "photos/", Delimiter: "/", Limit: 1000}},
		{"start after before prefix", ListOptions{Prefix: "b", StartAfter: "a", Limit: 1000}},
		{"start after past all", ListOptions{StartAfter: "\xff", Limit: 1000}},
		{"nul byte prefix", ListOptions{Prefix: "a\x01", Delimiter: "/", Limit: 1000}},
		{"high prefix", ListOptions{Prefix: "z\xef\xbf\xbf", Delimiter: "/", Limit: 1000}},
		{"no match", ListOptions{Prefix: "q", Limit: 1000}},
		{"empty delimiter-only key", ListOptions{Prefix: "a/", Delimiter: "/", Limit: 1000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, gotTrunc, err := db.ListObjects(context.Background(), "bkt", tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			for i := range got {
				if !got[i].IsPrefix {
					if got[i].Object.ETag != got[i].Key {
						t.Errorf("entry %q carries the record of %q", got[i].Key, got[i].Object.ETag)
					}
					got[i].Object = Summary{}
				}
			}
			want, wantTrunc := refList(listKeys, tc.opt)
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" || gotTrunc != wantTrunc {
				t.Errorf("ListObjects(%+v) truncated %v, want %v; mismatch (-want +got):\n%s", tc.opt, gotTrunc, wantTrunc, diff)
			}
		})
	}
}

// TestListObjectsPaging pages through every listing with each page size and
// checks that the pages concatenate to the reference listing.
func TestListObjectsPaging(t *testing.T) { forEachEngine(t, testListObjectsPaging) }

func testListObjectsPaging(t *testing.T, e engine) {
	db := e.open(t)
	seedList(t, db)
	rng := rand.New(rand.NewPCG(1, 2))
	delims := []string{"", "/", "::", "語", "\x01"}
	prefixes := []string{"", "a", "a/", "photos/", "日本", "b:"}
	for range 200 {
		opt := ListOptions{
			Prefix:    prefixes[rng.IntN(len(prefixes))],
			Delimiter: delims[rng.IntN(len(delims))],
			Limit:     1 + rng.IntN(4),
		}
		want, _ := refList(listKeys, ListOptions{Prefix: opt.Prefix, Delimiter: opt.Delimiter, Limit: 1000})
		var got []Entry
		for page := 0; ; page++ {
			if page > len(listKeys) {
				t.Fatalf("%+v: paging does not terminate", opt)
			}
			es, trunc, err := db.ListObjects(context.Background(), "bkt", opt)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range es {
				got = append(got, Entry{Key: e.Key, IsPrefix: e.IsPrefix})
			}
			if !trunc {
				break
			}
			opt.StartAfter = es[len(es)-1].Key
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("paged listing %+v mismatch (-want +got):\n%s", opt, diff)
		}
	}
}

func TestListUploads(t *testing.T) { forEachEngine(t, testListUploads) }

func testListUploads(t *testing.T, e engine) {
	ctx := context.Background()
	db := e.open(t)
	mustCreateBucket(t, db, "bkt")
	id := func(n int) string { return fmt.Sprintf("%032x", n) }
	type up struct {
		key string
		n   int
	}
	for _, u := range []up{{"a/1", 1}, {"a/1", 2}, {"a/2", 3}, {"b", 4}, {"b", 5}, {"c/d/e", 6}} {
		if err := db.CreateUpload(ctx, Upload{Bucket: "bkt", Key: u.key, ID: id(u.n)}); err != nil {
			t.Fatal(err)
		}
	}
	str := func(es []UploadEntry) []string {
		var out []string
		for _, e := range es {
			if e.Upload == nil {
				out = append(out, "P:"+e.Prefix)
			} else {
				out = append(out, e.Upload.Key+"#"+strings.TrimLeft(e.Upload.ID, "0"))
			}
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		opt       UploadListOptions
		want      []string
		truncated bool
	}{
		{"all", UploadListOptions{Limit: 100}, []string{"a/1#1", "a/1#2", "a/2#3", "b#4", "b#5", "c/d/e#6"}, false},
		{"limit", UploadListOptions{Limit: 2}, []string{"a/1#1", "a/1#2"}, true},
		{"key marker", UploadListOptions{KeyMarker: "a/1", Limit: 100}, []string{"a/2#3", "b#4", "b#5", "c/d/e#6"}, false},
		{"id marker", UploadListOptions{KeyMarker: "b", UploadIDMarker: id(4), Limit: 100}, []string{"b#5", "c/d/e#6"}, false},
		{"delimiter", UploadListOptions{Delimiter: "/", Limit: 100}, []string{"P:a/", "b#4", "b#5", "P:c/"}, false},
		{"prefix delimiter", UploadListOptions{Prefix: "c/", Delimiter: "/", Limit: 100}, []string{"P:c/d/"}, false},
		{"marker is prefix", UploadListOptions{Delimiter: "/", KeyMarker: "a/", Limit: 100}, []string{"b#4", "b#5", "P:c/"}, false},
		{"prefix", UploadListOptions{Prefix: "b", Limit: 1}, []string{"b#4"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			es, trunc, err := db.ListUploads(ctx, "bkt", tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, str(es)); diff != "" || trunc != tc.truncated {
				t.Errorf("ListUploads(%+v) truncated %v, want %v; (-want +got):\n%s", tc.opt, trunc, tc.truncated, diff)
			}
		})
	}
}

// TestListACL checks that ListObjectsOwners returns what its owner
// function makes of each entry's ACL ("" for a common prefix), calling it
// once for each run of equal ACLs, and ListVersions the same of each
// version's when asked, and only then.
func TestListACL(t *testing.T) { forEachEngine(t, testListACL) }

func testListACL(t *testing.T, e engine) {
	ctx := context.Background()
	db := e.open(t)
	mustCreateBucket(t, db, "bkt")
	if err := db.SetVersioning(ctx, "bkt", VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	x, y := []byte(`acl x`), []byte(`acl y`)
	for _, w := range []struct {
		key string
		acl []byte
	}{{"a", x}, {"b", x}, {"c", nil}, {"d", y}, {"d", nil}, {"e", x}, {"p/1", x}} {
		putObject(t, db, "bkt", w.key, Object{Size: 1, ETag: w.key, Inline: []byte("1"), ACL: w.acl})
	}
	if _, err := db.DeleteVersions(ctx, "bkt", []VersionRef{{Key: "e"}}, testTime); err != nil {
		t.Fatal(err)
	}
	calls := 0
	owner := func(acl []byte) string { calls++; return "owner of " + string(acl) }
	es, owners, _, err := db.ListObjectsOwners(ctx, "bkt", ListOptions{Delimiter: "/", Limit: 100}, owner)
	if err != nil {
		t.Fatal(err)
	}
	if len(owners) != len(es) {
		t.Fatalf("ListObjectsOwners: %d entries, %d owners", len(es), len(owners))
	}
	got := map[string]string{}
	for i, e := range es {
		got[e.Key] = owners[i]
	}
	want := map[string]string{"a": "owner of acl x", "b": "owner of acl x", "c": "owner of ", "d": "owner of ", "p/": ""}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ListObjectsOwners: mismatch (-want +got):\n%s", diff)
	}
	if calls != 2 { // a (b shares it), c (d shares it)
		t.Errorf("ListObjectsOwners called owner %d times, want once for each run of equal ACLs: 2", calls)
	}

	for _, withOwner := range []bool{false, true} {
		want := map[string]string{"a 0": "acl x", "b 0": "acl x", "c 0": "", "d 0": "", "d 1": "acl y", "e 0 marker": "", "e 1": "acl x", "p/1 0": "acl x"}
		opt := VersionListOptions{Limit: 100}
		if withOwner {
			opt.Owner = func(acl []byte) string { return string(acl) }
		} else {
			for k := range want {
				want[k] = ""
			}
		}
		vs, _, err := db.ListVersions(ctx, "bkt", opt)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		n := map[string]int{}
		for _, e := range vs {
			k := fmt.Sprintf("%s %d", e.Key, n[e.Key])
			n[e.Key]++
			if e.Version.DeleteMarker {
				k += " marker"
			}
			got[k] = e.Version.Owner
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("ListVersions with Owner %t: mismatch (-want +got):\n%s", withOwner, diff)
		}
	}
}
