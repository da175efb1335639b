package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// requireTool skips the test when a client is missing locally, and fails it
// on CI, which installs every client (.ci/run) and must never skip.
func requireTool(t *testing.T, name string, probe ...string) {
	t.Helper()
	if len(probe) == 0 {
		probe = []string{name, "--version"}
	}
	cmd := exec.CommandContext(t.Context(), probe[0], probe[1:]...)
	cmd.Env = childEnv(t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		msg := fmt.Sprintf("%s is not available (%q: %v)\n%s", name, probe, err, out)
		if os.Getenv("CI") != "" {
			t.Fatal(msg + "\nCI must provide it (.ci/run installs it)")
		}
		t.Skip(msg)
	}
}

// toolRunner runs a client program with a fixed environment and keeps a
// transcript that is logged if the test fails.
type toolRunner struct {
	t          *testing.T
	env        []string
	dir        string
	transcript bytes.Buffer
}

func newToolRunner(t *testing.T, env []string) *toolRunner {
	r := &toolRunner{t: t, env: env, dir: t.TempDir()}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("client transcript (tail):\n%s", tail(r.transcript.String(), 24*kib))
		}
	})
	return r
}

// run runs name args and returns stdout and stderr, and the error.
func (r *toolRunner) run(name string, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(r.t.Context(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = r.env
	cmd.Dir = r.dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	fmt.Fprintf(&r.transcript, "$ %s %s  (%v, %s)\n%s%s", name, strings.Join(args, " "), err, time.Since(start).Round(time.Millisecond),
		tail(stdout.String(), 8*kib), tail(stderr.String(), 8*kib))
	return stdout.String(), stderr.String(), err
}

// must runs name args and fails the test if it exits non-zero.
func (r *toolRunner) must(name string, args ...string) string {
	r.t.Helper()
	out, errOut, err := r.run(name, args...)
	if err != nil {
		r.t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", name, strings.Join(args, " "), err, tail(out, 4*kib), tail(errOut, 4*kib))
	}
	return out
}

// mustJSON runs an aws s3api command and decodes its JSON output.
func (r *toolRunner) mustJSON(args ...string) map[string]any {
	r.t.Helper()
	out := r.must("aws", args...)
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		r.t.Fatalf("aws %s: output is not JSON: %v\n%s", strings.Join(args, " "), err, out)
	}
	return m
}

// awsEnv is the environment of the aws CLI and boto3: credentials and
// endpoint only, nothing from the user's configuration.
func awsEnv(t *testing.T, endpoint string) []string {
	return childEnv(t.TempDir(),
		"AWS_ACCESS_KEY_ID="+testAccessKey,
		"AWS_SECRET_ACCESS_KEY="+testSecretKey,
		"AWS_DEFAULT_REGION="+testRegion,
		"AWS_ENDPOINT_URL="+endpoint,
		"AWS_CONFIG_FILE=/dev/null",
		"AWS_SHARED_CREDENTIALS_FILE=/dev/null",
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_PAGER=",
	)
}

// writeTree writes files (relative path → content) under root.
func writeTree(t *testing.T, root string, files map[string][]byte) {
	t.Helper()
	for p, b := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// compareTree fails unless root holds exactly files, byte for byte.
func compareTree(t *testing.T, root string, files map[string][]byte) {
	t.Helper()
	var got []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		got = append(got, rel)
		want, ok := files[rel]
		if !ok {
			t.Errorf("unexpected file %q", rel)
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		checkBody(t, rel, b, want)
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", root, err)
	}
	if len(got) != len(files) {
		t.Errorf("%s holds %d files %q, want %d", root, len(got), got, len(files))
	}
}

func TestAWSCLI(t *testing.T) {
	requireTool(t, "aws")
	requireTool(t, "curl")
	testAWSCLI(t, startChild(t, t.TempDir()))
}

// testAWSCLI drives the aws CLI against ts's one endpoint: sync both
// ways, s3api calls and their JSON, multipart, presign fetched with curl,
// recursive removal.
func testAWSCLI(t *testing.T, ts s3Target) {
	r := newToolRunner(t, awsEnv(t, ts.url(t)))
	const b = "cli-bucket"

	files := map[string][]byte{
		"a.txt":                           []byte("alpha\n"),
		"empty.txt":                       nil,
		"nested/c.txt":                    []byte("charlie\n"),
		"nested/deep/b.bin":               randBytes(10 * kib),
		"nested/deep/deeper/d.bin":        randBytes(300 * kib),
		"dir with space/naïve café ✓.txt": []byte("unicode name\n"),
		"big.bin":                         randBytes(100 * mib),
	}
	up := filepath.Join(t.TempDir(), "up")
	writeTree(t, up, files)

	r.must("aws", "s3", "mb", "s3://"+b)
	// Not fatal, so that the rest still runs: a failure here is often
	// the empty file (see TestWire/ExpectContinueEmptyBody).
	if out, errOut, err := r.run("aws", "s3", "sync", "--no-progress", up, "s3://"+b+"/tree/"); err != nil {
		t.Errorf("aws s3 sync up: %v\nstdout:\n%s\nstderr:\n%s", err, tail(out, 4*kib), tail(errOut, 4*kib))
	}
	if out := r.must("aws", "s3", "sync", "--no-progress", up, "s3://"+b+"/tree/"); strings.TrimSpace(out) != "" {
		t.Errorf("second aws s3 sync uploaded again:\n%s", out)
	}
	ls := r.must("aws", "s3", "ls", "--recursive", "s3://"+b)
	for p, body := range files {
		want := fmt.Sprintf("%d tree/%s", len(body), p)
		if !strings.Contains(ls, want) {
			t.Errorf("aws s3 ls --recursive lacks %q:\n%s", want, ls)
		}
	}
	down := filepath.Join(t.TempDir(), "down")
	r.must("aws", "s3", "sync", "--no-progress", "s3://"+b+"/tree/", down)
	compareTree(t, down, files)

	// s3api calls and their JSON.
	obj := filepath.Join(r.dir, "obj.txt")
	body := []byte("s3api body\n")
	os.WriteFile(obj, body, 0o644)
	put := r.mustJSON("s3api", "put-object", "--bucket", b, "--key", "api/obj.txt", "--body", obj,
		"--content-type", "text/plain", "--metadata", "k1=v1,k2=v2")
	if put["ETag"] != quoted(md5Hex(body)) {
		t.Errorf("put-object ETag %v, want %s", put["ETag"], quoted(md5Hex(body)))
	}
	head := r.mustJSON("s3api", "head-object", "--bucket", b, "--key", "api/obj.txt")
	meta, _ := head["Metadata"].(map[string]any)
	if head["ContentLength"] != float64(len(body)) || head["ContentType"] != "text/plain" || meta["k1"] != "v1" || meta["k2"] != "v2" || head["ETag"] != quoted(md5Hex(body)) {
		t.Errorf("head-object: %v", head)
	}
	// aws CLI v1 prints the Last-Modified header as sent, v2 as RFC 3339.
	lm := fmt.Sprint(head["LastModified"])
	if _, err := time.Parse(time.RFC3339, lm); err != nil {
		if _, err := time.Parse(http.TimeFormat, lm); err != nil {
			t.Errorf("head-object LastModified %q is neither RFC 3339 nor an HTTP date", lm)
		}
	}
	outFile := filepath.Join(r.dir, "got.txt")
	get := r.mustJSON("s3api", "get-object", "--bucket", b, "--key", "api/obj.txt", outFile)
	if got, _ := os.ReadFile(outFile); !bytes.Equal(got, body) || get["ContentLength"] != float64(len(body)) {
		t.Errorf("get-object: %q, %v", got, get)
	}
	get = r.mustJSON("s3api", "get-object", "--bucket", b, "--key", "api/obj.txt", "--range", "bytes=3-7", outFile)
	if got, _ := os.ReadFile(outFile); !bytes.Equal(got, body[3:8]) || get["ContentRange"] != fmt.Sprintf("bytes 3-7/%d", len(body)) {
		t.Errorf("get-object --range: %q, %v", got, get)
	}
	list := r.mustJSON("s3api", "list-objects-v2", "--bucket", b, "--prefix", "api/", "--no-paginate")
	contents, _ := list["Contents"].([]any)
	if len(contents) != 1 || contents[0].(map[string]any)["Key"] != "api/obj.txt" || list["KeyCount"] != float64(1) {
		t.Errorf("list-objects-v2 --prefix api/: %v", list)
	}

	// list-object-versions works on an unversioned bucket: each object is
	// its null version.
	lv := r.mustJSON("s3api", "list-object-versions", "--bucket", b, "--prefix", "api/")
	if vs, _ := lv["Versions"].([]any); len(vs) != 1 || vs[0].(map[string]any)["VersionId"] != "null" || vs[0].(map[string]any)["IsLatest"] != true {
		t.Errorf("list-object-versions --prefix api/: %v", lv)
	}

	// Multipart through s3api.
	mp := r.mustJSON("s3api", "create-multipart-upload", "--bucket", b, "--key", "api/mp.bin")
	uploadID, _ := mp["UploadId"].(string)
	if uploadID == "" {
		t.Fatalf("create-multipart-upload: %v", mp)
	}
	p1, p2 := randBytes(5*mib), randBytes(1234)
	var parts []map[string]any
	for i, p := range [][]byte{p1, p2} {
		f := filepath.Join(r.dir, fmt.Sprintf("part%d", i+1))
		os.WriteFile(f, p, 0o644)
		out := r.mustJSON("s3api", "upload-part", "--bucket", b, "--key", "api/mp.bin", "--upload-id", uploadID,
			"--part-number", fmt.Sprint(i+1), "--body", f)
		if out["ETag"] != quoted(md5Hex(p)) {
			t.Errorf("upload-part %d ETag %v, want %s", i+1, out["ETag"], quoted(md5Hex(p)))
		}
		parts = append(parts, map[string]any{"PartNumber": i + 1, "ETag": out["ETag"]})
	}
	lp := r.mustJSON("s3api", "list-parts", "--bucket", b, "--key", "api/mp.bin", "--upload-id", uploadID)
	if ps, _ := lp["Parts"].([]any); len(ps) != 2 {
		t.Errorf("list-parts: %v", lp)
	}
	partsJSON, _ := json.Marshal(map[string]any{"Parts": parts})
	pf := filepath.Join(r.dir, "parts.json")
	os.WriteFile(pf, partsJSON, 0o644)
	done := r.mustJSON("s3api", "complete-multipart-upload", "--bucket", b, "--key", "api/mp.bin", "--upload-id", uploadID,
		"--multipart-upload", "file://"+pf)
	if done["ETag"] != quoted(multipartETag(p1, p2)) {
		t.Errorf("complete-multipart-upload ETag %v, want %s", done["ETag"], quoted(multipartETag(p1, p2)))
	}
	r.must("aws", "s3api", "get-object", "--bucket", b, "--key", "api/mp.bin", outFile)
	if got, _ := os.ReadFile(outFile); !bytes.Equal(got, append(slices.Clone(p1), p2...)) {
		t.Errorf("get-object of the multipart object: %d bytes, want %d", len(got), len(p1)+len(p2))
	}
	mp = r.mustJSON("s3api", "create-multipart-upload", "--bucket", b, "--key", "api/aborted")
	r.must("aws", "s3api", "abort-multipart-upload", "--bucket", b, "--key", "api/aborted", "--upload-id", mp["UploadId"].(string))
	if out := r.must("aws", "s3api", "list-multipart-uploads", "--bucket", b); strings.Contains(out, "UploadId") {
		t.Errorf("list-multipart-uploads after complete and abort lists uploads:\n%s", out)
	}

	// A conditional delete: refused with another ETag, done with the object's.
	if _, errOut, err := r.run("aws", "s3api", "delete-object", "--bucket", b, "--key", "api/obj.txt", "--if-match", quoted(md5Hex([]byte("other")))); err == nil || !strings.Contains(errOut, "PreconditionFailed") {
		t.Errorf("delete-object --if-match with another ETag: err %v, stderr %q; want PreconditionFailed", err, errOut)
	}
	r.must("aws", "s3api", "head-object", "--bucket", b, "--key", "api/obj.txt")
	r.must("aws", "s3api", "delete-object", "--bucket", b, "--key", "api/obj.txt", "--if-match", quoted(md5Hex(body)))
	if _, errOut, err := r.run("aws", "s3api", "head-object", "--bucket", b, "--key", "api/obj.txt"); err == nil || !strings.Contains(errOut, "404") {
		t.Errorf("head-object after delete-object: err %v, stderr %q; want a 404 failure", err, errOut)
	}
	if _, errOut, err := r.run("aws", "s3api", "get-object", "--bucket", b, "--key", "api/obj.txt", outFile); err == nil || !strings.Contains(errOut, "NoSuchKey") {
		t.Errorf("get-object after delete-object: err %v, stderr %q; want NoSuchKey", err, errOut)
	}

	// aws s3 presign, fetched with curl. (aws CLI v1 presigns with SigV2
	// query parameters by default, v2 with SigV4.)
	u := strings.TrimSpace(r.must("aws", "s3", "presign", "s3://"+b+"/tree/nested/deep/deeper/d.bin", "--expires-in", "300"))
	kind := "SigV2"
	if pu, err := url.Parse(u); err == nil && pu.Query().Get("X-Amz-Algorithm") == "AWS4-HMAC-SHA256" {
		kind = "SigV4"
	}
	fetched := filepath.Join(r.dir, "presigned.bin")
	if _, errOut, err := r.run("curl", "-sS", "--fail-with-body", "-o", fetched, u); err != nil {
		body, _ := os.ReadFile(fetched)
		t.Errorf("curl of the %s URL from aws s3 presign: %v %s\n%s", kind, err, errOut, body)
	} else if got, _ := os.ReadFile(fetched); !bytes.Equal(got, files["nested/deep/deeper/d.bin"]) {
		t.Errorf("curl of the %s URL from aws s3 presign: %d bytes, want the object's %d", kind, len(got), len(files["nested/deep/deeper/d.bin"]))
	}

	r.must("aws", "s3", "rm", "--only-show-errors", "--recursive", "s3://"+b)
	if out := r.must("aws", "s3", "ls", "--recursive", "s3://"+b); strings.TrimSpace(out) != "" {
		t.Errorf("aws s3 ls after rm --recursive:\n%s", out)
	}
	r.must("aws", "s3", "rb", "s3://"+b)
	if out := r.must("aws", "s3", "ls"); strings.Contains(out, b) {
		t.Errorf("aws s3 ls after rb still lists %s:\n%s", b, out)
	}
}

func TestBoto3(t *testing.T) {
	requireTool(t, "boto3", "python3", "-c", "import boto3")
	testBoto3(t, startChild(t, t.TempDir()))
}

// testBoto3 runs testdata/boto3_smoke.py against ts's one endpoint, over
// http and through a TLS proxy.
func testBoto3(t *testing.T, ts s3Target) {
	script, err := filepath.Abs(filepath.Join("testdata", "boto3_smoke.py"))
	if err != nil {
		t.Fatal(err)
	}
	endpoint := ts.url(t)
	proxy := tlsProxy(t, endpoint)
	for _, tc := range []struct {
		name, endpoint string
		insecure       bool
	}{
		{"http", endpoint, false},
		// Over https boto3 sends its CRC32 as an aws-chunked trailer.
		{"https", proxy.URL, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := append(awsEnv(t, tc.endpoint), "COFFER_BUCKET=boto3-"+tc.name, "COFFER_WORKDIR="+t.TempDir(),
				fmt.Sprintf("COFFER_SETTLE_SECONDS=%g", ts.propagation().Seconds()))
			if tc.insecure {
				env = append(env, "COFFER_INSECURE=1")
			}
			r := newToolRunner(t, env)
			out, _, err := r.run("python3", script) // the transcript, logged on failure, has the output
			if err != nil {
				t.Errorf("boto3_smoke.py against %s: %v", tc.endpoint, err)
			} else if !strings.Contains(out, "PASS") {
				t.Errorf("boto3_smoke.py did not print PASS:\n%s", out)
			}
		})
	}
}
