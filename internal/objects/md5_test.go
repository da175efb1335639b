package objects

import (
	"crypto/md5"
	"crypto/rand"
	"fmt"
	"hash"
	"sync"
	"testing"

	md5simd "github.com/minio/md5-simd"

	"github.com/coffer-s3/coffer/internal/bytesize"
)

// TestMD5Hashers checks that both kinds of hasher give crypto/md5's sums,
// for sizes around the threshold and writes of any length, concurrently.
func TestMD5Hashers(t *testing.T) {
	t.Parallel()
	var m md5Hashers
	defer m.close()
	data := make([]byte, 3*simdMD5Min+77)
	rand.Read(data)
	var wg sync.WaitGroup
	for i, size := range []int{0, 1, 63, 64, 65, 100 << 10, simdMD5Min - 1, simdMD5Min, simdMD5Min + 1, 2*simdMD5Min + 5, len(data)} {
		wg.Go(func() {
			want := md5.Sum(data[:size])
			h := m.get(int64(size))
			defer m.release(h)
			for p := data[:size]; len(p) > 0; {
				n := min(len(p), 1+(i*7919)%(96<<10)) // odd write lengths
				h.Write(p[:n])
				p = p[n:]
			}
			if got := h.Sum(nil); string(got) != string(want[:]) {
				t.Errorf("size %d: sum %x, want %x", size, got, want)
			}
		})
	}
	wg.Wait()
	if s := m.get(SizeUnknown); s == nil {
		t.Fatal("no hasher for an unknown size")
	}
}

// BenchmarkMD5 hashes streams concurrent bodies of size bytes, in writes of
// 64 KiB as bodies arrive, with crypto/md5 and with a shared md5-simd
// server: MB/s is the throughput of all of them together, the figure that
// decides simdMD5Min.
func BenchmarkMD5(b *testing.B) {
	data := make([]byte, 16<<20)
	rand.Read(data)
	for _, size := range []int{100 << 10, 1 << 20, 10 << 20} {
		for _, streams := range []int{1, 8, 16} {
			for _, impl := range []string{"crypto", "simd"} {
				b.Run(fmt.Sprintf("size=%s/streams=%d/impl=%s", bytesize.Format(int64(size)), streams, impl), func(b *testing.B) {
					srv := md5simd.NewServer()
					defer srv.Close()
					newHash := func() hash.Hash { return md5.New() }
					if impl == "simd" {
						newHash = func() hash.Hash { return srv.NewHash() }
					}
					b.SetBytes(int64(size * streams))
					b.ReportAllocs()
					for b.Loop() {
						var wg sync.WaitGroup
						for range streams {
							wg.Go(func() {
								h := newHash()
								for p := data[:size]; len(p) > 0; {
									n := min(len(p), 64<<10)
									h.Write(p[:n])
									p = p[n:]
								}
								h.Sum(nil)
								if c, ok := h.(md5simd.Hasher); ok {
									c.Close()
								}
							})
						}
						wg.Wait()
					}
				})
			}
		}
	}
}
