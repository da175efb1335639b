package meta

import (
	"database/sql"
	"errors"

	"github.com/jackc/pgx/v5/stdlib"
)

// ErrNotShared is returned by SQL with an embedded engine (Pebble).
var ErrNotShared = errors.New("meta: the metadata store is not shared (meta.kind is not postgres)")

// SQL returns a database/sql handle on the shared store's database and
// schema, with a pool of its own of at most maxConns connections (the
// engine's connection settings: password, statement timeout, connect
// timeout), for the typed tables that other packages own and this
// package's migrations create: the cluster's audit log (coffer_audit,
// schema version 3). Its pool is apart from the engine's, so that a
// backlog there never takes a connection a request needs. The caller
// closes it. With Pebble it returns ErrNotShared.
func (db *DB) SQL(maxConns int) (*sql.DB, error) {
	p, ok := db.kv.(*pgKV)
	if !ok {
		return nil, ErrNotShared
	}
	h := stdlib.OpenDB(*p.connConfig.Copy())
	h.SetMaxOpenConns(max(maxConns, 1))
	h.SetMaxIdleConns(max(maxConns, 1))
	return h, nil
}
