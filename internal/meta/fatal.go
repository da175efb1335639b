package meta

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"syscall"
)

// ErrFailed is matched (errors.Is) by the error of a DB whose storage engine
// has failed; see (*DB).Err.
var ErrFailed = errors.New("meta: metadata store failed")

// FailedError is the error of a DB whose storage engine has failed. It
// matches ErrFailed, and unwraps to what the engine reported first: a write
// or sync error of one of its files (an *fs.PathError, so errors.Is(err,
// syscall.ENOSPC) works), a fatal error it logged, or a panic it raised.
type FailedError struct {
	Err error
}

func (e *FailedError) Error() string { return "meta: metadata store failed: " + e.Err.Error() }

// Unwrap returns the engine's error.
func (e *FailedError) Unwrap() error { return e.Err }

// Is reports whether target is ErrFailed.
func (e *FailedError) Is(target error) bool { return target == ErrFailed }

// Reason returns a short cause without file names, fit for clients and
// unauthenticated probes: the system error if there is one ("no space left
// on device", "input/output error"), else "storage engine error".
func (e *FailedError) Reason() string {
	if errno, ok := errors.AsType[syscall.Errno](e.Err); ok {
		return errno.Error()
	}
	return "storage engine error"
}

// failure is the failed state of a DB: unset while the engine works, then
// set once, for good, by the engine adapter when the engine reports an
// error it cannot continue from. Reading it is one atomic load, so every
// write checks it before reaching the engine.
type failure struct {
	err  atomic.Pointer[FailedError]
	done chan struct{} // closed when err is set
	log  *slog.Logger
}

func newFailure(log *slog.Logger) *failure {
	return &failure{done: make(chan struct{}), log: log}
}

// set records err as the failure, logging it with attrs, unless a failure
// is recorded already; it returns the failure recorded.
func (f *failure) set(err error, attrs ...any) *FailedError {
	fe := &FailedError{Err: err}
	if !f.err.CompareAndSwap(nil, fe) {
		return f.err.Load()
	}
	close(f.done)
	f.log.Error("metadata store failed: writes are refused from now on; the process must restart",
		append([]any{"err", err}, attrs...)...)
	return fe
}

// get returns the failure, or nil (an untyped nil) while there is none.
func (f *failure) get() error {
	if fe := f.err.Load(); fe != nil {
		return fe
	}
	return nil
}

// Err returns nil while the store works. Once its engine has failed — a
// write or sync of one of its files failed (a full disk, an I/O error), or
// the engine reported a state it cannot continue from — Err returns a
// *FailedError, for good: every later write fails with it at once, without
// reaching the engine, while reads go on for as long as the engine answers
// them.
//
// A failed engine can be neither closed nor reopened safely in this
// process (it may hold its own locks forever), so the process should stop:
// every write that was acknowledged is in the engine's log, and the next
// Open recovers it (docs/design/0010-fatal-storage-errors.md). Err costs one
// atomic load.
func (db *DB) Err() error { return db.fail.get() }

// Failed returns a channel that is closed when the store fails (when Err
// starts returning an error).
func (db *DB) Failed() <-chan struct{} { return db.fail.done }

// tableProbe holds the one key readiness probes write (see ProbeWrite). It
// sorts after every other table, outside every scan.
const tableProbe = 'z'

// probeKey is the key ProbeWrite sets.
var probeKey = []byte{tableProbe}

// ProbeWrite commits a tiny write, always synced (whatever Config.Sync
// says), to a reserved key: it succeeds only if the store can still make a
// write durable. Readiness checks call it; they are rate-limited, since
// each call costs a log write and an fsync. It returns the store's failure,
// without writing, once there is one.
func (db *DB) ProbeWrite(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b := db.kv.newBatch()
	defer b.close()
	b.set(probeKey, nil)
	if err := b.commit(true); err != nil {
		return fmt.Errorf("meta: probe write: %w", err)
	}
	return nil
}
