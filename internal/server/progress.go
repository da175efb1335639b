package server

import (
	"io"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coffer-s3/coffer/internal/httprec"
)

// A client that stops reading its answers must not hold the server's
// resources. net/http has only a WriteTimeout for the whole response,
// which a legitimate download of a large object over a slow link
// outlasts; so each listener's connections are wrapped in a progressConn,
// whose writes must make progress instead: the write deadline is kept at
// most idle after the last write that moved data. A response nobody reads
// (a GET of a large object whose client never reads, or thousands of
// pipelined requests whose answers pile up unread) fails its write after
// idle, which ends the handler, frees its request slot and closes the
// connection.

// Write sizes under a progress deadline. A write longer than
// progressChunk is passed on in chunks, each with its own deadline, so a
// client that reads slowly but steadily (at progressChunk per idle, 3 KiB/s
// with the defaults) is never cut off; a file sent with sendfile(2) goes in
// sendfileChunk pieces for the same reason (25 KiB/s).
const (
	progressChunk = 64 << 10
	sendfileChunk = 512 << 10
)

// withProgress returns ln with each connection it accepts wrapped in a
// progressConn; ln itself when idle is not positive (no limit).
func withProgress(ln net.Listener, idle time.Duration) net.Listener {
	if idle <= 0 {
		return ln
	}
	return progressListener{ln, idle}
}

type progressListener struct {
	net.Listener
	idle time.Duration
}

func (l progressListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &progressConn{Conn: c, idle: l.idle}, nil
}

// progressConn is a connection whose writes must make progress: before a
// write, the write deadline is moved to idle from now unless it was moved
// less than idle/4 ago (so that a fast response pays for it rarely; the
// deadline is always at least 3/4 of idle away when a write starts).
//
// It keeps what net/http and the server look for on the connection it
// wraps: ReadFrom (sendfile), CloseWrite, and SyscallConn (for the
// connection limit's look at unread bytes).
type progressConn struct {
	net.Conn
	idle time.Duration
	set  time.Time // when the write deadline was last moved
	// fixed is a write deadline someone set explicitly (crypto/tls gives
	// its close_notify 5 s): writes keep it instead of moving it past; zero
	// when there is none (net/http clears it after every answer).
	fixed time.Time
	// ackSample and ackSampleAt are the bytes the client had acknowledged
	// when connLimit last looked at this connection's stalled write, and
	// when: its stall is measured by them (guarded by connLimit.mu).
	ackSample   uint64
	ackSampleAt time.Time
	// writing is when the chunk being written started (the write in
	// progress last moved data then), in Unix nanoseconds; 0 between
	// writes. connLimit reads it to find connections whose client does
	// not read.
	writing atomic.Int64
}

// stalledSince returns when c's write in progress last moved data (when
// its chunk began), or the zero time if it has none.
func (c *progressConn) stalledSince() time.Time {
	if ns := c.writing.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// progressOf returns the progressConn c is (or a TLS connection over), or
// nil.
func progressOf(c net.Conn) *progressConn {
	if u, ok := c.(interface{ NetConn() net.Conn }); ok { // *tls.Conn
		c = u.NetConn()
	}
	pc, _ := c.(*progressConn)
	return pc
}

// renew moves the write deadline to idle from now, if it is due, but
// never past a deadline set explicitly.
func (c *progressConn) renew() {
	if now := time.Now(); now.Sub(c.set) >= c.idle/4 {
		d := now.Add(c.idle)
		if !c.fixed.IsZero() && c.fixed.Before(d) {
			d = c.fixed
		}
		_ = c.Conn.SetWriteDeadline(d)
		c.set = now
	}
}

// SetWriteDeadline passes t on. A zero t (net/http clears the deadline
// after every answer) makes the next write set its own; another is kept:
// writes never move the deadline past it.
func (c *progressConn) SetWriteDeadline(t time.Time) error {
	c.set, c.fixed = time.Time{}, t
	return c.Conn.SetWriteDeadline(t)
}

// SetDeadline is SetWriteDeadline's, for both directions.
func (c *progressConn) SetDeadline(t time.Time) error {
	c.set, c.fixed = time.Time{}, t
	return c.Conn.SetDeadline(t)
}

func (c *progressConn) Write(p []byte) (int, error) {
	defer c.writing.Store(0)
	n := 0
	for len(p) > 0 {
		c.writing.Store(time.Now().UnixNano())
		c.renew()
		k, err := c.Conn.Write(p[:min(len(p), progressChunk)])
		n += k
		if err != nil {
			return n, err
		}
		p = p[k:]
	}
	return n, nil
}

// ReadFrom sends a file (or an io.LimitedReader over one, which it is
// given whole: a LimitedReader around that would hide the file from it) in
// sendfileChunk pieces, each under a fresh deadline, through the wrapped
// connection's ReadFrom (sendfile(2)). Any other source is copied through
// Write, whose deadline covers each write alone: the wrapped ReadFrom
// would copy it in a loop of its own, so that waiting for a slow source
// (an upstream in gateway mode) counted against the client's deadline
// and cut off a client that read everything it was sent.
func (c *progressConn) ReadFrom(r io.Reader) (int64, error) {
	rf, ok := c.Conn.(io.ReaderFrom)
	src, left := r, int64(-1) // left < 0: until EOF
	if lr, isLR := r.(*io.LimitedReader); isLR {
		if lr.N <= 0 {
			return 0, nil // as io.Copy from it: nothing
		}
		src, left = lr.R, lr.N
		defer func() { lr.N = left }()
	}
	if _, isFile := src.(*os.File); !ok || !isFile {
		if left < 0 {
			return io.Copy(struct{ io.Writer }{c}, src)
		}
		n, err := io.Copy(struct{ io.Writer }{c}, io.LimitReader(src, left))
		left -= n
		return n, err
	}
	defer c.writing.Store(0)
	var total int64
	for left != 0 {
		chunk := int64(sendfileChunk)
		if left > 0 {
			chunk = min(chunk, left)
		}
		c.writing.Store(time.Now().UnixNano())
		c.set = time.Time{} // a deadline per chunk
		c.renew()
		n, err := rf.ReadFrom(&io.LimitedReader{R: src, N: chunk})
		total += n
		if left > 0 {
			left -= n
		}
		if err != nil || n < chunk {
			return total, err // an error, or the source's end
		}
	}
	return total, nil
}

// CloseWrite half-closes the connection when the wrapped one can: net/http
// does so before closing a connection whose request it did not read whole.
func (c *progressConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// SyscallConn returns the wrapped connection's, for pending.
func (c *progressConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := c.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, syscall.EINVAL
}

// bodyDeadlines bounds the request bodies of the handlers that are not
// S3's (s3api has its own: idleBody): the admin API, the health checks,
// the console, pprof. A body must make progress (a read that returns data
// at least every idle); and once the handler starts its answer, a body it
// left unread is not waited for: the connection is closed after the
// answer. Without that, net/http would first discard up to 256 KiB of the
// unread body with no deadline at all, from a client that may never send
// it (a GET /healthz declaring a body, a refused admin request).
func bodyDeadlines(next http.Handler, idle time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		b := &progressBody{rc: r.Body, ctl: http.NewResponseController(w), idle: idle}
		if idle > 0 {
			b.renew(time.Now())
		}
		r.Body = b
		next.ServeHTTP(&httprec.Writer{ResponseWriter: w, Before: b.stop}, r)
		b.stop() // the answer of a handler that wrote nothing goes out after it
	})
}

// progressBody is a request body whose reads must make progress: the
// connection's read deadline is kept at most idle after the last read that
// returned data.
type progressBody struct {
	rc    io.ReadCloser
	ctl   *http.ResponseController
	idle  time.Duration
	set   time.Time
	limit time.Time // when not zero, the latest deadline (Until)
	eof   bool
	done  bool // stop has run
}

func (b *progressBody) renew(now time.Time) {
	t := now.Add(b.idle)
	if b.idle <= 0 {
		t = time.Time{}
	}
	if !b.limit.IsZero() && (t.IsZero() || t.After(b.limit)) {
		t = b.limit
	}
	_ = b.ctl.SetReadDeadline(t)
	b.set = now
}

// Until caps the read deadline at t however the body progresses: for a
// handler that reads a small body before it knows who sent it (the
// console's sign-in form), so that a byte now and then cannot hold the
// connection. Handlers reach it through an interface of their own
// (console.capBody).
func (b *progressBody) Until(t time.Time) {
	b.limit = t
	if !b.done {
		b.renew(time.Now())
	}
}

func (b *progressBody) Read(p []byte) (int, error) {
	if now := time.Now(); !b.done && b.idle > 0 && now.Sub(b.set) >= b.idle/4 {
		b.renew(now)
	}
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

func (b *progressBody) Close() error { return b.rc.Close() }

// stop ends the wait for a body the handler did not read to its end: its
// reads, and net/http's discard, fail at once, and net/http closes the
// connection after the answer.
func (b *progressBody) stop() {
	if b.done {
		return
	}
	b.done = true
	if !b.eof {
		_ = b.ctl.SetReadDeadline(aLongTimeAgo)
	}
}

// aLongTimeAgo is a deadline that has passed.
var aLongTimeAgo = time.Unix(1, 0)
