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

// ackedBytes returns how many bytes the client of c has acknowledged
// (TCP_INFO's tcpi_bytes_acked), for telling a client that reads slowly
// from one that does not read.
func ackedBytes(c syscall.Conn) (uint64, bool) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, false
	}
	var info *unix.TCPInfo
	var ierr error
	if err := raw.Control(func(fd uintptr) {
		info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	}); err != nil || ierr != nil {
		return 0, false
	}
	return info.Bytes_acked, true
}
