package audit

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Page sizes of Query.
const (
	DefaultLimit = 100  // the page size when Filter.Limit is 0
	MaxLimit     = 1000 // the largest Filter.Limit
)

// exportChunk is how many events Export reads per query. Each chunk is
// read into memory and the rows closed before it is written out, so a
// slow reader of the export holds no read transaction open.
const exportChunk = 500

// Filter selects events. Its zero value selects all of them, newest first,
// DefaultLimit per page.
type Filter struct {
	// Since and Until bound Time to [Since, Until); zero is unbounded.
	Since, Until time.Time
	// Source, Op, Bucket, User, AccessKey and SourceIP match exactly when
	// not "".
	Source, Op, Bucket, User, AccessKey, SourceIP string
	// KeyPrefix, when not "", selects the events whose Key starts with it,
	// byte for byte (case-sensitive; "%", "_" and "\" are not special).
	// It is fast with Bucket set.
	KeyPrefix string
	// Failed selects only the events with Status >= 400, and Succeeded
	// only those below 400. Both select none.
	Failed, Succeeded bool
	// Before is Query's cursor: only events with ID < Before; 0 for none.
	// Page.Next is the Before of the next page.
	Before int64
	// Limit is Query's page size: 0 means DefaultLimit, and more than
	// MaxLimit is an error.
	Limit int
}

// Page is one page of a Query's results.
type Page struct {
	Events []Event // newest (highest ID) first
	Next   int64   // pass as Filter.Before for the next page; 0 when there is no more
}

// Query returns the events f selects, newest (highest ID) first, at most
// f.Limit of them. Paging with Page.Next sees every event that existed
// when the first page was read exactly once, however many arrive
// meanwhile (they have higher IDs), unless retention deletes it first.
func (l *Log) Query(ctx context.Context, f Filter) (Page, error) {
	limit := f.Limit
	if limit == 0 {
		limit = DefaultLimit
	}
	if limit < 0 || limit > MaxLimit {
		return Page{}, fmt.Errorf("audit: query: limit %d is outside 1..%d", f.Limit, MaxLimit)
	}
	if f.Before < 0 {
		return Page{}, fmt.Errorf("audit: query: cursor %d is negative", f.Before)
	}
	if l.isClosed() {
		return Page{}, ErrClosed
	}
	q := f.where(l.pg)
	if f.Before > 0 {
		q.add(condBefore, f.Before)
	}
	q.shape |= orderDesc
	q.args = append(q.args, limit+1) // one more than the page tells whether there is a next
	events, err := l.query(ctx, q, make([]Event, 0, min(limit+1, 128)))
	if err != nil {
		return Page{}, fmt.Errorf("audit: query: %w", err)
	}
	var p Page
	if len(events) > limit {
		events = events[:limit]
		p.Next = events[limit-1].ID
	}
	p.Events = events
	return p, nil
}

// Export writes every event f selects to w as JSON Lines (one Event's
// JSON per line), oldest first, and returns how many it wrote; on error,
// how many it had encoded. It ignores f.Limit and f.Before. It reads the
// events in chunks, never all at once, and includes no event stored after
// it started. As JSON strings must be UTF-8, encoding/json replaces any
// invalid byte (which S3 keys should not have) with U+FFFD.
func (l *Log) Export(ctx context.Context, f Filter, w io.Writer) (int64, error) {
	if l.isClosed() {
		return 0, ErrClosed
	}
	var last int64
	if err := l.db.QueryRowContext(ctx, "SELECT coalesce(max(id), 0) FROM "+l.table).Scan(&last); err != nil {
		return 0, fmt.Errorf("audit: export: %w", err)
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	chunk := make([]Event, 0, exportChunk)
	var n, after int64
	for {
		q := f.where(l.pg)
		q.add(condAfter, after)
		q.add(condUpTo, last)
		q.args = append(q.args, exportChunk)
		var err error
		if chunk, err = l.query(ctx, q, chunk[:0]); err != nil {
			return n, fmt.Errorf("audit: export: %w", err)
		}
		for i := range chunk {
			if err := enc.Encode(&chunk[i]); err != nil {
				return n, fmt.Errorf("audit: export: %w", err)
			}
			n++
		}
		if len(chunk) < exportChunk {
			break
		}
		after = chunk[len(chunk)-1].ID
	}
	if err := bw.Flush(); err != nil {
		return n, fmt.Errorf("audit: export: %w", err)
	}
	return n, nil
}

// Prune deletes the events whose Time is earlier than before, in bounded batches so
// that the writer is not held up, and returns how many it deleted, also
// when ctx ends or an error stops it midway.
func (l *Log) Prune(ctx context.Context, before time.Time) (int64, error) {
	if l.isClosed() {
		return 0, ErrClosed
	}
	exec := l.prune.QueryContext
	if l.pg {
		// One node at a time cleans up: wait for the cleanup lock, on a
		// connection of its own.
		conn, err := l.db.Conn(ctx)
		if err != nil {
			return 0, fmt.Errorf("audit: prune: %w", err)
		}
		defer dropConn(conn) // the lock goes with the session
		if _, err := conn.ExecContext(ctx, pgWaitSQL); err != nil {
			return 0, fmt.Errorf("audit: prune: %w", err)
		}
		exec = func(ctx context.Context, args ...any) (*sql.Rows, error) {
			return conn.QueryContext(ctx, pgPruneSQL, args...)
		}
	}
	var total int64
	for {
		if err := ctx.Err(); err != nil {
			return total, fmt.Errorf("audit: prune: %w", err)
		}
		n, untrusted, err := countDeleted(exec(ctx, before.UnixNano(), pruneBatch))
		total += n
		l.pruned.Add(uint64(n))
		l.stored.Add(-n)
		l.storedUntrusted.Add(-untrusted)
		if err != nil {
			return total, fmt.Errorf("audit: prune: %w", err)
		}
		if n < pruneBatch {
			return total, nil
		}
	}
}

// query runs q and appends the events it returns to events.
func (l *Log) query(ctx context.Context, q selection, events []Event) ([]Event, error) {
	st, err := l.stmts.get(ctx, q.shape)
	if err != nil {
		return events, err
	}
	rows, err := st.QueryContext(ctx, q.args...)
	if err != nil {
		return events, err
	}
	defer rows.Close()
	for rows.Next() {
		events = append(events, Event{})
		if err := scanEvent(rows, &events[len(events)-1]); err != nil {
			return events[:len(events)-1], err
		}
	}
	return events, rows.Err()
}

// A shape says which conditions a SELECT has and how it is ordered: the
// SQL text follows from it alone, so statements are prepared once per
// shape and values are always bound parameters.
type shape uint32

// The conditions, in the order their parameters are bound.
const (
	condSince shape = 1 << iota
	condUntil
	condSource
	condOp
	condBucket
	condUser
	condAccessKey
	condSourceIP
	condKeyFrom
	condKeyTo
	condFailed
	condBefore
	condAfter
	condUpTo
	condSucceeded
	numConds = iota

	orderDesc shape = 1 << 31 // newest first (Query), else oldest first (Export)
)

// condSQL holds each condition's SQL, indexed by bit. A read-only table.
var condSQL = [numConds]string{
	"time_ns >= ?",
	"time_ns < ?",
	"source = ?",
	"op = ?",
	"bucket = ?",
	"user_name = ?",
	"access_key = ?",
	"source_ip = ?",
	"object_key >= ?",
	"object_key < ?",
	"status >= 400",
	"id < ?",
	"id > ?",
	"id <= ?",
	"status < 400",
}

// selectSQL returns the SELECT of shape s, whose last parameter is the
// LIMIT. The subquery selects only IDs, so that an index on the filtered
// columns answers it without reading rows (see migrations); the outer
// query reads the page's rows by ID.
func selectSQL(s shape, table string) string {
	order := " ORDER BY id"
	if s&orderDesc != 0 {
		order = " ORDER BY id DESC"
	}
	var b strings.Builder
	b.WriteString("SELECT " + columns + " FROM " + table + " WHERE id IN (SELECT id FROM " + table)
	sep := " WHERE "
	for i, c := range condSQL {
		if s&(1<<i) != 0 {
			b.WriteString(sep + c)
			sep = " AND "
		}
	}
	b.WriteString(order + " LIMIT ?)" + order)
	return b.String()
}

// selection is a SELECT to run: its shape and its arguments.
type selection struct {
	shape shape
	args  []any
}

// add adds condition c with value v. Conditions must be added in the order
// of their bits, which is the order of their parameters in selectSQL.
func (q *selection) add(c shape, v any) {
	q.shape |= c
	if v != nil {
		q.args = append(q.args, v)
	}
}

// where returns the selection of f's filters, without cursor or order.
// On PostgreSQL (pg) the strings are compared as they are stored there
// (pgText) and a key prefix's range ends at a valid UTF-8 string.
func (f *Filter) where(pg bool) selection {
	text, end := func(s string) string { return s }, prefixEnd
	if pg {
		text, end = pgText, prefixEndText
	}
	q := selection{args: make([]any, 0, 16)}
	if !f.Since.IsZero() {
		q.add(condSince, f.Since.UnixNano())
	}
	if !f.Until.IsZero() {
		q.add(condUntil, f.Until.UnixNano())
	}
	for _, c := range []struct {
		cond shape
		v    string
	}{
		{condSource, f.Source}, {condOp, f.Op}, {condBucket, f.Bucket},
		{condUser, f.User}, {condAccessKey, f.AccessKey}, {condSourceIP, f.SourceIP},
	} {
		if c.v != "" {
			q.add(c.cond, text(c.v))
		}
	}
	if f.KeyPrefix != "" {
		// A range rather than LIKE: LIKE ignores ASCII case and gives
		// "%", "_" meaning, and a range uses events_bucket_key.
		p := text(f.KeyPrefix)
		q.add(condKeyFrom, p)
		if end, ok := end(p); ok {
			q.add(condKeyTo, end)
		}
	}
	if f.Failed {
		q.add(condFailed, nil)
	}
	if f.Succeeded {
		// Its bit comes after the cursors', but it binds no parameter, so
		// the order of the arguments is still the order of the bits.
		q.add(condSucceeded, nil)
	}
	return q
}

// prefixEnd returns the least string greater than every string starting
// with p, in byte order (SQLite's BINARY collation); ok is false if there
// is none (p is all 0xFF bytes).
func prefixEnd(p string) (end string, ok bool) {
	b := []byte(p)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xFF {
			b[i]++
			return string(b[:i+1]), true
		}
	}
	return "", false
}

// prefixEndText returns the least valid UTF-8 string greater than every
// string starting with p, a valid UTF-8 string, in byte order (which for
// UTF-8 is code point order, PostgreSQL's "C" collation): p with its last
// rune that is not the greatest replaced by the next one (past the
// surrogates, which UTF-8 cannot hold), and what follows it cut. ok is
// false if there is none.
func prefixEndText(p string) (end string, ok bool) {
	for i := len(p); i > 0; {
		r, n := utf8.DecodeLastRuneInString(p[:i])
		i -= n
		switch {
		case r == utf8.MaxRune:
			continue
		case r == 0xD7FF:
			r = 0xE000
		default:
			r++
		}
		return p[:i] + string(r), true
	}
	return "", false
}

// stmtCache holds the prepared SELECT of each shape used so far: at most
// a few dozen in practice (the filters an operator combines).
type stmtCache struct {
	db *sql.DB
	pg bool       // PostgreSQL: $n placeholders, table coffer_audit
	mu sync.Mutex // guards stmts
	// stmts maps a shape to its statement, which database/sql prepares
	// on each pool connection as needed.
	stmts map[shape]*sql.Stmt
}

// get returns the statement of shape s, preparing it the first time.
func (c *stmtCache) get(ctx context.Context, s shape) (*sql.Stmt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.stmts[s]; st != nil {
		return st, nil
	}
	q := selectSQL(s, "events")
	if c.pg {
		q = rebind(selectSQL(s, pgTable))
	}
	st, err := c.db.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	if c.stmts == nil {
		c.stmts = make(map[shape]*sql.Stmt)
	}
	c.stmts[s] = st
	return st, nil
}

// close closes every statement.
func (c *stmtCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, st := range c.stmts {
		errs = append(errs, st.Close())
	}
	c.stmts = nil
	return errors.Join(errs...)
}
