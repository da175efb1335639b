//go:build cgo

package meta

// cachesOnGoHeap: with cgo, Pebble allocates its block cache and memtables
// with C's allocator, outside the Go heap.
const cachesOnGoHeap = false

// The cgo build keeps the larger block cache and memtables (see pebble.go):
// C memory is returned to the system when Pebble frees it, without waiting
// for a garbage collection, and the static build's smaller sizes
// (heap_nocgo.go) were measured for the static build only.
const (
	cacheSize             = 32 << 20
	memTableSize          = 16 << 20
	l0CompactionThreshold = 8
	l0StopWrites          = 24
)
