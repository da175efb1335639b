package objects

import (
	"hash/maphash"
	"math"
)

// refSet is a Bloom filter of the blob keys the metadata references, for
// the orphan sweep: it answers "surely not referenced" or "maybe". The
// sweep deletes only the first, so a false positive keeps an orphan for a
// pass (each pass hashes with a new seed), never deletes a referenced
// blob. It takes refSetBits bits a key, about 1.5 bytes: a store of ten
// million blocks sweeps in 15 to 30 MiB, where a set of the keys
// themselves took about 100 bytes a key.
//
// How many keys it will hold is known only at the end of the scan, so it
// grows: it starts with a filter sized for the count it was given, and
// when that is full adds one twice as large, and so on (a scalable Bloom
// filter); a key may be in any of them. With n keys in f filters the
// false-positive rate is at most f times a full filter's (0.3 %); a pass
// sized from the last pass's count has one filter, a first pass on a
// store of millions of blocks a handful.
type refSet struct {
	filters []bloom
	seed    maphash.Seed
	n       int // keys added
}

// bloom is one filter of a refSet, sized for cap keys.
type bloom struct {
	bits []uint64
	m    uint64 // len(bits) * 64
	cap  int
	n    int
}

// Bits per key and hashes per key: a false-positive rate of about 0.3 %
// for a full filter.
const (
	refSetBits   = 12
	refSetHashes = 8
)

// refSetMinKeys is the least a filter is sized for: 96 KiB.
const refSetMinKeys = 1 << 16

// newRefSet returns a set whose first filter is sized for about n keys (at
// least refSetMinKeys).
func newRefSet(n int) *refSet {
	r := &refSet{seed: maphash.MakeSeed()}
	r.grow(max(n, refSetMinKeys))
	return r
}

// grow adds a filter sized for n keys.
func (r *refSet) grow(n int) {
	words := (uint64(n)*refSetBits + 63) / 64
	r.filters = append(r.filters, bloom{bits: make([]uint64, words), m: words * 64, cap: n})
}

func (r *refSet) add(k string) {
	f := &r.filters[len(r.filters)-1]
	if f.n >= f.cap {
		r.grow(2 * f.cap)
		f = &r.filters[len(r.filters)-1]
	}
	h1, h2 := r.hash(k)
	for i := range uint64(refSetHashes) {
		b := (h1 + i*h2) % f.m
		f.bits[b/64] |= 1 << (b % 64)
	}
	f.n++
	r.n++
}

// mayHave reports whether k may have been added; false is certain.
func (r *refSet) mayHave(k string) bool {
	h1, h2 := r.hash(k)
	for fi := range r.filters {
		if r.filters[fi].mayHave(h1, h2) {
			return true
		}
	}
	return false
}

func (f *bloom) mayHave(h1, h2 uint64) bool {
	for i := range uint64(refSetHashes) {
		b := (h1 + i*h2) % f.m
		if f.bits[b/64]&(1<<(b%64)) == 0 {
			return false
		}
	}
	return true
}

// hash returns the two hashes whose combinations index the bits
// (Kirsch and Mitzenmacher's double hashing).
func (r *refSet) hash(k string) (uint64, uint64) {
	h := maphash.String(r.seed, k)
	return h & math.MaxUint32, h>>32 | 1
}
