package fsblob

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/coffer-s3/coffer/internal/blob"
)

// TestFullDisk fills a small tmpfs. It needs the privilege to mount, which
// CI has (it runs as root); elsewhere it is skipped.
func TestFullDisk(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a tmpfs to fill (%v); run as root to test ENOSPC", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	for _, sync := range []bool{false, true} {
		s, err := Open(Config{Root: filepath.Join(dir, "blobs"), Sync: sync})
		if err != nil {
			t.Fatal(err)
		}
		data := bytes.Repeat([]byte("x"), 2<<20)
		err = s.Put(t.Context(), "big/x", bytes.NewReader(data), int64(len(data)))
		if !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("sync=%v: Put of 2 MiB into 1 MiB = %v, want ENOSPC", sync, err)
		}
		if names := tmpNames(t, s); len(names) != 0 {
			t.Errorf("sync=%v: temporary files left on a full disk: %q", sync, names)
		}
		if _, err := s.Get(t.Context(), "big/x", 0, -1); !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("sync=%v: Get after ENOSPC = %v, want ErrNotFound", sync, err)
		}
		// The space was given back: a small Put succeeds.
		if err := s.Put(t.Context(), "small/x", bytes.NewReader(data[:1000]), 1000); err != nil {
			t.Errorf("sync=%v: small Put after ENOSPC = %v", sync, err)
		}
		s.Close()
		if err := os.RemoveAll(filepath.Join(dir, "blobs")); err != nil {
			t.Fatal(err)
		}
	}
}
