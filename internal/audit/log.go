package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
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
)

// Bounds of the retention pass interval: every Retention/10, but at most
// an hour apart and at least a second apart.
const (
	maxRetentionInterval = time.Hour
	minRetentionInterval = time.Second
)

// dropLogInterval is the least time between two log lines about dropped
// events, or about failed writes.
const dropLogInterval = time.Minute

// Config configures a Log. Only Path is required.
type Config struct {
	// Path is the SQLite file. Its directory is created (0700) and the
	// file is created or kept at mode 0600.
	Path string
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
	// Logger receives write errors, retention passes and dropped events
	// (at most one line a minute, with the count). Nil discards.
	Logger *slog.Logger
	// Clock returns the current time for retention and for events
	// recorded without a Time. Nil means time.Now.
	Clock func() time.Time
}

// Validate reports whether c is usable.
func (c Config) Validate() error {
	switch {
	case c.Path == "":
		return errors.New("audit: config: path is required")
	case c.Retention < 0:
		return fmt.Errorf("audit: config: retention %v is negative", c.Retention)
	case c.QueueSize < 0:
		return fmt.Errorf("audit: config: queue size %d is negative", c.QueueSize)
	case c.BatchSize < 0:
		return fmt.Errorf("audit: config: batch size %d is negative", c.BatchSize)
	case c.FlushInterval < 0:
		return fmt.Errorf("audit: config: flush interval %v is negative", c.FlushInterval)
	}
	return nil
}

// hooks let tests observe and hold up the writer. The zero value does
// nothing; Open uses it.
type hooks struct {
	beforeWrite func()           // called by the writer before it writes a batch
	pruneTick   <-chan time.Time // replaces the retention ticker
	passDone    func(n int64)    // called after each retention pass with the events it deleted
}

// Log is an audit log: a queue that Record fills without waiting, a
// writer goroutine that stores its events in SQLite, and the queries over
// them. It is safe for concurrent use. Close it to write what is queued.
type Log struct {
	path          string
	db            *sql.DB
	log           *slog.Logger
	clock         func() time.Time
	retention     time.Duration
	batchSize     int
	flushInterval time.Duration
	hooks         hooks

	// mu guards closed. Record holds it for reading around its
	// non-blocking send, so that Close, holding it for writing, can close
	// queue with no send in flight.
	mu     sync.RWMutex
	closed bool
	queue  chan Event

	flushReq chan chan error // Flush → writer: write what is queued, then answer
	done     chan struct{}   // closed when the writer has returned

	// The writer's own connection and statements, used by no one else.
	wconn   *sql.Conn
	wInsert *sql.Stmt
	wPrune  *sql.Stmt
	// closeErr is the error of the writer's last writes, set before done
	// is closed.
	closeErr error

	prune *sql.Stmt // for Prune, over the pool
	stmts stmtCache // for Query and Export

	recorded, dropped, written, writeErrors, pruned atomic.Uint64
	batched                                         atomic.Int64 // events the writer holds in its batch

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
		hooks:         h,
		flushReq:      make(chan chan error),
		done:          make(chan struct{}),
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

	if l.db, err = openDB(cfg.Path); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			l.closeDB() // the open error is the one to report
		}
	}()
	ctx := context.Background()
	if err := migrate(ctx, l.db, cfg.Path); err != nil {
		return nil, err
	}
	if l.wconn, err = l.db.Conn(ctx); err != nil {
		return nil, fmt.Errorf("audit: open %s: %w", cfg.Path, err)
	}
	if l.wInsert, err = l.wconn.PrepareContext(ctx, insertSQL); err != nil {
		return nil, fmt.Errorf("audit: prepare insert: %w", err)
	}
	if l.wPrune, err = l.wconn.PrepareContext(ctx, pruneSQL); err != nil {
		return nil, fmt.Errorf("audit: prepare prune: %w", err)
	}
	if l.prune, err = l.db.PrepareContext(ctx, pruneSQL); err != nil {
		return nil, fmt.Errorf("audit: prepare prune: %w", err)
	}
	l.stmts.db = l.db
	go l.run()
	return l, nil
}

// Record queues e to be stored and returns at once: it never waits for
// the writer and allocates nothing. It returns false, and counts a drop
// in Stats, when the queue is full or the log is closed. A zero e.Time is
// replaced by the Clock's time; e.ID is ignored. Strings in e are kept,
// not copied.
func (l *Log) Record(e Event) bool {
	if e.Time.IsZero() {
		e.Time = l.clock()
	}
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		l.dropped.Add(1)
		return false
	}
	select {
	case l.queue <- e:
		l.mu.RUnlock()
		l.recorded.Add(1)
		return true
	default:
		l.mu.RUnlock()
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
// closes the database. It returns the error of the last writes or of
// closing. Calling it again returns the same result.
func (l *Log) Close() error {
	l.closeOnce.Do(func() {
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
	for _, st := range []*sql.Stmt{l.wInsert, l.wPrune, l.prune} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	errs = append(errs, l.stmts.close())
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

// Stats are a Log's counters since Open.
type Stats struct {
	Recorded    uint64 // events Record accepted
	Dropped     uint64 // events Record refused: queue full or log closed
	Written     uint64 // events stored
	WriteErrors uint64 // accepted events lost because their batch failed to be written
	Pruned      uint64 // events deleted by retention and Prune
	Queued      int    // accepted events not yet stored or lost
}

// Stats returns the Log's counters. They are read one by one while events
// flow, so they are consistent only when the Log is idle: then Recorded =
// Written + WriteErrors + Queued.
func (l *Log) Stats() Stats {
	return Stats{
		Recorded:    l.recorded.Load(),
		Dropped:     l.dropped.Load(),
		Written:     l.written.Load(),
		WriteErrors: l.writeErrors.Load(),
		Pruned:      l.pruned.Load(),
		Queued:      len(l.queue) + int(l.batched.Load()),
	}
}

// isClosed reports whether Close has been called.
func (l *Log) isClosed() bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.closed
}
