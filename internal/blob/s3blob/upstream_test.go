package s3blob_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/coffer-s3/coffer/internal/blob/s3blob"
	"github.com/coffer-s3/coffer/internal/config"
	"github.com/coffer-s3/coffer/internal/server"
)

// Root credentials of the in-process upstream.
const (
	upstreamAccessKey = "S3BLOBTESTROOTKEY001"
	upstreamSecretKey = "s3blob-test-secret/with+special=chars0123"
	upstreamRegion    = "us-east-1"
)

// upstream is an in-process Coffer server, started as internal/e2e starts
// one, that the stores under test use as their upstream.
type upstream struct {
	endpoint string     // http://127.0.0.1:port
	admin    *s3.Client // a plain SDK client, to create buckets and look behind the store's back
	logs     *syncBuffer
	seq      atomic.Int64 // makes bucket and prefix names unique
}

// startUpstream starts a Coffer server with in-memory blobs on a fresh
// directory; it is shut down when tb ends.
func startUpstream(tb testing.TB) *upstream {
	tb.Helper()
	args := []string{
		"--storage-path", tb.TempDir(),
		"--address", "127.0.0.1:0",
		"--console-address", "",
		"--audit.enabled=false",
		"--blob.kind", "memory",
		"--fsync=false",
		"--gc-interval", "0",
	}
	env := map[string]string{
		"COFFER_ROOT_ACCESS_KEY": upstreamAccessKey,
		"COFFER_ROOT_SECRET_KEY": upstreamSecretKey,
	}
	cfg, err := config.Load(args, func(k string) string { return env[k] })
	if err != nil {
		tb.Fatalf("config.Load(%q): %v", args, err)
	}
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv, err := server.New(cfg, log, logs)
	if err != nil {
		tb.Fatalf("server.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	tb.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				tb.Errorf("upstream Run returned %v after shutdown, want nil", err)
			}
		case <-time.After(30 * time.Second):
			tb.Errorf("upstream did not shut down within 30s")
		}
		if tb.Failed() {
			tb.Logf("upstream log (tail):\n%s", tail(logs.String(), 6<<10))
		}
	})
	u := &upstream{endpoint: "http://" + srv.Addr(), logs: logs}
	u.admin = newAdminClient(u.endpoint)
	return u
}

// newAdminClient returns an SDK client for endpoint with the upstream's
// root credentials and no retries.
func newAdminClient(endpoint string) *s3.Client {
	return s3.New(s3.Options{
		Region:       upstreamRegion,
		BaseEndpoint: aws.String(endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(upstreamAccessKey, upstreamSecretKey, ""),
		Retryer:      aws.NopRetryer{},
	})
}

// newBucket creates a bucket with a unique name.
func (u *upstream) newBucket(tb testing.TB) string {
	tb.Helper()
	name := fmt.Sprintf("blocks-%d", u.seq.Add(1))
	if _, err := u.admin.CreateBucket(tb.Context(), &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		tb.Fatalf("CreateBucket(%s): %v", name, err)
	}
	return name
}

// prefix returns a fresh prefix.
func (u *upstream) prefix() string {
	return fmt.Sprintf("p%d/", u.seq.Add(1))
}

// config returns a store configuration for bucket and prefix on u.
func (u *upstream) config(bucket, prefix string) s3blob.Config {
	return s3blob.Config{
		Endpoint:  u.endpoint,
		Region:    upstreamRegion,
		Bucket:    bucket,
		Prefix:    prefix,
		AccessKey: upstreamAccessKey,
		SecretKey: upstreamSecretKey,
		PathStyle: true,
	}
}

// newStore opens a store for cfg, closed when tb ends.
func newStore(tb testing.TB, cfg s3blob.Config) *s3blob.Store {
	tb.Helper()
	s, err := s3blob.New(tb.Context(), cfg)
	if err != nil {
		tb.Fatalf("New(%s, bucket %s, prefix %q, checksum %q): %v", cfg.Endpoint, cfg.Bucket, cfg.Prefix, cfg.Checksum, err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return s
}

// objectKeys lists the upstream keys under prefix, straight from the
// bucket.
func (u *upstream) objectKeys(tb testing.TB, bucket, prefix string) []string {
	tb.Helper()
	var keys []string
	p := s3.NewListObjectsV2Paginator(u.admin, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(tb.Context())
		if err != nil {
			tb.Fatalf("ListObjectsV2(%s, %q): %v", bucket, prefix, err)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	return keys
}

// wantAbsent checks, behind the store's back, that the upstream has no
// object named key in bucket: a HEAD answers 404.
func (u *upstream) wantAbsent(tb testing.TB, bucket, key string) {
	tb.Helper()
	_, err := u.admin.HeadObject(tb.Context(), &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err == nil {
		tb.Errorf("HEAD %s/%s succeeded; want the object absent", bucket, key)
		return
	}
	var re interface{ HTTPStatusCode() int }
	if !errors.As(err, &re) || re.HTTPStatusCode() != http.StatusNotFound {
		tb.Errorf("HEAD %s/%s = %v; want 404", bucket, key, err)
	}
}

// syncBuffer is a goroutine-safe bytes.Buffer for logs written after a test
// may have returned.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// tail returns at most the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// proxy is a reverse proxy in front of the upstream whose hook sees every
// request first: it may answer itself, or alter the request or response
// bodies, to simulate a faulty network or a throttling upstream.
type proxy struct {
	endpoint string
	// hook, if it returns true, has answered the request itself.
	hook atomic.Pointer[func(w http.ResponseWriter, r *http.Request) bool]
	// modify, if set, may replace the body of a response.
	modify atomic.Pointer[func(r *http.Response)]
}

// startProxy starts a proxy in front of u.
func startProxy(tb testing.TB, u *upstream) *proxy {
	tb.Helper()
	target, err := url.Parse(u.endpoint)
	if err != nil {
		tb.Fatal(err)
	}
	p := &proxy{}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host // the signature covers the Host the client used
		},
		ModifyResponse: func(r *http.Response) error {
			if f := p.modify.Load(); f != nil {
				(*f)(r)
			}
			return nil
		},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f := p.hook.Load(); f != nil && (*f)(w, r) {
			return
		}
		rp.ServeHTTP(w, r)
	}))
	tb.Cleanup(srv.Close)
	p.endpoint = srv.URL
	return p
}

// setHook installs f as the request hook; nil removes it.
func (p *proxy) setHook(f func(w http.ResponseWriter, r *http.Request) bool) {
	if f == nil {
		p.hook.Store(nil)
		return
	}
	p.hook.Store(&f)
}

// setModify installs f as the response hook; nil removes it.
func (p *proxy) setModify(f func(r *http.Response)) {
	if f == nil {
		p.modify.Store(nil)
		return
	}
	p.modify.Store(&f)
}

// flipReader flips one bit of the byte at offset at of the stream it reads.
type flipReader struct {
	r   io.ReadCloser
	at  int64
	pos int64
}

func (f *flipReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if f.at >= f.pos && f.at < f.pos+int64(n) {
		p[f.at-f.pos] ^= 0x01
	}
	f.pos += int64(n)
	return n, err
}

func (f *flipReader) Close() error { return f.r.Close() }

// isPut reports whether r is a PutObject of a key containing part.
func isPut(r *http.Request, part string) bool {
	return r.Method == http.MethodPut && strings.Contains(r.URL.Path, part)
}

// writeS3Error answers an S3 error document.
func writeS3Error(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message><RequestId>proxy</RequestId></Error>`, code, msg)
}
