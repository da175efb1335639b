package memlimit

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestGoal(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name              string
		live, fixed       int64
		percent, wantGOGC int
	}{
		{"no caches: the plain rule", 100 * mib, 0, 100, 100},
		{"no caches, GOGC=50", 100 * mib, 0, 50, 50},
		// 48 MiB of caches in 64 MiB live: the heap may grow by 16 MiB
		// (25 %), not by 64 MiB.
		{"caches", 64 * mib, 48 * mib, 100, 25},
		{"caches, GOGC=200", 64 * mib, 48 * mib, 200, 50},
		// 1 MiB outside the caches: MinHeadroom (8 MiB of 40 MiB = 20 %).
		{"headroom floor", 40 * mib, 39 * mib, 100, 20},
		// A cache larger than the live heap (it counts allocations the
		// collector has not yet seen): all of the heap is cache.
		{"fixed over live", 10 * mib, 20 * mib, 100, 80},
		{"huge heap, floor 1 %", 100000 * mib, 99999 * mib, 100, 1},
		{"nothing live yet", 0, 0, 100, 100},
		// No caches and a small heap: the plain rule still, no floor.
		{"no caches, small heap", 2 * mib, 0, 100, 100},
		{"GOGC off", 100 * mib, 0, -1, -1},
	} {
		if got := Goal(tc.live, tc.fixed, tc.percent); got != tc.wantGOGC {
			t.Errorf("%s: Goal(%d, %d, %d) = %d, want %d", tc.name, tc.live, tc.fixed, tc.percent, got, tc.wantGOGC)
		}
	}
}

func TestPercentFromEnv(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want int
		ok   bool
	}{
		{"", 100, true},
		{"50", 50, true},
		{" 200 ", 200, true},
		{"off", 0, false},
		{"0", 0, false},
		{"-1", 0, false},
		{"lots", 0, false},
	} {
		got, ok := PercentFromEnv(func(string) string { return tc.env })
		if got != tc.want || ok != tc.ok {
			t.Errorf("GOGC=%q: %d, %v; want %d, %v", tc.env, got, ok, tc.want, tc.ok)
		}
	}
}

// TestPace keeps 64 MiB of "cache" live and checks that after a collection
// the heap goal leaves room for the rest of the heap, not for the cache
// again: under the plain rule (GOGC=100) the goal would be over 128 MiB.
func TestPace(t *testing.T) {
	const cacheSize = 64 << 20
	cache := make([]byte, cacheSize)
	for i := range cache {
		cache[i] = byte(i) // touch it, as a cache is
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Pace(ctx, 100, func() int64 { return cacheSize })
	}()

	goal := func() uint64 {
		s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	deadline := time.Now().Add(10 * time.Second)
	var g uint64
	for {
		runtime.GC()
		time.Sleep(10 * time.Millisecond) // the cleanup runs, then Pace
		if g = goal(); g < cacheSize+cacheSize/2 || time.Now().After(deadline) {
			break
		}
	}
	if g >= cacheSize+cacheSize/2 {
		t.Errorf("heap goal %d MiB with a %d MiB cache under Pace, want under %d MiB", g>>20, cacheSize>>20, (cacheSize+cacheSize/2)>>20)
	}
	if g < cacheSize {
		t.Errorf("heap goal %d MiB below the live cache of %d MiB", g>>20, cacheSize>>20)
	}
	cancel()
	<-done
	if p := debug.SetGCPercent(100); p != 100 {
		t.Errorf("GOGC after Pace = %d, want the percentage it was given (100) restored", p)
	}
	runtime.KeepAlive(cache)
}
