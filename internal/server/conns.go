package server

import (
	"container/list"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coffer-s3/coffer/internal/metrics"
	"github.com/coffer-s3/coffer/internal/s3api"
)

// connLimit is a listener that keeps at most max connections open. At the
// limit, a new connection closes one without a request in progress: the
// oldest of those that have not yet sent a whole request (idle sockets,
// slowloris clients still trickling headers), else the one idle longest
// between keep-alive requests if that has been idle for minIdleEvict — so
// clients that send nothing cannot lock out those that do, and a client
// between two requests on its pool's connection keeps it. Failing those,
// it closes the connection whose answer has moved nothing for longest, if
// that is minStallEvict or more (a client that does not read: its write
// deadline would end it after limits.body-idle, but at the limit it is the
// least useful connection). Otherwise (every connection has a request in
// progress or is a busy client's) the new one is closed at once (the
// requests themselves are bounded by s3api's request limit). Connections
// beyond those net/http accepts wait in the kernel's listen backlog, where
// they cost the process nothing.
//
// Its track method must be the http.Server's ConnState hook.
type connLimit struct {
	net.Listener
	max      int
	minIdle  time.Duration // minIdleEvict; tests shorten it
	minStall time.Duration // minStallEvict; tests shorten it

	mu    sync.Mutex
	conns map[net.Conn]*list.Element // every open connection → its place in fresh or idle, nil while it has a request in progress
	fresh *list.List                 // of net.Conn that have not sent a whole request yet, oldest first
	idle  *list.List                 // of idleConn between keep-alive requests, longest idle first

	evicted atomic.Int64 // waiting connections closed to make room
	stalled atomic.Int64 // of those, connections whose answer did not move
	refused atomic.Int64 // new connections closed because none could be
}

// maxSkipPending bounds how many fresh connections with unread bytes an
// eviction passes over (see pending).
const maxSkipPending = 16

// minIdleEvict is how long a keep-alive connection must have been idle to
// be closed for a new one: a client's connection between two of its
// requests is not.
const minIdleEvict = time.Second

// minStallEvict is how long an answer's write must have moved nothing
// (progressConn: a chunk of 64 KiB, or 512 KiB sent with sendfile) for
// its connection to be closed for a new one.
const minStallEvict = 2 * time.Second

// idleConn is a connection idle between requests, and since when.
type idleConn struct {
	c     net.Conn
	since time.Time
}

func newConnLimit(ln net.Listener, max int) *connLimit {
	return &connLimit{Listener: ln, max: max, minIdle: minIdleEvict, minStall: minStallEvict,
		conns: make(map[net.Conn]*list.Element), fresh: list.New(), idle: list.New()}
}

// Accept returns the next connection, making room for it first.
func (l *connLimit) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		var victim net.Conn
		if len(l.conns) >= l.max {
			e := l.fresh.Front()
			// A connection whose bytes wait unread is a client that sent
			// its request while the server was busy, not one that sends
			// nothing: look a little further for a victim.
			for i := 0; e != nil && i < maxSkipPending && pending(e.Value.(net.Conn)); i++ {
				e = e.Next()
			}
			if e == nil {
				e = l.fresh.Front()
			}
			if e == nil {
				if f := l.idle.Front(); f != nil && time.Since(f.Value.(idleConn).since) >= l.minIdle {
					e = f
				}
			}
			switch {
			case e != nil:
				if ic, ok := e.Value.(idleConn); ok {
					victim = ic.c
				} else {
					victim = e.Value.(net.Conn)
				}
				l.remove(e)
			default:
				victim = l.stalledLongest()
			}
			if victim == nil {
				l.mu.Unlock()
				l.refused.Add(1)
				c.Close()
				continue
			}
			delete(l.conns, victim)
		}
		l.conns[c] = l.fresh.PushBack(c)
		l.mu.Unlock()
		if victim != nil {
			l.evicted.Add(1)
			// Not on the accept loop: a TLS connection's Close sends
			// close_notify, which waits (up to 5 s) for a client that
			// does not read.
			go victim.Close()
		}
		return c, nil
	}
}

// stalledLongest returns the connection with a request in progress whose
// answer has moved nothing for longest, if for minStallEvict or more;
// nil otherwise. It runs only at the limit, when no waiting connection
// could make room, and looks at every busy connection: one whose write
// has been blocked for minStallEvict (progressConn.stalledSince: its
// chunk began then) is stalled if the bytes its client acknowledged have
// not changed for minStallEvict either (TCP_INFO, sampled by these calls:
// a client reading slowly but steadily acknowledges some), or, where the
// kernel cannot tell, by the chunk's age alone. So a connection becomes
// evictable at the second look at it, minStallEvict after the first. l.mu
// is held.
func (l *connLimit) stalledLongest() net.Conn {
	var victim net.Conn
	now := time.Now()
	oldest := now.Add(-l.minStall)
	for c, e := range l.conns {
		if e != nil {
			continue // waiting, not busy
		}
		pc := progressOf(c)
		if pc == nil {
			continue
		}
		since := pc.stalledSince()
		if since.IsZero() || since.After(oldest) {
			pc.ackSampleAt = time.Time{}
			continue
		}
		acked, ok := ackedBytes(pc)
		if ok {
			if pc.ackSampleAt.IsZero() || acked != pc.ackSample {
				pc.ackSample, pc.ackSampleAt = acked, now
				continue
			}
			since = pc.ackSampleAt
		}
		if since.Before(oldest) || since.Equal(oldest) {
			victim, oldest = c, since
		}
	}
	if victim != nil {
		l.stalled.Add(1)
	}
	return victim
}

// track follows a connection's state (http.Server.ConnState).
func (l *connLimit) track(c net.Conn, state http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.conns[c]
	if !ok { // evicted, or not accepted here
		return
	}
	switch state {
	case http.StateActive:
		if e != nil {
			l.remove(e)
			l.conns[c] = nil
		}
	case http.StateIdle:
		if e == nil {
			l.conns[c] = l.idle.PushBack(idleConn{c, time.Now()})
		}
	case http.StateClosed, http.StateHijacked:
		if e != nil {
			l.remove(e)
		}
		delete(l.conns, c)
	}
}

// remove takes e out of whichever list holds it. l.mu is held.
func (l *connLimit) remove(e *list.Element) {
	l.fresh.Remove(e) // a no-op unless e is in fresh
	l.idle.Remove(e)
}

// open returns how many connections are open.
func (l *connLimit) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

// registerLoadMetrics exports the S3 listener's connection and request
// limits: connections open and closed to make room or refused, requests
// waiting and refused with SlowDown (requests in flight are
// coffer_s3_requests_in_flight, from metrics.TrackInFlight).
func registerLoadMetrics(m *metrics.Registry, l *connLimit, h *s3api.Handler) error {
	for _, g := range []struct {
		name, help string
		f          func() float64
		counter    bool
	}{
		{"coffer_s3_connections_open", "Connections open on the S3 listener.", func() float64 { return float64(l.open()) }, false},
		{"coffer_s3_connections_evicted_total", "Connections closed to make room for new ones (limits.connections reached): waiting ones, or ones whose client did not read its answer (coffer_s3_connections_stalled_total).", func() float64 { return float64(l.evicted.Load()) }, true},
		{"coffer_s3_connections_stalled_total", "Connections closed to make room for new ones because their answer had moved nothing for 2 s (a client that does not read).", func() float64 { return float64(l.stalled.Load()) }, true},
		{"coffer_s3_connections_refused_total", "New connections closed at once because every open one had a request in progress (limits.connections reached).", func() float64 { return float64(l.refused.Load()) }, true},
		{"coffer_s3_requests_queued", "S3 requests waiting for one of limits.requests (at most limits.queue), and form uploads waiting to read their fields (at most an eighth of that more).", func() float64 { return float64(h.Load().Queued) }, false},
		{"coffer_s3_requests_slowdown_total", "S3 requests answered 503 SlowDown: the queue (or the form uploads' queue) was full or they waited limits.queue-wait.", func() float64 { return float64(h.Load().Refused) }, true},
	} {
		var err error
		if g.counter {
			err = m.CounterFunc(g.name, g.help, g.f)
		} else {
			err = m.GaugeFunc(g.name, g.help, g.f)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
