//go:build !linux

package fsblob

import "os"

// oDirect is 0 where Coffer does not use direct I/O: every write goes
// through the page cache, and the fsync makes it durable.
const oDirect = 0

// directAlign is the alignment of the buffers of large Puts.
const directAlign = 4096

// setDirect does nothing: files are never opened for direct I/O here.
func setDirect(f *os.File, on bool) error { return nil }

// syncData makes f's contents durable ((*os.File).Sync).
func syncData(f *os.File) error { return f.Sync() }

// linkCount returns 1: hard links are not counted here (Reuse is
// documented for Linux filesystems).
func linkCount(fi os.FileInfo) uint64 { return 1 }

// fsSize returns 0: the filesystem's size is not measured here, and reuse
// is bounded by Config.Reuse alone.
func fsSize(dir string) int64 { return 0 }
