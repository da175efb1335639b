package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runCLI runs the command with env as the whole environment.
func runCLI(t *testing.T, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(t.Context(), args, &out, &errb, func(k string) string { return env[k] })
	return code, out.String(), errb.String()
}

func TestCommands(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string // substring
		wantStderr string // substring
	}{
		{name: "no command", args: nil, wantCode: 2, wantStderr: "Usage: coffer <command>"},
		{name: "unknown command", args: []string{"frobnicate"}, wantCode: 2, wantStderr: `unknown command "frobnicate"`},
		{name: "help", args: []string{"-h"}, wantCode: 0, wantStdout: "Commands:"},
		{name: "version", args: []string{"version"}, wantCode: 0, wantStdout: "coffer "},
		{name: "version extra", args: []string{"version", "x"}, wantCode: 2, wantStderr: `unexpected argument "x"`},
		{name: "version help", args: []string{"version", "-h"}, wantCode: 0, wantStdout: "Usage: coffer version"},
		{name: "bench", args: []string{"bench"}, wantCode: 2, wantStderr: "Usage: coffer bench <workload>"},
		{name: "bench help", args: []string{"bench", "-h"}, wantCode: 0, wantStdout: "Usage: coffer bench"},
		{name: "serve help", args: []string{"serve", "-h"}, wantCode: 0, wantStdout: "COFFER_STORAGE_PATH"},
		{name: "serve bad flag", args: []string{"serve", "--no-such-flag"}, wantCode: 2, wantStderr: "coffer serve: flag provided but not defined: -no-such-flag"},
		{name: "serve bad value", args: []string{"serve", "--block-size", "huge"}, wantCode: 2, wantStderr: `invalid value "huge" for flag -block-size: invalid size "huge"`},
		{name: "serve bad setting", args: []string{"serve", "--block-size", "1KiB"}, wantCode: 2, wantStderr: "block-size (from flag --block-size): 1KiB is out of range"},
		{name: "admin no command", args: []string{"admin"}, wantCode: 2, wantStderr: "Usage: coffer admin"},
		{name: "admin unknown", args: []string{"admin", "fsck"}, wantCode: 2, wantStderr: `unknown command "fsck"`},
		{name: "admin help", args: []string{"admin", "-h"}, wantCode: 0, wantStdout: "gc "},
		{name: "admin gc help", args: []string{"admin", "gc", "-h"}, wantCode: 0, wantStdout: "-grace"},
		{name: "admin gc bad flag", args: []string{"admin", "gc", "--force"}, wantCode: 2, wantStderr: "flag provided but not defined: -force"},
		{name: "admin gc negative grace", args: []string{"admin", "gc", "--grace", "-1h"}, wantCode: 2, wantStderr: "--grace must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runCLI(t, nil, tc.args...)
			if code != tc.wantCode {
				t.Errorf("coffer %q exit code = %d, want %d\nstdout: %s\nstderr: %s", tc.args, code, tc.wantCode, stdout, stderr)
			}
			if !strings.Contains(stdout, tc.wantStdout) {
				t.Errorf("coffer %q stdout = %q, want it to contain %q", tc.args, stdout, tc.wantStdout)
			}
			if !strings.Contains(stderr, tc.wantStderr) {
				t.Errorf("coffer %q stderr = %q, want it to contain %q", tc.args, stderr, tc.wantStderr)
			}
		})
	}
}

func TestAdminGC(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, stdout, stderr := runCLI(t, nil, "admin", "gc", "--offline", "--storage-path", dir, "--json")
	if code != 0 {
		t.Fatalf("admin gc on an empty dir: exit %d\nstderr: %s", code, stderr)
	}
	var res gcResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("admin gc --json output %q: %v", stdout, err)
	}
	if res.StoragePath != dir || res.GraceSeconds != 3600 || res.Deleted != 0 {
		t.Errorf("admin gc --json = %+v, want storage %s, grace 3600s, nothing deleted", res, dir)
	}

	// The storage path may come from the environment, and text output is
	// the default.
	code, stdout, stderr = runCLI(t, map[string]string{"COFFER_STORAGE_PATH": dir}, "admin", "gc", "--offline", "--grace", "1m")
	if code != 0 || !strings.Contains(stdout, "gc of "+dir+" (grace 1m0s): scanned 0 blobs, deleted 0") {
		t.Errorf("admin gc with COFFER_STORAGE_PATH: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}

	// Without --grace the pass keeps what the configuration's gc-grace
	// keeps, as the server's own passes do.
	code, stdout, stderr = runCLI(t, map[string]string{"COFFER_STORAGE_PATH": dir, "COFFER_GC_GRACE": "10m"}, "admin", "gc", "--offline")
	if code != 0 || !strings.Contains(stdout, "(grace 10m0s)") {
		t.Errorf("admin gc with COFFER_GC_GRACE=10m: exit %d, stdout %q, stderr %q; want grace 10m0s", code, stdout, stderr)
	}

	code, _, stderr = runCLI(t, nil, "admin", "gc", "--offline", "--storage-path", filepath.Join(dir, "missing"))
	if code != 1 || !strings.Contains(stderr, "storage path") {
		t.Errorf("admin gc on a missing dir: exit %d, stderr %q; want 1 and a clear error", code, stderr)
	}
}

// TestServe starts the server, waits for it to listen, and stops it with
// the context, as SIGTERM does.
func TestServe(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--address", "127.0.0.1:0", "--console-address", "127.0.0.1:0", "--storage-path", dir}, &out, &errb, func(string) string { return "" })
	}()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(errb.String(), "serving S3") {
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", errb.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("serve exit code = %d after cancel, want 0\n%s", code, errb.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
	if !strings.Contains(out.String(), "Secret access key:") {
		t.Errorf("first serve did not print generated credentials; stdout %q", out.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "root-credentials")); err != nil {
		t.Error(err)
	}
}
