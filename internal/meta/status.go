package meta

import (
	"context"
	"errors"
	"fmt"
)

// Status describes the store: which engine holds it, at which version of
// its layout, and its ID.
type Status struct {
	Engine string // EnginePebble or EnginePostgres
	// SchemaVersion is the version of the layout the store has: the
	// format key's with Pebble, the last schema migration applied with
	// PostgreSQL.
	SchemaVersion int
	// KnownVersion is the latest version this Coffer knows.
	KnownVersion int
	// StoreID is the store's ID (see DB.StoreID): what a gateway's claim
	// of its upstream prefix names.
	StoreID string
}

// Status returns the store's engine, schema version and ID.
func (db *DB) Status(ctx context.Context) (Status, error) {
	if err := ctx.Err(); err != nil {
		return Status{}, err
	}
	p, ok := db.kv.(*pgKV)
	if !ok {
		v, err := db.kv.get([]byte{tableFormat}, nil)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return Status{}, fmt.Errorf("meta: read format: %w", err)
		}
		st := Status{Engine: EnginePebble, KnownVersion: formatVersion, StoreID: db.storeID}
		if len(v) == 1 {
			st.SchemaVersion = int(v[0])
		}
		return st, nil
	}
	ms, err := pgMigrations()
	if err != nil {
		return Status{}, err
	}
	st := Status{Engine: EnginePostgres, KnownVersion: len(ms), StoreID: db.storeID}
	err = p.pool.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM coffer_schema`).Scan(&st.SchemaVersion)
	if err != nil {
		return Status{}, fmt.Errorf("meta: read the schema version: %w", err)
	}
	return st, nil
}
