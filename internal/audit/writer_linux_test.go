package audit

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// diskFullEnv names the directory of TestDiskFull's child process.
const diskFullEnv = "COFFER_AUDIT_TEST_DISK_FULL_DIR"

// TestDiskFull runs the log against a file system that refuses to grow
// its files: the process's file size limit (RLIMIT_FSIZE), set in a
// child process so that it limits nothing else. Writes fail as on a full
// disk; Record must keep returning at once, the failures must be counted,
// nothing may crash, and writing must resume once there is room again.
func TestDiskFull(t *testing.T) {
	if dir := os.Getenv(diskFullEnv); dir != "" {
		diskFullChild(t, dir)
		return
	}
	t.Parallel()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestDiskFull$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), diskFullEnv+"="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("--- PASS: TestDiskFull")) {
		t.Fatalf("child process: %v\n%s", err, out)
	}
}

// diskFullChild is TestDiskFull in the child process.
func diskFullChild(t *testing.T, dir string) {
	path := filepath.Join(dir, "audit.db")
	clock := newFakeClock(t0)
	var logs syncBuffer
	l, err := open(Config{Path: path, Clock: clock.Now, QueueSize: 1000, BatchSize: 100,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))}, hooks{})
	if err != nil {
		t.Fatal(err)
	}
	ev := func(i int) Event {
		return Event{Time: t0, Source: SourceS3, Op: "PutObject", User: "alice", Key: fmt.Sprint(strings.Repeat("k", 1000), i)}
	}
	for i := range 10 {
		l.Record(ev(i))
	}
	if err := l.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}

	// No file may grow past its size now.
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Fatal(err)
	}
	signal.Ignore(syscall.SIGXFSZ) // else the kernel kills the process; the write fails with EFBIG instead
	var largest int64
	for _, name := range []string{path, path + "-wal", path + "-shm"} {
		if fi, err := os.Stat(name); err == nil {
			largest = max(largest, fi.Size())
		}
	}
	full := lim
	full.Cur = uint64(largest)
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &full); err != nil {
		t.Fatal(err)
	}
	var slowest time.Duration
	accepted := 0
	for i := range 3000 {
		start := time.Now()
		if l.Record(ev(i)) {
			accepted++
		}
		slowest = max(slowest, time.Since(start))
		if i%100 == 0 {
			clock.Advance(time.Minute) // past any back-off: keep trying the full disk
		}
	}
	flushErr := l.Flush(t.Context())
	st := l.Stats()
	t.Logf("disk full: %d accepted, slowest Record %v, Flush: %v, Stats %+v", accepted, slowest, flushErr, st)
	if flushErr == nil || st.WriteErrors == 0 {
		t.Errorf("with the disk full: Flush = %v, %d write errors; want failures", flushErr, st.WriteErrors)
	}
	if slowest > 100*time.Millisecond {
		t.Errorf("a Record took %v with the disk full, want it to return at once", slowest)
	}
	if got := st.Recorded + st.Dropped; got != 3010 {
		t.Errorf("Recorded + Dropped = %d, want every one of 3,010 events counted", got)
	}
	if !strings.Contains(logs.String(), "audit events not written") {
		t.Errorf("the failures were not logged:\n%s", logs.String())
	}

	// Room again: after the back-off the writer writes.
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour)
	before := st.Written
	l.Record(ev(-1))
	if err := l.Flush(t.Context()); err != nil {
		t.Errorf("Flush with room again = %v, want nil", err)
	}
	if st := l.Stats(); st.Written != before+1 {
		t.Errorf("Stats with room again = %+v, want one more written", st)
	}
	if err := l.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
	l, err = Open(Config{Path: path})
	if err != nil {
		t.Fatalf("reopening after a full disk: %v", err)
	}
	defer l.Close()
	if got := queryAll(t, l, Filter{KeyPrefix: strings.Repeat("k", 1000) + "-1"}); len(got) != 1 {
		t.Errorf("after reopening: %d events of the last write, want 1", len(got))
	}
}
