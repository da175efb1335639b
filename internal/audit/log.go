package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// ErrClosed is returned by the methods of a closed Log that need its
// database.
var ErrClosed = errors.New("audit: log closed")

// Defaults of Config's zero values.
const (
	DefaultQueueSize     = 8192
	DefaultBatchSize     = 512
	DefaultFlushInterval = 200 * time.Millisecond
	DefaultPerSource     = 5
	DefaultPerMinute     = 1000
)

// MinMaxBytes is the smallest Config.MaxBytes: below it the schema and
// the WAL alone would fill the cap.
const MinMaxBytes = 1 << 20

// Bounds of the retention pass interval: every Retention/10, but at most
// an hour apart and at least a second apart.
const (
	maxRetentionInterval = time.Hour
	minRetentionInterval = time.Second
)

// markerAge is how long the marker of a PostgreSQL writer's last batch
// is kept after it stopped.
const markerAge = 7 * 24 * time.Hour

// dropLogInterval is the least time between two log lines about dropped
// events, or about failed writes.
const dropLogInterval = time.Minute

// Config configures a Log. Path or Postgres is required, not both.
type Config struct {
	// Path is the SQLite file. Its directory is created (0700) and the
	// file is created or kept at mode 0600.
	Path string
	// Postgres, instead of Path, is a handle on the PostgreSQL database
	// and schema of a shared metadata store (meta.DB.SQL), whose table
	// coffer_audit the metadata migrations created: the cluster's log,
	// written by every node and read whole by each (see postgres.go).
	// Open takes it over: Close closes it. Room does not apply.
	Postgres *sql.DB
	// Retention is how long events are kept: older ones are deleted at
	// Open and then every hour, or every Retention/10 if that is shorter
	// (but not more often than once a second). 0 keeps everything.
	Retention time.Duration
	// QueueSize is how many events can wait between Record and the
	// writer; when it is full, Record drops. 0 means DefaultQueueSize.
	QueueSize int
	// BatchSize is the most events written in one transaction. 0 means
	// DefaultBatchSize.
	BatchSize int
	// FlushInterval is how long the writer waits for a batch to fill once
	// it holds one event: the most an event waits before it is written,
	// and so what a crash may lose. 0 means DefaultFlushInterval.
	FlushInterval time.Duration
	// MaxBytes caps the disk space of the log: the database's pages in
	// use plus its WAL. Past it the oldest events are deleted (evicted)
	// until it is 10% under, untrusted ones (Event.Untrusted) first; and
	// untrusted events may take at most a quarter of it. It is checked after writes, at most a few
	// times a second, and every second. 0 means no cap; otherwise at
	// least MinMaxBytes.
	MaxBytes int64
	// MaxEvents caps the events kept: past it the oldest are evicted,
	// untrusted ones first, checked as MaxBytes is; untrusted events
	// may take at most a quarter of it. 0 means no cap.
	MaxEvents int64
	// PerSource is how many events of one source RecordBounded records
	// in full per minute; a source is a kind of source (Event.Source),
	// a client's IPv4 address or IPv6 /64, an outcome (served, refused,
	// other client error, server error) and Event.User (set only for a
	// verified user): not the access key a client claims, which it
	// chooses at will. The source's further
	// events that minute are
	// counted, and written as one summary event when the minute ends.
	// 0 means DefaultPerSource.
	PerSource int
	// PerMinute bounds RecordBounded twice per minute: at most PerMinute
	// events recorded in full over all sources, and at most PerMinute
	// sources counted separately; events of further sources go to one
	// count per kind of source (S3, admin, console) and outcome (served,
	// refused, other client error, server error). So refused and
	// unauthenticated requests add at most 2*PerMinute+12 events a
	// minute, however many there are.
	// 0 means DefaultPerMinute.
	PerMinute int
	// Room, if not nil, is asked before each batch is written; an error
	// (the disk the log shares with the metadata store is down to the last
	// of its free-space reserve, diskspace.Guard.Keep) fails the batch
	// unwritten, as a write error: counted in WriteErrors, logged, and
	// writes paused with the same backoff. So the log never takes the last
	// free bytes from the metadata store.
	Room func() error
	// Logger receives write errors, retention passes, evictions and
	// dropped events (at most one line a minute, with the count). Nil
	// discards.
	Logger *slog.Logger
	// Clock returns the current time for retention and for events
	// recorded without a Time. Nil means time.Now.
	Clock func() time.Time
}

// Validate reports whether c is usable.
func (c Config) Validate() error {
	switch {
	case c.Path == "" && c.Postgres == nil:
		return errors.New("audit: config: path is required")
	case c.Path != "" && c.Postgres != nil:
		return errors.New("audit: config: path and postgres are exclusive")
	case c.Retention < 0:
		return fmt.Errorf("audit: config: retention %v is negative", c.Retention)
	case c.QueueSize < 0:
		return fmt.Errorf("audit: config: queue size %d is negative", c.QueueSize)
	case c.BatchSize < 0:
		return fmt.Errorf("audit: config: batch size %d is negative", c.BatchSize)
	case c.FlushInterval < 0:
		return fmt.Errorf("audit: config: flush interval %v is negative", c.FlushInterval)
	case c.MaxBytes < 0 || c.MaxBytes > 0 && c.MaxBytes < MinMaxBytes:
		return fmt.Errorf("audit: config: max bytes %d is neither 0 nor at least %d", c.MaxBytes, MinMaxBytes)
	case c.MaxEvents < 0:
		return fmt.Errorf("audit: config: max events %d is negative", c.MaxEvents)
	case c.PerSource < 0:
		return fmt.Errorf("audit: config: events per source %d is negative", c.PerSource)
	case c.PerMinute < 0:
		return fmt.Errorf("audit: config: events per minute %d is negative", c.PerMinute)
	}
	return nil
}

// hooks let tests observe and hold up the writer. The zero value does
// nothing; Open uses it.
type hooks struct {
	beforeWrite func()           // called by the writer before it writes a batch
	pruneTick   <-chan time.Time // replaces the retention ticker
	passDone    func(n int64)    // called after each retention pass with the events it deleted
	tick        <-chan time.Time // replaces the one-second ticker (minute windows, the cap)
	writeErr    func() error     // when set and returning an error, a batch fails with it unwritten
	lostAnswer  func() error     // PostgreSQL: when set and returning an error, a batch written fails with it, as if its answer was lost
	capDone     func()           // called when the writer has checked the cap and evicted what it asked
}

// Log is an audit log: a queue that Record fills without waiting, a
// writer goroutine that stores its events in SQLite, and the queries over
// them. It is safe for concurrent use. Close it to write what is queued.
type Log struct {
	path          string // the SQLite file, or a description of the PostgreSQL table, for log lines
	pg            bool   // the log is in PostgreSQL (Config.Postgres)
	writerID      int64  // on PostgreSQL, this Log's in the markers of its batches: random
	table         string // events (SQLite) or coffer_audit (PostgreSQL)
	db            *sql.DB
	log           *slog.Logger
	clock         func() time.Time
	retention     time.Duration
	batchSize     int
	flushInterval time.Duration
	maxBytes      int64
	maxEvents     int64
	room          func() error
	hooks         hooks
	limit         limiter // the bounds of RecordBounded

	// mu guards closed. Record and RecordBounded hold it for reading
	// around their non-blocking send and their counting, so that Close,
	// holding it for writing, can close queue with no send in flight and
	// the writer's last summaries miss no count.
	mu     sync.RWMutex
	closed bool
	queue  chan Event

	flushReq chan chan error // Flush → writer: write what is queued, then answer
	closing  chan struct{}   // closed by Close before it closes queue
	done     chan struct{}   // closed when the writer has returned

	// The writer's own connection and statements, used by no one else.
	// On PostgreSQL there is no wconn: the statements run on the pool,
	// which replaces broken connections.
	wconn       *sql.Conn
	wInsert     *sql.Stmt
	wInsertMany *sql.Stmt // insertRows events at once; SQLite only
	wPrune      *sql.Stmt // SQLite only, as the evictions
	// wEvictUntrusted and wEvictTrusted evict the oldest untrusted
	// events, and the oldest of the others.
	wEvictUntrusted, wEvictTrusted *sql.Stmt
	// closeErr is the error of the writer's last writes, set before done
	// is closed.
	closeErr error

	prune *sql.Stmt // for Prune, over the pool
	stmts stmtCache // for Query and Export

	recorded, dropped, written, writeErrors, pruned  atomic.Uint64
	aggregated, summaries, evicted, evictedUntrusted atomic.Uint64
	batched                                          atomic.Int64 // events the writer holds in its batch
	// stored is the number of events in the database, storedUntrusted of
	// the untrusted ones: counted at Open, then kept by the writes and
	// deletions of this Log (on PostgreSQL, read every second).
	stored, storedUntrusted atomic.Int64
	// diskBytes is the size of the database and its WAL files, as the
	// writer last measured it.
	diskBytes atomic.Int64

	closeOnce sync.Once
	closeRes  error
}

// Open opens the audit log at cfg.Path, creating it if it is missing: it
// sets WAL mode, synchronous=NORMAL and a busy timeout, creates or
// migrates the schema (refusing, with ErrNewerSchema, a schema newer than
// it knows), and starts the writer goroutine, whose first retention pass
// (between writes, not before Open returns) deletes the events older than
// cfg.Retention. The caller must Close the Log.
func Open(cfg Config) (*Log, error) {
	return open(cfg, hooks{})
}

func open(cfg Config, h hooks) (_ *Log, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	l := &Log{
		path:          cfg.Path,
		log:           cfg.Logger,
		clock:         cfg.Clock,
		retention:     cfg.Retention,
		batchSize:     cfg.BatchSize,
		flushInterval: cfg.FlushInterval,
		maxBytes:      cfg.MaxBytes,
		maxEvents:     cfg.MaxEvents,
		room:          cfg.Room,
		hooks:         h,
		flushReq:      make(chan chan error),
		closing:       make(chan struct{}),
		done:          make(chan struct{}),
		table:         "events",
	}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	if l.clock == nil {
		l.clock = time.Now
	}
	if l.batchSize == 0 {
		l.batchSize = DefaultBatchSize
	}
	if l.flushInterval == 0 {
		l.flushInterval = DefaultFlushInterval
	}
	queueSize := cfg.QueueSize
	if queueSize == 0 {
		queueSize = DefaultQueueSize
	}
	l.queue = make(chan Event, queueSize)
	l.limit.init(cfg.PerSource, cfg.PerMinute, l.clock())

	if cfg.Postgres != nil {
		l.pg, l.db, l.table, l.path = true, cfg.Postgres, pgTable, "postgresql:"+pgTable
		l.room = nil
		if err := l.openPG(); err != nil {
			return nil, errors.Join(err, l.closeDB())
		}
	} else if err := l.openSQLite(cfg); err != nil {
		return nil, err
	}
	l.stmts.db, l.stmts.pg = l.db, l.pg
	go l.run()
	return l, nil
}

// openSQLite opens the SQLite file of cfg, migrates it and prepares the
// writer's connection and statements.
func (l *Log) openSQLite(cfg Config) (err error) {
	if l.db, err = openDB(cfg.Path, walSize(cfg.MaxBytes)); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			l.closeDB() // the open error is the one to report
		}
	}()
	ctx := context.Background()
	if err := migrate(ctx, l.db, cfg.Path); err != nil {
		return err
	}
	if l.wconn, err = l.db.Conn(ctx); err != nil {
		return fmt.Errorf("audit: open %s: %w", cfg.Path, err)
	}
	if l.wInsert, err = l.wconn.PrepareContext(ctx, insertSQL); err != nil {
		return fmt.Errorf("audit: prepare insert: %w", err)
	}
	if l.wInsertMany, err = l.wconn.PrepareContext(ctx, insertManySQL); err != nil {
		return fmt.Errorf("audit: prepare multi-row insert: %w", err)
	}
	if l.wPrune, err = l.wconn.PrepareContext(ctx, pruneSQL); err != nil {
		return fmt.Errorf("audit: prepare prune: %w", err)
	}
	if l.wEvictUntrusted, err = l.wconn.PrepareContext(ctx, evictUntrustedSQL); err != nil {
		return fmt.Errorf("audit: prepare evict: %w", err)
	}
	if l.wEvictTrusted, err = l.wconn.PrepareContext(ctx, evictTrustedSQL); err != nil {
		return fmt.Errorf("audit: prepare evict: %w", err)
	}
	if l.prune, err = l.db.PrepareContext(ctx, pruneSQL); err != nil {
		return fmt.Errorf("audit: prepare prune: %w", err)
	}
	var stored, untrusted int64
	if err := l.wconn.QueryRowContext(ctx, "SELECT count(*) FROM events").Scan(&stored); err != nil {
		return fmt.Errorf("audit: count events in %s: %w", cfg.Path, err)
	}
	if err := l.wconn.QueryRowContext(ctx, "SELECT count(*) FROM events WHERE untrusted").Scan(&untrusted); err != nil {
		return fmt.Errorf("audit: count events in %s: %w", cfg.Path, err)
	}
	l.stored.Store(stored)
	l.storedUntrusted.Store(untrusted)
	return nil
}

// openPG checks that the PostgreSQL table exists, reads its size and
// prepares the writer's insert on the pool. Its deletes run on the
// connection that holds the cleanup lock (see postgres.go).
func (l *Log) openPG() (err error) {
	c, err := readCap(l.db)
	if err != nil {
		return fmt.Errorf("audit: read %s (created by the metadata schema, version %d): %w", pgTable, pgSchemaVersion, err)
	}
	l.stored.Store(c.events)
	l.storedUntrusted.Store(c.untrusted)
	l.diskBytes.Store(c.size)
	ctx, cancel := pgCtx()
	defer cancel()
	if l.wInsert, err = l.db.PrepareContext(ctx, pgInsertSQL); err != nil {
		return fmt.Errorf("audit: prepare: %w", err)
	}
	l.writerID = rand.Int64()
	// The markers of writers gone a week: best effort, another node may
	// be deleting them too.
	if _, err := l.db.ExecContext(ctx, pgStaleMarkersSQL, time.Now().Add(-markerAge).UnixNano()); err != nil {
		l.log.Warn("old audit batch markers not deleted", "path", l.path, "err", err)
	}
	return nil
}

// Record queues e to be stored in full and returns at once: it never
// waits for the writer and allocates nothing (but for a string it cuts:
// a field longer than MaxTrustedFieldBytes, or a Target longer than
// MaxTrustedTargetBytes, is cut as RecordBounded cuts). It returns false,
// and counts a drop in Stats, when the queue is full or the log is
// closed. A zero e.Time is replaced by the Clock's time; e.ID and e.Count
// are ignored. Strings in e are kept, not copied.
//
// Record is for the actions of authenticated principals, whose number a
// stranger cannot raise at will. Requests that were refused or carry no
// verified identity go to RecordBounded.
func (l *Log) Record(e Event) bool {
	if e.Time.IsZero() {
		e.Time = l.clock()
	}
	e.Count, e.Untrusted = 0, false
	truncateTrusted(&e)
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		l.dropped.Add(1)
		return false
	}
	return l.enqueue(e)
}

// RecordBounded records e, the event of a refused request (401, 403) or
// of one without a verified identity (anonymous, or failed
// authentication), within bounds that anyone on the network can reach:
//
//   - Every string field of e is cut to MaxFieldBytes (a cut string ends
//     in "…"), so no request makes an event large.
//   - Per minute, the first Config.PerSource events of each source (its
//     Source, the client's IPv4 address or IPv6 /64, its outcome:
//     served, refused, other client error, server error, and its User,
//     which only a verified request has) are recorded in
//     full, up to Config.PerMinute full events over all sources. The
//     others are counted, per source for the first Config.PerMinute
//     sources and then in one count per Source and outcome (served,
//     refused, other client error, server error) for all further ones.
//     When the minute ends (and at Close) each count is written as one
//     summary event with Count set, whose Target reads, for instance,
//     "… and 4,213 more AccessDenied from 203.0.113.9 in this minute".
//     A summary's Time is that of the last request it counts, its
//     Duration the time from the first to the last, and its Status one
//     of the outcome: the requests' own if they share it, else 200, 403,
//     400 or 500.
//
// So such requests add at most 2*PerMinute+12 events a minute to the log,
// and every one of them is still accounted for: in an event of its own,
// in a summary's Count, or in Stats.Dropped. Memory is bounded too: at
// most PerMinute sources are tracked.
//
// RecordBounded never waits for the writer. It allocates only for a
// source new in the minute and for a string it cuts. It returns false,
// counting a drop, when an event to record in full finds the queue full
// or the log is closed; true when it queued or counted e.
func (l *Log) RecordBounded(e Event) bool {
	if e.Time.IsZero() {
		e.Time = l.clock()
	}
	e.Count, e.Untrusted = 0, true
	truncateEvent(&e)
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		l.dropped.Add(1)
		return false
	}
	if !l.limit.admit(&e) {
		l.aggregated.Add(1)
		return true
	}
	return l.enqueue(e)
}

// enqueue puts e in the queue without waiting, counting it as recorded or
// dropped. The caller holds mu for reading and has seen the log open.
func (l *Log) enqueue(e Event) bool {
	select {
	case l.queue <- e:
		l.recorded.Add(1)
		return true
	default:
		l.dropped.Add(1)
		return false
	}
}

// Flush returns once every event Record accepted before Flush was called
// is stored, or has failed to be (counted in Stats.WriteErrors), or when
// ctx ends, with ctx's error. It returns the error of a batch that failed
// while it waited. It returns nil at once on a closed Log, which has
// stored everything.
func (l *Log) Flush(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	reply := make(chan error, 1)
	select {
	case l.flushReq <- reply:
	case <-l.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops accepting events, writes those queued, stops the writer and
// closes the database. A back-off after an earlier failed write does not
// apply: every queued batch is tried, until one fails (then the rest is
// discarded, so that a failing disk or database does not hold up the
// shutdown). It returns an error saying how many events were not written
// since it was called, with the first write error, or the error of
// closing. Calling it again returns the same result.
func (l *Log) Close() error {
	l.closeOnce.Do(func() {
		close(l.closing)
		l.mu.Lock()
		l.closed = true
		close(l.queue)
		l.mu.Unlock()
		<-l.done
		l.closeRes = errors.Join(l.closeErr, l.closeDB())
	})
	return l.closeRes
}

// closeDB closes the statements, connections and database that are open.
func (l *Log) closeDB() error {
	var errs []error
	for _, st := range []*sql.Stmt{l.wInsert, l.wInsertMany, l.wPrune, l.wEvictUntrusted, l.wEvictTrusted, l.prune} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	errs = append(errs, l.stmts.close())
	if l.db == nil {
		return errors.Join(errs...)
	}
	if l.wconn != nil {
		// Let SQLite refresh its planner statistics, as it advises
		// for every connection that has run queries when it closes.
		if _, err := l.wconn.ExecContext(context.Background(), "PRAGMA optimize"); err != nil {
			l.log.Warn("audit log not optimized", "path", l.path, "err", err)
		}
		errs = append(errs, l.wconn.Close())
	}
	if err := errors.Join(append(errs, l.db.Close())...); err != nil {
		return fmt.Errorf("audit: close %s: %w", l.path, err)
	}
	return nil
}

// Stats are a Log's counters since Open, and two gauges.
type Stats struct {
	Recorded uint64 // events Record and RecordBounded queued to be stored in full
	Dropped  uint64 // events Record and RecordBounded refused: queue full or log closed
	// Aggregated counts the events RecordBounded counted in a summary
	// instead of recording them in full.
	Aggregated uint64
	// Summaries counts the summary events the log made of those counts.
	Summaries uint64
	Written   uint64 // events stored, summaries included
	// WriteErrors counts events lost because their batch failed to be
	// written, or was discarded unwritten while writes were failing.
	WriteErrors uint64
	Pruned      uint64 // events deleted by retention and Prune
	Evicted     uint64 // events deleted to keep within MaxBytes and MaxEvents
	// EvictedUntrusted counts the untrusted events of Evicted: Evicted −
	// EvictedUntrusted is the history of authenticated principals the
	// caps took.
	EvictedUntrusted uint64
	Queued           int // queued events and summaries not yet stored or lost
	// Stored is the number of events in the database, as counted at
	// Open and kept since; on PostgreSQL, the cluster's, read every
	// second.
	Stored int64
	// Untrusted is how many of Stored are untrusted (Event.Untrusted).
	Untrusted int64
	// DiskBytes is the size of the database file and its WAL, as last
	// measured: at most a second ago while the log is open.
	DiskBytes int64
}

// Stats returns the Log's counters. They are read one by one while events
// flow, so they are consistent only when the Log is idle: then Recorded +
// Summaries = Written + WriteErrors + Queued.
func (l *Log) Stats() Stats {
	return Stats{
		Recorded:         l.recorded.Load(),
		Dropped:          l.dropped.Load(),
		Aggregated:       l.aggregated.Load(),
		Summaries:        l.summaries.Load(),
		Written:          l.written.Load(),
		WriteErrors:      l.writeErrors.Load(),
		Pruned:           l.pruned.Load(),
		Evicted:          l.evicted.Load(),
		EvictedUntrusted: l.evictedUntrusted.Load(),
		Untrusted:        l.storedUntrusted.Load(),
		Queued:           len(l.queue) + int(l.batched.Load()),
		Stored:           l.stored.Load(),
		DiskBytes:        l.diskBytes.Load(),
	}
}

// isClosed reports whether Close has been called.
func (l *Log) isClosed() bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.closed
}
