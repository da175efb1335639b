package objects

import (
	"crypto/md5"
	"hash"
	"runtime"
	"sync"
	"sync/atomic"

	md5simd "github.com/minio/md5-simd"
)

// simdMD5Min is the least body size whose ETag MD5 is computed by the
// multi-buffer server. Below it crypto/md5 is cheaper: a body of a few
// blocks does not pay for the hand-off to the server goroutine, and small
// bodies rarely find other uploads to share the SIMD lanes with
// (BenchmarkMD5 in md5_test.go).
const simdMD5Min = 1 << 20

// md5Hashers hands out the MD5 hashers of the bodies being written (the
// ETag). Large bodies share md5-simd servers: each hashes up to 16 streams
// at once in the lanes of AVX-512 registers (8 per core with AVX2) on a
// goroutine of its own, so concurrent uploads cost a fraction of
// crypto/md5's CPU per byte, and the hashing runs beside the request's
// reads and writes instead of between them. The servers start with the
// first large body; without AVX2 md5-simd falls back to crypto/md5.
type md5Hashers struct {
	once    sync.Once
	servers []md5simd.Server // set once, by once
	next    atomic.Uint32    // round-robin over servers
}

// md5Servers is how many multi-buffer servers a process of procs
// processors runs: one per eight, since one server's goroutine keeps up
// with about that many uploads' worth of network and disk.
func md5Servers(procs int) int { return max(1, (procs+7)/8) }

// get returns a hasher for a body of size bytes (SizeUnknown if not
// known). The caller must release it.
func (m *md5Hashers) get(size int64) hash.Hash {
	if size < simdMD5Min {
		return md5.New()
	}
	m.once.Do(func() {
		for range md5Servers(runtime.GOMAXPROCS(0)) {
			m.servers = append(m.servers, md5simd.NewServer())
		}
	})
	if len(m.servers) == 0 {
		return md5.New()
	}
	srv := m.servers[int(m.next.Add(1))%len(m.servers)]
	return srv.NewHash()
}

// release returns h, which get returned, once its sum has been taken.
func (m *md5Hashers) release(h hash.Hash) {
	if c, ok := h.(md5simd.Hasher); ok {
		c.Close()
	}
}

// close stops the servers, once no write is in progress; later bodies
// are hashed by crypto/md5.
func (m *md5Hashers) close() {
	m.once.Do(func() {}) // no server starts after this
	for _, s := range m.servers {
		s.Close()
	}
}
