package server

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/coffer-s3/coffer/internal/adminapi"
	"github.com/coffer-s3/coffer/internal/audit"
	"github.com/coffer-s3/coffer/internal/config"
	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/meta"
)

// TestPostgresAuditCluster runs two nodes on one PostgreSQL schema: the
// audit log is the cluster's, so a query through node A's admin API (what
// `coffer admin audit ls` and the console's Audit page read) shows the
// events of requests served by both nodes.
func TestPostgresAuditCluster(t *testing.T) {
	nodes, cfg := pgNodes(t, 2, nil)
	root := aws.Credentials{AccessKeyID: cfg.Root.RootAccessKey, SecretAccessKey: cfg.Root.RootSecretKey}
	for _, r := range []struct {
		node int
		path string
	}{{0, "/bkt"}, {0, "/bkt/from-a"}, {1, "/bkt/from-b"}} {
		body := []byte("x")
		if r.path == "/bkt" {
			body = nil
		}
		if st, body := signedDo(t, nodes[r.node], root, cfg.S3.Region, http.MethodPut, r.path, body); st != http.StatusOK {
			t.Fatalf("PUT %s on node %d: %d %s", r.path, r.node, st, body)
		}
	}
	// Node A's query flushes A's own log; B writes within its flush
	// interval: flush it, as time would.
	if err := nodes[1].audit.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	c, err := adminapi.NewClient("http://"+nodes[0].Addr(), root.AccessKeyID, root.SecretAccessKey, cfg.S3.Region, client())
	if err != nil {
		t.Fatal(err)
	}
	page, err := c.AuditEvents(t.Context(), audit.Filter{Bucket: "bkt", Op: "PutObject"})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, e := range page.Events {
		keys = append(keys, e.Key)
	}
	// IDs, and so the order of the log, follow the writes to PostgreSQL:
	// here B's flush came before A's.
	slices.Sort(keys)
	if got, want := strings.Join(keys, " "), "from-a from-b"; got != want {
		t.Errorf("PutObject events of bkt through node A: %q, want %q", got, want)
	}
}

// TestPostgresAuditOutage cuts the audit log's connections to PostgreSQL
// (the metadata's stay up): requests are still served, as fast, and once
// the audit queue is full its events are dropped and counted in
// coffer_audit_events_dropped_total; when PostgreSQL is back, new events
// are written again.
func TestPostgresAuditOutage(t *testing.T) {
	pg := testPG.Get(t)
	url := pg.NewSchema(t)
	proxy, proxied := pg.Proxy(t, url)
	cfg := testConfig(t)
	cfg.Root.MasterKey = bytes.Repeat([]byte{0x5a}, iam.MasterKeySize)
	cfg.Meta.Kind = config.MetaPostgres
	cfg.Meta.Postgres.URL = url
	cfg.Meta.Postgres.MaxConns = 4
	const queue = 16
	// The audit log's pool reaches PostgreSQL through the proxy.
	viaProxy, err := meta.Open(meta.Config{Kind: meta.EnginePostgres, Postgres: meta.PostgresConfig{URL: proxied, MaxConns: 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = viaProxy.Close() })
	s, _ := startWith(t, cfg, testLogger(io.Discard), testHooks{auditQueue: queue, auditBatch: 4, auditDB: viaProxy})
	root := aws.Credentials{AccessKeyID: cfg.Root.RootAccessKey, SecretAccessKey: cfg.Root.RootSecretKey}
	put := func(path string) time.Duration {
		t.Helper()
		start := time.Now()
		body := []byte("x")
		if path == "/bkt" {
			body = nil
		}
		if st, body := signedDo(t, s, root, cfg.S3.Region, http.MethodPut, path, body); st != http.StatusOK {
			t.Fatalf("PUT %s: %d %s", path, st, body)
		}
		return time.Since(start)
	}
	put("/bkt")
	if err := s.audit.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}

	proxy.Down()
	var slowest time.Duration
	for i := range 4 * queue {
		slowest = max(slowest, put("/bkt/down-"+strconv.Itoa(i)))
	}
	if slowest > 5*time.Second {
		t.Errorf("the slowest PUT while the audit log's database was down took %v", slowest)
	}
	dropped := metricValue(t, s, "coffer_audit_events_dropped_total")
	if dropped == 0 {
		t.Errorf("coffer_audit_events_dropped_total = 0 after %d audited PUTs with a queue of %d and no database", 4*queue, queue)
	}
	t.Logf("slowest PUT during the outage %v; %v audit events dropped", slowest, dropped)

	if err := proxy.Up(); err != nil {
		t.Fatal(err)
	}
	// What the queue held is written once PostgreSQL answers again.
	deadline := time.Now().Add(60 * time.Second)
	for st := s.audit.Stats(); st.Queued > 0 || st.Written != st.Recorded; st = s.audit.Stats() {
		if time.Now().After(deadline) {
			t.Fatalf("the held audit events not written within 60s: %+v", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	put("/bkt/after")
	for {
		p, err := s.audit.Query(t.Context(), audit.Filter{Bucket: "bkt", KeyPrefix: "after"})
		if err == nil && len(p.Events) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the event of a PUT after the outage not stored within 60s: %v, %+v", err, s.audit.Stats())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// metricValue scrapes the server's /metrics and returns the value of the
// sample named name (without labels).
func metricValue(t *testing.T, s *Server, name string) float64 {
	t.Helper()
	status, body := get(t, "http://"+s.ConsoleAddr()+"/metrics")
	if status != http.StatusOK {
		t.Fatalf("GET /metrics: %d", status)
	}
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no sample %s in /metrics", name)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestPostgresMasterKeyCheck: the first node on a database stores the
// master-key check when it starts; a node given another key, or none,
// refuses to start with a message that names the problem and the fix and
// holds no key; a node with the same key starts.
func TestPostgresMasterKeyCheck(t *testing.T) {
	url := testPG.Get(t).NewSchema(t)
	blocks := sharedBlocks(t)
	node := func(key []byte) config.Config {
		cfg := testConfig(t)
		cfg.Root.MasterKey = key
		cfg.Meta.Kind = config.MetaPostgres
		cfg.Meta.Postgres.URL = url
		cfg.Meta.Postgres.MaxConns = 2
		cfg.Blob = blocks
		return cfg
	}
	key := bytes.Repeat([]byte{0x5a}, iam.MasterKeySize)
	other := bytes.Repeat([]byte{0x33}, iam.MasterKeySize)
	start(t, node(key), testLogger(io.Discard)) // no IAM change: the check is stored at start

	for _, tc := range []struct {
		name string
		key  []byte
		want []string
	}{
		{"another key", other, []string{"master key is not the cluster's", "COFFER_MASTER_KEY"}},
		{"no key", nil, []string{"no master key", "COFFER_MASTER_KEY", "head -c 32 /dev/urandom | base64"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := node(tc.key)
			s, err := New(cfg, testLogger(io.Discard), io.Discard)
			if err == nil {
				s.Close()
				t.Fatal("New succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("New: %v\nwant it to say %q", err, w)
				}
			}
			for _, k := range [][]byte{key, other} {
				if strings.Contains(err.Error(), iam.FormatMasterKey(k)) {
					t.Errorf("New's error holds a master key: %v", err)
				}
			}
			if _, err := os.Stat(filepath.Join(cfg.StoragePath, masterKeyFile)); !os.IsNotExist(err) {
				t.Errorf("a master-key file was made in the node's storage path: %v", err)
			}
		})
	}
	start(t, node(key), testLogger(io.Discard)) // the same key: starts
}

// TestPostgresRootCredentialsRequired: a node on a shared database given
// no root credentials refuses to start, saying what to set, and writes
// and prints none; a node given them in its credentials file starts and
// accepts them.
func TestPostgresRootCredentialsRequired(t *testing.T) {
	url := testPG.Get(t).NewSchema(t)
	cfg := testConfig(t)
	cfg.Root = iam.Config{MasterKey: bytes.Repeat([]byte{0x5a}, iam.MasterKeySize)}
	cfg.Meta.Kind = config.MetaPostgres
	cfg.Meta.Postgres.URL = url
	cfg.Meta.Postgres.MaxConns = 2

	var out bytes.Buffer
	s, err := New(cfg, testLogger(io.Discard), &out)
	if err == nil {
		s.Close()
		t.Fatal("New succeeded without root credentials")
	}
	for _, w := range []string{"no root credentials", config.EnvRootAccessKey, config.EnvRootSecretKey, "every node"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("New: %v\nwant it to say %q", err, w)
		}
	}
	if _, err := os.Stat(filepath.Join(cfg.StoragePath, credentialsFile)); !os.IsNotExist(err) {
		t.Errorf("a root-credentials file was made in the node's storage path: %v", err)
	}
	if out.Len() != 0 {
		t.Errorf("New printed %q", out.String())
	}

	creds := iam.Config{RootAccessKey: "CLUSTERROOT", RootSecretKey: "cluster-root-secret"}
	if err := writeCredentials(filepath.Join(cfg.StoragePath, credentialsFile), creds); err != nil {
		t.Fatal(err)
	}
	s, _ = start(t, cfg, testLogger(io.Discard))
	sc := aws.Credentials{AccessKeyID: creds.RootAccessKey, SecretAccessKey: creds.RootSecretKey}
	if st, body := signedDo(t, s, sc, cfg.S3.Region, http.MethodPut, "/filecreds", nil); st != http.StatusOK {
		t.Errorf("CreateBucket with the file's credentials = %d %s, want 200", st, body)
	}
}
