package s3api

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coffer-s3/coffer/internal/blob"
	"github.com/coffer-s3/coffer/internal/blob/memblob"
	"github.com/coffer-s3/coffer/internal/checksum"
	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/meta"
	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/s3err"
	"github.com/coffer-s3/coffer/internal/sigv4"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/*.xml and docs/s3-compatibility.md")

// The root credentials of every test server: the example keys of the AWS
// documentation.
const (
	rootAccessKey = "AKIAIOSFODNN7EXAMPLE"
	rootSecretKey = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	testRegion    = "us-east-1"
	testDomain    = "s3.example.com"
	testMinPart   = 5 << 10 // small parts keep multipart tests fast
)

// testNow is the fixed time of every test server and signature.
func testNow() time.Time { return time.Date(2024, time.May, 1, 12, 0, 0, 0, time.UTC) }

// rootCred returns the root credentials.
func rootCred() sigv4.Credentials {
	return sigv4.Credentials{AccessKeyID: rootAccessKey, SecretKey: rootSecretKey}
}

// keyring adapts iam to sigv4.Keyring, translating iam's unknown-key
// sentinel into sigv4's, as the server does.
type keyring struct{ m *iam.IAM }

func (k keyring) SecretKey(ctx context.Context, id string) (string, error) {
	s, err := k.m.SecretKey(ctx, id)
	if errors.Is(err, iam.ErrUnknownKey) {
		return "", sigv4.ErrUnknownKey
	}
	return s, err
}

// harness is a Handler over the real object service (memblob and meta in a
// temporary directory), behind an httptest.Server so that requests and
// responses go through net/http as in production.
type harness struct {
	t   testing.TB
	h   *Handler
	svc *objects.Service
	srv *httptest.Server
	iam *iam.IAM
}

// newHarness starts a test server with cfg (Domain defaults to testDomain)
// whose clocks stand at testNow.
func newHarness(t testing.TB, cfg Config) *harness {
	t.Helper()
	return newHarnessAt(t, cfg, testNow)
}

// newHarnessAt is newHarness with the given clock, for clients that sign
// with the real time.
func newHarnessAt(t testing.TB, cfg Config, now func() time.Time) *harness {
	t.Helper()
	return newHarnessDisk(t, cfg, now, nil)
}

// newHarnessDisk is newHarnessAt whose metadata store, if failWrite is
// not nil, syncs its commits and writes its files through failWrite
// (meta.Config.FailWrite), for tests of a failing disk.
func newHarnessDisk(t testing.TB, cfg Config, now func() time.Time, failWrite func(path string) error) *harness {
	t.Helper()
	return newHarnessWith(t, cfg, harnessOptions{now: now, failWrite: failWrite})
}

// harnessOptions are what newHarnessWith varies. Zero fields take
// newHarness's choices.
type harnessOptions struct {
	now       func() time.Time        // the clocks; nil for testNow
	failWrite func(path string) error // see newHarnessDisk
	store     blob.Store              // the block store; nil for a fresh memblob
	blockSize int64                   // objects.Config.BlockSize; 0 for its default
}

// newHarnessWith is newHarness as o says.
func newHarnessWith(t testing.TB, cfg Config, o harnessOptions) *harness {
	t.Helper()
	now, failWrite := o.now, o.failWrite
	if now == nil {
		now = testNow
	}
	store := o.store
	if store == nil {
		store = memblob.New()
	}
	db, err := meta.Open(meta.Config{Dir: t.TempDir(), Sync: failWrite != nil, FailWrite: failWrite})
	if err != nil {
		t.Fatalf("meta.Open: %v", err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("close meta: %v", err)
		}
	})
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc, err := objects.New(objects.Config{MinPartSize: testMinPart, BlockSize: o.blockSize, GCInterval: -1, Clock: now}, db, store, logger)
	if err != nil {
		t.Fatalf("objects.New: %v", err)
	}
	m, err := iam.New(iam.Config{RootAccessKey: rootAccessKey, RootSecretKey: rootSecretKey,
		MasterKey: bytes.Repeat([]byte{1}, iam.MasterKeySize), Store: iamStore{db}, Clock: now})
	if err != nil {
		t.Fatalf("iam.New: %v", err)
	}
	if cfg.Domain == "" {
		cfg.Domain = testDomain
	}
	var seq atomic.Int64
	h, err := New(cfg, Deps{
		Objects:  svc,
		Verifier: sigv4.NewVerifier(sigv4.Config{Region: testRegion, Clock: now}, keyring{m}),
		IAM:      m,
		Logger:   logger,
		Clock:    now,
		NewRequestID: func() string {
			return fmt.Sprintf("TESTREQUEST%05d", seq.Add(1))
		},
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &harness{t: t, h: h, svc: svc, srv: srv, iam: m}
}

// iamStore keeps iam's state in meta, as the server's adapter does.
type iamStore struct{ db *meta.DB }

func (s iamStore) IAMState(ctx context.Context) ([]byte, error) { return s.db.IAMState(ctx) }
func (s iamStore) PutIAMState(ctx context.Context, doc []byte) error {
	return s.db.PutIAMState(ctx, doc)
}
func (s iamStore) BucketPolicies(ctx context.Context) (map[string][]byte, error) {
	return s.db.BucketPolicies(ctx)
}
func (s iamStore) BucketPolicy(ctx context.Context, bucket string) ([]byte, error) {
	doc, err := s.db.BucketPolicy(ctx, bucket)
	if errors.Is(err, meta.ErrNoBucket) {
		return nil, nil
	}
	return doc, err
}

// user creates an IAM user with the given attached policies and returns
// its credentials.
func (hs *harness) user(name string, policies ...string) *sigv4.Credentials {
	hs.t.Helper()
	ctx := context.Background()
	nk, err := hs.iam.CreateUser(ctx, name)
	if err != nil {
		hs.t.Fatalf("CreateUser(%s): %v", name, err)
	}
	for _, p := range policies {
		if err := hs.iam.AttachPolicy(ctx, p, iam.Target{User: name}); err != nil {
			hs.t.Fatalf("AttachPolicy(%s, %s): %v", p, name, err)
		}
	}
	return &sigv4.Credentials{AccessKeyID: nk.AccessKey, SecretKey: nk.SecretKey}
}

// call describes one request of a test.
type call struct {
	method string
	path   string // escaped path and query, e.g. "/b/k?uploads"
	host   string // Host header; "" for the server's address (path style)
	header http.Header
	body   []byte
	// payload is the x-amz-content-sha256 to sign with: "" for the body's
	// SHA-256, or UNSIGNED-PAYLOAD, or any (wrong) value to send.
	payload string
	anon    bool                // send without any authentication
	cred    *sigv4.Credentials  // nil for root
	at      time.Time           // signing time; zero for testNow
	noLen   bool                // send the body chunked, without Content-Length
	prepare func(*http.Request) // last change before sending, after signing
}

// reply is a response with its body read.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// do sends c, signed as described, and returns the reply. Every reply must
// carry a request ID and host ID, errors included.
func (hs *harness) do(c call) reply {
	hs.t.Helper()
	return hs.send(hs.request(c))
}

// send is do for a request already built (and signed).
func (hs *harness) send(r *http.Request) reply {
	hs.t.Helper()
	c := call{method: r.Method, path: r.URL.RequestURI()}
	resp, err := hs.srv.Client().Do(r)
	if err != nil {
		hs.t.Errorf("%s %s: %v", c.method, c.path, err)
		return reply{}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		hs.t.Fatalf("%s %s: read body: %v", c.method, c.path, err)
	}
	if resp.Header.Get("x-amz-request-id") == "" || resp.Header.Get("x-amz-id-2") == "" {
		hs.t.Errorf("%s %s: reply %d without x-amz-request-id or x-amz-id-2: %v", c.method, c.path, resp.StatusCode, resp.Header)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: body}
}

// request builds and signs the request for c.
func (hs *harness) request(c call) *http.Request {
	hs.t.Helper()
	var body io.Reader = bytes.NewReader(c.body)
	if c.noLen {
		body = io.MultiReader(bytes.NewReader(c.body)) // hides the length
	}
	r, err := http.NewRequest(c.method, hs.srv.URL+c.path, body)
	if err != nil {
		hs.t.Fatalf("NewRequest(%s %s): %v", c.method, c.path, err)
	}
	if c.noLen {
		r.ContentLength = -1
	}
	if c.host != "" {
		r.Host = c.host
	}
	for k, vs := range c.header {
		r.Header[k] = vs
	}
	if !c.anon {
		cred := rootCred()
		if c.cred != nil {
			cred = *c.cred
		}
		at := c.at
		if at.IsZero() {
			at = testNow()
		}
		payload := c.payload
		if payload == "" {
			sum := sha256.Sum256(c.body)
			payload = hex.EncodeToString(sum[:])
		}
		sigv4.SignRequest(r, cred, testRegion, at, payload)
	}
	if c.prepare != nil {
		c.prepare(r)
	}
	return r
}

// want checks a reply's status and, for an error, its code.
func (rp reply) want(t testing.TB, status int, code s3err.Code) {
	t.Helper()
	if rp.status != status {
		t.Fatalf("status %d, want %d; body:\n%s", rp.status, status, rp.body)
	}
	if code == "" {
		return
	}
	if len(rp.body) == 0 {
		return // HEAD and 304 carry no body
	}
	if got := errorCode(rp.body); got != string(code) {
		t.Fatalf("error code %q, want %q; body:\n%s", got, code, rp.body)
	}
	if ct := rp.header.Get("Content-Type"); ct != "application/xml" {
		t.Errorf("error Content-Type %q, want application/xml", ct)
	}
}

var codeRE = regexp.MustCompile(`<Code>([^<]*)</Code>`)

// errorCode extracts <Code> from an error document.
func errorCode(body []byte) string {
	m := codeRE.FindSubmatch(body)
	if m == nil {
		return ""
	}
	return string(m[1])
}

// mustOK fails unless the reply has status.
func (rp reply) mustStatus(t testing.TB, status int) reply {
	t.Helper()
	rp.want(t, status, "")
	return rp
}

// scrubRE matches the values tests cannot fix in advance: upload IDs.
var scrubRE = regexp.MustCompile(`<(UploadId|NextUploadIdMarker|UploadIdMarker)>[^<]+</`)

// golden compares body with testdata/golden/name.xml, rewriting the file
// with -update. Upload IDs, which the service makes at random, are
// replaced by UPLOAD-ID first: those in upload ID elements, and the given
// ids wherever they appear.
func golden(t testing.TB, name string, body []byte, ids ...string) {
	t.Helper()
	body = scrubRE.ReplaceAll(body, []byte("<$1>UPLOAD-ID</"))
	for _, id := range ids {
		body = bytes.ReplaceAll(body, []byte(id), []byte("UPLOAD-ID"))
	}
	path := filepath.Join("testdata", "golden", name+".xml")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, body, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run with -update to create it): %v", err)
	}
	if !bytes.Equal(want, body) {
		t.Errorf("%s differs from the golden file (run with -update if the change is right)\n--- want\n%s\n--- got\n%s", path, want, body)
	}
}

// goldenError checks an error reply's code and status, and its body
// against testdata/golden/<name>.xml.
func goldenError(t testing.TB, rp reply, name string, status int, code s3err.Code, ids ...string) {
	t.Helper()
	rp.want(t, status, code)
	golden(t, name, rp.body, ids...)
}

// contentMD5 returns the base64 MD5 of b, as Content-MD5 carries it.
func contentMD5(b []byte) string {
	sum := md5.Sum(b)
	return base64.StdEncoding.EncodeToString(sum[:])
}

// etagOf returns the quoted ETag S3 gives a single-part object.
func etagOf(b []byte) string {
	sum := md5.Sum(b)
	return `"` + hex.EncodeToString(sum[:]) + `"`
}

// mkBucket creates bucket.
func (hs *harness) mkBucket(bucket string) {
	hs.t.Helper()
	hs.do(call{method: "PUT", path: "/" + bucket}).mustStatus(hs.t, http.StatusOK)
}

// put stores body as bucket/key with extra headers (name, value pairs).
func (hs *harness) put(bucket, key string, body []byte, kv ...string) reply {
	hs.t.Helper()
	return hs.do(call{method: "PUT", path: "/" + bucket + "/" + key, body: body, header: header(kv...)}).mustStatus(hs.t, http.StatusOK)
}

// serve runs r through the handler directly, without a connection: for
// requests a real client would not send.
func (hs *harness) serve(r *http.Request) reply {
	hs.t.Helper()
	r.RequestURI = r.URL.RequestURI()
	w := httptest.NewRecorder()
	hs.h.ServeHTTP(w, r)
	res := w.Result()
	body, _ := io.ReadAll(res.Body)
	return reply{status: res.StatusCode, header: res.Header, body: body}
}

// crc32Of returns the base64 CRC32 of b, as x-amz-checksum-crc32 carries it.
func crc32Of(b []byte) string {
	h := checksum.CRC32.New()
	h.Write(b)
	return checksum.Encode(h.Sum(nil))
}

// xmlBody is a helper for request bodies.
func xmlBody(s string) []byte { return []byte(strings.TrimSpace(s)) }

// canonicalID returns the canonical ID of user name, as IAM reports it.
func (hs *harness) canonicalID(name string) string {
	hs.t.Helper()
	u, err := hs.iam.User(context.Background(), name)
	if err != nil {
		hs.t.Fatalf("User(%s): %v", name, err)
	}
	return u.CanonicalID
}
