package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coffer-s3/coffer/internal/config"
	"github.com/coffer-s3/coffer/internal/loadgen"
	"github.com/coffer-s3/coffer/internal/server"
	"github.com/coffer-s3/coffer/internal/sigv4"
)

const (
	benchAK = "BENCHROOTKEY"
	benchSK = "bench-root-secret"
)

// startCoffer runs an in-process Coffer on 127.0.0.1:0 until the test ends
// and returns its endpoint.
func startCoffer(t *testing.T, extra ...string) string {
	s := startServer(t, extra...)
	return "http://" + s.Addr()
}

// startServer runs an in-process Coffer on 127.0.0.1:0, with extra flags,
// until the test ends.
func startServer(t *testing.T, extra ...string) *server.Server {
	t.Helper()
	args := append([]string{"--storage-path", t.TempDir(), "--address", "127.0.0.1:0", "--console-address", "127.0.0.1:0", "--gc-interval", "0"}, extra...)
	env := map[string]string{"COFFER_ROOT_ACCESS_KEY": benchAK, "COFFER_ROOT_SECRET_KEY": benchSK}
	cfg, err := config.Load(args, func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("config.Load: %v", err)
	}
	logs := &syncBuffer{}
	s, err := server.New(cfg, slog.New(slog.NewTextHandler(logs, nil)), io.Discard)
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("server Run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("server did not stop within 30s")
		}
		if t.Failed() {
			t.Logf("server log:\n%s", logs.String())
		}
	})
	return s
}

// countingProxy forwards to endpoint and counts requests by method and by
// whether they address an object (/bucket/key) or not.
type countingProxy struct {
	mu     sync.Mutex
	counts map[string]int // "GET object", "DELETE bucket", …
}

func newCountingProxy(t *testing.T, endpoint string) (*countingProxy, string) {
	t.Helper()
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	t.Cleanup(tr.CloseIdleConnections)
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.Host = pr.In.Host // the host the client signed
		},
		Transport: tr,
	}
	p := &countingProxy{counts: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kind := "bucket"
		if _, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/"); key != "" {
			kind = "object"
		}
		p.mu.Lock()
		p.counts[r.Method+" "+kind]++
		p.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return p, srv.URL
}

// listBuckets returns the ListBuckets response body of endpoint.
func listBuckets(t *testing.T, endpoint string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, endpoint+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	sigv4.SignRequest(req, sigv4.Credentials{AccessKeyID: benchAK, SecretKey: benchSK}, "us-east-1", time.Now(), "UNSIGNED-PAYLOAD")
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("ListBuckets: %s: %s", resp.Status, body)
	}
	return string(body)
}

func TestBenchMixedEndToEnd(t *testing.T) {
	t.Parallel()
	endpoint := startCoffer(t)
	proxy, proxyURL := newCountingProxy(t, endpoint)
	out := filepath.Join(t.TempDir(), "run")
	code, stdout, stderr := runCLI(t, nil, "bench", "mixed", "--target", "coffer="+proxyURL,
		"--access-key", benchAK, "--secret-key", benchSK, "--duration", "2s", "--objects", "200",
		"--workers", "4", "--size", "8KiB", "--out", out, "--gobench")
	if code != 0 {
		t.Fatalf("coffer bench mixed: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	res, err := loadgen.ReadJSON(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatalf("read results: %v", err)
	}
	if len(res.Targets) != 1 || res.Targets[0].Name != "coffer" {
		t.Fatalf("results for targets %+v, want coffer alone", res.Targets)
	}
	ops := map[string]int64{}
	for _, o := range res.Targets[0].Ops {
		ops[o.Op] = o.Ops
		if o.Errors != 0 || o.Ops == 0 {
			t.Errorf("%s: %d ops, %d errors %v; want some ops and no errors", o.Op, o.Ops, o.Errors, o.ErrorCodes)
		}
	}
	// What the server saw matches the generator's counts exactly: the
	// bucket, 200 prepared objects, the measured operations, and in cleanup
	// one DELETE per object left plus the bucket.
	const objects = 200
	live := objects + ops["PUT"] - ops["DELETE"]
	want := map[string]int{
		"PUT bucket":    1,
		"PUT object":    int(objects + ops["PUT"]),
		"GET object":    int(ops["GET"]),
		"HEAD object":   int(ops["STAT"]),
		"DELETE object": int(ops["DELETE"] + live),
		"DELETE bucket": 1,
		"GET bucket":    int(max(1, (live+999)/1000)), // listings of up to 1000 keys
	}
	proxy.mu.Lock()
	got := proxy.counts
	proxy.mu.Unlock()
	for k, n := range want {
		if got[k] != n {
			t.Errorf("server saw %d %q requests, want %d (generator: %v; server: %v)", got[k], k, n, ops, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("server saw request kinds %v, want only %v", got, want)
	}
	if b := listBuckets(t, endpoint); strings.Contains(b, "coffer-bench-") {
		t.Errorf("benchmark bucket left behind: %s", b)
	}
	for _, re := range []string{
		`(?m)^\| 1 \| coffer \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ ms \| [0-9.]+ ms \| 1\.00× \|$`,
		`(?m)^BenchmarkMixed/target=coffer/op=GET\t[0-9]+\t[0-9]+ ns/op\t[0-9.]+ MB/s$`,
		`(?m)^BenchmarkMixed/target=coffer/op=STAT\t[0-9]+\t[0-9]+ ns/op$`,
		`Results written to ` + regexp.QuoteMeta(out),
	} {
		if !regexp.MustCompile(re).MatchString(stdout) {
			t.Errorf("stdout does not match %s:\n%s", re, stdout)
		}
	}
	for _, f := range []string{"report.md", "get.svg", "put.svg", "delete.svg", "stat.svg"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("report file: %v", err)
		}
	}

	// The saved run re-renders, also merged with itself.
	code, stdout, stderr = runCLI(t, nil, "bench", "report", "--baseline", "coffer", out, filepath.Join(out, "results.json"))
	if code != 0 || !strings.Contains(stdout, "| 2 | coffer#2 |") && !strings.Contains(stdout, "| 1 | coffer#2 |") {
		t.Errorf("coffer bench report: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
}

func TestBenchSingleOps(t *testing.T) {
	t.Parallel()
	endpoint := startCoffer(t)
	env := map[string]string{"COFFER_ACCESS_KEY": benchAK, "COFFER_SECRET_KEY": benchSK}
	for _, op := range []string{"get", "put", "stat", "delete", "list", "presigned-get", "bad-signature", "multipart"} {
		t.Run(op, func(t *testing.T) {
			t.Parallel()
			objects, size := "40", "1KiB"
			if op == "multipart" {
				objects, size = "2", "11MiB" // two parts of 5.5 MiB
			}
			code, stdout, stderr := runCLI(t, env, "bench", op, "--target", "coffer="+endpoint,
				"--duration", "1s", "--objects", objects, "--workers", "2", "--size", size, "--gobench")
			want := regexp.MustCompile(`(?m)^Benchmark` + strings.ToUpper(op[:1]) + op[1:] + `/target=coffer/op=` + strings.ToUpper(op) + `\t[0-9]+\t`)
			if code != 0 || !want.MatchString(stdout) || strings.Contains(stdout, "errors |\n|---|---|---:|---:|---:|---:|---|\n| coffer | "+strings.ToUpper(op)+" | 0 |") {
				t.Errorf("coffer bench %s: exit %d\nstdout: %s\nstderr: %s", op, code, stdout, stderr)
			}
			if regexp.MustCompile(`\| [1-9][0-9]* \(`).MatchString(stdout) {
				t.Errorf("coffer bench %s reported errors:\n%s", op, stdout)
			}
		})
	}
}

// TestBenchCases runs every case of coffer bench cases for about a second
// against an in-process Coffer: the small ones with two workers, the large
// ones (64 MiB objects, a 256 MiB multipart upload) with one, so that under
// -race each still completes an operation or two.
func TestBenchCases(t *testing.T) {
	for _, tc := range []struct{ name, cases, workers string }{
		{"small", "put-1KiB,get-1KiB,put-1MiB,get-1MiB,head,list-1000,delete,presigned-get,bad-signature", "2"},
		{"large", "put-64MiB,get-64MiB,multipart-256MiB", "1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			testBenchCases(t, tc.cases, tc.workers)
		})
	}
}

func testBenchCases(t *testing.T, cases, workers string) {
	endpoint := startCoffer(t)
	out := t.TempDir()
	code, stdout, stderr := runCLI(t, nil, "bench", "cases", "--target", "coffer="+endpoint,
		"--access-key", benchAK, "--secret-key", benchSK, "--duration", "1s", "--workers", workers, "--cases", cases, "--out", out,
		"--settle", "50ms")
	if code != 0 {
		t.Fatalf("coffer bench cases: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	res, err := loadgen.ReadJSON(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Config.SettleSeconds != 0.05 || !strings.Contains(stdout, "started 0.05s after the previous one's clean-up (--settle)") {
		t.Errorf("settle %gs in the results, report:\n%s\nwant 0.05s in both", res.Config.SettleSeconds, stdout)
	}
	seen := map[string]bool{}
	for _, o := range res.Targets[0].Ops {
		seen[o.Op] = true
		if o.Ops == 0 || o.Errors != 0 {
			t.Errorf("%s: %d ops, %d errors %v; want some ops and no errors", o.Op, o.Ops, o.Errors, o.ErrorCodes)
		}
	}
	for _, c := range strings.Split(cases, ",") {
		if !seen[c] {
			t.Errorf("case %s missing from the results (have %v)", c, seen)
		}
		if !strings.Contains(stdout, "\n## "+c+"\n") {
			t.Errorf("case %s has no ranking table:\n%s", c, stdout)
		}
	}
	if b := listBuckets(t, endpoint); strings.Contains(b, "coffer-bench-") {
		t.Errorf("benchmark bucket left behind: %s", b)
	}
	// An unknown case is a usage error, found before any request.
	proxy, proxyURL := newCountingProxy(t, endpoint)
	code, _, stderr = runCLI(t, nil, "bench", "cases", "--target", "coffer="+proxyURL,
		"--access-key", benchAK, "--secret-key", benchSK, "--cases", "head,put-2KiB")
	if code != 2 || !strings.Contains(stderr, `unknown case "put-2KiB"; cases are: put-1KiB, put-1MiB, put-10MiB, put-64MiB, get-1KiB,`) {
		t.Errorf("unknown case: exit %d, stderr %q; want exit 2 and the list of cases", code, stderr)
	}
	proxy.mu.Lock()
	n := len(proxy.counts)
	proxy.mu.Unlock()
	if n != 0 {
		t.Errorf("an unknown case sent requests: %v", proxy.counts)
	}
}

// TestBenchCasesPartialFailure checks that a failing case is reported, on
// stderr and in the report, while the results of the others are kept.
func TestBenchCasesPartialFailure(t *testing.T) {
	t.Parallel()
	endpoint := startCoffer(t)
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	// A proxy that fails every HEAD: the head case cannot succeed.
	rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(u)
		pr.Out.Host = pr.In.Host
	}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	out := t.TempDir()
	code, stdout, stderr := runCLI(t, nil, "bench", "cases", "--target", "coffer="+srv.URL,
		"--access-key", benchAK, "--secret-key", benchSK, "--duration", "1s", "--workers", "2",
		"--cases", "put-1KiB,head,list-1000", "--out", out)
	if code != 1 || !strings.Contains(stderr, "coffer bench cases: case head: target coffer ("+srv.URL+"): more than half of the requests failed: STAT/ServiceUnavailable") {
		t.Fatalf("exit %d, stderr %q; want exit 1 and the head case's error", code, stderr)
	}
	for _, want := range []string{"\n## Failed cases\n", "- **head**: target coffer (", "\n## put-1KiB\n", "\n## list-1000\n"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, stdout)
		}
	}
	res, err := loadgen.ReadJSON(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Failed) != 1 || res.Failed[0].Case != "head" || strings.Join(res.Config.Cases, ",") != "put-1KiB,list-1000" {
		t.Errorf("results: failed %+v, cases %v; want head failed, put-1KiB and list-1000 kept", res.Failed, res.Config.Cases)
	}
	if b := listBuckets(t, endpoint); strings.Contains(b, "coffer-bench-") {
		t.Errorf("benchmark bucket left behind: %s", b)
	}
}

func TestBenchProfile(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--pprof", "--pprof-port", "0")
	out := t.TempDir()
	code, stdout, stderr := runCLI(t, nil, "bench", "get", "--target", "coffer=http://"+s.Addr(),
		"--access-key", benchAK, "--secret-key", benchSK, "--duration", "1s", "--objects", "10", "--workers", "2",
		"--profile", "--pprof", "http://"+s.PprofAddr(), "--out", out)
	if code != 0 || !strings.Contains(stdout, "go tool pprof -http=: "+filepath.Join(out, "cpu.pprof")) {
		t.Fatalf("coffer bench get --profile: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	for _, name := range []string{"cpu.pprof", "allocs.pprof", "heap.pprof", "goroutine.pprof", "profile-top.txt"} {
		if st, err := os.Stat(filepath.Join(out, name)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v, want a non-empty file", name, err)
		}
	}
	// The top functions of both profiles are printed and saved. The server
	// runs in this process, so its handlers are among the allocators.
	for _, re := range []string{
		`(?m)^CPU \(` + regexp.QuoteMeta(filepath.Join(out, "cpu.pprof")) + `\): [0-9.]+s cpu in [0-9.]+s \([0-9]+% of one core\)\n +flat +flat% +cum +cum% +function\n +[0-9.]+s +[0-9.]+% +[0-9.]+s +[0-9.]+% +\S+\n`,
		`(?m)^Allocations \(` + regexp.QuoteMeta(filepath.Join(out, "allocs.pprof")) + `\): [0-9.]+[KMG]?i?B alloc_space in [0-9.]+s\n +flat +flat% +cum +cum% +function\n`,
		`(?m)%  github\.com/coffer-s3/coffer/internal/\S+$`,
	} {
		if !regexp.MustCompile(re).MatchString(stdout) {
			t.Errorf("stdout does not match %s:\n%s", re, stdout)
		}
	}
	if saved, err := os.ReadFile(filepath.Join(out, "profile-top.txt")); err != nil || !strings.Contains(stdout, string(saved)) {
		t.Errorf("profile-top.txt (%v) is not what was printed:\n%s", err, saved)
	}
	// Each case of a cases run is profiled on its own.
	out = t.TempDir()
	code, stdout, stderr = runCLI(t, nil, "bench", "cases", "--target", "coffer=http://"+s.Addr(),
		"--access-key", benchAK, "--secret-key", benchSK, "--duration", "1s", "--workers", "2", "--cases", "head,list-1000",
		"--profile", "--pprof", "http://"+s.PprofAddr(), "--out", out)
	if code != 0 {
		t.Fatalf("coffer bench cases --profile: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	for _, c := range []string{"head", "list-1000"} {
		for _, name := range []string{"cpu.pprof", "allocs.pprof", "heap.pprof", "goroutine.pprof", "profile-top.txt"} {
			if st, err := os.Stat(filepath.Join(out, c, name)); err != nil || st.Size() == 0 {
				t.Errorf("case %s: %s: %v, want a non-empty file", c, name, err)
			}
		}
		if !strings.Contains(stdout, "\nProfiles of case "+c+":\n\nCPU ("+filepath.Join(out, c, "cpu.pprof")+"): ") {
			t.Errorf("no CPU top for case %s:\n%s", c, stdout)
		}
	}

	// Without pprof on, the run fails before any work rather than
	// silently profiling nothing.
	code, stdout, stderr = runCLI(t, nil, "bench", "get", "--target", "coffer=http://"+s.Addr(),
		"--access-key", benchAK, "--secret-key", benchSK, "--duration", "1s", "--objects", "10", "--workers", "2",
		"--profile", "--pprof", "http://"+s.Addr(), "--out", t.TempDir())
	if code != 1 || !strings.Contains(stderr, "profile pprof index: GET http://"+s.Addr()+"/debug/pprof/: ") {
		t.Errorf("--profile against the S3 port: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--profile"}, "--profile needs --out"},
		{[]string{"--profile", "--out", t.TempDir(), "--profile-target", "d"}, `--profile-target "d" is not one of the targets`},
		{[]string{"--profile-target", "c"}, "--profile-target needs --profile"},
	} {
		args := append([]string{"bench", "get", "--target", "c=http://x", "--access-key", "a", "--secret-key", "b"}, tc.args...)
		code, _, stderr = runCLI(t, nil, args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

func TestBenchTargetsFile(t *testing.T) {
	t.Parallel()
	endpoint := startCoffer(t)
	// One target with credentials of its own (wrong ones), one using the
	// flags' (right ones): the run fails on the first, by name.
	file := filepath.Join(t.TempDir(), "targets.toml")
	toml := "[[target]]\nname = \"own\"\nurl = \"" + endpoint + "\"\naccess_key = \"" + benchAK + "\"\nsecret_key = \"wrong\"\n"
	if err := os.WriteFile(file, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, nil, "bench", "get", "--targets", file, "--target", "flags="+endpoint,
		"--access-key", benchAK, "--secret-key", benchSK, "--duration", "1s", "--objects", "4", "--workers", "2")
	if code != 1 || !strings.Contains(stderr, "target own ("+endpoint+"): create bucket: SignatureDoesNotMatch") {
		t.Errorf("exit %d\nstdout: %s\nstderr: %s\nwant target own to fail with SignatureDoesNotMatch", code, stdout, stderr)
	}
	toml = strings.ReplaceAll(toml, "wrong", benchSK)
	if err := os.WriteFile(file, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runCLI(t, nil, "bench", "get", "--targets", file, "--target", "flags="+endpoint,
		"--access-key", benchAK, "--secret-key", benchSK, "--duration", "1s", "--objects", "4", "--workers", "2")
	if code != 0 || !strings.Contains(stdout, "| own |") || !strings.Contains(stdout, "| flags |") {
		t.Errorf("exit %d\nstdout: %s\nstderr: %s\nwant both targets in the report", code, stdout, stderr)
	}
}

// TestBenchTargetsFileMode: a --targets file that holds a secret key or a
// console password and that group or others may read is used, with a
// warning on stderr naming it, its mode and the fix; a private one, or
// one without secrets, gets none. No output holds the secret.
func TestBenchTargetsFileMode(t *testing.T) {
	t.Parallel()
	const secret = "SECRET-NEVER-PRINTED"
	withKey := "[[target]]\nname = \"minio\"\nurl = \"http://127.0.0.1:1\"\naccess_key = \"ak\"\nsecret_key = \"" + secret + "\"\n"
	withPassword := "[[target]]\nname = \"coffer\"\nurl = \"http://127.0.0.1:1\"\nconsole_url = \"http://127.0.0.1:2\"\nconsole_user = \"alice\"\nconsole_password = \"" + secret + "\"\n"
	noSecret := "[[target]]\nname = \"coffer\"\nurl = \"http://127.0.0.1:1\"\n"
	for _, tc := range []struct {
		name     string
		content  string
		mode     os.FileMode
		wantWarn bool
	}{
		{name: "secret key, world-readable", content: withKey, mode: 0o644, wantWarn: true},
		{name: "secret key, group-readable", content: withKey, mode: 0o640, wantWarn: true},
		{name: "console password, world-readable", content: withPassword, mode: 0o604, wantWarn: true},
		{name: "secret key, private", content: withKey, mode: 0o600},
		{name: "secret key, read-only", content: withKey, mode: 0o400},
		{name: "no secret, world-readable", content: noSecret, mode: 0o644},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			file := writeFile(t, "targets.toml", tc.content)
			if err := os.Chmod(file, tc.mode); err != nil { // whatever the umask
				t.Fatal(err)
			}
			// An unknown --baseline ends the run after the targets are
			// read, before any request.
			env := map[string]string{"COFFER_ACCESS_KEY": "ak", "COFFER_SECRET_KEY": "sk"}
			code, stdout, stderr := runCLI(t, env, "bench", "get", "--targets", file, "--baseline", "nosuch")
			if code != 2 || !strings.Contains(stderr, `--baseline "nosuch" is not one of the targets`) {
				t.Fatalf("exit %d, stderr %q; want exit 2 for the baseline", code, stderr)
			}
			want := fmt.Sprintf("coffer bench get: warning: --targets %s has mode %#o, open to group or others, and it holds secret keys or passwords: run chmod 600 %s\n", file, tc.mode, file)
			if got := strings.Contains(stderr, want); got != tc.wantWarn {
				t.Errorf("warned %v, want %v; stderr:\n%s", got, tc.wantWarn, stderr)
			}
			if !tc.wantWarn && strings.Contains(stderr, "warning") {
				t.Errorf("unexpected warning:\n%s", stderr)
			}
			if strings.Contains(stdout+stderr, secret) {
				t.Errorf("the secret appears in the output")
			}
		})
	}
}

func TestBenchMixedFailures(t *testing.T) {
	t.Parallel()
	endpoint := startCoffer(t)
	// Port 1 (tcpmux): nothing listens there, and unlike a port freed by a
	// closed test server, no other test can be given it meanwhile.
	const closedURL = "http://127.0.0.1:1"
	wrongSecretFile := writeFile(t, "wrong-secret", "wrong-secret\n")
	openSecretFile := writeFile(t, "open-secret", benchSK+"\n")
	if err := os.Chmod(openSecretFile, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		env        map[string]string
		args       []string
		wantCode   int
		wantStderr string
	}{
		{"wrong secret from env", map[string]string{"COFFER_ACCESS_KEY": benchAK, "COFFER_SECRET_KEY": "wrong"},
			[]string{"--target", "c=" + endpoint}, 1, "target c (" + endpoint + "): create bucket: SignatureDoesNotMatch (HTTP 403)"},
		{"unknown key", nil, []string{"--target", "c=" + endpoint, "--access-key", "NOSUCHKEY", "--secret-key", "x"},
			1, "create bucket: InvalidAccessKeyId (HTTP 403)"},
		{"unreachable", nil, []string{"--target", "gone=" + closedURL, "--access-key", "a", "--secret-key", "b"},
			1, "target gone (" + closedURL + "): create bucket: ConnectionError: cannot connect"},
		{"wrong secret from a file", map[string]string{"COFFER_SECRET_KEY": benchSK}, []string{"--target", "c=" + endpoint, "--access-key", benchAK, "--secret-key-file", wrongSecretFile},
			1, "create bucket: SignatureDoesNotMatch (HTTP 403)"},
		{"secret key flag warns", nil, []string{"--target", "c=" + endpoint, "--access-key", "NOSUCHKEY", "--secret-key", "x"},
			1, "coffer bench mixed: warning: --secret-key shows the secret key to every user of this machine"},
		{"open secret key file", nil, []string{"--target", "c=" + endpoint, "--access-key", benchAK, "--secret-key-file", openSecretFile},
			2, "--secret-key-file " + openSecretFile + " has mode 0644, open to group or others: refusing to use it"},
		{"no target", nil, []string{"--access-key", "a", "--secret-key", "b"}, 2, "no target: give --target NAME=URL"},
		{"no credentials", nil, []string{"--target", "c=" + endpoint}, 2, "no credentials for target c"},
		{"missing targets file", nil, []string{"--targets", "/nonexistent.toml"}, 2, "targets file"},
		{"bad target", nil, []string{"--target", endpoint}, 2, "want NAME=URL"},
		{"bad size", nil, []string{"--size", "big"}, 2, `invalid size "big"`},
		{"bad baseline", nil, []string{"--target", "c=" + endpoint, "--access-key", "a", "--secret-key", "b", "--baseline", "d"}, 2, `--baseline "d" is not one of the targets`},
		{"bad rounds", nil, []string{"--target", "c=" + endpoint, "--access-key", "a", "--secret-key", "b", "--rounds", "0"}, 1, "rounds must be at least 1"},
		{"extra argument", nil, []string{"--target", "c=" + endpoint, "x"}, 2, `unexpected argument "x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"bench", "mixed", "--duration", "2s", "--objects", "10"}, tc.args...)
			code, stdout, stderr := runCLI(t, tc.env, args...)
			if code != tc.wantCode || !strings.Contains(stderr, tc.wantStderr) {
				t.Errorf("exit %d, stderr %q; want exit %d and stderr containing %q", code, stderr, tc.wantCode, tc.wantStderr)
			}
			if strings.Contains(stdout, "| Rank |") {
				t.Errorf("a failed run printed a report:\n%s", stdout)
			}
		})
	}
	if b := listBuckets(t, endpoint); strings.Contains(b, "coffer-bench-") {
		t.Errorf("benchmark bucket left behind: %s", b)
	}
}

func TestBenchSys(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runCLI(t, nil, "bench", "sys", "--dir", t.TempDir(), "--duration", "100ms", "--size", "2MiB")
	if code != 0 || !regexp.MustCompile(`(?m)^\| 4 KiB write \+ fsync \| [0-9.]+ ops/s \|`).MatchString(stdout) {
		t.Errorf("coffer bench sys: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
}

func TestBenchUsage(t *testing.T) {
	t.Parallel()
	const secret = "SECRET-NEVER-PRINTED"
	for _, tc := range []struct {
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{[]string{"bench", "-h"}, 0, "mixed", ""},
		{[]string{"bench", "frob"}, 2, "", `unknown workload "frob"`},
		{[]string{"bench", "mixed", "-h"}, 0, "-target", ""},
		{[]string{"bench", "get", "-h"}, 0, "default $COFFER_SECRET_KEY", ""},
		{[]string{"bench", "cases", "--help"}, 0, "default $COFFER_SECRET_KEY", ""},
		{[]string{"bench", "report", "-h"}, 0, "DIR|FILE", ""},
		{[]string{"bench", "report"}, 2, "", "no results given"},
		{[]string{"bench", "sys", "--dir", "/nonexistent", "--duration", "10ms", "--size", "1MiB"}, 1, "", "coffer bench sys: "},
		{[]string{"bench", "sys", "--size", "x"}, 2, "", `invalid size "x"`},
		{[]string{"bench", "sys", "-h"}, 0, "-dir", ""},
		// Sizes parse as everywhere else in coffer (internal/bytesize):
		// binary units only, never a guess between 10^6 and 2^20.
		{[]string{"bench", "mixed", "--size", "8MB"}, 2, "", `unknown unit "MB"`},
		{[]string{"bench", "put", "--size", "2TiB"}, 2, "", "larger than 1TiB"},
		{[]string{"bench", "report", "/nonexistent/results.json"}, 1, "", "no such file"},
		{[]string{"bench", "cases", "-h"}, 0, "-settle", ""},
		{[]string{"bench", "cases", "--settle", "-1s"}, 2, "", "--settle: negative duration -1s"},
		{[]string{"bench", "mixed", "--settle", "1s"}, 2, "", "flag provided but not defined: -settle"},
		// A URL's password is never printed either.
		{[]string{"bench", "mixed", "--target", "c=https://AK:" + secret + "@s3.example.com"}, 2, "",
			`--target: target "c": URL must be http(s)://host[:port], without credentials`},
		{[]string{"bench", "mixed", "--target", "ftp://AK:" + secret + "@s3.example.com"}, 2, "", "--target: target: want NAME=URL"},
		{[]string{"bench", "mixed", "--target", "c=https://AK:" + secret + "@s3.example.com/%zz"}, 2, "", `target "c": URL must be`},
	} {
		// Credentials in the environment, as an operator has them: no
		// help text or error shows the secret.
		env := map[string]string{"COFFER_ACCESS_KEY": "AK", "COFFER_SECRET_KEY": secret}
		code, stdout, stderr := runCLI(t, env, tc.args...)
		if code != tc.wantCode || !strings.Contains(stdout, tc.wantStdout) || !strings.Contains(stderr, tc.wantStderr) {
			t.Errorf("coffer %q: exit %d, stdout %q, stderr %q; want %d, %q, %q", tc.args, code, stdout, stderr, tc.wantCode, tc.wantStdout, tc.wantStderr)
		}
		if strings.Contains(stdout+stderr, secret) {
			t.Errorf("coffer %q printed a secret: %s%s", tc.args, stdout, stderr)
		}
	}
}
