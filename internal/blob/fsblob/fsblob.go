package fsblob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/coffer-s3/coffer/internal/blob"
)

var _ blob.Store = (*Store)(nil)

// Config configures a Store.
type Config struct {
	// Root is the directory that holds the blobs. Open creates it if it
	// does not exist.
	Root string
	// Sync makes every Put durable before it returns: the file and every
	// directory entry on its path are fsynced (see the package doc). Without
	// it a Put survives a process crash but not a power loss.
	Sync bool
}

// Validate reports whether c can be used to open a Store.
func (c Config) Validate() error {
	if c.Root == "" {
		return errors.New("fsblob: root directory not set")
	}
	return nil
}

const (
	// copyBufSize is the size of Put's pooled copy buffers: large enough
	// that a 1 MiB blob takes four read/write round trips.
	copyBufSize = 256 << 10
	// maxDurableDirs bounds the set of directories known to be durable;
	// past it the set is cleared, which costs some repeated fsyncs.
	maxDurableDirs = 1 << 16
	dirPerm        = 0o700
	filePerm       = 0o600
)

// Store is a blob.Store on a local filesystem. It is safe for concurrent
// use. Open makes one; Close releases it.
type Store struct {
	root      *os.Root
	sync      bool
	tmpPrefix string        // start of this Store's temporary file names
	tmpSeq    atomic.Uint64 // makes temporary file names unique
	bufs      sync.Pool     // *[]byte of copyBufSize, for Put and Reader.WriteTo

	// The durability steps of Put, replaced by tests that count them or
	// stop the process between them. syncFile makes a file's data durable
	// ((*os.File).Sync); syncDir makes a directory's entries durable,
	// sharing fsyncs among concurrent callers (syncDirGrouped); dirFsync
	// is the one fsync of a directory that syncDirGrouped shares (fsyncDir).
	syncFile  func(f *os.File) error
	syncDir   func(dir string) error
	dirFsync  func(dir string) error
	dirFsyncs atomic.Int64 // directory fsyncs issued, for benchmarks

	mu      sync.Mutex            // guards syncers, durable and dirSyncer.refs
	syncers map[string]*dirSyncer // directory → its syncer, while in use
	durable map[string]struct{}   // directories whose entry, and their ancestors', are durable
}

// Open opens the store rooted at cfg.Root, creating the directory if needed,
// and removes any temporary files a crash left behind.
func Open(cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Root, dirPerm); err != nil {
		return nil, fmt.Errorf("open blob store: %w", err)
	}
	root, err := os.OpenRoot(cfg.Root)
	if err != nil {
		return nil, fmt.Errorf("open blob store: %w", err)
	}
	s := &Store{
		root:      root,
		sync:      cfg.Sync,
		tmpPrefix: strconv.FormatUint(rand.Uint64(), 36) + "-",
		syncers:   make(map[string]*dirSyncer),
		durable:   make(map[string]struct{}),
	}
	s.bufs.New = func() any {
		b := make([]byte, copyBufSize)
		return &b
	}
	s.syncFile = (*os.File).Sync
	s.syncDir = s.syncDirGrouped
	s.dirFsync = s.fsyncDir
	if err := s.init(cfg.Root); err != nil {
		root.Close()
		return nil, fmt.Errorf("open blob store %s: %w", cfg.Root, err)
	}
	return s, nil
}

// init creates .tmp, empties it, and with Sync makes the root durable.
func (s *Store) init(rootPath string) error {
	if err := s.root.Mkdir(tmpDir, dirPerm); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	d, err := s.root.Open(tmpDir)
	if err != nil {
		return err
	}
	defer d.Close()
	for {
		ents, err := d.ReadDir(256)
		for _, e := range ents {
			if err := s.root.RemoveAll(tmpDir + "/" + e.Name()); err != nil {
				return fmt.Errorf("remove leftover temporary file: %w", err)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if !s.sync {
		return nil
	}
	// The root may have just been created: make its entry durable too.
	if err := fsyncPath(filepath.Dir(filepath.Clean(rootPath))); err != nil {
		return err
	}
	return s.fsyncDir(".")
}

// fsyncPath fsyncs the directory at path p, outside the root.
func fsyncPath(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Close releases the root directory. Readers returned by Get stay usable
// until closed.
func (s *Store) Close() error {
	return s.root.Close()
}

// Put stores exactly size bytes from r under key, following the protocol
// in the package doc. See blob.Store.
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
	if err := s.put(ctx, key, r, size); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	return nil
}

func (s *Store) put(ctx context.Context, key string, r io.Reader, size int64) (err error) {
	f, tmp, err := s.createTemp()
	if err != nil {
		return err
	}
	closed := false
	defer func() {
		if err == nil {
			return
		}
		if !closed {
			f.Close()
		}
		// After a successful rename this fails with ErrNotExist: harmless.
		s.root.Remove(tmp)
	}()

	if err := s.copyExactly(ctx, f, r, size); err != nil {
		return err
	}
	if s.sync {
		if err := s.syncFile(f); err != nil {
			return err
		}
	}
	closed = true
	if err := f.Close(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.rename(tmp, key); err != nil {
		return err
	}
	if s.sync {
		if err := s.syncPath(key); err != nil {
			// The blob is visible but may not survive a crash; a
			// failed Put must not leave it behind.
			s.root.Remove(key)
			return err
		}
	}
	return nil
}

// createTemp creates a new, empty temporary file.
func (s *Store) createTemp() (*os.File, string, error) {
	for {
		name := tmpDir + "/" + s.tmpPrefix + strconv.FormatUint(s.tmpSeq.Add(1), 36)
		f, err := s.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, filePerm)
		if errors.Is(err, fs.ErrExist) {
			continue // a file left by someone else; take the next number
		}
		return f, name, err
	}
}

// copyExactly copies r to f and checks that r held exactly size bytes
// (any number for blob.SizeUnknown).
func (s *Store) copyExactly(ctx context.Context, f *os.File, r io.Reader, size int64) error {
	bufp := s.bufs.Get().(*[]byte)
	defer s.bufs.Put(bufp)
	cr := &ctxReader{ctx: ctx, r: r}
	// writerOnly hides f's ReadFrom, which would bypass the pooled buffer
	// and allocate its own for a reader it cannot splice from.
	if size == blob.SizeUnknown {
		_, err := io.CopyBuffer(writerOnly{f}, cr, *bufp)
		return err
	}
	n, err := io.CopyBuffer(writerOnly{f}, io.LimitReader(cr, size), *bufp)
	if err != nil {
		return err
	}
	if n < size {
		return fmt.Errorf("body has %d of %d bytes: %w", n, size, blob.ErrSize)
	}
	var one [1]byte
	switch m, err := io.ReadFull(cr, one[:]); {
	case m > 0:
		return fmt.Errorf("body longer than %d bytes: %w", size, blob.ErrSize)
	case err != io.EOF:
		return err
	}
	return nil
}

// rename moves tmp to key, creating key's parent directories if needed.
func (s *Store) rename(tmp, key string) error {
	err := s.root.Rename(tmp, key)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	dir := path.Dir(key)
	if dir == "." {
		return err
	}
	if err := s.root.MkdirAll(dir, dirPerm); err != nil {
		return err
	}
	return s.root.Rename(tmp, key)
}

// syncPath makes the rename to key durable: it syncs key's directory, and
// for every directory on the path not yet known durable, that directory's
// parent, which holds its entry.
func (s *Store) syncPath(key string) error {
	dir := path.Dir(key)
	if err := s.syncDir(dir); err != nil {
		return err
	}
	var fresh []string
	s.mu.Lock()
	for d := dir; d != "."; d = path.Dir(d) {
		if _, ok := s.durable[d]; ok {
			break // and so are its ancestors
		}
		fresh = append(fresh, d)
	}
	s.mu.Unlock()
	for _, d := range fresh {
		if err := s.syncDir(path.Dir(d)); err != nil {
			return err
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	s.mu.Lock()
	if len(s.durable)+len(fresh) > maxDurableDirs {
		clear(s.durable)
	}
	for _, d := range fresh {
		s.durable[d] = struct{}{}
	}
	s.mu.Unlock()
	return nil
}

// syncDirGrouped fsyncs dir through its group-commit syncer.
func (s *Store) syncDirGrouped(dir string) error {
	s.mu.Lock()
	d := s.syncers[dir]
	if d == nil {
		d = &dirSyncer{}
		s.syncers[dir] = d
	}
	d.refs++
	s.mu.Unlock()

	err := d.sync(func() error { return s.dirFsync(dir) })

	s.mu.Lock()
	if d.refs--; d.refs == 0 {
		delete(s.syncers, dir)
	}
	s.mu.Unlock()
	return err
}

// fsyncDir fsyncs the directory dir under the root.
func (s *Store) fsyncDir(dir string) error {
	s.dirFsyncs.Add(1)
	f, err := s.root.Open(dir)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Delete removes key's file. It does not fsync (see the package doc). See
// blob.Store.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return fmt.Errorf("delete %q: %w", key, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	// Lstat first so that a key naming a directory (another key's parent)
	// is absent as a blob rather than a directory to remove.
	fi, err := s.root.Lstat(key)
	if err == nil && fi.IsDir() {
		return nil
	}
	if err == nil {
		err = s.root.Remove(key)
	}
	if err != nil && !isNotExist(err) {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	return nil
}

// isNotExist reports whether err means that a path does not exist,
// including because one of its parents is a file.
func isNotExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// ctxReader fails reads once ctx is done, so that a canceled Put stops
// copying, and labels the reader's errors.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := c.r.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("read body: %w", err)
	}
	return n, err
}

// writerOnly hides every method but Write.
type writerOnly struct{ io.Writer }
