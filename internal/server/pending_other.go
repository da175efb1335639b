//go:build !linux

package server

import (
	"net"
	"syscall"
)

// pending reports whether bytes wait unread on c; only Linux can tell.
func pending(net.Conn) bool { return false }

// ackedBytes reports what the client of c acknowledged; only Linux can
// tell.
func ackedBytes(syscall.Conn) (uint64, bool) { return 0, false }
