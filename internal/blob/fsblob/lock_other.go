//go:build !(linux || darwin || dragonfly || freebsd || netbsd || openbsd)

package fsblob

import "os"

// lockRoot takes no lock where syscall has no flock(2) (Windows, Solaris,
// AIX): the server runs on Linux, and elsewhere a second process on the
// same root is the operator's to prevent.
func lockRoot(root *os.Root) (*os.File, error) { return nil, nil }
