package pgtest

import (
	"errors"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// Proxy forwards TCP connections on 127.0.0.1 to the server, and can
// cut them: a database outage, as clients see one (connections reset,
// new ones refused), without stopping the server other tests use.
type Proxy struct {
	addr   string
	dial   func() (net.Conn, error)
	mu     sync.Mutex // guards ln, conns
	ln     net.Listener
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
	closed bool
}

// Proxy starts a proxy to the server of conn (a connection string
// NewSchema returned) and returns it with the connection string that
// reaches the same database and schema through it. It stops when t ends.
func (s *Server) Proxy(t testing.TB, conn string) (*Proxy, string) {
	t.Helper()
	cfg, err := pgconn.ParseConfig(conn)
	if err != nil {
		t.Fatalf("pgtest: proxy: %v", err)
	}
	network, target := "tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))
	if strings.HasPrefix(cfg.Host, "/") {
		network, target = "unix", filepath.Join(cfg.Host, ".s.PGSQL."+strconv.Itoa(int(cfg.Port)))
	}
	p := &Proxy{dial: func() (net.Conn, error) { return net.Dial(network, target) }, conns: map[net.Conn]struct{}{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("pgtest: proxy: %v", err)
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(p.stop)
	host, port, _ := net.SplitHostPort(p.addr)
	if u, err := url.Parse(conn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		u.Host = p.addr
		return p, u.String()
	}
	return p, conn + " host=" + host + " port=" + port
}

func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Go(func() { p.pipe(c) })
		}
	})
}

func (p *Proxy) pipe(c net.Conn) {
	u, err := p.dial()
	if err != nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	if p.ln == nil {
		p.mu.Unlock()
		_, _ = c.Close(), u.Close()
		return
	}
	p.conns[c], p.conns[u] = struct{}{}, struct{}{}
	p.mu.Unlock()
	var wg sync.WaitGroup
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		_, _ = dst.Close(), src.Close()
	}
	wg.Go(func() { cp(u, c) })
	wg.Go(func() { cp(c, u) })
	wg.Wait()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, u)
	p.mu.Unlock()
}

// Down cuts every connection and refuses new ones until Up.
func (p *Proxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close()
	}
}

// Up accepts connections again, on the same address.
func (p *Proxy) Up() error {
	p.mu.Lock()
	if p.ln != nil || p.closed {
		p.mu.Unlock()
		return nil
	}
	p.mu.Unlock()
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		return errors.Join(errors.New("pgtest: proxy: listen again"), err)
	}
	p.serve(ln)
	return nil
}

func (p *Proxy) stop() {
	p.Down()
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.wg.Wait()
}
