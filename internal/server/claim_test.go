package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/coffer-s3/coffer/internal/blob"
	"github.com/coffer-s3/coffer/internal/config"
	"github.com/coffer-s3/coffer/internal/meta"
)

// TestClaimDeletedWhileStopped: a single node (Pebble and its blob
// directory) whose claim file was deleted while it was stopped starts
// again: its blocks are there, and the claim is written back as it was
// (the recorded one), so the next start finds it too.
func TestClaimDeletedWhileStopped(t *testing.T) {
	cfg := testConfig(t)
	s, stop := start(t, cfg, testLogger(io.Discard))
	root := aws.Credentials{AccessKeyID: cfg.Root.RootAccessKey, SecretAccessKey: cfg.Root.RootSecretKey}
	big := strings.Repeat("blocks", 20<<10)
	if st, b := signedDo(t, s, root, cfg.S3.Region, http.MethodPut, "/bkt", nil); st != 200 {
		t.Fatal(st, b)
	}
	if st, b := signedDo(t, s, root, cfg.S3.Region, http.MethodPut, "/bkt/big", []byte(big)); st != 200 {
		t.Fatal(st, b)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(cfg.StoragePath, blobDir, blob.ClaimName)); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		s2, err := New(cfg, testLogger(io.Discard), io.Discard)
		if err != nil {
			t.Fatalf("start %d after the claim file was deleted: %v", i+1, err)
		}
		s2.Close()
	}
}

// clusterUpstream is sharedBlocks, with the upstream server and its
// root's credentials and region, to reach the claim object.
func clusterUpstream(t *testing.T) (config.Blob, *Server, aws.Credentials, string) {
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
	return b, up, root, cfg.S3.Region
}

// TestClusterClaimDeleted: a cluster's upstream claim object is deleted
// (by an operator, a lifecycle rule) while its nodes run. A node that
// starts then writes the recorded claim back, as it was, and starts; the
// running nodes' check before GC passes; later starts pass too.
func TestClusterClaimDeleted(t *testing.T) {
	blocks, up, upRoot, upRegion := clusterUpstream(t)
	url := testPG.Get(t).NewSchema(t)
	node := func() config.Config {
		c := testConfig(t)
		c.Root.MasterKey = make([]byte, 32)
		c.Meta.Kind = config.MetaPostgres
		c.Meta.Postgres.URL = url
		c.Meta.Postgres.MaxConns = 4
		c.Blob = blocks
		return c
	}
	c0 := node()
	n0, _ := start(t, c0, testLogger(io.Discard))
	root := aws.Credentials{AccessKeyID: c0.Root.RootAccessKey, SecretAccessKey: c0.Root.RootSecretKey}
	big := strings.Repeat("blocks", 20<<10)
	if st, b := signedDo(t, n0, root, c0.S3.Region, http.MethodPut, "/bkt", nil); st != 200 {
		t.Fatal(st, b)
	}
	if st, b := signedDo(t, n0, root, c0.S3.Region, http.MethodPut, "/bkt/big", []byte(big)); st != 200 {
		t.Fatal(st, b)
	}
	if st, b := signedDo(t, up, upRoot, upRegion, http.MethodDelete, "/blocks/cluster/"+blob.ClaimName, nil); st != http.StatusNoContent {
		t.Fatal(st, b)
	}
	// A node restarts (same configuration, same block store).
	s, err := New(node(), testLogger(io.Discard), io.Discard)
	if err != nil {
		t.Fatalf("a node started after the claim was deleted: %v", err)
	}
	s.Close()
	// The running node's GC checks the claim (as before every sweep).
	if err := n0.st.blobs.(blob.Claimer).CheckClaim(t.Context()); err != nil {
		t.Errorf("CheckClaim on the running node: %v", err)
	}
	// Any later start of a node of the cluster.
	if s, err := New(node(), testLogger(io.Discard), io.Discard); err != nil {
		t.Errorf("a node of the cluster, on the cluster's one block store, can no longer start: %v", err)
	} else {
		s.Close()
	}
	if st, b := signedDo(t, n0, root, c0.S3.Region, http.MethodGet, "/bkt/big", nil); st != 200 || b != big {
		t.Errorf("GET through the running node: %d", st)
	}
}

// plainPutIO is a ClaimIO over one shared claim with the semantics of an
// upstream answering 501 to If-None-Match: s3blob's writeClaim then does
// a plain PUT, which replaces whatever is there.
type plainPutIO struct {
	mu    sync.Mutex
	claim *blob.Owner
}

type plainPutNode struct {
	blob.Claims
	io *plainPutIO
	// beforeWrite runs before the node's write of the claim.
	beforeWrite func()
	// afterFirstRead runs after the node's first read of the claim.
	afterFirstRead func()
	reads          int
}

func (n *plainPutNode) ReadClaim(context.Context) (blob.Owner, bool, error) {
	n.io.mu.Lock()
	var o blob.Owner
	found := n.io.claim != nil
	if found {
		o = *n.io.claim
	}
	n.io.mu.Unlock()
	if n.reads++; n.reads == 1 && n.afterFirstRead != nil {
		n.afterFirstRead()
	}
	return o, found, nil
}
func (n *plainPutNode) WriteClaim(_ context.Context, o blob.Owner) error {
	if n.beforeWrite != nil {
		n.beforeWrite()
	}
	n.io.mu.Lock()
	defer n.io.mu.Unlock()
	// JSON round trip as s3blob's would be.
	o.Claimed = o.Claimed.UTC()
	n.io.claim = &o
	return nil
}
func (n *plainPutNode) List(context.Context, string, func(string) error) error { return nil }
func (n *plainPutNode) HoldsBlocks(context.Context, string) (bool, error)      { return false, nil }
func (n *plainPutNode) ClaimedError(got, want blob.Owner, _ blob.Local) error {
	return errors.New("claimed by " + got.StoreID)
}
func (n *plainPutNode) UnclaimedBlocksError(string, blob.Local) error { return errors.New("unclaimed") }
func (n *plainPutNode) Claim(ctx context.Context, want blob.Owner, local blob.Local) (blob.Owner, error) {
	got, _, err := n.Claims.Claim(ctx, n, want, local)
	return got, err
}
func (n *plainPutNode) CheckClaim(ctx context.Context) error {
	_, err := n.Claims.Check(ctx, n)
	return err
}

// TestClaimRaceWithoutConditionalWrites: two nodes of a new cluster start
// at the same moment on an upstream without conditional writes (s3blob
// falls back to a plain PUT on 501), and both find no claim. The first to
// record the store in the metadata decides the claim's time; the other
// waits for that claim (or would write the same bytes): both start, and
// so does either again.
func TestClaimRaceWithoutConditionalWrites(t *testing.T) {
	url := testPG.Get(t).NewSchema(t)
	open := func() *meta.DB {
		db, err := meta.Open(meta.Config{Kind: meta.EnginePostgres, Sync: true, Logger: testLogger(io.Discard),
			Postgres: meta.PostgresConfig{URL: url, MaxConns: 4}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	dbA, dbB := open(), open()
	shared := &plainPutIO{}
	var bothRead sync.WaitGroup
	bothRead.Add(2)
	aDone := make(chan struct{})
	a := &plainPutNode{io: shared, afterFirstRead: func() { bothRead.Done(); bothRead.Wait() }}
	b := &plainPutNode{io: shared, afterFirstRead: func() { bothRead.Done(); bothRead.Wait() }, beforeWrite: func() { <-aDone }}
	var errA, errB error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		errA = claimBlobs(t.Context(), a, dbA, "A", blob.Local{Shared: true})
		close(aDone)
	}()
	go func() {
		defer wg.Done()
		time.Sleep(time.Millisecond) // B's want has a later time
		errB = claimBlobs(t.Context(), b, dbB, "B", blob.Local{Shared: true})
	}()
	wg.Wait()
	t.Logf("node A: %v", errA)
	t.Logf("node B: %v", errB)
	if errB != nil {
		t.Errorf("node B of the cluster, on the cluster's one block store, refused at start: %v", errB)
	}
	// Node A restarts.
	a2 := &plainPutNode{io: shared}
	if err := claimBlobs(t.Context(), a2, open(), "A again", blob.Local{Shared: true}); err != nil {
		t.Errorf("node A cannot restart on the cluster's one block store: %v", err)
	}
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
