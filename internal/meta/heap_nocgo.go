//go:build !cgo

package meta

// cachesOnGoHeap: without cgo (the static build), Pebble allocates its
// block cache and memtables on the Go heap.
const cachesOnGoHeap = true
