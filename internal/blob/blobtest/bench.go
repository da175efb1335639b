package blobtest

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/coffer-s3/coffer/internal/blob"
)

// benchSizes are the blob sizes every store is measured at.
var benchSizes = []struct {
	name string
	size int
}{
	{"4KiB", 4 << 10},
	{"1MiB", 1 << 20},
	{"64MiB", 64 << 20},
}

// Bench runs the shared benchmarks against stores made by newStore:
// Put/size=… and Get/size=… for 4 KiB, 1 MiB and 64 MiB blobs. Each
// sub-benchmark gets a fresh store. Put writes a fresh key each time, as
// the object service does, and deletes the key written a window earlier (at
// most 1024 keys and about 256 MiB live), so an op is one Put plus, in the
// steady state, one Delete: a store whose superseded blobs are collected.
// Get reads a whole blob into a writer that is not an io.ReaderFrom, which
// measures the store's own copy path. Use
// -benchtime=3x or -bench='size=(4KiB|1MiB)' to keep the 64 MiB cases short.
func Bench(b *testing.B, newStore func(b *testing.B) blob.Store) {
	for _, sz := range benchSizes {
		b.Run("Put/size="+sz.name, func(b *testing.B) { benchPut(b, newStore(b), sz.size) })
	}
	for _, sz := range benchSizes {
		b.Run("Get/size="+sz.name, func(b *testing.B) { benchGet(b, newStore(b), sz.size) })
	}
}

func benchPut(b *testing.B, s blob.Store, size int) {
	data := randomBytes(1, size)
	// Keep at most about 256 MiB (and 1024 blobs) stored.
	window := max(1, min(1024, (256<<20)/size))
	r := bytes.NewReader(data)
	ctx := b.Context()
	b.SetBytes(int64(size))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		r.Reset(data)
		if err := s.Put(ctx, benchKey(i), r, int64(size)); err != nil {
			b.Fatal(err)
		}
		if i >= window {
			if err := s.Delete(ctx, benchKey(i-window)); err != nil {
				b.Fatal(err)
			}
		}
		i++
	}
}

// benchKey returns the i'th key Put writes, spread over 256 directories
// as the object service spreads block keys.
func benchKey(i int) string {
	return fmt.Sprintf("bench/%02x/%d", i%256, i)
}

func benchGet(b *testing.B, s blob.Store, size int) {
	const key = "bench/get/x"
	put(b, s, key, randomBytes(2, size))
	ctx := b.Context()
	var w countingWriter
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		rc, err := s.Get(ctx, key, 0, -1)
		if err != nil {
			b.Fatal(err)
		}
		w = 0
		_, err = io.Copy(&w, rc)
		rc.Close()
		if err != nil {
			b.Fatal(err)
		}
		if int(w) != size {
			b.Fatalf("Get read %d bytes, want %d", w, size)
		}
	}
}

// countingWriter discards what is written to it and counts it. It is not
// an io.ReaderFrom, unlike io.Discard.
type countingWriter int64

func (w *countingWriter) Write(p []byte) (int, error) {
	*w += countingWriter(len(p))
	return len(p), nil
}
