package meta

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

// The schema is created and upgraded by numbered SQL files,
// pgschema/NNNN_title.sql, applied in order, each in a transaction with
// the row that records it in coffer_schema. Several nodes starting at
// once take turns under a session advisory lock; the first applies what
// is missing and the others find nothing to do. A migration is never
// edited once released: a change is a new file.
//
//go:embed pgschema/*.sql
var pgSchemaFS embed.FS

// pgSchemaLock is the advisory lock ID migrations hold: "coffer schema"
// in ASCII, apart from every hashed lock ID only by chance.
const pgSchemaLock = 0x636f666665720001

// pgMigration is one schema file.
type pgMigration struct {
	version int
	name    string
	sql     string
}

// pgMigrations returns the embedded migrations in version order, checking
// that they are numbered 1, 2, … without gaps.
func pgMigrations() ([]pgMigration, error) {
	names, err := fs.Glob(pgSchemaFS, "pgschema/*.sql")
	if err != nil {
		return nil, err
	}
	var out []pgMigration
	for i, name := range names { // Glob sorts
		base := path.Base(name)
		n, err := strconv.Atoi(strings.SplitN(base, "_", 2)[0])
		if err != nil || n != i+1 {
			return nil, fmt.Errorf("meta: schema file %s is not number %d", base, i+1)
		}
		b, err := pgSchemaFS.ReadFile(name)
		if err != nil {
			return nil, err
		}
		out = append(out, pgMigration{version: n, name: base, sql: string(b)})
	}
	return out, nil
}

// migratePostgres applies the migrations the database lacks and returns
// its schema version. A database of a newer schema than this Coffer knows
// is refused: an older binary must not write records it may misread.
func migratePostgres(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) (int, error) {
	ms, err := pgMigrations()
	if err != nil {
		return 0, err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return 0, fmt.Errorf("meta: connect to PostgreSQL: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(pgSchemaLock)); err != nil {
		return 0, fmt.Errorf("meta: lock the schema: %w", err)
	}
	defer func() {
		if _, err := conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(pgSchemaLock)); err != nil {
			_ = conn.Conn().Close(ctx) // closing the session releases the lock
		}
	}()
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS coffer_schema (
	version int4 PRIMARY KEY,
	name    text NOT NULL,
	applied timestamptz NOT NULL DEFAULT now())`); err != nil {
		return 0, fmt.Errorf("meta: create the schema table: %w", err)
	}
	var cur int
	if err := conn.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM coffer_schema`).Scan(&cur); err != nil {
		return 0, fmt.Errorf("meta: read the schema version: %w", err)
	}
	if cur > len(ms) {
		return 0, fmt.Errorf("%w: PostgreSQL schema version %d; this Coffer knows versions up to %d", errFormat, cur, len(ms))
	}
	for _, m := range ms[cur:] {
		tx, err := conn.Begin(ctx)
		if err != nil {
			return 0, fmt.Errorf("meta: schema migration %s: %w", m.name, err)
		}
		_, err = tx.Exec(ctx, m.sql)
		if err == nil {
			_, err = tx.Exec(ctx, `INSERT INTO coffer_schema (version, name) VALUES ($1, $2)`, m.version, m.name)
		}
		if err == nil {
			err = tx.Commit(ctx)
		}
		if err != nil {
			return 0, errors.Join(fmt.Errorf("meta: schema migration %s: %w", m.name, err), tx.Rollback(ctx))
		}
		log.Info("metadata schema migrated", "version", m.version, "name", m.name)
		cur = m.version
	}
	return cur, nil
}
