//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package fsblob

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// lockRoot opens the root's lock file and takes an exclusive flock(2) on
// it without waiting, for as long as the returned file stays open. The
// lock is the open file's, so a second Open of the same root fails even
// in the same process, and the kernel releases it when the process ends,
// however it ends. On NFS, Linux turns it into a byte-range lock the
// server keeps for every client, unless the mount has nolock or
// local_lock=flock, which keep it on this machine. A filesystem that takes
// no such locks fails Open with advice, rather than run unguarded. The
// file holds the holder's process ID, for the error of the next one.
func lockRoot(root *os.Root) (*os.File, error) {
	f, err := root.OpenFile(lockName, os.O_RDWR|os.O_CREATE, filePerm)
	if err != nil {
		return nil, fmt.Errorf("open the lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder := lockHolder(f)
		f.Close()
		switch {
		case errors.Is(err, syscall.EWOULDBLOCK):
			return nil, fmt.Errorf("%w%s", ErrLocked, holder)
		case errors.Is(err, syscall.ENOLCK), errors.Is(err, syscall.ENOSYS), errors.Is(err, syscall.EOPNOTSUPP):
			return nil, fmt.Errorf("lock %s: the filesystem does not take flock(2) locks (%w): on NFS, run the lock service "+
				"(rpc.statd; NFSv4 needs none), or mount with local_lock=flock if only this machine uses the directory; "+
				"on other network or FUSE filesystems, put the storage path on a local one", lockName, err)
		}
		return nil, fmt.Errorf("lock %s: %w", lockName, err)
	}
	pid := []byte(strconv.Itoa(os.Getpid()) + "\n")
	if err := f.Truncate(0); err == nil {
		f.WriteAt(pid, 0) // for the message of the next Open only
	}
	return f, nil
}

// lockHolder describes the process that wrote its ID into the lock file
// f, or returns "" if there is none.
func lockHolder(f *os.File) string {
	b, err := io.ReadAll(io.LimitReader(f, 32))
	if err != nil {
		return ""
	}
	pid := strings.TrimSpace(string(b))
	if _, err := strconv.Atoi(pid); err != nil {
		return ""
	}
	return " (process " + pid + ", on this machine or another sharing the filesystem)"
}
