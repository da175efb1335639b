package meta

import (
	"bytes"
	"context"
	"fmt"
	"sort"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Rows an iterator fetches at a time: pgPageMin after a seek (a listing
// that rolls up common prefixes seeks past each, and needs one row of
// each), four times more with each page read in sequence, up to
// pgPageMax.
const (
	pgPageMin = 64
	pgPageMax = 1024
)

// pgIter is a kvIter over PostgreSQL: it fetches pages of rows with
// keyset queries (WHERE k >= $from AND k < $upper ORDER BY k LIMIT n, or
// backwards), each an index range scan of the primary key, and serves
// positioning calls from the page it holds when it can. A seek outside
// the page is one query: one descent of the B-tree.
//
// Snapshot: inside a transaction (tx set) pages are read by the
// transaction's statements, at READ COMMITTED; the locks it holds keep
// what it reads still. Outside one, the kvIter contract asks for one
// snapshot: the iterator's first page is read by one statement, which is
// a snapshot, and if that page holds the whole range, nothing more is
// ever read; otherwise the iterator reads from a REPEATABLE READ READ
// ONLY transaction on a connection of its own, held until close (and the
// first page is read again from it).
type pgIter struct {
	kv           *pgKV
	tx           *pgTx // nil outside a transaction
	lower, upper []byte
	fwdSQL       string
	bwdSQL       string

	snap     *pgxpool.Conn // the snapshot transaction, once needed
	borrowed bool          // snap is a pgSnapshot's, which ends it
	queried  bool          // a page was read outside snap

	keys, vals [][]byte // the page, in key order
	buf        []byte   // holds keys and vals
	i          int      // position in the page; outside it, none
	lo, hi     []byte   // the page holds every key in [lo, hi); lo nil: no page
	page       int      // rows of the next page read in sequence
	err        error
}

func newPgIter(p *pgKV, tx *pgTx, lower, upper []byte) *pgIter {
	it := &pgIter{kv: p, tx: tx, lower: bytes.Clone(lower), upper: bytes.Clone(upper), fwdSQL: sqlFwd, bwdSQL: sqlBwd}
	if it.lower == nil {
		it.lower = []byte{}
	}
	if it.upper == nil {
		it.upper = pgMaxKey
	}
	if meetsUsage(it.lower, it.upper) {
		it.fwdSQL, it.bwdSQL = sqlFwdUsage, sqlBwdUsage
	}
	return it
}

func (it *pgIter) first() bool { return it.seekGE(it.lower) }

func (it *pgIter) seekGE(k []byte) bool {
	if bytes.Compare(k, it.lower) < 0 {
		k = it.lower
	}
	if bytes.Compare(k, it.upper) >= 0 || it.err != nil {
		it.i = len(it.keys)
		return false
	}
	if it.lo != nil && bytes.Compare(it.lo, k) <= 0 && bytes.Compare(k, it.hi) < 0 {
		it.i = sort.Search(len(it.keys), func(j int) bool { return bytes.Compare(it.keys[j], k) >= 0 })
		if it.i < len(it.keys) {
			return true
		}
		if bytes.Equal(it.hi, it.upper) {
			return false
		}
		return it.fetchFwd(it.hi, true)
	}
	return it.fetchFwd(k, true)
}

func (it *pgIter) seekLT(k []byte) bool {
	if bytes.Compare(k, it.upper) > 0 {
		k = it.upper
	}
	if bytes.Compare(k, it.lower) <= 0 || it.err != nil {
		it.i = -1
		return false
	}
	if it.lo != nil && bytes.Compare(it.lo, k) < 0 && bytes.Compare(k, it.hi) <= 0 {
		it.i = sort.Search(len(it.keys), func(j int) bool { return bytes.Compare(it.keys[j], k) >= 0 }) - 1
		if it.i >= 0 {
			return true
		}
		if bytes.Equal(it.lo, it.lower) {
			return false
		}
		return it.fetchBwd(it.lo, true)
	}
	return it.fetchBwd(k, true)
}

func (it *pgIter) next() bool {
	if it.i < 0 || it.i >= len(it.keys) {
		return false
	}
	if it.i++; it.i < len(it.keys) {
		return true
	}
	if bytes.Equal(it.hi, it.upper) {
		return false
	}
	return it.fetchFwd(it.hi, false)
}

func (it *pgIter) prev() bool {
	if it.i < 0 || it.i >= len(it.keys) {
		return false
	}
	if it.i--; it.i >= 0 {
		return true
	}
	if bytes.Equal(it.lo, it.lower) {
		return false
	}
	return it.fetchBwd(it.lo, false)
}

func (it *pgIter) key() []byte { return it.keys[it.i] }

func (it *pgIter) value() ([]byte, error) {
	if it.err != nil {
		return nil, it.err
	}
	return it.vals[it.i], nil
}

func (it *pgIter) close() error {
	if it.snap != nil && !it.borrowed {
		it.kv.endSnap(it.snap)
	}
	it.snap = nil
	return it.err
}

// nextPage returns the size of the next page: pgPageMin after a seek.
func (it *pgIter) nextPage(seek bool) int {
	if seek || it.page == 0 {
		it.page = pgPageMin
	} else {
		it.page = min(it.page*4, pgPageMax)
	}
	return it.page
}

// fetchFwd reads the page of keys from from on and positions at its
// first.
func (it *pgIter) fetchFwd(from []byte, seek bool) bool {
	n := it.nextPage(seek)
	if err := it.read(it.fwdSQL, from, it.upper, n, bytes.Equal(from, it.lower), false); err != nil {
		return it.stop(err)
	}
	it.lo, it.hi = bytes.Clone(from), it.upper
	if len(it.keys) == n {
		it.hi = append(bytes.Clone(it.keys[n-1]), 0) // the next key up
	}
	it.i = 0
	return len(it.keys) > 0
}

// fetchBwd reads the page of keys before before and positions at its
// last.
func (it *pgIter) fetchBwd(before []byte, seek bool) bool {
	n := it.nextPage(seek)
	if err := it.read(it.bwdSQL, it.lower, before, n, bytes.Equal(before, it.upper), true); err != nil {
		return it.stop(err)
	}
	it.lo, it.hi = it.lower, bytes.Clone(before)
	if len(it.keys) == n {
		it.lo = bytes.Clone(it.keys[0])
	}
	it.i = len(it.keys) - 1
	return len(it.keys) > 0
}

func (it *pgIter) stop(err error) bool {
	it.err = fmt.Errorf("meta: read [%q, %q): %w", it.lower, it.upper, pgErr(err))
	it.keys, it.vals, it.lo = nil, nil, nil
	it.i = 0
	return false
}

// read runs a page query for keys in [lo, hi), n rows at most, and loads
// the rows (in key order) into the page. atEnd says the query starts at
// the range's end (its lower bound reading forward, its upper one reading
// backwards), so that a full result is the whole range.
func (it *pgIter) read(sql string, lo, hi []byte, n int, atEnd, desc bool) error {
	args := []any{lo, hi, n}
	if it.tx != nil {
		return it.load(desc, func(fn func([][]byte) error) error { return it.tx.query(sql, args, fn) })
	}
	ctx, cancel := it.kv.ctx()
	defer cancel()
	if it.snap == nil && !it.queried && atEnd {
		// One statement is a snapshot: enough if it reads the whole range.
		it.queried = true
		err := it.load(desc, func(fn func([][]byte) error) error { return pgQuery(ctx, it.kv.pool, sql, args, fn) })
		if err != nil || len(it.keys) < n {
			return err
		}
	}
	if it.snap == nil {
		c, err := it.kv.beginSnap(ctx)
		if err != nil {
			return err
		}
		// A page read outside the snapshot was either the whole range
		// (and no page is read after it) or is read again below.
		it.snap = c
	}
	return it.load(desc, func(fn func([][]byte) error) error { return pgQuery(ctx, it.snap, sql, args, fn) })
}

// load replaces the page by the rows query yields, reversed if desc.
func (it *pgIter) load(desc bool, query func(fn func([][]byte) error) error) error {
	it.buf = it.buf[:0]
	var offs []int // key end, value end, per row
	err := query(func(row [][]byte) error {
		it.buf = append(it.buf, row[0]...)
		offs = append(offs, len(it.buf))
		it.buf = append(it.buf, row[1]...)
		offs = append(offs, len(it.buf))
		return nil
	})
	it.keys, it.vals = it.keys[:0], it.vals[:0]
	if err != nil {
		return err
	}
	start := 0
	for j := 0; j < len(offs); j += 2 {
		it.keys = append(it.keys, it.buf[start:offs[j]:offs[j]])
		it.vals = append(it.vals, it.buf[offs[j]:offs[j+1]:offs[j+1]])
		start = offs[j+1]
	}
	if desc {
		for a, b := 0, len(it.keys)-1; a < b; a, b = a+1, b-1 {
			it.keys[a], it.keys[b] = it.keys[b], it.keys[a]
			it.vals[a], it.vals[b] = it.vals[b], it.vals[a]
		}
	}
	return nil
}

// beginSnap acquires a connection and starts a REPEATABLE READ READ ONLY
// transaction on it: every statement it runs sees the snapshot its first
// statement takes. endSnap ends it and gives the connection back.
func (p *pgKV) beginSnap(ctx context.Context) (*pgxpool.Conn, error) {
	c, err := p.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("acquire a PostgreSQL connection: %w", err)
	}
	if _, err := c.Exec(ctx, sqlBeginSnap); err != nil {
		c.Release()
		return nil, err
	}
	return c, nil
}

func (p *pgKV) endSnap(c *pgxpool.Conn) {
	ctx, cancel := p.ctx()
	defer cancel()
	if _, err := c.Exec(ctx, sqlCommit); err != nil {
		_ = c.Conn().Close(ctx)
	}
	c.Release()
}

// pgSnapshot is a kvSnapshot: gets and iterators read through one
// snapshot transaction (beginSnap), so that they all see the same state.
type pgSnapshot struct {
	kv   *pgKV
	conn *pgxpool.Conn
}

func (p *pgKV) snapshot() (kvSnapshot, error) {
	ctx, cancel := p.ctx()
	defer cancel()
	c, err := p.beginSnap(ctx)
	if err != nil {
		return nil, pgErr(err)
	}
	return &pgSnapshot{kv: p, conn: c}, nil
}

func (s *pgSnapshot) get(key, dst []byte) ([]byte, error) {
	ctx, cancel := s.kv.ctx()
	defer cancel()
	v, err := pgGet(ctx, s.conn, key, dst)
	return v, pgErr(err)
}

func (s *pgSnapshot) newIter(lower, upper []byte) (kvIter, error) {
	it := newPgIter(s.kv, nil, lower, upper)
	it.snap, it.borrowed = s.conn, true
	return it, nil
}

func (s *pgSnapshot) close() error {
	s.kv.endSnap(s.conn)
	return nil
}
