package meta

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Nodes that share a PostgreSQL store cache some of its state in memory:
// the IAM state, bucket policies and (for whoever caches them) bucket
// configurations. A transaction that writes such state tells the other
// nodes at its commit, in two ways:
//
//   - NOTIFY on the kind's channel (pg_notify is transactional: delivered
//     at commit, dropped at rollback), with the schema and the bucket as
//     payload, to every node LISTENing: milliseconds, and per bucket;
//   - one more on the kind's row of coffer_changes, which every node polls
//     every ChangePoll: the fallback when a listener connection is down or
//     silently broken, when a notification is lost with it.
//
// See docs/design/0011-postgres-metadata.md.

// ChangeKind names a kind of cached state.
type ChangeKind string

// The kinds of cached state whose changes WatchChanges reports.
const (
	ChangeIAM    ChangeKind = "iam"    // the IAM state document
	ChangePolicy ChangeKind = "policy" // a bucket policy
	ChangeConfig ChangeKind = "config" // a bucket configuration document, or the bucket's record (its versioning)
)

var changeKinds = [...]ChangeKind{ChangeIAM, ChangePolicy, ChangeConfig}

// Change is a committed change of cached state.
type Change struct {
	Kind ChangeKind
	// Bucket is the bucket whose policy or configuration changed; "" means
	// that anything of Kind may have changed: reload all of it.
	Bucket string
}

// ChangePoll is how often WatchChanges polls the change counters, and so
// the longest a change takes to reach a node whose listener connection is
// down.
const ChangePoll = 500 * time.Millisecond

// pgChannelPrefix + kind is a kind's NOTIFY channel.
const pgChannelPrefix = "coffer_"

// A notification's payload is the writer's schema, '/', the bucket: one
// database may hold several Coffer stores in separate schemas, and
// channels are per database.
const (
	sqlNotify     = `SELECT pg_notify($1, current_schema() || '/' || $2)`
	sqlBumpChange = `INSERT INTO coffer_changes AS c (kind, version) VALUES ($1, 1)
	ON CONFLICT (kind) DO UPDATE SET version = c.version + 1`
	sqlChanges = `SELECT kind, version FROM coffer_changes`
)

// maxNotifyBuckets bounds the notifications of one transaction: past it,
// one notification without a bucket says "reload all".
const maxNotifyBuckets = 16

// pgNote is a change a batch makes.
type pgNote struct {
	kind   ChangeKind
	bucket string
}

// noteKey records the change a write of key makes, if it is cached state.
func (b *pgBatch) noteKey(key []byte) {
	if len(key) == 0 {
		return
	}
	var n pgNote
	switch key[0] {
	case tableIAM:
		n.kind = ChangeIAM
	case tablePolicy:
		n = pgNote{kind: ChangePolicy, bucket: string(key[1:])}
	case tableConfig:
		bucket, _, _ := bytes.Cut(key[1:], []byte{0})
		n = pgNote{kind: ChangeConfig, bucket: string(bucket)}
	case tableBucket:
		// Its versioning state, which objects caches to name null
		// versions; written only by bucket creation, deletion and
		// PutBucketVersioning.
		n = pgNote{kind: ChangeConfig, bucket: string(key[1:])}
	default:
		return
	}
	for _, o := range b.notes {
		if o == n {
			return
		}
	}
	b.notes = append(b.notes, n)
}

// noteStmts returns the statements that announce the batch's changes.
func (b *pgBatch) noteStmts() []pgStmt {
	var out []pgStmt
	for _, kind := range changeKinds {
		var buckets []string
		for _, n := range b.notes {
			if n.kind == kind {
				buckets = append(buckets, n.bucket)
			}
		}
		if len(buckets) == 0 {
			continue
		}
		if len(buckets) > maxNotifyBuckets {
			buckets = []string{""}
		}
		ch := pgChannelPrefix + string(kind)
		for _, bk := range buckets {
			out = append(out, pgStmt{sql: sqlNotify, args: []any{ch, bk}})
		}
		out = append(out, pgStmt{sql: sqlBumpChange, args: []any{string(kind)}})
	}
	return out
}

// Shared reports whether the store is shared by several nodes
// (PostgreSQL): state cached in memory must then follow WatchChanges, and
// GC must take the GC lease.
func (db *DB) Shared() bool {
	_, ok := db.kv.(*pgKV)
	return ok
}

// WatchChanges calls fn, on its own goroutine, for every change of cached
// state committed by any node, until ctx ends; it returns nil then. If fn
// fails (its reload could not read the store), the change is reported
// again, as a change of all of its kind, at the next poll. A
// change reaches fn within milliseconds through the listener connection,
// and within ChangePoll through the poll of the change counters when that
// connection is down. When the listener (re)connects, fn is called once
// for every kind with Bucket "", since changes may have been missed. Errors
// are logged and retried. With an embedded engine (Pebble) there is
// nobody else to hear from: it waits for ctx and returns nil.
func (db *DB) WatchChanges(ctx context.Context, fn func(Change) error) error {
	p, ok := db.kv.(*pgKV)
	if !ok {
		<-ctx.Done()
		return nil
	}
	p.watch(ctx, fn)
	return nil
}

// listenRetry is how long the watcher waits before reconnecting its
// listener after a failure.
const listenRetry = time.Second

func (p *pgKV) watch(ctx context.Context, fn func(Change) error) {
	w := &pgWatcher{p: p, fn: fn, seen: make(map[ChangeKind]int64), failed: make(map[ChangeKind]bool)}
	defer w.closeConn()
	nextPoll := time.Now()
	var retryAt time.Time
	for ctx.Err() == nil {
		now := time.Now()
		if w.conn == nil && !p.noListen && !now.Before(retryAt) {
			if err := w.listen(ctx); err != nil {
				if ctx.Err() != nil {
					return
				}
				p.log.WarnContext(ctx, "metadata change listener down; polling", "err", err)
				retryAt = now.Add(listenRetry)
			} else {
				// Notifications sent before LISTEN took effect are
				// lost: take the poll's baseline, then reload all.
				w.poll(ctx, false)
				nextPoll = time.Now().Add(ChangePoll)
				for _, k := range changeKinds {
					w.report(ctx, Change{Kind: k})
				}
			}
		}
		if !time.Now().Before(nextPoll) {
			w.poll(ctx, true)
			nextPoll = time.Now().Add(ChangePoll)
		}
		wait := time.Until(nextPoll)
		if w.conn == nil {
			if !retryAt.IsZero() && time.Until(retryAt) < wait {
				wait = max(time.Until(retryAt), 0)
			}
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		wctx, cancel := context.WithTimeout(ctx, wait)
		n, err := w.conn.WaitForNotification(wctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err == nil:
			w.notified(ctx, n.Channel, n.Payload)
		case errors.Is(err, context.DeadlineExceeded) && !w.conn.IsClosed():
			// Time to poll.
		default:
			p.log.WarnContext(ctx, "metadata change listener lost; polling", "err", err)
			w.closeConn()
			retryAt = time.Now().Add(listenRetry)
		}
	}
}

// pgWatcher is the state of one WatchChanges.
type pgWatcher struct {
	p      *pgKV
	fn     func(Change) error
	conn   *pgx.Conn // the listener; nil while down
	seen   map[ChangeKind]int64
	polled bool                // seen holds a baseline
	failed map[ChangeKind]bool // kinds whose report failed: reported again at the next poll
}

// report calls fn with c, remembering a failure for the next poll.
func (w *pgWatcher) report(ctx context.Context, c Change) {
	if err := w.fn(c); err != nil {
		w.p.log.WarnContext(ctx, "reload after a metadata change failed; retrying", "kind", string(c.Kind), "bucket", c.Bucket, "err", err)
		w.failed[c.Kind] = true
	}
}

// listen opens the listener connection and LISTENs on every channel.
func (w *pgWatcher) listen(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, w.p.timeout)
	defer cancel()
	c, err := pgx.ConnectConfig(ctx, w.p.connConfig.Copy())
	if err != nil {
		return pgErr(err)
	}
	for _, k := range changeKinds {
		ch := pgx.Identifier{pgChannelPrefix + string(k)}.Sanitize()
		if _, err := c.Exec(ctx, "LISTEN "+ch); err != nil {
			return errors.Join(pgErr(err), c.Close(ctx))
		}
	}
	w.conn = c
	return nil
}

func (w *pgWatcher) closeConn() {
	if w.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = w.conn.Close(ctx)
		cancel()
		w.conn = nil
	}
}

// notified reports a notification of this store's schema.
func (w *pgWatcher) notified(ctx context.Context, channel, payload string) {
	kind, ok := strings.CutPrefix(channel, pgChannelPrefix)
	schema, bucket, ok2 := strings.Cut(payload, "/")
	if !ok || !ok2 || schema != w.p.schema {
		return
	}
	w.report(ctx, Change{Kind: ChangeKind(kind), Bucket: bucket})
}

// poll reads the change counters and, if report, calls fn for every kind
// whose counter moved since the last poll, and for every kind at the
// first.
func (w *pgWatcher) poll(ctx context.Context, report bool) {
	ctx, cancel := context.WithTimeout(ctx, w.p.timeout)
	defer cancel()
	rows, err := w.p.pool.Query(ctx, sqlChanges)
	if err != nil {
		w.p.log.DebugContext(ctx, "poll metadata changes", "err", err)
		return
	}
	now := make(map[ChangeKind]int64, len(changeKinds))
	var kind string
	var v int64
	_, err = pgx.ForEachRow(rows, []any{&kind, &v}, func() error {
		now[ChangeKind(kind)] = v
		return nil
	})
	if err != nil {
		w.p.log.DebugContext(ctx, "poll metadata changes", "err", err)
		return
	}
	moved := make([]ChangeKind, 0, len(changeKinds))
	for _, k := range changeKinds {
		// The first poll has nothing to compare with: what changed
		// between the caller loading its state and now is unknown, so
		// it reloads all (as a listener's connection does), or a change
		// committed meanwhile would never reach a node whose listener
		// cannot connect.
		if report && (!w.polled || now[k] != w.seen[k] || w.failed[k]) {
			moved = append(moved, k)
		}
	}
	w.seen, w.polled = now, true
	for _, k := range moved {
		delete(w.failed, k)
		w.report(ctx, Change{Kind: k})
	}
}

// pgGCLockName names the advisory lock of the GC lease (see lockID).
const pgGCLockName = "gc"

// GCLease tries to take the lease that lets one node at a time run a GC
// pass over a shared store: a session-level advisory lock on a connection
// of its own, held until release is called (or the connection ends: a
// node that dies gives the lease up with its connection). It returns false
// if another node holds it. With an embedded engine there is no other
// node: it always succeeds.
func (db *DB) GCLease(ctx context.Context) (release func(), ok bool, err error) {
	p, shared := db.kv.(*pgKV)
	if !shared {
		return func() {}, true, nil
	}
	release, ok, err = p.tryLease(ctx, pgGCLockName)
	if err != nil {
		return nil, false, fmt.Errorf("meta: GC lease: %w", err)
	}
	return release, ok, nil
}

// tryLease tries to take the lease name of the cluster: a session-level
// advisory lock on a connection of its own, held until release is called
// (or the connection ends). It returns false if another session holds it.
func (p *pgKV) tryLease(ctx context.Context, name string) (release func(), ok bool, err error) {
	conn, err := p.pool.Acquire(ctx)
	if err != nil {
		return nil, false, pgErr(err)
	}
	id := p.lockID(name)
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, id).Scan(&ok); err != nil || !ok {
		conn.Release()
		if err != nil {
			return nil, false, pgErr(err)
		}
		return nil, false, nil
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), p.timeout)
		defer cancel()
		if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, id); err != nil {
			// Ending the session releases the lock.
			_ = conn.Conn().Close(ctx)
		}
		conn.Release()
	}, true, nil
}

// lockID returns the advisory lock ID of name in this store's schema.
func (p *pgKV) lockID(name string) int64 {
	return pgBucketLock("\x00" + p.schema + "\x00" + name)
}
