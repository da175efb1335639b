package fsblob

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coffer-s3/coffer/internal/blob"
	"github.com/coffer-s3/coffer/internal/blob/blobtest"
)

// inode returns the inode number of the file at key.
func inode(t testing.TB, s *Store, key string) uint64 {
	t.Helper()
	fi, err := s.root.Lstat(key)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

func putBytes(t testing.TB, s *Store, key string, data []byte) {
	t.Helper()
	if err := s.Put(t.Context(), key, bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatalf("Put(%s) = %v", key, err)
	}
}

func getBytes(t testing.TB, s *Store, key string) []byte {
	t.Helper()
	rc, err := s.Get(t.Context(), key, 0, -1)
	if err != nil {
		t.Fatalf("Get(%s) = %v", key, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	return b
}

func deleteKey(t testing.TB, s *Store, key string) {
	t.Helper()
	if err := s.Delete(t.Context(), key); err != nil {
		t.Fatalf("Delete(%s) = %v", key, err)
	}
}

// keptNames lists the freed files kept in .tmp.
func keptNames(t testing.TB, s *Store) []string {
	t.Helper()
	var kept []string
	for _, n := range tmpNames(t, s) {
		if strings.HasPrefix(n, freePrefix) {
			kept = append(kept, n)
		}
	}
	return kept
}

func fill(b byte, n int) []byte { return bytes.Repeat([]byte{b}, n) }

func TestReuse(t *testing.T) {
	for _, sync := range []bool{false, true} {
		t.Run(map[bool]string{false: "sync=false", true: "sync=true"}[sync], func(t *testing.T) {
			s := open(t, Config{Sync: sync, Reuse: 64 << 20})
			const size = 100 << 10
			putBytes(t, s, "a/1", fill('a', size))
			ino := inode(t, s, "a/1")
			deleteKey(t, s, "a/1")
			if st := s.ReuseStats(); st.Files != 1 || st.Bytes != size {
				t.Fatalf("after Delete: %+v, want 1 file of %d bytes kept", st, size)
			}
			if kept := keptNames(t, s); len(kept) != 1 {
				t.Fatalf("kept files in %s: %q, want one", tmpDir, kept)
			}
			wantNotFound(t, s, "a/1")

			// The same size: the same file, rewritten, under the new key.
			putBytes(t, s, "b/2", fill('b', size))
			if got := inode(t, s, "b/2"); got != ino {
				t.Errorf("Put of the same size made inode %d, want the kept %d", got, ino)
			}
			if got := getBytes(t, s, "b/2"); !bytes.Equal(got, fill('b', size)) {
				t.Errorf("Get(b/2) = %d bytes starting %q, want %d × 'b'", len(got), got[:min(8, len(got))], size)
			}
			if st := s.ReuseStats(); st.Files != 0 || st.Reused != 1 {
				t.Errorf("after reuse: %+v, want none kept, 1 reused", st)
			}

			// A few bytes shorter, in the same 4 KiB blocks: reused and
			// truncated.
			ino = inode(t, s, "b/2")
			deleteKey(t, s, "b/2")
			putBytes(t, s, "c/3", fill('c', size-100))
			if got := inode(t, s, "c/3"); got != ino {
				t.Errorf("Put 100 bytes shorter made inode %d, want the kept %d", got, ino)
			}
			if got := getBytes(t, s, "c/3"); !bytes.Equal(got, fill('c', size-100)) {
				t.Errorf("Get(c/3) = %d bytes, want %d × 'c'", len(got), size-100)
			}

			// Another size class: a new file; the kept one stays.
			ino = inode(t, s, "c/3")
			deleteKey(t, s, "c/3")
			putBytes(t, s, "d/4", fill('d', size+reuseAlloc))
			if got := inode(t, s, "d/4"); got == ino {
				t.Errorf("Put one block longer reused the kept file")
			}
			if st := s.ReuseStats(); st.Files != 1 {
				t.Errorf("kept after a Put of another size: %+v, want 1", st)
			}
			// Unknown sizes and small blobs never reuse or keep.
			if err := s.Put(t.Context(), "e/5", bytes.NewReader(fill('e', size-100)), blob.SizeUnknown); err != nil {
				t.Fatal(err)
			}
			if got := inode(t, s, "e/5"); got == ino {
				t.Errorf("Put of unknown size reused the kept file")
			}
			putBytes(t, s, "f/6", fill('f', 100))
			deleteKey(t, s, "f/6")
			if st := s.ReuseStats(); st.Files != 1 {
				t.Errorf("kept after deleting a 100-byte blob: %+v, want still 1", st)
			}
		})
	}
}

// wantNotFound checks that key is gone.
func wantNotFound(t testing.TB, s *Store, key string) {
	t.Helper()
	if _, err := s.Get(t.Context(), key, 0, -1); err == nil || !strings.Contains(err.Error(), blob.ErrNotFound.Error()) {
		t.Errorf("Get(%s) = %v, want not found", key, err)
	}
}

// A file a Reader has open is deleted, never kept: a Put reusing it would
// change the bytes under the reader.
func TestReuseSkipsOpenReaders(t *testing.T) {
	s := open(t, Config{Sync: true, Reuse: 64 << 20})
	const size = 64 << 10
	putBytes(t, s, "a", fill('a', size))
	rc, err := s.Get(t.Context(), "a", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	deleteKey(t, s, "a")
	if st := s.ReuseStats(); st.Files != 0 {
		t.Fatalf("Delete of a blob being read kept it: %+v", st)
	}
	putBytes(t, s, "b", fill('b', size))
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Equal(got, fill('a', size)) {
		t.Fatalf("reader of the deleted blob read %d bytes (err %v), want %d × 'a'", len(got), err, size)
	}

	// Closed readers no longer count: the next delete keeps the file.
	rc, err = s.Get(t.Context(), "b", 10, 10)
	if err != nil {
		t.Fatal(err)
	}
	rc.Close()
	rc.Close() // twice is harmless
	deleteKey(t, s, "b")
	if st := s.ReuseStats(); st.Files != 1 {
		t.Errorf("Delete after the reader closed: %+v, want 1 kept", st)
	}
	// A failed Get counts nothing.
	if _, err := s.Get(t.Context(), "never", 0, -1); err == nil {
		t.Fatal("Get of an absent key succeeded")
	}
	for i := range s.readers.stripes {
		if n := len(s.readers.stripes[i].n); n != 0 {
			t.Errorf("stripe %d counts readers of %d keys after all closed", i, n)
		}
	}
}

// A file with a second name is deleted by name, never kept: after a
// power loss on a filesystem without a journal, fsck can leave a reused
// blob's file under its old key as well as its new one, and rewriting it
// in place would change the live blob (here the second name is a hard
// link standing for what fsck leaves).
func TestReuseSkipsLinkedFiles(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("link counts are read on Linux only")
	}
	root := t.TempDir()
	s := open(t, Config{Root: root, Sync: true, Reuse: 64 << 20})
	const size = 64 << 10
	putBytes(t, s, "b/00/live", fill('l', size))
	// The live blob's file under a stale key too.
	if err := os.Link(filepath.Join(root, "b/00/live"), filepath.Join(root, "b/00/stale")); err != nil {
		t.Fatal(err)
	}
	deleteKey(t, s, "b/00/stale")
	if st := s.ReuseStats(); st.Files != 0 {
		t.Fatalf("Delete of a file with two names kept it: %+v", st)
	}
	putBytes(t, s, "b/00/next", fill('n', size))
	if got := getBytes(t, s, "b/00/live"); !bytes.Equal(got, fill('l', size)) {
		t.Fatalf("the live blob changed after its stale name was deleted and a Put of its size ran")
	}
	// Alone again, the file is kept when its key is deleted.
	deleteKey(t, s, "b/00/live")
	if st := s.ReuseStats(); st.Files != 1 {
		t.Errorf("Delete of the file, now with one name: %+v, want 1 kept", st)
	}
}

func TestReuseBounds(t *testing.T) {
	const size = 32 << 10
	s := open(t, Config{Reuse: 3 * size})
	for i := range 5 {
		key := "k" + string(rune('0'+i))
		putBytes(t, s, key, fill(byte('0'+i), size))
	}
	var order []string // kept files' names, in the order the deletes kept them
	for i := range 5 {
		deleteKey(t, s, "k"+string(rune('0'+i)))
		for _, n := range keptNames(t, s) {
			if !slices.Contains(order, n) {
				order = append(order, n)
			}
		}
	}
	st := s.ReuseStats()
	if st.Files != 3 || st.Bytes != 3*size || st.Evicted != 2 {
		t.Errorf("after 5 deletes with room for 3: %+v, want 3 files, %d bytes, 2 evicted", st, 3*size)
	}
	kept := keptNames(t, s)
	slices.Sort(kept)
	want := slices.Clone(order[len(order)-3:])
	slices.Sort(want)
	if !slices.Equal(kept, want) {
		t.Errorf("kept files on disk: %q, want the newest three %q (of %q)", kept, want, order)
	}
	// The newest are kept: a Put of that size takes the newest.
	putBytes(t, s, "new", fill('n', size))
	if st := s.ReuseStats(); st.Files != 2 || st.Reused != 1 {
		t.Errorf("after a Put: %+v, want 2 kept, 1 reused", st)
	}
}

func TestReuseExpires(t *testing.T) {
	s := open(t, Config{Reuse: 1 << 20, ReuseIdle: 40 * time.Millisecond})
	putBytes(t, s, "a", fill('a', 64<<10))
	deleteKey(t, s, "a")
	deadline := time.Now().Add(10 * time.Second)
	for s.ReuseStats().Files != 0 || len(keptNames(t, s)) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("kept file not deleted after its idle time: %+v, %q", s.ReuseStats(), keptNames(t, s))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st := s.ReuseStats(); st.Evicted != 1 {
		t.Errorf("%+v, want 1 evicted", st)
	}
}

func TestReclaim(t *testing.T) {
	s := open(t, Config{Reuse: 1 << 20})
	for _, k := range []string{"a", "b", "c"} {
		putBytes(t, s, k, fill('x', 20<<10))
	}
	for _, k := range []string{"a", "b", "c"} {
		deleteKey(t, s, k)
	}
	if got := s.Reclaim(); got != 3*20<<10 {
		t.Errorf("Reclaim() = %d, want %d", got, 3*20<<10)
	}
	if kept := keptNames(t, s); len(kept) != 0 || s.ReuseStats().Files != 0 {
		t.Errorf("after Reclaim: %q on disk, %+v", kept, s.ReuseStats())
	}
	// Off: Reclaim does nothing, Delete deletes.
	off := open(t, Config{})
	putBytes(t, off, "a", fill('x', 20<<10))
	deleteKey(t, off, "a")
	if off.Reclaim() != 0 || len(tmpNames(t, off)) != 0 {
		t.Errorf("store without reuse kept a file")
	}
}

// Kept files are garbage to a restarted store: Open removes them, and
// List never shows them.
func TestReuseReopenAndList(t *testing.T) {
	root := filepath.Join(t.TempDir(), "blobs")
	s := open(t, Config{Root: root, Reuse: 1 << 20})
	putBytes(t, s, "x/a", fill('a', 20<<10))
	putBytes(t, s, "x/b", fill('b', 20<<10))
	deleteKey(t, s, "x/a")
	var listed []string
	if err := s.List(t.Context(), "", func(k string) error { listed = append(listed, k); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(listed) != 1 || listed[0] != "x/b" {
		t.Errorf("List = %q, want [x/b]", listed)
	}
	s.Close()
	s = open(t, Config{Root: root, Reuse: 1 << 20})
	if names := tmpNames(t, s); len(names) != 0 {
		t.Errorf("after reopening, %s holds %q", tmpDir, names)
	}
	if got := getBytes(t, s, "x/b"); !bytes.Equal(got, fill('b', 20<<10)) {
		t.Error("x/b changed across reopen")
	}
}

// A Put that fails while rewriting a kept file leaves neither the file
// nor a key behind, and does not disturb other kept files.
func TestReuseFailedPut(t *testing.T) {
	s := open(t, Config{Sync: true, Reuse: 1 << 20})
	const size = 40 << 10
	putBytes(t, s, "a", fill('a', size))
	putBytes(t, s, "b", fill('b', size))
	deleteKey(t, s, "a")
	deleteKey(t, s, "b")
	err := s.Put(t.Context(), "c", io.LimitReader(bytes.NewReader(fill('c', size)), size-1), size)
	if err == nil {
		t.Fatal("short Put succeeded")
	}
	wantNotFound(t, s, "c")
	if st := s.ReuseStats(); st.Files != 1 || len(keptNames(t, s)) != 1 {
		t.Errorf("after a failed Put: %+v, on disk %q, want the other file kept", st, keptNames(t, s))
	}
	putBytes(t, s, "c", fill('c', size))
	if got := getBytes(t, s, "c"); !bytes.Equal(got, fill('c', size)) {
		t.Error("Put after the failed one stored other bytes")
	}
}

// The conformance suite with reuse on for every blob, and a run of Puts,
// Gets and Deletes of same-size blobs over a few keys in which every
// read must see one whole blob: a kept file rewritten under a reader would
// show a mix.
func TestReuseConformance(t *testing.T) {
	for _, sync := range []bool{false, true} {
		t.Run(map[bool]string{false: "sync=false", true: "sync=true"}[sync], func(t *testing.T) {
			blobtest.Run(t, func(t *testing.T) blob.Store {
				s := open(t, Config{Sync: sync, Reuse: 1 << 20})
				s.reuseMin = 1
				t.Cleanup(func() {
					for _, n := range tmpNames(t, s) {
						if !strings.HasPrefix(n, freePrefix) {
							t.Errorf("temporary file left in %s: %q", tmpDir, n)
						}
					}
				})
				return s
			})
		})
	}
}

func TestReuseConcurrent(t *testing.T) {
	s := open(t, Config{Reuse: 1 << 20})
	s.reuseMin = 1
	const (
		size    = 8 << 10
		keys    = 4
		writers = 4
		readers = 4
		rounds  = 300
	)
	key := func(i int) string { return "c/" + string(rune('a'+i%keys)) }
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range rounds {
				k := key(w + i)
				b := byte('A' + (w*rounds+i)%26)
				if i%3 == 2 {
					if err := s.Delete(t.Context(), k); err != nil {
						t.Error(err)
					}
					continue
				}
				if err := s.Put(t.Context(), k, bytes.NewReader(fill(b, size)), size); err != nil {
					t.Error(err)
				}
			}
		})
	}
	for r := range readers {
		wg.Go(func() {
			for i := range rounds {
				rc, err := s.Get(t.Context(), key(r+i), 0, -1)
				if err != nil {
					continue // deleted meanwhile
				}
				// Read slowly enough for writers to get in between.
				first := make([]byte, 1)
				_, err1 := io.ReadFull(rc, first)
				time.Sleep(50 * time.Microsecond)
				rest, err2 := io.ReadAll(rc)
				rc.Close()
				if err1 != nil || err2 != nil {
					t.Errorf("read: %v %v", err1, err2)
					continue
				}
				if !bytes.Equal(rest, fill(first[0], size-1)) {
					t.Errorf("a reader saw a blob that changed under it (first byte %q)", first[0])
					return
				}
			}
		})
	}
	wg.Wait()
}

// A kept file whose size is not what Delete saw (a Put replaced the key
// between Delete's Lstat and its rename) is never rewritten for a blob of
// the recorded size: it would keep a tail of old bytes.
func TestReuseChecksKeptSize(t *testing.T) {
	s := open(t, Config{Reuse: 1 << 20})
	const size = 40 << 10
	putBytes(t, s, "a", fill('a', size))
	deleteKey(t, s, "a")
	kept := keptNames(t, s)
	if len(kept) != 1 {
		t.Fatalf("kept %q", kept)
	}
	// Grow the kept file behind the pool's back, as a replaced key would.
	if err := os.WriteFile(filepath.Join(s.root.Name(), tmpDir, kept[0]), fill('z', 3*size), 0o600); err != nil {
		t.Fatal(err)
	}
	putBytes(t, s, "b", fill('b', size))
	if got := getBytes(t, s, "b"); !bytes.Equal(got, fill('b', size)) {
		t.Fatalf("Get(b) = %d bytes, want %d × 'b'", len(got), size)
	}
	if n := keptNames(t, s); len(n) != 0 {
		t.Errorf("the mismatched kept file is still in %s: %q", tmpDir, n)
	}
}

// readFromRecorder is an io.ReaderFrom that records whether ReadFrom was
// called, as sendfile would be through an http.ResponseWriter.
type readFromRecorder struct {
	bytes.Buffer
	readFrom bool
}

func (w *readFromRecorder) ReadFrom(r io.Reader) (int64, error) {
	w.readFrom = true
	return w.Buffer.ReadFrom(r)
}

// Files that may be rewritten in place once freed are never handed to
// sendfile (whose socket buffers reference the file's pages until the
// peer reads them), and only they are kept when freed: larger blobs, and
// those too small to keep, keep sendfile and are deleted.
func TestReuseNeverSendfile(t *testing.T) {
	for _, reuse := range []int64{0, 1 << 30} {
		s := open(t, Config{Sync: true, Reuse: reuse})
		for _, size := range []int{defaultReuseMin - 1, defaultReuseMin, 100 << 10, reuseMax - 1, reuseMax, 2 << 20} {
			key := fmt.Sprintf("s/%d", size)
			data := fill('r', size)
			putBytes(t, s, key, data)
			rc, err := s.Get(t.Context(), key, 0, -1)
			if err != nil {
				t.Fatal(err)
			}
			var w readFromRecorder
			if _, err := rc.(io.WriterTo).WriteTo(&w); err != nil {
				t.Fatal(err)
			}
			rc.Close()
			if !bytes.Equal(w.Bytes(), data) {
				t.Errorf("reuse %d, %d bytes: WriteTo wrote other bytes", reuse, size)
			}
			reusable := reuse > 0 && size >= defaultReuseMin && size < reuseMax
			if wantCopy := reusable; w.readFrom == wantCopy {
				t.Errorf("reuse %d, %d bytes: ReadFrom called = %v, want %v", reuse, size, w.readFrom, !wantCopy)
			}
			if err := s.Delete(t.Context(), key); err != nil {
				t.Fatal(err)
			}
			kept := slices.ContainsFunc(tmpNames(t, s), func(n string) bool { return strings.HasPrefix(n, freePrefix) })
			if want := reusable; kept != want {
				t.Errorf("reuse %d, %d bytes: kept after Delete = %v, want %v", reuse, size, kept, want)
			}
			s.Reclaim()
		}
	}
}
