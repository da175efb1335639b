package objects

import (
	"fmt"
	"testing"
	"time"
)

// TestRefSet: a key added is always found (the sweep must never take a
// referenced blob for an orphan); keys never added are found rarely: near
// a full filter's rate (0.3 %) when the set was sized for the keys, and
// under 2 % when it had to grow from the least size to a million keys (a
// first pass after a start, with nothing to size it from).
func TestRefSet(t *testing.T) {
	for _, tc := range []struct {
		name       string
		n, sizeFor int
		maxFP      float64
		filters    int
	}{
		{"sized", 200_000, 200_000, 0.006, 1},
		{"twice the keys it was sized for", 200_000, 100_000, 0.006, 2},
		{"a million keys from the least size", 1_000_000, 0, 0.02, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRefSet(tc.sizeFor)
			for i := range tc.n {
				r.add(fmt.Sprintf("b/%02x/ref%d", i%256, i))
			}
			for i := range tc.n {
				if k := fmt.Sprintf("b/%02x/ref%d", i%256, i); !r.mayHave(k) {
					t.Fatalf("%s was added but is not found", k)
				}
			}
			const probes = 200_000
			fp := 0
			for i := range probes {
				if r.mayHave(fmt.Sprintf("b/%02x/orphan%d", i%256, i)) {
					fp++
				}
			}
			if rate := float64(fp) / probes; rate > tc.maxFP {
				t.Errorf("false positives %.4f, want at most %.4f", rate, tc.maxFP)
			}
			if r.n != tc.n || len(r.filters) != tc.filters {
				t.Errorf("n = %d in %d filters, want %d in %d", r.n, len(r.filters), tc.n, tc.filters)
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
