// Package blob defines Store, the seam between the object service and the
// bytes of large objects. Implementations live in subpackages: fsblob (the
// default, files on a local filesystem), memblob (tests and the memory
// backend) and s3blob (gateway mode). blobtest holds the
// conformance suite every implementation passes.
package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
)

// ErrNotFound is returned by Get when the key does not exist.
var ErrNotFound = errors.New("blob: not found")

// ErrSize is returned by Put when r yields fewer or more than size bytes.
// Nothing is stored in that case.
var ErrSize = errors.New("blob: size mismatch")

// ErrUnavailable is in the chain of an error of a store whose backing
// service (the upstream of s3blob) cannot be reached or answers with a
// server error for now: the same call may succeed later, with nothing to
// change on Coffer's side. A Put that returns it stored nothing the caller
// may rely on (a blob it may have left is garbage for GC). Check with
// errors.Is; an *UnavailableError says what kind of failure it was.
var ErrUnavailable = errors.New("blob: store unavailable")

// UnavailableError is an error of a store that cannot reach its backing
// service. It matches ErrUnavailable.
type UnavailableError struct {
	// Kind is one word from a small fixed set naming the failure, safe
	// to show without authentication: "connect" (refused or unroutable),
	// "dns", "timeout" (no answer or no progress in time), "reset" (the
	// connection broke), "server_error" (a 5xx), "throttled" (503
	// SlowDown, 429).
	Kind string
	Err  error
}

func (e *UnavailableError) Error() string {
	return "blob: store unavailable (" + e.Kind + "): " + e.Err.Error()
}

// Unwrap returns the underlying error.
func (e *UnavailableError) Unwrap() error { return e.Err }

// Is reports whether target is ErrUnavailable.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// Store is a flat namespace of immutable blobs addressed by key. Keys are
// made by the object service: printable ASCII, [0-9a-z/._-], at most 200
// bytes, no leading or trailing slash and no "..". Blobs are written once and
// never modified; a Put to an existing key may replace it.
//
// All methods are safe for concurrent use.
type Store interface {
	// Put stores exactly size bytes from r under key, or, with size
	// SizeUnknown, whatever r yields up to its end. The blob becomes
	// visible, and durable if the store is configured to sync, only when Put
	// returns nil. If r yields a different number of bytes, Put returns an
	// error wrapping ErrSize and stores nothing; if r returns an error, Put
	// returns it (wrapped) and stores nothing.
	Put(ctx context.Context, key string, r io.Reader, size int64) error

	// Get returns a reader for n bytes at offset off (n < 0 means to the
	// end). It returns ErrNotFound if key is absent. The caller closes the
	// reader. Reading past the blob's end yields io.EOF early; callers that
	// know the size ask only for what exists.
	Get(ctx context.Context, key string, off, n int64) (io.ReadCloser, error)

	// Delete removes key. Deleting an absent key is not an error.
	Delete(ctx context.Context, key string) error

	// List calls fn for every key with the given prefix, in no particular
	// order. If fn returns an error, List stops and returns it. Keys written
	// or deleted during List may or may not be seen; fn may Delete the key
	// it is given (the orphan sweep does). Used by GC and repair.
	List(ctx context.Context, prefix string, fn func(key string) error) error
}

// SizeUnknown, as the size of a Put, stores whatever the reader yields up to
// its end: a browser form upload (POST) learns the length of its file only
// at the closing boundary. A store that must send a length up front
// (s3blob) holds such a blob in memory, so the caller bounds the reader
// (the object service passes at most one block).
const SizeUnknown = -1

// MaxKeyLen is the longest key a Store accepts.
const MaxKeyLen = 200

// CheckKey reports whether key has the syntax every Store accepts (see
// Store): 1 to MaxKeyLen bytes of [0-9a-z/._-], no leading or trailing
// slash, no "..", no empty or "." segment. Stores may refuse more.
func CheckKey(key string) error {
	if len(key) == 0 || len(key) > MaxKeyLen {
		return fmt.Errorf("invalid key: length %d not in 1 to %d", len(key), MaxKeyLen)
	}
	for i := range len(key) {
		c := key[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '/' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("invalid key: byte %#02x not in [0-9a-z/._-]", c)
		}
	}
	if key[0] == '/' || key[len(key)-1] == '/' {
		return errors.New("invalid key: leading or trailing slash")
	}
	if strings.Contains(key, "..") {
		return errors.New(`invalid key: contains ".."`)
	}
	for seg := range strings.SplitSeq(key, "/") {
		if seg == "" || seg == "." {
			return errors.New(`invalid key: empty or "." path segment`)
		}
	}
	return nil
}
