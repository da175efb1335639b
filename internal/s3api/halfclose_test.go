package s3api

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coffer-s3/coffer/internal/blob"
	"github.com/coffer-s3/coffer/internal/blob/memblob"
)

// halfCloseBlock is the block size of these tests' object service: small,
// so that an object of a few MiB spans many blocks and a read opens block
// after block while it streams.
const halfCloseBlock = 256 << 10

// sendHalfClosed writes r on a fresh connection to hs, half-closes the
// connection (shutdown(SHUT_WR), as netcat scripts and HTTP/1.0-style tools
// do once they have sent their request) and reads the response. The body
// is read as far as the server sent it; err is the error of that read
// (io.ErrUnexpectedEOF for an answer cut short of its Content-Length).
func sendHalfClosed(t *testing.T, hs *harness, r *http.Request) (resp *http.Response, body []byte, err error) {
	t.Helper()
	c, err := net.Dial("tcp", hs.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := r.Write(c); err != nil {
		t.Fatalf("write request: %v", err)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatalf("half-close: %v", err)
	}
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err = http.ReadResponse(bufio.NewReader(c), r)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(resp.Body)
	return resp, body, err
}

// A client that sends a read and half-closes its connection gets the whole
// answer. net/http cancels the request's context when it sees the
// half-close; reads used to stop on it, so the client got the first blocks
// of an object, or no answer at all. Only the streaming cases (GetObject,
// a range, partNumber) fail without readContext: a small answer usually
// leaves before net/http has seen the half-close. The others are here as
// the answers such a client must get whole; TestHalfClosedReadQueued and
// TestWriteError's "read's context canceled" pin the rest.
func TestHalfClosedReadAnsweredWhole(t *testing.T) {
	t.Parallel()
	hs := newHarnessWith(t, Config{}, harnessOptions{blockSize: halfCloseBlock})
	hs.mkBucket("bkt")
	rnd := rand.NewChaCha8([32]byte{7})
	data := make([]byte, 16<<20+12345) // 65 blocks, more than the sockets' buffers hold
	_, _ = rnd.Read(data)
	hs.put("bkt", "big", data).mustStatus(t, http.StatusOK)
	// A multipart object whose parts span several blocks each.
	parts := [][]byte{make([]byte, 8<<20+1), make([]byte, 8<<20+2), make([]byte, 1<<20)}
	id := hs.createUpload("bkt", "parts")
	var etags []string
	for i, p := range parts {
		_, _ = rnd.Read(p)
		etags = append(etags, strconv.Itoa(i+1), hs.uploadPart("bkt", "parts", id, i+1, p))
	}
	hs.do(call{method: "POST", path: "/bkt/parts?uploadId=" + url.QueryEscape(id), body: completeDoc(etags...)}).mustStatus(t, http.StatusOK)

	for _, tc := range []struct {
		name     string
		c        call
		status   int
		want     []byte // the whole body, if not nil
		contains string // else a part of it
		length   int    // Content-Length of a HEAD
	}{
		{name: "GetObject", c: call{method: "GET", path: "/bkt/big"}, status: 200, want: data},
		{name: "range across blocks", c: call{method: "GET", path: "/bkt/big", header: header("Range", "bytes=100000-15000000")},
			status: 206, want: data[100000:15000001]},
		{name: "partNumber", c: call{method: "GET", path: "/bkt/parts?partNumber=2"}, status: 206, want: parts[1]},
		{name: "HeadObject", c: call{method: "HEAD", path: "/bkt/big"}, status: 200, want: []byte{}, length: len(data)},
		{name: "GetObjectAttributes", c: call{method: "GET", path: "/bkt/parts?attributes", header: header("X-Amz-Object-Attributes", "ObjectSize,ObjectParts")},
			status: 200, contains: fmt.Sprintf("<ObjectSize>%d</ObjectSize>", 17<<20+3)},
		{name: "ListObjectsV2", c: call{method: "GET", path: "/bkt?list-type=2"}, status: 200, contains: "<Key>parts</Key>"},
		// An error answer to a read is written too (writeError), not
		// taken for a client that went away.
		{name: "NoSuchKey", c: call{method: "GET", path: "/bkt/missing"}, status: 404, contains: "<Code>NoSuchKey</Code>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body, err := sendHalfClosed(t, hs, hs.request(tc.c))
			if resp == nil {
				t.Fatalf("no answer after the half-close: %v", err)
			}
			if err != nil {
				t.Fatalf("status %d, body cut after %d of %s bytes: %v", resp.StatusCode, len(body), resp.Header.Get("Content-Length"), err)
			}
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d; body:\n%.500s", resp.StatusCode, tc.status, body)
			}
			switch {
			case tc.want != nil && !bytes.Equal(body, tc.want):
				t.Errorf("body of %d bytes differs from the %d bytes stored", len(body), len(tc.want))
			case tc.want == nil && !bytes.Contains(body, []byte(tc.contains)):
				t.Errorf("body does not contain %q:\n%.500s", tc.contains, body)
			}
			if tc.length > 0 && resp.ContentLength != int64(tc.length) {
				t.Errorf("Content-Length %d, want %d", resp.ContentLength, tc.length)
			}
		})
	}
}

// countingStore is a block store that counts the block readers it opens
// and those not yet closed.
type countingStore struct {
	blob.Store
	opened, open atomic.Int64
}

func (s *countingStore) Get(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	rc, err := s.Store.Get(ctx, key, off, n)
	if err != nil {
		return nil, err
	}
	s.opened.Add(1)
	s.open.Add(1)
	return &countedReader{ReadCloser: rc, s: s}, nil
}

// countedReader is a block reader of a countingStore.
type countedReader struct {
	io.ReadCloser
	s    *countingStore
	once sync.Once
}

func (r *countedReader) Close() error {
	r.once.Do(func() { r.s.open.Add(-1) })
	return r.ReadCloser.Close()
}

// A client that goes away during a large GET ends the read at the first
// write that fails: reads are not stopped by the request's context any more
// (see readContext), so nothing else would. The client goes in the middle
// of the body, with a reset, or before the answer, with a FIN that looks
// the same to the server as a half-close until a write fails.
func TestGoneClientEndsRead(t *testing.T) {
	t.Parallel()
	const size = 32 << 20 // 128 blocks
	for _, tc := range []struct {
		name string
		gone func(t *testing.T, c *net.TCPConn, r *http.Request)
	}{
		{name: "reset mid-body", gone: func(t *testing.T, c *net.TCPConn, r *http.Request) {
			resp, err := http.ReadResponse(bufio.NewReader(c), r)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(resp.Body, make([]byte, 64<<10)); err != nil {
				t.Fatalf("read the start of the body: %v", err)
			}
			// A reset, as a killed client's kernel closes a connection
			// with unread data.
			_ = c.SetLinger(0)
			c.Close()
		}},
		{name: "closed before the answer", gone: func(t *testing.T, c *net.TCPConn, r *http.Request) {
			c.Close()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			store := &countingStore{Store: memblob.New()}
			hs := newHarnessWith(t, Config{}, harnessOptions{store: store, blockSize: halfCloseBlock})
			o := &recorder{}
			hs.h.observer = o
			hs.mkBucket("bkt")
			hs.put("bkt", "big", bytes.Repeat([]byte("x"), size)).mustStatus(t, http.StatusOK)

			// A client with a small receive buffer, so that the server's
			// writes stall soon after it stops reading and the test does
			// not depend on how much the sockets' buffers take.
			d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
				return rc.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
			}}
			c, err := d.Dial("tcp", hs.srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			r := hs.request(call{method: "GET", path: "/bkt/big"})
			if err := r.Write(c); err != nil {
				t.Fatal(err)
			}
			_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
			tc.gone(t, c.(*net.TCPConn), r)

			rec := o.waitOp(t, "GetObject")
			t.Logf("status %d, %d bytes written, %d blocks opened", rec.Status, rec.BytesOut, store.opened.Load())
			if rec.BytesOut >= size/2 {
				t.Errorf("record: status %d, %d bytes written; want far fewer than the object's %d", rec.Status, rec.BytesOut, size)
			}
			// The blocks opened are those the bytes written came from,
			// and the one being read when the write failed.
			if n, most := store.opened.Load(), rec.BytesOut/halfCloseBlock+2; n > most {
				t.Errorf("%d blocks opened for %d bytes written, want at most %d: the read went on after the client left", n, rec.BytesOut, most)
			}
			if n := store.open.Load(); n != 0 {
				t.Errorf("%d block readers still open after the request ended", n)
			}
			// A download abandoned midway is the client's doing, not an
			// internal error (metrics and the audit log count codes).
			if rec.Code != "" {
				t.Errorf("record code %q, want none for a client that went away", rec.Code)
			}
		})
	}
}

// A read that waits for a request slot is answered when one frees, even
// if its client half-closed meanwhile: the half-close cancels the
// request's context, which the queue used to take for a client gone.
func TestHalfClosedReadQueued(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, Config{MaxRequests: 1, MaxQueued: 1, QueueWait: 10 * time.Second})
	hs.mkBucket("lim")
	hs.put("lim", "k", []byte("value")).mustStatus(t, http.StatusOK)

	// A PUT whose body is slow to come holds the only slot.
	pr, pw := io.Pipe()
	slow := hs.request(call{method: "PUT", path: "/lim/slow", body: make([]byte, 5), payload: "UNSIGNED-PAYLOAD"})
	slow.Body = pr
	slowDone := make(chan reply, 1)
	go func() { slowDone <- hs.send(slow) }()
	waitFor(t, func() bool { return hs.h.Load().InFlight == 1 })

	type answer struct {
		resp *http.Response
		body []byte
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		resp, body, err := sendHalfClosed(t, hs, hs.request(call{method: "GET", path: "/lim/k"}))
		got <- answer{resp, body, err}
	}()
	waitFor(t, func() bool { return hs.h.Load().Queued == 1 })
	time.Sleep(50 * time.Millisecond) // for net/http to see the half-close
	pw.Write([]byte("hello"))
	pw.Close()
	(<-slowDone).mustStatus(t, http.StatusOK)
	a := <-got
	switch {
	case a.resp == nil:
		t.Fatalf("no answer to the queued read after the half-close: %v", a.err)
	case a.err != nil || a.resp.StatusCode != http.StatusOK || string(a.body) != "value":
		t.Fatalf("queued read answered %d %q (%v), want 200 \"value\"", a.resp.StatusCode, a.body, a.err)
	}
}

// blockingStore is a block store whose reads, once block is set, wait
// until their context ends, as an unresponsive upstream's do.
type blockingStore struct {
	blob.Store
	block   atomic.Bool
	waiting atomic.Int64
}

func (s *blockingStore) Get(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	if s.block.Load() {
		s.waiting.Add(1)
		defer s.waiting.Add(-1)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return s.Store.Get(ctx, key, off, n)
}

// AbortReads ends a read waiting on its block store, which its client's
// going away no longer does (readContext): the server calls it when it
// closes connections with requests in flight.
func TestAbortReadsEndsWaitingRead(t *testing.T) {
	t.Parallel()
	store := &blockingStore{Store: memblob.New()}
	hs := newHarnessWith(t, Config{}, harnessOptions{store: store, blockSize: halfCloseBlock})
	hs.mkBucket("bkt")
	hs.put("bkt", "big", bytes.Repeat([]byte("x"), 2*halfCloseBlock)).mustStatus(t, http.StatusOK)
	store.block.Store(true)

	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _, _ = sendHalfClosed(t, hs, hs.request(call{method: "GET", path: "/bkt/big"}))
	}()
	waitFor(t, func() bool { return store.waiting.Load() == 1 })
	hs.h.AbortReads()
	waitFor(t, func() bool { return store.waiting.Load() == 0 })
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the aborted read's client got no end of its answer")
	}
}
