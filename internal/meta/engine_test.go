package meta

import (
	"os"
	"testing"

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

// An engine makes stores for the conformance tests: every test that runs
// forEachEngine runs once per engine, so that a behaviour in which
// PostgreSQL differs from Pebble is a failing test.
type engine struct {
	name string
	// place returns where a new empty store lives: a directory, a
	// connection string.
	place func(t testing.TB) string
	// config returns the configuration that opens the store at place.
	config func(place string) Config
}

var engines = []engine{
	{
		name:   EnginePebble,
		place:  func(t testing.TB) string { return t.TempDir() },
		config: func(dir string) Config { return Config{Dir: dir, Sync: true} },
	},
	{
		name:  EnginePostgres,
		place: func(t testing.TB) string { return testPG.Get(t).NewSchema(t) },
		config: func(url string) Config {
			return Config{Kind: EnginePostgres, Sync: true, Postgres: PostgresConfig{URL: url, MaxConns: 8}}
		},
	},
}

// open opens an empty store, closed when t ends.
func (e engine) open(t testing.TB) *DB {
	t.Helper()
	return e.openAt(t, e.place(t))
}

// openAt opens the store at place, closed when t ends.
func (e engine) openAt(t testing.TB, place string) *DB {
	t.Helper()
	db, err := Open(e.config(place))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// forEachEngine runs fn as a subtest per engine, named after it.
func forEachEngine(t *testing.T, fn func(t *testing.T, e engine)) {
	t.Helper()
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) { fn(t, e) })
	}
}
