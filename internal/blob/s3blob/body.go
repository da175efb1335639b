package s3blob

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"strconv"
	"sync"

	"github.com/coffer-s3/coffer/internal/blob"
	"github.com/coffer-s3/coffer/internal/checksum"
)

// Errors of a body read outside its attempt. Neither reaches a caller of
// Put: the transport only sees them after Put has chosen its result.
var (
	errBodyClosed = errors.New("s3blob: body read after put returned")
	errStaleRead  = errors.New("s3blob: body read by a superseded attempt")
)

// body is the request body of one Put: exactly size bytes of src, framed
// for the upstream. With a trailer algorithm the framing is the aws-chunked
// encoding the AWS SDKs send with a known length, one chunk and the
// checksum in a trailer:
//
//	<size in hex>\r\n<size bytes>\r\n0\r\n<x-amz-checksum-alg>:<base64>\r\n\r\n
//
// Otherwise the body is the bytes themselves.
//
// The body enforces Put's size contract before the upstream can act on it:
// it reads src no further than size bytes, and before it hands out the
// last of them it checks that src is at its end. A src that is too long
// or too short, fails, or whose Put's context ends makes the read fail
// instead, so the transport aborts the request with at least one byte (and
// the trailer) unsent: an upstream cannot store a body shorter than its
// Content-Length (or decoded length), so nothing is stored.
//
// Each attempt of the request reads through its own handle (attempt). A
// new attempt is possible only while no byte of src has been consumed, and
// it disables the handles of earlier ones, whose transport goroutines may
// still be running. close disables all of them, so that src is never read
// after Put returns.
type body struct {
	ctx     context.Context
	src     io.Reader
	size    int64
	sum     hash.Hash // of the bytes of src; nil with integrity none
	trailer string    // name of the trailer header; "" for a plain body
	head    []byte    // framing before the data
	tailLen int       // length of the framing after the data
	encLen  int64     // length of the framed body

	mu     sync.Mutex // guards the fields below; held while src is read
	gen    uint64     // the current attempt; older handles fail
	pos    int64      // framed bytes handed out in this attempt
	left   int64      // bytes of src not yet read
	tail   []byte     // framing after the data, once src is checked
	err    error      // the first error a read returned; sticky
	closed bool
}

// newBody returns the body of a Put of size bytes from src.
func newBody(ctx context.Context, src io.Reader, size int64, m integrity) *body {
	b := &body{ctx: ctx, src: src, size: size, left: size, encLen: size}
	switch {
	case m.alg != "":
		b.sum = m.alg.New()
		if size > 0 {
			b.trailer = m.alg.Header()
			b.head = []byte(strconv.FormatInt(size, 16) + "\r\n")
			// \r\n 0\r\n name:value\r\n \r\n
			b.tailLen = 2 + 3 + len(b.trailer) + 1 + base64Len(m.alg.Size()) + 2 + 2
			b.encLen = int64(len(b.head)) + size + int64(b.tailLen)
		}
	case m.md5:
		b.sum = md5.New()
	}
	return b
}

// base64Len is the length of the padded standard base64 encoding of n
// bytes.
func base64Len(n int) int { return (n + 2) / 3 * 4 }

// attempt returns the handle a new attempt reads the body through. It
// fails if an earlier attempt consumed bytes of src, which cannot be read
// again.
func (b *body) attempt() (*attemptBody, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.left != b.size {
		return nil, fmt.Errorf("cannot resend: %d bytes of the body were already read", b.size-b.left)
	}
	if b.err != nil {
		return nil, b.err
	}
	b.gen++
	b.pos = 0
	return &attemptBody{b: b, gen: b.gen}, nil
}

// consumed reports whether bytes of src were read, which rules out another
// attempt.
func (b *body) consumed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.left != b.size
}

// delivered reports whether the current attempt handed out the whole
// framed body: the upstream may have stored it.
func (b *body) delivered() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err == nil && b.pos == b.encLen
}

// failure returns the error a read of the body returned, if any: the
// precise reason a Put failed (ErrSize, src's error, the context's).
func (b *body) failure() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// close makes every later read fail. It waits for a read in progress.
func (b *body) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
}

// checkEmpty checks, for a Put of zero bytes, that src is at its end. Such
// a Put sends no body, so the check cannot wait for the transport.
func (b *body) checkEmpty() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.ctx.Err(); err != nil {
		b.err = err
		return err
	}
	if err := b.checkEOF(); err != nil {
		b.err = err
		return err
	}
	return nil
}

// digest returns the checksum of src's bytes, base64 for a flexible
// checksum and hex for MD5. It is complete once src was read to its end.
func (b *body) digest(m integrity) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case m.alg != "":
		return checksum.Encode(b.sum.Sum(nil))
	case m.md5:
		return hex.EncodeToString(b.sum.Sum(nil))
	}
	return ""
}

func (b *body) read(gen uint64, p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.closed:
		return 0, errBodyClosed
	case gen != b.gen:
		return 0, errStaleRead
	case b.err != nil:
		return 0, b.err
	case b.pos == b.encLen && b.left == 0:
		// All sent: the upstream may store it whatever happens now, so
		// a context ending after this is no failure of the body (Put
		// then cleans up as after any unanswered request).
		return 0, io.EOF
	}
	if err := b.ctx.Err(); err != nil {
		b.err = err
		return 0, err
	}
	n, err := b.readLocked(p)
	b.pos += int64(n)
	if err != nil && err != io.EOF {
		b.err = err
	}
	return n, err
}

func (b *body) readLocked(p []byte) (int, error) {
	if h := int64(len(b.head)); b.pos < h {
		return copy(p, b.head[b.pos:]), nil
	}
	if b.left > 0 {
		return b.readSrc(p)
	}
	if b.tail == nil && b.trailer != "" {
		b.tail = b.makeTail()
	}
	off := b.pos - int64(len(b.head)) - b.size
	if off >= int64(len(b.tail)) {
		return 0, io.EOF
	}
	return copy(p, b.tail[off:]), nil
}

// readSrc reads the next bytes of src into p, holding back the last ones
// until src is known to end there.
func (b *body) readSrc(p []byte) (int, error) {
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.src.Read(p)
	if n < 0 || n > len(p) {
		return 0, fmt.Errorf("read body: reader returned %d for a %d-byte buffer", n, len(p))
	}
	b.left -= int64(n)
	if b.sum != nil {
		b.sum.Write(p[:n])
	}
	// A context that ended while src was read (src may be what ended it)
	// must keep these bytes from the upstream too.
	if err := b.ctx.Err(); err != nil {
		return 0, err
	}
	switch {
	case err == io.EOF && b.left > 0:
		return 0, fmt.Errorf("body has %d of %d bytes: %w", b.size-b.left, b.size, blob.ErrSize)
	case err != nil && err != io.EOF:
		return 0, fmt.Errorf("read body: %w", err)
	case b.left == 0 && err == nil:
		// The last bytes: hand them out only if src ends here.
		if err := b.checkEOF(); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// maxEmptyReads bounds the reads returning (0, nil) checkEOF tolerates, as
// io.ReadFull's callers bound theirs with io.ErrNoProgress.
const maxEmptyReads = 100

// checkEOF checks that src has no byte left.
func (b *body) checkEOF() error {
	var one [1]byte
	for range maxEmptyReads {
		n, err := b.src.Read(one[:])
		switch {
		case n > 0:
			return fmt.Errorf("body longer than %d bytes: %w", b.size, blob.ErrSize)
		case err == io.EOF:
			return nil
		case err != nil:
			return fmt.Errorf("read body: %w", err)
		}
	}
	return fmt.Errorf("read body: %w", io.ErrNoProgress)
}

// makeTail returns the aws-chunked framing after the data: the CRLF ending
// the data chunk, the final zero-length chunk, the checksum trailer and the
// empty line ending the body.
func (b *body) makeTail() []byte {
	t := make([]byte, 0, b.tailLen)
	t = append(t, "\r\n0\r\n"...)
	t = append(t, b.trailer...)
	t = append(t, ':')
	t = append(t, checksum.Encode(b.sum.Sum(nil))...)
	t = append(t, "\r\n\r\n"...)
	return t
}

// attemptBody is the body as one attempt of the request reads it. Len lets
// the SDK set the Content-Length without seeking.
type attemptBody struct {
	b     *body
	gen   uint64
	watch *watchdog // paused while reading; nil for none
}

func (a *attemptBody) Read(p []byte) (int, error) {
	if a.watch != nil {
		a.watch.pause()
		defer a.watch.resume()
	}
	return a.b.read(a.gen, p)
}

// Len returns the framed length still to be read by this attempt.
func (a *attemptBody) Len() int {
	a.b.mu.Lock()
	defer a.b.mu.Unlock()
	return int(a.b.encLen - a.b.pos)
}
