package audit

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"syscall"
	"testing"
)

// TestBrokenConn: only errors of a connection that broke before an
// answer (which a second try on a fresh connection may cure) count; a
// statement the database refused, or a timeout, does not.
func TestBrokenConn(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{io.ErrUnexpectedEOF, true},
		{fmt.Errorf("audit: write 4 events: %w", io.ErrUnexpectedEOF), true},
		{driver.ErrBadConn, true},
		{&wrapped{syscall.ECONNRESET}, true},
		{syscall.EPIPE, true},
		{errors.New(`ERROR: relation "coffer_audit" does not exist (SQLSTATE 42P01)`), false},
		{syscall.ETIMEDOUT, false},
		{io.EOF, false},
	} {
		if got := brokenConn(tc.err); got != tc.want {
			t.Errorf("brokenConn(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

type wrapped struct{ err error }

func (w *wrapped) Error() string { return "read tcp: " + w.err.Error() }
func (w *wrapped) Unwrap() error { return w.err }
