package e2e

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/coffer-s3/coffer/internal/adminapi"
	"github.com/coffer-s3/coffer/internal/meta/pgtest"
)

// clusterPG is the PostgreSQL server of this test binary's clusters,
// started by the first cluster test; TestMain stops it.
var clusterPG pgtest.Lazy

// clusterBlockPrefix is where the nodes keep their blocks in the upstream
// bucket.
const clusterBlockPrefix = "cluster/"

// clusterNodeArgs are the flags of every node: the blocks and inline
// threshold of the in-process servers, whose test bodies TestCluster
// runs, and no background GC. Read-only.
var clusterNodeArgs = []string{"--block-size", "1MiB", "--inline-threshold", "128KiB", "--gc-interval", "0"}

// clusterConfig says how to start a cluster.
type clusterConfig struct {
	// proxy puts a pgtest.Proxy between the nodes and PostgreSQL, so that
	// the test can cut the database off.
	proxy bool
	// ownPG gives the cluster a PostgreSQL server of its own
	// (pgtest.Start), so that the test can restart it.
	ownPG bool
	// args replace clusterNodeArgs.
	args []string
}

// cluster is three `coffer serve` processes on one PostgreSQL schema
// (--meta.kind postgres) and one upstream bucket and prefix (--blob.kind
// s3) of a fourth, in its default fs mode, with the same root credentials
// and master key: scale-out as docs/scale-out.md describes it.
type cluster struct {
	nodes    []*child
	upstream *child
	upc      *s3.Client     // root client of the upstream
	bucket   string         // the upstream bucket holding the blocks
	proxy    *pgtest.Proxy  // with clusterConfig.proxy
	pg       *pgtest.Server // with clusterConfig.ownPG
	live     *nodeSet       // the nodes the round-robin clients use
	lb       string         // address of the nginx in front (startBalancer); "" if none
	dials    atomic.Uint64  // dialAddr's turn
}

// startCluster starts a cluster; its processes are killed when t ends.
func startCluster(t *testing.T, cfg clusterConfig) *cluster {
	t.Helper()
	cl := &cluster{live: &nodeSet{}}
	var pg *pgtest.Server
	if cfg.ownPG {
		pg = pgtest.Start(t)
		cl.pg = pg
	} else {
		pg = clusterPG.Get(t)
	}
	url := pg.NewSchema(t)
	if cfg.proxy {
		cl.proxy, url = pg.Proxy(t, url)
	}
	cl.upstream = startChild(t, t.TempDir(), "--fsync=false") // a test's blocks need not survive a power cut
	cl.upc = newClient(t, cl.upstream.endpoint)
	cl.bucket = mkBucket(t, cl.upc, "blocks")

	args := cfg.args
	if args == nil {
		args = clusterNodeArgs
	}
	args = append([]string{"--meta.kind", "postgres",
		"--blob.kind", "s3", "--blob.s3.endpoint", cl.upstream.endpoint, "--blob.s3.bucket", cl.bucket,
		"--blob.s3.prefix", clusterBlockPrefix, "--blob.s3.access-key", testAccessKey}, args...)
	env := []string{
		"COFFER_META_POSTGRES_URL=" + url,
		"COFFER_MASTER_KEY=" + base64.StdEncoding.EncodeToString(randBytes(32)),
		"COFFER_BLOB_S3_SECRET_KEY=" + testSecretKey,
	}
	for range 3 {
		n := startChildEnv(t, t.TempDir(), env, args...)
		cl.nodes = append(cl.nodes, n)
		cl.live.add(n.addr)
	}
	// Every node started on the first one's claim of the prefix: the
	// nodes share one metadata store, and so its ID.
	if o := upstreamClaim(t, cl.upc, cl.bucket, clusterBlockPrefix); len(o.StoreID) != 32 {
		t.Fatalf("the cluster's claim of %s = %+v, want a store ID", clusterBlockPrefix, o)
	}
	return cl
}

// client returns a root SDK client whose requests go to the live nodes in
// turn, as behind a round-robin load balancer: each request to the next
// node. It signs for the first node's address, and the Host header stays
// that, whichever node a request reaches.
func (cl *cluster) client(t *testing.T, opts ...func(*s3.Options)) *s3.Client {
	t.Helper()
	return cl.clientOf(t, cl.live, opts...)
}

// clientOf is client over the nodes of set.
func (cl *cluster) clientOf(t *testing.T, set *nodeSet, opts ...func(*s3.Options)) *s3.Client {
	t.Helper()
	hc := newHTTPClient()
	hc.Transport = &roundRobin{base: hc.Transport, nodes: set}
	return newClient(t, cl.nodes[0].endpoint, append([]func(*s3.Options){func(o *s3.Options) { o.HTTPClient = hc }}, opts...)...)
}

// httpClient returns an HTTP client whose requests go to the live nodes in
// turn, the Host header unchanged.
func (cl *cluster) httpClient() *http.Client {
	hc := newHTTPClient()
	hc.Transport = &roundRobin{base: hc.Transport, nodes: cl.live}
	return hc
}

// rawEndpoint returns the first node's endpoint and a round-robin HTTP
// client: hand-made requests are signed for the first node, as the SDK
// clients' are, and each goes to the next node.
func (cl *cluster) rawEndpoint() (string, *http.Client) {
	return cl.nodes[0].endpoint, cl.httpClient()
}

// dialAddr returns the live nodes' addresses in turn.
func (cl *cluster) dialAddr() string { return cl.live.pick(cl.dials.Add(1) - 1) }

// startBalancer puts nginx, configured as docs/scale-out.md says, in front
// of the nodes: url returns its endpoint from then on.
func (cl *cluster) startBalancer(t *testing.T) {
	t.Helper()
	var nodes []string
	for _, n := range cl.nodes {
		nodes = append(nodes, n.addr)
	}
	cl.lb, _ = startNginx(t, nodes)
}

// url returns the endpoint of the cluster's load balancer: what real
// clients are given, one URL that they sign for.
func (cl *cluster) url(t *testing.T) string {
	t.Helper()
	if cl.lb == "" {
		t.Fatal("cluster.url: the cluster has no load balancer (startBalancer)")
	}
	return "http://" + cl.lb
}

// propagation is one second: IAM state, bucket policies and bucket
// configurations changed through one node must be enforced by every node
// within that (docs/design/0011-postgres-metadata.md; measured in
// milliseconds). Until then another node may still apply the old state:
// its cached lifecycle rules, for one, still put x-amz-expiration on a
// HEAD a few milliseconds after DeleteBucketLifecycle returned.
func (cl *cluster) propagation() time.Duration { return time.Second }

// nodeClient returns a root SDK client of node i alone.
func (cl *cluster) nodeClient(t *testing.T, i int, opts ...func(*s3.Options)) *s3.Client {
	t.Helper()
	return newClient(t, cl.nodes[i].endpoint, opts...)
}

// admin returns an admin API client of node i as root.
func (cl *cluster) admin(t *testing.T, i int) *adminapi.Client {
	t.Helper()
	ac, err := adminapi.NewClient(cl.nodes[i].endpoint, testAccessKey, testSecretKey, testRegion, newHTTPClient())
	if err != nil {
		t.Fatal(err)
	}
	return ac
}

// blocks returns the keys of every block in the upstream: those under
// the object service's b/, not the nodes' claim of the prefix beside them.
func (cl *cluster) blocks(t *testing.T) []string {
	t.Helper()
	return upstreamKeys(t, cl.upc, cl.bucket, clusterBlockPrefix+"b/")
}

// kill takes node i out of the round-robin rotation, as a balancer's
// health check would, and kills it with SIGKILL: requests in flight on it
// fail, later ones go to the others.
func (cl *cluster) kill(i int) {
	cl.live.remove(cl.nodes[i].addr)
	cl.nodes[i].kill()
}

// nodeSet is the set of node addresses a balancer sends requests to. Safe
// for concurrent use.
type nodeSet struct {
	mu    sync.Mutex // guards addrs
	addrs []string
}

func (s *nodeSet) add(addr string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addrs = append(s.addrs, addr)
}

func (s *nodeSet) remove(addr string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addrs = slices.DeleteFunc(s.addrs, func(a string) bool { return a == addr })
}

// pick returns the node for the n-th request.
func (s *nodeSet) pick(n uint64) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addrs[n%uint64(len(s.addrs))]
}

// roundRobin is an http.RoundTripper that sends each request to the next
// node of a nodeSet. It rewrites the URL's host only: the Host header, which
// SigV4 signs, stays what the client signed, as behind a balancer that
// passes it on.
type roundRobin struct {
	base  http.RoundTripper
	nodes *nodeSet
	n     atomic.Uint64
}

func (rr *roundRobin) RoundTrip(r *http.Request) (*http.Response, error) {
	addr := rr.nodes.pick(rr.n.Add(1) - 1)
	r2 := r.Clone(r.Context())
	if r2.Host == "" {
		r2.Host = r.URL.Host
	}
	r2.URL.Host = addr
	resp, err := rr.base.RoundTrip(r2)
	if err != nil {
		return nil, &nodeError{addr: addr, err: err}
	}
	return resp, nil
}

// nodeError is a request that failed below HTTP, and the node it was sent
// to.
type nodeError struct {
	addr string
	err  error
}

func (e *nodeError) Error() string { return fmt.Sprintf("node %s: %v", e.addr, e.err) }
func (e *nodeError) Unwrap() error { return e.err }

// TestCluster runs the bodies of the single-server suite against three
// nodes: the SDK and hand-made requests through a round-robin client that
// sends each request to the next node, the real clients (the aws CLI,
// boto3, s3cmd, rclone, mc) through nginx configured as docs/scale-out.md
// says; the bodies run in parallel, each on buckets of its own. Then it
// tests what only several nodes can get wrong: a multipart upload across
// named nodes, conditional-write and DeleteBucket races between nodes, IAM
// changes that must reach every node within a second, and the balancer
// sending requests on when a node dies.
func TestCluster(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, clusterConfig{})
	cl.startBalancer(t)
	// First, while the cluster has no bucket.
	t.Run("Buckets", func(t *testing.T) { testBuckets(t, cl) })
	t.Run("Suite", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			body func(*testing.T, s3Target)
		}{
			// Real clients, through nginx.
			{"AWSCLI", func(t *testing.T, ts s3Target) { requireTool(t, "aws"); requireTool(t, "curl"); testAWSCLI(t, ts) }},
			{"Boto3", func(t *testing.T, ts s3Target) {
				requireTool(t, "boto3", "python3", "-c", "import boto3")
				testBoto3(t, ts)
			}},
			{"S3cmd", func(t *testing.T, ts s3Target) { requireTool(t, "s3cmd"); testS3cmd(t, ts) }},
			{"Rclone", func(t *testing.T, ts s3Target) { requireTool(t, "rclone", "rclone", "version"); testRclone(t, ts) }},
			{"MC", testMC},
			{"TrailingChecksums", testTrailingChecksums}, // the SDK through a TLS proxy in front of nginx
			{"Usage", testUsage},                         // coffer admin through nginx
			// SDK and hand-made requests, round-robin.
			{"Objects", testObjects},
			{"Ranges", testRanges},
			{"ReadConditions", testReadConditions},
			{"ConditionalWrites", testConditionalWrites},
			{"Listing", testListing},
			{"Multipart", testMultipart},
			{"MultipartChecksums", testMultipartChecksums},
			{"CopyObject", testCopyObject},
			{"Versioning", testVersioning},
			{"GetObjectAttributes", testGetObjectAttributes},
			{"ListingEncoding", testListingEncoding},
			{"ManyKeys", testManyKeys},
			{"StreamingUploads", testStreamingUploads},
			{"ErrorResponses", testErrorResponses},
			{"Presigned", testPresigned},
			{"HeaderSectionTooLarge", testHeaderSectionTooLarge},
			{"Wire", testWire},
			{"VersionIDNull", testVersionIDNull},
			{"ACLs", testACLs},
			{"CORSSDK", testCORSSDK},
			{"LifecycleConfiguration", testLifecycleConfiguration},
			{"PostObjectSDK", testPostObjectSDK},
			{"PostObjectVersioned", testPostObjectVersioned},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				tc.body(t, cl)
			})
		}
	})
	t.Run("MultipartAcrossNodes", func(t *testing.T) { testClusterMultipart(t, cl) })
	t.Run("ConditionalRace", func(t *testing.T) { testClusterConditionalRace(t, cl) })
	t.Run("DeleteBucketRace", func(t *testing.T) { testClusterDeleteBucketRace(t, cl) })
	t.Run("IAM", func(t *testing.T) { testClusterIAM(t, cl) })
	t.Run("Nginx", func(t *testing.T) { testClusterNginx(t, cl) }) // last: it kills a node
}

// checkOnEveryNode reads bucket/key through each node and checks it holds
// want.
func checkOnEveryNode(t *testing.T, cl *cluster, bucket, key string, want []byte) {
	t.Helper()
	for i := range cl.nodes {
		checkBody(t, fmt.Sprintf("GET %s through node %d", key, i), get(t, cl.nodeClient(t, i), bucket, key), want)
	}
}
