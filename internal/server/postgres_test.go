package server

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/coffer-s3/coffer/internal/config"
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
	var nodes []*Server
	var cfg config.Config
	for range 2 {
		cfg = testConfig(t)
		cfg.Meta.Kind = config.MetaPostgres
		cfg.Meta.Postgres.URL = url
		cfg.Meta.Postgres.MaxConns = 4
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
		{name: "if-none-match on B", node: 1, method: http.MethodPut, path: "/bkt/k", body: "again",
			hdr: map[string]string{"If-None-Match": "*"}, wantStatus: http.StatusPreconditionFailed},
		{name: "list on B", node: 1, method: http.MethodGet, path: "/bkt?list-type=2", wantStatus: http.StatusOK, wantBody: "<Key>k</Key>"},
	} {
		status, body := do(nodes[tc.node], tc.method, tc.path, []byte(tc.body), tc.hdr)
		if status != tc.wantStatus || !bytes.Contains([]byte(body), []byte(tc.wantBody)) {
			t.Errorf("%s: %s %s = %d %s, want %d with %q", tc.name, tc.method, tc.path, status, body, tc.wantStatus, tc.wantBody)
		}
	}
}
