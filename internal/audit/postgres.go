package audit

import (
	"context"
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
//   - A batch is one INSERT of arrays (unnest), one round trip.
//   - Writes are bounded by pgWriteTimeout, so that a database that
//     accepts connections but does not answer cannot hold the writer.
//   - A failed batch is kept and tried again after the backoff, and
//     meanwhile the writer takes nothing from the queue: an outage or a
//     restart of PostgreSQL shorter than what the queue holds loses no
//     event, and a longer one fills the queue, after which Record drops
//     (Stats.Dropped, logged once a minute). Record never waits either
//     way. At Close a held batch is tried at once; if it fails it is
//     lost, as with SQLite, and Close says so.
//   - Retention and the caps are the cluster's, not the node's: every
//     node checks them, and each DELETE step takes a transaction-scoped
//     advisory lock, so that one node at a time deletes and the others
//     skip the step.
//   - MaxEvents is kept by ID: events below max(id) − MaxEvents are
//     evicted. IDs come from one sequence, so max(id) − min(id) + 1
//     bounds the events stored (gaps are failed inserts), cheaply.
//   - MaxBytes is compared with pg_total_relation_size (table, indexes
//     and TOAST). PostgreSQL does not give a table's space back on
//     DELETE; vacuum makes it reusable. So past the cap the oldest tenth
//     of the events is evicted, and again only once the table has grown
//     past the size it had then: the table settles at about the cap.

// pgWriteTimeout bounds each statement of the writer on PostgreSQL.
const pgWriteTimeout = 10 * time.Second

// pgTable is the PostgreSQL table of the cluster's audit log.
const pgTable = "coffer_audit"

// pgLockSQL is the condition under which a deleting statement deletes: a
// transaction-scoped advisory lock of the cleanup of this schema's log,
// taken without waiting, so that nodes do not delete the same rows at
// once (they would wait for each other's row locks, and could deadlock).
const pgLockSQL = `(SELECT pg_try_advisory_xact_lock(hashtext(current_schema() || '/coffer_audit cleanup')))`

const (
	pgInsertSQL = `INSERT INTO coffer_audit (time_ns, source, op, status, code, bucket, object_key, target,
	user_name, access_key, source_ip, request_id, bytes_in, bytes_out, duration_ns, count)
	SELECT * FROM unnest($1::int8[], $2::text[], $3::text[], $4::int4[], $5::text[], $6::text[], $7::text[],
		$8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::int8[], $14::int8[], $15::int8[], $16::int8[])`
	pgPruneSQL = `DELETE FROM coffer_audit WHERE ` + pgLockSQL + ` AND id IN
	(SELECT id FROM coffer_audit WHERE time_ns < $1 ORDER BY time_ns LIMIT $2)`
	pgEvictSQL = `DELETE FROM coffer_audit WHERE ` + pgLockSQL + ` AND id IN
	(SELECT id FROM coffer_audit WHERE id < $1 ORDER BY id LIMIT $2)`
	// pgCapSQL reads the ID range (two descents of the primary key) and
	// the table's size on disk.
	pgCapSQL = `SELECT coalesce(min(id), 0), coalesce(max(id), 0), pg_total_relation_size('coffer_audit') FROM coffer_audit`
)

// pgColumns holds a batch as the arrays of pgInsertSQL, reused from batch
// to batch.
type pgColumns struct {
	timeNS, bytesIn, bytesOut, durationNS, count                              []int64
	status                                                                    []int32
	source, op, code, bucket, key, target, user, accessKey, sourceIP, request []string
}

// args fills the columns from batch and returns the arguments of
// pgInsertSQL.
func (c *pgColumns) args(batch []Event) []any {
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
	}
	return []any{c.timeNS, c.source, c.op, c.status, c.code, c.bucket, c.key, c.target,
		c.user, c.accessKey, c.sourceIP, c.request, c.bytesIn, c.bytesOut, c.durationNS, c.count}
}

// reset empties the columns, dropping the references to the events'
// strings.
func (c *pgColumns) reset() {
	for _, s := range []*[]int64{&c.timeNS, &c.bytesIn, &c.bytesOut, &c.durationNS, &c.count} {
		*s = (*s)[:0]
	}
	c.status = c.status[:0]
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

// checkCapPG reads the table's ID range and size and sets what to evict:
// the IDs below max(id) − MaxEvents + 1, and past MaxBytes the oldest
// tenth of the events, if the table has grown since that was last done
// (see the comment at the top of this file).
func (w *writer) checkCapPG() {
	w.lastCapCheck = time.Now()
	defer w.capSettled()
	ctx, cancel := pgCtx()
	defer cancel()
	var lo, hi, size int64
	if err := w.l.db.QueryRowContext(ctx, pgCapSQL).Scan(&lo, &hi, &size); err != nil {
		if now := time.Now(); now.Sub(w.lastMeasureErr) >= dropLogInterval {
			w.l.log.Error("audit log size not measured", "path", w.l.path, "err", err)
			w.lastMeasureErr = now
		}
		return
	}
	var stored int64
	if hi > 0 {
		stored = hi - lo + 1
	}
	w.l.stored.Store(stored)
	w.l.diskBytes.Store(size)
	below := lo
	if m := w.l.maxEvents; m > 0 && stored > m {
		below = max(below, hi-m+1)
	}
	if m := w.l.maxBytes; m > 0 && stored > 0 && size > m && size > w.evictedAtSize {
		below = max(below, lo+max(stored/10, 1))
		w.evictedAtSize = size
	}
	if below > lo {
		w.evictBelow = max(w.evictBelow, below)
		w.evictLeft = max(w.evictLeft, w.evictBelow-lo)
	}
}

// evictStepPG deletes at most pruneBatch of the oldest events below
// evictBelow.
func (w *writer) evictStepPG() {
	ctx, cancel := pgCtx()
	defer cancel()
	res, err := w.l.wEvict.ExecContext(ctx, w.evictBelow, pruneBatch)
	var k int64
	if err == nil {
		k, err = res.RowsAffected()
	}
	w.l.evicted.Add(uint64(k))
	w.l.stored.Add(-k)
	w.evictUnlogged += k
	w.evictLeft -= k
	if err != nil || k < pruneBatch { // failed, done, or another node holds the cleanup lock
		if err != nil {
			w.l.log.Error("audit events not evicted", "path", w.l.path, "err", err)
		}
		w.evictLeft = 0
	}
	if w.evictLeft <= 0 {
		w.evictLeft = 0
		w.reportEvictions(false)
		w.capSettled()
	}
}
