package memlimit

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
)

// MinHeadroom is the least the heap may grow between two collections
// under Pace: below it, a server whose live heap is nearly all caches
// would collect after every few requests.
const MinHeadroom = 8 << 20

// Goal returns the GOGC percentage that lets the heap grow by percent of
// its live bytes that are not fixed-size caches (fixed of live), and by at
// least MinHeadroom, before the next collection.
//
// The garbage collector's rule is a heap goal of live×(1+GOGC/100). A
// block cache or a memtable that lives on the Go heap (Pebble's, in a build
// without cgo) counts as live, so the plain rule lets the heap grow by the
// size of the caches again: 32 MiB of block cache and 16 MiB of memtable
// become 96 MiB of heap goal for garbage that the rest of the server makes
// in far less. Goal applies percent to the rest only, which is what the
// same server built with cgo (Pebble's memory then outside the Go heap)
// gets from the plain rule.
//
// With no caches on the heap (fixed ≤ 0: a cgo build, or metadata in
// PostgreSQL) it is percent itself, so that Pace changes nothing there.
func Goal(live, fixed int64, percent int) int {
	if live <= 0 || percent <= 0 || fixed <= 0 {
		return percent
	}
	fixed = min(fixed, live)
	headroom := max((live-fixed)*int64(percent)/100, MinHeadroom)
	return int(max(headroom*100/live, 1))
}

// PercentFromEnv returns the GOGC percentage the environment asks for
// (getenv("GOGC")): 100 when unset, ok false when GOGC is "off" or not a
// positive number (then Pace must not run: the user's setting stands).
func PercentFromEnv(getenv func(string) string) (percent int, ok bool) {
	v := strings.TrimSpace(getenv("GOGC"))
	if v == "" {
		return 100, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, false
	}
	return n, true
}

// liveHeapMetric is the heap the last collection found live.
const liveHeapMetric = "/gc/heap/live:bytes"

// Pace sets the garbage collector's percentage after every collection to
// Goal(live, fixed(), percent) until ctx ends, then restores percent.
// fixed reports the bytes of the live heap held by fixed-size caches; it
// is called once per collection, off the collector's path.
func Pace(ctx context.Context, percent int, fixed func() int64) {
	defer debug.SetGCPercent(percent)
	cycles := make(chan struct{}, 1)
	arm(cycles)
	sample := []metrics.Sample{{Name: liveHeapMetric}}
	for {
		select {
		case <-ctx.Done():
			return
		case <-cycles:
		}
		arm(cycles)
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return // a runtime without the metric: leave GOGC alone
		}
		live := int64(sample[0].Value.Uint64())
		debug.SetGCPercent(Goal(live, fixed(), percent))
	}
}

// sentinel is allocated to be collected: its cleanup signals the end of a
// collection. It is 16 bytes so that the allocator does not pack it with
// other small objects that could keep it alive.
type sentinel [16]byte

// arm allocates a sentinel whose cleanup sends on cycles (without
// blocking: one pending signal is enough) after the next collection.
func arm(cycles chan<- struct{}) {
	runtime.AddCleanup(new(sentinel), func(c chan<- struct{}) {
		select {
		case c <- struct{}{}:
		default:
		}
	}, cycles)
}

// PaceFromEnv is Pace with the percentage of the environment (GOGC); it
// returns at once when GOGC is off or invalid.
func PaceFromEnv(ctx context.Context, fixed func() int64) {
	if percent, ok := PercentFromEnv(os.Getenv); ok {
		Pace(ctx, percent, fixed)
	}
}
