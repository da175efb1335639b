package console

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestLimiter(t *testing.T) {
	t.Parallel()
	ip := netip.MustParseAddr("192.0.2.1")
	other := netip.MustParseAddr("192.0.2.2")
	c := newFakeClock()
	l := newLimiter(10, 15*time.Minute, 100, c.now)
	for i := range 10 {
		if _, _, ok := l.begin(ip, "alice", ""); !ok {
			t.Fatalf("attempt %d refused, want 10 allowed", i+1)
		}
		c.advance(time.Minute)
	}
	// 10 failures in the last 15 minutes: the 11th is refused until the
	// first leaves the window (at 15m; it is 10m now).
	_, wait, ok := l.begin(ip, "alice", "")
	if ok || wait != 5*time.Minute {
		t.Fatalf("11th attempt: ok %v, wait %v; want refused for 5m", ok, wait)
	}
	// Per address: another name from the same address is refused too…
	if _, _, ok := l.begin(ip, "bob", ""); ok {
		t.Errorf("another name from a locked address was allowed")
	}
	// …and per name: the same name from another address.
	if _, _, ok := l.begin(other, "alice", ""); ok {
		t.Errorf("a locked name from another address was allowed")
	}
	if _, _, ok := l.begin(other, "bob", ""); !ok {
		t.Errorf("another name from another address was refused")
	}
	c.advance(5 * time.Minute)
	if _, _, ok := l.begin(ip, "alice", ""); !ok {
		t.Errorf("refused after the oldest failure left the window")
	}
	if _, _, ok := l.begin(ip, "alice", ""); ok {
		t.Errorf("allowed two attempts when one failure left the window")
	}
}

func TestLimiterForgive(t *testing.T) {
	t.Parallel()
	ip := netip.MustParseAddr("192.0.2.1")
	c := newFakeClock()
	l := newLimiter(3, time.Minute, 100, c.now)
	for range 10 {
		a, _, ok := l.begin(ip, "alice", "")
		if !ok {
			t.Fatal("a forgiven attempt still counts")
		}
		l.forgive(a) // it succeeded
	}
	if n := l.len(); n != 0 {
		t.Errorf("limiter holds %d keys after forgiven attempts, want 0", n)
	}
	// Attempts in flight count at once: three concurrent ones fill the
	// limit before any hash finishes.
	for range 3 {
		if _, _, ok := l.begin(ip, "alice", ""); !ok {
			t.Fatal("attempt refused below the limit")
		}
	}
	if _, _, ok := l.begin(ip, "alice", ""); ok {
		t.Errorf("a fourth attempt in flight was allowed")
	}
}

func TestLimiterKeys(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ a, b string }{
		{"2001:db8:1:2::1", "2001:db8:1:2:ffff::9"}, // one /64
		{"::ffff:192.0.2.1", "192.0.2.1"},           // IPv4-mapped
	} {
		if ka, kb := addrKey(netip.MustParseAddr(tc.a)), addrKey(netip.MustParseAddr(tc.b)); ka != kb {
			t.Errorf("addrKey(%s) = %s, addrKey(%s) = %s; want one key", tc.a, ka, tc.b, kb)
		}
	}
	if addrKey(netip.MustParseAddr("2001:db8:1:2::1")) == addrKey(netip.MustParseAddr("2001:db8:1:3::1")) {
		t.Errorf("two /64s share a key")
	}
}

func TestLimiterBounded(t *testing.T) {
	t.Parallel()
	c := newFakeClock()
	l := newLimiter(10, 15*time.Minute, 50, c.now)
	for i := range 1000 {
		addr := netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)})
		l.begin(addr, fmt.Sprintf("user%d-%0300d", i, 0), "") // long names are cut
	}
	if n := l.len(); n > 100 {
		t.Errorf("limiter holds %d keys, want at most 2×50", n)
	}
	for _, f := range l.names.byKey {
		if k := f.key; len(k) > maxNameKey {
			t.Fatalf("a name key of %d bytes is kept", len(k))
		}
	}
	// Keys whose failures left the window are dropped as new ones come.
	c.advance(16 * time.Minute)
	l.begin(netip.MustParseAddr("10.9.9.9"), "x", "")
	if n := l.len(); n != 2 {
		t.Errorf("after the window the limiter holds %d keys, want 2", n)
	}
}

// flood fails once with each of n names never seen before, each from an
// address never seen before: it fills both tables.
func flood(l *limiter, n int) {
	for i := range n {
		l.begin(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), fmt.Sprintf("flood%d", i), "")
	}
}

// TestLimiterLockSurvivesFlood is the attack the bound once allowed: a
// locked name or address was dropped when its table filled with others,
// and came back with a fresh count. Neither table drops a locked key.
func TestLimiterLockSurvivesFlood(t *testing.T) {
	t.Parallel()
	victim := netip.MustParseAddr("192.0.2.1")
	c := newFakeClock()
	l := newLimiter(10, 15*time.Minute, limiterKeys, c.now)
	for range 10 {
		l.begin(victim, "alice", "")
		c.advance(time.Second)
	}
	flood(l, 2*limiterKeys+1)
	if n := l.len(); n > 2*limiterKeys {
		t.Errorf("limiter holds %d keys, want at most 2×%d", n, limiterKeys)
	}
	// Locked until the first of the 10 failures leaves the window.
	left := 15*time.Minute - 10*time.Second
	if _, wait, ok := l.begin(netip.MustParseAddr("198.51.100.7"), "alice", ""); ok || wait != left {
		t.Errorf("locked name after the flood: ok %v, wait %v; want refused for %v", ok, wait, left)
	}
	if _, wait, ok := l.begin(victim, "bob", ""); ok || wait != left {
		t.Errorf("locked address after the flood: ok %v, wait %v; want refused for %v", ok, wait, left)
	}
	c.advance(left - time.Second)
	if _, _, ok := l.begin(netip.MustParseAddr("198.51.100.7"), "alice", ""); ok {
		t.Errorf("locked name allowed a second before its lock ends")
	}
	c.advance(time.Second)
	if _, _, ok := l.begin(netip.MustParseAddr("198.51.100.7"), "alice", ""); !ok {
		t.Errorf("name still refused when its lock ended")
	}
}

// TestLimiterFullOfLocks fills one table with locked keys (the other
// with unlocked ones, which make room as before): a new key is refused
// until the first lock ends, like a locked one, and the table stays at
// its bound.
func TestLimiterFullOfLocks(t *testing.T) {
	t.Parallel()
	const capacity = 5
	for _, tc := range []struct {
		table string
		// failure returns the address and name of the i-th failure of
		// the 2×capacity that lock capacity keys of the table.
		failure func(i int) (netip.Addr, string)
		fresh   func() (netip.Addr, string) // a new key of the table
	}{
		{
			table: "names",
			failure: func(i int) (netip.Addr, string) {
				return netip.AddrFrom4([4]byte{10, 0, 0, byte(i)}), fmt.Sprintf("user%d", i/2)
			},
			fresh: func() (netip.Addr, string) { return netip.MustParseAddr("10.0.1.1"), "newcomer" },
		},
		{
			table: "addresses",
			failure: func(i int) (netip.Addr, string) {
				return netip.AddrFrom4([4]byte{10, 0, 0, byte(i / 2)}), fmt.Sprintf("user%d", i)
			},
			fresh: func() (netip.Addr, string) { return netip.MustParseAddr("10.0.1.1"), "newcomer" },
		},
	} {
		t.Run(tc.table, func(t *testing.T) {
			t.Parallel()
			c := newFakeClock()
			l := newLimiter(2, time.Minute, capacity, c.now)
			for i := range 2 * capacity {
				if _, _, ok := l.strangerBegin(tc.failure(i)); !ok {
					t.Fatalf("failure %d refused", i)
				}
				c.advance(time.Second)
			}
			// The first key locked at its second failure, 1s after its
			// first: its lock ends a minute after that first.
			want := time.Minute - 2*capacity*time.Second
			addr, name := tc.fresh()
			if _, wait, ok := l.begin(addr, name, ""); ok || wait != want {
				t.Errorf("new key with the table full of locks: ok %v, wait %v; want refused for %v", ok, wait, want)
			}
			if n := l.len(); n != 2*capacity {
				t.Errorf("limiter holds %d keys, want 2×%d", n, capacity)
			}
			// The locks hold: every locked key is still refused.
			for i := 0; i < 2*capacity; i += 2 {
				if _, _, ok := l.strangerBegin(tc.failure(i)); ok {
					t.Errorf("locked key of failure %d allowed", i)
				}
			}
			c.advance(want)
			if _, _, ok := l.begin(addr, name, ""); !ok {
				t.Errorf("new key refused after the first lock ended")
			}
			if n := l.len(); n > 2*capacity {
				t.Errorf("limiter holds %d keys, want at most 2×%d", n, capacity)
			}
			if _, _, ok := l.strangerBegin(tc.failure(2)); ok {
				t.Errorf("the second locked key was dropped for the new one")
			}
		})
	}
}

// TestLimiterEvictionOrder checks which key makes room: never a locked
// one; of the others, the least recently failed of those with the
// fewest failures.
func TestLimiterEvictionOrder(t *testing.T) {
	t.Parallel()
	c := newFakeClock()
	l := newLimiter(3, time.Hour, 5, c.now)
	n := 0
	fail := func(name string) {
		t.Helper()
		n++
		if _, _, ok := l.begin(netip.AddrFrom4([4]byte{10, 0, 0, byte(n)}), name, ""); !ok {
			t.Fatalf("failure of %s refused", name)
		}
		c.advance(time.Second)
	}
	held := func(names ...string) {
		t.Helper()
		var got []string
		for _, name := range []string{"locked", "a", "b", "c", "d", "e", "f", "two"} {
			if _, ok := l.names.byKey[name]; ok {
				got = append(got, name)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(names) {
			t.Errorf("names held %v, want %v", got, names)
		}
	}
	for range 3 {
		fail("locked") // the least recent failure of all, and locked
	}
	fail("two")
	fail("a")
	fail("two") // two failures, the last more recent than a's
	fail("b")
	fail("c")
	held("locked", "a", "b", "c", "two")
	fail("d") // drops a: the least recent of those with one failure
	held("locked", "b", "c", "d", "two")
	fail("e")
	fail("f")
	held("locked", "d", "e", "f", "two")
}

// TestLimiterPartialCountSurvivesFlood: a name one failure short of its
// lock keeps its count through a flood of names failing once each, so
// the flood wins its attacker no guesses.
func TestLimiterPartialCountSurvivesFlood(t *testing.T) {
	t.Parallel()
	c := newFakeClock()
	l := newLimiter(10, 15*time.Minute, limiterKeys, c.now)
	for range 9 {
		l.begin(netip.MustParseAddr("192.0.2.1"), "alice", "")
	}
	flood(l, 2*limiterKeys)
	other := netip.MustParseAddr("198.51.100.7")
	if _, _, ok := l.begin(other, "alice", ""); !ok {
		t.Fatalf("the tenth attempt was refused")
	}
	if _, _, ok := l.begin(other, "alice", ""); ok {
		t.Errorf("an eleventh attempt was allowed: the flood dropped alice's failures")
	}
}

// TestLimiterInvariants runs random attempts, forgives and clock steps
// on small tables and checks after each that every key is filed once,
// where its count says, that no table passes its bound, and that no lock
// ended before its time but by a forgive of its own key.
func TestLimiterInvariants(t *testing.T) {
	t.Parallel()
	const max, capacity = 3, 6
	c := newFakeClock()
	l := newLimiter(max, time.Minute, capacity, c.now)
	rnd := rand.New(rand.NewPCG(1, 2))
	var inFlight []attempt
	locks := map[string]time.Time{} // "table/key": until, as last seen
	for step := range 20_000 {
		forgiven := attempt{}
		switch r := rnd.IntN(20); {
		case r < 15:
			addr := netip.AddrFrom4([4]byte{10, 0, 0, byte(rnd.IntN(12))})
			device := "" // a stranger, or one of 12 devices
			if rnd.IntN(2) == 0 {
				device = fmt.Sprintf("d%d", rnd.IntN(12))
			}
			if a, _, ok := l.begin(addr, fmt.Sprintf("u%d", rnd.IntN(12)), device); ok && rnd.IntN(3) == 0 {
				inFlight = append(inFlight, a)
			}
		case r < 18 && len(inFlight) > 0:
			i := rnd.IntN(len(inFlight))
			forgiven = inFlight[i]
			l.forgive(forgiven)
			inFlight = slices.Delete(inFlight, i, i+1)
		default:
			c.advance(time.Duration(rnd.IntN(10)) * time.Second)
		}
		now := c.now()
		for _, tc := range []struct {
			name     string
			t        *failureTable
			forgiven string
		}{{"addrs", &l.addrs, forgiven.addr}, {"names", &l.names, forgiven.name}, {"devices", &l.devices, forgiven.device}} {
			tb := tc.t
			if len(tb.byKey) > capacity {
				t.Fatalf("step %d: %s holds %d keys, want at most %d", step, tc.name, len(tb.byKey), capacity)
			}
			filed := len(tb.locked)
			for i, f := range tb.locked {
				if f.index != i || f.elem != nil || len(f.times) != max || !f.until.Equal(f.times[0].Add(time.Minute)) || tb.byKey[f.key] != f {
					t.Fatalf("step %d: %s: locked key %q misfiled", step, tc.name, f.key)
				}
			}
			for n := 1; n < max; n++ {
				filed += tb.levels[n].Len()
				for e := tb.levels[n].Front(); e != nil; e = e.Next() {
					f := e.Value.(*failures)
					if f.elem != e || f.level != n || len(f.times) != n || tb.byKey[f.key] != f {
						t.Fatalf("step %d: %s: key %q with %d failures misfiled in level %d", step, tc.name, f.key, len(f.times), n)
					}
				}
			}
			if filed != len(tb.byKey) {
				t.Fatalf("step %d: %s: %d keys filed, %d held", step, tc.name, filed, len(tb.byKey))
			}
			for k, until := range locks {
				table, key, _ := strings.Cut(k, "/")
				if table != tc.name || !until.After(now) || key == tc.forgiven {
					continue
				}
				if f, ok := tb.byKey[key]; !ok || f.elem != nil {
					t.Fatalf("step %d: %s: the lock of %q ended %v early", step, tc.name, key, until.Sub(now))
				}
			}
			for k := range locks {
				if table, _, _ := strings.Cut(k, "/"); table == tc.name {
					delete(locks, k)
				}
			}
			for _, f := range tb.locked {
				locks[tc.name+"/"+f.key] = f.until
			}
		}
	}
}

// TestLimiterDevices: a known device's attempts are counted for the
// device alone, pass a locked name and address, and once the device has
// max failures of its own are a stranger's (refused while the name is
// locked, counted against it while it is not); forgive takes an attempt
// back from the table it was counted in.
func TestLimiterDevices(t *testing.T) {
	t.Parallel()
	ip := netip.MustParseAddr("192.0.2.1")
	c := newFakeClock()
	l := newLimiter(3, 15*time.Minute, 100, c.now)
	for range 3 {
		l.begin(ip, "alice", "")
	}
	if _, _, ok := l.begin(ip, "alice", ""); ok {
		t.Fatal("a stranger's attempt passed a locked name")
	}
	a, _, ok := l.begin(ip, "alice", "dev1")
	if !ok || a.device != "dev1" || a.name != "" {
		t.Fatalf("the device's attempt: %+v, %v; want counted for the device", a, ok)
	}
	l.forgive(a) // it succeeded
	for i := range 3 {
		if _, _, ok := l.begin(ip, "alice", "dev1"); !ok {
			t.Fatalf("the device's failure %d refused", i+1)
		}
	}
	if _, _, ok := l.begin(ip, "alice", "dev1"); ok {
		t.Error("a locked device passed a locked name")
	}
	if _, _, ok := l.begin(ip, "alice", "dev2"); !ok {
		t.Error("another device was refused")
	}
	// With the name's lock over, a device's failures do not count for
	// the name; once the device is locked, its attempts are a stranger's
	// and do.
	c.advance(15*time.Minute + time.Second)
	for range 3 {
		l.begin(ip, "alice", "dev3") // dev3 locks; the name does not
	}
	other := netip.MustParseAddr("198.51.100.1")
	if _, _, ok := l.begin(other, "alice", ""); !ok { // the name's 1st
		t.Fatal("a device's failures counted against the name")
	}
	a, _, ok = l.begin(other, "alice", "dev3") // the name's 2nd
	if !ok || a.device != "" || a.name != "alice" {
		t.Fatalf("a locked device's attempt: %+v, %v; want counted for the name", a, ok)
	}
	if _, _, ok := l.begin(other, "alice", "dev3"); !ok { // the name's 3rd
		t.Fatal("the name locked before its 3rd failure")
	}
	if _, _, ok := l.begin(other, "alice", ""); ok {
		t.Error("the name was not locked by a locked device's failures")
	}
}

// strangerBegin is begin for an attempt without a device cookie.
func (l *limiter) strangerBegin(addr netip.Addr, name string) (attempt, time.Duration, bool) {
	return l.begin(addr, name, "")
}
