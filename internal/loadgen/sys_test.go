package loadgen

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

func TestRunSys(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rs, err := RunSys(t.Context(), SysConfig{Dir: dir, Duration: 200 * time.Millisecond, FileSize: 4 << 20})
	if err != nil {
		t.Fatalf("RunSys: %v", err)
	}
	want := []string{"loopback TCP", "disk sequential write + fsync", "disk sequential read", "4 KiB write + fsync"}
	if len(rs) != len(want) {
		t.Fatalf("RunSys returned %+v, want %v", rs, want)
	}
	for i, r := range rs {
		if r.Name != want[i] || r.Value <= 0 {
			t.Errorf("result %d = %+v, want %s with a positive value", i, r, want[i])
		}
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("RunSys left %d files in its directory", len(left))
	}
	var b strings.Builder
	if err := WriteSys(&b, rs); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "| loopback TCP | ") || strings.Count(b.String(), "\n") != 6 {
		t.Errorf("WriteSys:\n%s", b.String())
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := RunSys(ctx, SysConfig{Dir: dir}); !errors.Is(err, context.Canceled) {
		t.Errorf("RunSys with a cancelled context: %v, want context.Canceled", err)
	}
	if _, err := RunSys(t.Context(), SysConfig{Dir: dir + "/missing", Duration: 10 * time.Millisecond, FileSize: 1 << 20}); err == nil {
		t.Error("RunSys in a missing directory succeeded")
	}
}
