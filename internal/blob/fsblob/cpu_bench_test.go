//go:build unix

package fsblob

import (
	"bytes"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/coffer-s3/coffer/internal/bytesize"
)

// BenchmarkPutLarge measures synced Puts of large blobs by several writers
// at once, as large PUTs arrive, and reports the process's CPU time per
// byte (user + system, from getrusage) beside the wall time: on a disk
// whose speed varies, CPU per byte is the figure that compares builds.
// Every blob is deleted after its Put, so the disk never fills.
func BenchmarkPutLarge(b *testing.B) {
	for _, size := range []int{1 << 20, 8 << 20} {
		b.Run("size="+bytesize.Format(int64(size)), func(b *testing.B) {
			s := open(b, Config{Sync: true})
			data := make([]byte, size)
			for i := range data {
				data[i] = byte(i * 131)
			}
			var seq int64
			mu := make(chan struct{}, 1)
			mu <- struct{}{}
			b.SetParallelism(4)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			cpu0 := cpuTime()
			b.RunParallel(func(pb *testing.PB) {
				r := bytes.NewReader(data)
				for pb.Next() {
					<-mu
					seq++
					key := "l/" + strconv.FormatInt(seq, 10)
					mu <- struct{}{}
					r.Reset(data)
					if err := s.Put(b.Context(), key, r, int64(size)); err != nil {
						b.Error(err)
						return
					}
					if err := s.Delete(b.Context(), key); err != nil {
						b.Error(err)
						return
					}
				}
			})
			cpu := cpuTime() - cpu0
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/float64(size)*(1<<20), "cpu-ns/MiB")
		})
	}
}

// cpuTime returns the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
