package audit

import (
	"context"
	"fmt"
	"strings"
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
