package fsblob

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// oDirect opens a file for direct I/O.
const oDirect = syscall.O_DIRECT

// directAlign is the alignment of direct I/O buffers, lengths and offsets:
// the page size, a multiple of every logical block size in use.
const directAlign = 4096

// setDirect turns direct I/O on f on or off.
func setDirect(f *os.File, on bool) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = rc.Control(func(fd uintptr) {
		var fl int
		if fl, serr = unix.FcntlInt(fd, unix.F_GETFL, 0); serr != nil {
			return
		}
		if on {
			fl |= unix.O_DIRECT
		} else {
			fl &^= unix.O_DIRECT
		}
		_, serr = unix.FcntlInt(fd, unix.F_SETFL, fl)
	})
	if err != nil {
		return err
	}
	return serr
}

// syncData makes f's data, and what is needed to read it back (its size
// and allocation), durable: fdatasync(2). Unlike fsync it does not wait for
// the timestamps, so rewriting a kept file of the same size in place (see
// "Reuse" in the package doc) commits no filesystem journal entry at all.
func syncData(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for {
			if serr = unix.Fdatasync(int(fd)); serr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	if serr != nil {
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: serr}
	}
	return nil
}

// linkCount returns the number of names fi's file has (st_nlink).
func linkCount(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

// fsSize returns the size in bytes of the filesystem holding dir, or 0 if
// it cannot be measured.
func fsSize(dir string) int64 {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return 0
	}
	return int64(st.Blocks) * int64(st.Bsize)
}
