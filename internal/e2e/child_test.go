package e2e

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// cofferBin is the coffer binary, built once per test process by
// cofferBinary: the only mutable package state, because building it per test
// would cost a go build each time.
var cofferBin struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// cofferBinary builds ./cmd/coffer into a temporary directory on first use
// and returns its path.
func cofferBinary(t *testing.T) string {
	t.Helper()
	cofferBin.once.Do(func() {
		dir, err := os.MkdirTemp("", "coffer-e2e-bin-")
		if err != nil {
			cofferBin.err = err
			return
		}
		cofferBin.dir = dir
		cofferBin.path = filepath.Join(dir, "coffer")
		// The static build, as released (README): Pebble's caches then live
		// on the Go heap, so the memory tests hold that build to its bounds.
		cmd := exec.Command("go", "build", "-o", cofferBin.path, "github.com/coffer-s3/coffer/cmd/coffer")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			cofferBin.err = fmt.Errorf("go build ./cmd/coffer: %v\n%s", err, out)
		}
	})
	if cofferBin.err != nil {
		t.Fatal(cofferBin.err)
	}
	return cofferBin.path
}

// cleanupBinary removes the built binary; TestMain calls it.
func cleanupBinary() {
	if cofferBin.dir != "" {
		os.RemoveAll(cofferBin.dir)
	}
}

// child is a `coffer serve` process.
type child struct {
	t        *testing.T
	dir      string // storage path
	addr     string
	endpoint string
	cmd      *exec.Cmd
	out      *syncBuffer
	done     chan struct{} // closed when the process has exited
	waitErr  error         // valid after done is closed
	args     []string      // of the process, for restart
	env      []string
}

// A child is an s3Target: the real-client tests run against one.
func (c *child) client(t *testing.T, opts ...func(*s3.Options)) *s3.Client {
	return newClient(t, c.endpoint, opts...)
}

func (c *child) rawEndpoint() (string, *http.Client) { return c.endpoint, newHTTPClient() }
func (c *child) dialAddr() string                    { return c.addr }
func (c *child) url(*testing.T) string               { return c.endpoint }
func (c *child) propagation() time.Duration          { return 0 }

// childEnv returns a minimal environment for child processes: no user
// configuration leaks in.
func childEnv(home string, extra ...string) []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"LANG=C.UTF-8",
		"LC_ALL=C.UTF-8",
		"TMPDIR=" + os.TempDir(),
	}
	return append(env, extra...)
}

// freeAddr returns a 127.0.0.1 address with a port that was free a moment
// ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startChild starts `coffer serve` over dir on a free port with the test
// credentials in its environment and waits until it answers HTTP. It is
// killed (by PID) when the test ends if it is still running.
func startChild(t *testing.T, dir string, extra ...string) *child {
	t.Helper()
	return startChildEnv(t, dir, nil, extra...)
}

// startChildEnv is startChild with more environment variables
// ("NAME=value"), for what only the environment sets: secrets, the
// PostgreSQL URL, the master key.
func startChildEnv(t *testing.T, dir string, env []string, extra ...string) *child {
	t.Helper()
	bin := cofferBinary(t)
	var lastOut string
	for attempt := 0; attempt < 5; attempt++ {
		addr := freeAddr(t)
		args := append([]string{"serve", "--storage-path", dir, "--address", addr, "--console-address", "127.0.0.1:0"}, extra...)
		c := launchChild(t, bin, dir, addr, args, env)
		if c.waitReady() {
			return c
		}
		c.kill()
		lastOut = c.out.String()
		if !strings.Contains(lastOut, "address already in use") {
			break
		}
	}
	t.Fatalf("coffer serve did not come up; output:\n%s", tail(lastOut, 16*kib))
	return nil
}

// launchChild starts the coffer binary bin with args (serving dir on
// addr) and the test credentials plus env in its environment. The process
// is killed (by PID) when the test ends if it is still running.
func launchChild(t *testing.T, bin, dir, addr string, args, env []string) *child {
	t.Helper()
	c := &child{t: t, dir: dir, addr: addr, endpoint: "http://" + addr, out: &syncBuffer{}, done: make(chan struct{}), args: args, env: env}
	c.cmd = exec.Command(bin, args...)
	c.cmd.Env = childEnv(t.TempDir(), append([]string{
		"COFFER_ROOT_ACCESS_KEY=" + testAccessKey,
		"COFFER_ROOT_SECRET_KEY=" + testSecretKey}, env...)...)
	c.cmd.Stdout, c.cmd.Stderr = c.out, c.out
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("start %s %q: %v", bin, args, err)
	}
	go func() {
		c.waitErr = c.cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() {
		c.kill()
		if t.Failed() {
			t.Logf("coffer serve on %s output (tail):\n%s", c.addr, tail(c.out.String(), 16*kib))
		}
	})
	return c
}

// restart starts c's command again, on the same address and storage path,
// after c has exited, and waits until it answers HTTP.
func (c *child) restart() *child {
	c.t.Helper()
	<-c.done
	n := launchChild(c.t, c.cmd.Path, c.dir, c.addr, c.args, c.env)
	if !n.waitReady() {
		c.t.Fatalf("coffer serve did not come back on %s; output:\n%s", c.addr, tail(n.out.String(), 16*kib))
	}
	return n
}

// waitReady polls until the server answers any HTTP response, for at most
// 30 s, and reports whether it did.
func (c *child) waitReady() bool {
	hc := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-c.done:
			return false
		default:
		}
		resp, err := hc.Get(c.endpoint + "/")
		if err == nil {
			resp.Body.Close()
			return true
		}
		time.Sleep(25 * time.Millisecond)
	}
	return false
}

// kill sends SIGKILL to the process (by PID) and waits for it to exit.
func (c *child) kill() {
	select {
	case <-c.done:
		return
	default:
	}
	if err := syscall.Kill(c.cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		c.t.Errorf("kill %d: %v", c.cmd.Process.Pid, err)
	}
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		c.t.Errorf("process %d did not exit 10s after SIGKILL", c.cmd.Process.Pid)
	}
}

// stop sends SIGTERM and expects a clean exit (status 0) within 30 s.
func (c *child) stop() {
	c.t.Helper()
	if err := syscall.Kill(c.cmd.Process.Pid, syscall.SIGTERM); err != nil {
		c.t.Fatalf("SIGTERM %d: %v", c.cmd.Process.Pid, err)
	}
	select {
	case <-c.done:
		if c.waitErr != nil {
			c.t.Errorf("coffer serve exited with %v after SIGTERM, want status 0; output:\n%s", c.waitErr, tail(c.out.String(), 8*kib))
		}
	case <-time.After(30 * time.Second):
		c.t.Errorf("coffer serve did not exit within 30s of SIGTERM")
		c.kill()
	}
}

// runCoffer runs the coffer binary with args to completion and returns its
// combined output.
func runCoffer(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, cofferBinary(t), args...)
	cmd.Env = childEnv(t.TempDir())
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// runCofferStdout is runCoffer for a command whose standard output is
// parsed (--json): it returns that alone; warnings on standard error (a
// storage path open to others, say) are in err when the command fails.
func runCofferStdout(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, cofferBinary(t), args...)
	cmd.Env = childEnv(t.TempDir())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		err = fmt.Errorf("%w: %s", err, stderr.String())
	}
	return string(out), err
}

// blockFiles counts the block files of the storage path dir: the regular
// files under <dir>/blobs/b (objects.BlockPrefix), where the object
// service keeps every block; not blobs/.tmp, the lock or the claim.
func blockFiles(t *testing.T, dir string) int {
	t.Helper()
	root := filepath.Join(dir, "blobs", "b")
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			n++
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("walk %s: %v", root, err)
	}
	return n
}
