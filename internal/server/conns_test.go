package server

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestConnLimit checks the S3 listener's connection limit: at the limit a
// new connection closes the oldest that has not sent a request, else the
// longest idle, and is itself closed when every connection has a request
// in progress.
func TestConnLimit(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := newConnLimit(ln, 2)
	l.minIdle = 0 // see TestConnLimitBusyIdle for the wait
	release := make(chan struct{})
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/block" {
				<-release
			}
			io.WriteString(w, "ok")
		}),
		ConnState: l.track,
	}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	addr := ln.Addr().String()

	dial := func() net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	closed := func(c net.Conn) bool { // by the server, within a second
		c.SetReadDeadline(time.Now().Add(time.Second))
		_, err := c.Read(make([]byte, 1))
		return err == io.EOF
	}
	waitOpen := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); l.open() != n; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d connections open, want %d", l.open(), n)
			}
		}
	}

	// Two connections that send nothing, then a third: the oldest goes.
	first := dial()
	first.Write([]byte("GET / HT")) // a slowloris: half a request line
	waitOpen(1)
	second := dial()
	waitOpen(2)
	third := dial()
	if !closed(first) {
		t.Error("the longest-waiting connection was not closed for a new one")
	}
	waitOpen(2)
	if l.evicted.Load() != 1 {
		t.Errorf("evicted = %d, want 1", l.evicted.Load())
	}

	// With a request in progress on both, a new connection is closed.
	for _, c := range []net.Conn{second, third} {
		if _, err := c.Write([]byte("GET /block HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		l.mu.Lock()
		busy := l.fresh.Len()+l.idle.Len() == 0
		l.mu.Unlock()
		if busy {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("requests did not become active")
		}
	}
	if fourth := dial(); !closed(fourth) {
		t.Error("a connection beyond the limit was kept while every one had a request in progress")
	}
	if l.refused.Load() != 1 {
		t.Errorf("refused = %d, want 1", l.refused.Load())
	}
	// The requests in progress are answered; their connections go idle and
	// a new connection takes the place of the one idle longer.
	close(release)
	for _, c := range []net.Conn{second, third} {
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("blocked request: %v %v", resp, err)
		}
		resp.Body.Close()
	}
	fifth := dial()
	fifth.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	if resp, err := http.ReadResponse(bufio.NewReader(fifth), nil); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("new connection after the requests ended: %v %v", resp, err)
	}
	// Both were idle; the one idle longer made room.
	if closedSecond, closedThird := closed(second), closed(third); closedSecond == closedThird {
		t.Errorf("closed: second %v, third %v; want exactly one idle keep-alive connection closed", closedSecond, closedThird)
	}
}

// chanListener accepts the connections sent on it.
type chanListener struct {
	net.Listener
	c chan net.Conn
}

func (l chanListener) Accept() (net.Conn, error) { return <-l.c, nil }

// TestConnLimitOrder: connections that never sent a request go before
// idle keep-alive ones, even younger ones; with neither, the longest idle.
func TestConnLimitOrder(t *testing.T) {
	t.Parallel()
	in := chanListener{c: make(chan net.Conn, 1)}
	l := newConnLimit(in, 2)
	l.minIdle = 0
	accept := func() (server, client net.Conn) {
		t.Helper()
		server, client = net.Pipe()
		t.Cleanup(func() { server.Close(); client.Close() })
		in.c <- server
		if c, err := l.Accept(); err != nil || c != server {
			t.Fatalf("Accept = %v, %v", c, err)
		}
		return server, client
	}
	isClosed := func(client net.Conn) bool {
		client.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		_, err := client.Read(make([]byte, 1))
		return err == io.EOF
	}
	a, aClient := accept()
	l.track(a, http.StateActive)
	l.track(a, http.StateIdle) // a served a request and waits, idle
	_, bClient := accept()     // b has sent nothing yet
	c, _ := accept()           // at the limit: b goes, not the older idle a
	if !isClosed(bClient) || isClosed(aClient) {
		t.Fatal("a fresh connection was not closed before an idle one")
	}
	l.track(c, http.StateActive)
	_, _ = accept() // no fresh one left but d itself: a, idle longest, goes
	if !isClosed(aClient) {
		t.Fatal("the idle connection was not closed when no fresh one was left")
	}
	if l.evicted.Load() != 2 || l.open() != 2 {
		t.Errorf("evicted %d, open %d; want 2 and 2", l.evicted.Load(), l.open())
	}
}

// TestConnLimitBusyIdle: a keep-alive connection idle for less than
// minIdle (a client between two requests) is not closed for a new
// connection; the new one is.
func TestConnLimitBusyIdle(t *testing.T) {
	t.Parallel()
	in := chanListener{c: make(chan net.Conn, 2)}
	l := newConnLimit(in, 1)
	l.minIdle = time.Hour
	a, aClient := net.Pipe()
	defer a.Close()
	defer aClient.Close()
	in.c <- a
	if c, err := l.Accept(); err != nil || c != a {
		t.Fatalf("Accept = %v, %v", c, err)
	}
	l.track(a, http.StateActive)
	l.track(a, http.StateIdle)
	b, bClient := net.Pipe()
	defer bClient.Close()
	in.c <- b
	// Accept refuses b and waits for the next connection: give it one the
	// limit refuses too, then stop.
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Accept()
	}()
	bClient.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := bClient.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("the new connection was not closed: %v", err)
	}
	if l.refused.Load() != 1 || l.evicted.Load() != 0 || l.open() != 1 {
		t.Errorf("refused %d, evicted %d, open %d; want 1, 0, 1", l.refused.Load(), l.evicted.Load(), l.open())
	}
	l.track(a, http.StateClosed)
	c, cClient := net.Pipe()
	defer c.Close()
	defer cClient.Close()
	in.c <- c // room now: accepted, and the goroutine ends
	<-done
}
