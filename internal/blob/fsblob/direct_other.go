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
