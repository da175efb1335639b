// Package pgtest gives tests a PostgreSQL server: the one that
// COFFER_TEST_POSTGRES_URL names, or else a throwaway cluster started
// from the PostgreSQL binaries of this machine (initdb and pg_ctl on PATH
// or under /usr/lib/postgresql/*/bin) in a temporary directory, reachable
// only through a Unix socket there. Each test gets an empty schema of its
// own.
//
// Without either, tests that need PostgreSQL skip, saying why; with
// CI=true they fail instead, so that CI never passes by skipping them.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names the variable that points tests at an existing server
// (a postgres:// URL or key=value connection string of a role that may
// create schemas).
const EnvURL = "COFFER_TEST_POSTGRES_URL"

// errNoPostgres is returned by start when there is neither EnvURL nor a
// local installation.
var errNoPostgres = errors.New("no PostgreSQL: set " + EnvURL + " or install PostgreSQL (Debian: apt-get install postgresql)")

// Lazy is the server of one test binary, started by the first test that
// asks for it. Declare one per package and Stop it in TestMain:
//
//	var pg pgtest.Lazy
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		pg.Stop()
//		os.Exit(code)
//	}
type Lazy struct {
	once sync.Once
	srv  *Server
	err  error
}

// Get returns the server, starting it on first use. It skips t if there is
// no PostgreSQL (fails it under CI=true) and fails t if the server does
// not start.
func (l *Lazy) Get(t testing.TB) *Server {
	t.Helper()
	l.once.Do(func() { l.srv, l.err = start() })
	switch {
	case errors.Is(l.err, errNoPostgres) && os.Getenv("CI") != "true":
		t.Skipf("pgtest: %v", l.err)
	case l.err != nil:
		t.Fatalf("pgtest: %v", l.err)
	}
	return l.srv
}

// Stop stops the cluster if Get started one, and removes its directory.
func (l *Lazy) Stop() {
	if l.srv != nil {
		l.srv.stop()
	}
}

// Start starts a cluster of t's own, for a test that stops or restarts
// the server (Down, Up), which it must not do to the one other tests
// share; it is stopped and removed when t ends. It needs the PostgreSQL
// binaries of this machine even when EnvURL names a server: it skips t
// without them (fails it under CI=true).
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := findBin()
	switch {
	case errors.Is(err, errNoPostgres) && os.Getenv("CI") != "true":
		t.Skipf("pgtest: %v", err)
	case err != nil:
		t.Fatalf("pgtest: %v", err)
	}
	dir, err := os.MkdirTemp("", "coffer-pg-")
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	s := &Server{dir: dir, bin: bin}
	t.Cleanup(s.stop)
	if err := s.startCluster(); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return s
}

// Server is a PostgreSQL server for tests.
type Server struct {
	base string // connection string of the server's postgres database
	dir  string // the cluster's directory, if we started it
	bin  string // directory of pg_ctl
	opts string // the server's options (pg_ctl -o), if we started it
	cred *credential

	mu sync.Mutex // guards n
	n  int        // schemas created
}

// NewSchema creates an empty schema and returns a connection string whose
// search_path is that schema, so that unqualified tables land there. The
// schema is dropped when t ends.
func (s *Server) NewSchema(t testing.TB) string {
	t.Helper()
	s.mu.Lock()
	s.n++
	name := fmt.Sprintf("t%d_%d", os.Getpid(), s.n)
	s.mu.Unlock()
	if err := s.exec(t.Context(), "CREATE SCHEMA "+name); err != nil {
		t.Fatalf("pgtest: create schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.exec(ctx, "DROP SCHEMA "+name+" CASCADE"); err != nil {
			t.Errorf("pgtest: drop schema: %v", err)
		}
	})
	return withParam(s.base, "search_path", name)
}

// URL returns the connection string of the server's default database.
func (s *Server) URL() string { return s.base }

func (s *Server) exec(ctx context.Context, sql string) error {
	c, err := pgx.Connect(ctx, s.base)
	if err != nil {
		return err
	}
	_, err = c.Exec(ctx, sql)
	return errors.Join(err, c.Close(ctx))
}

// withParam adds a run-time parameter to a connection string of either
// form.
func withParam(conn, key, value string) string {
	if strings.HasPrefix(conn, "postgres://") || strings.HasPrefix(conn, "postgresql://") {
		u, err := url.Parse(conn)
		if err == nil {
			q := u.Query()
			q.Set(key, value)
			u.RawQuery = q.Encode()
			return u.String()
		}
	}
	return conn + " " + key + "=" + value
}

// start connects to EnvURL's server, or starts a cluster.
func start() (*Server, error) {
	if u := os.Getenv(EnvURL); u != "" {
		return &Server{base: u}, nil
	}
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "coffer-pg-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, bin: bin}
	if err := s.startCluster(); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// findBin returns the directory of initdb and pg_ctl.
func findBin() (string, error) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if _, err := exec.LookPath("initdb"); err == nil {
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	for i := len(dirs) - 1; i >= 0; i-- { // the newest version
		if _, err := os.Stat(filepath.Join(dirs[i], "pg_ctl")); err == nil {
			return dirs[i], nil
		}
	}
	return "", errNoPostgres
}

// startCluster creates a cluster in s.dir/data and starts it, listening
// only on a socket in s.dir, without fsync (a test cluster need not
// survive a crash). PostgreSQL refuses to run as root, so as root it runs
// as the user postgres, or nobody.
func (s *Server) startCluster() error {
	var err error
	if s.cred, err = unprivileged(s.dir); err != nil {
		return err
	}
	data := filepath.Join(s.dir, "data")
	if err := s.run("initdb", "-D", data, "-U", "postgres", "--auth=trust", "--no-sync",
		"--encoding=UTF8", "--locale=C"); err != nil {
		return err
	}
	// In postgresql.conf rather than on the command line, so that a
	// benchmark can turn fsync on with ALTER SYSTEM.
	conf, err := os.OpenFile(filepath.Join(data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = conf.WriteString("\n# pgtest\nfsync = off\nfull_page_writes = off\nmax_connections = 300\nshared_buffers = 64MB\n")
	if err = errors.Join(err, conf.Close()); err != nil {
		return err
	}
	s.opts = "-c listen_addresses='' -c unix_socket_directories=" + s.dir + " -p 5432"
	if err := s.pgStart(); err != nil {
		return err
	}
	s.base = fmt.Sprintf("host=%s port=5432 user=postgres dbname=postgres sslmode=disable", s.dir)
	return nil
}

// pgStart starts the cluster in s.dir and waits until it accepts
// connections.
func (s *Server) pgStart() error {
	data := filepath.Join(s.dir, "data")
	if err := s.run("pg_ctl", "start", "-w", "-t", "60", "-D", data, "-l", filepath.Join(s.dir, "log"), "-o", s.opts); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.dir, "log"))
		return fmt.Errorf("%w\n%s", err, log)
	}
	return nil
}

// Down shuts a server Start started down as an operator's restart does
// (pg_ctl stop -m fast): sessions are terminated (SQLSTATE 57P01), new
// connections refused, until Up.
func (s *Server) Down(t testing.TB) {
	t.Helper()
	if s.opts == "" {
		t.Fatal("pgtest: Down needs a server of Start's")
	}
	if err := s.run("pg_ctl", "stop", "-w", "-m", "fast", "-D", filepath.Join(s.dir, "data")); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
}

// Up starts a server that Down stopped, on the same socket.
func (s *Server) Up(t testing.TB) {
	t.Helper()
	if err := s.pgStart(); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
}

// stop stops the cluster we started (fast: no checkpoint) and removes it.
func (s *Server) stop() {
	if s.dir == "" {
		return
	}
	if s.base != "" {
		_ = s.run("pg_ctl", "stop", "-w", "-m", "immediate", "-D", filepath.Join(s.dir, "data"))
	}
	_ = os.RemoveAll(s.dir)
}

// run runs one of PostgreSQL's programs as the cluster's user.
func (s *Server) run(name string, args ...string) error {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	s.cred.apply(cmd)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w\n%s", name, err, out)
	}
	return nil
}
