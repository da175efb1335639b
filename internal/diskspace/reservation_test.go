package diskspace

import (
	"bytes"
	"errors"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func (g *Guard) counts() (promised, written int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.promised, g.written
}

// TestReservationsRandom runs many random Reserve/Wrote/Release
// sequences on several goroutines, with a disk that actually fills as
// bytes are written and a clock that makes the guard re-measure, and
// checks that promised returns to 0, never goes negative, and that the
// disk never falls below the reserve.
func TestReservationsRandom(t *testing.T) {
	const mib = 1 << 20
	fs := &fakeFS{total: 100000 * mib, free: 2000 * mib}
	var clk sync.Mutex
	now := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	g, err := New(Config{Paths: []string{"/d"}, Reserve: 256 * mib, SampleEvery: 250 * time.Millisecond,
		Clock: func() time.Time { clk.Lock(); defer clk.Unlock(); now = now.Add(time.Millisecond); return now }, statfs: fs.statfs})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for range 3000 {
				var n int64
				if rng.IntN(3) > 0 {
					n = rng.Int64N(64 * mib)
				}
				r, err := g.Reserve(n)
				if err != nil {
					continue
				}
				// write up to n (or more, for n == 0), possibly fail early
				target := n
				if n == 0 {
					target = rng.Int64N(40 * mib)
				}
				if rng.IntN(4) == 0 {
					target = rng.Int64N(target + 1)
				}
				var done int64
				for done < target {
					k := min(target-done, 1+rng.Int64N(1*mib))
					if err := r.Wrote(k); err != nil {
						break
					}
					done += k
					// the bytes hit the disk
					fs.mu.Lock()
					fs.free -= k
					free := fs.free
					fs.mu.Unlock()
					if free < 256*mib {
						t.Errorf("disk went below the reserve: %d MiB free", free/mib)
					}
					if p, _ := g.counts(); p < 0 {
						t.Errorf("promised negative: %d", p)
					}
				}
				r.Release()
				// deletes make room again sometimes
				if rng.IntN(5) == 0 {
					fs.mu.Lock()
					fs.free += done
					fs.mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if p, _ := g.counts(); p != 0 {
		t.Fatalf("promised = %d after every reservation was released, want 0", p)
	}
}

// TestWroteAfterRelease: a Reservation used after Release (a reader
// still running when ingest returned) grows again and is never given back.
func TestWroteAfterRelease(t *testing.T) {
	const mib = 1 << 20
	fs := &fakeFS{total: 100000 * mib, free: 2000 * mib}
	g, err := New(Config{Paths: []string{"/d"}, Reserve: 256 * mib, statfs: fs.statfs})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := g.Reserve(10 * mib)
	r.Wrote(5 * mib)
	r.Release()
	_ = r.Wrote(32 << 10) // a late read after ingest returned (its deferred Release already ran)
	if p, _ := g.counts(); p != 0 {
		t.Errorf("promised = %d after Release, want 0 (leaked %d MiB)", p, p/mib)
	}
}

func BenchmarkWroteParallel(b *testing.B) {
	fs := &fakeFS{total: 1 << 50, free: 1 << 49}
	g, _ := New(Config{Paths: []string{"/d"}, Reserve: 1 << 20, statfs: fs.statfs})
	b.RunParallel(func(pb *testing.PB) {
		r, _ := g.Reserve(1 << 40)
		for pb.Next() {
			r.Wrote(32 << 10)
		}
		r.Release()
	})
}

// TestRefreshKeepsRefusal: a readiness probe or metrics scrape (Refresh)
// ends a refusal when the measured room is positive, ignoring the room
// promised to writes in flight, so every probe logs "above the reserve
// again" and the next write logs "below the reserve" again.
func TestRefreshKeepsRefusal(t *testing.T) {
	const mib = 1 << 20
	fs := &fakeFS{total: 100000 * mib, free: 400 * mib}
	var logs bytes.Buffer
	g, _ := New(Config{Paths: []string{"/d"}, Reserve: 256 * mib, statfs: fs.statfs,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	for range 3 { // slow uploads, in flight, holding all the room
		r, err := g.Reserve(48 * mib)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Release()
	}
	for range 3 {
		if _, err := g.Reserve(50 * mib); !errors.Is(err, ErrFull) {
			t.Fatalf("Reserve(50 MiB) = %v, want ErrFull", err)
		}
		if !g.Stats().Full {
			t.Errorf("Stats().Full false right after a refusal")
		}
		g.Refresh() // readiness probe
		if !g.Stats().Full {
			t.Errorf("Refresh cleared Full while a 50 MiB write is still refused")
		}
	}
	if n := strings.Count(logs.String(), "above the reserve again"); n > 0 {
		t.Errorf("%d 'above the reserve again' lines while every write was refused:\n%s", n, logs.String())
	}
}

// TestSmallUnknownSize: a body of unknown size asks for 8 MiB at
// its first byte, so a 1 KiB form upload is refused with room for it.
func TestSmallUnknownSize(t *testing.T) {
	const mib = 1 << 20
	fs := &fakeFS{total: 100000 * mib, free: 256*mib + 4*mib} // 4 MiB above the reserve
	g, _ := New(Config{Paths: []string{"/d"}, Reserve: 256 * mib, statfs: fs.statfs})
	if _, err := g.Reserve(1024); err != nil {
		t.Fatalf("known 1 KiB: %v", err)
	}
	r, err := g.Reserve(0)
	if err != nil {
		t.Fatalf("unknown: %v", err)
	}
	defer r.Release()
	if err := r.Wrote(1024); err != nil {
		t.Errorf("1 KiB of unknown size with 4 MiB of room: %v", err)
	}
}

// TestWrittenCountsUntilOnDisk: Wrote is told before the bytes reach the disk
// (a 1 MiB direct-I/O buffer in fsblob); a measurement in between forgets
// them. N uploads each caught that way overshoot the reserve by N MiB.
func TestWrittenCountsUntilOnDisk(t *testing.T) {
	const mib = 1 << 20
	fs := &fakeFS{total: 100000 * mib, free: 256*mib + 64*mib}
	now := time.Unix(0, 0)
	g, _ := New(Config{Paths: []string{"/d"}, Reserve: 256 * mib, statfs: fs.statfs, Clock: func() time.Time { return now }})
	var rs []*Reservation
	for range 64 {
		r, err := g.Reserve(mib)
		if err != nil {
			t.Fatal(err)
		}
		r.Wrote(mib) // read into the write buffer, not on disk yet
		rs = append(rs, r)
	}
	now = now.Add(time.Second)
	g.Refresh() // a scrape, or another write's measurement, in between
	for _, r := range rs {
		fs.set(fs.free - mib) // the buffers reach the disk
		r.Release()
	}
	// Every admitted write is done; yet more is admitted:
	if _, err := g.Reserve(64 * mib); err == nil {
		t.Errorf("64 MiB admitted again with %d MiB free on a 256 MiB reserve after it (reserve overshot on the next write)", fs.free/mib)
	}
}

// TestPendingCounted: bytes that will reach the disk without a
// Reservation and that statfs does not show yet (the metadata engine's
// memtables) count at each measurement: on a busy machine 48 MiB of
// memtables piled up unseen, and their flush filled a small metadata
// volume the reserve was to protect.
func TestPendingCounted(t *testing.T) {
	const mib = 1 << 20
	fs := &fakeFS{total: 100000 * mib, free: 356 * mib}
	var pending atomic.Int64
	g, err := New(Config{Paths: []string{"/d"}, Reserve: 256 * mib, statfs: fs.statfs, Pending: pending.Load,
		Clock: func() time.Time { return time.Unix(0, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	pending.Store(60 * mib)
	if err := g.Refresh(); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Reserve(41 * mib); !errors.Is(err, ErrFull) {
		t.Errorf("41 MiB with 100 MiB of room and 60 MiB pending = %v, want ErrFull", err)
	}
	if _, err := g.Reserve(40 * mib); err != nil {
		t.Errorf("40 MiB with 100 MiB of room and 60 MiB pending = %v", err)
	}
}

// TestFullCountsAsRefusal: a write that met a full filesystem the
// measurement did not foresee (Full) is a refusal like admission's:
// Stats says full, and readiness's Refresh keeps saying so until what
// that write asked for would fit — not only until some smaller write,
// refused long before, would.
func TestFullCountsAsRefusal(t *testing.T) {
	const mib = 1 << 20
	fs := &fakeFS{total: 100000 * mib, free: 256*mib + 4*mib} // 4 MiB above the reserve
	g, _ := New(Config{Paths: []string{"/d"}, Reserve: 256 * mib, statfs: fs.statfs})
	if _, err := g.Reserve(8 * mib); !errors.Is(err, ErrFull) { // refusedN: 8 MiB
		t.Fatalf("Reserve(8 MiB) = %v, want ErrFull", err)
	}
	fs.set(256*mib + 10*mib) // room for 10 MiB
	g.Refresh()
	if g.Stats().Full {
		t.Fatal("Full after a Refresh with room for the write last refused")
	}
	refused := g.Stats().Refused
	g.Full(3 * mib) // a 3 MiB write met ENOSPC
	if st := g.Stats(); !st.Full || st.Refused != refused+1 {
		t.Errorf("after Full(3 MiB): %+v, want full and one more refusal", st)
	}
	fs.set(256*mib + 2*mib) // room for 2 MiB
	g.Refresh()
	if !g.Stats().Full {
		t.Error("Refresh cleared Full with room for 2 MiB after a 3 MiB write met a full disk")
	}
	fs.set(256*mib + 4*mib)
	g.Refresh()
	if g.Stats().Full {
		t.Error("Full after a Refresh with room for the 3 MiB write")
	}
}
