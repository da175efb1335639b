package fsblob

import (
	"os"
	"path"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// maxDirHandles bounds the directories a Store keeps open. The object
// service's keys use a few hundred; a directory past the bound is opened
// for one call and closed again.
const maxDirHandles = 4096

// A dirHandle is an open directory under the root. Every call through
// s.root resolves its path one directory at a time (an openat and a close
// per directory on the way, so that no symbolic link can lead outside the
// root), which made a 100 KiB PUT cost about fifteen system calls more than
// its work; a dirHandle resolves the directory once. Its Root opens,
// stats and removes entries with one system call each, still never
// following a symbolic link; its File is the directory itself, for fsync
// and for renameat(2) between two directories, which os.Root cannot do.
// Entries' names are single path components (keys are checked first), so
// no call through a handle resolves more than one name.
type dirHandle struct {
	root   *os.Root
	f      *os.File
	rc     syscall.RawConn // f's, for renameat
	shared bool            // root is the Store's own root (the directory "."): not closed with the handle
	temp   bool            // not cached: done closes it
}

// dirCache is a Store's open directories, by path under the root.
type dirCache struct {
	m sync.Map // string → *dirHandle
	n atomic.Int32
}

// dir returns the open directory dir ("." for the root). The caller calls
// done when it no longer uses it. A directory that does not exist is an
// error matching fs.ErrNotExist (or ENOTDIR if a file is on its path).
// Directories are never removed, so a cached handle stays right for the
// Store's life.
func (s *Store) dir(dir string) (*dirHandle, error) {
	if v, ok := s.dirs.m.Load(dir); ok {
		return v.(*dirHandle), nil
	}
	h := &dirHandle{root: s.root, shared: dir == "."}
	if !h.shared {
		r, err := s.root.OpenRoot(dir)
		if err != nil {
			if fi, serr := s.root.Stat(dir); serr == nil && !fi.IsDir() {
				// OpenRoot's own error for this is an errors.New.
				err = &os.PathError{Op: "open", Path: dir, Err: syscall.ENOTDIR}
			}
			return nil, err
		}
		h.root = r
	}
	f, err := h.root.Open(".")
	if err == nil {
		h.f = f
		h.rc, err = f.SyscallConn()
	}
	if err != nil {
		h.close()
		return nil, err
	}
	if s.dirs.n.Load() >= maxDirHandles {
		h.temp = true
		return h, nil
	}
	if v, loaded := s.dirs.m.LoadOrStore(dir, h); loaded {
		h.close() // another call opened it first
		return v.(*dirHandle), nil
	}
	s.dirs.n.Add(1)
	return h, nil
}

// done releases h after a call: a cached handle stays open.
func (h *dirHandle) done() {
	if h.temp {
		h.close()
	}
}

func (h *dirHandle) close() {
	if h.f != nil {
		h.f.Close()
	}
	if !h.shared {
		h.root.Close()
	}
}

// closeDirs closes every cached directory. Calls in flight get
// os.ErrClosed rather than another descriptor.
func (s *Store) closeDirs() {
	s.dirs.m.Range(func(k, v any) bool {
		v.(*dirHandle).close()
		s.dirs.m.Delete(k)
		return true
	})
}

// renameAt renames the entry from in directory src to the entry to in
// directory dst, replacing it atomically, without following symbolic
// links (renameat(2) never does).
func renameAt(src *dirHandle, from string, dst *dirHandle, to string) error {
	var err error
	cerr := src.rc.Control(func(sfd uintptr) {
		cerr := dst.rc.Control(func(dfd uintptr) {
			for {
				if err = unix.Renameat(int(sfd), from, int(dfd), to); err != unix.EINTR {
					return
				}
			}
		})
		if err == nil {
			err = cerr
		}
	})
	if cerr != nil {
		return cerr
	}
	if err != nil {
		return &os.LinkError{Op: "renameat", Old: from, New: to, Err: err}
	}
	return nil
}

// splitKey splits a key into its directory ("." for none) and its name.
func splitKey(key string) (dir, name string) {
	dir, name = path.Split(key)
	if dir == "" {
		return ".", name
	}
	return dir[:len(dir)-1], name
}
