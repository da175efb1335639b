package sigv4

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding"
	"hash"
	"strings"
	"sync"
)

// signingKey is a SigV4 signing key prepared for HMAC-SHA256: the SHA-256
// states after absorbing key⊕ipad and key⊕opad. Restoring a state is cheaper
// than hashing the padded key again, so an HMAC over a short string to sign
// costs about three SHA-256 blocks. A signingKey is immutable and may be
// shared between goroutines.
type signingKey struct {
	inner, outer []byte // marshaled sha256 states
}

// newSigningKey prepares key (the 32-byte kSigning) for hmacer.sum.
func newSigningKey(key [32]byte) *signingKey {
	var pad [sha256.BlockSize]byte
	state := func(x byte) []byte {
		for i := range pad {
			pad[i] = x
			if i < len(key) {
				pad[i] ^= key[i]
			}
		}
		h := sha256.New()
		h.Write(pad[:])
		b, err := h.(encoding.BinaryMarshaler).MarshalBinary()
		if err != nil {
			panic("sigv4: sha256 state cannot be marshaled: " + err.Error())
		}
		return b
	}
	return &signingKey{inner: state(0x36), outer: state(0x5c)}
}

// deriveKey derives kSigning from a secret, as
// https://docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html
// describes: four chained HMACs over date, region, service and aws4_request.
func deriveKey(secret, date, region, service string) [32]byte {
	k := []byte("AWS4" + secret)
	for _, s := range [...]string{date, region, service, scopeTerminator} {
		m := hmac.New(sha256.New, k)
		m.Write([]byte(s))
		k = m.Sum(nil)
	}
	return [32]byte(k)
}

// stateHash is a SHA-256 whose state can be restored.
type stateHash interface {
	hash.Hash
	encoding.BinaryUnmarshaler
}

// hmacer computes HMAC-SHA256 with prepared keys, without allocating. It is
// not safe for concurrent use.
type hmacer struct {
	in, out stateHash
	buf     [sha256.Size]byte
}

func newHMACer() hmacer {
	return hmacer{in: sha256.New().(stateHash), out: sha256.New().(stateHash)}
}

// sum returns HMAC-SHA256(k, msg).
func (m *hmacer) sum(k *signingKey, msg []byte) [32]byte {
	m.restore(m.in, k.inner)
	m.in.Write(msg)
	m.in.Sum(m.buf[:0])
	m.restore(m.out, k.outer)
	m.out.Write(m.buf[:])
	m.out.Sum(m.buf[:0])
	return m.buf
}

func (m *hmacer) restore(h stateHash, state []byte) {
	if err := h.UnmarshalBinary(state); err != nil {
		panic("sigv4: sha256 state cannot be restored: " + err.Error())
	}
}

// fingerprint identifies a secret in the cache key without keeping it.
func fingerprint(secret []byte) [32]byte {
	return sha256.Sum256(secret)
}

// cacheKey identifies a signing key. The secret's fingerprint is part of it,
// so a rotated secret never meets the key derived from its predecessor.
type cacheKey struct {
	accessKeyID, date, region, service string
	secret                             [32]byte
}

// keyCache is a bounded map of signing keys, safe for concurrent use. When
// full it drops an arbitrary half of its entries: signing keys change daily
// per access key, so recency buys little over simplicity.
type keyCache struct {
	max     int
	mu      sync.RWMutex // guards entries
	entries map[cacheKey]*signingKey
}

// newKeyCache returns a cache of at most size entries; size < 0 disables it.
func newKeyCache(size int) *keyCache {
	return &keyCache{max: size, entries: make(map[cacheKey]*signingKey)}
}

func (c *keyCache) get(k cacheKey) *signingKey {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.entries[k]
}

func (c *keyCache) put(k cacheKey, sk *signingKey) {
	if c.max <= 0 {
		return
	}
	// Keys point into request headers; do not keep those alive.
	k.accessKeyID = strings.Clone(k.accessKeyID)
	k.date = strings.Clone(k.date)
	k.region = strings.Clone(k.region)
	k.service = strings.Clone(k.service)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= c.max {
		n := len(c.entries) / 2
		for old := range c.entries {
			if n == 0 {
				break
			}
			delete(c.entries, old)
			n--
		}
		if len(c.entries) >= c.max { // max == 1
			clear(c.entries)
		}
	}
	c.entries[k] = sk
}

// len returns the number of cached keys.
func (c *keyCache) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.entries)
}

// scratch is the per-call working memory of a Verifier, pooled.
type scratch struct {
	mac        hmacer
	query      canonQuery
	canonQuery []byte
	uri        []byte
	creq       []byte
	sts        []byte
	tmp        []byte
}

func newScratch() *scratch {
	return &scratch{
		mac:  newHMACer(),
		creq: make([]byte, 0, 1024),
		sts:  make([]byte, 0, 256),
		uri:  make([]byte, 0, 256),
	}
}
