package meta

import (
	"context"
	"errors"
	"fmt"
)

// Status describes the store: which engine holds it and at which version
// of its layout.
type Status struct {
	Engine string // EnginePebble or EnginePostgres
	// SchemaVersion is the version of the layout the store has: the
	// format key's with Pebble, the last schema migration applied with
	// PostgreSQL.
	SchemaVersion int
	// KnownVersion is the latest version this Coffer knows.
	KnownVersion int
}

// Status returns the store's engine and schema version.
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
		st := Status{Engine: EnginePebble, KnownVersion: formatVersion}
		if len(v) == 1 {
			st.SchemaVersion = int(v[0])
		}
		return st, nil
	}
	ms, err := pgMigrations()
	if err != nil {
		return Status{}, err
	}
	st := Status{Engine: EnginePostgres, KnownVersion: len(ms)}
	err = p.pool.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM coffer_schema`).Scan(&st.SchemaVersion)
	if err != nil {
		return Status{}, fmt.Errorf("meta: read the schema version: %w", err)
	}
	return st, nil
}
