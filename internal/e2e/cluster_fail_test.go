package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	mrand "math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"golang.org/x/sync/errgroup"

	"github.com/coffer-s3/coffer/internal/adminapi"
	"github.com/coffer-s3/coffer/internal/sigv4"
)

// Settings of the cluster load tests: small blocks, so that objects of a
// few hundred KiB span several, and a short load.
const (
	loadBlockSize = 64 * kib
	loadInline    = 16 * kib
)

// clusterLoadArgs are the nodes' flags in the load tests. Read-only.
var clusterLoadArgs = []string{"--block-size", "64KiB", "--inline-threshold", "16KiB", "--gc-interval", "0"}

// clusterMix is what the load tests' writers write. Read-only.
var clusterMix = writeMix{inline: loadInline, large: 256 * kib, multipart: 2}

// load is crashWriters writing to one bucket through one client, into a
// ledger, until stopped.
type load struct {
	led  *ledger
	stop func() // stops the writers and waits for them
}

// startLoad starts writers on bucket, whose keys hold base (nil: none);
// expected says which failures the test provokes.
func startLoad(t *testing.T, c *s3.Client, bucket string, base map[string]version, writers int, expected func(error) bool) *load {
	t.Helper()
	if base == nil {
		base = make(map[string]version, crashKeys)
		for i := range crashKeys {
			base[fmt.Sprintf("key-%03d", i)] = version{absent: true}
		}
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("load seed %d", seed)
	l := &load{led: newLedger(base, time.Now())}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range writers {
		w := &crashWriter{t: t, c: c, bucket: bucket, mix: clusterMix, led: l.led, expected: expected,
			rng: mrand.New(mrand.NewPCG(seed, uint64(i)))}
		wg.Go(func() { w.run(stop) })
	}
	l.stop = sync.OnceFunc(func() {
		close(stop)
		wg.Wait()
	})
	t.Cleanup(l.stop)
	return l
}

// fill writes size random bytes to every key of the load's key space and
// returns what they hold.
func fill(t *testing.T, c *s3.Client, bucket string, size int) map[string]version {
	t.Helper()
	state := make(map[string]version, crashKeys)
	var mu sync.Mutex
	var g errgroup.Group
	g.SetLimit(8)
	for i := range crashKeys {
		key := fmt.Sprintf("key-%03d", i)
		g.Go(func() error {
			body := randBytes(size)
			if _, err := c.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
				return fmt.Errorf("fill %s: %w", key, err)
			}
			mu.Lock()
			state[key] = version{hash: sha256Hex(body), size: size, etag: md5Hex(body)}
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	return state
}

// verify stops the load, reads every key through c and checks each holds
// what some write may have left — every acknowledged write byte-exact,
// unless a later one replaced it — and returns what the keys hold.
func (l *load) verify(t *testing.T, c *s3.Client, bucket string) map[string]version {
	t.Helper()
	l.stop()
	got := readState(t, c, bucket, nil)
	acked, unacked := checkLedger(t, l.led, got, "after the load")
	longest, what := l.led.longest()
	t.Logf("%d writes acknowledged, %d not; the longest took %v (%s)", acked, unacked, longest.Round(time.Millisecond), what)
	return got
}

// ackedSince counts the acknowledged writes that started at or after t0.
func (l *load) ackedSince(t0 time.Time) int {
	l.led.mu.Lock()
	defer l.led.mu.Unlock()
	n := 0
	for _, ops := range l.led.ops {
		for _, op := range ops[1:] {
			if op.acked && !op.start.Before(t0) {
				n++
			}
		}
	}
	return n
}

// TestClusterPostgresOutage takes PostgreSQL away for two seconds in the
// middle of a load of 12 writers: cut off (a pgtest.Proxy that resets
// every connection and refuses new ones), or restarted (pg_ctl stop -m
// fast, which terminates the sessions, then start). Every request that
// fails, fails with 503 ServiceUnavailable and within a bound; the nodes
// recover by themselves; and every acknowledged write reads back
// byte-exact.
func TestClusterPostgresOutage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		cfg      clusterConfig
		down, up func(*testing.T, *cluster)
	}{
		{"Cut", clusterConfig{proxy: true, args: clusterLoadArgs},
			func(_ *testing.T, cl *cluster) { cl.proxy.Down() },
			func(t *testing.T, cl *cluster) {
				if err := cl.proxy.Up(); err != nil {
					t.Fatal(err)
				}
			}},
		{"Restart", clusterConfig{ownPG: true, args: clusterLoadArgs},
			func(t *testing.T, cl *cluster) { cl.pg.Down(t) },
			func(t *testing.T, cl *cluster) { cl.pg.Up(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			testPostgresOutage(t, startCluster(t, tc.cfg), tc.down, tc.up)
		})
	}
}

func testPostgresOutage(t *testing.T, cl *cluster, down, up func(*testing.T, *cluster)) {
	const outage = 2 * time.Second
	c := cl.client(t)
	b := mkBucket(t, c, "outage")

	var unavailable atomic.Int64
	var recovered atomic.Bool
	l := startLoad(t, c, b, nil, 12, func(err error) bool {
		if errStatus(err) != http.StatusServiceUnavailable || errCode(err) != "ServiceUnavailable" || recovered.Load() {
			return false
		}
		unavailable.Add(1)
		return true
	})
	time.Sleep(time.Second)
	down(t, cl)
	wentDown := time.Now()
	// While the database is away, reads fail fast with 503 too.
	for i := range cl.nodes {
		start := time.Now()
		_, err := cl.nodeClient(t, i).HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String("key-000")})
		if errStatus(err) != http.StatusServiceUnavailable {
			t.Errorf("HeadObject through node %d while PostgreSQL is down: %v, want 503", i, err)
		}
		_, err = cl.nodeClient(t, i).ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String(b)})
		wantErr(t, fmt.Sprintf("ListObjectsV2 through node %d while PostgreSQL is down", i), err, "ServiceUnavailable", http.StatusServiceUnavailable)
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("node %d took %v to answer two requests while PostgreSQL is down", i, took)
		}
	}
	time.Sleep(outage - time.Since(wentDown))
	up(t, cl)
	cameBack := time.Now()

	// Each node takes writes again by itself, without a restart.
	for i := range cl.nodes {
		nc := cl.nodeClient(t, i)
		for {
			_, err := nc.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(fmt.Sprintf("probe-%d", i)), Body: http.NoBody})
			if err == nil {
				break
			}
			if time.Since(cameBack) > 10*time.Second {
				t.Fatalf("node %d still fails 10s after PostgreSQL came back: %v", i, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Logf("every node writes again %v after PostgreSQL came back", time.Since(cameBack).Round(time.Millisecond))
	// From now on nothing may fail.
	time.Sleep(200 * time.Millisecond)
	recovered.Store(true)
	back := time.Now()
	time.Sleep(time.Second)
	l.stop()
	if n := l.ackedSince(back); n < 10 {
		t.Errorf("only %d writes acknowledged after the recovery", n)
	}
	if n := unavailable.Load(); n == 0 {
		t.Error("no write got a 503: the outage missed the load")
	} else {
		t.Logf("%d writes answered 503 during the outage", n)
	}
	for i := range cl.nodes {
		if _, err := cl.nodeClient(t, i).DeleteObject(t.Context(), &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String(fmt.Sprintf("probe-%d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	l.verify(t, c, b)
	if longest, what := l.led.longest(); longest > 10*time.Second {
		t.Errorf("%s took %v: a request hung in the outage", what, longest)
	}
	checkUsageAfterCrash(t, cl.nodes[1].endpoint, c, b, "after the outage")
}

// TestClusterKill kills one of three nodes with SIGKILL under 16 writers,
// in a bucket without and with versioning. Only requests in flight on it
// fail; the others keep serving; every acknowledged write (and, versioned,
// every acknowledged version and delete marker) reads back byte-exact; and
// GC on a survivor collects the blocks the dead node's unfinished writes
// left, and nothing else.
func TestClusterKill(t *testing.T) {
	t.Parallel()
	for _, versioned := range []bool{false, true} {
		t.Run(map[bool]string{false: "Unversioned", true: "Versioned"}[versioned], func(t *testing.T) {
			t.Parallel()
			testClusterKill(t, versioned)
		})
	}
}

func testClusterKill(t *testing.T, versioned bool) {
	const grace = 5 * time.Second
	// A pass drains the garbage queue only past the shared free delay too
	// (the time GETs on other nodes have): shorter than the grace here.
	cl := startCluster(t, clusterConfig{args: append([]string{"--gc-grace", grace.String(), "--gc-shared-free-delay", "1s"}, clusterLoadArgs...)})
	c := cl.client(t)
	b := mkBucket(t, c, "kill")
	if versioned {
		setVersioning(t, c, b, types.BucketVersioningStatusEnabled)
	}
	dead := cl.nodes[1].addr
	var inFlight atomic.Int64
	l := startLoad(t, c, b, nil, 16, func(err error) bool {
		var ne *nodeError
		if errors.As(err, &ne) && ne.addr == dead {
			inFlight.Add(1)
			return true
		}
		return false
	})
	time.Sleep(1500 * time.Millisecond)
	cl.kill(1)
	killed := time.Now()
	time.Sleep(1500 * time.Millisecond)
	l.stop()
	stopped := time.Now()
	after := l.ackedSince(killed)
	t.Logf("%d writes in flight on the killed node failed; %d acknowledged after the kill", inFlight.Load(), after)
	if after < 20 {
		t.Errorf("only %d writes acknowledged by the surviving nodes after the kill", after)
	}
	state := l.verify(t, c, b)
	hist := newVersionHistory()
	if versioned {
		hist.add(l.led)
		hist.check(t, c, b, state, "after the kill")
	}
	checkUsageAfterCrash(t, cl.nodes[0].endpoint, c, b, "after the kill")

	// Once the grace has passed, a pass on a survivor leaves exactly the
	// blocks of the objects and of the uploads in progress.
	time.Sleep(grace - time.Since(stopped) + 100*time.Millisecond)
	st, err := cl.admin(t, 2).GC(t.Context(), adminapi.GCRequest{GraceSeconds: aws.Float64(grace.Seconds())})
	if err != nil {
		t.Fatalf("GC through node 2: %v", err)
	}
	want := expectedBlocks(t, c, b, loadBlockSize, loadInline, true)
	if got := int64(len(cl.blocks(t))); got != want {
		t.Errorf("after GC the upstream holds %d blocks, want %d (objects and uploads in progress); GC: %+v", got, want, st)
	} else {
		t.Logf("GC deleted %d blobs; %d blocks left, all referenced", st.Deleted, got)
	}
	if after := l.verify(t, c, b); !maps.Equal(after, state) {
		t.Error("the objects changed in the GC pass")
	}
	if versioned {
		hist.check(t, c, b, state, "after GC")
	}
}

// TestClusterGC writes through nodes 1 and 2 — a load, and PUTs that stall
// mid-body after their first blocks are stored — while node 0 runs GC
// passes back to back, asking for no grace at all. No pass may delete a
// block of a write in flight on another node, or of an object: every
// acknowledged write reads back byte-exact. The passes do collect garbage
// older than the nodes' grace meanwhile.
func TestClusterGC(t *testing.T) {
	t.Parallel()
	const grace = 5 * time.Second
	// A pass drains the garbage queue only past the shared free delay too
	// (the time GETs on other nodes have), which the nodes' own prompt
	// freeing waits as well: the grace, so that the passes, which run
	// without a pause, collect most of it.
	cl := startCluster(t, clusterConfig{args: append([]string{"--gc-grace", grace.String(), "--gc-shared-free-delay", grace.String()}, clusterLoadArgs...)})
	writers := &nodeSet{addrs: []string{cl.nodes[1].addr, cl.nodes[2].addr}}
	c := cl.clientOf(t, writers)
	b := mkBucket(t, c, "gc")
	// Objects of two blocks on every key, so that the load's first
	// overwrites and deletes make garbage the passes may collect.
	l := startLoad(t, c, b, fill(t, c, b, 2*loadBlockSize), 8, func(error) bool { return false })

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var wg sync.WaitGroup
	// Stalled writes, recorded in a ledger of their own: keys written once.
	stalled := newLedger(nil, time.Now())
	for i := range 2 {
		node := cl.nodes[1+i]
		wg.Go(func() {
			for n := 0; ctx.Err() == nil; n++ {
				key := fmt.Sprintf("stalled-%d-%d", i, n)
				body := randBytes(4*loadBlockSize + 100)
				op := stalled.begin(key, "stalled PUT "+key+" through "+node.addr, version{hash: sha256Hex(body), size: len(body), etag: md5Hex(body)})
				if err := stalledPut(ctx, node.endpoint, b, key, body, 800*time.Millisecond); err != nil {
					stalled.fail(op)
					if ctx.Err() == nil {
						t.Errorf("%s: %v", op.what, err)
					}
					continue
				}
				stalled.ack(op)
			}
		})
	}
	var passes, elsewhere, deleted atomic.Int64
	a := cl.admin(t, 0)
	wg.Go(func() {
		for ctx.Err() == nil {
			st, err := a.GC(ctx, adminapi.GCRequest{GraceSeconds: aws.Float64(0)})
			if err != nil {
				if ctx.Err() == nil {
					t.Errorf("GC through node 0: %v", err)
				}
				return
			}
			passes.Add(1)
			deleted.Add(int64(st.Deleted))
			if st.Elsewhere {
				elsewhere.Add(1)
			}
		}
	})
	time.Sleep(grace + 2*time.Second) // the last passes find garbage older than the grace
	cancel()
	wg.Wait()
	t.Logf("%d GC passes through node 0 (%d found the lease taken) deleted %d blobs", passes.Load(), elsewhere.Load(), deleted.Load())
	if deleted.Load() == 0 {
		t.Error("the GC passes deleted nothing: the test collected no garbage")
	}
	l.verify(t, c, b)
	n := 0
	for key, ops := range stalled.ops {
		if op := ops[0]; op.acked {
			n++
			v, err := readVersion(c, b, key)
			if err != nil || v != op.v {
				t.Errorf("%s was acknowledged; it reads back as %v (%v), want %v", op.what, v, err, op.v)
			}
		}
	}
	if n == 0 {
		t.Error("no stalled PUT was acknowledged")
	}
	t.Logf("%d stalled PUTs acknowledged and intact", n)
}

// stalledPut PUTs body to endpoint/bucket/key (UNSIGNED-PAYLOAD), pausing
// for stall after the first half of the body.
func stalledPut(ctx context.Context, endpoint, bucket, key string, body []byte, stall time.Duration) error {
	half := len(body) / 2
	pr, pw := io.Pipe()
	go func() {
		pw.Write(body[:half])
		select {
		case <-time.After(stall):
		case <-ctx.Done():
			pw.CloseWithError(ctx.Err())
			return
		}
		pw.Write(body[half:])
		pw.Close()
	}()
	r, err := http.NewRequestWithContext(ctx, http.MethodPut, endpoint+"/"+bucket+"/"+key, pr)
	if err != nil {
		return err
	}
	r.ContentLength = int64(len(body))
	sigv4.SignRequest(r, testCreds, testRegion, time.Now(), "UNSIGNED-PAYLOAD")
	resp, err := newHTTPClient().Do(r)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d: %s", resp.StatusCode, msg)
	}
	return nil
}
