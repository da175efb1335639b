package fsblob

import (
	"cmp"
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
	"time"
	"unsafe"

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
	// Reuse is the most bytes of freed blob files kept for reuse by Puts
	// of blobs of the same size class instead of being deleted (see
	// "Reuse" in the package doc), and at most 5 % of the filesystem's
	// size; 0 turns reuse off.
	Reuse int64
	// ReuseIdle is how long a kept file waits for a Put before it is
	// deleted after all; 0 means DefaultReuseIdle.
	ReuseIdle time.Duration
	// Spares is the number of empty files a background goroutine keeps
	// ready in .tmp for Puts that find no file to reuse (see "Spare
	// files" in the package doc); 0 turns them off. DefaultSpares is what
	// the server uses.
	Spares int
}

// DefaultSpares is the number of spare files the server keeps ready: more
// than a burst of new objects from a few dozen clients needs before the
// background goroutine, which creates one in well under a millisecond,
// catches up.
const DefaultSpares = 16

// Validate reports whether c can be used to open a Store.
func (c Config) Validate() error {
	if c.Root == "" {
		return errors.New("fsblob: root directory not set")
	}
	if c.Reuse < 0 || c.ReuseIdle < 0 {
		return fmt.Errorf("fsblob: negative reuse %d bytes / %v", c.Reuse, c.ReuseIdle)
	}
	if c.Spares < 0 {
		return fmt.Errorf("fsblob: negative spares %d", c.Spares)
	}
	return nil
}

const (
	// copyBufSize is the size of the pooled copy buffers of Reader.WriteTo
	// and of Puts of blobs up to that size.
	copyBufSize = 256 << 10
	// writeBufSize is the size of the pooled, aligned buffers of Puts
	// with direct I/O: each is filled from the body and written whole.
	writeBufSize = 1 << 20
	// directMin is the least size of a blob written with direct I/O (with
	// Sync only). Smaller blobs, such as those of the mixed workload, go
	// through the page cache, where a GET soon after finds them.
	directMin = 1 << 20
	// maxReuseFiles bounds the number of freed files kept for reuse, and
	// reuseShare their bytes to this fraction of the filesystem (1/20:
	// 5 %).
	maxReuseFiles = 1 << 14
	reuseShare    = 20
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
	lock      *os.File // holds the root's lock (lockRoot) until Close; nil where there is none
	sync      bool
	tmpPrefix string        // start of this Store's temporary file names
	tmpSeq    atomic.Uint64 // makes temporary file names unique
	bufs      sync.Pool     // *[]byte of copyBufSize, for small Puts and Reader.WriteTo
	writeBufs sync.Pool     // *[]byte of writeBufSize aligned to directAlign, for Puts with direct I/O
	noDirect  atomic.Bool   // the filesystem refused direct I/O: Puts use the page cache

	// The durability steps of Put, replaced by tests that count them or
	// stop the process between them. syncFile makes a file's data durable
	// ((*os.File).Sync); syncDir makes a directory's entries durable,
	// sharing fsyncs among concurrent callers (syncDirGrouped); dirFsync
	// is the one fsync of a directory that syncDirGrouped shares (fsyncDir).
	syncFile  func(f *os.File) error
	syncDir   func(dir string) error
	dirFsync  func(dir string) error
	dirFsyncs atomic.Int64 // directory fsyncs issued, for benchmarks

	// Reuse of freed files; nil when off.
	pool     *pool
	reuseMin int64            // smallest blob kept for reuse (defaultReuseMin; tests lower it)
	readers  *readerCounts    // open Readers per key
	clock    func() time.Time // time.Now; tests move it
	stopLoop chan struct{}    // closed by Close: ends expireLoop

	// Spare files; nil when off.
	spares     chan spare
	stopSpares chan struct{} // closed by Close: ends spareLoop
	sparesDone chan struct{} // closed by spareLoop when it has removed the spares

	dirs dirCache // open directories under the root

	claims blob.Claims // the claim Claim made or found, for CheckClaim

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
	// Before anything is removed from .tmp: it may be another process's.
	lock, err := lockRoot(root)
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("open blob store %s: %w", cfg.Root, err)
	}
	s := &Store{
		root:      root,
		lock:      lock,
		sync:      cfg.Sync,
		tmpPrefix: strconv.FormatUint(rand.Uint64(), 36) + "-",
		syncers:   make(map[string]*dirSyncer),
		durable:   make(map[string]struct{}),
		clock:     time.Now,
	}
	s.bufs.New = func() any {
		b := make([]byte, copyBufSize)
		return &b
	}
	s.writeBufs.New = func() any {
		b := alignedBuffer(writeBufSize)
		return &b
	}
	s.syncFile = syncData
	s.syncDir = s.syncDirGrouped
	s.dirFsync = s.fsyncDir
	if err := s.init(cfg.Root); err != nil {
		root.Close()
		s.unlock()
		return nil, fmt.Errorf("open blob store %s: %w", cfg.Root, err)
	}
	if cfg.Reuse > 0 {
		idle := cmp.Or(cfg.ReuseIdle, DefaultReuseIdle)
		maxBytes := cfg.Reuse
		if size := fsSize(cfg.Root); size > 0 {
			maxBytes = min(maxBytes, size/reuseShare)
		}
		s.pool = &pool{maxBytes: maxBytes, maxFiles: maxReuseFiles, byClass: make(map[int64][]*freeFile)}
		s.readers = newReaderCounts()
		s.reuseMin = defaultReuseMin
		s.stopLoop = make(chan struct{})
		go s.expireLoop(idle, s.stopLoop)
	}
	if cfg.Spares > 0 {
		// The loop holds one more, ready to send.
		s.spares = make(chan spare, cfg.Spares-1)
		s.stopSpares, s.sparesDone = make(chan struct{}), make(chan struct{})
		go s.spareLoop(s.newSpare, spareRetry, s.stopSpares, s.sparesDone)
	}
	return s, nil
}

// init creates .tmp, empties it (of files being written and freed files
// kept for reuse when the store was last open), and with Sync makes the
// root durable.
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

// Close releases the root directory and its lock. Readers returned by Get stay usable
// until closed. Freed files kept for reuse stay in .tmp until the next
// Open.
func (s *Store) Close() error {
	if s.stopLoop != nil {
		close(s.stopLoop)
		s.stopLoop = nil
	}
	if s.stopSpares != nil {
		close(s.stopSpares)
		<-s.sparesDone
		s.stopSpares = nil
	}
	s.closeDirs()
	err := s.root.Close()
	s.unlock()
	return err
}

// unlock releases the root's lock (lockRoot).
func (s *Store) unlock() {
	if s.lock != nil {
		s.lock.Close()
	}
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
	direct := oDirect != 0 && s.sync && (size >= directMin || size == blob.SizeUnknown) && !s.noDirect.Load()
	tmpd, err := s.dir(tmpDir)
	if err != nil {
		return err
	}
	defer tmpd.done()
	f, kept, direct := s.openKept(tmpd, size, direct)
	var tmp string // name in .tmp
	if kept != nil {
		tmp = kept.name
	} else if sp, ok := s.takeSpare(direct); ok {
		f, tmp = sp.f, sp.name
	} else if f, tmp, direct, err = s.createTemp(tmpd, direct); err != nil {
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
		tmpd.root.Remove(tmp)
	}()

	if err := s.copyExactly(ctx, f, r, size, direct); err != nil {
		return err
	}
	if kept != nil && kept.size > size {
		// Same allocation (size class), fewer bytes: no extent is freed.
		if err := f.Truncate(size); err != nil {
			return err
		}
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
	dir, name := splitKey(key)
	d, err := s.rename(tmpd, tmp, dir, name)
	if err != nil {
		return err
	}
	defer d.done()
	if s.sync {
		if err := s.syncPath(dir); err != nil {
			// The blob is visible but may not survive a crash; a
			// failed Put must not leave it behind.
			d.root.Remove(name)
			return err
		}
	}
	return nil
}

// createTemp creates a new, empty temporary file in tmpd (.tmp), for
// direct I/O if direct is set and the filesystem supports it, and returns
// it with its name there and whether it is open for direct I/O.
func (s *Store) createTemp(tmpd *dirHandle, direct bool) (*os.File, string, bool, error) {
	for {
		name := s.tmpPrefix + strconv.FormatUint(s.tmpSeq.Add(1), 36)
		f, d, err := s.openTmp(tmpd, name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, direct)
		if errors.Is(err, fs.ErrExist) {
			continue // a file left by someone else; take the next number
		}
		return f, name, d, err
	}
}

// openTmp opens name in tmpd (.tmp) with flag, and for direct I/O if
// direct is set. A filesystem that refuses direct I/O (tmpfs and some
// others) is remembered, and the file opened without it; the result says
// which it is.
func (s *Store) openTmp(tmpd *dirHandle, name string, flag int, direct bool) (*os.File, bool, error) {
	if direct {
		f, err := tmpd.root.OpenFile(name, flag|oDirect, filePerm)
		if !errors.Is(err, syscall.EINVAL) {
			return f, true, err
		}
		s.noDirect.Store(true)
	}
	f, err := tmpd.root.OpenFile(name, flag, filePerm)
	return f, false, err
}

// copyExactly copies r to f and checks that r held exactly size bytes
// (any number for blob.SizeUnknown). A file opened for direct I/O gets
// whole aligned buffers filled from r (see fileWriter); any other file
// gets each read as it comes, while it is still in the CPU's cache from
// the hashing the reader did.
func (s *Store) copyExactly(ctx context.Context, f *os.File, r io.Reader, size int64, direct bool) error {
	pool := &s.bufs
	if direct {
		pool = &s.writeBufs
	}
	bufp := pool.Get().(*[]byte)
	defer pool.Put(bufp)
	buf := *bufp
	cr := &ctxReader{ctx: ctx, r: r}
	w := fileWriter{f: f, direct: direct, noDirect: &s.noDirect}
	for {
		want := len(buf)
		if size >= 0 {
			want = int(min(int64(want), size-w.off))
		}
		if want == 0 {
			break
		}
		var n int
		var err error
		if direct {
			n, err = io.ReadFull(cr, buf[:want])
		} else {
			n, err = cr.Read(buf[:want])
		}
		if n > 0 {
			if werr := w.write(buf[:n]); werr != nil {
				return werr
			}
		}
		switch {
		case err == io.EOF || err == io.ErrUnexpectedEOF:
			if size >= 0 && w.off < size {
				return fmt.Errorf("body has %d of %d bytes: %w", w.off, size, blob.ErrSize)
			}
			if size < 0 {
				return nil
			}
		case err != nil:
			return err
		}
	}
	if size < 0 {
		return nil
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

// fileWriter writes a blob to its file. With direct set the file was
// opened for direct I/O (O_DIRECT): writes go from the buffer to the
// device without a copy into the page cache, which on the reference
// machine cost more CPU than any digest of the bytes. Direct writes must
// be whole multiples of directAlign from an aligned buffer; the last,
// shorter write of a blob, and any write the filesystem refuses to do
// directly, turn direct I/O off for the rest of the file and go through
// the page cache. Durability is Put's fsync either way: O_DIRECT alone
// promises nothing about the device's cache or the file's size.
type fileWriter struct {
	f        *os.File
	off      int64 // bytes written
	direct   bool
	noDirect *atomic.Bool // the Store's: set when the filesystem refuses direct writes
}

func (w *fileWriter) write(p []byte) error {
	if w.direct && len(p)%directAlign != 0 {
		if err := w.buffered(); err != nil {
			return err
		}
	}
	n, err := w.f.Write(p)
	if err != nil && w.direct && n == 0 && errors.Is(err, syscall.EINVAL) {
		// A filesystem that opens files for direct I/O but refuses
		// the writes: do them through the page cache, now and later.
		w.noDirect.Store(true)
		if err = w.buffered(); err != nil {
			return err
		}
		n, err = w.f.Write(p)
	}
	w.off += int64(n)
	return err
}

// buffered turns direct I/O off for the rest of the file.
func (w *fileWriter) buffered() error {
	w.direct = false
	return setDirect(w.f, false)
}

// rename moves the file tmp of tmpd (.tmp) to name in dir, creating dir
// and its parents if needed, and returns dir's handle (the caller calls
// done).
func (s *Store) rename(tmpd *dirHandle, tmp, dir, name string) (*dirHandle, error) {
	d, err := s.dir(dir)
	if err != nil && errors.Is(err, fs.ErrNotExist) {
		if err = s.root.MkdirAll(dir, dirPerm); err == nil {
			d, err = s.dir(dir)
		}
	}
	if err != nil {
		return nil, err
	}
	if err := renameAt(tmpd, tmp, d, name); err != nil {
		d.done()
		return nil, err
	}
	return d, nil
}

// syncPath makes a rename into dir durable: it syncs dir, and for every
// directory on the path not yet known durable, that directory's parent,
// which holds its entry.
func (s *Store) syncPath(dir string) error {
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
	d, err := s.dir(dir)
	if err != nil {
		return err
	}
	defer d.done()
	return d.f.Sync()
}

// Delete removes key's file, or with Config.Reuse keeps it for reuse (see
// the package doc). It does not fsync. See blob.Store.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return fmt.Errorf("delete %q: %w", key, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	if err := s.delete(key); err != nil && !isNotExist(err) {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	return nil
}

// delete removes key's file, or keeps it for reuse.
func (s *Store) delete(key string) error {
	dir, name := splitKey(key)
	d, err := s.dir(dir)
	if err != nil {
		return err
	}
	defer d.done()
	// Lstat first so that a key naming a directory (another key's parent)
	// is absent as a blob rather than a directory to remove.
	fi, err := d.root.Lstat(name)
	if err != nil || fi.IsDir() {
		return err
	}
	if linkCount(fi) > 1 {
		// Another name shares the file: only a crash can make one (on
		// a filesystem without a journal, a blob's old name whose
		// removal was not yet written back when the file, reused, got
		// a new key, both counted by fsck). Rewriting it in place would
		// change the other blob: unlink this name only.
		return d.root.Remove(name)
	}
	return s.deleteOrKeep(d, key, name, fi.Size())
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

// alignedBuffer returns n bytes whose address is a multiple of
// directAlign.
func alignedBuffer(n int) []byte {
	b := make([]byte, n+directAlign)
	off := 0
	if r := int(uintptr(unsafe.Pointer(&b[0])) % directAlign); r != 0 {
		off = directAlign - r
	}
	return b[off : off+n : off+n]
}
