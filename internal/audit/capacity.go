package audit

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"math"
	"os"
	"time"
)

// capCheckInterval is the least time between two checks of the cap that
// writes start; the writer's tick checks it every second besides.
const capCheckInterval = 100 * time.Millisecond

// minEvictBatch is the fewest events one evicting statement deletes.
const minEvictBatch = 10

// capState is the writer's state for keeping the log within MaxBytes and
// MaxEvents.
type capState struct {
	lastCapCheck time.Time // when checkCap last ran
	evictLeft    int64     // events still to evict in the eviction under way
	// evictUntrusted is how many of evictLeft are to be untrusted
	// events, evicted first.
	evictUntrusted int64
	evictBatch     int64 // events to evict per statement (see checkCap)
	// On PostgreSQL: the connection that holds the cleanup lock while a
	// retention pass or an eviction runs, else nil (see postgres.go).
	leader *sql.Conn

	evictUnlogged  int64 // evicted since the last log line
	lastEvictLog   time.Time
	lastMeasureErr time.Time // when a failed measurement was last logged
}

// usage is what measure finds.
type usage struct {
	disk int64 // the database file and its WAL, as on disk
	used int64 // the database's pages in use (not on its free list)
	wal  int64 // the WAL file
}

// measure returns the space the log uses.
func (w *writer) measure() (usage, error) {
	ctx := context.Background()
	var pageSize, pages, free int64
	for _, q := range []struct {
		pragma string
		v      *int64
	}{{"page_size", &pageSize}, {"page_count", &pages}, {"freelist_count", &free}} {
		if err := w.l.wconn.QueryRowContext(ctx, "PRAGMA "+q.pragma).Scan(q.v); err != nil {
			return usage{}, err
		}
	}
	u := usage{used: (pages - free) * pageSize}
	for _, name := range []string{w.l.path, w.l.path + "-wal"} {
		fi, err := os.Stat(name)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return usage{}, err
		default:
			u.disk += fi.Size()
			if name != w.l.path {
				u.wal = fi.Size()
			}
		}
	}
	return u, nil
}

// untrustedShare is the part of MaxBytes and MaxEvents that untrusted
// events (Event.Untrusted) may take: 1/untrustedShare, a quarter.
const untrustedShare = 4

// untrustedExcess returns how many of the n untrusted events stored are
// past their share of the caps: of MaxEvents, or of MaxBytes at perEvent
// bytes each (the log's average), evicting to 10% under the share.
func (l *Log) untrustedExcess(n int64, perEvent float64) int64 {
	var e int64
	if m := l.maxEvents; m > 0 && n > m/untrustedShare {
		e = n - m/untrustedShare
	}
	if m := l.maxBytes; m > 0 && perEvent > 0 {
		share := m / untrustedShare
		if b := float64(n) * perEvent; b > float64(share) {
			e = max(e, int64(math.Ceil((b-float64(share-share/10))/perEvent)))
		}
	}
	return min(e, n)
}

// plan sets the eviction of excess events in all, untrusted ones first,
// and besides of the untrusted events past their share; untrusted is how
// many are stored. Trusted events are evicted only for what the
// untrusted ones cannot make up: never while there are untrusted events
// to evict.
func (w *writer) plan(excess, untrustedExcess, untrusted int64) {
	u := min(untrusted, max(excess, untrustedExcess))
	t := max(excess-untrusted, 0)
	w.evictUntrusted = max(w.evictUntrusted, u)
	w.evictLeft = max(w.evictLeft, u+t, w.evictUntrusted)
}

// checkCap measures the log and, if it is over MaxBytes or MaxEvents,
// sets how many of the oldest events to evict: the excess events, or for
// bytes as many as should bring pages in use and WAL 10% under the cap,
// at the average size of an event; the untrusted ones first, and any
// untrusted events past their share of the caps (untrustedShare).
// Deleting leaves pages free for new events to reuse, so the files stop
// growing; they do not shrink.
//
// The WAL counts up to the size it is cut back to after a checkpoint
// (walSize). What it holds beyond that is the last transaction, gone at
// the next checkpoint; an eviction, which writes to the WAL itself,
// cannot shrink it, and counting it would evict ever more.
func (w *writer) checkCap() {
	if w.l.pg {
		w.checkCapPG()
		return
	}
	w.lastCapCheck = time.Now()
	defer w.capSettled()
	u, err := w.measure()
	if err != nil {
		w.measureFailed(err)
		return
	}
	w.l.diskBytes.Store(u.disk)
	stored, untrusted := w.l.stored.Load(), w.l.storedUntrusted.Load()
	var excess int64
	var perEvent float64
	if m := w.l.maxEvents; m > 0 && stored > m {
		excess = stored - m
	}
	if stored > 0 {
		perEvent = max(float64(u.used)/float64(stored), 1)
	}
	if m := w.l.maxBytes; m > 0 && stored > 0 {
		// Each DELETE is a transaction whose pages go to the WAL: keep
		// it to about half the WAL's size, so that evicting does not
		// swell the WAL past the cap.
		w.evictBatch = min(max(int64(float64(walSize(m))/(2*perEvent)), minEvictBatch), pruneBatch)
		if size := u.used + min(u.wal, walSize(m)); size > m {
			target := m - m/10
			n := int64(math.Ceil(float64(size-target) / perEvent))
			excess = max(excess, min(n, stored))
		}
	}
	w.plan(excess, w.l.untrustedExcess(untrusted, perEvent), untrusted)
}

// capSettled calls the capDone hook once nothing is left to evict.
func (w *writer) capSettled() {
	if w.evictLeft == 0 && w.l.hooks.capDone != nil {
		w.l.hooks.capDone()
	}
}

// evictStep deletes at most pruneBatch of the oldest events of the
// eviction under way: untrusted ones while the eviction asks for them,
// then the oldest of the others.
func (w *writer) evictStep() {
	n := min(w.evictLeft, pruneBatch)
	if w.evictBatch > 0 {
		n = min(n, w.evictBatch)
	}
	untrusted := w.evictUntrusted > 0
	if untrusted {
		n = min(n, w.evictUntrusted)
	}
	var k int64
	var err error
	if w.l.pg {
		k, err = w.evictRowsPG(n, untrusted)
	} else {
		st := w.l.wEvictTrusted
		if untrusted {
			st = w.l.wEvictUntrusted
		}
		var res sql.Result
		if res, err = st.ExecContext(context.Background(), n); err == nil {
			k, err = res.RowsAffected()
		}
	}
	w.l.evicted.Add(uint64(k))
	w.l.stored.Add(-k)
	w.evictUnlogged += k
	w.evictLeft -= n
	if untrusted {
		w.l.evictedUntrusted.Add(uint64(k))
		w.l.storedUntrusted.Add(-k)
		w.evictUntrusted -= n
	}
	switch {
	case err != nil:
		w.l.log.Error("audit events not evicted", "path", w.l.path, "err", err)
		w.evictLeft = 0
	case k < n && untrusted:
		// No untrusted event left (retention took some): the rest of
		// the eviction, if any, is of the others; the next check
		// decides afresh.
		w.evictLeft -= w.evictUntrusted
		w.evictUntrusted = 0
	case k < n: // the table is empty
		w.evictLeft = 0
	}
	if w.evictLeft <= 0 {
		w.evictLeft, w.evictUntrusted = 0, 0
		if w.l.pg {
			w.release()
		} else if u, err := w.measure(); err == nil {
			w.l.diskBytes.Store(u.disk)
		}
		w.reportEvictions(false)
		w.capSettled()
	}
}

// reportEvictions logs the events evicted since the last report, at most
// once a dropLogInterval unless final.
func (w *writer) reportEvictions(final bool) {
	if w.evictUnlogged == 0 {
		return
	}
	now := time.Now()
	if !final && !w.lastEvictLog.IsZero() && now.Sub(w.lastEvictLog) < dropLogInterval {
		return
	}
	w.l.log.Warn("audit events evicted: the log is at its size cap", "path", w.l.path,
		"evicted", w.evictUnlogged, "max_bytes", w.l.maxBytes, "max_events", w.l.maxEvents,
		"disk_bytes", w.l.diskBytes.Load(), "events", w.l.stored.Load())
	w.lastEvictLog, w.evictUnlogged = now, 0
}
