package console

import (
	"container/heap"
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
// An attempt from a known device — a browser that signed in as the name
// before, and shows the device cookie it got then (device.go) — is
// counted per device instead, and neither the address's nor the name's
// lock applies to it: strangers who fail under a name (anyone can see
// root's, the access key ID of every presigned URL it makes) lock out
// strangers, not the browsers the user signs in with. A device with max
// failures of its own within window is locked like a name; its attempts
// are then counted as a stranger's.
//
// An attempt counts as a failure from the moment it begins (begin), and
// is taken back when it succeeds or is not checked at all (forgive): so
// concurrent attempts cannot overshoot the limit while their hashes run.
//
// Memory is bounded: each table keeps at most capacity keys, each with
// at most max timestamps. A full table drops a key to make room for a
// new one, but never a locked one (failureTable says which and why); a
// table full of locked keys refuses new keys like a locked one, until
// the first lock ends. Safe for concurrent use.
type limiter struct {
	max      int
	window   time.Duration
	capacity int
	clock    func() time.Time

	mu      sync.Mutex // guards addrs, names, devices
	addrs   failureTable
	names   failureTable
	devices failureTable
}

// failureTable holds recent failures by key.
//
// A locked key (max failures in the window) is never dropped to make
// room: dropping it lifted its lock, and anyone with enough addresses
// could do that at will, failing once each with capacity other names.
// Locked keys sit in a heap by the end of their lock, which expire
// watches. When every key is locked, a new key is refused (wait): the
// table fails closed rather than grow past its bound.
//
// Dropping an unlocked key forgets its failures: a name with k < max of
// them gets k guesses back. Keeping them all would take unbounded
// memory, and refusing new keys as soon as the table is full would let
// capacity single failures shut out of the console every name that has
// not failed lately. So the unlocked keys sit in one list per failure
// count, and a full table drops the least recently failed key of the
// lowest count: to drop a key with k failures, every other unlocked key
// must hold k or more (those with exactly k, failed since its last). In
// least recently failed order alone, a flood of capacity one-off names
// (capacity failures, each a password check through the gate) won back
// max-1 guesses on a name; now it wins none from a name with two
// failures or more. An attacker must raise its own names to the count of
// the one it wants dropped, about capacity failures a count: the first
// guesses cost k×capacity failures for k, a sustained attack about twice
// the failures per guess of least recent order.
//
// What neither order holds: once some max×capacity failures within a
// window leave the table nearly full of locked keys, or of keys one
// short of their lock, the few slots left churn, and a name among them
// loses its count to a failure or two of new names. That takes 100,000
// password checks per 15 minutes by default, from thousands of
// addresses: with at most four at once, each tens of milliseconds, much
// of a server's sign-in capacity (the rest are answered 503). Holding
// the line there would mean refusing new names while some keys are
// unlocked: a cheaper way to shut everyone out.
//
// Per attempt this is a map lookup, list moves, a heap push or removal
// (O(log capacity)) when a key locks or unlocks, and a look at the back
// of each count's list (max-1 lists, 9 by default): no walk over keys.
type failureTable struct {
	byKey map[string]*failures
	// levels[n] holds the unlocked keys filed with n failures (n from 1
	// to max-1), most recently filed first; levels[0] is unused.
	levels []list.List // of *failures
	locked lockHeap
}

type failures struct {
	key   string
	times []time.Time // oldest first, at most max
	// Where the key is filed: while unlocked, elem in levels[level];
	// while locked, index in locked and until the end of the lock.
	level int
	elem  *list.Element
	index int
	until time.Time
}

// attempt is a sign-in attempt counted by begin, for forgive.
type attempt struct {
	addr, name string // for a stranger's attempt
	device     string // for a known device's, instead
	at         time.Time
}

// maxNameKey bounds the length of a user name kept as a key: no IAM name
// or sensible root access key is longer.
const maxNameKey = 256

func newLimiter(max int, window time.Duration, capacity int, clock func() time.Time) *limiter {
	l := &limiter{max: max, window: window, capacity: capacity, clock: clock}
	for _, t := range []*failureTable{&l.addrs, &l.names, &l.devices} {
		t.byKey = make(map[string]*failures)
		t.levels = make([]list.List, max)
	}
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

// begin counts an attempt by addr for name, from the known device with
// ID device ("" for none: a stranger). If the device is locked, the
// attempt is a stranger's. If a stranger's address or name is over the
// limit, or new to a table full of locked keys, it counts nothing and
// returns how long until the next attempt may be made.
func (l *limiter) begin(addr netip.Addr, name, device string) (attempt, time.Duration, bool) {
	if len(name) > maxNameKey {
		name = name[:maxNameKey]
	}
	now := l.clock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if device != "" && l.devices.wait(device, now, l) == 0 {
		l.devices.add(device, now, l)
		return attempt{device: device, at: now}, 0, true
	}
	a := attempt{addr: addrKey(addr), name: name, at: now}
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
	if a.device != "" {
		l.devices.remove(a.device, a.at, l)
		return
	}
	l.addrs.remove(a.addr, a.at, l)
	l.names.remove(a.name, a.at, l)
}

// len returns the number of keys held in its tables.
func (l *limiter) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.addrs.byKey) + len(l.names.byKey) + len(l.devices.byKey)
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

// wait returns how long an attempt with key must wait at now: until its
// lock ends if it is locked; if it is new and every key of the full
// table is locked, until the first lock ends; else zero.
func (t *failureTable) wait(key string, now time.Time, l *limiter) time.Duration {
	t.expire(now, l)
	if f, ok := t.byKey[key]; ok {
		if f.elem == nil {
			return f.until.Sub(now)
		}
		return 0
	}
	if len(t.byKey) < l.capacity || len(t.locked) < len(t.byKey) {
		return 0
	}
	return t.locked[0].until.Sub(now)
}

// add records a failure of key at now. wait has seen to it that key is
// not locked and that there is room for it.
func (t *failureTable) add(key string, now time.Time, l *limiter) {
	f, ok := t.byKey[key]
	if ok {
		t.unfile(f)
		l.prune(f, now)
	} else {
		for len(t.byKey) >= l.capacity {
			if !t.drop() {
				return // every key locked: never past the bound
			}
		}
		f = &failures{key: key, times: make([]time.Time, 0, 1)}
		t.byKey[key] = f
	}
	f.times = append(f.times, now)
	if len(f.times) > l.max {
		f.times = slices.Delete(f.times, 0, len(f.times)-l.max)
	}
	t.file(f, l)
}

// remove takes back one failure of key at at.
func (t *failureTable) remove(key string, at time.Time, l *limiter) {
	f, ok := t.byKey[key]
	if !ok {
		return
	}
	i := slices.IndexFunc(f.times, at.Equal)
	if i < 0 {
		return
	}
	t.unfile(f)
	f.times = slices.Delete(f.times, i, i+1)
	t.file(f, l)
}

// file puts f where its failures say: out of the table if it has none,
// in the heap if it has max (locked until the oldest leaves the window),
// else first in its count's list.
func (t *failureTable) file(f *failures, l *limiter) {
	switch n := len(f.times); {
	case n == 0:
		delete(t.byKey, f.key)
	case n >= l.max:
		f.until = f.times[n-l.max].Add(l.window)
		heap.Push(&t.locked, f)
	default:
		f.level = n
		f.elem = t.levels[n].PushFront(f)
	}
}

// unfile takes f out of its list or the heap, to be filed again.
func (t *failureTable) unfile(f *failures) {
	if f.elem == nil {
		heap.Remove(&t.locked, f.index)
		return
	}
	t.levels[f.level].Remove(f.elem)
	f.elem = nil
}

// drop makes room: it drops the least recently filed of the unlocked
// keys with the fewest failures. It reports false if every key is
// locked.
func (t *failureTable) drop() bool {
	for n := 1; n < len(t.levels); n++ {
		if e := t.levels[n].Back(); e != nil {
			delete(t.byKey, e.Value.(*failures).key)
			t.levels[n].Remove(e)
			return true
		}
	}
	return false
}

// expire files again the keys whose lock ended, and drops those whose
// last failure left the window: they sit at the back of their lists. A
// key filed again (its lock ended, a failure forgiven) goes first in its
// list though its last failure may be older than the next key's: it
// then leaves after that key, or when dropped for room; late, but never
// past the bound.
func (t *failureTable) expire(now time.Time, l *limiter) {
	for len(t.locked) > 0 && !t.locked[0].until.After(now) {
		f := heap.Pop(&t.locked).(*failures)
		l.prune(f, now) // fewer than max left: the oldest left the window
		t.file(f, l)
	}
	cut := now.Add(-l.window)
	for n := 1; n < len(t.levels); n++ {
		for e := t.levels[n].Back(); e != nil; e = t.levels[n].Back() {
			f := e.Value.(*failures)
			if f.times[len(f.times)-1].After(cut) {
				break
			}
			delete(t.byKey, f.key)
			t.levels[n].Remove(e)
		}
	}
}

// lockHeap holds locked keys, the first lock to end first
// (container/heap).
type lockHeap []*failures

func (h lockHeap) Len() int           { return len(h) }
func (h lockHeap) Less(i, j int) bool { return h[i].until.Before(h[j].until) }

func (h lockHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

func (h *lockHeap) Push(x any) {
	f := x.(*failures)
	f.index = len(*h)
	*h = append(*h, f)
}

func (h *lockHeap) Pop() any {
	old := *h
	f := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return f
}
