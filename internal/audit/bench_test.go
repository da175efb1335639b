package audit

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// benchEvent is a typical S3 event.
var benchEvent = Event{
	Time: t0, Source: SourceS3, Op: "PutObject", Status: 200, Bucket: "photos", Key: "2025/01/02/IMG_0001.jpg",
	User: "alice", AccessKey: "AKIAIOSFODNN7EXAMPLE", SourceIP: "10.1.2.3", RequestID: "18A2B3C4D5E6F708",
	BytesIn: 4 << 20, Duration: 12 * time.Millisecond,
}

// BenchmarkRecord measures Record on the request path with the writer
// running: "room" when the queue has space (the timer stops while the
// writer catches up every half queue), "full" when it has none and
// Record refuses (the writer is held up), "parallel" from every core at
// once, with whatever room the writer leaves (drops/op says how often
// there was none). "bounded" is RecordBounded of a flood from one
// source, nearly all counted rather than queued, "bounded-parallel" the
// same from every core.
func BenchmarkRecord(b *testing.B) {
	open := func(b *testing.B, h hooks) *Log {
		l, err := open(Config{Path: filepath.Join(b.TempDir(), "audit.db")}, h)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { l.Close() })
		return l
	}
	dropRate := func(b *testing.B, l *Log) {
		st := l.Stats()
		b.ReportMetric(float64(st.Dropped)/float64(st.Dropped+st.Recorded), "drops/op")
	}
	b.Run("room", func(b *testing.B) {
		l := open(b, hooks{})
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			if i%(DefaultQueueSize/2) == 0 {
				b.StopTimer()
				if err := l.Flush(b.Context()); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			l.Record(benchEvent)
		}
		b.StopTimer()
		dropRate(b, l)
	})
	b.Run("full", func(b *testing.B) {
		release := make(chan struct{})
		l := open(b, hooks{beforeWrite: func() { <-release }})
		b.Cleanup(func() { close(release) }) // runs before Close
		for l.Record(benchEvent) {
		}
		b.ReportAllocs()
		for b.Loop() {
			l.Record(benchEvent)
		}
		dropRate(b, l)
	})
	b.Run("parallel", func(b *testing.B) {
		l := open(b, hooks{})
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				l.Record(benchEvent)
			}
		})
		b.StopTimer()
		dropRate(b, l)
	})
	denied := benchEvent
	denied.Status, denied.Code, denied.User, denied.AccessKey = 403, "AccessDenied", "", ""
	b.Run("bounded", func(b *testing.B) {
		l := open(b, hooks{})
		b.ReportAllocs()
		for b.Loop() {
			l.RecordBounded(denied)
		}
	})
	b.Run("bounded-parallel", func(b *testing.B) {
		l := open(b, hooks{})
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				l.RecordBounded(denied)
			}
		})
	})
}

// BenchmarkWrite measures how many events a second the writer stores:
// b.N events recorded (waiting for room when the queue is full), then
// Flush. It uses a b.N loop rather than b.Loop because the Flush after
// the loop must be timed.
func BenchmarkWrite(b *testing.B) {
	for _, batch := range []int{64, DefaultBatchSize, 2048} {
		b.Run(fmt.Sprint("batch=", batch), func(b *testing.B) {
			l, err := Open(Config{Path: filepath.Join(b.TempDir(), "audit.db"), BatchSize: batch})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			ctx := b.Context()
			b.ResetTimer()
			for range b.N {
				for !l.Record(benchEvent) {
					if err := l.Flush(ctx); err != nil {
						b.Fatal(err)
					}
				}
			}
			if err := l.Flush(ctx); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if st := l.Stats(); st.Written != uint64(b.N) {
				b.Fatalf("%d events written, want %d", st.Written, b.N)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkQuery measures a page of 100 events from 200,000, with the
// filters an operator uses most.
func BenchmarkQuery(b *testing.B) {
	l, err := Open(Config{Path: filepath.Join(b.TempDir(), "audit.db"), BatchSize: 2048})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	const n = 200_000
	for i := range n {
		e := benchEvent
		e.Time = t0.Add(time.Duration(i) * time.Millisecond)
		e.Bucket = fmt.Sprint("bucket-", i%10)
		e.Key = fmt.Sprintf("dir-%d/obj-%d", i%100, i)
		e.User = fmt.Sprint("user-", i%50)
		if i%20 == 0 {
			e.Op, e.Status = "DeleteObject", 403
		}
		for !l.Record(e) {
			if err := l.Flush(b.Context()); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := l.Flush(b.Context()); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		f    Filter
	}{
		{"newest", Filter{}},
		{"user", Filter{User: "user-7"}},
		{"op", Filter{Op: "DeleteObject"}},
		{"bucket", Filter{Bucket: "bucket-3"}},
		{"bucket+prefix", Filter{Bucket: "bucket-3", KeyPrefix: "dir-13/"}},
		{"object", Filter{Bucket: "bucket-3", KeyPrefix: "dir-13/obj-199913"}},
		{"time range", Filter{Since: t0.Add(50 * time.Second), Until: t0.Add(60 * time.Second)}},
		{"failed", Filter{Failed: true}},
		{"access key (unindexed)", Filter{AccessKey: "AKIAIOSFODNN7EXAMPLE", Before: n / 2}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := l.Query(b.Context(), tc.f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
