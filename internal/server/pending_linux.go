package server

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// pending reports whether bytes the client sent wait unread in c's
// receive queue (SIOCINQ; under TLS, those of the TCP connection).
func pending(c net.Conn) bool {
	if u, ok := c.(interface{ NetConn() net.Conn }); ok { // *tls.Conn
		c = u.NetConn()
	}
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
