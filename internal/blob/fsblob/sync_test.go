package fsblob

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/coffer-s3/coffer/internal/blob"
)

// recordSyncs replaces s's directory sync with one that records the
// directories (and still syncs them).
func recordSyncs(s *Store) func() []string {
	var (
		mu   sync.Mutex
		dirs []string
	)
	s.syncDir = func(dir string) error {
		mu.Lock()
		dirs = append(dirs, dir)
		mu.Unlock()
		return s.fsyncDir(dir)
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		got := slices.Clone(dirs)
		slices.Sort(got)
		dirs = nil
		return got
	}
}

func TestSyncedDirectories(t *testing.T) {
	s := open(t, Config{Sync: true})
	synced := recordSyncs(s)
	ctx := t.Context()
	for _, tc := range []struct {
		key  string
		want []string
	}{
		// New directories a and a/b: the file's entry is in a/b, a/b's
		// in a, a's in the root.
		{"a/b/c", []string{".", "a", "a/b"}},
		// a/b is now known durable: only the file's own directory.
		{"a/b/d", []string{"a/b"}},
		{"a/b/d", []string{"a/b"}},
		// A new directory under a durable one.
		{"a/e/f", []string{"a", "a/e"}},
		{"top", []string{"."}},
	} {
		if err := s.Put(ctx, tc.key, strings.NewReader("x"), 1); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, synced()); diff != "" {
			t.Errorf("Put(%q) synced directories (-want +got):\n%s", tc.key, diff)
		}
	}

	// Directories that existed before Open are not trusted to be durable
	// (the previous process may have crashed before syncing them).
	root := s.root.Name()
	s.Close()
	s = open(t, Config{Root: root, Sync: true})
	synced = recordSyncs(s)
	if err := s.Put(ctx, "a/b/g", strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{".", "a", "a/b"}, synced()); diff != "" {
		t.Errorf("first Put after reopen synced directories (-want +got):\n%s", diff)
	}
}

func TestNoSyncWithoutSync(t *testing.T) {
	s := open(t, Config{Sync: false})
	synced := recordSyncs(s)
	if err := s.Put(t.Context(), "a/b/c", strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}
	if got := synced(); len(got) != 0 {
		t.Errorf("Put with Sync=false synced %q", got)
	}
}

func TestDirSyncFailureRemovesBlob(t *testing.T) {
	s := open(t, Config{Sync: true})
	errSync := errors.New("sync failed")
	s.syncDir = func(string) error { return errSync }
	err := s.Put(t.Context(), "a/b", strings.NewReader("x"), 1)
	if !errors.Is(err, errSync) {
		t.Fatalf("Put = %v, want %v", err, errSync)
	}
	if _, err := s.Get(t.Context(), "a/b", 0, -1); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Get after failed directory sync = %v, want ErrNotFound", err)
	}
	if names := tmpNames(t, s); len(names) != 0 {
		t.Errorf("temporary files left: %q", names)
	}
}

func TestDirSyncerCoalesces(t *testing.T) {
	var (
		d     dirSyncer
		clock atomic.Int64 // logical time: every event takes a tick
		mu    sync.Mutex
		runs  [][2]int64 // start and end of each fn run
		calls atomic.Int32
	)
	fn := func() error {
		start := clock.Add(1)
		if n := calls.Add(1); n > 1 {
			t.Errorf("%d syncs running at once", n)
		}
		time.Sleep(2 * time.Millisecond)
		calls.Add(-1)
		end := clock.Add(1)
		mu.Lock()
		runs = append(runs, [2]int64{start, end})
		mu.Unlock()
		return nil
	}
	const callers = 64
	var wg sync.WaitGroup
	spans := make([][2]int64, callers)
	for i := range callers {
		wg.Go(func() {
			time.Sleep(time.Duration(i%8) * time.Millisecond)
			arrive := clock.Add(1)
			if err := d.sync(fn); err != nil {
				t.Error(err)
			}
			spans[i] = [2]int64{arrive, clock.Add(1)}
		})
	}
	wg.Wait()
	// Every caller must be covered by a run that started after it arrived
	// and ended before it returned.
	for i, sp := range spans {
		if !slices.ContainsFunc(runs, func(r [2]int64) bool { return r[0] > sp[0] && r[1] < sp[1] }) {
			t.Errorf("caller %d (arrived %d, returned %d) has no covering sync among %v", i, sp[0], sp[1], runs)
		}
	}
	if len(runs) >= callers/2 {
		t.Errorf("%d callers caused %d syncs; want them coalesced", callers, len(runs))
	}
	t.Logf("%d callers, %d syncs", callers, len(runs))
	if d.inflight != nil || d.next != nil {
		t.Errorf("syncer not idle after all callers returned: inflight %v, next %v", d.inflight, d.next)
	}
}

func TestDirSyncerErrors(t *testing.T) {
	// Callers that share a run share its error; the next run starts fresh.
	var d dirSyncer
	errFirst := errors.New("first")
	release := make(chan struct{})
	started := make(chan struct{})
	first := make(chan error)
	go func() {
		first <- d.sync(func() error {
			close(started)
			<-release
			return errFirst
		})
	}()
	<-started
	// These arrive while the first run is in flight: they share the second.
	errSecond := errors.New("second")
	var (
		wg      sync.WaitGroup
		results [4]error
		ran     atomic.Int32
	)
	for i := range results {
		wg.Go(func() {
			results[i] = d.sync(func() error {
				ran.Add(1)
				return errSecond
			})
		})
	}
	// Let them all queue, then finish the first run.
	for queued := 0; queued < len(results); runtime.Gosched() {
		d.mu.Lock()
		if d.next != nil {
			queued = d.next.shared
		}
		d.mu.Unlock()
	}
	close(release)
	if err := <-first; !errors.Is(err, errFirst) {
		t.Errorf("first caller got %v, want %v", err, errFirst)
	}
	wg.Wait()
	for i, err := range results {
		if !errors.Is(err, errSecond) {
			t.Errorf("queued caller %d got %v, want %v", i, err, errSecond)
		}
	}
	if n := ran.Load(); n != 1 {
		t.Errorf("callers that queued together ran %d syncs, want 1", n)
	}
	if err := d.sync(func() error { return nil }); err != nil {
		t.Errorf("sync after errors = %v, want nil", err)
	}
}

func TestSyncersReleased(t *testing.T) {
	s := open(t, Config{Sync: true})
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			key := "g/" + string(rune('a'+i%4)) + "/k" + string(rune('a'+i))
			if err := s.Put(t.Context(), key, strings.NewReader("x"), 1); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.syncers) != 0 {
		t.Errorf("%d directory syncers remain after all Puts returned", len(s.syncers))
	}
}

// TestConcurrentPutsShareDirSync checks group commit at the Store level:
// Puts into one directory that arrive while its fsync runs share the next
// one, and none returns before a directory fsync that started after its
// rename has finished.
func TestConcurrentPutsShareDirSync(t *testing.T) {
	s := open(t, Config{Sync: true})
	ctx := t.Context()
	// Make d known durable, so that later Puts sync d alone.
	if err := s.Put(ctx, "d/first", strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}

	type run struct {
		renamed []string // keys under d when the fsync started
		done    bool
	}
	var (
		mu      sync.Mutex // guards runs
		runs    []*run
		keys    = []string{"d/a", "d/b", "d/c", "d/d", "d/e"}
		started = make(chan int, len(keys)) // buffered: surplus fsyncs fail the test, not hang it
		release = make(chan struct{})
	)
	s.dirFsync = func(dir string) error {
		r := &run{}
		for _, k := range keys {
			if _, err := os.Lstat(filepath.Join(s.root.Name(), k)); err == nil {
				r.renamed = append(r.renamed, k)
			}
		}
		mu.Lock()
		runs = append(runs, r)
		n := len(runs)
		mu.Unlock()
		started <- n
		<-release
		err := s.fsyncDir(dir)
		mu.Lock()
		r.done = true
		mu.Unlock()
		return err
	}
	// covered reports whether a finished fsync covers key.
	covered := func(key string) bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.ContainsFunc(runs, func(r *run) bool { return r.done && slices.Contains(r.renamed, key) })
	}

	returned := make(chan string, len(keys))
	put := func(key string) {
		if err := s.Put(ctx, key, strings.NewReader(key), int64(len(key))); err != nil {
			t.Error(err)
		}
		if !covered(key) {
			t.Errorf("Put(%q) returned before a directory fsync that covers its rename finished", key)
		}
		returned <- key
	}
	go put(keys[0])
	if n := <-started; n != 1 {
		t.Fatalf("first fsync is run %d", n)
	}
	// The other Puts rename and queue behind the running fsync.
	for _, k := range keys[1:] {
		go put(k)
	}
	waitShared(t, s, "d", len(keys)-1)
	release <- struct{}{} // the first fsync ends; the queued one starts
	if got := <-returned; got != keys[0] {
		t.Fatalf("first to return is %q, want %q", got, keys[0])
	}
	if n := <-started; n != 2 {
		t.Fatalf("second fsync is run %d", n)
	}
	select {
	case k := <-returned:
		t.Fatalf("Put(%q) returned while the fsync it waits for runs", k)
	default:
	}
	close(release)
	for range keys[1:] {
		<-returned
	}
	mu.Lock()
	defer mu.Unlock()
	if len(runs) != 2 {
		t.Errorf("%d Puts caused %d directory fsyncs, want 2", len(keys), len(runs))
	}
	if diff := cmp.Diff(keys, runs[1].renamed); diff != "" {
		t.Errorf("keys renamed when the shared fsync started (-want +got):\n%s", diff)
	}
}

// waitShared waits until n callers share the directory fsync queued for dir
// behind the running one. It yields instead of sleeping: the callers are
// between their rename and joining the queue, which takes microseconds.
func waitShared(t *testing.T, s *Store, dir string, n int) {
	t.Helper()
	for {
		s.mu.Lock()
		d := s.syncers[dir]
		s.mu.Unlock()
		got := 0
		if d != nil {
			d.mu.Lock()
			if d.next != nil {
				got = d.next.shared
			}
			d.mu.Unlock()
		}
		if got == n {
			return
		}
		if got > n {
			t.Fatalf("%d callers share the queued fsync of %s, want %d", got, dir, n)
		}
		if t.Context().Err() != nil {
			t.Fatalf("gave up waiting for %d callers to queue: %v", n, t.Context().Err())
		}
		runtime.Gosched()
	}
}
