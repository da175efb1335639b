package fsblob

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/coffer-s3/coffer/internal/blob"
)

// Get opens key's file and returns a *Reader over n bytes at off (n < 0
// means to the end), clamped to the blob's size. See blob.Store.
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
	if s.readers != nil {
		// Counted before the open, so that Delete, which checks the
		// count and moves the file in one step, never keeps for reuse
		// a file that this Reader has open.
		s.readers.inc(key)
	}
	r, err := s.open(key, off, n)
	if err != nil {
		if s.readers != nil {
			s.readers.dec(key)
		}
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	return r, nil
}

// open opens key's file for Get.
func (s *Store) open(key string, off, n int64) (*Reader, error) {
	dir, name := splitKey(key)
	d, err := s.dir(dir)
	if isNotExist(err) {
		return nil, blob.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	f, err := d.root.Open(name)
	d.done()
	if isNotExist(err) {
		return nil, blob.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		// A directory on other keys' paths, not a blob.
		f.Close()
		return nil, blob.ErrNotFound
	}
	size := fi.Size()
	off = min(off, size)
	if n < 0 || n > size-off {
		n = size - off
	}
	// A file that may be rewritten in place once this Reader is closed
	// is copied, never sent with sendfile (see reuseMax).
	copyOnly := s.reusable(size)
	return &Reader{f: f, off: off, end: off + n, bufs: &s.bufs, copyOnly: copyOnly, readers: s.readers, key: key}, nil
}

// Reader reads a byte range of one blob file; Get returns it as an
// io.ReadCloser. Blobs are immutable and the open file pins the contents,
// so a Reader sees the blob as it was when Get opened it even if the key is
// overwritten or deleted meanwhile. A Reader is not safe for concurrent
// use.
//
// Reader implements io.WriterTo: io.Copy(dst, r) hands dst's ReadFrom the
// *os.File itself, limited to the range, which lets an http.ResponseWriter
// or *net.TCPConn use sendfile(2).
type Reader struct {
	f    *os.File
	off  int64      // next byte to read
	end  int64      // end of the range
	bufs *sync.Pool // the Store's copy buffers
	// copyOnly makes WriteTo copy through a buffer even into an
	// io.ReaderFrom: the file may be rewritten in place after Close.
	copyOnly bool

	readers *readerCounts // the Store's, with reuse on: Close uncounts the reader of key
	key     string
}

// Read reads from the range with pread, leaving the file offset alone.
func (r *Reader) Read(p []byte) (int, error) {
	if r.off >= r.end {
		return 0, io.EOF
	}
	if rem := r.end - r.off; int64(len(p)) > rem {
		p = p[:rem]
	}
	n, err := r.f.ReadAt(p, r.off)
	r.off += int64(n)
	if err == io.EOF && n > 0 {
		err = nil // report EOF on the next call, as io.Reader prefers
	}
	return n, err
}

// WriteTo writes the rest of the range to w. If w is an io.ReaderFrom it
// gets an io.LimitedReader over the *os.File, positioned at the range, so it
// can use sendfile(2) or copy_file_range(2); otherwise, and for a file kept
// for reuse when freed (see reuseMax), the bytes go through one of the
// Store's pooled buffers.
func (r *Reader) WriteTo(w io.Writer) (int64, error) {
	if r.off >= r.end {
		return 0, nil
	}
	if _, err := r.f.Seek(r.off, io.SeekStart); err != nil {
		return 0, err
	}
	lr := &io.LimitedReader{R: r.f, N: r.end - r.off}
	var (
		n   int64
		err error
	)
	if rf, ok := w.(io.ReaderFrom); ok && !r.copyOnly {
		n, err = rf.ReadFrom(lr)
	} else {
		bufp := r.bufs.Get().(*[]byte)
		// Only Write, so that CopyBuffer cannot take w's ReadFrom.
		n, err = io.CopyBuffer(struct{ io.Writer }{w}, lr, *bufp)
		r.bufs.Put(bufp)
	}
	r.off += n
	if err == nil && r.off < r.end {
		// The file is shorter than when Get measured it: it was
		// truncated behind the store's back.
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// Close closes the file.
func (r *Reader) Close() error {
	err := r.f.Close()
	if r.readers != nil {
		r.readers.dec(r.key)
		r.readers = nil
	}
	return err
}
