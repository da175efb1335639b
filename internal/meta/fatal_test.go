package meta

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// enospc is the error a full disk gives a write of path.
func enospc(path string) error {
	return &iofs.PathError{Op: "write", Path: path, Err: syscall.ENOSPC}
}

func TestFailedErrorReason(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"full disk", enospc("/data/meta/000007.log"), "no space left on device"},
		{"io error in a fatal message", &engineError{msg: "MANIFEST sync failed", cause: &iofs.PathError{Op: "sync", Path: "/data/meta/MANIFEST-000001", Err: syscall.EIO}}, "input/output error"},
		{"no system error", errors.New("pebble: invariant violated"), "storage engine error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fe := &FailedError{Err: tc.err}
			if got := fe.Reason(); got != tc.want {
				t.Errorf("Reason() = %q, want %q", got, tc.want)
			}
			if strings.Contains(fe.Reason(), "/data") {
				t.Errorf("Reason() %q names a file", fe.Reason())
			}
			if !errors.Is(fe, ErrFailed) || !errors.Is(fe, tc.err) {
				t.Errorf("%v does not match ErrFailed and its cause", fe)
			}
		})
	}
}

// testFailure returns a failure that logs into the returned buffer.
func testFailure() (*failure, *syncBuf) {
	buf := &syncBuf{}
	return newFailure(slog.New(slog.NewTextHandler(buf, nil))), buf
}

// syncBuf is a bytes.Buffer safe for concurrent use.
type syncBuf struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestPanicInAdapterCall checks that a panic inside an adapter call (here
// a nil Pebble iterator's) becomes the store's failure and that call's
// error: never a panic for a caller's recover to swallow. (Fatalf inside
// an adapter call is TestWriteFailure's case.)
func TestPanicInAdapterCall(t *testing.T) {
	f, logs := testFailure()
	it := &pebbleIter{fail: f} // it.it is nil: every call panics
	if it.first() {
		t.Error("first() that panicked reported a key")
	}
	if !errors.Is(it.err, ErrFailed) || !strings.Contains(it.err.Error(), "pebble panicked: runtime error") {
		t.Errorf("iterator error = %v, want the failure, from the panic", it.err)
	}
	first := it.err
	if it.next() || it.seekGE([]byte("k")) || it.err != first {
		t.Errorf("steps after the panic: error %v, want them to report no key and keep %v", it.err, first)
	}
	if _, err := it.value(); err != first {
		t.Errorf("value() = %v, want %v", err, first)
	}
	if err := it.close(); err != first {
		t.Errorf("close() = %v, want %v", err, first)
	}
	select {
	case <-f.done:
	default:
		t.Error("the failure was not signalled")
	}
	if got := f.get(); got != first {
		t.Errorf("failure = %v, want %v", got, first)
	}
	if l := logs.String(); strings.Count(l, "metadata store failed") != 1 || !strings.Contains(l, "stack=") {
		t.Errorf("want the failure logged once, with the panic's stack: %q", l)
	}
	if inAdapterCall() {
		t.Error("inAdapterCall() is true in a test function")
	}
}

// TestFatalfOnEngineGoroutine checks that Fatalf on one of Pebble's own
// goroutines, where no recover of ours is reachable, records the failure
// and never returns, instead of crashing the process.
func TestFatalfOnEngineGoroutine(t *testing.T) {
	f, _ := testFailure()
	var logs syncBuf
	l := pebbleLogger{log: slog.New(slog.NewTextHandler(&logs, nil)), fail: f}
	returned := make(chan any, 1)
	go func() {
		defer func() { returned <- recover() }()
		l.Fatalf("MANIFEST sync failed: %v", &iofs.PathError{Op: "sync", Path: "MANIFEST-000001", Err: syscall.EIO})
	}()
	select {
	case <-f.done:
	case <-time.After(5 * time.Second):
		t.Fatal("Fatalf did not record the failure")
	}
	select {
	case r := <-returned:
		t.Fatalf("Fatalf on an engine goroutine returned (recovered %v); Pebble requires it not to", r)
	case <-time.After(100 * time.Millisecond):
	}
	if !errors.Is(f.get(), syscall.EIO) {
		t.Errorf("failure = %v, want the EIO", f.get())
	}
	if !strings.Contains(logs.String(), "pebble stopped") {
		t.Errorf("log lacks the parking: %q", logs.String())
	}
}

// fullDisk is a Config.FailWrite that fails writes of the log (*.log)
// with ENOSPC while it is on.
type fullDisk struct{ on atomic.Bool }

func (d *fullDisk) failWrite(path string) error {
	if d.on.Load() && strings.HasSuffix(path, ".log") {
		return syscall.ENOSPC
	}
	return nil
}

// TestWriteFailure drives a real database into the failed state with a
// full disk under its log, through Pebble's own error path, and checks the
// contract of DB.Err: the write that met the full disk fails with the
// failure, every later write fails at once without reaching Pebble (which
// wedged the server before: the next commits queued forever behind the
// lock Pebble's panic left held), reads go on, Close returns at once, and
// reopening the files finds every acknowledged write.
func TestWriteFailure(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var disk fullDisk
	var logs syncBuf
	db, err := Open(Config{Dir: dir, Sync: true, FailWrite: disk.failWrite,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	mustCreateBucket(t, db, "bkt")
	for i := range 10 {
		putObject(t, db, "bkt", fmt.Sprintf("acked-%d", i), Object{VersionID: "v", Size: 1, Inline: []byte{byte(i)}})
	}
	if db.Err() != nil {
		t.Fatalf("Err() = %v before any failure", db.Err())
	}
	if err := db.ProbeWrite(ctx); err != nil {
		t.Fatalf("ProbeWrite: %v", err)
	}

	disk.on.Store(true)
	err = db.UpdateObject(ctx, "bkt", "lost", testTime, func(*Object) (*Object, error) { return &Object{VersionID: "v"}, nil })
	if !errors.Is(err, ErrFailed) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write on a full disk = %v, want ErrFailed with ENOSPC", err)
	}
	select {
	case <-db.Failed():
	default:
		t.Fatal("Failed() is not closed after the failure")
	}
	fe, ok := errors.AsType[*FailedError](db.Err())
	if !ok || fe.Reason() != "no space left on device" {
		t.Fatalf("Err() = %v, want a *FailedError for the full disk", db.Err())
	}
	// Pebble reported the failed commit through Fatalf, on this
	// goroutine, inside the adapter's commit: Fatalf panicked (had it
	// parked the goroutine, as on Pebble's own, the write would hang) and
	// the commit turned the panic into its error.
	if l := logs.String(); strings.Count(l, "metadata store failed") != 1 || !strings.Contains(l, "no space left on device") ||
		!strings.Contains(l, "pebble: fatal commit error") {
		t.Errorf("want the failure logged once, with its cause, and Pebble's fatal error:\n%s", l)
	}

	// Later writes fail at once, concurrently, space or no space.
	disk.on.Store(false)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 66)
	for i := range 64 {
		wg.Go(func() {
			errs <- db.UpdateObject(ctx, "bkt", fmt.Sprintf("later-%d", i), testTime,
				func(*Object) (*Object, error) { return &Object{VersionID: "v"}, nil })
		})
	}
	wg.Go(func() { errs <- db.CreateBucket(ctx, Bucket{Name: "other", Created: testTime}) })
	wg.Go(func() { errs <- db.ProbeWrite(ctx) })
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, ErrFailed) {
			t.Errorf("write after the failure = %v, want ErrFailed", err)
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("66 writes after the failure took %v, want them refused at once", d)
	}

	// Reads go on.
	if o, err := db.Object(ctx, "bkt", "acked-3"); err != nil || o.Size != 1 {
		t.Errorf("Object after the failure = %+v, %v", o, err)
	}
	start = time.Now()
	if err := db.Close(); err != nil {
		t.Errorf("Close of a failed DB = %v, want nil", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Close of a failed DB took %v", d)
	}

	// A restart (here: the files, copied, since this process still holds
	// the lock) finds every acknowledged write.
	db2 := openAt(t, copyDir(t, dir))
	for i := range 10 {
		if got := objectData(t, db2, "bkt", fmt.Sprintf("acked-%d", i), "v"); !bytes.Equal(got, []byte{byte(i)}) {
			t.Errorf("acked-%d after restart holds %v", i, got)
		}
	}
	checkClean(t, db2)
	if err := db2.ProbeWrite(ctx); err != nil {
		t.Errorf("ProbeWrite after restart: %v", err)
	}
}

// copyDir copies the regular files of dir into a new temporary directory.
func copyDir(t *testing.T, dir string) string {
	t.Helper()
	dst := t.TempDir()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.Type().IsRegular() || e.Name() == "LOCK" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// TestCloseTimeout checks that Close gives up on an engine stuck on its
// disk instead of blocking the shutdown forever.
func TestCloseTimeout(t *testing.T) {
	var hang atomic.Bool
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	db, err := Open(Config{Dir: t.TempDir(), Sync: true, FailWrite: func(path string) error {
		if hang.Load() {
			<-release // a disk that never answers
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	mustCreateBucket(t, db, "bkt")
	db.kv.(*pebbleKV).closeTimeout = 200 * time.Millisecond
	hang.Store(true)
	start := time.Now()
	err = db.Close()
	if err == nil || !strings.Contains(err.Error(), "did not close within") {
		t.Errorf("Close with a hung disk = %v, want a timeout", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Close with a hung disk took %v", d)
	}
}

// TestProbeWrite checks that the probe key stays outside every table: the
// buckets, the usage count and its check do not see it.
func TestProbeWrite(t *testing.T) { forEachEngine(t, testProbeWrite) }

func testProbeWrite(t *testing.T, e engine) {
	ctx := context.Background()
	db := e.open(t)
	for range 3 {
		if err := db.ProbeWrite(ctx); err != nil {
			t.Fatalf("ProbeWrite: %v", err)
		}
	}
	mustCreateBucket(t, db, "bkt")
	if bs, err := db.Buckets(ctx); err != nil || len(bs) != 1 {
		t.Errorf("Buckets after probes = %+v, %v; want only bkt", bs, err)
	}
	checkClean(t, db)
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if err := db.ProbeWrite(canceled); !errors.Is(err, context.Canceled) {
		t.Errorf("ProbeWrite(canceled) = %v", err)
	}
}

// TestOpenOnFullDisk checks that Open on a disk that cannot take the
// writes opening needs (the flush of the log replayed, a new manifest)
// fails with the failure. When only tables failed (the flush), Pebble's
// Open used to wait forever for the flush it retries without end.
func TestOpenOnFullDisk(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(Config{Dir: dir, Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	mustCreateBucket(t, db, "bkt")
	for i := range 100 {
		putObject(t, db, "bkt", fmt.Sprintf("k%d", i), Object{VersionID: "v", Size: 1000, Inline: make([]byte, 1000)})
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for _, full := range []string{".sst", ""} { // "": every file
		t.Run("files "+full, func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				_, err := Open(Config{Dir: copyDir(t, dir), Sync: true, FailWrite: func(path string) error {
					if strings.HasSuffix(path, full) {
						return syscall.ENOSPC
					}
					return nil
				}})
				done <- err
			}()
			select {
			case err := <-done:
				if !errors.Is(err, ErrFailed) || !errors.Is(err, syscall.ENOSPC) {
					t.Errorf("Open on a full disk = %v, want the failure", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("Open on a full disk did not return")
			}
		})
	}
}

// TestCreateFailure fails the creation of every new log file, as a full
// inode table or a full disk does, while the current log still takes
// writes, and fills the memtable until a commit rotates the log. Pebble
// panics with the error after letting go of a mutex its caller unlocks
// again: a runtime fatal error no recover stops, which killed the server
// with exit status 2 (and, on restart, a failed table create was retried
// in a busy loop, a log line each). Now the failed create is the store's
// failure: the commit fails with it, as any write does, later writes are
// refused, and every acknowledged write survives.
func TestCreateFailure(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var on atomic.Bool
	var current sync.Map // the log files that existed when the failure began
	db, err := Open(Config{Dir: dir, Sync: true, FailWrite: func(path string) error {
		if !on.Load() || !strings.HasSuffix(path, ".log") {
			return nil
		}
		if _, ok := current.Load(filepath.Base(path)); ok {
			return nil
		}
		return syscall.ENOSPC
	}})
	if err != nil {
		t.Fatal(err)
	}
	mustCreateBucket(t, db, "bkt")
	logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("no log file in %s: %v", dir, err)
	}
	for _, l := range logs {
		current.Store(filepath.Base(l), true)
	}
	on.Store(true)
	value := make([]byte, 64<<10)
	acked := 0
	for i := range 4096 { // 256 MiB: far past any memtable
		err = db.UpdateObject(ctx, "bkt", fmt.Sprintf("k%05d", i), testTime, func(*Object) (*Object, error) {
			return &Object{VersionID: "v", Size: int64(len(value)), Inline: value}, nil
		})
		if err != nil {
			break
		}
		acked++
	}
	if !errors.Is(err, ErrFailed) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write %d, whose log rotation could not create a file = %v, want ErrFailed with ENOSPC", acked, err)
	}
	if err := db.ProbeWrite(ctx); !errors.Is(err, ErrFailed) {
		t.Errorf("write after the failure = %v, want ErrFailed", err)
	}
	if err := db.Close(); err != nil {
		t.Errorf("Close of a failed DB = %v", err)
	}
	db2 := openAt(t, copyDir(t, dir))
	for i := range acked {
		if got := objectData(t, db2, "bkt", fmt.Sprintf("k%05d", i), "v"); len(got) != len(value) {
			t.Fatalf("k%05d after restart holds %d bytes", i, len(got))
		}
	}
}
