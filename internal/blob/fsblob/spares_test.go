package fsblob

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coffer-s3/coffer/internal/blob"
	"github.com/coffer-s3/coffer/internal/blob/blobtest"
)

// spareInodes waits until s has n spare files ready and returns their
// inodes.
func spareInodes(t *testing.T, s *Store, n int) map[uint64]bool {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		inos := make(map[uint64]bool)
		for _, name := range tmpNames(t, s) {
			if !strings.HasPrefix(name, sparePrefix) {
				continue
			}
			fi, err := os.Lstat(filepath.Join(s.root.Name(), tmpDir, name))
			if err != nil {
				continue // taken meanwhile
			}
			if fi.Size() != 0 {
				t.Fatalf("spare file %s holds %d bytes", name, fi.Size())
			}
			inos[fi.Sys().(*syscall.Stat_t).Ino] = true
		}
		if len(inos) == n {
			return inos
		}
		if len(inos) > n || time.Now().After(deadline) {
			t.Fatalf("%d spare files in %s, want %d", len(inos), tmpDir, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A Put writes into a spare file, the spares are made again, and Close
// removes them.
func TestSpares(t *testing.T) {
	for _, sync := range []bool{false, true} {
		t.Run(map[bool]string{false: "sync=false", true: "sync=true"}[sync], func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "blobs")
			s, err := Open(Config{Root: root, Sync: sync, Spares: 3})
			if err != nil {
				t.Fatal(err)
			}
			spares := spareInodes(t, s, 3)
			data := fill('a', 100<<10)
			putBytes(t, s, "a/1", data)
			if ino := inode(t, s, "a/1"); !spares[ino] {
				t.Errorf("blob a/1 is inode %d, not one of the spare files %v", ino, spares)
			}
			if got := getBytes(t, s, "a/1"); !bytes.Equal(got, data) {
				t.Error("a/1 reads back other bytes")
			}
			spareInodes(t, s, 3)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if ents, err := os.ReadDir(filepath.Join(root, tmpDir)); err != nil || len(ents) != 0 {
				t.Errorf("after Close, %s holds %d entries (%v), want none", tmpDir, len(ents), err)
			}
		})
	}
}

// A Put that fails after taking a spare leaves no file behind, and the
// next Put works.
func TestSparesFailedPut(t *testing.T) {
	s := open(t, Config{Sync: true, Spares: 1})
	spareInodes(t, s, 1)
	err := s.Put(t.Context(), "a/1", bytes.NewReader(fill('a', 10)), 20)
	if !errors.Is(err, blob.ErrSize) {
		t.Fatalf("Put of a short body = %v, want ErrSize", err)
	}
	spareInodes(t, s, 1)
	for _, n := range tmpNames(t, s) {
		if !strings.HasPrefix(n, sparePrefix) {
			t.Errorf("temporary file left in %s: %q", tmpDir, n)
		}
	}
	putBytes(t, s, "a/1", fill('b', 20))
	if got := getBytes(t, s, "a/1"); !bytes.Equal(got, fill('b', 20)) {
		t.Error("the Put after the failed one stored other bytes")
	}
}

// The conformance suite with spares and reuse on: every blob goes into a
// spare or a kept file, or a new one when neither is ready.
func TestSparesConformance(t *testing.T) {
	for _, sync := range []bool{false, true} {
		t.Run(map[bool]string{false: "sync=false", true: "sync=true"}[sync], func(t *testing.T) {
			blobtest.Run(t, func(t *testing.T) blob.Store {
				s := open(t, Config{Sync: sync, Reuse: 1 << 20, Spares: 2})
				s.reuseMin = 1
				t.Cleanup(func() {
					for _, n := range tmpNames(t, s) {
						if !strings.HasPrefix(n, freePrefix) && !strings.HasPrefix(n, sparePrefix) {
							t.Errorf("temporary file left in %s: %q", tmpDir, n)
						}
					}
				})
				return s
			})
		})
	}
}

// The loop goes on after failing to create a file, and removes what it
// holds when stopped.
func TestSpareLoopRetries(t *testing.T) {
	s := open(t, Config{})
	s.spares = make(chan spare)
	fails := 2
	create := func() (spare, error) {
		if fails > 0 {
			fails--
			return spare{}, syscall.ENOSPC
		}
		return s.newSpare()
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go s.spareLoop(create, time.Millisecond, stop, done)
	sp := <-s.spares // after two failures
	if fails != 0 {
		t.Errorf("a spare came with %d failures still to go", fails)
	}
	sp.remove(s)
	spareInodes(t, s, 1) // the next one, held by the loop
	close(stop)
	<-done
	if n := tmpNames(t, s); len(n) != 0 {
		t.Errorf("after the loop stopped, %s holds %q, want nothing", tmpDir, n)
	}
}
