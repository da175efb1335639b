package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// mcBinary returns the MinIO client to test with: $COFFER_E2E_MC, or "mc"
// on PATH if it is MinIO's (Debian's "mc" is Midnight Commander). It skips
// the test when there is none, or fails it under CI, which installs one.
func mcBinary(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("COFFER_E2E_MC")
	if bin == "" {
		bin = "mc"
	}
	out, err := exec.CommandContext(t.Context(), bin, "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "mc version") {
		msg := "the MinIO client (mc) is not available: set COFFER_E2E_MC or put MinIO's mc on PATH"
		if os.Getenv("CI") != "" {
			t.Fatalf("%s (%v: %s)\nCI must provide it (.ci/run installs it)", msg, err, out)
		}
		t.Skip(msg)
	}
	return bin
}

// mcJSON decodes mc's --json output: one object per line.
func mcJSON(t *testing.T, out string) []map[string]any {
	t.Helper()
	var objs []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("mc output line is not JSON: %v\n%s", err, sc.Text())
		}
		if m["status"] != "success" {
			t.Errorf("mc reported %v", m)
		}
		objs = append(objs, m)
	}
	return objs
}

// TestMC drives the MinIO client against a Coffer child process: buckets,
// single and multipart uploads, listing, stat, cat, download, mirror both
// ways, presigned share links, canned anonymous policies (mc writes bucket
// policies with Principal "*" and an s3:prefix condition) and recursive
// removal.
func TestMC(t *testing.T) {
	testMC(t, startChild(t, t.TempDir()))
}

// testMC is TestMC against ts's one endpoint. A policy that mc sets is
// awaited with ts.settle before an anonymous request relies on it.
func testMC(t *testing.T, ts s3Target) {
	bin := mcBinary(t)
	r := newToolRunner(t, childEnv(t.TempDir(), "MC_CONFIG_DIR="+filepath.Join(t.TempDir(), "mc")))
	mc := func(args ...string) string {
		t.Helper()
		return r.must(bin, append([]string{"--no-color", "--disable-pager"}, args...)...)
	}
	// An alias rather than MC_HOST_coffer: mc does not unescape a
	// percent-encoded secret in MC_HOST_*, and the test secret holds "/".
	mc("alias", "set", "coffer", ts.url(t), testAccessKey, testSecretKey, "--api", "S3v4")

	small := []byte("hello from mc\n")
	big := randBytes(20 * mib) // above mc's 16 MiB part size: a multipart upload
	writeTree(t, r.dir, map[string][]byte{
		"small.txt":           small,
		"big.bin":             big,
		"tree/a.txt":          []byte("a"),
		"tree/sub/b.txt":      []byte("bb"),
		"tree/sub/deep/c.bin": randBytes(100 * kib),
	})

	mc("mb", "coffer/mc-bucket")
	mc("cp", filepath.Join(r.dir, "small.txt"), filepath.Join(r.dir, "big.bin"), "coffer/mc-bucket/dir/")

	got := map[string]float64{}
	for _, o := range mcJSON(t, mc("ls", "--json", "--recursive", "coffer/mc-bucket")) {
		got[o["key"].(string)] = o["size"].(float64)
	}
	if got["dir/small.txt"] != float64(len(small)) || got["dir/big.bin"] != float64(len(big)) || len(got) != 2 {
		t.Errorf("mc ls --recursive = %v", got)
	}
	st := mcJSON(t, mc("stat", "--json", "coffer/mc-bucket/dir/big.bin"))
	if len(st) != 1 || st[0]["size"] != float64(len(big)) || !strings.HasSuffix(st[0]["etag"].(string), "-2") {
		t.Errorf("mc stat of the multipart object = %v; want its size and a 2-part ETag", st)
	}
	if out := mc("cat", "coffer/mc-bucket/dir/small.txt"); out != string(small) {
		t.Errorf("mc cat = %q", out)
	}
	mc("cp", "coffer/mc-bucket/dir/big.bin", filepath.Join(r.dir, "big.out"))
	if b, err := os.ReadFile(filepath.Join(r.dir, "big.out")); err != nil || !bytes.Equal(b, big) {
		t.Errorf("downloaded big.bin differs (%v)", err)
	}

	// mirror up and back down.
	mc("mirror", filepath.Join(r.dir, "tree"), "coffer/mc-bucket/tree")
	mc("mirror", "coffer/mc-bucket/tree", filepath.Join(r.dir, "back"))
	for _, f := range []string{"a.txt", "sub/b.txt", "sub/deep/c.bin"} {
		want, _ := os.ReadFile(filepath.Join(r.dir, "tree", f))
		if b, err := os.ReadFile(filepath.Join(r.dir, "back", f)); err != nil || !bytes.Equal(b, want) {
			t.Errorf("mirrored %s differs (%v)", f, err)
		}
	}

	// A presigned share link works without credentials.
	share := mcJSON(t, mc("share", "download", "--json", "--expire", "1h", "coffer/mc-bucket/dir/small.txt"))
	if len(share) != 1 {
		t.Fatalf("mc share download: %v", share)
	}
	if status, body := httpGet(t, share[0]["share"].(string)); status != http.StatusOK || body != string(small) {
		t.Errorf("GET of the share link = %d %q", status, body)
	}

	// Canned anonymous access on a prefix, and back to private.
	anon := ts.url(t) + "/mc-bucket/"
	if status, _ := httpGet(t, anon+"tree/a.txt"); status != http.StatusForbidden {
		t.Errorf("anonymous GET before any policy = %d, want 403", status)
	}
	mc("anonymous", "set", "download", "coffer/mc-bucket/tree")
	settle(ts)
	if out := mc("anonymous", "get", "coffer/mc-bucket/tree"); !strings.Contains(out, "`download`") {
		t.Errorf("mc anonymous get = %q", out)
	}
	if status, body := httpGet(t, anon+"tree/a.txt"); status != http.StatusOK || body != "a" {
		t.Errorf("anonymous GET under the public prefix = %d %q", status, body)
	}
	if status, _ := httpGet(t, anon+"dir/small.txt"); status != http.StatusForbidden {
		t.Errorf("anonymous GET outside the public prefix = %d, want 403", status)
	}
	mc("anonymous", "set", "none", "coffer/mc-bucket/tree")
	settle(ts)
	if status, _ := httpGet(t, anon+"tree/a.txt"); status != http.StatusForbidden {
		t.Errorf("anonymous GET after 'anonymous set none' = %d, want 403", status)
	}

	mc("rm", "--recursive", "--force", "coffer/mc-bucket/tree")
	if objs := mcJSON(t, mc("ls", "--json", "--recursive", "coffer/mc-bucket")); len(objs) != 2 {
		t.Errorf("after mc rm of tree/: %d objects listed, want 2", len(objs))
	}
	mc("rb", "--force", "coffer/mc-bucket")
	if out := mc("ls", "coffer"); strings.Contains(out, "mc-bucket") {
		t.Errorf("bucket still listed after mc rb --force:\n%s", out)
	}
}

// httpGet fetches u without credentials and returns the status and body.
func httpGet(t *testing.T, u string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}
