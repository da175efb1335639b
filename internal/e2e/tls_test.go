package e2e

import (
	"bytes"
	"io"
	"log"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// tlsProxy starts an https reverse proxy in front of target that keeps the
// Host header (so signatures stay valid) and forwards bodies untouched. SDKs
// send flexible checksums as aws-chunked trailers only over https; through
// the proxy the server sees exactly what they send.
func tlsProxy(t *testing.T, target string) *httptest.Server {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.Host = pr.In.Host
		},
		FlushInterval: -1,
		ErrorLog:      log.New(io.Discard, "", 0),
	}
	srv := httptest.NewTLSServer(rp)
	t.Cleanup(srv.Close)
	return srv
}

// TestTrailingChecksums drives the SDK through a TLS proxy, where its
// default checksum behaviour sends every upload as aws-chunked with an
// unsigned CRC trailer (STREAMING-UNSIGNED-PAYLOAD-TRAILER).
func TestTrailingChecksums(t *testing.T) {
	t.Parallel()
	testTrailingChecksums(t, startServer(t))
}

func testTrailingChecksums(t *testing.T, ts s3Target) {
	proxy := tlsProxy(t, ts.url(t))
	c := newClient(t, proxy.URL, func(o *s3.Options) { o.HTTPClient = proxy.Client() })
	ctx := t.Context()
	b := mkBucket(t, c, "trailer")

	for _, size := range []int{1, 100 * kib, 3*mib + 5} {
		body := randBytes(size)
		// The default algorithm (CRC32) and each explicit one the SDK
		// computes, SHA512 included (the others, which an application would
		// send in a header, go as trailers in TestStreamingUploads).
		for _, alg := range append([]types.ChecksumAlgorithm{""}, allAlgorithms...) {
			if alg != "" && !sdkComputes(alg) {
				continue
			}
			in := &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("k"), Body: bytes.NewReader(body), ChecksumAlgorithm: alg}
			if _, err := c.PutObject(ctx, in); err != nil {
				t.Errorf("PutObject %d bytes, algorithm %q, trailer: %v", size, alg, err)
				continue
			}
			checkBody(t, "GetObject", get(t, c, b, "k"), body)
			checkContentEncoding(t, c, b, "k", "")
			if alg == "" {
				alg = types.ChecksumAlgorithmCrc32
			}
			h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String("k"), ChecksumMode: types.ChecksumModeEnabled})
			if err != nil {
				t.Fatalf("HeadObject: %v", err)
			}
			if got, want := outputChecksum(alg, h), checksumOf(alg, body); got != want {
				t.Errorf("%d bytes %s sent as trailer: stored checksum %q, want %q", size, alg, got, want)
			}
		}
	}

	// A real Content-Encoding survives; aws-chunked is not stored.
	_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("gz"), Body: bytes.NewReader([]byte("not really gzip")),
		ContentEncoding: aws.String("gzip")})
	if err != nil {
		t.Fatalf("PutObject with Content-Encoding gzip: %v", err)
	}
	checkContentEncoding(t, c, b, "gz", "gzip")

	// Multipart: parts with trailers.
	u := createUpload(t, c, b, "mp", func(in *s3.CreateMultipartUploadInput) { in.ChecksumAlgorithm = types.ChecksumAlgorithmCrc32c })
	p1, p2 := randBytes(5*mib), randBytes(777)
	withAlg := func(in *s3.UploadPartInput) { in.ChecksumAlgorithm = types.ChecksumAlgorithmCrc32c }
	cp1, cp2 := u.part(1, p1, withAlg), u.part(2, p2, withAlg)
	if _, err := u.complete(cp1, cp2); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	checkBody(t, "multipart object", get(t, c, b, "mp"), append(append([]byte(nil), p1...), p2...))
	h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String("mp"), ChecksumMode: types.ChecksumModeEnabled})
	if err != nil {
		t.Fatalf("HeadObject: %v", err)
	}
	if got, want := aws.ToString(h.ChecksumCRC32C), compositeChecksum(types.ChecksumAlgorithmCrc32c, p1, p2); got != want {
		t.Errorf("multipart CRC32C %q, want %q", got, want)
	}

	// A default-settings multipart upload (no algorithm at Create) whose
	// parts still carry the SDK's default CRC32 trailers.
	u = createUpload(t, c, b, "mp-default")
	cp1, cp2 = u.part(1, p1), u.part(2, p2)
	cp1 = types.CompletedPart{PartNumber: cp1.PartNumber, ETag: cp1.ETag}
	cp2 = types.CompletedPart{PartNumber: cp2.PartNumber, ETag: cp2.ETag}
	if _, err := u.complete(cp1, cp2); err != nil {
		t.Fatalf("Complete of a default-settings upload: %v", err)
	}
	checkBody(t, "multipart object", get(t, c, b, "mp-default"), append(append([]byte(nil), p1...), p2...))
}

// checkContentEncoding checks the Content-Encoding GET and HEAD return for
// bucket/key: aws-chunked is how a body was sent, never part of the object
// (S3 strips it).
func checkContentEncoding(t *testing.T, c *s3.Client, bucket, key, want string) {
	t.Helper()
	h, err := c.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("HeadObject: %v", err)
	}
	if got := aws.ToString(h.ContentEncoding); got != want {
		t.Errorf("%s: stored Content-Encoding %q, want %q", key, got, want)
	}
}
