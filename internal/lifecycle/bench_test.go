package lifecycle

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/coffer-s3/coffer/internal/blob/memblob"
	"github.com/coffer-s3/coffer/internal/meta"
	"github.com/coffer-s3/coffer/internal/objects"
)

// benchEnv is a service over meta in a temporary directory with one
// bucket of n objects of 100 bytes under "logs/", written at t0, and a
// worker whose rule expires them after a day.
type benchEnv struct {
	svc   *objects.Service
	w     *Worker
	clock *fakeClock
}

// newBenchEnv writes the objects without fsync (a PUT each, as clients
// write them), then reopens the metadata with fsync as given for the
// measured passes.
func newBenchEnv(b *testing.B, n int, sync, versioned bool) *benchEnv {
	b.Helper()
	ctx := context.Background()
	dir, store := b.TempDir(), memblob.New()
	open := func(sync bool) (*meta.DB, *objects.Service) {
		db, err := meta.Open(meta.Config{Dir: dir, Sync: sync})
		if err != nil {
			b.Fatal(err)
		}
		svc, err := objects.New(objects.Config{GCInterval: -1, Clock: func() time.Time { return t0 }}, db, store, nil)
		if err != nil {
			b.Fatal(err)
		}
		return db, svc
	}
	db, svc := open(false)
	if err := svc.CreateBucket(ctx, "bkt", objects.CreateBucketInput{}); err != nil {
		b.Fatal(err)
	}
	if versioned {
		if err := svc.PutBucketVersioning(ctx, "bkt", "Enabled", ""); err != nil {
			b.Fatal(err)
		}
	}
	c := &Configuration{Rules: []Rule{prefixRule("logs", "logs/", days(1))}}
	if err := NewStore(svc).Put(ctx, "bkt", c); err != nil {
		b.Fatal(err)
	}
	data := bytes.Repeat([]byte("x"), 100)
	for i := range n {
		if _, err := svc.PutObject(ctx, "bkt", fmt.Sprintf("logs/%08d", i), objects.PutInput{Size: int64(len(data))}, bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	db, svc = open(sync)
	b.Cleanup(func() { _ = db.Close() })
	e := &benchEnv{svc: svc, clock: &fakeClock{t: t0}}
	var err error
	if e.w, err = New(Config{Clock: e.clock.Now}, svc, nil, nil); err != nil {
		b.Fatal(err)
	}
	return e
}

// BenchmarkPass measures a lifecycle pass over a bucket of 100,000
// objects: when none is due (the walk alone: the cost a pass has every
// hour on a bucket whose objects live long), and when every one is
// (walk, checks under lock, removals in commits of 100), unversioned and
// versioned (delete markers), without and with fsync. Each iteration of
// the due cases writes the objects again outside the timer.
func BenchmarkPass(b *testing.B) {
	const n = 100000
	for _, sync := range []bool{false, true} {
		b.Run(fmt.Sprintf("objects=%d/due=none/fsync=%v", n, sync), func(b *testing.B) {
			e := newBenchEnv(b, n, sync, false)
			e.clock.Set(t0.Add(time.Hour))
			b.ReportAllocs()
			for b.Loop() {
				res, err := e.w.RunPass(context.Background(), "")
				if err != nil || res.Totals().Examined != n || res.Totals().ObjectsExpired != 0 {
					b.Fatalf("pass: %+v, %v", res.Totals(), err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/object")
		})
		for _, versioned := range []bool{false, true} {
			b.Run(fmt.Sprintf("objects=%d/due=all/versioned=%v/fsync=%v", n, versioned, sync), func(b *testing.B) {
				var total time.Duration
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					e := newBenchEnv(b, n, sync, versioned)
					e.clock.Set(t0.Add(day(3)))
					b.StartTimer()
					start := time.Now()
					res, err := e.w.RunPass(context.Background(), "")
					total += time.Since(start)
					if err != nil || res.Totals().ObjectsExpired != n {
						b.Fatalf("pass: %+v, %v", res.Totals(), err)
					}
				}
				b.ReportMetric(float64(total.Nanoseconds())/float64(b.N)/n, "ns/object")
			})
		}
	}
}
