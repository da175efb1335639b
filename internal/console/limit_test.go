package console

import (
	"fmt"
	"net/netip"
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
		if _, _, ok := l.begin(ip, "alice"); !ok {
			t.Fatalf("attempt %d refused, want 10 allowed", i+1)
		}
		c.advance(time.Minute)
	}
	// 10 failures in the last 15 minutes: the 11th is refused until the
	// first leaves the window (at 15m; it is 10m now).
	_, wait, ok := l.begin(ip, "alice")
	if ok || wait != 5*time.Minute {
		t.Fatalf("11th attempt: ok %v, wait %v; want refused for 5m", ok, wait)
	}
	// Per address: another name from the same address is refused too…
	if _, _, ok := l.begin(ip, "bob"); ok {
		t.Errorf("another name from a locked address was allowed")
	}
	// …and per name: the same name from another address.
	if _, _, ok := l.begin(other, "alice"); ok {
		t.Errorf("a locked name from another address was allowed")
	}
	if _, _, ok := l.begin(other, "bob"); !ok {
		t.Errorf("another name from another address was refused")
	}
	c.advance(5 * time.Minute)
	if _, _, ok := l.begin(ip, "alice"); !ok {
		t.Errorf("refused after the oldest failure left the window")
	}
	if _, _, ok := l.begin(ip, "alice"); ok {
		t.Errorf("allowed two attempts when one failure left the window")
	}
}

func TestLimiterForgive(t *testing.T) {
	t.Parallel()
	ip := netip.MustParseAddr("192.0.2.1")
	c := newFakeClock()
	l := newLimiter(3, time.Minute, 100, c.now)
	for range 10 {
		a, _, ok := l.begin(ip, "alice")
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
		if _, _, ok := l.begin(ip, "alice"); !ok {
			t.Fatal("attempt refused below the limit")
		}
	}
	if _, _, ok := l.begin(ip, "alice"); ok {
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
		l.begin(addr, fmt.Sprintf("user%d-%0300d", i, 0)) // long names are cut
	}
	if n := l.len(); n > 100 {
		t.Errorf("limiter holds %d keys, want at most 2×50", n)
	}
	for _, f := range l.names.byKey {
		if k := f.Value.(*failures).key; len(k) > maxNameKey {
			t.Fatalf("a name key of %d bytes is kept", len(k))
		}
	}
	// Keys whose failures left the window are dropped as new ones come.
	c.advance(16 * time.Minute)
	l.begin(netip.MustParseAddr("10.9.9.9"), "x")
	if n := l.len(); n != 2 {
		t.Errorf("after the window the limiter holds %d keys, want 2", n)
	}
}
