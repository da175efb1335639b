package objects

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"testing"
)

var benchSizes = []struct {
	name string
	size int
}{{"1KiB", 1 << 10}, {"100KiB", 100 << 10}, {"8MiB", 8 << 20}}

// benchEnv is a Service with the default configuration over memblob and
// meta on a temporary directory with Sync on, as in production.
func benchEnv(b *testing.B) *env {
	b.Helper()
	return newEnvSync(b, Config{}, true)
}

func BenchmarkPutObject(b *testing.B) {
	ctx := context.Background()
	for _, sz := range benchSizes {
		b.Run("size="+sz.name, func(b *testing.B) {
			e := benchEnv(b)
			data := randBytes(sz.size, 1)
			r := bytes.NewReader(data)
			b.ReportAllocs()
			b.SetBytes(int64(sz.size))
			i := 0
			for b.Loop() {
				r.Reset(data)
				if _, err := e.s.PutObject(ctx, "bkt", "k", PutInput{Size: int64(sz.size)}, r); err != nil {
					b.Fatal(err)
				}
				if i++; i%32 == 0 && sz.size > DefaultInlineThreshold {
					b.StopTimer() // keep memblob from filling with overwritten blocks
					if _, err := e.s.GC(ctx, 0); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
			}
		})
	}
}

// BenchmarkPutObjectParallel shows group commit: concurrent small PUTs
// share the metadata WAL's fsyncs.
func BenchmarkPutObjectParallel(b *testing.B) {
	ctx := context.Background()
	b.Run("size=1KiB", func(b *testing.B) {
		e := benchEnv(b)
		data := randBytes(1<<10, 1)
		var n atomic.Int64
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		b.SetParallelism(8)
		b.RunParallel(func(pb *testing.PB) {
			r := bytes.NewReader(data)
			for pb.Next() {
				r.Reset(data)
				key := fmt.Sprint("k", n.Add(1))
				if _, err := e.s.PutObject(ctx, "bkt", key, PutInput{Size: int64(len(data))}, r); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

func BenchmarkGetObject(b *testing.B) {
	ctx := context.Background()
	for _, sz := range benchSizes {
		b.Run("size="+sz.name, func(b *testing.B) {
			e := benchEnv(b)
			e.put(b, "k", randBytes(sz.size, 1))
			b.ReportAllocs()
			b.SetBytes(int64(sz.size))
			for b.Loop() {
				o, err := e.s.GetObject(ctx, "bkt", "k", GetOptions{})
				if err != nil {
					b.Fatal(err)
				}
				n, err := io.Copy(io.Discard, o.Body)
				if err != nil || n != int64(sz.size) {
					b.Fatalf("read %d bytes: %v", n, err)
				}
				o.Body.Close()
			}
		})
	}
}

// BenchmarkHeadObject reads an object's description, as HEAD and the
// read-modify-write of an overwrite or delete do: for an inline object it
// must not cost more than for a block object of the same size.
func BenchmarkHeadObject(b *testing.B) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		inline int64
	}{{"inline", 128 << 10}, {"blocks", 1 << 10}} {
		b.Run("size=100KiB/data="+tc.name, func(b *testing.B) {
			e := newEnvSync(b, Config{InlineThreshold: tc.inline}, true)
			e.put(b, "k", randBytes(100<<10, 1))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.s.HeadObject(ctx, "bkt", "k", GetOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDeleteObject deletes a 100 KiB inline object and writes it
// again; the PUT is not timed. Sync is off, so that the CPU cost of the
// delete shows rather than its fsync.
func BenchmarkDeleteObject(b *testing.B) {
	ctx := context.Background()
	e := newEnvSync(b, Config{InlineThreshold: 128 << 10}, false)
	data := randBytes(100<<10, 1)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		e.put(b, "k", data)
		b.StartTimer()
		if _, err := e.s.DeleteObject(ctx, "bkt", ObjectRef{Key: "k"}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkListObjects100k lists a bucket of 100,000 keys (100 prefixes of
// 1,000) in pages of 1,000, without and with a delimiter; acl=true lists
// with the ACLs a listing that reports owners needs (the objects have
// none: root's writes).
func BenchmarkListObjects100k(b *testing.B) {
	ctx := context.Background()
	e := newEnv(b)
	data := []byte("x")
	for d := range 100 {
		for f := range 1000 {
			if _, err := e.s.PutObject(ctx, "bkt", fmt.Sprintf("dir%03d/file%05d", d, f), PutInput{Size: 1}, bytes.NewReader(data)); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		name, delim string
		owners      bool
		want        int
	}{
		{"delimiter=none", "", false, 100000}, {"delimiter=slash", "/", false, 100},
		{"delimiter=none/owners=true", "", true, 100000},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				n := 0
				in := ListInput{Delimiter: tc.delim, MaxKeys: 1000, Owners: tc.owners}
				for {
					r, err := e.s.ListObjects(ctx, "bkt", in)
					if err != nil {
						b.Fatal(err)
					}
					n += len(r.Objects) + len(r.CommonPrefixes)
					if !r.IsTruncated {
						break
					}
					in.StartAfter = r.NextMarker
				}
				if n != tc.want {
					b.Fatalf("listed %d, want %d", n, tc.want)
				}
			}
		})
	}
}
