package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/google/go-cmp/cmp"

	"github.com/coffer-s3/coffer/internal/blob"
	"github.com/coffer-s3/coffer/internal/blob/s3blob"
	"github.com/coffer-s3/coffer/internal/config"
	"github.com/coffer-s3/coffer/internal/server"
)

// upstreamKeys lists the keys under prefix in an upstream bucket.
func upstreamKeys(t *testing.T, c *s3.Client, bucket, prefix string) []string {
	t.Helper()
	var keys []string
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		out, err := p.NextPage(t.Context())
		if err != nil {
			t.Fatalf("list upstream: %v", err)
		}
		for _, o := range out.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	return keys
}

// TestGateway runs a Coffer whose blocks live in a bucket of another
// Coffer (blob.kind s3): objects of one and several blocks, ranges,
// multipart, overwrite and delete, then GC removes exactly the blocks no
// object references, under the gateway's prefix only.
func TestGateway(t *testing.T) {
	t.Parallel()
	up := startServer(t)
	upc := up.client(t)
	blocks := mkBucket(t, upc, "blocks")
	put(t, upc, blocks, "other/keep-me", []byte("not the gateway's")) // outside the gateway's prefix
	gwArgs := []string{"--blob.kind", "s3", "--blob.s3.endpoint", up.endpoint, "--blob.s3.bucket", blocks,
		"--blob.s3.prefix", "gw1/", "--blob.s3.access-key", up.ak}
	gw := startServerEnv(t, map[string]string{"COFFER_BLOB_S3_SECRET_KEY": up.sk}, gwArgs...)
	c := gw.client(t)
	ctx := t.Context()
	b := mkBucket(t, c, "gw")

	small, big := randBytes(1000), randBytes(3*mib+17) // inline; four 1 MiB blocks
	put(t, c, b, "small", small)
	put(t, c, b, "big", big)
	checkBody(t, "GET big", get(t, c, b, "big"), big)
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String("big"), Range: aws.String("bytes=1048000-2097300")})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(out.Body)
	out.Body.Close()
	if err != nil || !bytes.Equal(got, big[1048000:2097301]) {
		t.Errorf("ranged GET across blocks: %d bytes, err %v", len(got), err)
	}
	// Blocks are under gw1/b/; gw1/ holds the gateway's claim as well.
	if n := len(upstreamKeys(t, upc, blocks, "gw1/b/")); n != 4 {
		t.Errorf("upstream holds %d blocks under gw1/b/, want 4 (the small object is inline)", n)
	}

	p1, p2 := randBytes(5*mib), randBytes(mib+3)
	u := createUpload(t, c, b, "mp")
	if _, err := u.complete(u.part(1, p1), u.part(2, p2)); err != nil {
		t.Fatal(err)
	}
	checkBody(t, "GET multipart", get(t, c, b, "mp"), append(append([]byte{}, p1...), p2...))

	// Overwrite and delete leave garbage upstream, which GC collects.
	put(t, c, b, "big", randBytes(2*mib))
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String("mp")}); err != nil {
		t.Fatal(err)
	}
	admin := adminCLI{t: t, bin: cofferBinary(t), endpoint: gw.endpoint, ak: gw.ak, sk: gw.sk}
	admin.must("gc", "--grace", "0s")
	if keys := upstreamKeys(t, upc, blocks, "gw1/b/"); len(keys) != 2 {
		t.Errorf("after GC the upstream holds %d blocks under gw1/b/, want the new big object's 2: %v", len(keys), keys)
	}
	if keys := upstreamKeys(t, upc, blocks, "gw1/"+s3blob.ClaimName); len(keys) != 1 {
		t.Errorf("after GC the gateway's claim is gone: %v", keys)
	}
	if keys := upstreamKeys(t, upc, blocks, "other/"); len(keys) != 1 {
		t.Errorf("GC touched keys outside the gateway's prefix: %v", keys)
	}
	checkBody(t, "GET small after GC", get(t, c, b, "small"), small)
	if got := get(t, c, b, "big"); len(got) != 2*mib {
		t.Errorf("GET big after GC: %d bytes", len(got))
	}
}

// TestGatewayStartErrors: a gateway whose upstream is wrong refuses to
// start, saying why.
func TestGatewayStartErrors(t *testing.T) {
	t.Parallel()
	up := startServer(t)
	blocks := mkBucket(t, up.client(t), "blocks")
	for _, tc := range []struct {
		name, bucket, secret, want string
	}{
		{"missing bucket", "no-such-bucket", up.sk, "no-such-bucket"},
		{"wrong secret", blocks, "not-the-secret", "SignatureDoesNotMatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"--storage-path", t.TempDir()}, inProcessArgs...)
			args = append(args, "--blob.kind", "s3", "--blob.s3.endpoint", up.endpoint, "--blob.s3.bucket", tc.bucket,
				"--blob.s3.access-key", up.ak)
			env := map[string]string{"COFFER_ROOT_ACCESS_KEY": testAccessKey, "COFFER_ROOT_SECRET_KEY": testSecretKey,
				"COFFER_BLOB_S3_SECRET_KEY": tc.secret}
			cfg, err := config.Load(args, func(k string) string { return env[k] })
			if err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			srv, err := server.New(cfg, slog.New(slog.NewTextHandler(&logs, nil)), io.Discard)
			if err == nil {
				srv.Close()
				t.Fatal("server.New succeeded")
			}
			if msg := err.Error(); !strings.Contains(msg, "blob.s3") || !strings.Contains(msg, tc.want) {
				t.Errorf("server.New: %v; want it to name blob.s3 and %q", err, tc.want)
			}
			if strings.Contains(err.Error()+logs.String(), tc.secret) {
				t.Error("the upstream secret appears in the error or the log")
			}
		})
	}
}

// TestGatewayClaim points two deployments, each with a metadata store of
// its own, at one upstream bucket and prefix. The first claims the prefix;
// the second refuses to start, and so does its `admin gc`, saying whose
// the prefix is and what to do, so that it deletes none of the first's
// blocks (without the claim, its GC would delete them all: its metadata
// references none). The first deployment starts again on its own claim,
// and one that has no claim (as after an upgrade from a Coffer before
// claims) gets it back.
func TestGatewayClaim(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	up := startServer(t)
	upc := up.client(t)
	blocks := mkBucket(t, upc, "blocks")
	const prefix = "shared/"
	gwArgs := []string{"--blob.kind", "s3", "--blob.s3.endpoint", up.endpoint, "--blob.s3.bucket", blocks,
		"--blob.s3.prefix", prefix, "--blob.s3.access-key", up.ak}
	env := map[string]string{"COFFER_BLOB_S3_SECRET_KEY": up.sk}
	first := startServerEnv(t, env, gwArgs...)
	c := first.client(t)
	b := mkBucket(t, c, "data")
	big := randBytes(2*mib + 1)
	put(t, c, b, "big", big)
	held := upstreamKeys(t, upc, blocks, prefix+"b/")
	if len(held) != 3 {
		t.Fatalf("upstream holds %d blocks, want 3: %v", len(held), held)
	}
	owner := upstreamClaim(t, upc, blocks, prefix)
	if len(owner.StoreID) != 32 {
		t.Fatalf("claim %+v, want a store ID", owner)
	}

	// The second deployment: a storage path, and so a metadata store, of
	// its own.
	env2 := map[string]string{"COFFER_ROOT_ACCESS_KEY": testAccessKey, "COFFER_ROOT_SECRET_KEY": testSecretKey,
		"COFFER_BLOB_S3_SECRET_KEY": up.sk}
	args := append([]string{"--storage-path", t.TempDir()}, inProcessArgs...)
	cfg, err := config.Load(append(args, gwArgs...), func(k string) string { return env2[k] })
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if srv, err := server.New(cfg, log, io.Discard); err == nil {
		srv.Close()
		t.Error("the second deployment started on the first's prefix")
	} else {
		wantClaimed(t, "server.New", err, blocks, prefix, owner.StoreID)
	}
	if _, err := server.GC(ctx, cfg, log, 0); err == nil {
		t.Error("the second deployment's gc ran on the first's prefix")
	} else {
		wantClaimed(t, "GC", err, blocks, prefix, owner.StoreID)
	}
	if diff := cmp.Diff(held, upstreamKeys(t, upc, blocks, prefix+"b/")); diff != "" {
		t.Errorf("blocks upstream after the second deployment tried (-before +after):\n%s", diff)
	}
	if got := upstreamClaim(t, upc, blocks, prefix); got != owner {
		t.Errorf("claim after the second deployment tried = %+v, want %+v", got, owner)
	}

	// The first deployment restarts on its own claim; without a claim (a
	// deployment older than claims) it claims the prefix anew.
	first.stop()
	again := startServerEnv(t, env, append(gwArgs, "--storage-path", first.dir)...)
	checkBody(t, "GET big after a restart", get(t, again.client(t), b, "big"), big)
	again.stop()
	if _, err := upc.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(blocks), Key: aws.String(prefix + s3blob.ClaimName)}); err != nil {
		t.Fatal(err)
	}
	// Meanwhile, an empty deployment does not claim an unclaimed prefix
	// that holds blocks: they are a deployment's that has not restarted
	// on a Coffer with claims yet.
	if srv, err := server.New(cfg, log, io.Discard); err == nil {
		srv.Close()
		t.Error("an empty deployment claimed an unclaimed prefix holding blocks")
	} else if !errors.Is(err, blob.ErrUnclaimedBlocks) {
		t.Errorf("server.New of an empty deployment on unclaimed blocks: %v, want ErrUnclaimedBlocks", err)
	}
	upgraded := startServerEnv(t, env, append(gwArgs, "--storage-path", first.dir)...)
	checkBody(t, "GET big after the upgrade", get(t, upgraded.client(t), b, "big"), big)
	if got := upstreamClaim(t, upc, blocks, prefix); got.StoreID != owner.StoreID || !got.Claimed.After(owner.Claimed) {
		t.Errorf("claim after the upgrade = %+v, want a new one for store %s", got, owner.StoreID)
	}
}

// upstreamClaim returns the claim of prefix in an upstream bucket.
func upstreamClaim(t *testing.T, c *s3.Client, bucket, prefix string) blob.Owner {
	t.Helper()
	out, err := c.GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(prefix + s3blob.ClaimName)})
	if err != nil {
		t.Fatalf("get the claim of %s: %v", prefix, err)
	}
	defer out.Body.Close()
	var o blob.Owner
	if err := json.NewDecoder(out.Body).Decode(&o); err != nil {
		t.Fatalf("decode the claim of %s: %v", prefix, err)
	}
	return o
}

// wantClaimed checks that err is the refusal of a prefix claimed by
// another store, naming what an operator needs.
func wantClaimed(t *testing.T, what string, err error, bucket, prefix, owner string) {
	t.Helper()
	if !errors.Is(err, blob.ErrClaimed) {
		t.Errorf("%s: %v; want ErrClaimed", what, err)
		return
	}
	for _, want := range []string{bucket, prefix, owner, "--blob.s3.prefix", prefix + s3blob.ClaimName} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want it to name %q", what, err, want)
		}
	}
}
