// Package blobtest is the conformance suite for blob.Store implementations,
// after pebble's vfs/vfstest: every implementation runs [Run] from its own
// tests, and shares benchmarks through [Bench], so all stores are held to
// the same contract and measured the same way.
package blobtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"

	"github.com/coffer-s3/coffer/internal/blob"
)

// Run runs the conformance suite against stores made by newStore. Every
// subtest calls newStore for a fresh, empty store; newStore should register
// its own cleanup with t.Cleanup.
func Run(t *testing.T, newStore func(t *testing.T) blob.Store) {
	for _, tc := range []struct {
		name string
		test func(t *testing.T, s blob.Store)
	}{
		{"RoundTrip", testRoundTrip},
		{"GetRange", testGetRange},
		{"GetNotFound", testGetNotFound},
		{"PutWrongSize", testPutWrongSize},
		{"PutSizeUnknown", testPutSizeUnknown},
		{"PutReaderError", testPutReaderError},
		{"PutCanceled", testPutCanceled},
		{"Overwrite", testOverwrite},
		{"Delete", testDelete},
		{"List", testList},
		{"ListStops", testListStops},
		{"ListWhileDeleting", testListWhileDeleting},
		{"ConcurrentSameKey", testConcurrentSameKey},
		{"ConcurrentDistinctKeys", testConcurrentDistinctKeys},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.test(t, newStore(t))
		})
	}
}

// randomBytes returns n bytes from a generator seeded with seed.
func randomBytes(seed uint64, n int) []byte {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	p := make([]byte, n)
	for i := 0; i < n; i += 8 {
		v := rng.Uint64()
		for j := i; j < min(i+8, n); j++ {
			p[j] = byte(v)
			v >>= 8
		}
	}
	return p
}

// put stores data under key, failing the test on error.
func put(t testing.TB, s blob.Store, key string, data []byte) {
	t.Helper()
	if err := s.Put(t.Context(), key, bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatalf("Put(%q, %d bytes) = %v", key, len(data), err)
	}
}

// get returns n bytes of key at off, failing the test on error.
func get(t testing.TB, s blob.Store, key string, off, n int64) []byte {
	t.Helper()
	rc, err := s.Get(t.Context(), key, off, n)
	if err != nil {
		t.Fatalf("Get(%q, %d, %d) = %v", key, off, n, err)
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read Get(%q, %d, %d): %v", key, off, n, err)
	}
	return got
}

// wantNotFound checks that key is absent, both to Get and to List.
func wantNotFound(t testing.TB, s blob.Store, key string) {
	t.Helper()
	rc, err := s.Get(t.Context(), key, 0, -1)
	if err == nil {
		rc.Close()
	}
	if !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Get(%q) error = %v, want ErrNotFound", key, err)
	}
	if keys := listKeys(t, s, ""); slices.Contains(keys, key) {
		t.Errorf("List shows %q, which should be absent; keys: %q", key, keys)
	}
}

// listKeys returns the sorted keys with prefix.
func listKeys(t testing.TB, s blob.Store, prefix string) []string {
	t.Helper()
	var keys []string
	err := s.List(t.Context(), prefix, func(key string) error {
		keys = append(keys, key)
		return nil
	})
	if err != nil {
		t.Fatalf("List(%q) = %v", prefix, err)
	}
	slices.Sort(keys)
	return keys
}

func testRoundTrip(t *testing.T, s blob.Store) {
	readers := []struct {
		name string
		wrap func(io.Reader) io.Reader
		max  int // largest size to use it for; byte-at-a-time is slow
	}{
		{"plain", func(r io.Reader) io.Reader { return r }, 1 << 30},
		{"half", iotest.HalfReader, 1 << 30},
		{"data-and-eof", iotest.DataErrReader, 1 << 30},
		{"one-byte", iotest.OneByteReader, 4096},
	}
	for _, size := range []int{0, 1, 4 << 10, 1<<20 + 3} {
		data := randomBytes(uint64(size), size)
		for _, rd := range readers {
			if size > rd.max {
				continue
			}
			t.Run(fmt.Sprintf("size=%d/%s", size, rd.name), func(t *testing.T) {
				key := fmt.Sprintf("rt/%d/%s", size, rd.name)
				if err := s.Put(t.Context(), key, rd.wrap(bytes.NewReader(data)), int64(size)); err != nil {
					t.Fatalf("Put(%q, %d) = %v", key, size, err)
				}
				if got := get(t, s, key, 0, -1); !bytes.Equal(got, data) {
					t.Fatalf("Get(%q) returned %d bytes that differ from the %d put", key, len(got), size)
				}
				if got := get(t, s, key, 0, int64(size)); !bytes.Equal(got, data) {
					t.Fatalf("Get(%q, 0, %d) returned %d bytes that differ from those put", key, size, len(got))
				}
			})
		}
	}
}

func testGetRange(t *testing.T, s blob.Store) {
	const size = 1000
	data := randomBytes(7, size)
	put(t, s, "range/x", data)
	for _, tc := range []struct {
		name   string
		off, n int64
		want   []byte
	}{
		{"whole", 0, -1, data},
		{"whole exact", 0, size, data},
		{"middle", 100, 200, data[100:300]},
		{"prefix", 0, 10, data[:10]},
		{"to end", 100, -1, data[100:]},
		{"last byte", size - 1, -1, data[size-1:]},
		{"zero length", 500, 0, []byte{}},
		{"past end", 990, 100, data[990:]},
		{"huge length", 100, math.MaxInt64, data[100:]},
		{"offset at end", size, -1, []byte{}},
		{"offset at end with length", size, 10, []byte{}},
		{"offset past end", size + 10, -1, []byte{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := get(t, s, "range/x", tc.off, tc.n)
			if !bytes.Equal(got, tc.want) {
				t.Errorf("Get(off=%d, n=%d) = %d bytes, want %d bytes (contents differ: %v)",
					tc.off, tc.n, len(got), len(tc.want), len(got) == len(tc.want))
			}
		})
	}
}

func testGetNotFound(t *testing.T, s blob.Store) {
	put(t, s, "nf/present", []byte("x"))
	for _, key := range []string{"nf/absent", "absent", "nf/present/below", "nf"} {
		rc, err := s.Get(t.Context(), key, 0, -1)
		if err == nil {
			rc.Close()
		}
		if !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("Get(%q) error = %v, want ErrNotFound", key, err)
		}
	}
}

func testPutWrongSize(t *testing.T, s blob.Store) {
	data := randomBytes(3, 10<<10)
	for _, tc := range []struct {
		name string
		data []byte
		size int64
	}{
		{"short", data, int64(len(data)) + 1},
		{"short by much", data[:10], 1 << 20},
		{"empty for one", nil, 1},
		{"long", data, int64(len(data)) - 1},
		{"one for empty", data[:1], 0},
		{"long by much", data, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "size/" + strings.ReplaceAll(tc.name, " ", "-")
			err := s.Put(t.Context(), key, bytes.NewReader(tc.data), tc.size)
			if !errors.Is(err, blob.ErrSize) {
				t.Fatalf("Put(%d bytes, size %d) = %v, want ErrSize", len(tc.data), tc.size, err)
			}
			wantNotFound(t, s, key)
		})
	}
}

// testPutSizeUnknown stores blobs whose length the caller does not know,
// read in small pieces, and checks that a failing reader stores nothing.
func testPutSizeUnknown(t *testing.T, s blob.Store) {
	for _, size := range []int{0, 1, 4 << 10, 1<<20 + 7} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			key := fmt.Sprintf("unknown/%d", size)
			data := randomBytes(uint64(size), size)
			if err := s.Put(t.Context(), key, iotest.HalfReader(bytes.NewReader(data)), blob.SizeUnknown); err != nil {
				t.Fatalf("Put(%d bytes, SizeUnknown) = %v", size, err)
			}
			if got := get(t, s, key, 0, -1); !bytes.Equal(got, data) {
				t.Fatalf("Get after Put(%d bytes, SizeUnknown): %d bytes, not the data put", size, len(got))
			}
		})
	}
	t.Run("reader error", func(t *testing.T) {
		errBoom := errors.New("boom")
		err := s.Put(t.Context(), "unknown/err", &errReader{n: 100 << 10, err: errBoom}, blob.SizeUnknown)
		if !errors.Is(err, errBoom) {
			t.Fatalf("Put(SizeUnknown) with failing reader = %v, want error wrapping %v", err, errBoom)
		}
		wantNotFound(t, s, "unknown/err")
	})
}

// errReader yields n bytes and then err.
type errReader struct {
	n   int
	err error
}

func (r *errReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, r.err
	}
	m := min(len(p), r.n)
	clear(p[:m])
	r.n -= m
	return m, nil
}

func testPutReaderError(t *testing.T, s blob.Store) {
	errBoom := errors.New("boom")
	for _, tc := range []struct {
		name string
		n    int   // bytes before the error
		size int64 // size passed to Put
	}{
		{"at start", 0, 4096},
		{"midway", 100 << 10, 1 << 20},
		{"after all bytes", 4096, 4096},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := fmt.Sprintf("rerr/%d-%d", tc.n, tc.size)
			err := s.Put(t.Context(), key, &errReader{n: tc.n, err: errBoom}, tc.size)
			if !errors.Is(err, errBoom) {
				t.Fatalf("Put with failing reader = %v, want error wrapping %v", err, errBoom)
			}
			wantNotFound(t, s, key)
		})
	}
}

func testPutCanceled(t *testing.T, s blob.Store) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	data := randomBytes(5, 4096)
	err := s.Put(ctx, "ctx/before", bytes.NewReader(data), int64(len(data)))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Put with canceled context = %v, want context.Canceled", err)
	}
	wantNotFound(t, s, "ctx/before")

	// Canceled while the body is being read.
	ctx, cancel = context.WithCancel(t.Context())
	defer cancel()
	r := io.MultiReader(bytes.NewReader(data), readerFunc(func([]byte) (int, error) {
		cancel()
		return 0, io.EOF
	}), bytes.NewReader(data))
	err = s.Put(ctx, "ctx/during", r, 2*int64(len(data)))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Put canceled midway = %v, want context.Canceled", err)
	}
	wantNotFound(t, s, "ctx/during")
}

// readerFunc adapts a function to io.Reader.
type readerFunc func(p []byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

func testOverwrite(t *testing.T, s blob.Store) {
	for i, size := range []int{5000, 10, 0, 1 << 20, 3} {
		data := randomBytes(uint64(100+i), size)
		put(t, s, "ow/x", data)
		if got := get(t, s, "ow/x", 0, -1); !bytes.Equal(got, data) {
			t.Fatalf("after overwrite %d: Get returned %d bytes, want the %d just put", i, len(got), size)
		}
	}
	if diff := cmp.Diff([]string{"ow/x"}, listKeys(t, s, "ow/")); diff != "" {
		t.Errorf("List after overwrites (-want +got):\n%s", diff)
	}
}

func testDelete(t *testing.T, s blob.Store) {
	put(t, s, "del/a", []byte("aaa"))
	put(t, s, "del/b", []byte("bbb"))
	if err := s.Delete(t.Context(), "del/a"); err != nil {
		t.Fatalf("Delete(del/a) = %v", err)
	}
	wantNotFound(t, s, "del/a")
	if got := get(t, s, "del/b", 0, -1); string(got) != "bbb" {
		t.Errorf("Get(del/b) after deleting del/a = %q, want %q", got, "bbb")
	}
	for _, key := range []string{"del/a", "del/never", "never/was/here"} {
		if err := s.Delete(t.Context(), key); err != nil {
			t.Errorf("Delete(%q) of absent key = %v, want nil", key, err)
		}
	}
	// A deleted key can be written again.
	put(t, s, "del/a", []byte("again"))
	if got := get(t, s, "del/a", 0, -1); string(got) != "again" {
		t.Errorf("Get(del/a) after re-put = %q, want %q", got, "again")
	}
}

func testList(t *testing.T, s blob.Store) {
	keys := []string{"b/00/abc", "b/01/def", "b/01/dez", "ba/x", "c/00/x", "top", "t-1.x_y"}
	for _, k := range keys {
		put(t, s, k, []byte(k))
	}
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"", []string{"b/00/abc", "b/01/def", "b/01/dez", "ba/x", "c/00/x", "t-1.x_y", "top"}},
		{"b/", []string{"b/00/abc", "b/01/def", "b/01/dez"}},
		{"b", []string{"b/00/abc", "b/01/def", "b/01/dez", "ba/x"}},
		{"b/0", []string{"b/00/abc", "b/01/def", "b/01/dez"}},
		{"b/01/", []string{"b/01/def", "b/01/dez"}},
		{"b/01/de", []string{"b/01/def", "b/01/dez"}},
		{"b/01/def", []string{"b/01/def"}},
		{"b/00/abc/", nil},
		{"c/00/x", []string{"c/00/x"}},
		{"t", []string{"t-1.x_y", "top"}},
		{"zzz", nil},
		{"zzz/", nil},
	} {
		t.Run("prefix="+tc.prefix, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, listKeys(t, s, tc.prefix)); diff != "" {
				t.Errorf("List(%q) (-want +got):\n%s", tc.prefix, diff)
			}
		})
	}
}

func testListStops(t *testing.T, s blob.Store) {
	for i := range 10 {
		put(t, s, fmt.Sprintf("stop/%02d/x", i), []byte{byte(i)})
	}
	errStop := errors.New("stop")
	calls := 0
	err := s.List(t.Context(), "stop/", func(string) error {
		calls++
		if calls == 3 {
			return errStop
		}
		return nil
	})
	if !errors.Is(err, errStop) {
		t.Errorf("List = %v, want the error fn returned", err)
	}
	if calls != 3 {
		t.Errorf("fn called %d times, want 3: List must stop at the first error", calls)
	}
}

func testListWhileDeleting(t *testing.T, s blob.Store) {
	// GC deletes from inside List's callback.
	for i := range 50 {
		put(t, s, fmt.Sprintf("gc/%02d/k%d", i%5, i), []byte("x"))
	}
	err := s.List(t.Context(), "gc/", func(key string) error {
		return s.Delete(t.Context(), key)
	})
	if err != nil {
		t.Fatalf("List deleting every key = %v", err)
	}
	if keys := listKeys(t, s, "gc/"); len(keys) != 0 {
		t.Errorf("after deleting during List, keys remain: %q", keys)
	}
}

// versioned returns the contents of version v of a blob: a header holding v
// and the length, then bytes derived from v, so that a reader can tell from
// any whole blob which version it is and check every byte of it.
func versioned(v uint64) []byte {
	size := 16 + int(v%7)*9000 + int(v%3)
	p := randomBytes(v, size)
	for i := range 8 {
		p[i] = byte(v >> (8 * i))
		p[8+i] = byte(uint64(size) >> (8 * i))
	}
	return p
}

// checkVersioned reports whether p is exactly one whole version.
func checkVersioned(p []byte) error {
	if len(p) < 16 {
		return fmt.Errorf("blob of %d bytes is shorter than its header", len(p))
	}
	var v, size uint64
	for i := range 8 {
		v |= uint64(p[i]) << (8 * i)
		size |= uint64(p[8+i]) << (8 * i)
	}
	if want := versioned(v); !bytes.Equal(p, want) {
		return fmt.Errorf("blob with header of version %d (size %d) has %d bytes that are not that version: a torn or mixed read", v, size, len(p))
	}
	return nil
}

func testConcurrentSameKey(t *testing.T, s blob.Store) {
	const (
		writers  = 4
		versions = 25
		readers  = 4
		key      = "conc/same"
	)
	ctx := t.Context()
	done := make(chan struct{})
	var writing, reading sync.WaitGroup
	for w := range writers {
		writing.Go(func() {
			for i := range versions {
				data := versioned(uint64(w*versions + i + 1))
				if err := s.Put(ctx, key, bytes.NewReader(data), int64(len(data))); err != nil {
					t.Errorf("Put: %v", err)
					return
				}
				if i%5 == 4 {
					if err := s.Delete(ctx, key); err != nil {
						t.Errorf("Delete: %v", err)
						return
					}
				}
			}
		})
	}
	reads := make([]int, readers)
	for r := range readers {
		reading.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				rc, err := s.Get(ctx, key, 0, -1)
				if errors.Is(err, blob.ErrNotFound) {
					continue
				}
				if err != nil {
					t.Errorf("Get: %v", err)
					return
				}
				p, err := io.ReadAll(rc)
				rc.Close()
				if err != nil {
					t.Errorf("read: %v", err)
					return
				}
				if err := checkVersioned(p); err != nil {
					t.Error(err)
					return
				}
				reads[r]++
			}
		})
	}
	writing.Wait()
	close(done)
	reading.Wait()
	total := 0
	for _, n := range reads {
		total += n
	}
	t.Logf("%d whole-blob reads verified during %d writes", total, writers*versions)
	// The last operation of every writer may have been a Delete or a Put;
	// whatever is there now must be one whole version.
	rc, err := s.Get(ctx, key, 0, -1)
	if errors.Is(err, blob.ErrNotFound) {
		return
	}
	if err != nil {
		t.Fatalf("final Get: %v", err)
	}
	defer rc.Close()
	p, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkVersioned(p); err != nil {
		t.Error(err)
	}
}

func testConcurrentDistinctKeys(t *testing.T, s blob.Store) {
	const (
		workers = 8
		rounds  = 20
	)
	ctx := t.Context()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			key := fmt.Sprintf("conc/%02d/own", w%3) + fmt.Sprint(w)
			for i := range rounds {
				data := versioned(uint64(1000*w + i))
				if err := s.Put(ctx, key, bytes.NewReader(data), int64(len(data))); err != nil {
					t.Errorf("Put(%s): %v", key, err)
					return
				}
				rc, err := s.Get(ctx, key, 0, -1)
				if err != nil {
					t.Errorf("Get(%s) right after Put: %v", key, err)
					return
				}
				p, err := io.ReadAll(rc)
				rc.Close()
				if err != nil || !bytes.Equal(p, data) {
					t.Errorf("Get(%s) = %d bytes, %v; want the %d bytes just put", key, len(p), err, len(data))
					return
				}
				if i%2 == 1 {
					if err := s.Delete(ctx, key); err != nil {
						t.Errorf("Delete(%s): %v", key, err)
						return
					}
					if rc, err := s.Get(ctx, key, 0, -1); !errors.Is(err, blob.ErrNotFound) {
						if err == nil {
							rc.Close()
						}
						t.Errorf("Get(%s) after Delete = %v, want ErrNotFound", key, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
}
