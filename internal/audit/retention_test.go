package audit

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

func TestRetentionInterval(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		retention, want time.Duration
	}{
		{90 * 24 * time.Hour, time.Hour},
		{5 * time.Hour, 30 * time.Minute},
		{10 * time.Second, time.Second},
		{time.Second, time.Second},
	} {
		if got := retentionInterval(tc.retention); got != tc.want {
			t.Errorf("retentionInterval(%v) = %v, want %v", tc.retention, got, tc.want)
		}
	}
}

func TestRetention(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.db")
	clock := newFakeClock(t0)
	now := clock.Now()
	// 2500 events two days old (more than one DELETE batch), one 25
	// hours old, one an hour old.
	var events []Event
	for i := range 2500 {
		events = append(events, Event{Time: now.Add(-48*time.Hour + time.Duration(i)), Source: SourceS3, Op: "PutObject"})
	}
	events = append(events,
		Event{Time: now.Add(-25 * time.Hour), Source: SourceS3, Op: "DeleteObject"},
		Event{Time: now.Add(-time.Hour), Source: SourceS3, Op: "GetObject"},
	)
	l := openTest(t, Config{Path: path}, hooks{})
	recordAll(t, l, events...)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	// Open deletes what is older than the retention.
	passes := make(chan int64)
	tick := make(chan time.Time)
	l = openTest(t, Config{Path: path, Retention: 26 * time.Hour, Clock: clock.Now},
		hooks{pruneTick: tick, passDone: func(n int64) { passes <- n }})
	if n := <-passes; n != 2500 {
		t.Errorf("pass at Open pruned %d events, want 2500", n)
	}
	if got := queryAll(t, l, Filter{}); len(got) != 2 {
		t.Errorf("after the pass at Open: %d events, want 2", len(got))
	}

	// Later passes run on the ticker, with the clock's time.
	clock.Advance(2 * time.Hour)
	tick <- time.Time{}
	if n := <-passes; n != 1 {
		t.Errorf("pass on tick pruned %d events, want 1", n)
	}
	if got := queryAll(t, l, Filter{}); len(got) != 1 || got[0].Op != "GetObject" {
		t.Errorf("after the pass on tick: %+v, want the GetObject event", got)
	}
	if st := l.Stats(); st.Pruned != 2501 {
		t.Errorf("Stats.Pruned = %d, want 2501", st.Pruned)
	}

	// Prune deletes on demand, exactly before its time.
	n, err := l.Prune(t.Context(), now.Add(-time.Hour))
	if err != nil || n != 0 {
		t.Errorf("Prune(at the event's time) = %d, %v; want 0, nil", n, err)
	}
	n, err = l.Prune(t.Context(), now.Add(-time.Hour+1))
	if err != nil || n != 1 {
		t.Errorf("Prune(just after the event) = %d, %v; want 1, nil", n, err)
	}
	if st := l.Stats(); st.Pruned != 2502 {
		t.Errorf("Stats.Pruned = %d, want 2502", st.Pruned)
	}
}

func TestPruneBatches(t *testing.T) { forEachBackend(t, testPruneBatches) }

func testPruneBatches(t *testing.T, b backend) {
	l := b.open(t, Config{}, hooks{})
	var events []Event
	for i := range 2*pruneBatch + 10 {
		events = append(events, Event{Time: t0.Add(time.Duration(i) * time.Second), Source: SourceS3, Op: "PutObject"})
	}
	recordAll(t, l, events...)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if n, err := l.Prune(ctx, t0.Add(time.Hour)); !errors.Is(err, context.Canceled) || n != 0 {
		t.Errorf("Prune with a canceled context = %d, %v; want 0, context.Canceled", n, err)
	}
	n, err := l.Prune(t.Context(), t0.Add(time.Duration(2*pruneBatch+5)*time.Second))
	if err != nil || n != 2*pruneBatch+5 {
		t.Errorf("Prune = %d, %v; want %d, nil", n, err, 2*pruneBatch+5)
	}
	if got := len(queryAll(t, l, Filter{})); got != 5 {
		t.Errorf("%d events left, want 5", got)
	}
}
