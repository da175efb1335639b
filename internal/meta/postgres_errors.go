package meta

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// ErrUnavailable marks an error of a shared engine (PostgreSQL) that could
// not be reached or answer: the server is down, restarting, refusing
// connections or out of them, or the connection broke. Unlike a failure
// of the embedded engine (FailedError), it is transient: the pool
// reconnects, and the same call may succeed later. Check with errors.Is.
var ErrUnavailable = errors.New("meta: metadata store unavailable")

// unavailableError is an error of the engine classified as ErrUnavailable.
type unavailableError struct{ err error }

func (e *unavailableError) Error() string {
	return "meta: metadata store unavailable: " + e.err.Error()
}
func (e *unavailableError) Unwrap() error        { return e.err }
func (e *unavailableError) Is(target error) bool { return target == ErrUnavailable }

// pgErr marks err as ErrUnavailable if it says that PostgreSQL could not
// be reached or did not answer, and returns it unchanged otherwise (nil,
// ErrNotFound, constraint violations, timeouts of a caller's context).
func pgErr(err error) error {
	if err == nil || errors.Is(err, ErrUnavailable) || !pgUnreachable(err) {
		return err
	}
	return &unavailableError{err: err}
}

// pgUnreachable reports whether err means the database is unreachable
// for now rather than that the statement failed.
func pgUnreachable(err error) bool {
	if _, ok := errors.AsType[*pgconn.ConnectError](err); ok {
		return true
	}
	if pe, ok := errors.AsType[*pgconn.PgError](err); ok {
		switch {
		case len(pe.Code) == 5 && pe.Code[:2] == "08": // connection exception
			return true
		case pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03": // admin/crash shutdown, cannot connect now
			return true
		case pe.Code == "53300": // too many connections
			return true
		}
		return false
	}
	if errors.Is(err, context.Canceled) {
		return false
	}
	if _, ok := errors.AsType[net.Error](err); ok {
		return true
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) || pgconn.SafeToRetry(err)
}
