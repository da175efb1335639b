package audit

import (
	"database/sql"
	"os"
	"testing"

	"github.com/coffer-s3/coffer/internal/meta"
	"github.com/coffer-s3/coffer/internal/meta/pgtest"
)

// testPG is the PostgreSQL server of this test binary, started by the
// first test that needs it.
var testPG pgtest.Lazy

func TestMain(m *testing.M) {
	code := m.Run()
	testPG.Stop()
	os.Exit(code)
}

// A backend opens a Log of one kind for a test, closed when it ends.
type backend struct {
	name string
	open func(t *testing.T, cfg Config, h hooks) *Log
}

// backends are where a Log can keep its events: a SQLite file, and the
// PostgreSQL table of a shared metadata store.
var backends = []backend{
	{"sqlite", openTest},
	{"postgres", openPGTest},
}

// forEachBackend runs fn as a subtest for each backend.
func forEachBackend(t *testing.T, fn func(t *testing.T, b backend)) {
	t.Helper()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			fn(t, b)
		})
	}
}

// pgHandle returns a database/sql handle on a new PostgreSQL schema that
// the metadata migrations have set up (coffer_audit included), with its
// connection string, or skips t without PostgreSQL.
func pgHandle(t *testing.T, url string) *sql.DB {
	t.Helper()
	db, err := meta.Open(meta.Config{Kind: meta.EnginePostgres, Postgres: meta.PostgresConfig{URL: url, MaxConns: 2}})
	if err != nil {
		t.Fatalf("meta.Open: %v", err)
	}
	h, err := db.SQL(4)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return h
}

// openPGTest opens a Log in the PostgreSQL table of a new schema and
// closes it when the test ends.
func openPGTest(t *testing.T, cfg Config, h hooks) *Log {
	t.Helper()
	cfg.Postgres = pgHandle(t, testPG.Get(t).NewSchema(t))
	return openPGWith(t, cfg, h)
}

// openPGOn opens a Log on the PostgreSQL schema url, as another node (or
// a restarted one) would, and closes it when the test ends.
func openPGOn(t *testing.T, url string) *Log {
	t.Helper()
	return openPGWith(t, Config{Postgres: pgHandle(t, url)}, hooks{})
}

// openPGWith opens a Log with cfg, whose Postgres is set, and closes it
// when the test ends.
func openPGWith(t *testing.T, cfg Config, h hooks) *Log {
	t.Helper()
	l, err := open(cfg, h)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return l
}
