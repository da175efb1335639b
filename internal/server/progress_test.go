package server

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coffer-s3/coffer/internal/adminapi"
	"github.com/coffer-s3/coffer/internal/config"
	"github.com/coffer-s3/coffer/internal/sigv4"
)

// These tests are issue 13's "no client can hold a connection, a goroutine
// or a request slot without making progress", for what the listeners'
// request limit and connection limit alone do not cover: clients that do
// not read their answers, and bodies that are declared and never sent to
// handlers that do not read them.

// limitedConfig is a server with one request slot, whose bodies and
// answers must make progress within idle, and whose waiting requests are
// refused SlowDown after wait.
func limitedConfig(t *testing.T, idle, wait time.Duration) config.Config {
	cfg := testConfig(t)
	cfg.S3.BodyIdleTimeout = idle
	cfg.S3.MaxRequests = 1
	cfg.S3.MaxQueued = 8
	cfg.S3.QueueWait = wait
	return cfg
}

var rootCred = sigv4.Credentials{AccessKeyID: "TESTROOTKEY", SecretKey: "test-root-secret"}

// signed returns a request signed by root, with body (nil: none) and the
// Content-Length declared (declared < 0: len(body)).
func signed(t *testing.T, method, url string, body []byte, declared int64) *http.Request {
	t.Helper()
	r, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.ContentLength = declared
	if declared < 0 {
		r.ContentLength = int64(len(body))
	}
	sigv4.SignRequest(r, rootCred, "us-east-1", time.Now(), "UNSIGNED-PAYLOAD")
	return r
}

// send sends r with a client of its own and returns the status.
func send(t *testing.T, r *http.Request) int {
	t.Helper()
	resp, err := client().Do(r)
	if err != nil {
		t.Fatalf("%s %s: %v", r.Method, r.URL, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// sendHead writes r's request line and headers (with r.ContentLength
// declared) on c, and none of its body.
func sendHead(t *testing.T, c net.Conn, r *http.Request) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", r.Method, r.URL.RequestURI(), r.URL.Host)
	if r.ContentLength > 0 {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", r.ContentLength)
	}
	for k, vs := range r.Header {
		for _, v := range vs {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
	}
	b.WriteString("\r\n")
	if _, err := io.WriteString(c, b.String()); err != nil {
		t.Fatal(err)
	}
}

// putBig creates the bucket at bucketURL and puts "big" in it, 32 MiB (past
// what socket buffers hold), as root, and waits until the connections of
// those PUTs are gone, so that the test's own have the server's slots.
func putBig(t *testing.T, s *Server, bucketURL string) {
	t.Helper()
	if st := send(t, signed(t, "PUT", bucketURL, nil, -1)); st != 200 {
		t.Fatalf("CreateBucket: %d", st)
	}
	if st := send(t, signed(t, "PUT", bucketURL+"/big", bytes.Repeat([]byte("x"), 32<<20), -1)); st != 200 {
		t.Fatalf("PutObject: %d", st)
	}
	for s.conns.open() != 0 {
		time.Sleep(10 * time.Millisecond)
	}
}

// smallWindow returns a dialer whose connections have a 4 KiB receive
// buffer: a client that does not read stalls the server's writes soon.
func smallWindow() net.Dialer {
	return net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// answeredWithin reads the response on c and fails unless it came within
// d; it returns the status.
func answeredWithin(t *testing.T, c net.Conn, d time.Duration, what string) int {
	t.Helper()
	start := time.Now()
	_ = c.SetReadDeadline(start.Add(d))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%s: no answer within %v: %v", what, d, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// A client that sends a GET for a large object and never reads the answer
// holds the request slot only until the answer's writes stall for idle.
func TestSlowReaderLetsGo(t *testing.T) {
	const idle = time.Second
	s, _ := start(t, limitedConfig(t, idle, 8*time.Second), testLogger(io.Discard))
	base := "http://" + s.Addr()
	putBig(t, s, base+"/slow")
	// A reader with a small window that never reads.
	d := smallWindow()
	c, err := d.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sendHead(t, c, signed(t, "GET", base+"/slow/big", nil, -1))
	time.Sleep(200 * time.Millisecond) // the GET has the slot
	start := time.Now()
	if st := send(t, signed(t, "HEAD", base+"/slow/big", nil, -1)); st != 200 {
		t.Fatalf("HEAD while a client does not read its GET: %d, want 200 (the stalled GET must give its slot back)", st)
	}
	if el := time.Since(start); el > 6*idle {
		t.Errorf("HEAD waited %v for the slot, want about idle (%v)", el, idle)
	}
}

// A client that sends its GET and half-closes its connection, as netcat
// scripts and HTTP/1.0-style tools do, gets the whole object, sent with
// sendfile(2) from the block files through the progress deadline. net/http
// cancels the request's context on the half-close, and the read used to
// stop at the next block.
func TestHalfClosedGetWhole(t *testing.T) {
	cfg := testConfig(t)
	cfg.Objects.BlockSize = 1 << 20 // putBig's 32 MiB in 32 blocks
	s, _ := start(t, cfg, testLogger(io.Discard))
	base := "http://" + s.Addr()
	putBig(t, s, base+"/half")
	r := signed(t, "GET", base+"/half/big", nil, -1)
	c := dial(t, s.Addr())
	sendHead(t, c, r)
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), r)
	if err != nil {
		t.Fatalf("no answer after the half-close: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("status %d, %d of %d bytes: %v", resp.StatusCode, len(body), resp.ContentLength, err)
	}
	if len(body) != 32<<20 || bytes.Count(body, []byte("x")) != len(body) {
		t.Errorf("body of %d bytes is not the %d stored", len(body), 32<<20)
	}
}

// Pipelined requests whose answers are never read: the connection is
// closed once its writes stall for idle, so it does not hold a connection
// slot for ever.
func TestPipelinedNonReaderClosed(t *testing.T) {
	const idle = time.Second
	s, _ := start(t, limitedConfig(t, idle, 8*time.Second), testLogger(io.Discard))
	c := dial(t, s.Addr())
	go func() {
		req := []byte("GET /_coffer/health/live HTTP/1.1\r\nHost: x\r\n\r\n")
		for {
			if _, err := c.Write(bytes.Repeat(req, 100)); err != nil {
				return
			}
		}
	}()
	deadline := time.Now().Add(10 * idle)
	for s.conns.open() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	for s.conns.open() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("a client that never reads its answers still holds its connection after %v", 10*idle)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A body declared to a handler that does not read it, and never sent,
// does not delay the answer: it comes at once and the connection closes.
func TestUnreadBodyNotWaitedFor(t *testing.T) {
	const idle = 5 * time.Second // longer than an answer may take here
	s, _ := start(t, limitedConfig(t, idle, 8*time.Second), testLogger(io.Discard))
	base := "http://" + s.Addr()
	if st := send(t, signed(t, "PUT", base+"/bkt", nil, -1)); st != 200 {
		t.Fatalf("CreateBucket: %d", st)
	}
	if st := send(t, signed(t, "PUT", base+"/bkt/k", []byte("data"), -1)); st != 200 {
		t.Fatalf("PutObject: %d", st)
	}
	ops := "http://" + s.ConsoleAddr()
	adminPut, _ := http.NewRequest("POST", base+adminapi.BasePath+"/users", nil)
	adminPut.ContentLength = 1000
	live, _ := http.NewRequest("GET", base+"/_coffer/health/live", nil)
	live.ContentLength = 100
	healthz, _ := http.NewRequest("GET", ops+"/healthz", nil)
	healthz.ContentLength = 100
	for _, tc := range []struct {
		name string
		addr string
		r    *http.Request
		want int
	}{
		{"signed GetObject", s.Addr(), signed(t, "GET", base+"/bkt/k", nil, 100), 200},
		{"anonymous GetObject", s.Addr(), func() *http.Request {
			r, _ := http.NewRequest("GET", base+"/bkt/k", nil)
			r.ContentLength = 100
			return r
		}(), 403},
		{"health", s.Addr(), live, 200},
		{"refused admin request", s.Addr(), adminPut, 403},
		{"ops healthz", s.ConsoleAddr(), healthz, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, tc.addr)
			sendHead(t, c, tc.r)
			if st := answeredWithin(t, c, idle/2, tc.name); st != tc.want {
				t.Errorf("status %d, want %d", st, tc.want)
			}
		})
	}
}

// A body the handler reads must make progress: a console sign-in that
// declares a body and sends nothing fails after idle instead of holding
// its handler for ever.
func TestConsoleBodyMustProgress(t *testing.T) {
	const idle = time.Second
	s, _ := start(t, limitedConfig(t, idle, 8*time.Second), testLogger(io.Discard))
	c := dial(t, s.ConsoleAddr())
	fmt.Fprintf(c, "POST /login HTTP/1.1\r\nHost: %s\r\nOrigin: http://%s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\n",
		s.ConsoleAddr(), s.ConsoleAddr())
	_ = c.SetReadDeadline(time.Now().Add(10 * idle))
	if _, err := io.ReadAll(c); err != nil {
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("a sign-in whose body never comes is still waited for after %v", 10*idle)
		}
	}
}

// A stranger's refused PUT whose body is drained does not keep the
// request slot while it is: another request is served meanwhile instead
// of being refused SlowDown.
func TestRefusedDrainFreesSlot(t *testing.T) {
	s, _ := start(t, limitedConfig(t, 20*time.Second, 500*time.Millisecond), testLogger(io.Discard))
	base := "http://" + s.Addr()
	if st := send(t, signed(t, "PUT", base+"/bkt", nil, -1)); st != 200 {
		t.Fatalf("CreateBucket: %d", st)
	}
	c := dial(t, s.Addr())
	fmt.Fprintf(c, "PUT /bkt/k HTTP/1.1\r\nHost: %s\r\nContent-Length: 200000\r\n\r\n", s.Addr())
	time.Sleep(300 * time.Millisecond) // refused, its body drained for up to drainTimeout
	if st := send(t, signed(t, "HEAD", base+"/bkt", nil, -1)); st != 200 {
		t.Errorf("HEAD while a refused body drains: %d, want 200", st)
	}
}

// The ops listener keeps a bounded number of connections: idle ones are
// closed to make room, and the listener goes on serving.
func TestOpsConnectionLimit(t *testing.T) {
	cfg := testConfig(t)
	cfg.MaxConnections = 50
	s, _ := start(t, cfg, testLogger(io.Discard))
	var conns []net.Conn
	for range cfg.MaxConnections + 20 {
		conns = append(conns, dial(t, s.ConsoleAddr()))
	}
	if st, _ := get(t, "http://"+s.ConsoleAddr()+"/healthz"); st != 200 {
		t.Fatalf("/healthz with %d idle connections open: %d", len(conns), st)
	}
	_ = conns[0].SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := conns[0].Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("the oldest idle connection: read %v, want EOF (closed to make room)", err)
	}
}

// At the connection limit, a connection whose client does not read its
// answer is closed to make room once its writes have moved nothing for
// minStallEvict, as an idle one is: clients that never read cannot lock
// others out for limits.body-idle.
func TestConnLimitEvictsStalledWriter(t *testing.T) {
	cfg := limitedConfig(t, time.Minute, 8*time.Second)
	cfg.S3.MaxRequests = 16
	cfg.MaxConnections = 3
	s, _ := start(t, cfg, testLogger(io.Discard))
	base := "http://" + s.Addr()
	putBig(t, s, base+"/stall")
	d := smallWindow()
	for range cfg.MaxConnections {
		c, err := d.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		sendHead(t, c, signed(t, "GET", base+"/stall/big", nil, -1))
	}
	time.Sleep(minStallEvict + time.Second) // their answers fill the buffers, then stall
	// The first look at the stalled connections samples what their
	// clients acknowledged; a connection is closed at a look that finds
	// no change minStallEvict later. A client retries meanwhile, as the
	// SDKs do.
	deadline := time.Now().Add(4 * minStallEvict)
	for {
		r := signed(t, "HEAD", base+"/stall/big", nil, -1)
		resp, err := client().Do(r)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("HEAD: %d", resp.StatusCode)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("HEAD with every connection held by a client that does not read, after %v: %v", 4*minStallEvict, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if n := s.conns.stalled.Load(); n < 1 {
		t.Errorf("stalled evictions = %d, want at least 1", n)
	}
}

// A client that reads its answer slowly but steadily is not taken for one
// that does not read, however long its writes take: at the limit, new
// connections are refused rather than its connection closed.
func TestConnLimitSparesSlowReader(t *testing.T) {
	cfg := limitedConfig(t, time.Minute, 8*time.Second)
	cfg.S3.MaxRequests = 16
	cfg.MaxConnections = 1
	s, _ := start(t, cfg, testLogger(io.Discard))
	base := "http://" + s.Addr()
	putBig(t, s, base+"/slow")
	d := smallWindow()
	c, err := d.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sendHead(t, c, signed(t, "GET", base+"/slow/big", nil, -1))
	if _, err := io.ReadFull(c, make([]byte, 4096)); err != nil { // its answer has begun
		t.Fatal(err)
	}
	// Read 4 KiB every 100 ms (40 KiB/s) while new connections keep
	// arriving at the limit.
	readErr := make(chan error, 1)
	stop := make(chan struct{})
	go func() {
		buf := make([]byte, 4096)
		for {
			select {
			case <-stop:
				readErr <- nil
				return
			case <-time.After(100 * time.Millisecond):
			}
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := c.Read(buf); err != nil {
				readErr <- err
				return
			}
		}
	}()
	for end := time.Now().Add(3 * minStallEvict); time.Now().Before(end); {
		if nc, err := net.Dial("tcp", s.Addr()); err == nil {
			nc.Close()
		}
		time.Sleep(200 * time.Millisecond)
	}
	close(stop)
	if err := <-readErr; err != nil {
		t.Fatalf("the slow reader's connection failed: %v (stalled evictions %d, evicted %d, refused %d)", err, s.conns.stalled.Load(), s.conns.evicted.Load(), s.conns.refused.Load())
	}
	if n := s.conns.stalled.Load(); n != 0 {
		t.Errorf("stalled evictions = %d, want none", n)
	}
}

// A write deadline set explicitly (crypto/tls gives close_notify 5 s) is
// kept: writes do not move it to limits.body-idle.
func TestProgressKeepsExplicitDeadline(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	peer := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			peer <- c
		}
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	defer (<-peer).Close() // never reads
	c := &progressConn{Conn: raw, idle: time.Minute}
	_ = c.SetWriteDeadline(time.Now().Add(300 * time.Millisecond))
	start := time.Now()
	for {
		if _, err := c.Write(make([]byte, 1<<20)); err != nil {
			break
		}
		if time.Since(start) > 10*time.Second {
			t.Fatal("writes to a peer that does not read went on for 10 s past a 300 ms deadline")
		}
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("the write failed after %v, want about 300 ms", el)
	}
}

// slowSource yields n bytes, a chunk every interval: an upstream in
// gateway mode that is slower than the client.
type slowSource struct {
	n        int
	interval time.Duration
}

func (s *slowSource) Read(p []byte) (int, error) {
	if s.n == 0 {
		return 0, io.EOF
	}
	time.Sleep(s.interval)
	k := min(len(p), s.n, 1024)
	clear(p[:k])
	s.n -= k
	return k, nil
}

// TestReadFromSlowSource: a source that is not a file, slower than the
// idle bound in all but fast enough in each step, is sent whole to a
// client that reads it: only the writes count against the client's
// deadline, not the waits for the source. (The wrapped connection's
// ReadFrom copied it in one loop under one deadline, and cut the client
// off after idle.)
func TestReadFromSlowSource(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan int64, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- -1
			return
		}
		defer c.Close()
		n, _ := io.Copy(io.Discard, c)
		got <- n
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := &progressConn{Conn: raw, idle: 300 * time.Millisecond}
	src := &slowSource{n: 16 << 10, interval: 50 * time.Millisecond} // 800 ms in all
	n, err := c.ReadFrom(&io.LimitedReader{R: src, N: 1 << 20})
	raw.Close()
	if err != nil || n != 16<<10 {
		t.Errorf("ReadFrom of a slow source = %d, %v; want all %d bytes", n, err, 16<<10)
	}
	if r := <-got; r != 16<<10 {
		t.Errorf("the client read %d bytes, want %d", r, 16<<10)
	}
}
