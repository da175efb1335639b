package server

import (
	"bytes"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"net/http"
	neturl "net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/coffer-s3/coffer/internal/blob"
	"github.com/coffer-s3/coffer/internal/blob/fsblob"
	"github.com/coffer-s3/coffer/internal/config"
	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/meta/pgtest"
)

// testPG is the PostgreSQL server of this test binary, started by the
// first test that needs it.
var testPG pgtest.Lazy

func TestMain(m *testing.M) {
	code := m.Run()
	testPG.Stop()
	os.Exit(code)
}

// TestPostgresNodes runs two servers on one PostgreSQL schema, each with a
// storage path of its own, as two nodes of a cluster: a bucket made and a
// small object (inline, so in the metadata) stored through one are served
// by the other, and a conditional PUT (If-None-Match) on the second node
// sees the object the first node stored.
func TestPostgresNodes(t *testing.T) {
	url := testPG.Get(t).NewSchema(t)
	blocks := sharedBlocks(t)
	var nodes []*Server
	var cfg config.Config
	for range 2 {
		cfg = testConfig(t)
		cfg.Root.MasterKey = bytes.Repeat([]byte{0x5a}, iam.MasterKeySize)
		cfg.Meta.Kind = config.MetaPostgres
		cfg.Meta.Postgres.URL = url
		cfg.Meta.Postgres.MaxConns = 4
		cfg.Blob = blocks
		s, _ := start(t, cfg, testLogger(io.Discard))
		nodes = append(nodes, s)
	}
	do := func(s *Server, method, path string, body []byte, hdr map[string]string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, "http://"+s.Addr()+path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		sum := sha256.Sum256(body)
		hash := hex.EncodeToString(sum[:])
		req.Header.Set("X-Amz-Content-Sha256", hash)
		creds := aws.Credentials{AccessKeyID: cfg.Root.RootAccessKey, SecretAccessKey: cfg.Root.RootSecretKey}
		if err := v4.NewSigner().SignHTTP(t.Context(), creds, req, hash, "s3", cfg.S3.Region, time.Now()); err != nil {
			t.Fatal(err)
		}
		resp, err := client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		name       string
		node       int
		method     string
		path       string
		body       string
		hdr        map[string]string
		wantStatus int
		wantBody   string
	}{
		{name: "create bucket on A", node: 0, method: http.MethodPut, path: "/bkt", wantStatus: http.StatusOK},
		{name: "bucket on B", node: 1, method: http.MethodHead, path: "/bkt", wantStatus: http.StatusOK},
		{name: "no such bucket on B", node: 1, method: http.MethodHead, path: "/nope", wantStatus: http.StatusNotFound},
		{name: "put on A", node: 0, method: http.MethodPut, path: "/bkt/k", body: "hello", wantStatus: http.StatusOK},
		{name: "get on B", node: 1, method: http.MethodGet, path: "/bkt/k", wantStatus: http.StatusOK, wantBody: "hello"},
		{name: "put blocks on A", node: 0, method: http.MethodPut, path: "/bkt/big", body: strings.Repeat("blocks", 20<<10), wantStatus: http.StatusOK},
		{name: "get blocks on B", node: 1, method: http.MethodGet, path: "/bkt/big", wantStatus: http.StatusOK, wantBody: strings.Repeat("blocks", 20<<10)},
		{name: "if-none-match on B", node: 1, method: http.MethodPut, path: "/bkt/k", body: "again",
			hdr: map[string]string{"If-None-Match": "*"}, wantStatus: http.StatusPreconditionFailed},
		{name: "list on B", node: 1, method: http.MethodGet, path: "/bkt?list-type=2", wantStatus: http.StatusOK, wantBody: "<Key>k</Key>"},
	} {
		status, body := do(nodes[tc.node], tc.method, tc.path, []byte(tc.body), tc.hdr)
		if status != tc.wantStatus || !bytes.Contains([]byte(body), []byte(tc.wantBody)) {
			t.Errorf("%s: %s %s = %d %s, want %d with %q", tc.name, tc.method, tc.path, status, body, tc.wantStatus, tc.wantBody)
		}
	}
	// Each node published its GC settings before it served, under an ID
	// of its own.
	recs, err := nodes[0].st.db.Nodes(t.Context())
	if err != nil || len(recs) != 2 || recs[0].Node == recs[1].Node {
		t.Fatalf("node records = %+v, %v; want one per node", recs, err)
	}
	for _, r := range recs {
		if r.Grace != cfg.Objects.GCGrace || time.Since(r.Seen) > time.Minute {
			t.Errorf("node record %+v: want grace %v, published now", r, cfg.Objects.GCGrace)
		}
	}
}

// pgNodes starts n servers on one new PostgreSQL schema, as n nodes of a
// cluster, each with a storage path of its own and, if there are more
// than one, one block store for all (sharedBlocks); adjust changes each
// node's configuration first.
func pgNodes(t *testing.T, n int, adjust func(*config.Config)) ([]*Server, config.Config) {
	t.Helper()
	url := testPG.Get(t).NewSchema(t)
	var blocks config.Blob
	if n > 1 {
		blocks = sharedBlocks(t)
	}
	var nodes []*Server
	var cfg config.Config
	// Every node of a cluster is given the same master key.
	master := bytes.Repeat([]byte{0x5a}, iam.MasterKeySize)
	for range n {
		cfg = testConfig(t)
		cfg.Root.MasterKey = master
		cfg.Meta.Kind = config.MetaPostgres
		cfg.Meta.Postgres.URL = url
		cfg.Meta.Postgres.MaxConns = 4
		if n > 1 {
			cfg.Blob = blocks
		}
		if adjust != nil {
			adjust(&cfg)
		}
		s, _ := start(t, cfg, testLogger(io.Discard))
		nodes = append(nodes, s)
	}
	return nodes, cfg
}

// sharedBlocks starts a server to be the upstream of a cluster's nodes
// and returns the block store configuration that puts their blocks in a
// bucket of it (gateway mode): every node of a cluster must keep its
// blocks in one store (docs/scale-out.md).
func sharedBlocks(t *testing.T) config.Blob {
	t.Helper()
	cfg := testConfig(t)
	up, _ := start(t, cfg, testLogger(io.Discard))
	root := aws.Credentials{AccessKeyID: cfg.Root.RootAccessKey, SecretAccessKey: cfg.Root.RootSecretKey}
	if st, body := signedDo(t, up, root, cfg.S3.Region, http.MethodPut, "/blocks", nil); st != http.StatusOK {
		t.Fatalf("create the upstream bucket: %d %s", st, body)
	}
	b := config.Default().Blob
	b.Kind = config.BlobS3
	b.S3 = config.S3Upstream{Endpoint: "http://" + up.Addr(), Region: cfg.S3.Region, Bucket: "blocks", Prefix: "cluster/",
		AccessKey: cfg.Root.RootAccessKey, SecretKey: cfg.Root.RootSecretKey, PathStyle: true, Timeout: 30 * time.Second}
	return b
}

// TestMemoryBlocksRefusedInCluster: a node given blob.kind memory would
// share the cluster's metadata but keep its blocks in its own memory,
// acknowledging objects no other node can read: it is refused.
func TestMemoryBlocksRefusedInCluster(t *testing.T) {
	_, cfg := pgNodes(t, 1, nil)
	c := testConfig(t)
	c.Root, c.Meta = cfg.Root, cfg.Meta
	c.Blob = config.Default().Blob
	c.Blob.Kind = config.BlobMemory
	s, err := New(c, testLogger(io.Discard), io.Discard)
	if err == nil {
		s.Close()
		t.Fatal("a node with blob.kind memory started on a cluster's metadata")
	}
	if !strings.Contains(err.Error(), "memory keeps blocks in this process only") {
		t.Errorf("New = %v, want the memory blocks' refusal", err)
	}
}

// signedDo sends a request to s, signed with creds unless they are empty
// (anonymous), and returns the status and body.
func signedDo(t *testing.T, s *Server, creds aws.Credentials, region, method, path string, body []byte) (int, string) {
	t.Helper()
	st, _, b := signedDoHeader(t, s, creds, region, method, path, body, nil)
	return st, b
}

// signedDoHeader is signedDo with request headers, returning the response
// headers too.
func signedDoHeader(t *testing.T, s *Server, creds aws.Credentials, region, method, path string, body []byte, hdr map[string]string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, "http://"+s.Addr()+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	if creds.AccessKeyID != "" {
		sum := sha256.Sum256(body)
		hash := hex.EncodeToString(sum[:])
		req.Header.Set("X-Amz-Content-Sha256", hash)
		if err := v4.NewSigner().SignHTTP(t.Context(), creds, req, hash, "s3", region, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// TestPostgresPropagation changes IAM state, a bucket policy and a bucket
// configuration through node A and measures how long node B takes to
// enforce the change: a new key is accepted, a disabled key refused, a
// bucket policy applied and removed, a lifecycle rule announced, each
// within one second.
func TestPostgresPropagation(t *testing.T) {
	nodes, cfg := pgNodes(t, 2, nil)
	a, b := nodes[0], nodes[1]
	ctx := t.Context()
	root := aws.Credentials{AccessKeyID: cfg.Root.RootAccessKey, SecretAccessKey: cfg.Root.RootSecretKey}
	if st, body := signedDo(t, a, root, cfg.S3.Region, http.MethodPut, "/bkt", nil); st != http.StatusOK {
		t.Fatalf("create bucket: %d %s", st, body)
	}
	if st, body := signedDo(t, a, root, cfg.S3.Region, http.MethodPut, "/bkt/k", []byte("hello")); st != http.StatusOK {
		t.Fatalf("put: %d %s", st, body)
	}
	// within polls req on node B until want(status) holds, for at most a
	// second after the change, and reports how long it took.
	within := func(name string, start time.Time, creds aws.Credentials, path string, want int) {
		t.Helper()
		for {
			st, body := signedDo(t, b, creds, cfg.S3.Region, http.MethodGet, path, nil)
			if st == want {
				t.Logf("%s: enforced on node B after %v", name, time.Since(start))
				return
			}
			if time.Since(start) > time.Second {
				t.Fatalf("%s: node B still answers %d %s after 1s; want %d", name, st, body, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	start := time.Now()
	nk, err := a.iam.CreateUser(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	alice := aws.Credentials{AccessKeyID: nk.AccessKey, SecretAccessKey: nk.SecretKey}
	within("new key", start, alice, "/", http.StatusOK)

	start = time.Now()
	if err := a.iam.SetKeyDisabled(ctx, nk.AccessKey, true); err != nil {
		t.Fatal(err)
	}
	within("disabled key", start, alice, "/", http.StatusForbidden)

	start = time.Now()
	pol := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"}]}`
	if st, body := signedDo(t, a, root, cfg.S3.Region, http.MethodPut, "/bkt?policy", []byte(pol)); st != http.StatusNoContent {
		t.Fatalf("put policy: %d %s", st, body)
	}
	within("bucket policy", start, aws.Credentials{}, "/bkt/k", http.StatusOK)

	start = time.Now()
	if st, body := signedDo(t, a, root, cfg.S3.Region, http.MethodDelete, "/bkt?policy", nil); st != http.StatusNoContent {
		t.Fatalf("delete policy: %d %s", st, body)
	}
	within("bucket policy deleted", start, aws.Credentials{}, "/bkt/k", http.StatusForbidden)

	// A bucket configuration: lifecycle rules, which node B caches parsed
	// and announces on reads as x-amz-expiration.
	if _, h, _ := signedDoHeader(t, b, root, cfg.S3.Region, http.MethodHead, "/bkt/k", nil, nil); h.Get("X-Amz-Expiration") != "" {
		t.Fatalf("x-amz-expiration before any rule: %q", h.Get("X-Amz-Expiration"))
	}
	lc := []byte(`<LifecycleConfiguration><Rule><ID>r</ID><Filter><Prefix></Prefix></Filter><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule></LifecycleConfiguration>`)
	sum := md5.Sum(lc)
	start = time.Now()
	if st, _, body := signedDoHeader(t, a, root, cfg.S3.Region, http.MethodPut, "/bkt?lifecycle", lc,
		map[string]string{"Content-MD5": base64.StdEncoding.EncodeToString(sum[:])}); st != http.StatusOK {
		t.Fatalf("put lifecycle: %d %s", st, body)
	}
	for {
		_, h, _ := signedDoHeader(t, b, root, cfg.S3.Region, http.MethodHead, "/bkt/k", nil, nil)
		if h.Get("X-Amz-Expiration") != "" {
			t.Logf("lifecycle rule: enforced on node B after %v", time.Since(start))
			break
		}
		if time.Since(start) > time.Second {
			t.Fatal("lifecycle rule: node B sends no x-amz-expiration 1s after node A stored the rule")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPostgresOutage cuts a node's connections to PostgreSQL (a proxy in
// between): writes and reads answer 503 ServiceUnavailable with
// Retry-After, promptly; readiness goes not-ready; and once the database
// is reachable again the node serves and is ready, with no restart.
func TestPostgresOutage(t *testing.T) {
	pg := testPG.Get(t)
	proxy, url := pg.Proxy(t, pg.NewSchema(t))
	cfg := testConfig(t)
	cfg.Root.MasterKey = bytes.Repeat([]byte{0x5a}, iam.MasterKeySize)
	cfg.Meta.Kind = config.MetaPostgres
	cfg.Meta.Postgres.URL = url
	cfg.Meta.Postgres.MaxConns = 4
	s, _ := start(t, cfg, testLogger(io.Discard))
	root := aws.Credentials{AccessKeyID: cfg.Root.RootAccessKey, SecretAccessKey: cfg.Root.RootSecretKey}
	do := func(method, path, body string) (int, string) {
		return signedDo(t, s, root, cfg.S3.Region, method, path, []byte(body))
	}
	ready := func() int {
		resp, err := client().Get("http://" + s.Addr() + readyPath)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if st, body := do(http.MethodPut, "/bkt", ""); st != http.StatusOK {
		t.Fatalf("create bucket: %d %s", st, body)
	}
	if st, body := do(http.MethodPut, "/bkt/k", "hello"); st != http.StatusOK {
		t.Fatalf("put: %d %s", st, body)
	}

	proxy.Down()
	for _, tc := range []struct{ method, path, body string }{
		{http.MethodPut, "/bkt/k2", "written while down"},
		{http.MethodGet, "/bkt/k", ""},
		{http.MethodDelete, "/bkt/k", ""},
	} {
		start := time.Now()
		st, body := do(tc.method, tc.path, tc.body)
		took := time.Since(start)
		if st != http.StatusServiceUnavailable || !bytes.Contains([]byte(body), []byte("<Code>ServiceUnavailable</Code>")) {
			t.Errorf("%s %s while PostgreSQL is down = %d %s; want 503 ServiceUnavailable", tc.method, tc.path, st, body)
		}
		if took > 10*time.Second {
			t.Errorf("%s %s took %v to fail", tc.method, tc.path, took)
		}
		t.Logf("%s %s while down: %d in %v", tc.method, tc.path, st, took)
	}
	deadline := time.Now().Add(5 * time.Second)
	for ready() != http.StatusServiceUnavailable {
		if time.Now().After(deadline) {
			t.Fatal("still ready 5s into the outage")
		}
		time.Sleep(100 * time.Millisecond)
	}

	if err := proxy.Up(); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	for {
		st, body := do(http.MethodPut, "/bkt/k2", "after")
		if st == http.StatusOK {
			break
		}
		if time.Since(back) > 10*time.Second {
			t.Fatalf("put 10s after PostgreSQL came back: %d %s", st, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("writes work again %v after PostgreSQL came back", time.Since(back))
	for ready() != http.StatusOK {
		if time.Since(back) > 10*time.Second {
			t.Fatal("not ready 10s after PostgreSQL came back")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if st, body := do(http.MethodGet, "/bkt/k", ""); st != http.StatusOK || body != "hello" {
		t.Errorf("get after the outage = %d %q, want the object stored before it", st, body)
	}
}

// TestPostgresOutageConsole cuts a node's connections to PostgreSQL and
// checks that the web console answers its pages and changes 503 with a
// page saying the metadata store cannot be reached, not 500; signing in
// (which needs only IAM's state in memory) still works; and the pages
// come back with the database.
func TestPostgresOutageConsole(t *testing.T) {
	pg := testPG.Get(t)
	proxy, url := pg.Proxy(t, pg.NewSchema(t))
	cfg := testConfig(t)
	cfg.Meta.Kind = config.MetaPostgres
	cfg.Meta.Postgres.URL = url
	cfg.Meta.Postgres.MaxConns = 4
	cfg.Root.MasterKey = bytes.Repeat([]byte{0x5a}, iam.MasterKeySize)
	s, _ := start(t, cfg, testLogger(io.Discard))
	root := aws.Credentials{AccessKeyID: cfg.Root.RootAccessKey, SecretAccessKey: cfg.Root.RootSecretKey}
	if st, body := signedDo(t, s, root, cfg.S3.Region, http.MethodPut, "/bkt", nil); st != http.StatusOK {
		t.Fatalf("create bucket: %d %s", st, body)
	}
	console := consoleSession(t, "http://"+s.ConsoleAddr(), cfg.Root.RootAccessKey, cfg.Root.RootSecretKey)

	proxy.Down()
	for _, tc := range []struct{ method, path string }{
		{http.MethodGet, "/buckets"},
		{http.MethodGet, "/objects/bkt"},
		{http.MethodPost, "/buckets"},
	} {
		start := time.Now()
		st, hdr, body := console.do(tc.method, tc.path, "name=new-bucket")
		if st != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" || !strings.Contains(body, "metadata store cannot be reached") {
			t.Errorf("console %s %s while PostgreSQL is down = %d (Retry-After %q); want 503 saying the metadata store cannot be reached\n%s",
				tc.method, tc.path, st, hdr.Get("Retry-After"), body)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("console %s %s took %v to fail", tc.method, tc.path, took)
		}
	}
	consoleSession(t, "http://"+s.ConsoleAddr(), cfg.Root.RootAccessKey, cfg.Root.RootSecretKey)

	if err := proxy.Up(); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	for {
		st, _, body := console.do(http.MethodGet, "/buckets", "")
		if st == http.StatusOK && strings.Contains(body, "bkt") {
			break
		}
		if time.Since(back) > 10*time.Second {
			t.Fatalf("console /buckets 10s after PostgreSQL came back: %d\n%s", st, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A consoleClient is a browser signed in to the console.
type consoleClient struct {
	t            *testing.T
	base, cookie string
	csrf         string
}

// consoleSession signs in to the console at base as name.
func consoleSession(t *testing.T, base, name, password string) *consoleClient {
	t.Helper()
	c := &consoleClient{t: t, base: base}
	st, hdr, body := c.do(http.MethodPost, "/login", neturl.Values{"username": {name}, "password": {password}}.Encode())
	if st != http.StatusSeeOther {
		t.Fatalf("console sign-in: %d\n%s", st, body)
	}
	c.cookie = strings.SplitN(hdr.Get("Set-Cookie"), ";", 2)[0]
	st, _, body = c.do(http.MethodGet, "/login", "")
	if st != http.StatusSeeOther {
		t.Fatalf("console GET /login once signed in: %d, want 303\n%s", st, body)
	}
	if m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(c.page("/buckets")); m != nil {
		c.csrf = m[1]
	}
	return c
}

// page returns the body of a GET of path.
func (c *consoleClient) page(path string) string {
	_, _, body := c.do(http.MethodGet, path, "")
	return body
}

// do sends a request (a POST with form, and the CSRF token once known)
// and returns its status, headers and body, without following redirects.
func (c *consoleClient) do(method, path, form string) (int, http.Header, string) {
	c.t.Helper()
	if method == http.MethodPost && c.csrf != "" {
		form += "&csrf=" + neturl.QueryEscape(c.csrf)
	}
	req, err := http.NewRequestWithContext(c.t.Context(), method, c.base+path, strings.NewReader(form))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Origin", c.base)
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if c.cookie != "" {
		req.Header.Set("Cookie", c.cookie)
	}
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// A server with its metadata on PostgreSQL started on the storage path of
// a single-node (Pebble) deployment is refused: its garbage collection
// would delete every block of the single node's objects. That holds before
// the single node has claimed its blob directory (a node not restarted
// since the upgrade), even for a PostgreSQL store with buckets of its own,
// and after. And while a PostgreSQL node runs, coffer admin gc --offline on
// its storage path (which Pebble's lock refuses for a single node) is
// refused by the blob directory's lock, before it removes anything from
// .tmp.
func TestPostgresStoragePathClaimed(t *testing.T) {
	nodes, cfg := pgNodes(t, 1, nil)
	creds := aws.Credentials{AccessKeyID: cfg.Root.RootAccessKey, SecretAccessKey: cfg.Root.RootSecretKey}
	if st, body := signedDo(t, nodes[0], creds, cfg.S3.Region, http.MethodPut, "/pg-bucket", nil); st != http.StatusOK {
		t.Fatalf("create a bucket through the PostgreSQL node: %d %s", st, body)
	}

	single := testConfig(t)
	s1, stop := start(t, single, testLogger(io.Discard))
	singleCreds := aws.Credentials{AccessKeyID: single.Root.RootAccessKey, SecretAccessKey: single.Root.RootSecretKey}
	signedDo(t, s1, singleCreds, single.S3.Region, http.MethodPut, "/single", nil)
	if st, body := signedDo(t, s1, singleCreds, single.S3.Region, http.MethodPut, "/single/obj", bytes.Repeat([]byte("x"), 100<<10)); st != http.StatusOK {
		t.Fatalf("put a block on the single node: %d %s", st, body)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	claim := filepath.Join(single.StoragePath, blobDir, blob.ClaimName)
	if err := os.Rename(claim, claim+".aside"); err != nil { // as before the upgrade
		t.Fatal(err)
	}
	pg := cfg
	pg.StoragePath = single.StoragePath
	for i, want := range []error{blob.ErrUnclaimedBlocks, blob.ErrClaimed} {
		if i == 1 {
			if err := os.Rename(claim+".aside", claim); err != nil { // the single node's claim
				t.Fatal(err)
			}
		}
		if s, err := newServer(pg, testLogger(io.Discard), io.Discard, testHooks{}); !errors.Is(err, want) {
			if err == nil {
				s.Close()
			}
			t.Fatalf("PostgreSQL server on a single node's storage path = %v, want %v", err, want)
		}
		if n := blockFiles(t, single.StoragePath); n != 1 {
			t.Fatalf("the single node's block files: %d, want 1", n)
		}
	}

	inFlight := filepath.Join(cfg.StoragePath, blobDir, ".tmp", "x-in-flight")
	if err := os.WriteFile(inFlight, []byte("partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := GC(t.Context(), cfg, testLogger(io.Discard), 0); !errors.Is(err, fsblob.ErrLocked) {
		t.Errorf("offline GC beside a running PostgreSQL node = %v, want fsblob.ErrLocked", err)
	}
	if _, err := os.Stat(inFlight); err != nil {
		t.Errorf("the refused GC removed a file of the running node's .tmp: %v", err)
	}
}

// blockFiles counts the files under the blocks' directory of the storage
// path dir.
func blockFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(filepath.Join(dir, blobDir, "b"), func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			n++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
