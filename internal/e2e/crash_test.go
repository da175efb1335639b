package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	mrand "math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"golang.org/x/sync/errgroup"

	"github.com/coffer-s3/coffer/internal/adminapi"
)

// Settings of the crash test's server: small blocks and inline threshold
// so that modest objects span several blocks.
const (
	crashBlockSize = 256 * kib
	crashInline    = 32 * kib
	crashKeys      = 200
	crashWriters   = 16
)

// crashArgs are the flags of the crash test's server. Read-only.
var crashArgs = []string{"--block-size", "256KiB", "--inline-threshold", "32KiB", "--gc-interval", "0"}

// writeMix is what a crashWriter writes, over the keys key-000 to
// key-<crashKeys-1>: 35 % PUTs of 1 to inline bytes, 25 % PUTs of inline+1
// to large bytes, multipart percent multipart uploads (two or three parts,
// every one but the last of 5 MiB), DELETEs for the rest.
type writeMix struct {
	inline, large int
	multipart     int
}

// crashMix is the crash test's mix. Read-only.
var crashMix = writeMix{inline: crashInline, large: 2 * mib, multipart: 7}

// version is what a key holds: absent, or content with this hash, size
// and S3 ETag.
type version struct {
	absent bool
	hash   string // sha256 hex
	size   int
	etag   string // unquoted
}

func (v version) String() string {
	if v.absent {
		return "absent"
	}
	return fmt.Sprintf("%d bytes sha256 %.12s ETag %s", v.size, v.hash, v.etag)
}

// ledgerOp is one write (PUT, multipart upload or DELETE) of one key.
type ledgerOp struct {
	v          version
	what       string
	start, end time.Time
	acked      bool   // a 200/204 was received
	versionID  string // in a versioned bucket, the version (or delete marker) the acknowledged write made
}

// ledger records every write of a crash round, acknowledged or not. Safe
// for concurrent use.
type ledger struct {
	mu  sync.Mutex
	ops map[string][]*ledgerOp
}

func newLedger(base map[string]version, at time.Time) *ledger {
	l := &ledger{ops: make(map[string][]*ledgerOp)}
	for k, v := range base {
		l.ops[k] = []*ledgerOp{{v: v, what: "state before the round", start: at, end: at, acked: true}}
	}
	return l
}

func (l *ledger) begin(key, what string, v version) *ledgerOp {
	op := &ledgerOp{v: v, what: what, start: time.Now()}
	l.mu.Lock()
	l.ops[key] = append(l.ops[key], op)
	l.mu.Unlock()
	return op
}

func (l *ledger) ack(op *ledgerOp) {
	now := time.Now()
	l.mu.Lock()
	op.acked, op.end = true, now
	l.mu.Unlock()
}

// fail records that op ended without an acknowledgement.
func (l *ledger) fail(op *ledgerOp) {
	now := time.Now()
	l.mu.Lock()
	op.end = now
	l.mu.Unlock()
}

// longest returns the longest time any write took, and which.
func (l *ledger) longest() (time.Duration, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var d time.Duration
	var what string
	for _, ops := range l.ops {
		for _, op := range ops[1:] {
			if took := op.end.Sub(op.start); took > d {
				d, what = took, op.what
			}
		}
	}
	return d, what
}

// candidates returns every version key may hold after a crash. Each write
// took effect at some instant between its start and its acknowledgement,
// so an acknowledged write X can be the last one unless another
// acknowledged write started after X was acknowledged. A write without an
// acknowledgement may or may not have taken effect, and if it did it may be
// the last.
func (l *ledger) candidates(key string) []*ledgerOp {
	l.mu.Lock()
	defer l.mu.Unlock()
	ops := l.ops[key]
	var out []*ledgerOp
	for _, x := range ops {
		if !x.acked {
			out = append(out, x)
			continue
		}
		last := true
		for _, y := range ops {
			if y != x && y.acked && !y.start.Before(x.end) {
				last = false
				break
			}
		}
		if last {
			out = append(out, x)
		}
	}
	return out
}

// crashWriter performs random writes until stop is closed.
type crashWriter struct {
	t      *testing.T
	c      *s3.Client
	bucket string
	mix    writeMix
	led    *ledger
	// expected reports whether a failed write is one the test provokes (a
	// server killed, a database down); any other failure fails the test.
	expected func(err error) bool
	rng      *mrand.Rand
}

func (w *crashWriter) run(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		key := fmt.Sprintf("key-%03d", w.rng.IntN(crashKeys))
		switch r := w.rng.IntN(100); {
		case r < 35:
			w.put(key, 1+w.rng.IntN(w.mix.inline))
		case r < 60:
			w.put(key, w.mix.inline+1+w.rng.IntN(w.mix.large-w.mix.inline))
		case r < 60+w.mix.multipart:
			w.multipart(key)
		default:
			w.del(key)
		}
	}
}

// done records the outcome of op: acknowledged, or unknown. An error that
// the test did not provoke is a failure of the test.
func (w *crashWriter) done(op *ledgerOp, versionID *string, err error) {
	if err == nil {
		op.versionID = aws.ToString(versionID)
		w.led.ack(op)
		return
	}
	w.led.fail(op)
	if !w.expected(err) {
		w.t.Errorf("%s failed unexpectedly: %v", op.what, err)
	}
}

func (w *crashWriter) put(key string, size int) {
	body := randBytes(size)
	op := w.led.begin(key, "PUT "+key, version{hash: sha256Hex(body), size: size, etag: md5Hex(body)})
	out, err := w.c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(w.bucket), Key: aws.String(key), Body: bytes.NewReader(body)})
	var vid *string
	if err == nil {
		vid = out.VersionId
	}
	w.done(op, vid, err)
}

func (w *crashWriter) del(key string) {
	op := w.led.begin(key, "DELETE "+key, version{absent: true})
	out, err := w.c.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(w.bucket), Key: aws.String(key)})
	var vid *string
	if err == nil {
		vid = out.VersionId
	}
	w.done(op, vid, err)
}

func (w *crashWriter) multipart(key string) {
	n := 2 + w.rng.IntN(2)
	parts := make([][]byte, n)
	for i := range parts {
		parts[i] = randBytes(5 * mib)
	}
	parts[n-1] = randBytes(1 + w.rng.IntN(600*kib))
	whole := bytes.Join(parts, nil)
	op := w.led.begin(key, "multipart upload of "+key, version{hash: sha256Hex(whole), size: len(whole), etag: multipartETag(parts...)})
	ctx := context.Background()
	var vid *string
	err := func() error {
		mp, err := w.c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(w.bucket), Key: aws.String(key)})
		if err != nil {
			return err
		}
		var done []types.CompletedPart
		for i, p := range parts {
			out, err := w.c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(w.bucket), Key: aws.String(key), UploadId: mp.UploadId,
				PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(p)})
			if err != nil {
				return err
			}
			done = append(done, types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: out.ETag})
		}
		out, err := w.c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(w.bucket), Key: aws.String(key),
			UploadId: mp.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: done}})
		if err == nil {
			vid = out.VersionId
		}
		return err
	}()
	w.done(op, vid, err)
}

// readState reads every key of the key space and checks each object is
// whole: Content-Length equals the bytes received. Keys for which prev
// holds a version are only checked with HEAD against it (size and ETag);
// the others are read whole.
func readState(t *testing.T, c *s3.Client, bucket string, prev map[string]version) map[string]version {
	t.Helper()
	state := make(map[string]version, crashKeys)
	var mu sync.Mutex
	var g errgroup.Group
	g.SetLimit(8)
	for i := 0; i < crashKeys; i++ {
		key := fmt.Sprintf("key-%03d", i)
		g.Go(func() error {
			var v version
			var err error
			if p, ok := prev[key]; ok {
				v, err = headVersion(c, bucket, key, p)
			} else {
				v, err = readVersion(c, bucket, key)
			}
			if err != nil {
				return err
			}
			mu.Lock()
			state[key] = v
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	// The listing agrees with the reads.
	listed := make(map[string]int64)
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatalf("ListObjectsV2: %v", err)
		}
		for _, o := range out.Contents {
			listed[aws.ToString(o.Key)] = aws.ToInt64(o.Size)
		}
	}
	for k, v := range state {
		size, ok := listed[k]
		switch {
		case v.absent && ok:
			t.Errorf("%s: GetObject says absent but ListObjectsV2 lists it (%d bytes)", k, size)
		case !v.absent && !ok:
			t.Errorf("%s: GetObject returns %v but ListObjectsV2 does not list it", k, v)
		case !v.absent && size != int64(v.size):
			t.Errorf("%s: ListObjectsV2 size %d, GetObject %d bytes", k, size, v.size)
		}
	}
	return state
}

func readVersion(c *s3.Client, bucket, key string) (version, error) {
	out, err := c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if errCode(err) == "NoSuchKey" {
		return version{absent: true}, nil
	}
	if err != nil {
		return version{}, fmt.Errorf("GetObject %s: %v", key, err)
	}
	defer out.Body.Close()
	body, err := io.ReadAll(out.Body)
	if err != nil {
		return version{}, fmt.Errorf("GetObject %s: read after %d bytes: %v (partial object?)", key, len(body), err)
	}
	if aws.ToInt64(out.ContentLength) != int64(len(body)) {
		return version{}, fmt.Errorf("GetObject %s: Content-Length %d but %d bytes", key, aws.ToInt64(out.ContentLength), len(body))
	}
	return version{hash: sha256Hex(body), size: len(body), etag: strings.Trim(aws.ToString(out.ETag), `"`)}, nil
}

// headVersion checks with HEAD that key still holds prev: absent, or the
// same size and ETag. It returns prev if so.
func headVersion(c *s3.Client, bucket, key string, prev version) (version, error) {
	out, err := c.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	switch {
	case errCode(err) == "NotFound" && prev.absent:
		return prev, nil
	case err != nil && errCode(err) != "NotFound":
		return version{}, fmt.Errorf("HeadObject %s: %v", key, err)
	case err == nil && !prev.absent && aws.ToInt64(out.ContentLength) == int64(prev.size) && strings.Trim(aws.ToString(out.ETag), `"`) == prev.etag:
		return prev, nil
	}
	// Changed although nothing wrote it: read it for the report.
	return readVersion(c, bucket, key)
}

func TestCrashRecovery(t *testing.T) {
	rounds := 20
	if testing.Short() {
		rounds = 3
	}
	runCrash(t, rounds, false)
}

// TestCrashRecoveryVersioned is TestCrashRecovery on a bucket with
// versioning enabled: besides the current state, every acknowledged
// version (and delete marker) must survive every kill, and every version
// listed must be one some write made.
func TestCrashRecoveryVersioned(t *testing.T) {
	rounds := 8
	if testing.Short() {
		rounds = 2
	}
	runCrash(t, rounds, true)
}

func runCrash(t *testing.T, rounds int, versioned bool) {
	dir := t.TempDir()
	// The ops listener's metrics show whether freed block files were
	// rewritten for new blocks (blob.fs.reuse) before the kills.
	ops := freeAddr(t)
	args := append(slices.Clone(crashArgs), "--console-address", ops)
	srv := startChild(t, dir, args...)
	c := newClient(t, srv.endpoint)
	const bucket = "crash"
	if _, err := c.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatalf("CreateBucket: %v", err)
	}
	hist := newVersionHistory()
	if versioned {
		setVersioning(t, c, bucket, types.BucketVersioningStatusEnabled)
	}
	state := make(map[string]version, crashKeys)
	for i := 0; i < crashKeys; i++ {
		state[fmt.Sprintf("key-%03d", i)] = version{absent: true}
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := mrand.New(mrand.NewPCG(seed, 1))
	var acked, unacked int
	var reused float64 // blocks written over kept freed files, over the rounds

	for round := 0; round < rounds && !t.Failed(); round++ {
		led := newLedger(state, time.Now())
		var killed atomic.Bool
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for i := 0; i < crashWriters; i++ {
			w := &crashWriter{t: t, c: c, bucket: bucket, mix: crashMix, led: led,
				expected: func(error) bool { return killed.Load() }, // only after the kill
				rng:      mrand.New(mrand.NewPCG(rng.Uint64(), uint64(i)))}
			wg.Add(1)
			go func() {
				defer wg.Done()
				w.run(stop)
			}()
		}
		t0 := time.Now()
		time.Sleep(300*time.Millisecond + time.Duration(rng.IntN(1200))*time.Millisecond)
		killed.Store(true)
		reused += metric(t, "http://"+ops+"/metrics", "coffer_blob_reused_total")
		close(stop)
		srv.kill()
		t1 := time.Now()
		wg.Wait()
		t2 := time.Now()
		srv = startChild(t, dir, args...)
		c = newClient(t, srv.endpoint)
		t3 := time.Now()
		untouched := make(map[string]version)
		for k, ops := range led.ops {
			if len(ops) == 1 {
				untouched[k] = ops[0].v
			}
		}
		got := readState(t, c, bucket, untouched)
		t.Logf("round %d: writes %v, writers stopped in %v, restart %v, verify %v", round,
			t1.Sub(t0).Round(time.Millisecond), t2.Sub(t1).Round(time.Millisecond), t3.Sub(t2).Round(time.Millisecond), time.Since(t3).Round(time.Millisecond))
		a, u := checkLedger(t, led, got, fmt.Sprint("round ", round))
		acked += a
		unacked += u
		state = got
		if versioned {
			hist.add(led)
			hist.check(t, c, bucket, got, fmt.Sprint("round ", round))
		}
		checkUsageAfterCrash(t, srv.endpoint, c, bucket, fmt.Sprint("round ", round))
	}
	t.Logf("%d rounds: %d acknowledged writes, %d unacknowledged at the kill, %.0f blocks written over reused files", rounds, acked, unacked, reused)
	if acked < rounds*10 {
		t.Errorf("only %d writes were acknowledged in %d rounds; the test exercised little", acked, rounds)
	}
	if reused == 0 && !versioned { // a versioned bucket's writes free no block
		t.Errorf("no block was written over a reused file in %d rounds: the kills never met the reuse path", rounds)
	}

	// Garbage collection leaves exactly the live blocks: first with the
	// uploads the kills left behind, then after aborting them.
	for pass := 0; pass < 2 && !t.Failed(); pass++ {
		want := expectedBlocks(t, c, bucket, crashBlockSize, crashInline, pass == 0)
		srv.stop()
		out, err := runCoffer(t, "admin", "gc", "--offline", "--storage-path", dir, "--grace", "0s")
		if err != nil {
			t.Fatalf("coffer admin gc: %v\n%s", err, out)
		}
		if got := int64(blockFiles(t, dir)); got != want {
			t.Errorf("pass %d: %d block files after GC, want %d (live objects%s)\ngc output: %s", pass, got, want,
				map[bool]string{true: " and parts of uploads in progress", false: ""}[pass == 0], out)
		}
		srv = startChild(t, dir, crashArgs...)
		c = newClient(t, srv.endpoint)
		if got := readState(t, c, bucket, nil); !maps.Equal(got, state) {
			for k := range state {
				if got[k] != state[k] {
					t.Errorf("after GC %s holds %v, before %v", k, got[k], state[k])
				}
			}
		}
		if versioned {
			hist.check(t, c, bucket, state, fmt.Sprint("after GC pass ", pass))
		}
		checkUsageAfterCrash(t, srv.endpoint, c, bucket, fmt.Sprint("after GC pass ", pass))
		if pass == 0 {
			abortAll(t, c, bucket)
		}
	}
	srv.stop()
}

// checkLedger checks that every key of got (the state read after a
// restart) holds what some write of led could have left, and returns how
// many writes led recorded as acknowledged and not.
func checkLedger(t *testing.T, led *ledger, got map[string]version, when string) (acked, unacked int) {
	t.Helper()
	for k, v := range got {
		cands := led.candidates(k)
		ok := slices.ContainsFunc(cands, func(op *ledgerOp) bool { return op.v == v })
		if !ok {
			var desc []string
			for _, op := range led.ops[k] {
				desc = append(desc, fmt.Sprintf("%s → %v acked=%v [%s…%s]", op.what, op.v, op.acked,
					op.start.Format("15:04:05.000"), op.end.Format("15:04:05.000")))
			}
			t.Errorf("%s: %s holds %v, which no write could have left; writes:\n  %s", when, k, v, strings.Join(desc, "\n  "))
		}
	}
	for _, ops := range led.ops {
		for _, op := range ops[1:] {
			if op.acked {
				acked++
			} else {
				unacked++
			}
		}
	}
	return acked, unacked
}

// versionHistory is what the writes of a versioned crash test made, over
// all rounds: the acknowledged versions and delete markers by key and
// version ID, and every version any write (acknowledged or not) may have
// made, by key.
type versionHistory struct {
	acked   map[string]map[string]version // key → version ID → version
	written map[string][]version          // key → every version a write began
}

func newVersionHistory() *versionHistory {
	return &versionHistory{acked: map[string]map[string]version{}, written: map[string][]version{}}
}

// add records a round's ledger.
func (h *versionHistory) add(led *ledger) {
	for k, ops := range led.ops {
		for _, op := range ops[1:] {
			h.written[k] = append(h.written[k], op.v)
			if op.acked {
				if h.acked[k] == nil {
					h.acked[k] = map[string]version{}
				}
				h.acked[k][op.versionID] = op.v
			}
		}
	}
}

// check lists every version of bucket and checks that each acknowledged
// version is there, as it was written (HEAD by version ID: size and ETag);
// that every version listed is one some write made; and that each key's
// latest version is what a GET returned (state, absent for a delete
// marker).
func (h *versionHistory) check(t *testing.T, c *s3.Client, bucket string, state map[string]version, when string) {
	t.Helper()
	listed := map[string]map[string]version{}
	latest := map[string]version{}
	in := &s3.ListObjectVersionsInput{Bucket: aws.String(bucket)}
	for {
		page, err := c.ListObjectVersions(t.Context(), in)
		if err != nil {
			t.Fatalf("%s: ListObjectVersions: %v", when, err)
		}
		add := func(key, vid string, v version, isLatest bool) {
			if listed[key] == nil {
				listed[key] = map[string]version{}
			}
			if _, dup := listed[key][vid]; dup {
				t.Errorf("%s: version %s of %s listed twice", when, vid, key)
			}
			listed[key][vid] = v
			if isLatest {
				if _, dup := latest[key]; dup {
					t.Errorf("%s: %s has two latest versions", when, key)
				}
				latest[key] = v
			}
		}
		for _, v := range page.Versions {
			add(aws.ToString(v.Key), aws.ToString(v.VersionId),
				version{size: int(aws.ToInt64(v.Size)), etag: strings.Trim(aws.ToString(v.ETag), `"`)}, aws.ToBool(v.IsLatest))
		}
		for _, m := range page.DeleteMarkers {
			add(aws.ToString(m.Key), aws.ToString(m.VersionId), version{absent: true}, aws.ToBool(m.IsLatest))
		}
		if !aws.ToBool(page.IsTruncated) {
			break
		}
		in.KeyMarker, in.VersionIdMarker = page.NextKeyMarker, page.NextVersionIdMarker
	}
	same := func(a, b version) bool { return a.absent == b.absent && a.size == b.size && a.etag == b.etag }
	n := 0
	for k, vs := range h.acked {
		for vid, want := range vs {
			got, ok := listed[k][vid]
			switch {
			case !ok:
				t.Errorf("%s: acknowledged version %s of %s (%v) is gone", when, vid, k, want)
			case !same(got, want):
				t.Errorf("%s: version %s of %s lists as %v, was written as %v", when, vid, k, got, want)
			}
			n++
		}
	}
	for k, vs := range listed {
		for vid, v := range vs {
			if v.absent {
				continue
			}
			if !slices.ContainsFunc(h.written[k], func(w version) bool { return same(w, v) }) {
				t.Errorf("%s: version %s of %s (%v) is no write's", when, vid, k, v)
			}
		}
		want, ok := state[k]
		if l, has := latest[k]; has && ok && !(l.absent && want.absent) && !(same(l, version{size: want.size, etag: want.etag})) {
			t.Errorf("%s: latest version of %s is %v, GET returned %v", when, k, l, want)
		}
	}
	t.Logf("%s: %d acknowledged versions and markers all present", when, n)
}

// checkUsageAfterCrash checks that the usage the server keeps for bucket
// survived the kills exactly: it equals a recount of what S3 shows (the
// listed objects, the uploads left in progress and their parts), and the
// server's own recount of its records finds no difference.
func checkUsageAfterCrash(t *testing.T, endpoint string, c *s3.Client, bucket, when string) {
	t.Helper()
	ac, err := adminapi.NewClient(endpoint, testAccessKey, testSecretKey, testRegion, newHTTPClient())
	if err != nil {
		t.Fatal(err)
	}
	bi, err := ac.Bucket(t.Context(), bucket)
	if err != nil {
		t.Fatalf("%s: admin Bucket(%s): %v", when, bucket, err)
	}
	if want := visibleUsage(t, c, bucket); bi.Usage != want {
		t.Errorf("%s: usage of %s = %+v, but S3 shows %+v", when, bucket, bi.Usage, want)
	} else {
		t.Logf("%s: usage %+v, as S3 shows", when, bi.Usage)
	}
	res, err := ac.CheckUsage(t.Context(), adminapi.UsageCheckRequest{})
	if err != nil {
		t.Fatalf("%s: admin CheckUsage: %v", when, err)
	}
	if len(res.Mismatches) > 0 {
		t.Errorf("%s: the server's recount differs from its usage: %+v", when, res.Mismatches)
	}
}

// TestLedgerCandidates checks the crash test's oracle on hand-made
// histories of one key.
func TestLedgerCandidates(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	v := func(s string) version { return version{hash: s, size: len(s), etag: s} }
	type op struct {
		name       string
		start, end int // ms; end < 0: not acknowledged
	}
	cases := []struct {
		name string
		ops  []op
		want []string
	}{
		{"sequential", []op{{"a", 0, 1}, {"b", 2, 3}, {"c", 4, 5}}, []string{"c"}},
		{"overlapping", []op{{"a", 0, 10}, {"b", 5, 6}}, []string{"a", "b"}},
		{"started after the other's ack", []op{{"a", 0, 3}, {"b", 3, 4}}, []string{"b"}},
		{"in flight after acked", []op{{"a", 0, 1}, {"b", 2, -1}}, []string{"a", "b"}},
		{"two in flight", []op{{"a", 0, 1}, {"b", 2, -1}, {"c", 3, -1}}, []string{"a", "b", "c"}},
		{"in flight before acked", []op{{"a", 0, -1}, {"b", 1, 2}}, []string{"a", "b"}},
		{"chain", []op{{"a", 0, 5}, {"b", 4, 8}, {"c", 6, 9}}, []string{"b", "c"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := &ledger{ops: map[string][]*ledgerOp{}}
			for _, o := range tc.ops {
				lo := &ledgerOp{v: v(o.name), what: o.name, start: at(o.start)}
				if o.end >= 0 {
					lo.acked, lo.end = true, at(o.end)
				}
				l.ops["k"] = append(l.ops["k"], lo)
			}
			var got []string
			for _, c := range l.candidates("k") {
				got = append(got, c.what)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("candidates %q, want %q", got, tc.want)
			}
		})
	}
}
