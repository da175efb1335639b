//go:build !linux

package server

import "net"

// pending reports whether bytes wait unread on c; only Linux can tell.
func pending(net.Conn) bool { return false }
