package fsblob

import "sync"

// syncCall is one run of a group-committed sync. err is written before done
// is closed and read only after.
type syncCall struct {
	done   chan struct{}
	err    error
	shared int // callers that get this run's result; guarded by dirSyncer.mu
}

// dirSyncer coalesces fsyncs of one directory. At most one sync runs at a
// time. A caller that arrives while one is running joins the next, which
// starts when the running one ends; all callers that joined it share its
// result. Every caller therefore gets a sync that started after it arrived,
// which is what makes its earlier rename durable.
type dirSyncer struct {
	mu       sync.Mutex // guards inflight, next
	inflight *syncCall  // the running sync, or nil
	next     *syncCall  // the sync queued behind inflight, or nil; not yet started
	refs     int        // callers using this syncer; guarded by Store.mu
}

// sync runs fn, or waits for a run of it that starts after the call, and
// returns that run's error.
func (d *dirSyncer) sync(fn func() error) error {
	d.mu.Lock()
	if d.inflight == nil {
		c := &syncCall{done: make(chan struct{}), shared: 1}
		d.inflight = c
		d.mu.Unlock()
		d.run(c, fn)
		return c.err
	}
	if c := d.next; c != nil {
		c.shared++
		d.mu.Unlock()
		<-c.done
		return c.err
	}
	// First to queue: lead the next run once the current one ends. run
	// promotes next to inflight before closing prev.done, so arrivals from
	// then on queue behind this run rather than join it.
	c := &syncCall{done: make(chan struct{}), shared: 1}
	d.next = c
	prev := d.inflight
	d.mu.Unlock()
	<-prev.done
	d.run(c, fn)
	return c.err
}

// run executes fn for c, then hands the syncer to the queued call, if any.
func (d *dirSyncer) run(c *syncCall, fn func() error) {
	c.err = fn()
	d.mu.Lock()
	d.inflight, d.next = d.next, nil
	d.mu.Unlock()
	close(c.done)
}
