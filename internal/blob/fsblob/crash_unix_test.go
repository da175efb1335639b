//go:build unix

package fsblob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/coffer-s3/coffer/internal/blob"
)

// The crash test runs this test binary again as a child that opens a store,
// starts a Put and kills itself with SIGKILL at one step of the durability
// protocol; the parent then inspects what the process left and reopens the
// store as the next process would.
const (
	crashStepEnv = "FSBLOB_CRASH_STEP" // the step to die at; set only in the child
	crashRootEnv = "FSBLOB_CRASH_ROOT" // the store's root directory
	crashKey     = "b/00/crash"
	crashOldKey  = "b/00/old"
	crashSize    = 600 << 10 // more than two copy buffers: several writes
)

func TestMain(m *testing.M) {
	if step := os.Getenv(crashStepEnv); step != "" {
		err := crashChild(step, os.Getenv(crashRootEnv))
		// Reaching here means the step was never hit.
		fmt.Fprintf(os.Stderr, "crash child survived step %q: %v\n", step, err)
		os.Exit(3)
	}
	os.Exit(m.Run())
}

// crashData is what the child's Put stores.
func crashData() []byte {
	p := make([]byte, crashSize)
	for i := range p {
		p[i] = byte(i*31 + i>>10)
	}
	return p
}

// crashChild Puts crashData under crashKey and kills the process at step.
// It returns only if the step was never reached.
func crashChild(step, root string) error {
	s, err := Open(Config{Root: root, Sync: true})
	if err != nil {
		return err
	}
	die := func() {
		p, _ := os.FindProcess(os.Getpid())
		p.Kill()
		select {} // SIGKILL is not deliverable late; wait for it
	}
	data := crashData()
	var r io.Reader = bytes.NewReader(data)
	switch step {
	case "copy": // half the body is in the temporary file
		half := len(data) / 2
		r = io.MultiReader(bytes.NewReader(data[:half]), readerFunc(func([]byte) (int, error) {
			die()
			return 0, nil
		}))
	case "file-sync": // the whole body is written, not synced
		s.syncFile = func(*os.File) error {
			die()
			return nil
		}
	case "rename": // the file is synced, not yet renamed to its key
		s.syncFile = func(f *os.File) error {
			if err := f.Sync(); err != nil {
				return err
			}
			die()
			return nil
		}
	case "dir-sync": // renamed, the directory not synced
		s.syncDir = func(string) error {
			die()
			return nil
		}
	case "return": // Put returned; the caller has not used the blob yet
	default:
		return fmt.Errorf("unknown step")
	}
	if err := s.Put(context.Background(), crashKey, r, int64(len(data))); err != nil {
		return err
	}
	if step == "return" {
		die()
	}
	return nil
}

// TestCrashBetweenSteps kills a process (SIGKILL) at every step of a synced
// Put and checks what the next process finds: never a partial blob under
// the key, the blob whole once it was renamed, other blobs untouched, and
// no leftover but the temporary file, which Open removes. (A power loss
// cannot be simulated here; the kill leaves the page cache as it was.)
func TestCrashBetweenSteps(t *testing.T) {
	data := crashData()
	old := []byte("written before the crash")
	for _, tc := range []struct {
		step     string
		wantTemp bool // the kill leaves a temporary file
		wantBlob bool // the blob is under its key afterwards
	}{
		{step: "copy", wantTemp: true},
		{step: "file-sync", wantTemp: true},
		{step: "rename", wantTemp: true},
		{step: "dir-sync", wantBlob: true},
		{step: "return", wantBlob: true},
	} {
		t.Run(tc.step, func(t *testing.T) {
			t.Parallel()
			root := filepath.Join(t.TempDir(), "blobs")
			s := open(t, Config{Root: root, Sync: true})
			if err := s.Put(t.Context(), crashOldKey, bytes.NewReader(old), int64(len(old))); err != nil {
				t.Fatal(err)
			}
			s.Close()

			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), crashStepEnv+"="+tc.step, crashRootEnv+"="+root)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("child = %v, want killed by SIGKILL\n%s", err, out)
			}
			if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("child exited with %v, want killed by SIGKILL\n%s", ee, out)
			}

			ents, err := os.ReadDir(filepath.Join(root, tmpDir))
			if err != nil {
				t.Fatal(err)
			}
			if got := len(ents) > 0; got != tc.wantTemp {
				t.Errorf("after the kill, %s holds %d files, want temporary file: %v", tmpDir, len(ents), tc.wantTemp)
			}

			s = open(t, Config{Root: root, Sync: true})
			if names := tmpNames(t, s); len(names) != 0 {
				t.Errorf("after Open, %s holds %q, want nothing", tmpDir, names)
			}
			want := map[string][]byte{crashOldKey: old}
			if tc.wantBlob {
				want[crashKey] = data
			}
			for _, key := range []string{crashOldKey, crashKey} {
				rc, err := s.Get(t.Context(), key, 0, -1)
				if want[key] == nil {
					if !errors.Is(err, blob.ErrNotFound) {
						t.Errorf("Get(%q) = %v, want ErrNotFound", key, err)
					}
					continue
				}
				if err != nil {
					t.Errorf("Get(%q) = %v", key, err)
					continue
				}
				got, err := io.ReadAll(rc)
				rc.Close()
				if err != nil || !bytes.Equal(got, want[key]) {
					t.Errorf("Get(%q) read %d bytes, %v; want the %d bytes stored", key, len(got), err, len(want[key]))
				}
			}
			// What List reports is what the object service's GC sees: the
			// whole blob, an orphan to collect unless its record committed.
			var keys []string
			if err := s.List(t.Context(), "", func(k string) error { keys = append(keys, k); return nil }); err != nil {
				t.Fatal(err)
			}
			slices.Sort(keys)
			wantKeys := []string{crashOldKey}
			if tc.wantBlob {
				wantKeys = []string{crashKey, crashOldKey}
			}
			if diff := cmp.Diff(wantKeys, keys); diff != "" {
				t.Errorf("List after the crash (-want +got):\n%s", diff)
			}
		})
	}
}
