package e2e

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// rcloneEnv configures a remote named "coffer" for endpoint through
// rclone's environment variables only. AWS_CA_BUNDLE is never set (childEnv
// builds the environment from scratch): rclone 1.60 fails when it is.
func rcloneEnv(t *testing.T, endpoint string) []string {
	return childEnv(t.TempDir(),
		"RCLONE_CONFIG="+filepath.Join(t.TempDir(), "rclone.conf"),
		"RCLONE_CONFIG_COFFER_TYPE=s3",
		"RCLONE_CONFIG_COFFER_PROVIDER=Other",
		"RCLONE_CONFIG_COFFER_ACCESS_KEY_ID="+testAccessKey,
		"RCLONE_CONFIG_COFFER_SECRET_ACCESS_KEY="+testSecretKey,
		"RCLONE_CONFIG_COFFER_ENDPOINT="+endpoint,
		"RCLONE_CONFIG_COFFER_REGION="+testRegion,
	)
}

func TestRclone(t *testing.T) {
	requireTool(t, "rclone", "rclone", "version")
	testRclone(t, startChild(t, t.TempDir()))
}

// testRclone drives rclone against ts's one endpoint: mkdir, copy up
// (big.bin as a multipart upload), check, lsjson with hashes, copy down,
// purge.
func testRclone(t *testing.T, ts s3Target) {
	r := newToolRunner(t, rcloneEnv(t, ts.url(t)))
	const b = "rclone-bkt"

	files := map[string][]byte{
		"empty.bin":                       nil,
		"mid.bin":                         randBytes(300 * 1000),
		"big.bin":                         randBytes(20 * mib),
		"dir with space/naïve café ✓.txt": []byte("unicode name\n"),
		"odd/plus+amp&eq=pct%20.txt":      []byte("reserved characters\n"),
		"odd/quote'semi;colon:.txt":       []byte("more characters\n"),
		"a/b/c/d/deep.txt":                []byte("deep\n"),
	}
	up := filepath.Join(t.TempDir(), "up")
	writeTree(t, up, files)
	// 5 MiB chunks from 5 MiB up: big.bin goes up as a 4-part multipart
	// upload.
	mp := []string{"--s3-upload-cutoff", "5M", "--s3-chunk-size", "5M"}

	r.must("rclone", "mkdir", "coffer:"+b)
	if out := r.must("rclone", "lsd", "coffer:"); !strings.Contains(out, b) {
		t.Errorf("rclone lsd coffer: lacks %s after mkdir:\n%s", b, out)
	}
	r.must("rclone", append([]string{"copy", up, "coffer:" + b + "/tree"}, mp...)...)
	if _, errOut, err := r.run("rclone", "check", up, "coffer:"+b+"/tree"); err != nil || !strings.Contains(errOut, "0 differences found") {
		t.Errorf("rclone check after copy up: %v; want 0 differences\n%s", err, tail(errOut, 4*kib))
	}

	var entries []struct {
		Path   string
		Size   int64
		IsDir  bool
		Hashes map[string]string
	}
	out := r.must("rclone", "lsjson", "--hash", "--recursive", "--files-only", "coffer:"+b+"/tree")
	if err := json.Unmarshal([]byte(out), &entries); err != nil {
		t.Fatalf("rclone lsjson output is not JSON: %v\n%s", err, out)
	}
	seen := map[string]bool{}
	for _, e := range entries {
		body, ok := files[e.Path]
		if !ok {
			t.Errorf("rclone lsjson lists unexpected %q", e.Path)
			continue
		}
		seen[e.Path] = true
		if e.Size != int64(len(body)) {
			t.Errorf("rclone lsjson %q: Size %d, want %d", e.Path, e.Size, len(body))
		}
		if got, want := e.Hashes["md5"], md5Hex(body); got != want {
			t.Errorf("rclone lsjson --hash %q: md5 %q, want %q", e.Path, got, want)
		}
	}
	if len(seen) != len(files) {
		t.Errorf("rclone lsjson lists %d of the %d files: %s", len(seen), len(files), out)
	}

	// rclone uploaded big.bin in four 5 MiB parts.
	head, err := ts.client(t).HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String("tree/big.bin")})
	if err != nil {
		t.Fatalf("HeadObject tree/big.bin: %v", err)
	}
	if etag := aws.ToString(head.ETag); !strings.HasSuffix(etag, `-4"`) {
		t.Errorf("ETag of tree/big.bin %s, want a 4-part multipart ETag", etag)
	}

	down := filepath.Join(t.TempDir(), "down")
	r.must("rclone", "copy", "coffer:"+b+"/tree", down)
	compareTree(t, down, files)
	if _, errOut, err := r.run("rclone", "check", down, "coffer:"+b+"/tree"); err != nil || !strings.Contains(errOut, "0 differences found") {
		t.Errorf("rclone check after copy down: %v; want 0 differences\n%s", err, tail(errOut, 4*kib))
	}

	r.must("rclone", "purge", "coffer:"+b)
	if out := r.must("rclone", "lsd", "coffer:"); strings.Contains(out, b) {
		t.Errorf("rclone lsd coffer: still lists %s after purge:\n%s", b, out)
	}
}

// TestVersionIDNull checks what rclone relies on in an unversioned bucket:
// versionId=null names the current object for GET, HEAD and DELETE, and any
// other version ID is InvalidArgument or NoSuchVersion.
func TestVersionIDNull(t *testing.T) {
	testVersionIDNull(t, startChild(t, t.TempDir()))
}

func testVersionIDNull(t *testing.T, ts s3Target) {
	send := func(rq rawReq) (*http.Response, []byte) {
		t.Helper()
		return raw(t, ts, rq)
	}
	const b = "version-null"
	if resp, body := send(rawReq{method: "PUT", target: "/" + b}); resp.StatusCode != http.StatusOK {
		t.Fatalf("CreateBucket: %d %s", resp.StatusCode, body)
	}
	content := []byte("current version\n")
	if resp, body := send(rawReq{method: "PUT", target: "/" + b + "/k", body: content}); resp.StatusCode != http.StatusOK {
		t.Fatalf("PutObject: %d %s", resp.StatusCode, body)
	}

	resp, body := send(rawReq{method: "GET", target: "/" + b + "/k?versionId=null"})
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET ?versionId=null: status %d, want 200; body %.300s", resp.StatusCode, body)
	}
	checkBody(t, "GET ?versionId=null", body, content)
	resp, _ = send(rawReq{method: "HEAD", target: "/" + b + "/k?versionId=null"})
	if resp.StatusCode != http.StatusOK || resp.ContentLength != int64(len(content)) || resp.Header.Get("ETag") != quoted(md5Hex(content)) {
		t.Errorf("HEAD ?versionId=null: status %d, Content-Length %d, ETag %q; want 200, %d, %s",
			resp.StatusCode, resp.ContentLength, resp.Header.Get("ETag"), len(content), quoted(md5Hex(content)))
	}

	// A version ID Coffer could not have made is InvalidArgument, as S3
	// answers one it cannot parse; a well-formed unknown one is
	// NoSuchVersion, and deleting it succeeds without touching anything.
	const malformed = "3HL4kqtJlcpXroDTDmJ.rmSpXd3dIbrHY"
	resp, body = send(rawReq{method: "GET", target: "/" + b + "/k?versionId=" + malformed})
	checkError(t, "GET ?versionId=malformed", resp, body, "InvalidArgument", http.StatusBadRequest, "-")
	resp, body = send(rawReq{method: "HEAD", target: "/" + b + "/k?versionId=" + malformed})
	if resp.StatusCode != http.StatusBadRequest || len(body) != 0 {
		t.Errorf("HEAD ?versionId=malformed: status %d, %d body bytes; want 400 without a body", resp.StatusCode, len(body))
	}
	resp, body = send(rawReq{method: "DELETE", target: "/" + b + "/k?versionId=" + malformed})
	checkError(t, "DELETE ?versionId=malformed", resp, body, "InvalidArgument", http.StatusBadRequest, "-")
	other := strings.Repeat("0", 32)
	resp, body = send(rawReq{method: "GET", target: "/" + b + "/k?versionId=" + other})
	checkError(t, "GET ?versionId=other", resp, body, "NoSuchVersion", http.StatusNotFound, "-")
	resp, body = send(rawReq{method: "HEAD", target: "/" + b + "/k?versionId=" + other})
	if resp.StatusCode != http.StatusNotFound || len(body) != 0 {
		t.Errorf("HEAD ?versionId=other: status %d, %d body bytes; want 404 without a body", resp.StatusCode, len(body))
	}
	if resp, body = send(rawReq{method: "DELETE", target: "/" + b + "/k?versionId=" + other}); resp.StatusCode != http.StatusNoContent {
		t.Errorf("DELETE ?versionId=other: status %d, want 204; body %.300s", resp.StatusCode, body)
	}
	// Neither DELETE touched the object.
	if resp, _ := send(rawReq{method: "HEAD", target: "/" + b + "/k"}); resp.StatusCode != http.StatusOK {
		t.Errorf("HEAD after DELETE ?versionId=other: status %d, want 200", resp.StatusCode)
	}

	resp, body = send(rawReq{method: "DELETE", target: "/" + b + "/k?versionId=null"})
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("DELETE ?versionId=null: status %d, want 204; body %.300s", resp.StatusCode, body)
	}
	resp, body = send(rawReq{method: "GET", target: "/" + b + "/k"})
	checkError(t, "GET after DELETE ?versionId=null", resp, body, "NoSuchKey", http.StatusNotFound, "-")
}
