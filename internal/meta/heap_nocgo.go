//go:build !cgo

package meta

// cachesOnGoHeap: without cgo (the static build), Pebble allocates its
// block cache and memtables on the Go heap.
const cachesOnGoHeap = true

// The static build's Pebble memory is smaller than the cgo build's
// (heap_cgo.go) because its arenas are Go heap, which stays resident:
// every page of a memtable is written before it is flushed, Pebble keeps
// the flushed one for reuse, and a freed one stays mapped until the
// collector finds it unreferenced and the scavenger returns it, so two to
// four memtables are resident under a steady write load. Pebble reserves
// each memtable's size in the block cache, so cacheSize bounds cache and
// memtables together: with 4 MiB memtables a 16 MiB cache leaves the
// block cache 4–12 MiB, about what 32 MiB less two or three 16 MiB
// memtables left it before.
//
// Measured in interleaved pairs (bench/2026-11-26-rss): peak RSS under
// issue 13's mixed load (100 KiB objects, 60 s) 71–80 → 69–70 MiB, and
// 82–103 → 68–69 MiB over 120 s with 4 MiB memtables alone; with 32 KiB
// objects inline 98–99 → 84 MiB (4 MiB memtables with the 32 MiB cache:
// 111 MiB, the cache filled with the inline data). Server CPU per
// operation 0.98× and 0.95×; compaction's share of it rose from 8–11 % to
// 17 % under the inline load, within the noise of the total.
//
// Four times as many memtables make four times as many L0 files, and at
// 8 sublevels L0 compactions would rewrite LBase four times as often:
// L0 compacts at 32 sublevels instead (stopping writes at 96), ~128 MiB
// per compaction as with 8 × 16 MiB. Server CPU per operation with it:
// 1.03× on the 100 KiB load, 0.83× on the inline one.
const (
	cacheSize             = 16 << 20
	memTableSize          = 4 << 20
	l0CompactionThreshold = 32
	l0StopWrites          = 96
)
