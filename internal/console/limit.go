package console

import (
	"container/list"
	"net/netip"
	"slices"
	"sync"
	"time"
)

// limiter counts failed sign-ins per client address and per user name in
// a sliding window: once either has max failures within window, further
// attempts are refused (even with the right password) until the oldest
// failure leaves the window.
//
// An attempt counts as a failure from the moment it begins (begin), and
// is taken back when it succeeds or is not checked at all (forgive): so
// concurrent attempts cannot overshoot the limit while their hashes run.
//
// Memory is bounded: each table keeps at most capacity keys, each with
// at most max timestamps; past capacity the key whose last failure is
// oldest is dropped. Safe for concurrent use.
type limiter struct {
	max      int
	window   time.Duration
	capacity int
	clock    func() time.Time

	mu    sync.Mutex // guards addrs, names
	addrs failureTable
	names failureTable
}

// failureTable holds recent failures by key, least recently failed last.
type failureTable struct {
	byKey map[string]*list.Element // of *failures
	order list.List                // front: most recent failure
}

type failures struct {
	key   string
	times []time.Time // oldest first, all within the window (after pruning)
}

// attempt is a sign-in attempt counted by begin, for forgive.
type attempt struct {
	addr, name string
	at         time.Time
}

// maxNameKey bounds the length of a user name kept as a key: no IAM name
// or sensible root access key is longer.
const maxNameKey = 256

func newLimiter(max int, window time.Duration, capacity int, clock func() time.Time) *limiter {
	l := &limiter{max: max, window: window, capacity: capacity, clock: clock}
	l.addrs.byKey = make(map[string]*list.Element)
	l.names.byKey = make(map[string]*list.Element)
	return l
}

// addrKey returns the limiter key of a client address: the address, or
// for IPv6 its /64, which one client usually holds whole.
func addrKey(a netip.Addr) string {
	a = a.Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}

// begin counts an attempt by addr for name. If either is over the limit
// it counts nothing and returns how long until the next attempt may be
// made.
func (l *limiter) begin(addr netip.Addr, name string) (attempt, time.Duration, bool) {
	if len(name) > maxNameKey {
		name = name[:maxNameKey]
	}
	a := attempt{addr: addrKey(addr), name: name, at: l.clock()}
	l.mu.Lock()
	defer l.mu.Unlock()
	wait := max(l.addrs.wait(a.addr, a.at, l), l.names.wait(a.name, a.at, l))
	if wait > 0 {
		return attempt{}, wait, false
	}
	l.addrs.add(a.addr, a.at, l)
	l.names.add(a.name, a.at, l)
	return a, 0, true
}

// forgive takes back an attempt begin counted: it succeeded, or was never
// checked.
func (l *limiter) forgive(a attempt) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.addrs.remove(a.addr, a.at)
	l.names.remove(a.name, a.at)
}

// len returns the number of keys held in both tables.
func (l *limiter) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.addrs.byKey) + len(l.names.byKey)
}

// prune drops the failures of f that left the window at now.
func (l *limiter) prune(f *failures, now time.Time) {
	cut := now.Add(-l.window)
	i := 0
	for i < len(f.times) && !f.times[i].After(cut) {
		i++
	}
	f.times = f.times[i:]
}

// wait returns how long key must wait at now: zero while it has fewer
// than max failures in the window.
func (t *failureTable) wait(key string, now time.Time, l *limiter) time.Duration {
	t.expire(now, l)
	e, ok := t.byKey[key]
	if !ok {
		return 0
	}
	f := e.Value.(*failures)
	l.prune(f, now)
	if len(f.times) < l.max {
		return 0
	}
	return f.times[len(f.times)-l.max].Add(l.window).Sub(now)
}

// add records a failure of key at now.
func (t *failureTable) add(key string, now time.Time, l *limiter) {
	if e, ok := t.byKey[key]; ok {
		f := e.Value.(*failures)
		f.times = append(f.times, now)
		if len(f.times) > l.max {
			f.times = slices.Delete(f.times, 0, len(f.times)-l.max)
		}
		t.order.MoveToFront(e)
		return
	}
	for len(t.byKey) >= l.capacity {
		oldest := t.order.Back()
		delete(t.byKey, oldest.Value.(*failures).key)
		t.order.Remove(oldest)
	}
	t.byKey[key] = t.order.PushFront(&failures{key: key, times: append(make([]time.Time, 0, 1), now)})
}

// remove takes back one failure of key at at.
func (t *failureTable) remove(key string, at time.Time) {
	e, ok := t.byKey[key]
	if !ok {
		return
	}
	f := e.Value.(*failures)
	if i := slices.IndexFunc(f.times, at.Equal); i >= 0 {
		f.times = slices.Delete(f.times, i, i+1)
	}
	if len(f.times) == 0 {
		delete(t.byKey, key)
		t.order.Remove(e)
	}
}

// expire drops the keys whose last failure left the window: they sit at
// the back of the order.
func (t *failureTable) expire(now time.Time, l *limiter) {
	cut := now.Add(-l.window)
	for e := t.order.Back(); e != nil; e = t.order.Back() {
		f := e.Value.(*failures)
		if len(f.times) > 0 && f.times[len(f.times)-1].After(cut) {
			return
		}
		delete(t.byKey, f.key)
		t.order.Remove(e)
	}
}
