package e2e

import (
	"bytes"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

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
	if n := len(upstreamKeys(t, upc, blocks, "gw1/")); n != 4 {
		t.Errorf("upstream holds %d blocks under gw1/, want 4 (the small object is inline)", n)
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
	if keys := upstreamKeys(t, upc, blocks, "gw1/"); len(keys) != 2 {
		t.Errorf("after GC the upstream holds %d blocks under gw1/, want the new big object's 2: %v", len(keys), keys)
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
