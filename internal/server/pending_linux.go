package server

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// pending reports whether bytes the client sent wait unread in c's
// receive queue (SIOCINQ).
func pending(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	n := 0
	_ = raw.Control(func(fd uintptr) {
		n, _ = unix.IoctlGetInt(int(fd), unix.SIOCINQ)
	})
	return n > 0
}
