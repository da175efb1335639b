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
// million blocks sweeps in 15 MiB, where a set of the keys themselves
// took about 100 bytes a key.
type refSet struct {
	bits []uint64
	m    uint64 // len(bits) * 64
	seed maphash.Seed
	n    int // keys added
}

// Bits per key and hashes per key: a false-positive rate of about 0.3 %
// at the expected count, rising slowly past it.
const (
	refSetBits   = 12
	refSetHashes = 8
)

// newRefSet returns a set sized for about n keys (at least refSetMinKeys).
func newRefSet(n int) *refSet {
	n = max(n, refSetMinKeys)
	words := (uint64(n)*refSetBits + 63) / 64
	return &refSet{bits: make([]uint64, words), m: words * 64, seed: maphash.MakeSeed()}
}

// refSetMinKeys is the least a set is sized for: 96 KiB.
const refSetMinKeys = 1 << 16

func (r *refSet) add(k string) {
	h1, h2 := r.hash(k)
	for i := range uint64(refSetHashes) {
		b := (h1 + i*h2) % r.m
		r.bits[b/64] |= 1 << (b % 64)
	}
	r.n++
}

// mayHave reports whether k may have been added; false is certain.
func (r *refSet) mayHave(k string) bool {
	h1, h2 := r.hash(k)
	for i := range uint64(refSetHashes) {
		b := (h1 + i*h2) % r.m
		if r.bits[b/64]&(1<<(b%64)) == 0 {
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
