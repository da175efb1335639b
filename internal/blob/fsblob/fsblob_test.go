package fsblob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/coffer-s3/coffer/internal/blob"
	"github.com/coffer-s3/coffer/internal/blob/blobtest"
)

// open opens a Store on a fresh directory and closes it at cleanup.
func open(t testing.TB, cfg Config) *Store {
	t.Helper()
	if cfg.Root == "" {
		cfg.Root = filepath.Join(t.TempDir(), "blobs")
	}
	s, err := Open(cfg)
	if err != nil {
		t.Fatalf("Open(%+v) = %v", cfg, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	for _, sync := range []bool{false, true} {
		t.Run(map[bool]string{false: "sync=false", true: "sync=true"}[sync], func(t *testing.T) {
			blobtest.Run(t, func(t *testing.T) blob.Store {
				s := open(t, Config{Sync: sync})
				t.Cleanup(func() {
					// Whatever a test did, no temporary file may
					// outlive its Put.
					if names := tmpNames(t, s); len(names) != 0 {
						t.Errorf("temporary files left in %s: %q", tmpDir, names)
					}
				})
				return s
			})
		})
	}
}

func BenchmarkStore(b *testing.B) {
	for _, sync := range []bool{false, true} {
		b.Run(map[bool]string{false: "sync=false", true: "sync=true"}[sync], func(b *testing.B) {
			blobtest.Bench(b, func(b *testing.B) blob.Store { return open(b, Config{Sync: sync}) })
		})
	}
}

// tmpNames lists the entries of s's .tmp directory.
func tmpNames(t testing.TB, s *Store) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(s.root.Name(), tmpDir))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// tree returns every path under dir, relative and slash-separated, sorted.
func tree(t testing.TB, dir string) []string {
	t.Helper()
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			rel, _ := filepath.Rel(dir, p)
			paths = append(paths, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(paths)
	return paths
}

func TestOpenRemovesLeftoverTemp(t *testing.T) {
	root := filepath.Join(t.TempDir(), "blobs")
	s := open(t, Config{Root: root})
	if err := s.Put(t.Context(), "b/00/keep", strings.NewReader("kept"), 4); err != nil {
		t.Fatal(err)
	}
	s.Close()

	// What a crash mid-Put leaves: files (and, defensively, a directory)
	// in .tmp.
	for _, name := range []string{"x-1", "x-2"} {
		if err := os.WriteFile(filepath.Join(root, tmpDir, name), []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, tmpDir, "d", "e"), 0o700); err != nil {
		t.Fatal(err)
	}

	s = open(t, Config{Root: root})
	if names := tmpNames(t, s); len(names) != 0 {
		t.Errorf("after Open, %s holds %q, want nothing", tmpDir, names)
	}
	rc, err := s.Get(t.Context(), "b/00/keep", 0, -1)
	if err != nil {
		t.Fatalf("Get of blob written before reopen = %v", err)
	}
	defer rc.Close()
	if got, _ := io.ReadAll(rc); string(got) != "kept" {
		t.Errorf("Get = %q, want %q", got, "kept")
	}
}

func TestOpenErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"no root", Config{}},
		{"root is a file", Config{Root: file}},
		{"root under a file", Config{Root: filepath.Join(file, "sub")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if s, err := Open(tc.cfg); err == nil {
				s.Close()
				t.Fatalf("Open(%+v) = nil error, want error", tc.cfg)
			}
		})
	}
}

func TestInvalidKeys(t *testing.T) {
	parent := t.TempDir()
	s := open(t, Config{Root: filepath.Join(parent, "blobs"), Sync: true})
	ctx := t.Context()
	for _, key := range []string{
		"../x", "/abs", "a/../../b", "a\x00b", "", "A", "a b", `a\b`, "a/", "a//b", "a/./b", ".", "..",
		"a/..", "./a", ".tmp", ".tmp/x", strings.Repeat("k", 201), "x\n", lockName, blob.ClaimName,
	} {
		t.Run(key, func(t *testing.T) {
			err := s.Put(ctx, key, strings.NewReader("x"), 1)
			if !errors.Is(err, errInvalidKey) {
				t.Errorf("Put(%q) = %v, want invalid key", key, err)
			}
			if _, err := s.Get(ctx, key, 0, -1); !errors.Is(err, errInvalidKey) {
				t.Errorf("Get(%q) = %v, want invalid key", key, err)
			}
			if err := s.Delete(ctx, key); !errors.Is(err, errInvalidKey) {
				t.Errorf("Delete(%q) = %v, want invalid key", key, err)
			}
		})
	}
	// Nothing was created anywhere, inside the root or next to it.
	if diff := cmp.Diff([]string{"blobs", "blobs/" + tmpDir, "blobs/" + lockName}, tree(t, parent)); diff != "" {
		t.Errorf("files after rejected keys (-want +got):\n%s", diff)
	}
	for _, key := range []string{"a", strings.Repeat("k", 200), "b/00/0123abc", ".x/y", ".tmpx/y", "x/.tmp", "a.b/c_d-e"} {
		if err := s.Put(ctx, key, strings.NewReader("x"), 1); err != nil {
			t.Errorf("Put(%q) = %v, want nil", key, err)
		}
	}
}

func TestSymlinkCannotEscape(t *testing.T) {
	parent := t.TempDir()
	outside := filepath.Join(parent, "outside")
	if err := os.Mkdir(outside, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(parent, "blobs")
	s := open(t, Config{Root: root})
	if err := os.Symlink(outside, filepath.Join(root, "evil")); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if rc, err := s.Get(ctx, "evil/secret", 0, -1); err == nil {
		rc.Close()
		t.Error("Get through a symlink out of the root succeeded")
	}
	if err := s.Put(ctx, "evil/planted", strings.NewReader("x"), 1); err == nil {
		t.Error("Put through a symlink out of the root succeeded")
	}
	if err := s.Delete(ctx, "evil/secret"); err == nil {
		t.Error("Delete through a symlink out of the root succeeded")
	}
	if diff := cmp.Diff([]string{"secret"}, tree(t, outside)); diff != "" {
		t.Errorf("directory outside the root changed (-want +got):\n%s", diff)
	}
	if names := tmpNames(t, s); len(names) != 0 {
		t.Errorf("temporary files left: %q", names)
	}
}

func TestFailedPutLeavesNoFile(t *testing.T) {
	errBoom := errors.New("boom")
	for _, sync := range []bool{false, true} {
		s := open(t, Config{Sync: sync})
		for _, tc := range []struct {
			name string
			r    func(cancel func()) io.Reader
			size int64
			want error
		}{
			{"reader fails midway", func(func()) io.Reader {
				return io.MultiReader(bytes.NewReader(make([]byte, 300<<10)), iotest.ErrReader(errBoom))
			}, 1 << 20, errBoom},
			{"short", func(func()) io.Reader { return bytes.NewReader(make([]byte, 300<<10)) }, 1 << 20, blob.ErrSize},
			{"long", func(func()) io.Reader { return bytes.NewReader(make([]byte, 300<<10)) }, 1000, blob.ErrSize},
			{"canceled midway", func(cancel func()) io.Reader {
				return io.MultiReader(bytes.NewReader(make([]byte, 300<<10)), readerFunc(func([]byte) (int, error) {
					cancel()
					return 0, io.EOF
				}), bytes.NewReader(make([]byte, 300<<10)))
			}, 600 << 10, context.Canceled},
		} {
			t.Run(tc.name, func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				err := s.Put(ctx, "fail/00/x", tc.r(cancel), tc.size)
				if !errors.Is(err, tc.want) {
					t.Fatalf("Put = %v, want %v", err, tc.want)
				}
				if names := tmpNames(t, s); len(names) != 0 {
					t.Errorf("temporary files left: %q", names)
				}
				if _, err := os.Lstat(filepath.Join(s.root.Name(), "fail", "00", "x")); !os.IsNotExist(err) {
					t.Errorf("blob file after failed Put: Lstat = %v, want not exist", err)
				}
			})
		}
	}
}

// readerFunc adapts a function to io.Reader.
type readerFunc func(p []byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

func TestKeyAndDirectoryConflict(t *testing.T) {
	s := open(t, Config{})
	ctx := t.Context()
	if err := s.Put(ctx, "a", strings.NewReader("a"), 1); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "a/b", strings.NewReader("b"), 1); err == nil {
		t.Error(`Put("a/b") with blob "a" present = nil, want error`)
	}
	if err := s.Put(ctx, "x/y", strings.NewReader("y"), 1); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "x", strings.NewReader("x"), 1); err == nil {
		t.Error(`Put("x") with blob "x/y" present = nil, want error`)
	}
	if _, err := s.Get(ctx, "x", 0, -1); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf(`Get("x"), a directory = %v, want ErrNotFound`, err)
	}
	if err := s.Delete(ctx, "x"); err != nil {
		t.Errorf(`Delete("x"), a directory = %v, want nil`, err)
	}
	if _, err := s.Get(ctx, "a/b", 0, -1); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf(`Get("a/b") under a file = %v, want ErrNotFound`, err)
	}
	if err := s.Delete(ctx, "a/b"); err != nil {
		t.Errorf(`Delete("a/b") under a file = %v, want nil`, err)
	}
	var keys []string
	if err := s.List(ctx, "", func(k string) error { keys = append(keys, k); return nil }); err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	if diff := cmp.Diff([]string{"a", "x/y"}, keys); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	if names := tmpNames(t, s); len(names) != 0 {
		t.Errorf("temporary files left: %q", names)
	}
}

func TestListSkipsForeignFiles(t *testing.T) {
	s := open(t, Config{})
	root := s.root.Name()
	if err := s.Put(t.Context(), "b/x", strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}
	// Files no Put could have made: bad names, a symlink, leftovers.
	for _, name := range []string{"b/UPPER", "b/with space", tmpDir + "/b-partial"} {
		if err := os.WriteFile(filepath.Join(root, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("x", filepath.Join(root, "b", "link")); err != nil {
		t.Fatal(err)
	}
	for _, prefix := range []string{"", "b", "b/", ".tmp", ".tmp/", "../", "/b/"} {
		var keys []string
		if err := s.List(t.Context(), prefix, func(k string) error { keys = append(keys, k); return nil }); err != nil {
			t.Fatalf("List(%q) = %v", prefix, err)
		}
		want := []string{"b/x"}
		if !strings.HasPrefix("b/x", prefix) {
			want = nil
		}
		if diff := cmp.Diff(want, keys); diff != "" {
			t.Errorf("List(%q) (-want +got):\n%s", prefix, diff)
		}
	}
}

func TestListCanceled(t *testing.T) {
	s := open(t, Config{})
	if err := s.Put(t.Context(), "b/x", strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := s.List(ctx, "", func(string) error { return nil })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("List with canceled context = %v, want context.Canceled", err)
	}
}

func TestReader(t *testing.T) {
	s := open(t, Config{})
	data := make([]byte, 1000)
	for i := range data {
		data[i] = byte(i * 7)
	}
	ctx := t.Context()
	if err := s.Put(ctx, "r/x", bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}
	get := func(t *testing.T, off, n int64) *Reader {
		t.Helper()
		rc, err := s.Get(ctx, "r/x", off, n)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rc.Close() })
		r, ok := rc.(*Reader)
		if !ok {
			t.Fatalf("Get returned %T, want *Reader", rc)
		}
		return r
	}

	for _, tc := range []struct {
		name string
		dst  func() (io.Writer, func() []byte)
	}{
		{"WriteTo ReaderFrom", func() (io.Writer, func() []byte) {
			var b bytes.Buffer // an io.ReaderFrom
			return &b, b.Bytes
		}},
		{"WriteTo plain writer", func() (io.Writer, func() []byte) {
			var b bytes.Buffer
			return struct{ io.Writer }{&b}, b.Bytes
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := get(t, 10, 100)
			// Move the file offset and the read position apart, as a
			// mix of Read and WriteTo calls would.
			if _, err := io.ReadFull(r, make([]byte, 5)); err != nil {
				t.Fatal(err)
			}
			w, got := tc.dst()
			n, err := r.WriteTo(w)
			if err != nil || n != 95 {
				t.Fatalf("WriteTo = %d, %v; want 95, nil", n, err)
			}
			if !bytes.Equal(got(), data[15:110]) {
				t.Error("WriteTo wrote bytes that differ from the blob range")
			}
			if n, err := r.Read(make([]byte, 1)); n != 0 || err != io.EOF {
				t.Errorf("Read after WriteTo = %d, %v; want 0, EOF", n, err)
			}
		})
	}

	t.Run("WriteTo TCP", func(t *testing.T) {
		// *net.TCPConn's ReadFrom takes the sendfile path on Linux.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		var (
			wg       sync.WaitGroup
			received []byte
			rerr     error
		)
		wg.Go(func() {
			c, err := ln.Accept()
			if err != nil {
				rerr = err
				return
			}
			defer c.Close()
			received, rerr = io.ReadAll(c)
		})
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		r := get(t, 100, -1)
		n, err := io.Copy(c, r)
		c.Close()
		wg.Wait()
		if err != nil || n != 900 {
			t.Fatalf("io.Copy to TCP = %d, %v; want 900, nil", n, err)
		}
		if rerr != nil {
			t.Fatal(rerr)
		}
		if !bytes.Equal(received, data[100:]) {
			t.Error("bytes received over TCP differ from the blob range")
		}
	})

	t.Run("overwrite while open", func(t *testing.T) {
		r := get(t, 0, -1)
		if err := s.Put(ctx, "r/x", strings.NewReader("new"), 3); err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, "r/x"); err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("reader opened before overwrite and delete read %d bytes, %v; want the old %d bytes", len(got), err, len(data))
		}
	})
}

func TestGetNegativeOffset(t *testing.T) {
	s := open(t, Config{})
	if err := s.Put(t.Context(), "k", strings.NewReader("abc"), 3); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(t.Context(), "k", -1, 1); err == nil {
		t.Error("Get with negative offset = nil error, want error")
	}
	if err := s.Put(t.Context(), "k", strings.NewReader(""), -2); !errors.Is(err, blob.ErrSize) {
		t.Errorf("Put with size -2 = %v, want ErrSize", err)
	}
}

// BenchmarkPutParallel measures concurrent Puts. In size=4KiB/dirs=1, 16
// writers share one directory, where group commit shares directory fsyncs;
// dirsyncs/op reports how many each Put cost. In size=100KiB/dirs=256, 4
// writers spread fresh keys over 256 directories as the object service
// does under the mixed load. p50-ms and p99-ms are the latency of one Put.
func BenchmarkPutParallel(b *testing.B) {
	for _, sync := range []bool{false, true} {
		for _, bc := range []struct {
			name        string
			size        int
			dirs        int
			parallelism int
		}{
			{"size=4KiB", 4 << 10, 1, 8},
			{"size=100KiB/dirs=256", 100 << 10, 256, 2},
		} {
			b.Run(map[bool]string{false: "sync=false", true: "sync=true"}[sync]+"/"+bc.name, func(b *testing.B) {
				benchPutParallel(b, open(b, Config{Sync: sync}), bc.size, bc.dirs, bc.parallelism)
			})
		}
	}
}

func benchPutParallel(b *testing.B, s *Store, size, dirs, parallelism int) {
	data := make([]byte, size)
	var (
		seq  atomic.Int64
		mu   sync.Mutex
		lats []time.Duration
	)
	b.SetParallelism(parallelism)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	before := s.dirFsyncs.Load()
	b.RunParallel(func(pb *testing.PB) {
		r := bytes.NewReader(data)
		var local []time.Duration
		for pb.Next() {
			r.Reset(data)
			n := seq.Add(1)
			key := "p/" + strconv.FormatInt(n, 10)
			if dirs > 1 {
				key = fmt.Sprintf("p/%02x/%d", n%int64(dirs), n)
			}
			start := time.Now()
			if err := s.Put(b.Context(), key, r, int64(len(data))); err != nil {
				b.Error(err)
				return
			}
			local = append(local, time.Since(start))
		}
		mu.Lock()
		lats = append(lats, local...)
		mu.Unlock()
	})
	b.ReportMetric(float64(s.dirFsyncs.Load()-before)/float64(b.N), "dirsyncs/op")
	if len(lats) > 0 {
		slices.Sort(lats)
		ms := func(q float64) float64 { return float64(lats[int(q*float64(len(lats)-1))]) / 1e6 }
		b.ReportMetric(ms(0.5), "p50-ms")
		b.ReportMetric(ms(0.99), "p99-ms")
	}
}
