package objects

import (
	"fmt"
	"testing"
	"time"
)

// TestRefSet: a key added is always found (the sweep must never take a
// referenced blob for an orphan); keys never added are found rarely, near
// the designed rate (0.3 %) at the expected count, and under 10 % at
// twice it.
func TestRefSet(t *testing.T) {
	const n = 200_000
	for _, tc := range []struct {
		name    string
		sizeFor int
		maxFP   float64
	}{
		{"sized", n, 0.006},
		{"twice the keys it was sized for", n / 2, 0.10}, // about 9 %: orphans wait a pass more
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRefSet(tc.sizeFor)
			for i := range n {
				r.add(fmt.Sprintf("b/%02x/ref%d", i%256, i))
			}
			for i := range n {
				if k := fmt.Sprintf("b/%02x/ref%d", i%256, i); !r.mayHave(k) {
					t.Fatalf("%s was added but is not found", k)
				}
			}
			fp := 0
			for i := range n {
				if r.mayHave(fmt.Sprintf("b/%02x/orphan%d", i%256, i)) {
					fp++
				}
			}
			if rate := float64(fp) / n; rate > tc.maxFP {
				t.Errorf("false positives %.4f, want at most %.4f", rate, tc.maxFP)
			}
			if r.n != n {
				t.Errorf("n = %d, want %d", r.n, n)
			}
		})
	}
}

// BenchmarkSweepSet compares what the orphan sweep holds per million
// blob keys: the set of candidate keys it kept before (a map), and the
// filter of referenced keys it keeps now (B/op is the memory held).
func BenchmarkSweepSet(b *testing.B) {
	const n = 1_000_000
	keys := make([]string, n)
	now := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	for i := range keys {
		keys[i] = newBlobKey(now)
	}
	b.Run("map", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m := make(map[string]struct{})
			for _, k := range keys {
				m[string([]byte(k))] = struct{}{} // a listed key is a new string
			}
		}
	})
	b.Run("refSet", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r := newRefSet(n)
			for _, k := range keys {
				r.add(k)
			}
		}
	})
}
