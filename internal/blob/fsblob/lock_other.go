//go:build !unix

package fsblob

import "os"

// lockRoot takes no lock where flock(2) does not exist: the server runs
// on Linux, and a second process on the same root is the operator's to
// prevent (see Config.Root).
func lockRoot(root *os.Root) (*os.File, error) { return nil, nil }
