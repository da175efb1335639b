//go:build cgo

package meta

// cachesOnGoHeap: with cgo, Pebble allocates its block cache and memtables
// with C's allocator, outside the Go heap.
const cachesOnGoHeap = false
