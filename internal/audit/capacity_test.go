package audit

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// capLog opens a log with cfg whose cap checks run only when the
// returned settle function ticks the writer. settle returns once a check
// has found nothing more to evict.
func capLog(t *testing.T, cfg Config) (*Log, func()) {
	t.Helper()
	return capLogOn(t, backends[0], cfg)
}

// capLogOn is capLog on backend b.
func capLogOn(t *testing.T, b backend, cfg Config) (*Log, func()) {
	t.Helper()
	tick := make(chan time.Time)
	done := make(chan struct{}, 1000)
	l := b.open(t, cfg, hooks{tick: tick, capDone: func() {
		select {
		case done <- struct{}{}:
		default:
		}
	}})
	settle := func() {
		t.Helper()
		if err := l.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		// A check that evicts ends with a signal, then the next one
		// finds nothing: two checks in a row with no eviction between
		// them mean the log is within its cap.
		for range 100 {
			for len(done) > 0 {
				<-done
			}
			before := l.Stats().Evicted
			tick <- time.Now()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("the writer did not finish a cap check in 30s")
			}
			if l.Stats().Evicted == before {
				return
			}
		}
		t.Fatal("the cap checks did not settle")
	}
	return l, settle
}

// fileSizes returns the size of the log's file and of its WAL.
func fileSizes(t *testing.T, path string) (db, wal int64) {
	t.Helper()
	for _, f := range []struct {
		name string
		n    *int64
	}{{path, &db}, {path + "-wal", &wal}} {
		fi, err := os.Stat(f.name)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if err == nil {
			*f.n = fi.Size()
		}
	}
	return db, wal
}

// checkNewest checks that the log holds the newest events of n recorded
// with keys "0" to n-1, and nothing else: the oldest went first.
func checkNewest(t *testing.T, l *Log, n int) []Event {
	t.Helper()
	got := queryAll(t, l, Filter{})
	if len(got) == 0 || int64(len(got)) != l.Stats().Stored {
		t.Fatalf("%d events in the log, Stats.Stored %d", len(got), l.Stats().Stored)
	}
	for i, e := range got {
		if want := fmt.Sprint(n - 1 - i); !strings.HasSuffix(e.Key, "/"+want) {
			t.Fatalf("event %d (newest first) has key %.20q…, want one ending in /%s: the oldest must go first", i, e.Key, want)
		}
	}
	return got
}

func TestMaxEvents(t *testing.T) { forEachBackend(t, testMaxEvents) }

func testMaxEvents(t *testing.T, b backend) {
	l, settle := capLogOn(t, b, Config{MaxEvents: 1000})
	const n = 3000
	for i := range n {
		if !l.Record(Event{Time: t0.Add(time.Duration(i)), Source: SourceS3, Op: "PutObject", User: "alice", Key: fmt.Sprint("k/", i)}) {
			t.Fatalf("Record %d refused", i)
		}
		if i%500 == 499 {
			settle()
		}
	}
	settle()
	if got := checkNewest(t, l, n); len(got) != 1000 {
		t.Errorf("%d events kept, want the newest 1000", len(got))
	}
	if st := l.Stats(); st.Evicted != n-1000 || st.Stored != 1000 || st.Written != n {
		t.Errorf("Stats = %+v, want %d evicted, 1000 stored, %d written", st, n-1000, n)
	}

	if l.pg {
		return // a new Log on the table: TestPostgresCluster
	}
	// The count survives reopening: a Log counts the events at Open.
	path := l.path
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2, err := Open(Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if got := l2.Stats().Stored; got != 1000 {
		t.Errorf("reopened log counts %d events, want 1000", got)
	}
}

func TestMaxBytes(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.db")
	const maxBytes = MinMaxBytes
	l, settle := capLog(t, Config{Path: path, MaxBytes: maxBytes})
	// Events of about 1KiB each with their index entries: without the
	// cap, 3,000 of them take about 3MiB. (Longer keys make index
	// entries spill into overflow pages of 4KiB.)
	pad := strings.Repeat("x", 400)
	const n, chunk = 3000, 50
	var peakDB, peakWAL int64
	for i := range n {
		if !l.Record(Event{Time: t0.Add(time.Duration(i)), Source: SourceS3, Op: "PutObject", User: "alice",
			Bucket: "b", Key: pad + "/" + fmt.Sprint(i)}) {
			t.Fatalf("Record %d refused", i)
		}
		if i%chunk == chunk-1 {
			settle()
			db, wal := fileSizes(t, path)
			peakDB, peakWAL = max(peakDB, db), max(peakWAL, wal)
		}
	}
	// Between two checks a chunk of events (about 50KiB) may come on top
	// of the cap. The WAL is cut back to 64KiB at this cap, and holds at
	// most a transaction (a chunk, or an eviction) beyond that.
	if bound := int64(maxBytes + chunk*1024); peakDB > bound {
		t.Errorf("the audit file reached %d bytes, more than %d for a cap of %d", peakDB, bound, maxBytes)
	}
	if bound := int64(4 * minWAL); peakWAL > bound {
		t.Errorf("the WAL reached %d bytes, more than %d for a cap of %d", peakWAL, bound, maxBytes)
	}
	got := checkNewest(t, l, n)
	st := l.Stats()
	// Evicting must not overshoot either: at least half the cap's worth
	// of events stays.
	if st.Evicted == 0 || st.Stored+int64(st.Evicted) != n || len(got) < 450 {
		t.Errorf("Stats = %+v with %d events kept: want the oldest evicted, the rest (at least 450) kept", st, len(got))
	}
	if db, wal := fileSizes(t, path); st.DiskBytes != db+wal {
		t.Errorf("Stats.DiskBytes = %d, the files have %d bytes", st.DiskBytes, db+wal)
	}
	t.Logf("cap %d: file peaked at %d bytes, WAL at %d; %d events kept, %d evicted", maxBytes, peakDB, peakWAL, len(got), st.Evicted)
}

// TestRetentionAndPruneKeepTheCount: deletions by retention and Prune
// keep Stats.Stored right, so that MaxEvents is enforced against the
// real number.
func TestRetentionAndPruneKeepTheCount(t *testing.T) {
	t.Parallel()
	l := openTest(t, Config{}, hooks{})
	for i := range 30 {
		recordAll(t, l, Event{Time: t0.Add(time.Duration(i) * time.Hour), Source: SourceS3, Op: "PutObject", User: "alice"})
	}
	if _, err := l.Prune(t.Context(), t0.Add(10*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if st := l.Stats(); st.Stored != 20 || st.Pruned != 10 {
		t.Errorf("Stats = %+v, want 20 stored after pruning 10", st)
	}
}

func TestWALSize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ maxBytes, want int64 }{
		{0, maxWAL},
		{MinMaxBytes, minWAL},
		{16 << 20, 1 << 20},
		{1 << 30, maxWAL},
	} {
		if got := walSize(tc.maxBytes); got != tc.want {
			t.Errorf("walSize(%d) = %d, want %d", tc.maxBytes, got, tc.want)
		}
	}
}

// stranger is the event of a refused request from the i-th address.
func stranger(i int) Event {
	return Event{Time: t0.Add(time.Duration(i)), Source: SourceS3, Op: "GetObject", Status: 403, Code: "AccessDenied",
		Bucket: "b", Key: fmt.Sprint("u/", i), SourceIP: fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)}
}

// classes returns the keys of the trusted and the untrusted events in
// the log, oldest first.
func classes(t *testing.T, l *Log) (trusted, untrusted []string) {
	t.Helper()
	got := queryAll(t, l, Filter{})
	for i := len(got) - 1; i >= 0; i-- {
		if got[i].Untrusted {
			untrusted = append(untrusted, got[i].Key)
		} else {
			trusted = append(trusted, got[i].Key)
		}
	}
	return trusted, untrusted
}

func TestUntrustedEvictedFirst(t *testing.T) { forEachBackend(t, testUntrustedEvictedFirst) }

// testUntrustedEvictedFirst: strangers' events (RecordBounded) take at
// most a quarter of MaxEvents and go first, so that they never evict the
// history of authenticated principals while there are strangers' events
// to evict. (Eviction took the oldest events whoever wrote them: one
// address cycling through made-up access keys evicted 90 days of
// history in about 10 hours.)
func testUntrustedEvictedFirst(t *testing.T, b backend) {
	l, settle := capLogOn(t, b, Config{MaxEvents: 100, PerSource: 1, PerMinute: 1000})
	for i := range 60 {
		l.Record(Event{Time: t0.Add(time.Duration(i)), Source: SourceS3, Op: "PutObject", User: "alice", Key: fmt.Sprint("t/", i)})
	}
	settle()
	for i := range 200 {
		if !l.RecordBounded(stranger(i)) {
			t.Fatalf("RecordBounded %d refused", i)
		}
		if i%50 == 49 {
			settle()
		}
	}
	settle()
	trusted, untrusted := classes(t, l)
	if len(trusted) != 60 || trusted[0] != "t/0" {
		t.Errorf("after the strangers' events: trusted events %v, want all 60", trusted)
	}
	if len(untrusted) != 25 || untrusted[0] != "u/175" {
		t.Errorf("after the strangers' events: %d untrusted events, want the newest 25 (a quarter of the cap): %v", len(untrusted), untrusted)
	}
	if st := l.Stats(); st.Stored != 85 || st.Untrusted != 25 || st.Evicted != 175 || st.EvictedUntrusted != 175 {
		t.Errorf("Stats = %+v, want 85 stored, 25 untrusted, 175 evicted, all untrusted", st)
	}

	// Trusted events past the cap: the strangers' events go first, then
	// the oldest of the rest.
	for i := 60; i < 120; i++ {
		l.Record(Event{Time: t0.Add(time.Duration(i)), Source: SourceS3, Op: "PutObject", User: "alice", Key: fmt.Sprint("t/", i)})
	}
	settle()
	trusted, untrusted = classes(t, l)
	if len(trusted) != 100 || trusted[0] != "t/20" || len(untrusted) != 0 {
		t.Errorf("past the cap: trusted %v, untrusted %v; want the newest 100 trusted (t/20 on), none untrusted", trusted, untrusted)
	}
	if st := l.Stats(); st.Stored != 100 || st.Untrusted != 0 || st.Evicted != 220 || st.EvictedUntrusted != 200 {
		t.Errorf("Stats = %+v, want 100 stored, 220 evicted of which 200 untrusted", st)
	}
}

// TestUntrustedShareOfBytes: a flood of strangers' events under
// MaxBytes keeps their share to about a quarter of the cap and leaves
// every authenticated event.
func TestUntrustedShareOfBytes(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.db")
	l, settle := capLog(t, Config{Path: path, MaxBytes: MinMaxBytes, PerSource: 1, PerMinute: 100000})
	pad := strings.Repeat("x", 400)
	const trusted = 400 // about 0.4MiB
	for i := range trusted {
		l.Record(Event{Time: t0.Add(time.Duration(i)), Source: SourceS3, Op: "PutObject", User: "alice", Bucket: "b", Key: fmt.Sprint(pad, "/t/", i)})
	}
	settle()
	for i := range 5000 {
		e := stranger(i)
		e.Key = pad // cut to 128 bytes
		l.RecordBounded(e)
		if i%100 == 99 {
			settle()
		}
	}
	settle()
	got, untrusted := classes(t, l)
	st := l.Stats()
	if len(got) != trusted || st.Evicted != st.EvictedUntrusted {
		t.Errorf("%d trusted events left of %d, Stats %+v: strangers' events evicted authenticated ones", len(got), trusted, st)
	}
	used := pagesInUse(t, l)
	if share := int64(len(untrusted)) * used / st.Stored; len(untrusted) == 0 || share > MinMaxBytes/4 {
		t.Errorf("%d untrusted events, about %d bytes: want some, within a quarter of the cap (%d)", len(untrusted), share, MinMaxBytes/4)
	}
	t.Logf("%d trusted and %d untrusted events, %d bytes in use", len(got), len(untrusted), used)
}

// pagesInUse returns the bytes of the SQLite log's pages in use.
func pagesInUse(t *testing.T, l *Log) int64 {
	t.Helper()
	var pageSize, pages, free int64
	for _, q := range []struct {
		pragma string
		v      *int64
	}{{"page_size", &pageSize}, {"page_count", &pages}, {"freelist_count", &free}} {
		if err := l.db.QueryRowContext(t.Context(), "PRAGMA "+q.pragma).Scan(q.v); err != nil {
			t.Fatal(err)
		}
	}
	return (pages - free) * pageSize
}
