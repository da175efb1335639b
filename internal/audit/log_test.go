package audit

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// ignoreDisk leaves Stats.DiskBytes, which depends on SQLite's layout, out
// of comparisons.
var ignoreDisk = cmpopts.IgnoreFields(Stats{}, "DiskBytes")

// t0 is the time test events start from.
var t0 = time.Date(2025, 1, 2, 3, 4, 5, 123456789, time.UTC)

// openTest opens a Log in a fresh directory (unless cfg.Path is set) and
// closes it when the test ends.
func openTest(t *testing.T, cfg Config, h hooks) *Log {
	t.Helper()
	if cfg.Path == "" {
		cfg.Path = filepath.Join(t.TempDir(), "audit", "audit.db")
	}
	l, err := open(cfg, h)
	if err != nil {
		t.Fatalf("open %s: %v", cfg.Path, err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return l
}

// recordAll records events, each of which must be accepted, and flushes.
func recordAll(t *testing.T, l *Log, events ...Event) {
	t.Helper()
	for i, e := range events {
		if !l.Record(e) {
			t.Fatalf("Record of event %d refused: %+v", i, l.Stats())
		}
	}
	if err := l.Flush(t.Context()); err != nil {
		t.Fatalf("Flush: %v", err)
	}
}

// queryAll returns every event f selects, newest first, following Next.
func queryAll(t *testing.T, l *Log, f Filter) []Event {
	t.Helper()
	f.Limit = MaxLimit
	var all []Event
	for {
		p, err := l.Query(t.Context(), f)
		if err != nil {
			t.Fatalf("Query(%+v): %v", f, err)
		}
		all = append(all, p.Events...)
		if p.Next == 0 {
			return all
		}
		f.Before = p.Next
	}
}

// fakeClock is a settable clock, safe for concurrent use.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock(t time.Time) *fakeClock {
	c := &fakeClock{}
	c.ns.Store(t.UnixNano())
	return c
}

func (c *fakeClock) Now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// syncBuffer is a bytes.Buffer for a logger written from the writer
// goroutine and read by the test.
type syncBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// oddKeys are keys that quoting, escaping or encoding could break.
var oddKeys = []string{
	"photos/2024/日本語 ключ 🙂.jpg",
	"100%_done",
	`back\slash\`,
	"line1\nline2\r\nend\t",
	"'; DROP TABLE events; --",
	strings.Repeat("k", 1024),
	"nul\x00byte",
	"invalid\xff\xfeutf8",
}

// TestRoundTrip stores events with odd keys and every field set, more of
// them than one multi-row INSERT holds (insertRows) and not a multiple of
// it, in one batch (nothing is written before the Flush), and reads every
// field back in order.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	l := openTest(t, Config{FlushInterval: time.Hour}, hooks{})
	est := time.FixedZone("EST", -5*3600)
	var want []Event
	for i := range 2*insertRows + 3 {
		key := oddKeys[i%len(oddKeys)]
		want = append(want, Event{
			Time:      t0.Add(time.Duration(i) * time.Hour).In(est),
			Source:    SourceS3,
			Op:        "PutObject",
			Status:    500 + i,
			Code:      "InternalError",
			Bucket:    "bucket-" + key[:1],
			Key:       key,
			Target:    "target " + key,
			User:      "user " + key,
			AccessKey: "AKIA" + key,
			SourceIP:  "2001:db8::1",
			RequestID: fmt.Sprintf("req-%d", i),
			BytesIn:   1<<40 + int64(i),
			BytesOut:  -1, // stored as given
			Duration:  time.Duration(i)*time.Second + 123*time.Nanosecond,
		})
	}
	recordAll(t, l, want...)
	got := queryAll(t, l, Filter{})
	if len(got) != len(want) {
		t.Fatalf("Query returned %d events, want %d", len(got), len(want))
	}
	for i := range want {
		g := got[len(got)-1-i] // newest first
		want[i].ID = int64(i + 1)
		if diff := cmp.Diff(want[i], g); diff != "" {
			t.Errorf("event %d mismatch (-want +got):\n%s", i, diff)
		}
		if g.Time.Location() != time.UTC {
			t.Errorf("event %d: Time in %v, want UTC", i, g.Time.Location())
		}
	}
}

// TestRecordCutsFields: an event of an authenticated principal keeps
// every legitimate value whole (a 1,024-byte key, a Target naming 20
// such keys) but no field grows without bound: a principal chooses its
// request's path, and one segment of 60,000 bytes made a 60 KB event.
func TestRecordCutsFields(t *testing.T) {
	t.Parallel()
	l := openTest(t, Config{FlushInterval: time.Hour}, hooks{})
	key := strings.Repeat("k", 1024)
	target := strings.TrimSpace(strings.Repeat(key+" ", 20))
	huge := strings.Repeat("b", 60_000)
	recordAll(t, l,
		Event{Time: t0, Source: SourceS3, Op: "PutObject", Status: 200, Bucket: "b", Key: key, Target: target, User: "alice"},
		Event{Time: t0, Source: SourceConsole, Op: "PutObject", Status: 400, Bucket: huge, Key: huge, Target: huge + huge, User: huge, RequestID: huge})
	got := queryAll(t, l, Filter{})
	if len(got) != 2 {
		t.Fatalf("%d events, want 2", len(got))
	}
	if e := got[1]; e.Key != key || e.Target != target {
		t.Errorf("legitimate values cut: key %d bytes, target %d bytes", len(e.Key), len(e.Target))
	}
	e := got[0]
	for name, v := range map[string]string{"Bucket": e.Bucket, "Key": e.Key, "User": e.User, "RequestID": e.RequestID} {
		if len(v) > MaxTrustedFieldBytes || !strings.HasSuffix(v, ellipsis) {
			t.Errorf("%s: %d bytes, want at most %d ending in %q", name, len(v), MaxTrustedFieldBytes, ellipsis)
		}
	}
	if len(e.Target) > MaxTrustedTargetBytes || !strings.HasSuffix(e.Target, ellipsis) {
		t.Errorf("Target: %d bytes, want at most %d", len(e.Target), MaxTrustedTargetBytes)
	}
}

func TestRecordZeroTimeUsesClock(t *testing.T) {
	t.Parallel()
	clock := newFakeClock(t0)
	l := openTest(t, Config{Clock: clock.Now}, hooks{})
	recordAll(t, l, Event{Source: SourceAdmin, Op: "admin:CreateUser", ID: 99})
	got := queryAll(t, l, Filter{})
	if len(got) != 1 || !got[0].Time.Equal(t0) || got[0].ID != 1 {
		t.Errorf("got %+v, want one event with ID 1 at %v", got, t0)
	}
}

func TestReopenKeepsEventsAndCloseWritesQueue(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.db")
	// A batch larger than the events and a flush interval longer than
	// the test: nothing is written before Close.
	l, err := Open(Config{Path: path, BatchSize: 10000, FlushInterval: time.Hour, QueueSize: 4000})
	if err != nil {
		t.Fatal(err)
	}
	const n = 3000
	for i := range n {
		if !l.Record(Event{Time: t0.Add(time.Duration(i)), Source: SourceS3, Op: "PutObject", Key: fmt.Sprint(i)}) {
			t.Fatalf("Record %d refused", i)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if st := l.Stats(); st.Written != n || st.Queued != 0 {
		t.Errorf("Stats after Close = %+v, want %d written, none queued", st, n)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	l = openTest(t, Config{Path: path}, hooks{})
	got := queryAll(t, l, Filter{})
	if len(got) != n {
		t.Fatalf("after reopening: %d events, want %d", len(got), n)
	}
	for i, e := range got {
		if want := fmt.Sprint(n - 1 - i); e.Key != want || e.ID != int64(n-i) {
			t.Fatalf("event %d: ID %d key %q, want ID %d key %q", i, e.ID, e.Key, n-i, want)
		}
	}
	// IDs are never reused, even once every event is deleted.
	if _, err := l.Prune(t.Context(), t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	recordAll(t, l, Event{Time: t0, Source: SourceS3, Op: "PutObject"})
	if got := queryAll(t, l, Filter{}); len(got) != 1 || got[0].ID != n+1 {
		t.Errorf("after pruning all and recording one: %+v, want one event with ID %d", got, n+1)
	}
}

func TestFlushIntervalWritesWithoutFlush(t *testing.T) {
	t.Parallel()
	writing := make(chan struct{}, 1)
	l := openTest(t, Config{FlushInterval: time.Millisecond}, hooks{beforeWrite: func() {
		select {
		case writing <- struct{}{}:
		default:
		}
	}})
	if !l.Record(Event{Time: t0, Source: SourceS3, Op: "PutObject"}) {
		t.Fatal("Record refused")
	}
	<-writing // the timer, not Flush, started the write
	if err := l.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st := l.Stats(); st.Written != 1 {
		t.Errorf("Stats = %+v, want 1 written", st)
	}
}

func TestRecordNeverBlocks(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	var logs syncBuffer
	l := openTest(t, Config{QueueSize: 4, BatchSize: 1, Logger: slog.New(slog.NewTextHandler(&logs, nil))},
		hooks{beforeWrite: func() {
			select {
			case entered <- struct{}{}:
			default:
			}
			<-release
		}})
	ev := Event{Time: t0, Source: SourceS3, Op: "PutObject"}
	if !l.Record(ev) {
		t.Fatal("first Record refused")
	}
	<-entered // the writer holds the first event and is stuck writing it

	var accepted, refused int
	for range 10 {
		if l.Record(ev) {
			accepted++
		} else {
			refused++
		}
	}
	if accepted != 4 || refused != 6 {
		t.Errorf("with the writer stuck and a queue of 4: %d accepted, %d refused; want 4, 6", accepted, refused)
	}
	want := Stats{Recorded: 5, Dropped: 6, Queued: 5}
	if diff := cmp.Diff(want, l.Stats(), ignoreDisk); diff != "" {
		t.Errorf("Stats while stuck mismatch (-want +got):\n%s", diff)
	}

	// Flush waits for the writer, and gives up when its context ends.
	ctx, cancel := context.WithCancel(t.Context())
	flushed := make(chan error)
	go func() { flushed <- l.Flush(ctx) }()
	cancel()
	if err := <-flushed; !errors.Is(err, context.Canceled) {
		t.Errorf("Flush with a canceled context = %v, want context.Canceled", err)
	}

	close(release)
	if err := l.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	want = Stats{Recorded: 5, Dropped: 6, Written: 5, Stored: 5}
	if diff := cmp.Diff(want, l.Stats(), ignoreDisk); diff != "" {
		t.Errorf("Stats after Flush mismatch (-want +got):\n%s", diff)
	}
	if got := len(queryAll(t, l, Filter{})); got != 5 {
		t.Errorf("%d events stored, want 5", got)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if out := logs.String(); !strings.Contains(out, `msg="audit events dropped"`) || !strings.Contains(out, "dropped=6") {
		t.Errorf("log does not report 6 dropped events:\n%s", out)
	}
}

// openHeld opens a Log whose writer takes one event and then waits until
// the test ends, so that it neither drains the queue nor allocates.
func openHeld(t *testing.T, queueSize int) *Log {
	t.Helper()
	release := make(chan struct{})
	l := openTest(t, Config{QueueSize: queueSize, BatchSize: 1}, hooks{beforeWrite: func() { <-release }})
	t.Cleanup(func() { close(release) }) // before Close, which needs the writer
	return l
}

// Not parallel: AllocsPerRun counts the allocations of the whole process.
func TestRecordAllocatesNothing(t *testing.T) {
	const runs = 100
	l := openHeld(t, runs+1) // AllocsPerRun calls once more than runs
	ev := Event{Time: t0, Source: SourceS3, Op: "PutObject", Bucket: "b", Key: "k", RequestID: "r"}
	if n := testing.AllocsPerRun(runs, func() { l.Record(ev) }); n != 0 {
		t.Errorf("Record allocates %v times per call, want 0", n)
	}
	if st := l.Stats(); st.Dropped != 0 {
		t.Fatalf("Stats = %+v: the queue filled while Record should have had room", st)
	}
	if n := testing.AllocsPerRun(runs, func() { l.Record(ev) }); n != 0 {
		t.Errorf("Record on a full queue allocates %v times per call, want 0", n)
	}
	if st := l.Stats(); st.Dropped < runs {
		t.Errorf("Stats = %+v: Record had room when the queue should have been full", st)
	}
}

func TestPragmas(t *testing.T) {
	t.Parallel()
	l := openTest(t, Config{}, hooks{})
	ctx := t.Context()
	conn, err := l.db.Conn(ctx) // a connection of the pool, as Query uses
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, tc := range []struct{ pragma, want string }{
		{"journal_mode", "wal"},
		{"synchronous", "1"}, // NORMAL
		{"busy_timeout", fmt.Sprint(busyTimeout.Milliseconds())},
		{"user_version", fmt.Sprint(len(migrations))},
		{"journal_size_limit", fmt.Sprint(maxWAL)},
		{"wal_autocheckpoint", fmt.Sprint(maxWAL / defaultPageSize)},
	} {
		var got string
		if err := conn.QueryRowContext(ctx, "PRAGMA "+tc.pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("PRAGMA %s = %q, want %q", tc.pragma, got, tc.want)
		}
	}
}

func TestClosedLog(t *testing.T) {
	t.Parallel()
	l := openTest(t, Config{}, hooks{})
	recordAll(t, l, Event{Time: t0, Source: SourceS3, Op: "PutObject"})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if l.Record(Event{Time: t0}) {
		t.Error("Record on a closed log accepted")
	}
	if st := l.Stats(); st.Dropped != 1 || st.Recorded != 1 || st.Written != 1 {
		t.Errorf("Stats = %+v, want 1 recorded, written and dropped", st)
	}
	if err := l.Flush(t.Context()); err != nil {
		t.Errorf("Flush on a closed log = %v, want nil", err)
	}
	if _, err := l.Query(t.Context(), Filter{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Query on a closed log = %v, want ErrClosed", err)
	}
	if _, err := l.Export(t.Context(), Filter{}, new(bytes.Buffer)); !errors.Is(err, ErrClosed) {
		t.Errorf("Export on a closed log = %v, want ErrClosed", err)
	}
	if _, err := l.Prune(t.Context(), t0); !errors.Is(err, ErrClosed) {
		t.Errorf("Prune on a closed log = %v, want ErrClosed", err)
	}
}

// dropEvents drops the events table of the SQLite file at path, as another
// program breaking the database under the writer would.
func dropEvents(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("DROP TABLE events"); err != nil {
		t.Fatal(err)
	}
}

func TestWriteError(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	path := filepath.Join(t.TempDir(), "audit.db")
	l := openTest(t, Config{Path: path, Logger: slog.New(slog.NewTextHandler(&logs, nil))}, hooks{})
	recordAll(t, l, Event{Time: t0, Source: SourceS3, Op: "PutObject"})

	dropEvents(t, path) // another program breaks the database under the writer

	l.Record(Event{Time: t0, Source: SourceS3, Op: "PutObject"})
	l.Record(Event{Time: t0, Source: SourceS3, Op: "DeleteObject"})
	if err := l.Flush(t.Context()); err == nil || !strings.Contains(err.Error(), "no such table") {
		t.Errorf("Flush after the table was dropped = %v, want a no such table error", err)
	}
	want := Stats{Recorded: 3, Written: 1, WriteErrors: 2, Stored: 1}
	if diff := cmp.Diff(want, l.Stats(), ignoreDisk); diff != "" {
		t.Errorf("Stats mismatch (-want +got):\n%s", diff)
	}
	if out := logs.String(); !strings.Contains(out, `msg="audit events not written"`) || !strings.Contains(out, "events=2") {
		t.Errorf("log does not report the failed batch:\n%s", out)
	}
}

// TestWriteErrorMultiRow is TestWriteError for a batch of more events
// than one multi-row INSERT holds: the multi-row statement fails first,
// and the whole batch is lost, counted and rolled back like any other.
func TestWriteErrorMultiRow(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.db")
	l := openTest(t, Config{Path: path, FlushInterval: time.Hour}, hooks{})
	recordAll(t, l, Event{Time: t0, Source: SourceS3, Op: "PutObject"})
	dropEvents(t, path)
	const n = 2*insertRows + 1
	for i := range n {
		if !l.Record(Event{Time: t0.Add(time.Duration(i)), Source: SourceS3, Op: "PutObject"}) {
			t.Fatalf("Record of event %d refused: %+v", i, l.Stats())
		}
	}
	if err := l.Flush(t.Context()); err == nil || !strings.Contains(err.Error(), "no such table") {
		t.Errorf("Flush of %d events after the table was dropped = %v, want a no such table error", n, err)
	}
	want := Stats{Recorded: n + 1, Written: 1, WriteErrors: n, Stored: 1}
	if diff := cmp.Diff(want, l.Stats(), ignoreDisk); diff != "" {
		t.Errorf("Stats mismatch (-want +got):\n%s", diff)
	}
}

func TestSchemaVersion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		setup   string // SQL run on the file before Open; "" for none
		garbage bool   // the file is not a database
		wantErr string
		wantIs  error
		want    []Event // the events in the log after Open, IDs and times aside
	}{
		{name: "new file"},
		{name: "version 1", setup: migrations[0] + `;
			INSERT INTO events (time_ns, source, op, status, code, bucket, object_key, target, user_name,
				access_key, source_ip, request_id, bytes_in, bytes_out, duration_ns)
				VALUES (1, 's3', 'PutObject', 200, '', 'b', 'k', '', 'alice', 'AK', '10.0.0.1', 'R', 5, 0, 7);
			PRAGMA user_version = 1`,
			want: []Event{{Source: SourceS3, Op: "PutObject", Status: 200, Bucket: "b", Key: "k", User: "alice",
				AccessKey: "AK", SourceIP: "10.0.0.1", RequestID: "R", BytesIn: 5, Duration: 7}}},
		// Version 2, before untrusted: its rows, a summary of refused
		// requests among them, count as trusted.
		{name: "version 2", setup: migrations[0] + ";" + migrations[1] + `;
			INSERT INTO events (time_ns, source, op, status, code, bucket, object_key, target, user_name,
				access_key, source_ip, request_id, bytes_in, bytes_out, duration_ns, count)
				VALUES (1, 's3', 'GetObject', 403, 'AccessDenied', 'b', '', '… and 3 more', '', '', '10.0.0.9', '', 0, 30, 7, 3),
				(2, 's3', 'PutObject', 200, '', 'b', 'k', '', 'alice', 'AK', '10.0.0.1', 'R', 5, 0, 7, 0);
			PRAGMA user_version = 2`,
			want: []Event{{Source: SourceS3, Op: "PutObject", Status: 200, Bucket: "b", Key: "k", User: "alice",
				AccessKey: "AK", SourceIP: "10.0.0.1", RequestID: "R", BytesIn: 5, Duration: 7},
				{Source: SourceS3, Op: "GetObject", Status: 403, Code: "AccessDenied", Bucket: "b", Target: "… and 3 more",
					SourceIP: "10.0.0.9", BytesOut: 30, Duration: 7, Count: 3}}},
		{name: "newer version", setup: "PRAGMA user_version = 4", wantIs: ErrNewerSchema, wantErr: "schema version 4, this Coffer knows up to 3"},
		{name: "another program's database", setup: "CREATE TABLE accounts (id INTEGER)", wantErr: "is not an audit log"},
		{name: "not a database", garbage: true, wantErr: "not a database"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "audit.db")
			if tc.setup != "" {
				db, err := sql.Open("sqlite", path)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := db.Exec(tc.setup); err != nil {
					t.Fatal(err)
				}
				if err := db.Close(); err != nil {
					t.Fatal(err)
				}
			}
			if tc.garbage {
				if err := os.WriteFile(path, bytes.Repeat([]byte("not sqlite "), 1000), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			l, err := Open(Config{Path: path})
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				got, err := l.Query(t.Context(), Filter{})
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.want, got.Events, cmpopts.IgnoreFields(Event{}, "ID", "Time"), cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("events after Open mismatch (-want +got):\n%s", diff)
				}
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				l.Close()
				t.Fatalf("Open succeeded, want an error containing %q", tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), path) {
				t.Errorf("Open error %q, want it to contain %q and the path", err, tc.wantErr)
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Errorf("Open error %v is not %v", err, tc.wantIs)
			}
		})
	}
}

func TestFileModes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		existing os.FileMode // mode of a file there before Open; 0 for none
	}{
		{name: "new"},
		{name: "existing world-readable", existing: 0o644},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "data", "audit")
			path := filepath.Join(dir, "audit.db")
			if tc.existing != 0 {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, nil, tc.existing); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(path, tc.existing); err != nil { // despite the umask
					t.Fatal(err)
				}
			}
			l := openTest(t, Config{Path: path}, hooks{})
			recordAll(t, l, Event{Time: t0, Source: SourceS3, Op: "PutObject"})
			for _, name := range []string{path, path + "-wal", path + "-shm"} {
				fi, err := os.Stat(name)
				if err != nil {
					t.Fatal(err)
				}
				if got := fi.Mode().Perm(); got != 0o600 {
					t.Errorf("%s has mode %v, want 0600", filepath.Base(name), got)
				}
			}
			if tc.existing == 0 {
				fi, err := os.Stat(dir)
				if err != nil {
					t.Fatal(err)
				}
				if got := fi.Mode().Perm(); got != 0o700 {
					t.Errorf("created directory has mode %v, want 0700", got)
				}
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{name: "path only", cfg: Config{Path: "a.db"}},
		{name: "everything", cfg: Config{Path: "a.db", Retention: time.Hour, QueueSize: 1, BatchSize: 1, FlushInterval: time.Second}},
		{name: "no path", cfg: Config{}, wantErr: "path is required"},
		{name: "negative retention", cfg: Config{Path: "a.db", Retention: -1}, wantErr: "retention"},
		{name: "negative queue", cfg: Config{Path: "a.db", QueueSize: -1}, wantErr: "queue size"},
		{name: "negative batch", cfg: Config{Path: "a.db", BatchSize: -1}, wantErr: "batch size"},
		{name: "negative flush interval", cfg: Config{Path: "a.db", FlushInterval: -1}, wantErr: "flush interval"},
		{name: "smallest caps and limits", cfg: Config{Path: "a.db", MaxBytes: MinMaxBytes, MaxEvents: 1, PerSource: 1, PerMinute: 1}},
		{name: "cap too small", cfg: Config{Path: "a.db", MaxBytes: MinMaxBytes - 1}, wantErr: "max bytes"},
		{name: "negative cap", cfg: Config{Path: "a.db", MaxBytes: -1}, wantErr: "max bytes"},
		{name: "negative max events", cfg: Config{Path: "a.db", MaxEvents: -1}, wantErr: "max events"},
		{name: "negative per source", cfg: Config{Path: "a.db", PerSource: -1}, wantErr: "per source"},
		{name: "negative per minute", cfg: Config{Path: "a.db", PerMinute: -1}, wantErr: "per minute"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.cfg.Validate()
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("Validate() = %v, want error containing %q", err, tc.wantErr)
			}
			if tc.wantErr != "" {
				if _, err := Open(tc.cfg); err == nil {
					t.Errorf("Open accepted an invalid config")
				}
			}
		})
	}
}

func TestConcurrentRecordAndQuery(t *testing.T) {
	t.Parallel()
	l := openTest(t, Config{BatchSize: 64, FlushInterval: time.Millisecond}, hooks{})
	const writers, each = 8, 500
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if !l.Record(Event{Time: t0.Add(time.Duration(i)), Source: SourceS3, Op: "PutObject",
					Bucket: fmt.Sprint("b", w), Key: fmt.Sprint(i)}) {
					t.Errorf("Record refused with an ample queue: %+v", l.Stats())
					return
				}
			}
		})
	}
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for r := range 2 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				p, err := l.Query(t.Context(), Filter{Bucket: fmt.Sprint("b", r), Limit: 50})
				if err != nil {
					t.Errorf("Query: %v", err)
					return
				}
				for i := 1; i < len(p.Events); i++ {
					if p.Events[i].ID >= p.Events[i-1].ID {
						t.Errorf("Query page not newest first: %d after %d", p.Events[i].ID, p.Events[i-1].ID)
						return
					}
				}
				_ = l.Stats()
			}
		})
	}
	wg.Wait()
	if err := l.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	close(stop)
	readers.Wait()
	want := Stats{Recorded: writers * each, Written: writers * each, Stored: writers * each}
	if diff := cmp.Diff(want, l.Stats(), ignoreDisk); diff != "" {
		t.Errorf("Stats mismatch (-want +got):\n%s", diff)
	}
	got := queryAll(t, l, Filter{})
	seen := make(map[int64]bool)
	for _, e := range got {
		seen[e.ID] = true
	}
	if len(got) != writers*each || len(seen) != writers*each {
		t.Errorf("%d events, %d distinct IDs; want %d", len(got), len(seen), writers*each)
	}
}

func TestWriteFailureBackoff(t *testing.T) {
	t.Parallel()
	clock := newFakeClock(t0)
	var failing atomic.Bool
	var tries atomic.Int32
	l := openTest(t, Config{Clock: clock.Now}, hooks{writeErr: func() error {
		tries.Add(1)
		if failing.Load() {
			return errors.New("disk I/O error")
		}
		return nil
	}})
	ev := Event{Time: t0, Source: SourceS3, Op: "PutObject", User: "alice"}
	flush := func(wantErr string) {
		t.Helper()
		if !l.Record(ev) {
			t.Fatal("Record refused")
		}
		err := l.Flush(t.Context())
		if wantErr == "" && err != nil || wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr)) {
			t.Fatalf("Flush = %v, want an error containing %q", err, wantErr)
		}
	}
	failing.Store(true)
	flush("disk I/O error")
	if tries.Load() != 1 {
		t.Fatalf("%d tries, want 1", tries.Load())
	}
	// Within the back-off the writer does not try, and Record still
	// returns at once: events are discarded and counted.
	for range 3 {
		flush("discarded: writes are failing")
	}
	clock.Advance(minBackoff - 1)
	flush("discarded")
	if tries.Load() != 1 {
		t.Errorf("%d tries within the back-off, want 1", tries.Load())
	}
	// After it, one try; it fails again and the back-off doubles.
	clock.Advance(1)
	flush("disk I/O error")
	clock.Advance(2*minBackoff - 1)
	flush("discarded")
	if tries.Load() != 2 {
		t.Errorf("%d tries, want 2", tries.Load())
	}
	// The disk recovers: the next try succeeds and writes resume.
	failing.Store(false)
	clock.Advance(1)
	flush("")
	flush("")
	want := Stats{Recorded: 9, Written: 2, WriteErrors: 7, Stored: 2}
	if diff := cmp.Diff(want, l.Stats(), ignoreDisk); diff != "" {
		t.Errorf("Stats mismatch (-want +got):\n%s", diff)
	}

	// Close makes a last try even within a back-off.
	failing.Store(true)
	flush("disk I/O error")
	failing.Store(false)
	l.Record(ev)
	if err := l.Close(); err != nil {
		t.Errorf("Close = %v, want the queued event written", err)
	}
	if st := l.Stats(); st.Written != 3 {
		t.Errorf("Stats after Close = %+v, want 3 written", st)
	}
}

// TestRoom: while Room refuses (the disk is down to the last of its
// reserve) batches are not written but counted as write errors, with the
// usual back-off; once it has room again, writes resume.
func TestRoom(t *testing.T) {
	t.Parallel()
	clock := newFakeClock(t0)
	var full atomic.Bool
	full.Store(true)
	l := openTest(t, Config{Clock: clock.Now, Room: func() error {
		if full.Load() {
			return errors.New("diskspace: free space below the reserve")
		}
		return nil
	}}, hooks{})
	ev := Event{Time: t0, Source: SourceS3, Op: "PutObject", Status: 507, Code: "StorageFull"}
	for range 3 {
		l.Record(ev)
		if err := l.Flush(t.Context()); err == nil || !strings.Contains(err.Error(), "below the reserve") && !strings.Contains(err.Error(), "discarded") {
			t.Fatalf("Flush with no room = %v", err)
		}
	}
	if st := l.Stats(); st.Written != 0 || st.WriteErrors != 3 || st.Stored != 0 {
		t.Fatalf("Stats with no room = %+v", st)
	}
	full.Store(false)
	clock.Advance(maxBackoff)
	recordAll(t, l, ev)
	if st := l.Stats(); st.Written != 1 || st.Stored != 1 {
		t.Errorf("Stats once there is room = %+v", st)
	}
}

// TestCloseAfterWriteFailure: a write failed shortly before a graceful
// shutdown, within the back-off, and events are still queued. Close
// forgets the back-off: with the disk fine again it writes every queued
// batch, the full ones too (they used to be discarded, and Close returned
// nil); with the disk still failing it discards the batches after the
// first that fails and returns an error saying how many events were lost.
func TestCloseAfterWriteFailure(t *testing.T) {
	t.Parallel()
	const queued, batch = 35, 10
	for _, tc := range []struct {
		name        string
		failAtClose bool
		wantWritten uint64
		wantErrors  uint64
		wantErr     string
	}{
		{name: "disk fine again", wantWritten: queued, wantErrors: 1},
		{name: "disk still failing", failAtClose: true, wantErrors: 1 + queued, wantErr: "35 events not written at close: disk I/O error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clock := newFakeClock(t0) // stays within the back-off
			var tries atomic.Int32
			gate, held := make(chan struct{}), make(chan struct{})
			path := filepath.Join(t.TempDir(), "audit.db")
			l, err := open(Config{Path: path, Clock: clock.Now, BatchSize: batch, FlushInterval: time.Hour}, hooks{
				beforeWrite: func() {
					if tries.Load() == 0 {
						close(held)
						<-gate // hold the writer with its first batch, so that the rest stays queued
					}
				},
				writeErr: func() error {
					if tries.Add(1) == 1 || tc.failAtClose {
						return errors.New("disk I/O error")
					}
					return nil
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			l.Record(Event{Time: t0, Source: SourceS3, Op: "PutObject", Key: "first"})
			flushed := make(chan error, 1)
			go func() { flushed <- l.Flush(context.Background()) }()
			<-held
			for i := range queued {
				if !l.Record(Event{Time: t0, Source: SourceS3, Op: "PutObject", Key: fmt.Sprint("k/", i)}) {
					t.Fatalf("Record %d refused", i)
				}
			}
			closed := make(chan error, 1)
			go func() { closed <- l.Close() }()
			for !l.isClosed() {
				time.Sleep(time.Millisecond)
			}
			close(gate) // the first write fails; Close is under way
			if err := <-flushed; err == nil {
				t.Error("Flush of the failing batch = nil")
			}
			err = <-closed
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("Close = %v, want %q", err, tc.wantErr)
			}
			if st := l.Stats(); st.Written != tc.wantWritten || st.WriteErrors != tc.wantErrors || st.Queued != 0 {
				t.Errorf("Stats after Close = %+v, want %d written, %d write errors", st, tc.wantWritten, tc.wantErrors)
			}
			l2 := openTest(t, Config{Path: path}, hooks{})
			if got := len(queryAll(t, l2, Filter{})); got != int(tc.wantWritten) {
				t.Errorf("%d events stored, want %d", got, tc.wantWritten)
			}
		})
	}
}
