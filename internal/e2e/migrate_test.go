package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/google/go-cmp/cmp"

	"github.com/coffer-s3/coffer/internal/meta/pgtest"
)

// migratePG is the PostgreSQL server of the migration tests.
var migratePG pgtest.Lazy

// migrateTarget is where a migration writes: a database and a prefix of
// an upstream bucket, with the upstream's credentials.
type migrateTarget struct {
	pgURL    string
	endpoint string // the upstream S3 API (or a proxy in front of it)
	bucket   string
	prefix   string
	ak, sk   string
}

// migrateCmd returns `coffer admin migrate` from dir to tg, the bucket's
// credentials in the environment.
func migrateCmd(t *testing.T, dir string, tg migrateTarget, extra ...string) *exec.Cmd {
	t.Helper()
	args := append([]string{"admin", "migrate", "--from-storage-path", dir, "--to-postgres", tg.pgURL,
		"--to-s3", tg.endpoint + "/" + tg.bucket + "/" + tg.prefix}, extra...)
	cmd := exec.CommandContext(t.Context(), cofferBinary(t), args...)
	cmd.Env = childEnv(t.TempDir(), "COFFER_BLOB_S3_ACCESS_KEY="+tg.ak, "COFFER_BLOB_S3_SECRET_KEY="+tg.sk)
	return cmd
}

// runMigrate runs a migration to its end and returns stdout, stderr and
// the exit error.
func runMigrate(t *testing.T, dir string, tg migrateTarget, extra ...string) (string, string, error) {
	t.Helper()
	cmd := migrateCmd(t, dir, tg, extra...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

// migrateJSON is what migrate --json prints.
type migrateJSON struct {
	Source        string `json:"source"`
	Phase         string `json:"phase"`
	Keys          int64  `json:"keys"`
	Verified      int64  `json:"verified"`
	Mismatched    int64  `json:"mismatched"`
	MasterKeyFrom string `json:"master_key_from"`
}

func mustMigrate(t *testing.T, dir string, tg migrateTarget, extra ...string) (migrateJSON, string) {
	t.Helper()
	out, errOut, err := runMigrate(t, dir, tg, append(extra, "--json")...)
	if err != nil {
		t.Fatalf("coffer admin migrate: %v\nstdout: %s\nstderr: %s", err, out, tail(errOut, 8*kib))
	}
	var res migrateJSON
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("migrate --json printed %q: %v", out, err)
	}
	return res, errOut
}

// slowProxy forwards to target, each request after delay: a migration
// through it takes long enough to be killed in the middle.
func slowProxy(t *testing.T, target string, delay time.Duration) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u) // keeps the Host header the client signed
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(delay)
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// servedState is what a node serves of buckets, one line per version:
// key, version ID, latest, delete marker, size, ETag, SHA-256 of the
// body, content type, user metadata and checksums.
func servedState(t *testing.T, c *s3.Client, buckets ...string) []string {
	t.Helper()
	ctx := t.Context()
	var lines []string
	for _, b := range buckets {
		in := &s3.ListObjectVersionsInput{Bucket: aws.String(b)}
		for {
			page, err := c.ListObjectVersions(ctx, in)
			if err != nil {
				t.Fatalf("ListObjectVersions(%s): %v", b, err)
			}
			for _, m := range page.DeleteMarkers {
				lines = append(lines, fmt.Sprintf("%s/%s %s latest=%t delete marker", b, aws.ToString(m.Key), aws.ToString(m.VersionId), aws.ToBool(m.IsLatest)))
			}
			for _, v := range page.Versions {
				out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b), Key: v.Key, VersionId: v.VersionId,
					ChecksumMode: types.ChecksumModeEnabled})
				if err != nil {
					t.Fatalf("GetObject(%s/%s %s): %v", b, aws.ToString(v.Key), aws.ToString(v.VersionId), err)
				}
				body, err := io.ReadAll(out.Body)
				out.Body.Close()
				if err != nil {
					t.Fatalf("read %s/%s: %v", b, aws.ToString(v.Key), err)
				}
				meta := make([]string, 0, len(out.Metadata))
				for k, val := range out.Metadata {
					meta = append(meta, k+"="+val)
				}
				sort.Strings(meta)
				lines = append(lines, fmt.Sprintf("%s/%s %s latest=%t size=%d etag=%s sha256=%s type=%s meta=%v crc32c=%s sha256sum=%s",
					b, aws.ToString(v.Key), aws.ToString(v.VersionId), aws.ToBool(v.IsLatest), len(body), aws.ToString(out.ETag),
					sha256Hex(body), aws.ToString(out.ContentType), meta, aws.ToString(out.ChecksumCRC32C), aws.ToString(out.ChecksumSHA256)))
			}
			if !aws.ToBool(page.IsTruncated) {
				break
			}
			in.KeyMarker, in.VersionIdMarker = page.NextKeyMarker, page.NextVersionIdMarker
		}
	}
	slices.Sort(lines)
	return lines
}

// TestMigrate fills a single node (inline and block objects with
// metadata and checksums, a multipart object, versions and a delete
// marker, an upload in progress, a user with a scoped key, a bucket
// policy), stops it, migrates it to PostgreSQL and a prefix of an
// upstream Coffer — killing the first run in the middle and running it
// again — and serves the result from a node with --meta.kind postgres
// --blob.kind s3: every version byte-exact with its ETag, metadata and
// checksums, the same usage, the upload completes, the keys and the
// policy work. A second, uninterrupted migration of the same node ends
// in the same state.
func TestMigrate(t *testing.T) {
	pg := migratePG.Get(t)
	ctx := t.Context()
	up := startServer(t)
	upc := up.client(t)
	upBucket := mkBucket(t, upc, "blocks")

	dir := t.TempDir()
	node := startChild(t, dir, "--block-size", "1MiB")
	c := newClient(t, node.endpoint)
	admin := adminCLI{t: t, bin: cofferBinary(t), endpoint: node.endpoint, ak: testAccessKey, sk: testSecretKey}

	data, ver := mkBucket(t, c, "data"), mkBucket(t, c, "versions")
	_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &data, Key: aws.String("docs/small.txt"), Body: bytes.NewReader(randBytes(1000)),
		ContentType: aws.String("text/plain"), Metadata: map[string]string{"owner": "ops"}, ChecksumAlgorithm: types.ChecksumAlgorithmCrc32c})
	check(t, "PUT small", err, "")
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: &data, Key: aws.String("big.bin"), Body: bytes.NewReader(randBytes(3*mib + 17)),
		ChecksumAlgorithm: types.ChecksumAlgorithmSha256})
	check(t, "PUT big", err, "")
	put(t, c, data, "pub/readme", []byte("public"))
	withSHA := func(in *s3.UploadPartInput) { in.ChecksumAlgorithm = types.ChecksumAlgorithmSha256 }
	u := createUpload(t, c, data, "multi", func(in *s3.CreateMultipartUploadInput) { in.ChecksumAlgorithm = types.ChecksumAlgorithmSha256 })
	if _, err := u.complete(u.part(1, randBytes(5*mib), withSHA), u.part(2, randBytes(mib+3), withSHA)); err != nil {
		t.Fatal(err)
	}
	pending := createUpload(t, c, data, "pending")
	pendingPart := randBytes(mib + 5)
	pendingCP := pending.part(1, pendingPart)
	if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: &ver,
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	put(t, c, ver, "doc", randBytes(2*mib+1))
	put(t, c, ver, "doc", []byte("second"))
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &ver, Key: aws.String("doc")}); err != nil {
		t.Fatal(err)
	}
	put(t, c, ver, "kept", []byte("kept"))
	if _, err := c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: &data, Policy: aws.String(`{"Version":"2012-10-17","Statement":[
	  {"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::` + data + `/pub/*"}]}`)}); err != nil {
		t.Fatal(err)
	}
	alice := admin.key("user", "add", "alice")
	admin.must("policy", "add", "rw", writeJSONFile(t, "rw.json", `{"Version":"2012-10-17","Statement":[
	  {"Effect":"Allow","Action":["s3:GetObject","s3:PutObject"],"Resource":"arn:aws:s3:::`+data+`/*"}]}`))
	admin.must("policy", "attach", "rw", "--user", "alice")
	scoped := admin.key("key", "add", "--user", "alice", "--policy", writeJSONFile(t, "scope.json", `{"Version":"2012-10-17","Statement":[
	  {"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::`+data+`/docs/*"}]}`))

	// What IAM allows, checked on a node.
	checkIAM := func(endpoint string) {
		t.Helper()
		a := newClient(t, endpoint, asKey(alice.AccessKey, alice.SecretKey))
		_, err := a.PutObject(ctx, &s3.PutObjectInput{Bucket: &data, Key: aws.String("alice/" + endpoint), Body: strings.NewReader("a")})
		check(t, "alice PUT", err, "")
		s := newClient(t, endpoint, asKey(scoped.AccessKey, scoped.SecretKey))
		_, err = s.GetObject(ctx, &s3.GetObjectInput{Bucket: &data, Key: aws.String("docs/small.txt")})
		check(t, "scoped key GET docs/", err, "")
		_, err = s.GetObject(ctx, &s3.GetObjectInput{Bucket: &data, Key: aws.String("big.bin")})
		check(t, "scoped key GET outside its scope", err, "AccessDenied")
		_, err = s.PutObject(ctx, &s3.PutObjectInput{Bucket: &data, Key: aws.String("docs/x"), Body: strings.NewReader("x")})
		check(t, "scoped key PUT", err, "AccessDenied")
		if code, body := httpDo(t, "GET", endpoint+"/"+data+"/pub/readme", nil); code != 200 || string(body) != "public" {
			t.Errorf("anonymous GET of pub/readme through the bucket policy: %d %q", code, body)
		}
		if code, _ := httpDo(t, "GET", endpoint+"/"+data+"/big.bin", nil); code != 403 {
			t.Errorf("anonymous GET of big.bin: %d, want 403", code)
		}
	}
	checkIAM(node.endpoint)
	want := servedState(t, c, data, ver)
	wantUsage := bucketLs(admin)

	tg := migrateTarget{pgURL: pg.NewSchema(t), endpoint: up.endpoint, bucket: upBucket, prefix: "mig/", ak: up.ak, sk: up.sk}
	// Offline only: the running node holds the storage path.
	if out, errOut, err := runMigrate(t, dir, tg); err == nil || !strings.Contains(errOut, "must be stopped first") {
		t.Fatalf("migrate while the node runs: %v\nstdout: %s\nstderr: %s", err, out, errOut)
	}
	node.stop()

	// Interrupted: killed once some blocks are upstream (a few batches of
	// two records committed, the next in flight).
	slow := tg
	slow.endpoint = slowProxy(t, up.endpoint, 100*time.Millisecond)
	cmd := migrateCmd(t, dir, slow, "--batch-keys", "2", "--workers", "1")
	var killedOut syncBuffer
	cmd.Stdout, cmd.Stderr = &killedOut, &killedOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	for n := 0; n < 6; n = len(upstreamKeys(t, upc, upBucket, "mig/b/")) {
		select {
		case err := <-exited:
			t.Fatalf("migrate ended (%v) before it could be killed; output:\n%s", err, killedOut.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	// The source of an unfinished migration is refused by coffer serve:
	// writes it took would not reach the copy.
	if out, err := runCoffer(t, "serve", "--storage-path", dir, "--address", "127.0.0.1:0", "--console-address", ""); err == nil ||
		!strings.Contains(out, "is being migrated") || !strings.Contains(out, "coffer admin migrate --abandon") {
		t.Errorf("serve on the source of an interrupted migration: %v\n%s", err, tail(out, 4*kib))
	}
	res, log := mustMigrate(t, dir, tg)
	if !strings.Contains(log, "migration resumed") || strings.Contains(log, "keys=0 ") {
		t.Errorf("the second run did not resume a started copy; its log:\n%s", tail(log, 4*kib))
	}
	if res.Phase != "done" || res.Mismatched != 0 || res.MasterKeyFrom != filepath.Join(dir, "master-key") {
		t.Errorf("migration result %+v", res)
	}
	// Done is done.
	if again, _ := mustMigrate(t, dir, tg); again != res {
		t.Errorf("migrate after done = %+v, want %+v", again, res)
	}
	// The same end state as a migration that was never interrupted.
	clean := tg
	clean.pgURL, clean.prefix = pg.NewSchema(t), "clean/"
	cres, _ := mustMigrate(t, dir, clean)
	if cres.Keys != res.Keys || cres.Verified != res.Verified {
		t.Errorf("uninterrupted migration %+v, interrupted %+v: want the same keys and records", cres, res)
	}
	// The blocks, under b/; each prefix holds its target database's
	// claim beside them (the two targets are two stores).
	rel := func(prefix string) []string {
		var ks []string
		for _, k := range upstreamKeys(t, upc, upBucket, prefix+"b/") {
			ks = append(ks, strings.TrimPrefix(k, prefix))
		}
		slices.Sort(ks)
		return ks
	}
	if diff := cmp.Diff(rel("clean/"), rel("mig/")); diff != "" {
		t.Errorf("blocks upstream (-uninterrupted +interrupted):\n%s", diff)
	}
	if n := len(rel("mig/")); n != 16 {
		t.Errorf("%d blocks upstream, want 16 (4 big, 7 multipart, 3 of the old version, 2 of the pending part)", n)
	}
	if a, b := upstreamClaim(t, upc, upBucket, "mig/"), upstreamClaim(t, upc, upBucket, "clean/"); a.StoreID == b.StoreID {
		t.Errorf("the claims of two targets name one store %s", a.StoreID)
	}
	// A third database cannot take a prefix the first one claimed: its
	// servers would refuse to start, and their GC would have deleted the
	// first one's blocks. The migration refuses before copying anything.
	third := tg
	third.pgURL = pg.NewSchema(t)
	if out, errOut, err := runMigrate(t, dir, third); err == nil || !strings.Contains(errOut, "prefix claimed by another metadata store") {
		t.Errorf("migrate into a prefix another database claimed: %v\nstdout: %s\nstderr: %s", err, out, errOut)
	}
	if n := len(rel("mig/")); n != 16 {
		t.Errorf("%d blocks upstream after the refused migration, want 16", n)
	}

	// Serve it: a new node with its own storage path, given the master key
	// as the old node's file.
	newDir := t.TempDir()
	key, err := os.ReadFile(filepath.Join(dir, "master-key"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(newDir, "master-key"), key, 0o600); err != nil {
		t.Fatal(err)
	}
	node2 := startChildEnv(t, newDir, []string{"COFFER_BLOB_S3_SECRET_KEY=" + up.sk},
		"--meta.kind", "postgres", "--meta.postgres.url", tg.pgURL, "--blob.kind", "s3", "--blob.s3.endpoint", up.endpoint,
		"--blob.s3.bucket", upBucket, "--blob.s3.prefix", "mig/", "--blob.s3.access-key", up.ak)
	c2 := newClient(t, node2.endpoint)
	if diff := cmp.Diff(want, servedState(t, c2, data, ver)); diff != "" {
		t.Errorf("served after the migration (-before +after):\n%s", diff)
	}
	admin2 := admin
	admin2.endpoint = node2.endpoint
	if diff := cmp.Diff(wantUsage, bucketLs(admin2)); diff != "" {
		t.Errorf("usage after the migration (-before +after):\n%s", diff)
	}
	checkIAM(node2.endpoint)
	moved := &upload{t: t, c: c2, bucket: data, key: "pending", id: pending.id}
	if _, err := moved.complete(pendingCP); err != nil {
		t.Fatalf("complete the upload begun before the migration: %v", err)
	}
	checkBody(t, "GET pending", get(t, c2, data, "pending"), pendingPart)
	if out := admin2.must("usage", "check"); !strings.Contains(out, "usage matches the records") {
		t.Errorf("usage check after the migration: %s", out)
	}

	// The old node stays refused once the migration is done, until the
	// mark is removed on purpose; then it serves what it had.
	if out, err := runCoffer(t, "serve", "--storage-path", dir, "--address", "127.0.0.1:0", "--console-address", ""); err == nil || !strings.Contains(out, "was migrated") {
		t.Errorf("serve on a migrated storage path: %v\n%s", err, tail(out, 4*kib))
	}
	if out, err := runCoffer(t, "admin", "migrate", "--abandon", "--from-storage-path", dir); err != nil || !strings.Contains(out, "no longer marked as migrated") {
		t.Fatalf("migrate --abandon: %v\n%s", err, out)
	}
	old := startChild(t, dir, "--block-size", "1MiB")
	if diff := cmp.Diff(want, servedState(t, newClient(t, old.endpoint), data, ver)); diff != "" {
		t.Errorf("served by the old node after --abandon (-before +after):\n%s", diff)
	}
	old.stop()
}

// asKey makes a client sign with another key.
func asKey(ak, sk string) func(*s3.Options) {
	return func(o *s3.Options) {
		o.Credentials = credentials.NewStaticCredentialsProvider(ak, sk, "")
	}
}

// TestMigrateCorrupt: a block damaged on the single node's disk (same
// size, one bit flipped) is copied as it is and caught by the read-back:
// the migration fails naming the object, and again when run again.
func TestMigrateCorrupt(t *testing.T) {
	pg := migratePG.Get(t)
	up := startServer(t)
	upc := up.client(t)
	upBucket := mkBucket(t, upc, "blocks")
	dir := t.TempDir()
	node := startChild(t, dir, "--block-size", "1MiB")
	c := newClient(t, node.endpoint)
	b := mkBucket(t, c, "data")
	put(t, c, b, "intact", randBytes(2*mib))
	node.stop()
	var files []string
	err := filepath.WalkDir(filepath.Join(dir, "blobs", "b"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			files = append(files, p)
		}
		return err
	})
	if err != nil || len(files) != 2 {
		t.Fatalf("block files %q, %v; want 2", files, err)
	}
	// Damage one block of a second object, stored after the first.
	node = startChild(t, dir, "--block-size", "1MiB")
	put(t, newClient(t, node.endpoint), b, "damaged", randBytes(mib+100))
	node.stop()
	var damaged string
	err = filepath.WalkDir(filepath.Join(dir, "blobs", "b"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && !slices.Contains(files, p) && damaged == "" {
			damaged = p
		}
		return err
	})
	if err != nil || damaged == "" {
		t.Fatalf("no new block file: %v", err)
	}
	f, err := os.OpenFile(damaged, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	one := make([]byte, 1)
	if _, err := f.ReadAt(one, 50); err != nil {
		t.Fatal(err)
	}
	one[0] ^= 0x01
	if _, err := f.WriteAt(one, 50); err != nil {
		t.Fatal(err)
	}
	f.Close()

	tg := migrateTarget{pgURL: pg.NewSchema(t), endpoint: up.endpoint, bucket: upBucket, prefix: "c/", ak: up.ak, sk: up.sk}
	for run := 1; run <= 2; run++ {
		out, errOut, err := runMigrate(t, dir, tg)
		if err == nil {
			t.Fatalf("run %d: migrate of a damaged block succeeded:\n%s", run, out)
		}
		for _, want := range []string{"does not match", "1 of 2 records", b + "/damaged version null: ETag "} {
			if !strings.Contains(errOut, want) {
				t.Errorf("run %d: the error does not say %q:\n%s", run, want, tail(errOut, 4*kib))
			}
		}
		if !strings.Contains(out, "stopped in phase failed") {
			t.Errorf("run %d: stdout %q, want the phase", run, out)
		}
	}

	// A node on the target of the failed migration is refused: it would
	// serve a partial copy.
	newDir := t.TempDir()
	key, err := os.ReadFile(filepath.Join(dir, "master-key"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(newDir, "master-key"), key, 0o600); err != nil {
		t.Fatal(err)
	}
	nodeFlags := []string{"--meta.kind", "postgres", "--meta.postgres.url", tg.pgURL, "--blob.kind", "s3", "--blob.s3.endpoint", up.endpoint,
		"--blob.s3.bucket", upBucket, "--blob.s3.prefix", "c/", "--blob.s3.access-key", up.ak}
	env := []string{"COFFER_BLOB_S3_SECRET_KEY=" + up.sk}
	sctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a node that starts is killed
	defer cancel()
	cmd := exec.CommandContext(sctx, cofferBinary(t), append([]string{"serve", "--storage-path", newDir, "--address", "127.0.0.1:0", "--console-address", ""}, nodeFlags...)...)
	cmd.Env = childEnv(t.TempDir(), append([]string{"COFFER_ROOT_ACCESS_KEY=" + testAccessKey, "COFFER_ROOT_SECRET_KEY=" + testSecretKey}, env...)...)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "target of a migration from") || !strings.Contains(string(out), "it is failed") {
		t.Errorf("serve on the target of a failed migration: %v\n%s", err, tail(string(out), 4*kib))
	}
	// Accepted as it is: done, and served (the damaged object as copied).
	res, _ := mustMigrate(t, dir, tg, "--accept-mismatches")
	if res.Phase != "done" || res.Mismatched != 1 || res.Verified != 1 {
		t.Errorf("migrate --accept-mismatches = %+v, want done with 1 verified, 1 mismatched", res)
	}
	n2 := startChildEnv(t, newDir, env, nodeFlags...)
	if _, err := newClient(t, n2.endpoint).HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String("intact")}); err != nil {
		t.Errorf("HEAD intact on the target once accepted: %v", err)
	}
	n2.stop()
}
