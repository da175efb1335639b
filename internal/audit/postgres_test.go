package audit

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"
)

// TestPostgresCluster runs two Logs on one PostgreSQL schema, as two
// nodes: a query through either shows the events of both, and the cap
// one node keeps is the cluster's.
func TestPostgresCluster(t *testing.T) {
	t.Parallel()
	url := testPG.Get(t).NewSchema(t)
	tick := make(chan time.Time)
	done := make(chan struct{}, 100)
	var nodes []*Log
	for i := range 2 {
		cfg := Config{Postgres: pgHandle(t, url)}
		var h hooks
		if i == 0 {
			cfg.MaxEvents = 50
			h = hooks{tick: tick, capDone: func() {
				select {
				case done <- struct{}{}:
				default:
				}
			}}
		} else {
			h = hooks{tick: make(chan time.Time)} // no cap checks of its own
		}
		l, err := open(cfg, h)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := l.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
		nodes = append(nodes, l)
	}
	// Interleaved, each node's events flushed before the other's next.
	for i := range 40 {
		n := nodes[i%2]
		recordAll(t, n, Event{Time: at(i), Source: SourceS3, Op: "PutObject", Bucket: fmt.Sprint("node", i%2), Key: fmt.Sprint("k/", i)})
	}
	for i, l := range nodes {
		got := queryAll(t, l, Filter{})
		if len(got) != 40 {
			t.Fatalf("node %d sees %d events, want 40", i, len(got))
		}
		checkKeys(t, got, 40)
		if got := queryAll(t, l, Filter{Bucket: "node1"}); len(got) != 20 {
			t.Errorf("node %d sees %d events of node 1, want 20", i, len(got))
		}
	}

	// 40 more, through B: A's cap (50) is over the table, B's events too.
	for i := 40; i < 80; i++ {
		if !nodes[1].Record(Event{Time: at(i), Source: SourceS3, Op: "PutObject", Bucket: "node1", Key: fmt.Sprint("k/", i)}) {
			t.Fatal("Record refused")
		}
	}
	if err := nodes[1].Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	// A's writes checked the cap too (at most every 100 ms): forget
	// those checks' signals, and wait for the one of this tick's.
	for len(done) > 0 {
		<-done
	}
	tick <- time.Now()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("no cap check in 30s")
	}
	got := queryAll(t, nodes[1], Filter{})
	checkKeys(t, got, 80)
	if len(got) != 50 {
		t.Errorf("%d events left, want the newest 50", len(got))
	}
	if st := nodes[0].Stats(); st.Evicted != 30 || st.Stored != 50 {
		t.Errorf("node A's Stats = %+v, want 30 evicted, 50 stored", st)
	}

	// Retention through B deletes A's old events too.
	n, err := nodes[1].Prune(t.Context(), at(70))
	if err != nil || n != 40 {
		t.Errorf("Prune = %d, %v; want 40 (events 30 to 69)", n, err)
	}
	if got := len(queryAll(t, nodes[0], Filter{})); got != 10 {
		t.Errorf("node A sees %d events after B's prune, want 10", got)
	}
}

// checkKeys checks that got, newest first, are the newest events of n
// recorded with keys "k/0" to "k/<n-1>".
func checkKeys(t *testing.T, got []Event, n int) {
	t.Helper()
	for i, e := range got {
		if want := fmt.Sprint("k/", n-1-i); e.Key != want {
			t.Fatalf("event %d (newest first) has key %q, want %q", i, e.Key, want)
		}
	}
}

// TestPostgresOutage cuts the connection to PostgreSQL under a Log: Record
// goes on without waiting, the events of a short outage are held and
// written when PostgreSQL returns, and once the queue is full further
// events are dropped and counted, never buffered without bound.
func TestPostgresOutage(t *testing.T) {
	t.Parallel()
	pg := testPG.Get(t)
	proxy, url := pg.Proxy(t, pg.NewSchema(t))
	const queue = 100
	l, err := Open(Config{Postgres: pgHandle(t, url), QueueSize: queue, BatchSize: 10, FlushInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() }) // fails if the last events cannot be written
	recordAll(t, l, Event{Time: at(0), Source: SourceS3, Op: "PutObject", Key: "before"})

	proxy.Down()
	var slowest time.Duration
	accepted, dropped := 0, 0
	for i := range 3 * queue {
		start := time.Now()
		ok := l.Record(Event{Time: at(1 + i), Source: SourceS3, Op: "PutObject", Key: fmt.Sprint("during/", i)})
		slowest = max(slowest, time.Since(start))
		if ok {
			accepted++
		} else {
			dropped++
		}
		if i == 5 {
			time.Sleep(100 * time.Millisecond) // let the writer find the outage
		}
	}
	if slowest > 50*time.Millisecond {
		t.Errorf("the slowest Record took %v during the outage", slowest)
	}
	st := l.Stats()
	if dropped == 0 || st.Dropped != uint64(dropped) {
		t.Errorf("%d Records refused, Stats.Dropped %d; want some, equal", dropped, st.Dropped)
	}
	if accepted > queue+10 { // the queue and one held batch
		t.Errorf("%d events accepted during the outage, more than the queue (%d) and a batch hold", accepted, queue)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	err = l.Flush(ctx)
	cancel()
	if err == nil || !strings.Contains(err.Error(), "held") {
		t.Errorf("Flush during the outage = %v, want an error at once saying events are held", err)
	}
	if st.WriteErrors != 0 {
		t.Errorf("Stats.WriteErrors = %d during the outage, want 0: events are held, not lost", st.WriteErrors)
	}

	if err := proxy.Up(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		st = l.Stats()
		if st.Queued == 0 && st.Written == uint64(1+accepted) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("60s after PostgreSQL came back: %+v, want %d written", st, 1+accepted)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := queryAll(t, l, Filter{}); len(got) != 1+accepted || st.WriteErrors != 0 {
		t.Errorf("after the outage: %d events stored, %d write errors; want %d, 0", len(got), st.WriteErrors, 1+accepted)
	}
}

func TestPGText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"plain", "plain"},
		{"é/ü", "é/ü"},
		{"\xff\xfez", "\uFFFDz"},
		{"a\x00b", "a\u2400b"},
		{"", ""},
	} {
		if got := pgText(tc.in); got != tc.want {
			t.Errorf("pgText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestPrefixEndText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p, want string
		ok      bool
	}{
		{"a", "b", true},
		{"ab", "ac", true},
		{"é", "ê", true},
		{"a\u007f", "a\u0080", true},           // one byte to two
		{"a\uffff", "a\U00010000", true},       // three to four
		{"a\ud7ff", "a\ue000", true},           // past the surrogates
		{"a\U0010FFFF", "b", true},             // the greatest rune is cut
		{"\U0010FFFF\U0010FFFF", "", false},    // none
		{"2024/\uFFFD", "2024/\uFFFE", true},   // a replaced byte
		{"x\U0010FFFFy", "x\U0010FFFFz", true}, // only the last rune moves
	} {
		got, ok := prefixEndText(tc.p)
		if got != tc.want || ok != tc.ok {
			t.Errorf("prefixEndText(%q) = %q, %v; want %q, %v", tc.p, got, ok, tc.want, tc.ok)
		}
		if ok && (!utf8.ValidString(got) || got <= tc.p || !(tc.p+"\U0010FFFF" < got)) {
			t.Errorf("prefixEndText(%q) = %q is not a valid bound above every extension", tc.p, got)
		}
	}
}

func TestRebind(t *testing.T) {
	t.Parallel()
	if got, want := rebind("a = ? AND b < ? LIMIT ?"), "a = $1 AND b < $2 LIMIT $3"; got != want {
		t.Errorf("rebind = %q, want %q", got, want)
	}
}

// TestPostgresCloseAfterOutage: PostgreSQL was down and events are held
// and queued; it comes back, and the node shuts down before the held
// batch's retry time. Close writes them all (it used to discard every
// full batch and return nil: 1 event of 101 stored).
func TestPostgresCloseAfterOutage(t *testing.T) {
	t.Parallel()
	pg := testPG.Get(t)
	schema := pg.NewSchema(t)
	proxy, url := pg.Proxy(t, schema)
	l, err := Open(Config{Postgres: pgHandle(t, url), QueueSize: 200, BatchSize: 10, FlushInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	recordAll(t, l, Event{Time: at(0), Source: SourceS3, Op: "PutObject", Key: "before"})
	proxy.Down()
	for i := range 100 {
		if !l.Record(Event{Time: at(1 + i), Source: SourceS3, Op: "PutObject", Key: fmt.Sprint("during/", i)}) {
			t.Fatalf("Record %d refused", i)
		}
		if i == 5 {
			time.Sleep(100 * time.Millisecond) // let the writer find the outage and hold a batch
		}
	}
	if err := proxy.Up(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("Close = %v, want every event written", err)
	}
	if st := l.Stats(); st.Written != 101 || st.WriteErrors != 0 {
		t.Errorf("Stats after Close = %+v, want 101 written, no write errors", st)
	}
	l2 := openPGOn(t, schema)
	if got := len(queryAll(t, l2, Filter{})); got != 101 {
		t.Errorf("%d events stored, want 101", got)
	}
}

// pgNode is a Log on a PostgreSQL schema, as one node of a cluster, whose
// cap checks and retention passes run when the test says.
type pgNode struct {
	*Log
	tick, pruneTick chan time.Time
	capDone         chan struct{}
	passDone        chan int64
}

// openPGNode opens a pgNode with cfg (Postgres set by it) on schema url.
func openPGNode(t *testing.T, url string, cfg Config) *pgNode {
	t.Helper()
	n := &pgNode{tick: make(chan time.Time), pruneTick: make(chan time.Time),
		capDone: make(chan struct{}, 1000), passDone: make(chan int64, 100)}
	cfg.Postgres = pgHandle(t, url)
	n.Log = openPGWith(t, cfg, hooks{tick: n.tick, pruneTick: n.pruneTick,
		capDone: func() {
			select {
			case n.capDone <- struct{}{}:
			default:
			}
		},
		passDone: func(k int64) { n.passDone <- k },
	})
	return n
}

// settle ticks the node until a cap check evicts nothing more.
func (n *pgNode) settle(t *testing.T) {
	t.Helper()
	for range 100 {
		for len(n.capDone) > 0 {
			<-n.capDone
		}
		before := n.Stats().Evicted
		n.tick <- time.Now()
		select {
		case <-n.capDone:
		case <-time.After(30 * time.Second):
			t.Fatal("no cap check in 30s")
		}
		if n.Stats().Evicted == before {
			return
		}
	}
	t.Fatal("the cap checks did not settle")
}

// pgCount returns the rows of coffer_audit in schema url.
func pgCount(t *testing.T, url string) int64 {
	t.Helper()
	db := pgHandle(t, url)
	defer db.Close()
	var n int64
	if err := db.QueryRowContext(t.Context(), "SELECT count(*) FROM coffer_audit").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPostgresMaxBytesOncePerCluster: a table past MaxBytes, no writes.
// The cap evicts the oldest tenth once for the cluster: not once per
// node, and not again when a node restarts. (The size the table had when
// it last evicted lived in each node's memory from 0: four restarts took
// 5,591 events down to 3,670, and each node evicted its own tenth.)
func TestPostgresMaxBytesOncePerCluster(t *testing.T) {
	t.Parallel()
	url := testPG.Get(t).NewSchema(t)
	fill := openPGOn(t, url)
	pad := strings.Repeat("x", 300)
	const n = 5000
	for i := range n {
		if !fill.Record(Event{Time: at(i), Source: SourceS3, Op: "PutObject", User: "alice", Bucket: "b", Key: fmt.Sprint(pad, "/", i)}) {
			t.Fatalf("Record %d refused", i)
		}
	}
	if err := fill.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st := fill.Stats(); st.DiskBytes <= MinMaxBytes {
		t.Fatalf("the table has %d bytes, not past the cap of %d", st.DiskBytes, MinMaxBytes)
	}

	capped := Config{MaxBytes: MinMaxBytes}
	a, b := openPGNode(t, url, capped), openPGNode(t, url, capped)
	a.settle(t)
	b.settle(t)
	a.settle(t)
	if got, want := pgCount(t, url), int64(n-n/10); got != want {
		t.Errorf("two nodes past the cap: %d events left, want %d (the oldest tenth evicted once)", got, want)
	}
	for range 3 { // restarts
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		a = openPGNode(t, url, capped)
		a.settle(t)
	}
	if got, want := pgCount(t, url), int64(n-n/10); got != want {
		t.Errorf("after 3 restarts: %d events left, want %d", got, want)
	}
	if st := a.Stats(); st.Stored != n-n/10 || st.Evicted != 0 {
		t.Errorf("restarted node's Stats = %+v, want %d stored, none evicted", st, n-n/10)
	}
}

// TestPostgresMaxEventsCountsRows: MaxEvents is kept against the rows
// stored, not the ID range, which counts the rows deleted in between.
func TestPostgresMaxEventsCountsRows(t *testing.T) {
	t.Parallel()
	url := testPG.Get(t).NewSchema(t)
	fill := openPGOn(t, url)
	for i := range 100 {
		fill.Record(Event{Time: at(i), Source: SourceS3, Op: "PutObject", Key: fmt.Sprint("k/", i)})
	}
	if err := fill.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	db := pgHandle(t, url)
	defer db.Close()
	if _, err := db.ExecContext(t.Context(), "DELETE FROM coffer_audit WHERE object_key NOT IN ('k/0', 'k/99') AND id % 2 = 0"); err != nil {
		t.Fatal(err)
	}
	left := pgCount(t, url)
	a := openPGNode(t, url, Config{MaxEvents: 60})
	a.settle(t)
	if got := pgCount(t, url); got != left {
		t.Errorf("%d events under a cap of 60: %d left, want all", left, got)
	}
	if st := a.Stats(); st.Stored != left || st.Evicted != 0 {
		t.Errorf("Stats = %+v, want %d stored, none evicted", st, left)
	}
}

// TestPostgresRetentionWaitsForLock: a retention pass that finds another
// node holding the cleanup lock runs once the lock is free, at the next
// tick; it used to delete nothing and end, leaving retention to the next
// interval (an hour).
func TestPostgresRetentionWaitsForLock(t *testing.T) {
	t.Parallel()
	url := testPG.Get(t).NewSchema(t)
	a := openPGNode(t, url, Config{Retention: time.Hour})
	if k := <-a.passDone; k != 0 { // the pass at Open
		t.Fatalf("the first pass deleted %d events", k)
	}
	for i := range 30 {
		a.Record(Event{Time: at(i), Source: SourceS3, Op: "PutObject"}) // long past the retention
	}
	if err := a.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}

	// Another node holds the lock.
	other := pgHandle(t, url)
	defer other.Close()
	conn, err := other.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	lock := "hashtext(current_schema() || '/coffer_audit cleanup')" // as an older node or another Coffer names it
	if _, err := conn.ExecContext(t.Context(), "SELECT pg_advisory_lock("+lock+")"); err != nil {
		t.Fatal(err)
	}
	a.pruneTick <- time.Now()
	for range 2 {
		a.tick <- time.Now()
		select {
		case k := <-a.passDone:
			t.Fatalf("a retention pass ended (%d deleted) while another node held the lock", k)
		case <-time.After(200 * time.Millisecond):
		}
	}
	if _, err := conn.ExecContext(t.Context(), "SELECT pg_advisory_unlock("+lock+")"); err != nil {
		t.Fatal(err)
	}
	a.tick <- time.Now()
	select {
	case k := <-a.passDone:
		if k != 30 {
			t.Errorf("the pass deleted %d events, want 30", k)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no retention pass in 30s after the lock was released")
	}
}

// pgBackToVersion3 undoes the metadata schema's migrations after 3
// (0003_audit, the first with coffer_audit), as a database written by an
// older Coffer has it.
var pgBackToVersion3 = []string{
	"DROP TRIGGER coffer_audit_inserted ON coffer_audit",
	"DROP TRIGGER coffer_audit_deleted ON coffer_audit",
	"DROP TRIGGER coffer_audit_truncated ON coffer_audit",
	"DROP FUNCTION coffer_audit_count()",
	"DROP TABLE coffer_audit_state",
	"DROP INDEX coffer_audit_untrusted",
	"ALTER TABLE coffer_audit DROP COLUMN untrusted",
	"DROP TABLE coffer_audit_batches",
	"DELETE FROM coffer_schema WHERE version > 3",
}

// TestPostgresUpgrade: a cluster's log written by an older Coffer
// (schema version 3) keeps working after the upgrade: its events are
// counted, kept within the caps and queried.
func TestPostgresUpgrade(t *testing.T) {
	t.Parallel()
	url := testPG.Get(t).NewSchema(t)
	db := pgHandle(t, url)
	for _, q := range pgBackToVersion3 {
		if _, err := db.ExecContext(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// 100 events as an older Coffer stored them; 10 of its deletions.
	if _, err := db.ExecContext(t.Context(), `INSERT INTO coffer_audit (time_ns, source, op, status, code, bucket,
		object_key, target, user_name, access_key, source_ip, request_id, bytes_in, bytes_out, duration_ns, count)
		SELECT $1::int8 + i, 's3', 'PutObject', 200, '', 'b', 'k/' || i, '', 'alice', 'AKALICE', '192.0.2.1', 'R' || i, 0, 0, 0, 0
		FROM generate_series(0, 99) AS i`, at(0).UnixNano()); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(t.Context(), "DELETE FROM coffer_audit WHERE object_key IN ('k/10', 'k/11', 'k/12', 'k/13', 'k/14', 'k/15', 'k/16', 'k/17', 'k/18', 'k/19')"); err != nil {
		t.Fatal(err)
	}
	db.Close()

	a := openPGNode(t, url, Config{MaxEvents: 80}) // pgHandle migrates
	if st := a.Stats(); st.Stored != 90 {
		t.Errorf("after the upgrade: Stats.Stored %d, want the 90 events", st.Stored)
	}
	recordAll(t, a.Log, Event{Time: at(1000), Source: SourceS3, Op: "DeleteObject", Key: "new"})
	a.settle(t)
	got := queryAll(t, a.Log, Filter{})
	if len(got) != 80 || got[0].Key != "new" || got[len(got)-1].Key != "k/21" {
		t.Errorf("after the upgrade and a cap of 80: %d events, newest %q, oldest %q; want 80, new to k/21", len(got), got[0].Key, got[len(got)-1].Key)
	}
	if st := a.Stats(); st.Stored != 80 || st.Evicted != 11 {
		t.Errorf("Stats = %+v, want 80 stored, 11 evicted", st)
	}
}

// TestPostgresNoDuplicates: a batch whose commit succeeded but whose
// answer was lost is tried again, at once (a broken connection) or after
// the back-off (a timeout); the retry stores nothing twice.
func TestPostgresNoDuplicates(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"connection broken", io.ErrUnexpectedEOF},
		{"timeout", context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var lost atomic.Int32
			l := openPGTest(t, Config{}, hooks{lostAnswer: func() error {
				if lost.Add(1) == 2 { // the second batch
					return tc.err
				}
				return nil
			}})
			recordAll(t, l, Event{Time: at(0), Source: SourceS3, Op: "PutObject", Key: "first"})
			for i := range 10 {
				l.Record(Event{Time: at(1 + i), Source: SourceS3, Op: "PutObject", Key: fmt.Sprint("k/", i)})
			}
			deadline := time.Now().Add(30 * time.Second)
			for l.Flush(t.Context()) != nil { // held until the retry
				if time.Now().After(deadline) {
					t.Fatal("the batch was not written again within 30s")
				}
				time.Sleep(50 * time.Millisecond)
			}
			got := queryAll(t, l, Filter{})
			if len(got) != 11 {
				t.Errorf("%d events stored, want the 11 recorded, each once", len(got))
			}
			if st := l.Stats(); st.WriteErrors != 0 || st.Stored != 11 {
				t.Errorf("Stats = %+v, want no write errors, 11 stored", st)
			}
		})
	}
}

// TestPostgresCapShrink: the bytes cap evicts when the table grew past the
// size it had at the last eviction, or was rewritten much smaller since
// (VACUUM FULL); a small shrink (autovacuum truncating empty pages at the
// end) does not evict another tenth.
func TestPostgresCapShrink(t *testing.T) {
	w := &writer{l: &Log{maxBytes: 500}}
	for _, tc := range []struct {
		size, evictedAt int64
		want            bool
	}{
		{size: 600, evictedAt: 0, want: true},
		{size: 1100, evictedAt: 1000, want: true},
		{size: 1000, evictedAt: 1000, want: false},
		{size: 950, evictedAt: 1000, want: false},
		{size: 800, evictedAt: 1000, want: true},
		{size: 400, evictedAt: 1000, want: false}, // under the cap
	} {
		_, _, bytes := w.excess(pgCap{events: 100, size: tc.size, evictedAt: tc.evictedAt})
		if bytes != tc.want {
			t.Errorf("size %d, evicted at %d: evicts for bytes %v, want %v", tc.size, tc.evictedAt, bytes, tc.want)
		}
	}
}
