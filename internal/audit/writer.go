package audit

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"syscall"
	"time"
)

// tickInterval is how often the writer ends RecordBounded's window when
// its minute is over, and checks the cap.
const tickInterval = time.Second

// Back-off of the writer after a failed write: it discards what comes for
// minBackoff, then twice as long after each further failure, up to
// maxBackoff.
const (
	minBackoff = time.Second
	maxBackoff = 30 * time.Second
)

// run is the writer goroutine: it takes events off the queue into a batch
// and writes the batch when it is full, when it has waited flushInterval,
// when Flush asks, and when the queue is closed. Every second it writes
// the summaries of RecordBounded's window once its minute is over, and
// checks the cap. Between writes it runs retention passes and evictions,
// one bounded DELETE at a time, so that writes are never held up for
// long. It returns when Close has closed the queue and the last batch,
// with the last summaries, is written.
func (l *Log) run() {
	defer close(l.done)
	w := writer{
		l:     l,
		batch: make([]Event, 0, min(l.batchSize, DefaultBatchSize)),
		args:  make([]any, 0, 16),
		timer: time.NewTimer(time.Hour),
	}
	w.timer.Stop()

	// always is a ready channel: selecting on it lets a retention pass
	// take a step per loop. select picks at random among the ready cases,
	// so under load deletes and events alternate, and a long pass slows
	// the writer down by about half rather than stopping it.
	always := make(chan struct{})
	close(always)
	var pruneTick <-chan time.Time
	if l.retention > 0 {
		w.passStart = true // the pass at Open
		pruneTick = l.hooks.pruneTick
		if pruneTick == nil {
			t := time.NewTicker(retentionInterval(l.retention))
			defer t.Stop()
			pruneTick = t.C
		}
	}
	report := time.NewTicker(dropLogInterval)
	defer report.Stop()
	tick := l.hooks.tick
	if tick == nil {
		t := time.NewTicker(tickInterval)
		defer t.Stop()
		tick = t.C
	}
	w.checkCap()
	closing := l.closing

	for {
		// Close comes first: from then on no batch is held, and the
		// back-off of an earlier failure no longer discards.
		select {
		case <-closing:
			closing = nil
			w.startClosing()
		default:
		}
		var pruneStep, evictStep <-chan struct{}
		queue := l.queue
		if w.holding() {
			// Wait for the retry with the failed batch in hand: the queue
			// is the buffer, and nothing else needs the database.
			queue = nil
		} else {
			if w.passStart || w.passing {
				pruneStep = always
			}
			if w.evictLeft > 0 {
				evictStep = always
			}
		}
		select {
		case <-closing:
			closing = nil
			w.startClosing()
		case <-w.retryC:
			w.retryC = nil
			w.write() // the error is counted and logged; no one waits for it
		case e, ok := <-queue:
			if !ok {
				w.addSummaries(l.limit.rotate(l.clock(), true))
				_ = w.write() // counted in closeLost
				l.closeErr = w.closeResult()
				if l.pg {
					w.passing, w.evictLeft = false, 0
					w.release()
				}
				w.reportDrops(true)
				w.reportEvictions(true)
				return
			}
			w.add(e)
		case <-w.timerC:
			w.timerC = nil
			w.write() // the error is counted and logged; no one waits for it
		case reply := <-l.flushReq:
			if w.holding() {
				reply <- fmt.Errorf("audit: %d events held: writes are failing, next try after %s: %w",
					len(w.batch), w.retryAt.UTC().Format(time.RFC3339), w.lastErr)
				continue
			}
			reply <- w.flush()
		case <-pruneTick:
			if !w.passing {
				w.passStart = true
			}
		case <-pruneStep:
			w.pruneStep()
		case <-evictStep:
			w.evictStep()
		case <-tick:
			if w.holding() {
				// The window goes on until its summaries can be
				// written: its counts stay, bounded, in the limiter.
				continue
			}
			w.addSummaries(l.limit.rotate(l.clock(), false))
			w.checkCap()
			if w.passDeferred {
				w.passStart, w.passDeferred = true, false
			}
		case <-report.C:
			w.reportDrops(false)
			w.reportEvictions(false)
		}
	}
}

// retentionInterval is how often retention passes run for retention r.
func retentionInterval(r time.Duration) time.Duration {
	return min(max(r/10, minRetentionInterval), maxRetentionInterval)
}

// writer is the state of the writer goroutine.
type writer struct {
	l      *Log
	batch  []Event
	args   []any // reused arguments of the insert
	timer  *time.Timer
	timerC <-chan time.Time // timer.C while the batch waits to fill, else nil
	cols   pgColumns        // the batch as arrays, on PostgreSQL
	// On PostgreSQL, the marker of the batch once tried (see pgInsertSQL),
	// and the sequence number of the last.
	marker  marker
	lastSeq int64

	// On PostgreSQL a failed batch is held and tried again at retryAt
	// (retryC fires then), unless the log is closing.
	retryTimer *time.Timer
	retryC     <-chan time.Time
	closing    bool // Close has been called

	// Since Close: events lost (failed or discarded) and the error of the
	// first failed write, which Close returns.
	closeLost int
	closeErr  error

	passStart bool // a retention pass is due
	passing   bool // a retention pass is under way
	// passDeferred: a retention pass was due but another node held the
	// cleanup lock; it is due again at the next tick.
	passDeferred bool
	cutoff       time.Time // of the pass under way
	passN        int64     // events the pass under way deleted

	lastDropLog   time.Time
	reportedDrops uint64
	lastErrLog    time.Time
	failedBatches int // batches failed since the last logged failure

	// After a failed write, batches are discarded unwritten until
	// retryAt: a full or failing disk is not hammered, and the writer
	// keeps draining the queue.
	failures int       // writes failed in a row
	retryAt  time.Time // by the Log's clock
	lastErr  error     // of the last failed write

	capState
}

// startClosing begins the end: the back-off of a failure before Close is
// forgotten, so that every batch queued is tried (until one fails afresh:
// then the rest is discarded, so that a failing disk or database does not
// hold up the shutdown), and a held batch is tried at once rather than at
// its retry time.
func (w *writer) startClosing() {
	w.closing = true
	w.retryAt = time.Time{}
	if w.retryC != nil {
		w.retryTimer.Stop()
		w.retryC = nil
		_ = w.write() // counted in closeLost
	}
}

// closeResult returns the error Close reports for the writes since it
// was called: nil if every event was stored, else how many were lost and
// the first write error.
func (w *writer) closeResult() error {
	if w.closeLost == 0 {
		return nil
	}
	return fmt.Errorf("audit: %d events not written at close: %w", w.closeLost, w.closeErr)
}

// holding reports whether the writer holds a failed batch to try again
// (PostgreSQL only), taking nothing from the queue meanwhile.
func (w *writer) holding() bool {
	return w.retryC != nil && !w.closing
}

// addSummaries adds the summary events of c, if any, to the batch, after
// the events queued now, so that a minute's summaries come after the
// events it recorded in full.
func (w *writer) addSummaries(c *counts) {
	if c == nil {
		return
	}
	_ = w.drain() // errors are counted and logged; no one waits for them
	for _, e := range c.summaries(nil) {
		w.l.summaries.Add(1)
		w.add(e)
	}
}

// add puts e in the batch, writing it if it is full.
func (w *writer) add(e Event) {
	w.batch = append(w.batch, e)
	w.l.batched.Store(int64(len(w.batch)))
	switch {
	case len(w.batch) >= w.l.batchSize:
		w.write() // the error is counted and logged; no one waits for it
	case len(w.batch) == 1:
		w.timer.Reset(w.l.flushInterval)
		w.timerC = w.timer.C
	}
}

// flush writes the batch and the events queued now: all those Record
// accepted before the Flush call that asked, since they are queued ahead
// of anything accepted after len was read.
func (w *writer) flush() error {
	err := w.drain()
	return errors.Join(err, w.write())
}

// drain moves the events queued now into the batch, writing it whenever
// it is full, and returns the errors of those writes.
func (w *writer) drain() error {
	var errs []error
	for range len(w.l.queue) {
		e, ok := <-w.l.queue
		if !ok {
			break
		}
		w.batch = append(w.batch, e)
		w.l.batched.Store(int64(len(w.batch)))
		if len(w.batch) >= w.l.batchSize {
			errs = append(errs, w.write())
		}
	}
	return errors.Join(errs...)
}

// write stores the batch in one transaction and empties it. A failed
// batch is lost: it is counted in WriteErrors and logged (at most once a
// minute, with the number of failures in between).
func (w *writer) write() error {
	if w.timerC != nil {
		w.timer.Stop()
		w.timerC = nil
	}
	n := len(w.batch)
	if n == 0 {
		return nil
	}
	if w.holding() {
		return fmt.Errorf("audit: %d events held: writes are failing, next try after %s: %w",
			n, w.retryAt.UTC().Format(time.RFC3339), w.lastErr)
	}
	if now := w.l.clock(); now.Before(w.retryAt) && (!w.l.pg || w.closing) {
		w.reset()
		w.l.writeErrors.Add(uint64(n))
		if w.closing {
			w.closeLost += n
		}
		return fmt.Errorf("audit: %d events discarded: writes are failing, next try after %s: %w",
			n, w.retryAt.UTC().Format(time.RFC3339), w.lastErr)
	}
	if w.l.hooks.beforeWrite != nil {
		w.l.hooks.beforeWrite()
	}
	var untrusted int64
	for i := range w.batch {
		if w.batch[i].Untrusted {
			untrusted++
		}
	}
	var err error
	if w.l.room != nil {
		err = w.l.room()
	}
	if err == nil {
		err = w.insert()
	}
	hold := err != nil && w.l.pg && !w.closing
	if !hold {
		w.reset()
	}
	if err == nil {
		w.l.written.Add(uint64(n))
		w.l.stored.Add(int64(n))
		w.l.storedUntrusted.Add(untrusted)
		w.failures, w.retryAt, w.lastErr = 0, time.Time{}, nil
		w.reportDrops(false)
		if time.Since(w.lastCapCheck) >= capCheckInterval {
			w.checkCap()
		}
		return nil
	}
	w.failures++
	backoff := min(minBackoff<<min(w.failures-1, 16), maxBackoff)
	w.retryAt, w.lastErr = w.l.clock().Add(backoff), err
	w.failedBatches++
	if hold {
		if w.retryTimer == nil {
			w.retryTimer = time.NewTimer(backoff)
		} else {
			w.retryTimer.Reset(backoff)
		}
		w.retryC = w.retryTimer.C
	} else {
		w.l.writeErrors.Add(uint64(n))
		if w.closing {
			w.closeLost += n
			if w.closeErr == nil {
				w.closeErr = err
			}
		}
	}
	if now := time.Now(); w.lastErrLog.IsZero() || now.Sub(w.lastErrLog) >= dropLogInterval {
		if hold {
			w.l.log.Error("audit events not written: holding them and retrying", "path", w.l.path, "events", n,
				"failed_batches", w.failedBatches, "retry_in", backoff, "queued", len(w.l.queue), "err", err)
		} else {
			w.l.log.Error("audit events not written", "path", w.l.path, "events", n,
				"failed_batches", w.failedBatches, "discarding_for", backoff, "err", err)
		}
		w.lastErrLog, w.failedBatches = now, 0
	}
	w.reportDrops(false)
	return fmt.Errorf("audit: write %d events: %w", n, err)
}

// reset empties the batch.
func (w *writer) reset() {
	clear(w.batch) // drop the references to the events' strings
	w.batch = w.batch[:0]
	w.marker = marker{} // the next batch is another
	w.l.batched.Store(0)
}

// insert stores the batch in one transaction.
func (w *writer) insert() (err error) {
	if w.l.hooks.writeErr != nil {
		if err := w.l.hooks.writeErr(); err != nil {
			return err
		}
	}
	if w.l.pg {
		ctx, cancel := pgCtx()
		defer cancel()
		if w.marker.seq == 0 { // the batch's first try: a new marker
			w.lastSeq++
			w.marker = marker{writer: w.l.writerID, seq: w.lastSeq, time: time.Now()}
		}
		_, err := w.l.wInsert.ExecContext(ctx, w.cols.args(w.batch, w.marker)...)
		w.cols.reset()
		if err == nil && w.l.hooks.lostAnswer != nil {
			err = w.l.hooks.lostAnswer()
		}
		if err != nil && brokenConn(err) {
			// A pooled connection that an outage cut is found broken
			// only when used (unexpected EOF, reset): the pool drops it
			// and dials afresh for a second try. (Seen at the first
			// write after PostgreSQL came back, which at Close made the
			// last batch fail.)
			_, err = w.l.wInsert.ExecContext(ctx, w.cols.args(w.batch, w.marker)...)
			w.cols.reset()
		}
		return err
	}
	ctx := context.Background() // the writer's work is bounded by busyTimeout, not by a caller
	tx, err := w.l.wconn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback() // the insert's error is the one to report
		}
	}()
	defer func() { clear(w.args[:cap(w.args)]) }() // drop the references to the events' strings
	// Whole groups of insertRows in one statement each, the rest one by
	// one: rows are stored in the batch's order either way.
	b := w.batch
	if len(b) >= insertRows {
		many := tx.StmtContext(ctx, w.l.wInsertMany)
		for ; len(b) >= insertRows; b = b[insertRows:] {
			w.args = w.args[:0]
			for i := range b[:insertRows] {
				w.args = appendInsertArgs(w.args, &b[i])
			}
			if _, err := many.ExecContext(ctx, w.args...); err != nil {
				return err
			}
		}
	}
	if len(b) > 0 {
		st := tx.StmtContext(ctx, w.l.wInsert)
		for i := range b {
			w.args = appendInsertArgs(w.args[:0], &b[i])
			if _, err := st.ExecContext(ctx, w.args...); err != nil {
				return err
			}
		}
	}
	return tx.Commit()
}

// pruneStep runs one bounded DELETE of a retention pass, starting the pass
// if one is due.
func (w *writer) pruneStep() {
	if !w.passing {
		if w.l.pg && !w.lead() {
			// Another node holds the cleanup lock: try again at the next
			// tick, not at the next interval (that node's pass may be an
			// eviction, or stop before this one's cutoff).
			w.passStart, w.passDeferred = false, true
			return
		}
		w.passStart, w.passing = false, true
		w.cutoff = w.l.clock().Add(-w.l.retention)
		w.passN = 0
	}
	var n, untrusted int64
	var err error
	if w.l.pg {
		ctx, cancel := pgCtx()
		n, untrusted, err = countDeleted(w.leader.QueryContext(ctx, pgPruneSQL, w.cutoff.UnixNano(), pruneBatch))
		cancel()
	} else {
		n, untrusted, err = countDeleted(w.l.wPrune.QueryContext(context.Background(), w.cutoff.UnixNano(), pruneBatch))
	}
	w.passN += n
	w.l.pruned.Add(uint64(n))
	w.l.stored.Add(-n)
	w.l.storedUntrusted.Add(-untrusted)
	if err == nil && n == pruneBatch {
		return // more to delete: next step when nothing else is ready
	}
	w.passing = false
	if w.l.pg {
		w.release()
	}
	if err != nil {
		w.l.log.Error("audit retention pass failed", "path", w.l.path, "cutoff", w.cutoff,
			"pruned", w.passN, "err", err)
	} else if w.passN > 0 {
		w.l.log.Info("audit events pruned", "path", w.l.path, "cutoff", w.cutoff, "pruned", w.passN)
	}
	if w.l.hooks.passDone != nil {
		w.l.hooks.passDone(w.passN)
	}
}

// reportDrops logs the events dropped since the last report, at most once
// a dropLogInterval unless final.
func (w *writer) reportDrops(final bool) {
	d := w.l.dropped.Load()
	if d == w.reportedDrops {
		return
	}
	now := time.Now()
	if !final && !w.lastDropLog.IsZero() && now.Sub(w.lastDropLog) < dropLogInterval {
		return
	}
	w.l.log.Warn("audit events dropped", "path", w.l.path, "dropped", d-w.reportedDrops, "dropped_total", d)
	w.lastDropLog, w.reportedDrops = now, d
}

// brokenConn reports whether err says the connection itself broke before
// an answer came, rather than that the database refused the statement.
func brokenConn(err error) bool {
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
