package meta

import (
	"fmt"
	iofs "io/fs"
	"reflect"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// This file is the part of the Pebble adapter that turns Pebble's fatal
// errors into the store's failure (fatal.go): the recover every adapter
// call defers, the check Fatalf makes of who called it, and the filesystem
// wrapper that reports the first failed write or sync.

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
// Once the store has failed, creating a file for writing blocks forever:
// commits are refused before they reach Pebble, so only Pebble's own
// goroutines still create files, and parking them stops a failed flush
// from being retried in a busy loop (each try creates a table) until the
// process exits. Files already open are still written, so that commits
// already on their way to the log when something else failed finish.
type failFS struct {
	vfs.FS
	fail   *failure
	inject func(path string) error // Config.FailWrite; nil in production
}

var _ vfs.FS = (*failFS)(nil)

// Create creates name for writing through the wrapper.
func (fs *failFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	fs.parkIfFailed()
	f, err := fs.FS.Create(name, c)
	return fs.wrap(name, f, err)
}

// OpenReadWrite opens name for writing through the wrapper.
func (fs *failFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	fs.parkIfFailed()
	f, err := fs.FS.OpenReadWrite(name, c, opts...)
	return fs.wrap(name, f, err)
}

// ReuseForWrite renames oldname to newname (a recycled log) and opens it
// for writing through the wrapper.
func (fs *failFS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	fs.parkIfFailed()
	f, err := fs.FS.ReuseForWrite(oldname, newname, c)
	return fs.wrap(newname, f, err)
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
