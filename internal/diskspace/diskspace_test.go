package diskspace

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeFS is a filesystem whose free space the test sets.
type fakeFS struct {
	mu          sync.Mutex
	total, free int64
	calls       int
	err         error // returned by statfs when set
}

func (f *fakeFS) statfs(string) (int64, int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return f.total, f.free, f.err
}

func (f *fakeFS) set(free int64) {
	f.mu.Lock()
	f.free = free
	f.mu.Unlock()
}

// admit reserves n bytes of g and keeps the reservation: data on its
// way, not written yet.
func admit(g *Guard, n int64) error {
	_, err := g.Reserve(n)
	return err
}

func TestAdmit(t *testing.T) {
	const mib = 1 << 20
	fs := &fakeFS{total: 1000 * mib, free: 100 * mib}
	now := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	var logs bytes.Buffer
	g, err := New(Config{Paths: []string{"/data"}, Reserve: 256 * mib, ReservePercent: 3, SampleEvery: time.Second,
		Clock: func() time.Time { return now }, Logger: slog.New(slog.NewTextHandler(&logs, nil)), statfs: fs.statfs})
	if err != nil {
		t.Fatal(err)
	}
	// The reserve is 3 % of 1000 MiB (30 MiB), less than 256 MiB: 70 MiB
	// can be admitted.
	if st := g.Stats(); st.ReserveBytes != 30*mib || st.FreeBytes != 100*mib {
		t.Fatalf("Stats = %+v", st)
	}
	if err := admit(g, 60*mib); err != nil {
		t.Fatal(err)
	}
	// Admitted bytes count before the disk shows them: a burst cannot
	// overshoot the reserve between measurements.
	if err := admit(g, 20*mib); !errors.Is(err, ErrFull) {
		t.Fatalf("Admit past the reserve = %v, want ErrFull", err)
	}
	if !strings.Contains(logs.String(), "free space below the reserve") {
		t.Errorf("no log line when the reserve was reached: %q", logs.String())
	}
	// A refusal measures again at once: deletes freed space.
	fs.set(200 * mib)
	if err := admit(g, 20*mib); err != nil {
		t.Fatalf("Admit after space came back = %v", err)
	}
	if !strings.Contains(logs.String(), "above the reserve again") {
		t.Errorf("no log line when space came back: %q", logs.String())
	}
	// Unknown sizes (0) pass until the reserve is reached.
	fs.set(10 * mib)
	now = now.Add(time.Second)
	if err := admit(g, 0); !errors.Is(err, ErrFull) {
		t.Fatalf("Admit(0) below the reserve = %v, want ErrFull", err)
	}
	if st := g.Stats(); st.Refused != 2 || !st.Full {
		t.Errorf("Stats = %+v, want 2 refusals and full", st)
	}
	fs.set(500 * mib)
	if err := g.Refresh(); err != nil || g.Stats().Full {
		t.Errorf("Refresh with room again: %v, %+v", err, g.Stats())
	}
}

func TestDisabled(t *testing.T) {
	fs := &fakeFS{total: 100, free: 0}
	g, err := New(Config{Paths: []string{"/data"}, Reserve: 0, statfs: fs.statfs})
	if err != nil {
		t.Fatal(err)
	}
	if err := admit(g, 1<<30); err != nil {
		t.Errorf("a disabled guard refused: %v", err)
	}
	var nilGuard *Guard
	if err := admit(nilGuard, 1); err != nil || nilGuard.Stats() != (Stats{}) {
		t.Errorf("a nil guard: %v, %+v", err, nilGuard.Stats())
	}
}

// TestRealFilesystem measures the temporary directory's filesystem.
func TestRealFilesystem(t *testing.T) {
	g, err := New(Config{Paths: []string{t.TempDir(), os.TempDir()}, Reserve: 1})
	if err != nil {
		t.Fatal(err)
	}
	if st := g.Stats(); st.FreeBytes <= 0 || st.ReserveBytes != 1 {
		t.Errorf("Stats on a real filesystem = %+v", st)
	}
	if _, err := New(Config{Paths: []string{"/no/such/dir"}, Reserve: 1}); err == nil {
		t.Error("New on a missing path succeeded")
	}
}

// TestFloor: the share never leaves less than the floor, unless Reserve
// itself is smaller.
func TestFloor(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		reserve, floor, total, want int64
	}{
		{256 * mib, 64 * mib, 100 * mib, 64 * mib},    // 3 % is 3 MiB: the floor
		{256 * mib, 64 * mib, 10000 * mib, 256 * mib}, // 3 % is 300 MiB: the reserve
		{256 * mib, 64 * mib, 4000 * mib, 120 * mib},  // 3 %
		{16 * mib, 64 * mib, 100 * mib, 16 * mib},     // a smaller reserve wins
	} {
		fs := &fakeFS{total: tc.total, free: tc.total}
		g, err := New(Config{Paths: []string{"/d"}, Reserve: tc.reserve, ReservePercent: 3, Floor: tc.floor, statfs: fs.statfs})
		if err != nil {
			t.Fatal(err)
		}
		if got := g.Stats().ReserveBytes; got != tc.want {
			t.Errorf("reserve %d, floor %d, total %d: %d, want %d", tc.reserve>>20, tc.floor>>20, tc.total>>20, got>>20, tc.want>>20)
		}
	}
}

// TestMeasureFails: a filesystem that cannot be measured any more refuses
// writes with its error (not ErrFull: the object service answers 500) and
// never admits blindly.
func TestMeasureFails(t *testing.T) {
	fs := &fakeFS{total: 1 << 30, free: 1 << 30}
	now := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	g, err := New(Config{Paths: []string{"/d"}, Reserve: 1 << 20, SampleEvery: time.Second,
		Clock: func() time.Time { return now }, statfs: fs.statfs})
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("statfs: input/output error")
	fs.mu.Lock()
	fs.err = boom
	fs.mu.Unlock()
	now = now.Add(2 * time.Second) // the last measurement is stale
	if err := admit(g, 1); !errors.Is(err, boom) || errors.Is(err, ErrFull) {
		t.Errorf("Admit with an unmeasurable filesystem = %v, want its error", err)
	}
	if err := g.Refresh(); !errors.Is(err, boom) {
		t.Errorf("Refresh = %v, want %v", err, boom)
	}
}

// TestKeep: writers that may use the reserve (the audit log) stop at half
// of it, without counting a refusal or logging one.
func TestKeep(t *testing.T) {
	const mib = 1 << 20
	fs := &fakeFS{total: 1000 * mib, free: 100 * mib}
	now := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	var logs bytes.Buffer
	g, err := New(Config{Paths: []string{"/data"}, Reserve: 40 * mib, SampleEvery: time.Second,
		Clock: func() time.Time { return now }, Logger: slog.New(slog.NewTextHandler(&logs, nil)), statfs: fs.statfs})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		free int64
		keep bool // Keep refuses
	}{{100 * mib, false}, {30 * mib, false}, {21 * mib, false}, {19 * mib, true}, {0, true}, {50 * mib, false}} {
		fs.set(tc.free)
		now = now.Add(time.Second)
		if err := g.Keep(); errors.Is(err, ErrFull) != tc.keep {
			t.Errorf("Keep with %d MiB free of a 40 MiB reserve = %v, want refusal %v", tc.free/mib, err, tc.keep)
		}
	}
	if st := g.Stats(); st.Refused != 0 || st.Full || logs.Len() != 0 {
		t.Errorf("Keep counted or logged: %+v %q", st, logs.String())
	}
	var nilGuard *Guard
	if nilGuard.Keep() != nil || nilGuard.Watches("/") {
		t.Error("a nil guard keeps something back or watches a path")
	}
}

// TestWatches compares filesystems by device, for paths not yet created too.
func TestWatches(t *testing.T) {
	dir := t.TempDir()
	g, err := New(Config{Paths: []string{dir}, Reserve: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !g.Watches(dir) || !g.Watches(dir+"/not/yet/audit") {
		t.Errorf("Watches(%s) is false", dir)
	}
	if g.Watches("/proc/self") {
		t.Error("Watches(/proc/self) is true")
	}
}

// Space held for reuse is given back when free space runs below twice
// the reserve, before any write is refused for it.
func TestReclaim(t *testing.T) {
	const mib = 1 << 20
	fs := &fakeFS{total: 1000 * mib, free: 100 * mib}
	now := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	var kept int64 = 60 * mib // what the block store holds for reuse
	reclaims := 0
	reclaim := func() int64 {
		reclaims++
		n := kept
		kept = 0
		fs.set(fs.free + n)
		return n
	}
	g, err := New(Config{Paths: []string{"/data"}, Reserve: 256 * mib, ReservePercent: 3, SampleEvery: time.Second,
		Clock: func() time.Time { return now }, Reclaim: reclaim, statfs: fs.statfs})
	if err != nil {
		t.Fatal(err)
	}
	// 100 MiB free, reserve 30 MiB: room enough, nothing reclaimed.
	if err := admit(g, 10*mib); err != nil || reclaims != 0 {
		t.Fatalf("Admit with room = %v, %d reclaims", err, reclaims)
	}
	// 35 MiB free: a 20 MiB write would cross the reserve, but the next
	// measurement finds less than twice the reserve and reclaims first.
	fs.set(35 * mib)
	now = now.Add(time.Second)
	if err := admit(g, 20*mib); err != nil {
		t.Fatalf("Admit with space held for reuse = %v, want it reclaimed and admitted", err)
	}
	if reclaims != 1 || g.Stats().FreeBytes != 95*mib {
		t.Errorf("after reclaiming: %d calls, %+v, want 1 call and 95 MiB free", reclaims, g.Stats())
	}
	// Nothing left to reclaim: measured once, refused.
	fs.set(40 * mib)
	now = now.Add(time.Second)
	calls := fs.calls
	if err := admit(g, 20*mib); !errors.Is(err, ErrFull) {
		t.Fatalf("Admit with nothing to reclaim = %v, want ErrFull", err)
	}
	if reclaims != 2 || fs.calls != calls+1 {
		t.Errorf("%d reclaims, %d measurements, want 2 and 1 more (nothing freed: no second one)", reclaims, fs.calls-calls)
	}
}

// TestReservationsOutliveMeasurements: a write admitted holds its room
// until it is done, across measurements. Four uploads admitted a
// measurement apart each found the whole free space again, and together
// filled the disk.
func TestReservationsOutliveMeasurements(t *testing.T) {
	const mib = 1 << 20
	fs := &fakeFS{total: 1000 * mib, free: 130 * mib}
	now := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	g, err := New(Config{Paths: []string{"/data"}, Reserve: 30 * mib, SampleEvery: time.Second,
		Clock: func() time.Time { return now }, statfs: fs.statfs})
	if err != nil {
		t.Fatal(err)
	}
	// 100 MiB of room: two uploads of 40 MiB are admitted.
	a, err := g.Reserve(40 * mib)
	if err != nil {
		t.Fatal(err)
	}
	b, err := g.Reserve(40 * mib)
	if err != nil {
		t.Fatal(err)
	}
	// Each writes 10 MiB, which the next measurement shows, but for the
	// MiB each may still hold in a buffer.
	for _, r := range []*Reservation{a, b} {
		if err := r.Wrote(10 * mib); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(time.Second)
	fs.set(110 * mib)
	// 110 free less the 60 not written yet, less 2 MiB of buffers, less
	// the reserve: 18 MiB.
	if err := admit(g, 19*mib); !errors.Is(err, ErrFull) {
		t.Fatalf("a third upload past the room the first two hold = %v, want ErrFull", err)
	}
	c, err := g.Reserve(18 * mib)
	if err != nil {
		t.Fatalf("an upload that fits = %v", err)
	}
	// Written bytes count until a measurement shows them.
	if err := a.Wrote(30 * mib); err != nil {
		t.Fatal(err)
	}
	a.Release()
	if err := admit(g, 1); !errors.Is(err, ErrFull) {
		t.Fatalf("admit with a's bytes written but not measured = %v, want ErrFull", err)
	}
	// b fails after its first 10 MiB: what it did not write goes back.
	b.Release()
	now = now.Add(time.Second)
	fs.set(80 * mib) // a's 30 MiB landed; a and b are done, c may hold a buffer
	if err := admit(g, 30*mib); err != nil {
		t.Fatalf("admit of the room b gave back = %v", err)
	}
	// A body of unknown size grows its reservation as it is written,
	// until it would take the reserve.
	c.Release()
	u, err := g.Reserve(0)
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Wrote(15 * mib); err != nil {
		t.Fatalf("unknown size, 15 MiB of 19 MiB of room: %v", err)
	}
	if err := u.Wrote(10 * mib); !errors.Is(err, ErrFull) {
		t.Fatalf("unknown size past the room = %v, want ErrFull", err)
	}
	u.Release()
	var none *Reservation
	if err := none.Wrote(1 << 40); err != nil {
		t.Errorf("a nil Reservation refused: %v", err)
	}
	none.Release()
}
