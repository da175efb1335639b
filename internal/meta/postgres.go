package meta

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coffer-s3/coffer/internal/secretfile"
)

// PostgresConfig configures the PostgreSQL engine (Config.Kind
// EnginePostgres), with which several Coffer nodes share one metadata
// store. See docs/design/0011-postgres-metadata.md.
type PostgresConfig struct {
	// URL is the connection string (a postgres:// URL or key=value
	// pairs). It may hold a password, so it is never logged.
	URL string `toml:"url"`
	// PasswordFile, if set, names a file whose first line is the
	// password, which then overrides any in URL.
	PasswordFile string `toml:"password-file"`
	// MaxConns bounds the connection pool; 0 means DefaultMaxConns. A
	// write holds one connection from its first read to its commit.
	MaxConns int `toml:"max-conns"`
	// StatementTimeout bounds every statement, the wait for an advisory
	// lock included, and a transaction left idle; 0 means
	// DefaultStatementTimeout.
	StatementTimeout time.Duration `toml:"statement-timeout"`
}

// Defaults of PostgresConfig.
const (
	DefaultMaxConns         = 16
	DefaultStatementTimeout = 30 * time.Second
)

// SQL of the engine. Keys are bytea, which compares as unsigned bytes, as
// Pebble does; every range query is bounded on both sides (pgMaxKey when
// the caller gives no upper bound) so that it is an index range scan that
// stops at its bound.
const (
	sqlGet      = `SELECT v FROM coffer_kv WHERE k = $1`
	sqlGetUsage = `SELECT v FROM coffer_usage_sum WHERE k = $1`
	sqlSet      = `INSERT INTO coffer_kv (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = excluded.v`
	sqlDelete   = `DELETE FROM coffer_kv WHERE k = $1`
	sqlFwd      = `SELECT k, v FROM coffer_kv WHERE k >= $1 AND k < $2 ORDER BY k LIMIT $3`
	sqlBwd      = `SELECT k, v FROM coffer_kv WHERE k >= $1 AND k < $2 ORDER BY k DESC LIMIT $3`
	// A range that meets the usage table reads both tables, merged in key
	// order.
	sqlFwdUsage = `SELECT k, v FROM (
	SELECT k, v FROM coffer_kv WHERE k >= $1 AND k < $2
	UNION ALL SELECT k, v FROM coffer_usage_sum WHERE k >= $1 AND k < $2) r ORDER BY k LIMIT $3`
	sqlBwdUsage = `SELECT k, v FROM (
	SELECT k, v FROM coffer_kv WHERE k >= $1 AND k < $2
	UNION ALL SELECT k, v FROM coffer_usage_sum WHERE k >= $1 AND k < $2) r ORDER BY k DESC LIMIT $3`
	sqlUsageDelete = `DELETE FROM coffer_usage WHERE k = $1`
	// A merge adds to one of 64 counter rows of the bucket, chosen by the
	// backend, so that concurrent writers of a bucket seldom wait for
	// each other's row lock.
	sqlUsageAdd = `INSERT INTO coffer_usage AS u (k, shard, objects, bytes, uploads, part_bytes)
	VALUES ($1, pg_backend_pid() % 64, $2, $3, $4, $5)
	ON CONFLICT (k, shard) DO UPDATE SET objects = u.objects + excluded.objects, bytes = u.bytes + excluded.bytes,
		uploads = u.uploads + excluded.uploads, part_bytes = u.part_bytes + excluded.part_bytes`
	sqlUsageSet = `INSERT INTO coffer_usage (k, shard, objects, bytes, uploads, part_bytes) VALUES ($1, 0, $2, $3, $4, $5)`

	sqlBegin        = `BEGIN ISOLATION LEVEL READ COMMITTED`
	sqlBeginSnap    = `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`
	sqlNoSync       = `SET LOCAL synchronous_commit TO off`
	sqlLock         = `SELECT pg_advisory_xact_lock($1)`
	sqlLockShared   = `SELECT pg_advisory_xact_lock_shared($1)`
	sqlLockMany     = `SELECT pg_advisory_xact_lock(id) FROM unnest($1::int8[]) AS id`
	sqlCommit       = `COMMIT`
	sqlRollback     = `ROLLBACK`
	pgCommitTag     = "COMMIT"
	pgRollbackDelay = 5 * time.Second // bounds a rollback after the caller's context ended
	// pgConnectTimeout bounds a connection attempt unless the URL sets
	// connect_timeout.
	pgConnectTimeout = 5 * time.Second
)

// pgMaxKey is above every key: keys start with a table letter.
var pgMaxKey = []byte{0xFF}

// pgKV adapts a PostgreSQL database to kv. Reads outside a transaction
// run on any pooled connection, one statement each (iterators: see
// pgIter); a transaction (pgTx) holds one connection from its first
// statement to its end.
type pgKV struct {
	pool       *pgxpool.Pool
	connConfig *pgx.ConnConfig // of the pool's connections, for the change listener's
	timeout    time.Duration   // bounds calls that have no context of their own
	version    int             // schema version after migration
	schema     string          // current_schema(): names notifications and session locks
	log        *slog.Logger
	noListen   bool // tests: no listener connection, so that WatchChanges only polls
}

var (
	_ kv   = (*pgKV)(nil)
	_ kvTx = (*pgTx)(nil)
)

// openPostgres connects to cfg.URL, with a pool of at most cfg.MaxConns
// connections whose statements time out after cfg.StatementTimeout, and
// brings the schema up to date.
func openPostgres(ctx context.Context, cfg PostgresConfig, log *slog.Logger) (*pgKV, error) {
	if cfg.URL == "" {
		return nil, errors.New("meta: no PostgreSQL URL configured")
	}
	pc, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		// pgx's message may quote the URL, password and all.
		return nil, errors.New("meta: the PostgreSQL URL does not parse")
	}
	if cfg.PasswordFile != "" {
		pw, exposed, err := secretfile.ReadLine(cfg.PasswordFile)
		if err != nil {
			return nil, fmt.Errorf("meta: read the PostgreSQL password: %w", err)
		}
		if exposed != nil {
			// A warning, not a refusal: secret volumes (Kubernetes, for
			// one) are often mounted 0644 in a container of one user.
			log.Warn("the PostgreSQL password file is open to group or others: run chmod 600 on it",
				"path", exposed.Path, "mode", fmt.Sprintf("%#o", exposed.Mode))
		}
		pc.ConnConfig.Password = pw
	}
	timeout := cfg.StatementTimeout
	if timeout <= 0 {
		timeout = DefaultStatementTimeout
	}
	pc.MaxConns = int32(cfg.MaxConns)
	if pc.MaxConns <= 0 {
		pc.MaxConns = DefaultMaxConns
	}
	ms := strconv.FormatInt(timeout.Milliseconds(), 10)
	rp := pc.ConnConfig.RuntimeParams
	rp["statement_timeout"] = ms
	// A node that dies (or hangs) inside a transaction must not hold its
	// advisory locks for longer than a statement may take.
	rp["idle_in_transaction_session_timeout"] = ms
	if rp["application_name"] == "" {
		rp["application_name"] = "coffer"
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if pc.ConnConfig.ConnectTimeout <= 0 {
		// Writes run on contexts without a deadline (they must not fail
		// because a client hung up): a connection attempt to a database
		// that does not answer must not hang them.
		pc.ConnConfig.ConnectTimeout = min(timeout, pgConnectTimeout)
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("meta: connect to PostgreSQL: %w", err)
	}
	p := &pgKV{pool: pool, connConfig: pc.ConnConfig, timeout: timeout, log: log}
	if p.version, err = migratePostgres(ctx, pool, log); err != nil {
		pool.Close()
		return nil, err
	}
	if err := pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&p.schema); err != nil {
		pool.Close()
		return nil, fmt.Errorf("meta: read the current schema: %w", pgErr(err))
	}
	return p, nil
}

// ctx returns a context for a call that has none, bounded by the
// statement timeout (the wait for a pooled connection too).
func (p *pgKV) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), p.timeout)
}

func (p *pgKV) get(key, dst []byte) ([]byte, error) {
	ctx, cancel := p.ctx()
	defer cancel()
	v, err := pgGet(ctx, p.pool, key, dst)
	return v, pgErr(err)
}

// pgQuerier is what reads run on: the pool, or one connection.
type pgQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// pgGet reads key through q, appending its value to dst[:0].
func pgGet(ctx context.Context, q pgQuerier, key, dst []byte) ([]byte, error) {
	sql := sqlGet
	if isUsageKey(key) {
		sql = sqlGetUsage
	}
	rows, err := q.Query(ctx, sql, key)
	if err != nil {
		return dst[:0], err
	}
	return scanValue(rows, dst)
}

// scanValue appends the first column of rows' only row to dst[:0], or
// returns ErrNotFound if there is none; it closes rows.
func scanValue(rows pgx.Rows, dst []byte) ([]byte, error) {
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return dst[:0], err
		}
		return dst[:0], ErrNotFound
	}
	out := append(dst[:0], rows.RawValues()[0]...)
	rows.Close()
	return out, rows.Err()
}

func (p *pgKV) newIter(lower, upper []byte) (kvIter, error) {
	return newPgIter(p, nil, lower, upper), nil
}

func (p *pgKV) begin(ctx context.Context) kvTx { return &pgTx{kv: p, ctx: ctx} }

func (p *pgKV) newBatch() kvBatch {
	return &pgBatch{tx: &pgTx{kv: p}, own: true}
}

func (p *pgKV) newIndexedBatch() kvIndexedBatch {
	return &pgIndexedBatch{pgBatch{tx: &pgTx{kv: p}, own: true}}
}

func (p *pgKV) close() error {
	p.pool.Close()
	return nil
}

// isUsageKey reports whether key is in the usage table, which the engine
// keeps in coffer_usage.
func isUsageKey(key []byte) bool { return len(key) > 0 && key[0] == tableUsage }

// meetsUsage reports whether [lower, upper) holds usage keys.
func meetsUsage(lower, upper []byte) bool {
	return (len(lower) == 0 || lower[0] <= tableUsage) && (upper == nil || string(upper) > string([]byte{tableUsage}))
}

// Advisory lock IDs: a stable 64-bit hash (the same on every node) of the
// bucket, or of bucket and key, in separate name spaces. Two names that
// share an ID only serialise more than they need to.
func pgBucketLock(bucket string) int64 {
	h := fnv.New64a()
	h.Write([]byte{'b'})
	h.Write([]byte(bucket))
	return int64(h.Sum64())
}

// pgRepairLock is the ID of bucket's usage repair lock (kvTx.lockRepair).
func pgRepairLock(bucket string) int64 {
	h := fnv.New64a()
	h.Write([]byte{'r'})
	h.Write([]byte(bucket))
	return int64(h.Sum64())
}

func pgKeyLock(bucket, key string) int64 {
	h := fnv.New64a()
	h.Write([]byte{'k'})
	h.Write([]byte(bucket))
	h.Write([]byte{0})
	h.Write([]byte(key))
	return int64(h.Sum64())
}

// pgStmt is a statement waiting to be sent.
type pgStmt struct {
	sql  string
	args []any
}

// pgTx is a transaction of the typed layer on PostgreSQL, at READ
// COMMITTED: every read sees what was committed before it started, so a
// read made after taking a lock sees every write of the lock's earlier
// holders. (REPEATABLE READ would take its snapshot at the first
// statement, the lock itself, before the lock is granted.)
//
// Nothing is sent until it must be: BEGIN and the lock statements wait
// for the first read, which carries them in the same round trip, and a
// batch's writes and COMMIT go in one round trip more.
type pgTx struct {
	kv *pgKV
	// ctx is the DB method's context: a pgTx lives for one call, as a
	// database/sql Tx does.
	ctx     context.Context
	conn    *pgxpool.Conn
	pending []pgStmt // to send before the next statement
	begun   bool     // BEGIN is pending or sent
	done    bool     // committed
	err     error    // the error that aborted the transaction
}

// start queues BEGIN if it is not.
func (t *pgTx) start() {
	if !t.begun {
		t.pending = append(t.pending, pgStmt{sql: sqlBegin})
		t.begun = true
	}
}

func (t *pgTx) lockBucket(bucket string, exclusive bool) {
	t.start()
	sql := sqlLockShared
	if exclusive {
		sql = sqlLock
	}
	t.pending = append(t.pending, pgStmt{sql: sql, args: []any{pgBucketLock(bucket)}})
}

func (t *pgTx) lockKey(bucket, key string) {
	t.start()
	t.pending = append(t.pending, pgStmt{sql: sqlLock, args: []any{pgKeyLock(bucket, key)}})
}

func (t *pgTx) lockRepair(bucket string) {
	t.start()
	t.pending = append(t.pending, pgStmt{sql: sqlLock, args: []any{pgRepairLock(bucket)}})
}

// lockKeys locks in ascending ID order, each ID once, so that two
// multi-key transactions cannot deadlock; unnest yields the array's
// elements in order.
func (t *pgTx) lockKeys(bucket string, keys []string) {
	ids := make([]int64, len(keys))
	for i, k := range keys {
		ids[i] = pgKeyLock(bucket, k)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	t.start()
	t.pending = append(t.pending, pgStmt{sql: sqlLockMany, args: []any{ids}})
}

// connect acquires the transaction's connection.
func (t *pgTx) connect() error {
	if t.err != nil {
		return t.err
	}
	if t.done {
		return errors.New("meta: transaction used after commit")
	}
	if t.conn != nil {
		return nil
	}
	c, err := t.kv.pool.Acquire(t.ctx)
	if err != nil {
		return t.fail(fmt.Errorf("meta: acquire a PostgreSQL connection: %w", err))
	}
	t.conn = c
	return nil
}

// fail records err, if any, as what aborted the transaction.
func (t *pgTx) fail(err error) error {
	err = pgErr(err)
	if err != nil && t.err == nil {
		t.err = err
	}
	return err
}

// query sends the pending statements and then sql, in one round trip, and
// calls fn with each row of sql's result (raw column values, valid only
// during the call). Before the transaction has begun, sql runs on any
// pooled connection.
func (t *pgTx) query(sql string, args []any, fn func(row [][]byte) error) error {
	if !t.begun {
		return pgErr(pgQuery(t.ctx, t.kv.pool, sql, args, fn))
	}
	if err := t.connect(); err != nil {
		return err
	}
	if len(t.pending) == 0 {
		return t.fail(pgQuery(t.ctx, t.conn, sql, args, fn))
	}
	b := &pgx.Batch{}
	for _, s := range t.pending {
		b.Queue(s.sql, s.args...)
	}
	b.Queue(sql, args...)
	n := len(t.pending)
	t.pending = t.pending[:0]
	br := t.conn.SendBatch(t.ctx, b)
	for range n {
		if _, err := br.Exec(); err != nil {
			return t.fail(errors.Join(err, br.Close()))
		}
	}
	rows, err := br.Query()
	if err == nil {
		err = readRows(rows, fn)
	}
	return t.fail(errors.Join(err, br.Close()))
}

// pgQuery runs sql on q and calls fn with each row.
func pgQuery(ctx context.Context, q pgQuerier, sql string, args []any, fn func(row [][]byte) error) error {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	return readRows(rows, fn)
}

// readRows calls fn with each row's raw values and closes rows.
func readRows(rows pgx.Rows, fn func(row [][]byte) error) error {
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows.RawValues()); err != nil {
			return err
		}
	}
	return rows.Err()
}

func (t *pgTx) get(key, dst []byte) ([]byte, error) {
	sql := sqlGet
	if isUsageKey(key) {
		sql = sqlGetUsage
	}
	out, found := dst[:0], false
	err := t.query(sql, []any{key}, func(row [][]byte) error {
		out, found = append(out, row[0]...), true
		return nil
	})
	if err == nil && !found {
		err = ErrNotFound
	}
	return out, err
}

func (t *pgTx) newIter(lower, upper []byte) (kvIter, error) {
	return newPgIter(t.kv, t, lower, upper), nil
}

func (t *pgTx) newBatch() kvBatch { return &pgBatch{tx: t} }

func (t *pgTx) newIndexedBatch() kvIndexedBatch { return &pgIndexedBatch{pgBatch{tx: t}} }

// commit sends the pending statements, ops and COMMIT in one round trip.
// WAL flushes of concurrent commits are shared by PostgreSQL itself.
func (t *pgTx) commit(ops []pgStmt, sync bool) error {
	t.start()
	if err := t.connect(); err != nil {
		return err
	}
	b := &pgx.Batch{}
	for _, s := range t.pending {
		b.Queue(s.sql, s.args...)
	}
	if !sync {
		b.Queue(sqlNoSync)
	}
	for _, s := range ops {
		b.Queue(s.sql, s.args...)
	}
	b.Queue(sqlCommit)
	t.pending = t.pending[:0]
	br := t.conn.SendBatch(t.ctx, b)
	for range b.Len() - 1 {
		if _, err := br.Exec(); err != nil {
			return t.fail(errors.Join(err, br.Close()))
		}
	}
	tag, err := br.Exec()
	if err = errors.Join(err, br.Close()); err != nil {
		// The outcome of a COMMIT whose answer was lost is unknown.
		return t.fail(err)
	}
	if tag.String() != pgCommitTag {
		return t.fail(fmt.Errorf("meta: PostgreSQL answered %q to COMMIT", tag.String()))
	}
	t.done = true
	t.release()
	return nil
}

// end rolls back what did not commit and returns the connection.
func (t *pgTx) end() {
	if t.conn == nil {
		return
	}
	if t.conn.Conn().PgConn().TxStatus() != 'I' {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.ctx), pgRollbackDelay)
		_, err := t.conn.Exec(ctx, sqlRollback)
		cancel()
		if err != nil {
			// The pool closes a connection left in a transaction.
			_ = t.conn.Conn().Close(ctx)
		}
	}
	t.release()
}

func (t *pgTx) release() {
	if t.conn != nil {
		t.conn.Release()
		t.conn = nil
	}
}

// pgBatch queues writes as statements, sent with COMMIT by commit. Usage
// keys become statements on coffer_usage: a merge adds to the backend's
// shard row, a set replaces every shard with one row, a delete deletes
// them.
type pgBatch struct {
	tx    *pgTx
	own   bool // the transaction is the batch's own (kv.newBatch)
	ops   []pgStmt
	notes []pgNote // cached state the batch changes (postgres_changes.go)
	err   error    // the first write that cannot be expressed
}

func (b *pgBatch) set(key, value []byte) {
	b.noteKey(key)
	if isUsageKey(key) {
		var u Usage
		if _, err := sumUsage(value, &u); err != nil {
			b.fail(fmt.Errorf("meta: usage value of %q: %w", key, err))
			return
		}
		k := clone(key)
		b.ops = append(b.ops, pgStmt{sql: sqlUsageDelete, args: []any{k}},
			pgStmt{sql: sqlUsageSet, args: []any{k, u.Objects, u.Bytes, u.Uploads, u.PartBytes}})
		return
	}
	b.ops = append(b.ops, pgStmt{sql: sqlSet, args: []any{clone(key), clone(value)}})
}

func (b *pgBatch) setJoined(key, head, tail []byte) {
	v := make([]byte, 0, len(head)+len(tail))
	b.set(key, append(append(v, head...), tail...))
}

func (b *pgBatch) delete(key []byte) {
	b.noteKey(key)
	sql := sqlDelete
	if isUsageKey(key) {
		sql = sqlUsageDelete
	}
	b.ops = append(b.ops, pgStmt{sql: sql, args: []any{clone(key)}})
}

func (b *pgBatch) merge(key, value []byte) {
	if !isUsageKey(key) {
		b.fail(fmt.Errorf("meta: merge of %q: only usage keys merge", key))
		return
	}
	var u Usage
	if _, err := sumUsage(value, &u); err != nil {
		b.fail(fmt.Errorf("meta: usage operand of %q: %w", key, err))
		return
	}
	b.ops = append(b.ops, pgStmt{sql: sqlUsageAdd, args: []any{clone(key), u.Objects, u.Bytes, u.Uploads, u.PartBytes}})
}

func (b *pgBatch) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

func (b *pgBatch) commit(sync bool) error {
	if b.err != nil {
		return b.err
	}
	if b.own {
		ctx, cancel := b.tx.kv.ctx()
		defer cancel()
		b.tx.ctx = ctx
		defer b.tx.end() // while ctx lives
	}
	if len(b.notes) > 0 {
		b.ops = append(b.ops, b.noteStmts()...)
		b.notes = nil
	}
	err := b.tx.commit(b.ops, sync)
	b.ops = nil
	return err
}

func (b *pgBatch) close() {
	if b.own {
		b.tx.end()
	}
}

// pgIndexedBatch reads the transaction with the batch's writes applied: a
// read first sends the writes queued so far (in the round trip of the
// read), so PostgreSQL itself shows them.
type pgIndexedBatch struct{ pgBatch }

// flush moves the queued writes to the transaction's pending statements.
func (b *pgIndexedBatch) flush() error {
	if b.err != nil {
		return b.err
	}
	if b.own && b.tx.ctx == nil {
		// Only tests read an indexed batch that is not a method's.
		b.tx.ctx = context.Background()
	}
	if len(b.ops) > 0 {
		b.tx.start()
		b.tx.pending = append(b.tx.pending, b.ops...)
		b.ops = b.ops[:0]
	}
	return nil
}

func (b *pgIndexedBatch) get(key, dst []byte) ([]byte, error) {
	if err := b.flush(); err != nil {
		return dst[:0], err
	}
	b.tx.start() // reads see the batch only inside the transaction
	return b.tx.get(key, dst)
}

func (b *pgIndexedBatch) newIter(lower, upper []byte) (kvIter, error) {
	if err := b.flush(); err != nil {
		return nil, err
	}
	b.tx.start()
	return b.tx.newIter(lower, upper)
}

// clone returns a copy of b that is never nil: NOT NULL columns take it.
func clone(b []byte) []byte { return append(make([]byte, 0, len(b)), b...) }
