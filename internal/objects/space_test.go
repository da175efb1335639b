package objects

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/coffer-s3/coffer/internal/diskspace"
	"github.com/coffer-s3/coffer/internal/s3err"
)

// TestUpstreamBlocksNotReserved: with the blocks in a block store that
// does not use the local disk (memblob here, s3blob in gateway mode), an
// upload in flight holds none of its size against the local filesystem's
// free space: it once held all of it for as long as it ran, so a second
// upload was refused 507, and the audit log (Keep) stopped writing,
// although not a byte of either went to the local disk.
func TestUpstreamBlocksNotReserved(t *testing.T) {
	const mib = 1 << 20
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=200m"); err != nil {
		t.Skipf("mount: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	g, err := diskspace.New(diskspace.Config{Paths: []string{dir}, Reserve: 64 * mib})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvConfig(t, Config{InlineThreshold: testInline, BlockSize: 1 * mib, MinPartSize: 2 * testBlock})
	e.s.UseSpace(g, false, true) // blocks elsewhere, metadata local
	ctx := context.Background()

	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := e.s.PutObject(ctx, "bkt", "slow", PutInput{Size: 100 * mib}, pr)
		done <- err
	}()
	pw.Write(make([]byte, mib))        // the slow upload is under way
	time.Sleep(600 * time.Millisecond) // past two measurements

	_, err = e.s.PutObject(ctx, "bkt", "second", PutInput{Size: 50 * mib}, bytes.NewReader(make([]byte, 50*mib)))
	if s3err.Is(err, s3err.StorageFull) {
		t.Errorf("second upload refused although the local disk holds no block: %v", err)
	}
	// The audit log (Keep) on the same disk: 70 MiB of local files leave
	// 130 MiB free, twice the reserve, yet Keep says the last half of the
	// reserve is reached, counting the upstream-bound upload.
	if err := os.WriteFile(filepath.Join(dir, "audit.db"), make([]byte, 70*mib), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if err := g.Keep(); err != nil {
		t.Errorf("Keep with %d MiB free on a 64 MiB reserve: %v", g.Stats().FreeBytes/mib, err)
	}
	go func() { pw.Write(make([]byte, 99*mib)); pw.Close() }()
	if err := <-done; err != nil {
		t.Errorf("slow upload: %v", err)
	}
}
