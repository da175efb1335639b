// Package e2e holds Coffer's end-to-end tests: an in-process server driven by
// aws-sdk-go-v2 and by raw SigV4-signed HTTP requests, the real aws CLI and
// boto3 against the built binary, and a kill -9 crash loop. It contains test
// files only.
package e2e

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/coffer-s3/coffer/internal/config"
	"github.com/coffer-s3/coffer/internal/server"
)

// Root credentials every test server is started with.
const (
	testAccessKey = "COFFERE2EROOTKEY0001"
	testSecretKey = "e2e-secret-key/with+special=chars0123456789"
	testRegion    = "us-east-1"
)

// Sizes used throughout.
const (
	kib = 1 << 10
	mib = 1 << 20
)

func TestMain(m *testing.M) {
	code := m.Run()
	migratePG.Stop()
	clusterPG.Stop()
	cleanupBinary()
	os.Exit(code)
}

// testServer is a Coffer server running in this process.
type testServer struct {
	dir      string // storage path
	addr     string // host:port of the S3 listener
	endpoint string // http://addr
	ak, sk   string
	cfg      config.Config
	logs     *syncBuffer // everything the server logged
	console  string      // address of the ops listener (/metrics); "" when off
	// stop shuts the server down and waits for it, failing the test if it
	// does not stop cleanly. Calls after the first do nothing; the test's
	// cleanup calls it.
	stop func()
}

// syncBuffer is a goroutine-safe bytes.Buffer for logs written after a test
// may have returned.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// tail returns at most the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// inProcessArgs are the flags every in-process server gets: small blocks so
// that a few MiB already span several blocks, and no background GC.
// Read-only.
var inProcessArgs = []string{
	"--address", "127.0.0.1:0",
	"--gc-interval", "0", // 0 disables background GC (the config rejects -1s)
	"--block-size", "1MiB",
	"--inline-threshold", "128KiB",
	"--console-address", "127.0.0.1:0", // the default port would clash between parallel servers
}

// startServer starts a server on 127.0.0.1:0 over a fresh t.TempDir(). extra
// flags are appended to inProcessArgs. The server is shut down, and must
// shut down cleanly, when the test ends.
func startServer(t *testing.T, extra ...string) *testServer {
	t.Helper()
	return startServerEnv(t, nil, extra...)
}

// startServerEnv is startServer with more environment variables.
func startServerEnv(t *testing.T, moreEnv map[string]string, extra ...string) *testServer {
	t.Helper()
	return startServerWith(t, moreEnv, nil, extra...)
}

// startServerWith is startServerEnv that lets modify change the loaded
// configuration before the server starts, for what no flag sets: the
// lifecycle worker's clock.
func startServerWith(t *testing.T, moreEnv map[string]string, modify func(*config.Config), extra ...string) *testServer {
	t.Helper()
	dir := t.TempDir()
	args := append([]string{"--storage-path", dir}, inProcessArgs...)
	args = append(args, extra...)
	env := map[string]string{
		"COFFER_ROOT_ACCESS_KEY": testAccessKey,
		"COFFER_ROOT_SECRET_KEY": testSecretKey,
	}
	for k, v := range moreEnv {
		env[k] = v
	}
	cfg, err := config.Load(args, func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("config.Load(%q): %v", args, err)
	}
	if modify != nil {
		modify(&cfg)
	}
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv, err := server.New(cfg, log, logs)
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	stop := sync.OnceFunc(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("server Run returned %v after shutdown, want nil", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("server did not shut down within 30s")
		}
	})
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("server log (tail):\n%s", tail(logs.String(), 6*kib))
		}
	})
	ak, sk := srv.RootCredentials()
	if ak != testAccessKey || sk != testSecretKey {
		t.Fatalf("RootCredentials() = %q, %q; want the ones from the environment %q, %q", ak, sk, testAccessKey, testSecretKey)
	}
	addr := srv.Addr()
	if addr == "" || strings.HasSuffix(addr, ":0") {
		t.Fatalf("Addr() = %q, want the bound address", addr)
	}
	return &testServer{dir: dir, addr: addr, endpoint: "http://" + addr, ak: ak, sk: sk, cfg: cfg, logs: logs,
		console: srv.ConsoleAddr(), stop: stop}
}

// newHTTPClient returns a client with no shared state between tests.
func newHTTPClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 32
	return &http.Client{Transport: tr, Timeout: 2 * time.Minute}
}

// newClient returns an SDK client for endpoint with the SDK's default
// checksum behaviour: it computes and sends a CRC32 with every upload (as an
// aws-chunked trailer over https, as a header over http) and validates
// response checksums. opts adjust
// the options further. Retries are off so that no error is hidden.
func newClient(t *testing.T, endpoint string, opts ...func(*s3.Options)) *s3.Client {
	t.Helper()
	o := s3.Options{
		Region:       testRegion,
		BaseEndpoint: aws.String(endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(testAccessKey, testSecretKey, ""),
		HTTPClient:   newHTTPClient(),
		Retryer:      aws.NopRetryer{},
		// What config.LoadDefaultConfig resolves to; s3.New alone leaves
		// them unset, which sends no checksum.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenSupported,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenSupported,
	}
	for _, f := range opts {
		f(&o)
	}
	return s3.New(o)
}

// whenRequired makes a client compute request checksums only when an
// operation requires one.
func whenRequired(o *s3.Options) {
	o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
}

// s3Target is what a test body needs of the server it runs against. A
// single server is one (in process or a child); so is a cluster, whose
// clients spread their requests over its nodes.
type s3Target interface {
	// client returns a root SDK client.
	client(t *testing.T, opts ...func(*s3.Options)) *s3.Client
	// rawEndpoint returns the URL (http://host:port) that hand-made
	// requests are addressed to, signed for and sent with hc: a server's
	// own; a cluster's first node, with a client that sends each request to
	// the next node (the Host header unchanged), as its SDK clients do.
	rawEndpoint() (endpoint string, hc *http.Client)
	// dialAddr returns a host:port to open a TCP connection to for a
	// request written by hand (sendPartial): the server; the next node of
	// a cluster.
	dialAddr() string
	// url returns the one endpoint that real clients (the aws CLI, boto3,
	// s3cmd, rclone, mc, curl) are given: a server's own; the load balancer
	// in front of a cluster.
	url(t *testing.T) string
	// propagation is how long a change of IAM state, a bucket policy or a
	// bucket configuration made through one node may take to be enforced
	// by every node: nothing on a single server; on a cluster the second
	// that the design promises (docs/design/0011-postgres-metadata.md).
	propagation() time.Duration
}

// settle waits ts.propagation(): a body that changes IAM state, a policy or
// a bucket configuration and relies on it in the next request, which a
// cluster sends to another node, relies on exactly that promise.
func settle(ts s3Target) { time.Sleep(ts.propagation()) }

// client returns the default SDK client for ts.
func (ts *testServer) client(t *testing.T, opts ...func(*s3.Options)) *s3.Client {
	return newClient(t, ts.endpoint, opts...)
}

func (ts *testServer) rawEndpoint() (string, *http.Client) { return ts.endpoint, newHTTPClient() }
func (ts *testServer) dialAddr() string                    { return ts.addr }
func (ts *testServer) url(*testing.T) string               { return ts.endpoint }
func (ts *testServer) propagation() time.Duration          { return 0 }

// raw builds, signs and sends rq to ts.
func raw(t *testing.T, ts s3Target, rq rawReq) (*http.Response, []byte) {
	t.Helper()
	endpoint, hc := ts.rawEndpoint()
	return do(t, hc, rq.build(t, endpoint))
}

// newBucketName returns a fresh, valid bucket name.
func newBucketName(prefix string) string {
	return prefix + "-" + hex.EncodeToString(randBytes(4))
}

// mkBucket creates a fresh bucket and returns its name.
func mkBucket(t *testing.T, c *s3.Client, prefix string) string {
	t.Helper()
	name := newBucketName(prefix)
	if _, err := c.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("CreateBucket(%s): %v", name, err)
	}
	return name
}

// randBytes returns n random bytes.
func randBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// md5Hex returns the hex MD5 of b, S3's ETag of a single-part object.
func md5Hex(b []byte) string {
	s := md5.Sum(b)
	return hex.EncodeToString(s[:])
}

// sha256Hex returns the hex SHA-256 of b.
func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// quoted returns s in double quotes, as S3 sends ETags.
func quoted(s string) string { return `"` + s + `"` }

// put stores body under bucket/key with the given client.
func put(t *testing.T, c *s3.Client, bucket, key string, body []byte) *s3.PutObjectOutput {
	t.Helper()
	out, err := c.PutObject(t.Context(), &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body),
	})
	if err != nil {
		t.Fatalf("PutObject(%s/%q, %d bytes): %v", bucket, key, len(body), err)
	}
	return out
}

// get reads bucket/key whole and checks that Content-Length matches the
// bytes received.
func get(t *testing.T, c *s3.Client, bucket, key string) []byte {
	t.Helper()
	out, err := c.GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("GetObject(%s/%q): %v", bucket, key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatalf("GetObject(%s/%q): read body: %v", bucket, key, err)
	}
	if out.ContentLength == nil || *out.ContentLength != int64(len(b)) {
		t.Errorf("GetObject(%s/%q): Content-Length %v, body %d bytes", bucket, key, aws.ToInt64(out.ContentLength), len(b))
	}
	return b
}

// checkBody fails unless got equals want, without printing megabytes.
func checkBody(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Errorf("%s: got %d bytes (sha256 %s…), want %d bytes (sha256 %s…)",
			what, len(got), sha256Hex(got)[:12], len(want), sha256Hex(want)[:12])
	}
}

// errCode returns the S3 error code of an SDK error ("" for nil).
func errCode(err error) string {
	if err == nil {
		return ""
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return "non-API error: " + err.Error()
}

// errStatus returns the HTTP status of an SDK error (0 if none).
func errStatus(err error) int {
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// wantErr fails unless err is an S3 error with the given code and status.
func wantErr(t *testing.T, what string, err error, code string, status int) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: succeeded, want %s (%d)", what, code, status)
		return
	}
	if got := errCode(err); got != code {
		t.Errorf("%s: error code %q, want %q (error: %v)", what, got, code, err)
	}
	if got := errStatus(err); got != status {
		t.Errorf("%s: HTTP status %d, want %d (error: %v)", what, got, status, err)
	}
}

// ceilDiv returns ⌈a/b⌉.
func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }
