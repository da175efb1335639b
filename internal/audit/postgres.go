package audit

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The PostgreSQL log (Config.Postgres) is the cluster's: every node
// writes its events to the table coffer_audit, which the metadata
// store's migrations create (internal/meta/pgschema/0003_audit.sql), and
// any node's queries read every node's events. The writer, the queue and
// the bounds are the SQLite log's; what differs is here:
//
//   - A batch is one INSERT of arrays (unnest), one round trip, with a
//     marker (this Log's random writer ID and the batch's sequence
//     number) in coffer_audit_batches: a batch is stored only with a new
//     marker, so a retry of a batch whose commit succeeded but whose
//     answer was lost (a broken connection, tried again at once; a
//     timeout, held and tried again) stores nothing twice.
//   - Writes are bounded by pgWriteTimeout, so that a database that
//     accepts connections but does not answer cannot hold the writer.
//   - A failed batch is kept and tried again after the backoff, and
//     meanwhile the writer takes nothing from the queue: an outage or a
//     restart of PostgreSQL shorter than what the queue holds loses no
//     event, and a longer one fills the queue, after which Record drops
//     (Stats.Dropped, logged once a minute). Record never waits either
//     way. At Close a held batch is tried at once; if it fails it is
//     lost, as with SQLite, and Close says so.
//   - Retention and the caps are the cluster's, not the node's, and one
//     node at a time keeps them: a pass (a retention pass, or an
//     eviction) runs on a connection of its own that holds a session
//     advisory lock of the schema's cleanup (pgLeadSQL) from its first
//     DELETE to its last; a node that finds the lock taken leaves the
//     work to its holder, and tries its own retention pass again a
//     second later rather than at the next interval.
//   - The cap is decided from what the table holds now, read from
//     coffer_audit_state (internal/meta/pgschema/0004_audit_state.sql):
//     events, the exact number of rows (triggers keep it, whoever
//     inserts or deletes), and evicted_at_size. MaxEvents evicts the
//     rows past it. MaxBytes is compared with pg_total_relation_size
//     (table, indexes and TOAST); PostgreSQL does not give a table's
//     space back on DELETE, vacuum makes it reusable. So past the cap
//     the oldest tenth of the events is evicted and the size recorded
//     in evicted_at_size, in the database, and again only once the
//     table has grown past it: the table settles at about the cap, and
//     neither a node's restart nor a second node evicts again (each
//     node kept the size in memory, from 0 at start: every restart
//     evicted a tenth of the log, and N nodes up to N tenths). A node
//     decides under the lock, after reading the state again, so two
//     nodes never evict for the same growth. Untrusted events go first
//     and keep to their share, as in capacity.go; the state counts them
//     too (migration 5).

// pgWriteTimeout bounds each statement of the writer on PostgreSQL.
const pgWriteTimeout = 10 * time.Second

// pgTable is the PostgreSQL table of the cluster's audit log.
const pgTable = "coffer_audit"

// pgLockKey names the advisory lock of the cleanup of this schema's log.
// Older Coffers took it per DELETE, transaction-scoped
// (pg_try_advisory_xact_lock), and skip their step while a node of this
// version holds it for its pass.
const pgLockKey = `hashtext(current_schema() || '/coffer_audit cleanup')`

const (
	// pgInsertSQL stores a batch with its marker (writer $18, sequence
	// $19, time $20), unless the marker is there: a try of the batch
	// whose answer was lost committed it (see 0006_audit_batches.sql).
	pgInsertSQL = `WITH marker AS (
		INSERT INTO coffer_audit_batches (writer, seq, time_ns) VALUES ($18, $19, $20)
		ON CONFLICT DO NOTHING RETURNING 1
	), older AS (
		DELETE FROM coffer_audit_batches WHERE writer = $18 AND seq < $19
	)
	INSERT INTO coffer_audit (time_ns, source, op, status, code, bucket, object_key, target,
	user_name, access_key, source_ip, request_id, bytes_in, bytes_out, duration_ns, count, untrusted)
	SELECT * FROM unnest($1::int8[], $2::text[], $3::text[], $4::int4[], $5::text[], $6::text[], $7::text[],
		$8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::int8[], $14::int8[], $15::int8[], $16::int8[],
		$17::bool[]) WHERE EXISTS (SELECT 1 FROM marker)`
	// pgStaleMarkersSQL deletes the markers of writers gone a week.
	pgStaleMarkersSQL = `DELETE FROM coffer_audit_batches WHERE time_ns < $1`
	// pgLeadSQL takes the cleanup lock if no one holds it; pgWaitSQL
	// waits for it (Prune); pgUnleadSQL releases it.
	pgLeadSQL   = `SELECT pg_try_advisory_lock(` + pgLockKey + `)`
	pgWaitSQL   = `SELECT pg_advisory_lock(` + pgLockKey + `)`
	pgUnleadSQL = `SELECT pg_advisory_unlock(` + pgLockKey + `)`
	// The DELETEs run on the connection that holds the lock.
	// See pruneSQL, evictUntrustedSQL and evictTrustedSQL.
	pgPruneSQL = `DELETE FROM coffer_audit WHERE id IN
	(SELECT id FROM coffer_audit WHERE time_ns < $1 ORDER BY time_ns LIMIT $2) RETURNING untrusted`
	pgEvictUntrustedSQL = `DELETE FROM coffer_audit WHERE id IN
	(SELECT id FROM coffer_audit WHERE untrusted ORDER BY id LIMIT $1)`
	pgEvictTrustedSQL = `DELETE FROM coffer_audit WHERE id IN
	(SELECT id FROM coffer_audit WHERE NOT untrusted ORDER BY id LIMIT $1)`
	// pgCapSQL reads what the cap is decided by: the events stored (and
	// how many are untrusted), the table's size when the cap last
	// evicted, and its size now.
	pgCapSQL = `SELECT events, untrusted, evicted_at_size, pg_total_relation_size('coffer_audit')
	FROM coffer_audit_state`
	pgEvictedAtSQL  = `UPDATE coffer_audit_state SET evicted_at_size = $1`
	pgSchemaVersion = 6 // the metadata schema version that made the tables as this uses them
)

// A marker names one batch of one writer: the same on every try of it.
type marker struct {
	writer, seq int64
	time        time.Time // of the first try
}

// pgColumns holds a batch as the arrays of pgInsertSQL, reused from batch
// to batch.
type pgColumns struct {
	timeNS, bytesIn, bytesOut, durationNS, count                              []int64
	status                                                                    []int32
	source, op, code, bucket, key, target, user, accessKey, sourceIP, request []string
	untrusted                                                                 []bool
}

// args fills the columns from batch and returns the arguments of
// pgInsertSQL, with the batch's marker m.
func (c *pgColumns) args(batch []Event, m marker) []any {
	c.reset()
	for i := range batch {
		e := &batch[i]
		c.timeNS = append(c.timeNS, e.Time.UnixNano())
		c.source = append(c.source, pgText(e.Source))
		c.op = append(c.op, pgText(e.Op))
		c.status = append(c.status, int32(e.Status))
		c.code = append(c.code, pgText(e.Code))
		c.bucket = append(c.bucket, pgText(e.Bucket))
		c.key = append(c.key, pgText(e.Key))
		c.target = append(c.target, pgText(e.Target))
		c.user = append(c.user, pgText(e.User))
		c.accessKey = append(c.accessKey, pgText(e.AccessKey))
		c.sourceIP = append(c.sourceIP, pgText(e.SourceIP))
		c.request = append(c.request, pgText(e.RequestID))
		c.bytesIn = append(c.bytesIn, e.BytesIn)
		c.bytesOut = append(c.bytesOut, e.BytesOut)
		c.durationNS = append(c.durationNS, int64(e.Duration))
		c.count = append(c.count, e.Count)
		c.untrusted = append(c.untrusted, e.Untrusted)
	}
	return []any{c.timeNS, c.source, c.op, c.status, c.code, c.bucket, c.key, c.target,
		c.user, c.accessKey, c.sourceIP, c.request, c.bytesIn, c.bytesOut, c.durationNS, c.count, c.untrusted,
		m.writer, m.seq, m.time.UnixNano()}
}

// reset empties the columns, dropping the references to the events'
// strings.
func (c *pgColumns) reset() {
	for _, s := range []*[]int64{&c.timeNS, &c.bytesIn, &c.bytesOut, &c.durationNS, &c.count} {
		*s = (*s)[:0]
	}
	c.status = c.status[:0]
	c.untrusted = c.untrusted[:0]
	for _, s := range []*[]string{&c.source, &c.op, &c.code, &c.bucket, &c.key, &c.target,
		&c.user, &c.accessKey, &c.sourceIP, &c.request} {
		clear(*s)
		*s = (*s)[:0]
	}
}

// pgText returns s as PostgreSQL text takes it: valid UTF-8 without NUL
// bytes. Invalid bytes become U+FFFD, as they do in the JSON of Export,
// and NUL becomes U+2400 (␀). A key with such bytes (which S3 keys should
// not have) is stored altered rather than failing its whole batch.
func pgText(s string) string {
	if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\u2400")
}

// rebind turns the ? placeholders of SQLite's SQL into PostgreSQL's $1,
// $2, …. The SQL of this package has no ? elsewhere.
func rebind(q string) string {
	var b strings.Builder
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] != '?' {
			b.WriteByte(q[i])
			continue
		}
		n++
		b.WriteString("$" + strconv.Itoa(n))
	}
	return b.String()
}

// pgCtx returns the context of one statement of the writer.
func pgCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), pgWriteTimeout)
}

// pgCap is what the cap of the PostgreSQL log is decided by.
type pgCap struct {
	events    int64 // rows in coffer_audit
	untrusted int64 // of which untrusted
	evictedAt int64 // the table's size when the cap last evicted
	size      int64 // the table's size now
}

// querier is a *sql.DB or a *sql.Conn.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// readCap reads pgCap through q.
func readCap(q querier) (pgCap, error) {
	ctx, cancel := pgCtx()
	defer cancel()
	var c pgCap
	err := q.QueryRowContext(ctx, pgCapSQL).Scan(&c.events, &c.untrusted, &c.evictedAt, &c.size)
	return c, err
}

// excess returns how many of the oldest events to evict for c, and
// whether MaxBytes asks for it (and so the size is to be recorded); and
// how many untrusted events are past their share, at the table's
// average size per event.
func (w *writer) excess(c pgCap) (n, untrusted int64, bytes bool) {
	if c.events > 0 {
		untrusted = w.l.untrustedExcess(c.untrusted, float64(c.size)/float64(c.events))
	}
	if m := w.l.maxEvents; m > 0 && c.events > m {
		n = c.events - m
	}
	// Deleted rows leave room that inserts reuse, so the table grows past
	// the size it had when the cap last evicted only once the log holds
	// more. A table much smaller than that was rewritten since (VACUUM
	// FULL, as after lowering the cap) and is judged afresh; one a little
	// smaller (autovacuum truncating empty pages at its end) is not, or
	// each such shrink would evict another tenth.
	grown := c.size > c.evictedAt || c.size < c.evictedAt/10*9
	if m := w.l.maxBytes; m > 0 && c.events > 0 && c.size > m && grown {
		n, bytes = max(n, max(c.events/10, 1)), true
	}
	return n, untrusted, bytes
}

// checkCapPG reads coffer_audit_state and, if the table is past a cap,
// takes the cleanup lock, reads the state again (another node may have
// just evicted) and sets what to evict, recording the table's size when
// MaxBytes asked (see the comment at the top of this file).
func (w *writer) checkCapPG() {
	w.lastCapCheck = time.Now()
	defer w.capSettled()
	if w.evictLeft > 0 {
		return // an eviction of ours is under way, decided under the lock
	}
	c, err := readCap(w.l.db)
	if err != nil {
		w.measureFailed(err)
		return
	}
	w.l.stored.Store(c.events)
	w.l.storedUntrusted.Store(c.untrusted)
	w.l.diskBytes.Store(c.size)
	if n, u, _ := w.excess(c); n == 0 && u == 0 || !w.lead() {
		return // within the caps, or another node is cleaning up and decides
	}
	defer w.release() // unless there is something to evict
	if c, err = readCap(w.leader); err != nil {
		w.measureFailed(err)
		return
	}
	w.l.stored.Store(c.events)
	w.l.storedUntrusted.Store(c.untrusted)
	n, u, bytes := w.excess(c)
	if bytes {
		ctx, cancel := pgCtx()
		_, err := w.leader.ExecContext(ctx, pgEvictedAtSQL, c.size)
		cancel()
		if err != nil {
			w.l.log.Error("audit events not evicted", "path", w.l.path, "err", err)
			return
		}
	}
	w.plan(n, u, c.untrusted)
}

// measureFailed logs a failed measurement of the log, at most once a
// dropLogInterval.
func (w *writer) measureFailed(err error) {
	if now := time.Now(); now.Sub(w.lastMeasureErr) >= dropLogInterval {
		w.l.log.Error("audit log size not measured", "path", w.l.path, "err", err)
		w.lastMeasureErr = now
	}
}

// lead takes the cleanup lock on a connection of the writer's own, unless
// it holds it already, and reports whether it holds it: false when
// another node (or Prune) does.
func (w *writer) lead() bool {
	if w.leader != nil {
		return true
	}
	ctx, cancel := pgCtx()
	defer cancel()
	conn, err := w.l.db.Conn(ctx)
	if err != nil {
		w.l.log.Error("audit log cleanup not started", "path", w.l.path, "err", err)
		return false
	}
	var ok bool
	if err := conn.QueryRowContext(ctx, pgLeadSQL).Scan(&ok); err != nil || !ok {
		if err != nil {
			w.l.log.Error("audit log cleanup not started", "path", w.l.path, "err", err)
		}
		dropConn(conn)
		return false
	}
	w.leader = conn
	return true
}

// release gives up the cleanup lock once neither a retention pass nor an
// eviction is under way.
func (w *writer) release() {
	if w.leader == nil || w.passing || w.evictLeft > 0 {
		return
	}
	ctx, cancel := pgCtx()
	defer cancel()
	var ok bool
	if err := w.leader.QueryRowContext(ctx, pgUnleadSQL).Scan(&ok); err != nil || !ok {
		// The session may still hold the lock: end it, and the lock
		// goes with it.
		dropConn(w.leader)
	} else {
		_ = w.leader.Close() // back to the pool
	}
	w.leader = nil
}

// dropConn closes conn's session rather than returning it to the pool:
// a session lock it may hold goes with it.
func dropConn(conn *sql.Conn) {
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	_ = conn.Close()
}

// evictRowsPG deletes at most n of the oldest untrusted events, or of
// the others, on the connection that holds the cleanup lock.
func (w *writer) evictRowsPG(n int64, untrusted bool) (int64, error) {
	ctx, cancel := pgCtx()
	defer cancel()
	q := pgEvictTrustedSQL
	if untrusted {
		q = pgEvictUntrustedSQL
	}
	res, err := w.leader.ExecContext(ctx, q, n)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
