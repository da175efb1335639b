// Package memblob is an in-memory blob.Store, for tests and the memory
// backend (-blob.kind=memory). Nothing survives the process.
package memblob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/coffer-s3/coffer/internal/blob"
)

var _ blob.Store = (*Store)(nil)

// Store keeps blobs in a map. Stored slices are never modified: Put installs
// a new slice and Get reads the slice it found, so readers need no copy and
// always see one whole blob. The zero value is not usable; call New.
type Store struct {
	mu    sync.RWMutex      // guards blobs
	blobs map[string][]byte // key → contents; the slices are immutable
}

// New returns an empty Store.
func New() *Store {
	return &Store{blobs: make(map[string][]byte)}
}

// Put reads exactly size bytes from r into a private copy and then installs
// it under key, replacing any previous blob. See blob.Store.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if err := checkKey(key); err != nil {
		return fmt.Errorf("put %q: %w", key, err)
	}
	if size < 0 && size != blob.SizeUnknown {
		return fmt.Errorf("put %s: negative size %d: %w", key, size, blob.ErrSize)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	var data []byte
	var err error
	if size == blob.SizeUnknown {
		data, err = io.ReadAll(r)
	} else {
		data, err = readExactly(r, size)
	}
	if err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	// The reader may have blocked for long; a caller that gave up meanwhile
	// must not find the blob stored.
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	s.mu.Lock()
	s.blobs[key] = data
	s.mu.Unlock()
	return nil
}

// readExactly returns the size bytes r yields, or an error wrapping
// blob.ErrSize if it yields fewer or more. Up to 64 MiB is allocated at
// once, which reads a typical block with one allocation and no copy; past
// that the buffer grows with what r actually delivers, so a false size from
// a client cannot make the store allocate it.
func readExactly(r io.Reader, size int64) ([]byte, error) {
	const initial = 64 << 20
	buf := make([]byte, 0, min(size, initial))
	for int64(len(buf)) < size {
		if len(buf) == cap(buf) {
			// Double, but never past size.
			buf = slices.Grow(buf, int(min(size-int64(len(buf)), int64(cap(buf)))))
		}
		end := min(int64(cap(buf)), size)
		n, err := r.Read(buf[len(buf):end])
		buf = buf[:len(buf)+n]
		if err == io.EOF && int64(len(buf)) < size {
			return nil, fmt.Errorf("read %d of %d bytes: %w", len(buf), size, blob.ErrSize)
		}
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("read body: %w", err)
		}
	}
	var one [1]byte
	switch n, err := io.ReadFull(r, one[:]); {
	case n > 0:
		return nil, fmt.Errorf("body longer than %d bytes: %w", size, blob.ErrSize)
	case err != io.EOF:
		return nil, fmt.Errorf("read body: %w", err)
	}
	return buf, nil
}

// Get returns a reader over the stored slice, without copying. See
// blob.Store.
func (s *Store) Get(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	if err := checkKey(key); err != nil {
		return nil, fmt.Errorf("get %q: %w", key, err)
	}
	if off < 0 {
		return nil, fmt.Errorf("get %s: negative offset %d", key, off)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	s.mu.RLock()
	data, ok := s.blobs[key]
	s.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("get %s: %w", key, blob.ErrNotFound)
	}
	off = min(off, int64(len(data)))
	end := int64(len(data))
	if n >= 0 && n < end-off {
		end = off + n
	}
	return io.NopCloser(bytes.NewReader(data[off:end])), nil
}

// Delete removes key. See blob.Store.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return fmt.Errorf("delete %q: %w", key, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	s.mu.Lock()
	delete(s.blobs, key)
	s.mu.Unlock()
	return nil
}

// List calls fn for every key with the given prefix. It works on a snapshot
// of the keys taken under the lock, so fn may call the Store. See
// blob.Store.
func (s *Store) List(ctx context.Context, prefix string, fn func(key string) error) error {
	s.mu.RLock()
	var keys []string
	for k := range s.blobs {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	s.mu.RUnlock()
	for i, k := range keys {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("list %q: %w", prefix, err)
			}
		}
		if err := fn(k); err != nil {
			return err
		}
	}
	return nil
}

// checkKey enforces the key syntax of blob.Store's contract, so that tests
// against memblob catch keys fsblob would refuse. It duplicates
// fsblob.checkKey; both could move to package blob.
func checkKey(key string) error {
	if len(key) == 0 || len(key) > 200 {
		return errors.New("invalid key: length must be 1 to 200 bytes")
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
			return fmt.Errorf("invalid key: empty or %q path segment", ".")
		}
	}
	return nil
}
