package meta

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkCommitObject commits small inline object records with Sync on.
// The parallel variant shows Pebble's group commit: concurrent synced
// batches share one WAL fsync.
func BenchmarkCommitObject(b *testing.B) {
	ctx := context.Background()
	rec := Object{VersionID: "0123456789abcdef", Size: 1024, ETag: "0123456789abcdef0123456789abcdef",
		Modified: testTime, Meta: Metadata{ContentType: "application/octet-stream"}, Inline: make([]byte, 1024)}
	b.Run("serial", func(b *testing.B) {
		db := openTest(b)
		mustCreateBucket(b, db, "bkt")
		b.ReportAllocs()
		b.SetBytes(1024)
		i := 0
		for b.Loop() {
			i++
			if err := db.UpdateObject(ctx, "bkt", fmt.Sprint("k", i), testTime, func(*Object) (*Object, error) { return &rec, nil }); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		db := openTest(b)
		mustCreateBucket(b, db, "bkt")
		b.ReportAllocs()
		b.SetBytes(1024)
		b.SetParallelism(16)
		var n atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				k := fmt.Sprint("k", n.Add(1))
				if err := db.UpdateObject(ctx, "bkt", k, testTime, func(*Object) (*Object, error) { return &rec, nil }); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkCommitObjectNoSync is BenchmarkCommitObject with Sync off: the
// CPU cost of a commit, which the fsync hides. Keys ascend, as time-ordered
// keys (logs, backups) do, so a PUT's read of its own absent key skips
// every sstable whose key range ends below it.
func BenchmarkCommitObjectNoSync(b *testing.B) {
	ctx := context.Background()
	rec := Object{VersionID: "0123456789abcdef", Size: 1024, ETag: "0123456789abcdef0123456789abcdef",
		Modified: testTime, Meta: Metadata{ContentType: "application/octet-stream"}, Inline: make([]byte, 1024)}
	put := func(db *DB, k string) error {
		return db.UpdateObject(ctx, "bkt", k, testTime, func(*Object) (*Object, error) { return &rec, nil })
	}
	b.Run("serial", func(b *testing.B) {
		db := openTest(b)
		db.sync = false
		mustCreateBucket(b, db, "bkt")
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			if err := put(db, fmt.Sprint("k", i)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		db := openTest(b)
		db.sync = false
		mustCreateBucket(b, db, "bkt")
		b.ReportAllocs()
		b.SetParallelism(8)
		var n atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := put(db, fmt.Sprint("k", n.Add(1))); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkList100k lists a bucket of 100,000 keys (100 "directories" of
// 1,000 keys) in pages of 1,000: a full walk without a delimiter, and with
// "/" (100 common prefixes, each skipped with one seek). With versions=10
// every key also has 9 noncurrent versions (a million records): listing
// current objects must not be slowed by them, since they live in the
// history table (docs/design/0005-versioning.md); ListVersions walks all
// of them.
//
// engine=postgres runs the same listings on PostgreSQL (versions=1 only:
// loading a million records takes minutes there).
func BenchmarkList100k(b *testing.B) {
	for _, e := range engines {
		b.Run("engine="+e.name, func(b *testing.B) { benchList100k(b, e) })
	}
}

func benchList100k(b *testing.B, e engine) {
	ctx := context.Background()
	for _, versions := range []int{1, 10} {
		if versions > 1 && e.name == EnginePostgres {
			continue
		}
		db := loadList100k(b, e, versions)
		for _, tc := range []struct {
			name  string
			delim string
			want  int
		}{{"delimiter=none", "", 100000}, {"delimiter=slash", "/", 100}} {
			b.Run(fmt.Sprintf("versions=%d/%s", versions, tc.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					n := 0
					opt := ListOptions{Delimiter: tc.delim, Limit: 1000}
					for {
						es, trunc, err := db.ListObjects(ctx, "bkt", opt)
						if err != nil {
							b.Fatal(err)
						}
						n += len(es)
						if !trunc {
							break
						}
						opt.StartAfter = es[len(es)-1].Key
					}
					if n != tc.want {
						b.Fatalf("listed %d entries, want %d", n, tc.want)
					}
				}
			})
		}
		b.Run(fmt.Sprintf("versions=%d/ListVersions", versions), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				n := 0
				opt := VersionListOptions{Limit: 1000}
				for {
					es, trunc, err := db.ListVersions(ctx, "bkt", opt)
					if err != nil {
						b.Fatal(err)
					}
					n += len(es)
					if !trunc {
						break
					}
					last := es[len(es)-1]
					opt.KeyMarker, opt.VersionIDMarker = last.Key, last.Version.VersionID
				}
				if n != 100000*versions {
					b.Fatalf("listed %d versions, want %d", n, 100000*versions)
				}
			}
		})
		db.Close()
	}
}

// loadList100k writes BenchmarkList100k's bucket, each key with the given
// number of versions, and compacts it, so that reads come from sstables as
// they would on a server that has run for a while.
func loadList100k(b *testing.B, e engine, versions int) *DB {
	b.Helper()
	db := e.open(b)
	db.sync = false // loading only
	mustCreateBucket(b, db, "bkt")
	for d := range 100 {
		w := db.newWriter(db.kv.begin(context.Background()), testTime)
		for f := range 1000 {
			key := fmt.Sprintf("dir%03d/file%05d", d, f)
			for v := versions - 1; v >= 1; v-- {
				o := &Object{VersionID: newVersionID(testTime.Add(time.Duration(v) * time.Second)), orderedID: true,
					Versioning: VersioningEnabled, Size: 100, ETag: "e", Modified: testTime}
				w.putHistory("bkt", key, o)
			}
			w.putObject("bkt", key, nil, &Object{VersionID: newVersionID(testTime.Add(time.Duration(versions) * time.Second)), orderedID: true,
				Versioning: VersioningEnabled, Size: 100, ETag: "e", Modified: testTime})
		}
		if err := w.commit(); err != nil {
			b.Fatal(err)
		}
		w.close()
	}
	compactAll(b, db)
	return db
}

// BenchmarkInlineObject measures what HEAD and an overwrite cost against a
// 100 KiB inline object (the size of the mixed benchmark's objects):
// reading the record, and replacing the object, which reads the old record
// first. Sync is off, so that the CPU cost shows rather than the fsync.
func BenchmarkInlineObject(b *testing.B) {
	ctx := context.Background()
	const size = 100 << 10
	rec := func(v string) *Object {
		return &Object{VersionID: v, Size: size, ETag: "0123456789abcdef0123456789abcdef", Modified: testTime,
			Meta: Metadata{ContentType: "application/octet-stream"}, Inline: make([]byte, size)}
	}
	db := openTest(b)
	db.sync = false
	mustCreateBucket(b, db, "bkt")
	if err := db.UpdateObject(ctx, "bkt", "k", testTime, func(*Object) (*Object, error) { return rec("v0"), nil }); err != nil {
		b.Fatal(err)
	}
	b.Run("op=record", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := db.Object(ctx, "bkt", "k"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("op=overwrite", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(size)
		nw := rec("v1")
		for b.Loop() {
			if err := db.UpdateObject(ctx, "bkt", "k", testTime, func(*Object) (*Object, error) { return nw, nil }); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkBucketUsage reads a bucket's usage when its key holds one merged
// value, and when it holds many merge operands not yet compacted (each
// write into the bucket adds one to the memtable; a read sums them).
func BenchmarkBucketUsage(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{1, 10_000, 100_000} {
		b.Run(fmt.Sprint("operands=", n), func(b *testing.B) {
			db := openTest(b)
			db.sync = false
			mustCreateBucket(b, db, "bkt")
			for range n {
				w := db.newWriter(db.kv.begin(context.Background()), testTime)
				w.count("bkt", Usage{Objects: 1, Bytes: 100})
				if err := w.commit(); err != nil {
					b.Fatal(err)
				}
				w.close()
			}
			if n == 1 {
				if err := db.kv.(*pebbleKV).db.Compact(ctx, []byte{0}, []byte{0xff}, false); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				bu, err := db.BucketUsage(ctx, "bkt")
				if err != nil || bu.Usage.Objects != int64(n) {
					b.Fatalf("BucketUsage = %+v, %v", bu, err)
				}
			}
		})
	}
}

// BenchmarkCountUsage is the one-time count Open makes of a database
// written before usage accounting, and what CheckUsage reads: 100,000
// objects in 10 buckets.
func BenchmarkCountUsage(b *testing.B) {
	ctx := context.Background()
	db := openTest(b)
	db.sync = false
	w := db.newWriter(db.kv.begin(context.Background()), testTime)
	for i := range 10 {
		name := fmt.Sprint("bkt", i)
		w.b.set(bucketKey(name), appendBucket(nil, &Bucket{Name: name}))
		for j := range 10_000 {
			w.putObject(name, fmt.Sprintf("dir/file%05d", j), nil, &Object{VersionID: "v", Size: 100, ETag: "e", Modified: testTime})
		}
	}
	if err := w.commit(); err != nil {
		b.Fatal(err)
	}
	w.close()
	b.ReportAllocs()
	for b.Loop() {
		c, err := db.countAll(ctx)
		if err != nil || c.counted["bkt3"].Objects != 10_000 {
			b.Fatalf("countAll = %+v, %v", c, err)
		}
	}
}
