package meta

import (
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"reflect"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// This file is the part of the Pebble adapter that turns Pebble's fatal
// errors into the store's failure (fatal.go): the recover every adapter
// call defers, the check Fatalf makes of who called it, and the filesystem
// wrapper that reports the first failed write or sync (and keeps Pebble's
// files private).

// fatalPanic is the value pebbleLogger.Fatalf panics with inside an adapter
// call; recoverInto recognises it and returns its error.
type fatalPanic struct{ err *FailedError }

// engineError is an error Pebble reported through Fatalf: its message,
// and the first error among its arguments as the cause (so errors.Is finds
// syscall.ENOSPC in "fatal commit error: write …: no space left on
// device").
type engineError struct {
	msg   string
	cause error
}

func (e *engineError) Error() string { return e.msg }
func (e *engineError) Unwrap() error { return e.cause }

// fatalError returns the error of a Fatalf call.
func fatalError(format string, args []any) error {
	e := &engineError{msg: fmt.Sprintf(format, args...)}
	for _, a := range args {
		if err, ok := a.(error); ok {
			e.cause = err
			break
		}
	}
	return e
}

// recoverInto is deferred by every adapter method that calls into Pebble:
// it turns a panic into the store's failure and stores it in *errp.
func (f *failure) recoverInto(errp *error) {
	if r := recover(); r != nil {
		*errp = f.fromPanic(r)
	}
}

// fromPanic returns the failure a recovered panic value means: the one a
// fatalPanic carries, or a new one for a panic Pebble raised itself (its
// commit pipeline panics with the WAL's write error), logged with the
// panic's stack.
func (f *failure) fromPanic(r any) error {
	if fp, ok := r.(*fatalPanic); ok {
		return fp.err
	}
	var err error
	if e, ok := r.(error); ok {
		err = fmt.Errorf("pebble panicked: %w", e)
	} else {
		err = fmt.Errorf("pebble panicked: %v", r)
	}
	return f.set(err, "stack", string(debug.Stack()))
}

// adapterFuncs are the names, after this package's path and a dot, of the
// functions through which callers enter Pebble, each of which defers
// recoverInto (or pebbleIter.recover).
var adapterFuncs = []string{"(*pebbleKV).", "(*pebbleBatch).", "(*pebbleIndexedBatch).", "(*pebbleSnapshot).", "(*pebbleIter).", "openGuarded"}

// inAdapterCall reports whether the calling goroutine is inside an adapter
// call, where a panic reaches recoverInto; it is false on Pebble's own
// goroutines (flushes, compactions). It walks the stack, which costs
// microseconds: Fatalf calls it once, on the way to stopping the store.
func inAdapterCall() bool {
	pkg := reflect.TypeFor[pebbleKV]().PkgPath() + "."
	pcs := make([]uintptr, 512)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	for {
		fr, more := frames.Next()
		if name, ok := strings.CutPrefix(fr.Function, pkg); ok {
			for _, a := range adapterFuncs {
				if strings.HasPrefix(name, a) {
					return true
				}
			}
		}
		if !more {
			return false
		}
	}
}

// failFS is the filesystem under Pebble. It records the first failed write
// or sync of any of Pebble's files (the log, the manifest, a table) as the
// store's failure, at once, before Pebble sees the error: Pebble treats
// log and manifest write errors as fatal anyway, and retries a failed
// flush without end, which on a full disk only stalls writes until they
// hang. After a sync error, moreover, what the file holds is unknown.
//
// A failed creation (or opening for writing) of a file is the failure
// too, and blocks the goroutine that met it (openFailed).
//
// Once the store has failed, creating a file for writing blocks forever:
// commits are refused before they reach Pebble, so only Pebble's own
// goroutines still create files, and parking them stops a failed flush
// from being retried in a busy loop (each try creates a table) until the
// process exits. Files already open are still written, so that commits
// already on their way to the log when something else failed finish.
//
// failFS also keeps the database private to its owner: vfs.Default
// creates files with mode 0666 and leaves the rest to the umask (0644 under
// the usual 022), and the metadata holds the IAM state (password hashes,
// sealed secrets), bucket policies and inline object data. Every file it
// creates or opens for writing is made filePerm, every directory dirPerm.
// A hard link (Link) or a rename shares the inode of a file made here and
// needs nothing more.
type failFS struct {
	vfs.FS
	fail   *failure
	inject func(path string) error // Config.FailWrite; nil in production
}

var _ vfs.FS = (*failFS)(nil)

// Modes of the metadata directory and of Pebble's files: their owner's
// alone.
const (
	dirPerm  = 0o700
	filePerm = 0o600
)

// Create creates name for writing through the wrapper.
func (fs *failFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	fs.parkIfFailed()
	if err := fs.before("create", name); err != nil {
		fs.openFailed(err)
	}
	f, err := fs.FS.Create(name, c)
	if f, err = private(name, f, err); err != nil {
		fs.openFailed(err)
	}
	return fs.wrap(name, f, err)
}

// OpenReadWrite opens name for writing through the wrapper.
func (fs *failFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	fs.parkIfFailed()
	if err := fs.before("open", name); err != nil {
		fs.openFailed(err)
	}
	f, err := fs.FS.OpenReadWrite(name, c, opts...)
	if f, err = private(name, f, err); err != nil {
		fs.openFailed(err)
	}
	return fs.wrap(name, f, err)
}

// ReuseForWrite renames oldname to newname (a recycled log) and opens it
// for writing through the wrapper.
func (fs *failFS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	fs.parkIfFailed()
	if err := fs.before("open", newname); err != nil {
		fs.openFailed(err)
	}
	f, err := fs.FS.ReuseForWrite(oldname, newname, c)
	if f, err = private(newname, f, err); err != nil {
		fs.openFailed(err)
	}
	return fs.wrap(newname, f, err)
}

// MkdirAll creates dir and its parents with mode dirPerm, whatever perm
// Pebble asks for.
func (fs *failFS) MkdirAll(dir string, _ os.FileMode) error {
	return fs.FS.MkdirAll(dir, dirPerm)
}

// Lock creates (or truncates) and locks the lock file name, mode
// filePerm. The file is empty, but a new store should have no file that
// makePrivate would report.
func (fs *failFS) Lock(name string) (io.Closer, error) {
	c, err := fs.FS.Lock(name)
	if err != nil || fs.FS != vfs.Default {
		return c, err
	}
	// By name: opening and closing another descriptor of the file would
	// release the lock (fcntl).
	if err := os.Chmod(name, filePerm); err != nil {
		return nil, errors.Join(err, c.Close())
	}
	return c, nil
}

// OpenDir opens a directory, whose Sync makes renames and creations
// durable, through the wrapper.
func (fs *failFS) OpenDir(name string) (vfs.File, error) {
	f, err := fs.FS.OpenDir(name)
	return fs.wrap(name, f, err)
}

// Unwrap returns the filesystem wrapped.
func (fs *failFS) Unwrap() vfs.FS { return fs.FS }

func (fs *failFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return &failFile{File: f, fs: fs, name: name}, nil
}

// openFailed records err, a failed creation or opening for writing of one
// of Pebble's files (a full disk or inode table, a read-only remount), as
// the store's failure and blocks forever instead of returning it. Pebble
// cannot go on without the file either way, and some of its callers
// cannot take the error: the log rotation of a commit panics with it
// after letting go of the mutex its caller unlocks again, a runtime fatal
// error that no recover stops (exit status 2, no drain), and a flush
// retries the create in a busy loop, logging each try. Blocked, the
// goroutine does nothing more, as on any other failure: a commit waiting
// on it gives up 200 ms after the failure (pebbleBatch.commit), Open
// returns it (openGuarded), and the server stops.
func (fs *failFS) openFailed(err error) {
	fs.fail.set(err)
	select {}
}

// private makes f, just created or opened for writing as name, mode
// filePerm. A file of a filesystem that has no descriptors (vfs.MemFS)
// is left as it is.
func private(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return f, err
	}
	if fd := f.Fd(); fd != vfs.InvalidFd {
		if err := syscall.Fchmod(int(fd), filePerm); err != nil {
			_ = f.Close() // the chmod's error is the one to report
			return nil, &iofs.PathError{Op: "chmod", Path: name, Err: err}
		}
	}
	return f, nil
}

// parkIfFailed blocks forever once the store has failed.
func (fs *failFS) parkIfFailed() {
	if fs.fail.get() != nil {
		select {}
	}
}

// before runs before every write or sync (op) of file name: it returns the
// injected error, if any, as the operating system would, having recorded
// it as the failure.
func (fs *failFS) before(op, name string) error {
	if fs.inject != nil {
		if err := fs.inject(name); err != nil {
			err = &iofs.PathError{Op: op, Path: name, Err: err}
			fs.fail.set(err)
			return err
		}
	}
	return nil
}

// after records err, the result of a write or sync, as the failure.
func (fs *failFS) after(err error) {
	if err != nil {
		fs.fail.set(err)
	}
}

// failFile is a file of failFS.
type failFile struct {
	vfs.File
	fs   *failFS
	name string
}

func (f *failFile) Write(p []byte) (int, error) {
	if err := f.fs.before("write", f.name); err != nil {
		return 0, err
	}
	n, err := f.File.Write(p)
	f.fs.after(err)
	return n, err
}

func (f *failFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.fs.before("write", f.name); err != nil {
		return 0, err
	}
	n, err := f.File.WriteAt(p, off)
	f.fs.after(err)
	return n, err
}

func (f *failFile) Sync() error {
	if err := f.fs.before("sync", f.name); err != nil {
		return err
	}
	err := f.File.Sync()
	f.fs.after(err)
	return err
}

func (f *failFile) SyncData() error {
	if err := f.fs.before("sync", f.name); err != nil {
		return err
	}
	err := f.File.SyncData()
	f.fs.after(err)
	return err
}

func (f *failFile) SyncTo(length int64) (fullSync bool, err error) {
	if err := f.fs.before("sync", f.name); err != nil {
		return false, err
	}
	fullSync, err = f.File.SyncTo(length)
	f.fs.after(err)
	return fullSync, err
}
