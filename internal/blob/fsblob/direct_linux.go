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
