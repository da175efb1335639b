// Package diskspace keeps a free-space reserve on the filesystems that
// hold a store's data: new data is refused before the disk is full, so
// that deletes, metadata commits, the audit log and the metadata engine's
// compactions always have room, and a store that filled up can be rescued
// by deleting objects.
//
// A Guard measures free space with statfs(2) (at most every SampleEvery,
// and at once after a refusal). Each write admitted holds a Reservation
// until it is done: the bytes it has not written yet (up to MaxHeld of
// them; it asks for more as it goes) count against the free space
// whatever a measurement says, and the bytes it wrote count until the
// next measurement shows them — but for the last MaxBuffered of each
// write in flight, which count until it is done (a writer reports bytes
// as it reads them, and may hold that many in a buffer before they reach
// the disk). So writes in flight, however many and however slow, cannot
// together take the free space below the reserve (a measurement once
// forgot every write admitted before it, and four uploads admitted
// 250 ms apart filled the disk).
package diskspace

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// ErrFull is returned by Admit when the data would take free space below
// the reserve.
var ErrFull = errors.New("diskspace: free space below the reserve")

// Defaults.
const (
	// DefaultReserve is the largest reserve: 256 MiB ...
	DefaultReserve = 256 << 20
	// DefaultReservePercent ... or this share of the filesystem, whichever
	// is smaller, so that a small volume is not mostly reserve.
	DefaultReservePercent = 3
	// DefaultSampleEvery bounds how stale a measurement may be.
	DefaultSampleEvery = 250 * time.Millisecond
)

// Config configures a Guard.
type Config struct {
	// Paths are directories on the filesystems to watch (one per
	// filesystem is enough; the same filesystem twice is harmless). The
	// reserve applies to each.
	Paths []string
	// Reserve is the most free space, in bytes, kept back on each
	// filesystem; 0 disables the guard.
	Reserve int64
	// ReservePercent caps the reserve at this share of each filesystem's
	// size (0 for no cap), but never below Floor.
	ReservePercent float64
	// Floor is the least reserve the share may leave: what the metadata
	// engine needs to flush and compact (meta.MinFreeSpace). Reserve, if
	// smaller, still wins.
	Floor int64
	// SampleEvery is how often free space is measured at most (default
	// DefaultSampleEvery).
	SampleEvery time.Duration
	// Clock returns the time (default time.Now).
	Clock func() time.Time
	// Reclaim, if set, gives back space held for reuse (the block store's
	// freed files, fsblob.Store.Reclaim) and returns the bytes it freed.
	// The Guard calls it whenever a measurement finds less than twice the
	// reserve free, and measures again if it freed anything, so that space
	// kept for reuse never makes a write fail or keeps a full disk full
	// after deletes.
	Reclaim func() int64
	// Pending, if set, returns bytes that will reach the watched
	// filesystems without passing through a Reservation and that statfs
	// does not show yet (the metadata engine's unflushed memtables): each
	// measurement counts them as used.
	Pending func() int64
	// Logger is told when the reserve is reached and when space comes
	// back. Nil discards.
	Logger *slog.Logger
	// statfs reads a filesystem's total and free bytes; tests replace it.
	statfs func(path string) (total, free int64, err error)
}

// Guard admits new data against the reserve. It is safe for concurrent
// use. A nil *Guard admits everything.
type Guard struct {
	cfg Config

	mu       sync.Mutex // guards the fields below
	sampled  time.Time  // when free was measured
	free     int64      // least free space less reserve over the paths, when measured
	promised int64      // bytes reserved and not written yet, over every Reservation
	written  int64      // bytes written since free was measured (and the buffers of writes in flight)
	active   int64      // Reservations not released
	full     bool       // the last decision was a refusal
	refusedN int64      // what the last refusal was asked for

	freeBytes atomic.Int64 // least free space over the paths, for metrics
	reserve   atomic.Int64 // reserve of the filesystem with the least room
	refused   atomic.Int64 // writes refused
}

// New returns a Guard for cfg, after measuring once (an unreadable path is
// an error).
func New(cfg Config) (*Guard, error) {
	if cfg.Reserve < 0 || cfg.ReservePercent < 0 || cfg.ReservePercent > 100 {
		return nil, fmt.Errorf("diskspace: reserve %d bytes / %v%% out of range", cfg.Reserve, cfg.ReservePercent)
	}
	if cfg.SampleEvery <= 0 {
		cfg.SampleEvery = DefaultSampleEvery
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.statfs == nil {
		cfg.statfs = statfs
	}
	g := &Guard{cfg: cfg}
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.sample(); err != nil {
		return nil, err
	}
	return g, nil
}

// statfs returns the size of the filesystem holding path and the bytes an
// unprivileged writer may still use.
func statfs(path string) (total, free int64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, 0, fmt.Errorf("diskspace: statfs %s: %w", path, err)
	}
	return int64(st.Blocks) * int64(st.Bsize), int64(st.Bavail) * int64(st.Bsize), nil
}

// sample measures every path, and with Config.Reclaim, when free space is
// below twice the reserve, has space held for reuse given back and
// measures again. g.mu is held.
func (g *Guard) sample() error {
	if err := g.measure(); err != nil {
		return err
	}
	if g.cfg.Reclaim != nil && g.free < g.reserve.Load() && g.cfg.Reclaim() > 0 {
		return g.measure()
	}
	return nil
}

// measure measures every path. g.mu is held.
func (g *Guard) measure() error {
	room, least, reserve := int64(-1), int64(-1), int64(0)
	for _, p := range g.cfg.Paths {
		total, free, err := g.cfg.statfs(p)
		if err != nil {
			return err
		}
		r := g.cfg.Reserve
		if g.cfg.ReservePercent > 0 {
			r = min(r, max(int64(float64(total)*g.cfg.ReservePercent/100), g.cfg.Floor))
		}
		if room < 0 || free-r < room {
			room, reserve = free-r, r
		}
		if least < 0 || free < least {
			least = free
		}
	}
	if g.cfg.Pending != nil {
		room -= max(g.cfg.Pending(), 0)
	}
	// The bytes written are in this measurement, but for what writes in
	// flight may still hold in their buffers.
	g.free, g.written, g.sampled = room, min(g.written, g.active*MaxBuffered), g.cfg.Clock()
	g.freeBytes.Store(least)
	g.reserve.Store(reserve)
	return nil
}

// A Reservation is the room a Guard admitted for one write of new data.
// The writer reports what it writes (Wrote) and releases the rest when
// the write is done or failed (Release). A nil *Reservation (from a nil
// or disabled Guard) admits everything.
type Reservation struct {
	g    *Guard
	left int64 // reserved and not written yet
	done bool  // released: Wrote does nothing more
}

// growBy is how much more a Reservation asks for at a time once its
// write runs past what it holds (a body of unknown size, or one larger
// than MaxHeld).
const growBy = 8 << 20

// MaxHeld is the most a Reservation holds ahead of its writes. A write
// declaring more is admitted only if all of it fits now, but holds
// MaxHeld and asks for the rest as it goes (and may then be refused
// part-way): a client that declares 5 GiB and sends a byte now and then
// must not keep the room of 5 GiB from every other writer.
const MaxHeld = 64 << 20

// MaxBuffered is the most a write may have reported (Wrote) and not yet
// handed to the filesystem: the block store's largest write buffer
// (fsblob fills 1 MiB for a direct write).
const MaxBuffered = 1 << 20

// Reserve admits n bytes of new data (0 when the size is not known: the
// Reservation then grows as the data is written, refused once that
// would take free space below the reserve). It returns ErrFull, wrapped
// with the numbers, when they would take free space below the reserve,
// and another error if free space cannot be measured. Refusals are
// counted; the first refusal after a success is logged, and so is the
// first success after refusals.
func (g *Guard) Reserve(n int64) (*Reservation, error) {
	if g == nil || g.cfg.Reserve == 0 {
		return nil, nil
	}
	n = max(n, 0)
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.admitLocked(n); err != nil {
		return nil, err
	}
	held := min(n, MaxHeld)
	g.promised += held
	g.active++
	return &Reservation{g: g, left: held}, nil
}

// admitLocked measures if the last measurement is stale (or refused) and
// returns ErrFull unless n more bytes leave the reserve free. g.mu is
// held.
func (g *Guard) admitLocked(n int64) error {
	now := g.cfg.Clock()
	if g.full || now.Sub(g.sampled) >= g.cfg.SampleEvery {
		if err := g.sample(); err != nil {
			return err
		}
	}
	if g.roomLocked()-n < 0 {
		g.refuseLocked(n, "free space below the reserve: new data is refused until objects are deleted")
		return fmt.Errorf("%w: %d bytes free, %d reserved, %d asked", ErrFull, g.freeBytes.Load(), g.reserve.Load(), n)
	}
	g.recovered()
	return nil
}

// roomLocked returns the room left above the reserve. g.mu is held.
func (g *Guard) roomLocked() int64 { return g.free - g.promised - g.written }

// Wrote records that k more bytes of the write are written: they count
// as used until a measurement shows them (see the package doc). Past
// what it holds (a body of unknown size, or one larger than MaxHeld) the
// Reservation grows, growBy at a time (or by what it needs, when that is
// all the room left), and Wrote returns ErrFull, as Reserve does, when
// it cannot. After Release it does nothing.
func (r *Reservation) Wrote(k int64) error {
	if r == nil || k <= 0 {
		return nil
	}
	g := r.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if r.done {
		return nil
	}
	if k > r.left {
		need := k - r.left
		more := max(need, growBy)
		if more > need && g.roomLocked() < more {
			more = need
		}
		if err := g.admitLocked(more); err != nil {
			return err
		}
		g.promised += more
		r.left += more
	}
	r.left -= k
	g.promised -= k
	g.written += k
	return nil
}

// Release gives back what the write reserved and did not write. The
// Reservation must not be used after.
func (r *Reservation) Release() {
	if r == nil {
		return
	}
	g := r.g
	g.mu.Lock()
	if !r.done {
		g.promised -= r.left
		g.active--
	}
	r.left, r.done = 0, true
	g.mu.Unlock()
}

// Full records that a write of n bytes met a full filesystem (ENOSPC)
// that the last measurement did not foresee (another process wrote, or
// the metadata engine took more than the reserve while compacting): it
// counts as refused, as admission would have refused it, so Stats says
// full (readiness reports it) until what it asked for would fit, and the
// next write measures again and is refused unless there is room.
func (g *Guard) Full(n int64) {
	if g == nil || g.cfg.Reserve == 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.sampled = time.Time{}
	g.refuseLocked(max(n, 1), "a write met a full filesystem: new data is refused until objects are deleted")
}

// refuseLocked counts a refusal of n bytes: the Guard is full until that
// much would fit (Refresh), and the first refusal after a success logs
// msg. g.mu is held.
func (g *Guard) refuseLocked(n int64, msg string) {
	g.refused.Add(1)
	g.refusedN = n
	if !g.full {
		g.full = true
		g.cfg.Logger.Warn(msg, "free_bytes", g.freeBytes.Load(), "reserve_bytes", g.reserve.Load(), "paths", g.cfg.Paths)
	}
}

// Keep reports, as an error wrapping ErrFull, that free space on a
// watched filesystem is below half its reserve. Writers that may use the
// reserve but must not take its last bytes from the metadata engine (the
// audit log, when it shares the filesystem) ask it before they write; data
// writes ask Admit. It measures as Admit does and refuses nothing itself:
// nothing is counted or logged. A nil Guard, or one that is off, keeps
// nothing back.
func (g *Guard) Keep() error {
	if g == nil || g.cfg.Reserve == 0 {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if now := g.cfg.Clock(); g.full || now.Sub(g.sampled) >= g.cfg.SampleEvery {
		if err := g.sample(); err != nil {
			return err
		}
	}
	reserve := g.reserve.Load()
	if g.roomLocked()+reserve/2 < 0 {
		return fmt.Errorf("%w: %d bytes free, half the reserve of %d kept for the metadata engine", ErrFull, g.freeBytes.Load(), reserve)
	}
	return nil
}

// Watches reports whether path, or the nearest of its parents that
// exists, is on one of the filesystems g watches.
func (g *Guard) Watches(path string) bool {
	if g == nil {
		return false
	}
	var st unix.Stat_t
	for unix.Stat(path, &st) != nil {
		parent := filepath.Dir(path)
		if parent == path {
			return false
		}
		path = parent
	}
	for _, p := range g.cfg.Paths {
		var pst unix.Stat_t
		if unix.Stat(p, &pst) == nil && pst.Dev == st.Dev {
			return true
		}
	}
	return false
}

// recovered ends a refusal, with its log line. g.mu is held.
func (g *Guard) recovered() {
	if g.full {
		g.full = false
		g.cfg.Logger.Info("free space above the reserve again: new data is accepted",
			"free_bytes", g.freeBytes.Load(), "reserve_bytes", g.reserve.Load())
	}
}

// Stats are what a Guard measured and decided.
type Stats struct {
	FreeBytes    int64 // least free space over the paths, at the last measurement
	ReserveBytes int64 // the reserve of that filesystem
	Refused      int64 // writes refused so far
	Full         bool  // the last write was refused
}

// Stats returns the Guard's figures; a nil Guard has none.
func (g *Guard) Stats() Stats {
	if g == nil {
		return Stats{}
	}
	g.mu.Lock()
	full := g.full
	g.mu.Unlock()
	return Stats{FreeBytes: g.freeBytes.Load(), ReserveBytes: g.reserve.Load(), Refused: g.refused.Load(), Full: full}
}

// Refresh measures free space now (for a readiness check or metrics
// scrape that wants a fresh figure).
func (g *Guard) Refresh() error {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.sample(); err != nil {
		return err
	}
	if g.roomLocked() >= max(g.refusedN, 1) {
		// A refusal is sticky only until what it refused would fit,
		// writes in flight counted.
		g.recovered()
	}
	return nil
}
