package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// ErrNewerSchema is returned by Open for a database written by a newer
// Coffer, whose schema this one does not know.
var ErrNewerSchema = errors.New("audit: database schema is newer than this Coffer knows")

// busyTimeout is how long a statement waits for a lock another connection
// (or process) holds before failing: the writer and Prune both write.
const busyTimeout = 5 * time.Second

// defaultPageSize is SQLite's page size, which a new database gets: the
// unit of wal_autocheckpoint.
const defaultPageSize = 4096

// Bounds of the WAL's size (see walSize).
const (
	minWAL = 64 << 10
	maxWAL = 4 << 20
)

// walSize returns the size the WAL is kept at for a log capped at
// maxBytes (0: no cap): a sixteenth of the cap, between 64KiB and 4MiB
// (SQLite's default, 1,000 pages).
func walSize(maxBytes int64) int64 {
	if maxBytes <= 0 {
		return maxWAL
	}
	return min(max(maxBytes/16, minWAL), maxWAL)
}

// maxConns bounds the connections to the database: the writer's own and
// a few for Query, Export and Prune, which WAL mode lets read while the
// writer writes.
const maxConns = 5

// migrations[i] takes the schema from version i to i+1; the version is
// PRAGMA user_version. Add a migration, never edit one. A read-only table.
//
// Version 1, the events table. Times and durations are integers (Unix
// nanoseconds in UTC, nanoseconds), so that ranges compare as numbers and
// nothing is lost. AUTOINCREMENT keeps IDs from being reused even when
// pruning empties the table, so an ID found in an export always means
// the same event.
//
// The indexes serve the questions asked most, and stop there because
// every index is written with every event:
//   - events_time: retention (DELETE of the oldest) and Since/Until;
//   - events_bucket_key: "who touched this object / these keys": Bucket
//     alone, Bucket with a KeyPrefix (a range on object_key);
//   - events_user: "what did this user do";
//   - events_op: "every DeleteBucket", "every admin:DeleteUser".
//
// Query and Export pick the page's IDs with a subquery that an index
// answers alone (index entries carry the rowid), sorting only IDs, and
// then read those rows by primary key. So a filter on indexed columns
// costs about 0.1 µs per matching event plus the page, never a read of
// every matching row: a bucket with 20,000 events pages in 2 ms. Source,
// access key, source IP and status are not indexed: the scan walks the
// table newest first and stops at the page's limit, quick for common
// values and a full scan for rare ones.
//
// Version 2 adds count, Event.Count: 0 for an event of one request, the
// number of requests a summary of refused or unauthenticated requests
// stands for. Existing rows are ordinary events, hence the default.
//
// Version 3 adds untrusted, Event.Untrusted, and a partial index of the
// untrusted events' IDs, which the size cap evicts first (oldest first)
// and counts at Open. Existing rows count as trusted: nothing told them
// apart.
var migrations = []string{
	`CREATE TABLE events (
		id          INTEGER PRIMARY KEY AUTOINCREMENT,
		time_ns     INTEGER NOT NULL,
		source      TEXT    NOT NULL,
		op          TEXT    NOT NULL,
		status      INTEGER NOT NULL,
		code        TEXT    NOT NULL,
		bucket      TEXT    NOT NULL,
		object_key  TEXT    NOT NULL,
		target      TEXT    NOT NULL,
		user_name   TEXT    NOT NULL,
		access_key  TEXT    NOT NULL,
		source_ip   TEXT    NOT NULL,
		request_id  TEXT    NOT NULL,
		bytes_in    INTEGER NOT NULL,
		bytes_out   INTEGER NOT NULL,
		duration_ns INTEGER NOT NULL
	);
	CREATE INDEX events_time ON events (time_ns);
	CREATE INDEX events_bucket_key ON events (bucket, object_key);
	CREATE INDEX events_user ON events (user_name);
	CREATE INDEX events_op ON events (op);`,
	`ALTER TABLE events ADD COLUMN count INTEGER NOT NULL DEFAULT 0;`,
	`ALTER TABLE events ADD COLUMN untrusted INTEGER NOT NULL DEFAULT 0;
	CREATE INDEX events_untrusted ON events (id) WHERE untrusted;`,
}

// columns are the events columns in Event's field order, for INSERT and
// SELECT.
const columns = `id, time_ns, source, op, status, code, bucket, object_key, target,
	user_name, access_key, source_ip, request_id, bytes_in, bytes_out, duration_ns, count, untrusted`

const insertSQL = `INSERT INTO events (time_ns, source, op, status, code, bucket, object_key, target,
	user_name, access_key, source_ip, request_id, bytes_in, bytes_out, duration_ns, count, untrusted)
	VALUES ` + insertRow

// insertRow is the placeholders of one row of insertSQL.
const insertRow = `(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// insertRows is how many events one execution of insertManySQL stores: a
// statement per event cost the SQLite writer more than the rows' B-tree
// inserts. 32 rows are 544 parameters, far below SQLite's limit (32,766).
const insertRows = 32

// insertManySQL is insertSQL with insertRows rows.
var insertManySQL = insertSQL + strings.Repeat(", "+insertRow, insertRows-1)

// pruneSQL deletes at most pruneBatch of the oldest events before a time:
// a bounded transaction, so that the writer (or a concurrent Prune) waits
// for a few milliseconds at most. It returns the untrusted column of each
// row it deleted, so that the count of untrusted events stays right.
const pruneSQL = `DELETE FROM events WHERE id IN
	(SELECT id FROM events WHERE time_ns < ? ORDER BY time_ns LIMIT ?) RETURNING untrusted`

// evictUntrustedSQL deletes the oldest untrusted events, at most the
// given number, through events_untrusted; evictTrustedSQL the oldest of
// the others, by ID, the order they were stored in, which the table's
// own B-tree walks (the cap evicts them only once no untrusted event is
// left to skip).
const (
	evictUntrustedSQL = `DELETE FROM events WHERE id IN (SELECT id FROM events WHERE untrusted ORDER BY id LIMIT ?)`
	evictTrustedSQL   = `DELETE FROM events WHERE id IN (SELECT id FROM events WHERE NOT untrusted ORDER BY id LIMIT ?)`
)

// pruneBatch is the most events one pruning or evicting statement
// deletes.
const pruneBatch = 1000

// countDeleted reads the rows of a DELETE … RETURNING untrusted and
// returns how many it deleted, and how many of those were untrusted.
func countDeleted(rows *sql.Rows, err error) (n, untrusted int64, _ error) {
	if err != nil {
		return 0, 0, err
	}
	defer rows.Close()
	for rows.Next() {
		var u bool
		if err := rows.Scan(&u); err != nil {
			return n, untrusted, err
		}
		n++
		if u {
			untrusted++
		}
	}
	return n, untrusted, rows.Err()
}

// appendInsertArgs appends e's row of insertSQL's arguments to args.
func appendInsertArgs(args []any, e *Event) []any {
	return append(args, e.Time.UnixNano(), e.Source, e.Op, e.Status, e.Code, e.Bucket, e.Key,
		e.Target, e.User, e.AccessKey, e.SourceIP, e.RequestID, e.BytesIn, e.BytesOut, int64(e.Duration), e.Count,
		e.Untrusted)
}

// scanEvent reads a row of columns into e.
func scanEvent(rows *sql.Rows, e *Event) error {
	var tns, dns int64
	err := rows.Scan(&e.ID, &tns, &e.Source, &e.Op, &e.Status, &e.Code, &e.Bucket, &e.Key, &e.Target,
		&e.User, &e.AccessKey, &e.SourceIP, &e.RequestID, &e.BytesIn, &e.BytesOut, &dns, &e.Count, &e.Untrusted)
	if err != nil {
		return err
	}
	e.Time = time.Unix(0, tns).UTC()
	e.Duration = time.Duration(dns)
	return nil
}

// openDB creates path's directory (0700) and the file (0600) if they are
// missing, tightens an existing file to 0600, and opens it with the
// connection settings every connection needs: WAL, synchronous=NORMAL,
// a busy timeout, and immediate transactions (every transaction here
// writes, and taking the write lock up front lets the busy timeout apply
// instead of failing on a lock upgrade).
//
// The WAL is checkpointed into the database once it holds walBytes and
// cut back to walBytes after a checkpoint, so that it stays about that
// size rather than keeping the size of its largest burst.
func openDB(path string, walBytes int64) (*sql.DB, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("audit: resolve %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("audit: create directory of %s: %w", abs, err)
	}
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit: open %s: %w", abs, err)
	}
	fi, err := f.Stat()
	if err == nil && fi.Mode().Perm()&0o077 != 0 {
		err = f.Chmod(0o600)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("audit: set mode of %s: %w", abs, err)
	}
	// A URI, so that any character can be in the path: the driver would
	// take a plain path's "?" as the start of its parameters.
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", fmt.Sprintf("wal_autocheckpoint(%d)", max(walBytes/defaultPageSize, 1)))
	q.Add("_pragma", fmt.Sprintf("journal_size_limit(%d)", walBytes))
	q.Set("_txlock", "immediate")
	dsn := "file:" + (&url.URL{Path: abs}).EscapedPath() + "?" + q.Encode()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("audit: open %s: %w", abs, err)
	}
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	return db, nil
}

// migrate brings the schema to the newest version, in one transaction per
// step, refusing a database of a newer version or one that holds tables
// but no audit schema (another program's file).
func migrate(ctx context.Context, db *sql.DB, path string) error {
	for {
		done, err := migrateStep(ctx, db, path)
		if err != nil || done {
			return err
		}
	}
}

// migrateStep applies the next migration; done is true when there is none.
// It reads the version inside the (immediate, so exclusive) transaction:
// two processes opening one new file do not both create the schema.
func migrateStep(ctx context.Context, db *sql.DB, path string) (done bool, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("audit: open %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback() // the error that made us roll back is the one to report
		}
	}()
	var version int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return false, fmt.Errorf("audit: read schema version of %s: %w", path, err)
	}
	switch {
	case version > len(migrations):
		return false, fmt.Errorf("%w: %s has schema version %d, this Coffer knows up to %d; run a newer Coffer or point the audit log at another file",
			ErrNewerSchema, path, version, len(migrations))
	case version == len(migrations):
		return true, tx.Rollback()
	case version == 0:
		var tables int
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema WHERE type = 'table'").Scan(&tables); err != nil {
			return false, fmt.Errorf("audit: read schema of %s: %w", path, err)
		}
		if tables > 0 {
			return false, fmt.Errorf("audit: %s is not an audit log: it has tables but no audit schema version", path)
		}
	}
	if _, err := tx.ExecContext(ctx, migrations[version]); err != nil {
		return false, fmt.Errorf("audit: migrate %s to schema version %d: %w", path, version+1, err)
	}
	// PRAGMA takes no bound parameters; the value is our own integer.
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", version+1)); err != nil {
		return false, fmt.Errorf("audit: set schema version of %s: %w", path, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("audit: migrate %s to schema version %d: %w", path, version+1, err)
	}
	return false, nil
}
