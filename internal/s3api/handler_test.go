package s3api

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coffer-s3/coffer/internal/checksum"
	"github.com/coffer-s3/coffer/internal/httprec"
	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/s3err"
	"github.com/coffer-s3/coffer/internal/sigv4"
)

func TestNew(t *testing.T) {
	hs := newHarness(t, Config{})
	d := Deps{Objects: hs.svc, Verifier: hs.h.verifier, IAM: hs.h.iam, Logger: hs.h.log}
	for _, tc := range []struct {
		name string
		cfg  Config
		deps func(Deps) Deps
		ok   bool
	}{
		{name: "defaults", ok: true},
		{name: "no objects", deps: func(d Deps) Deps { d.Objects = nil; return d }},
		{name: "no verifier", deps: func(d Deps) Deps { d.Verifier = nil; return d }},
		{name: "no iam", deps: func(d Deps) Deps { d.IAM = nil; return d }},
		{name: "no logger", deps: func(d Deps) Deps { d.Logger = nil; return d }},
		{name: "max keys too big", cfg: Config{MaxKeys: 1001}},
		{name: "max keys negative", cfg: Config{MaxKeys: -1}},
		{name: "domain with port", cfg: Config{Domain: "s3.example.com:9000"}},
		{name: "domain with dot", cfg: Config{Domain: ".s3.example.com"}},
		{name: "domain", cfg: Config{Domain: "s3.example.com", MaxKeys: 100}, ok: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			deps := d
			if tc.deps != nil {
				deps = tc.deps(d)
			}
			h, err := New(tc.cfg, deps)
			if (err == nil) != tc.ok {
				t.Fatalf("New(%+v) error = %v, want ok %v", tc.cfg, err, tc.ok)
			}
			if err != nil {
				return
			}
			if h.cfg.Region != "us-east-1" || h.cfg.MaxKeys == 0 || h.clock == nil || h.newID == nil {
				t.Errorf("New did not set defaults: %+v", h.cfg)
			}
		})
	}
}

func TestRequestIDs(t *testing.T) {
	gen := newRequestIDs()
	seen := map[string]bool{}
	for range 1000 {
		id := gen()
		if len(id) != 16 || strings.ToUpper(id) != id || seen[id] {
			t.Fatalf("request ID %q: want 16 unique upper-case hex digits", id)
		}
		seen[id] = true
	}
	a1, a2, b := hostID("A"), hostID("A"), hostID("B")
	if a1 == b || a1 != a2 {
		t.Error("hostID is not a function of the request ID")
	}
}

func TestAuthentication(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	hs.put("bkt", "k", []byte("secret"))

	wrong := sigv4.Credentials{AccessKeyID: rootAccessKey, SecretKey: "not-the-secret"}
	rp := hs.do(call{method: "GET", path: "/bkt/k", cred: &wrong})
	rp.want(t, http.StatusForbidden, s3err.SignatureDoesNotMatch)

	unknown := sigv4.Credentials{AccessKeyID: "AKIDUNKNOWN", SecretKey: rootSecretKey}
	goldenError(t, hs.do(call{method: "GET", path: "/bkt/k", cred: &unknown}), "GetObject_InvalidAccessKeyId", http.StatusForbidden, s3err.InvalidAccessKeyID)
	goldenError(t, hs.do(call{method: "GET", path: "/bkt/k", at: testNow().Add(-time.Hour)}), "GetObject_RequestTimeTooSkewed", http.StatusForbidden, s3err.RequestTimeTooSkewed)
	goldenError(t, hs.do(call{method: "GET", path: "/bkt/k", anon: true}), "GetObject_AccessDenied", http.StatusForbidden, s3err.AccessDenied)
	hs.do(call{method: "GET", path: "/", anon: true}).want(t, http.StatusForbidden, s3err.AccessDenied)
	hs.do(call{method: "GET", path: "/bkt/k?response-content-type=x", anon: true}).want(t, http.StatusForbidden, s3err.AccessDenied)
	// Anonymous requests for unimplemented operations are denied, not told
	// what is missing.
	hs.do(call{method: "GET", path: "/bkt?website", anon: true}).want(t, http.StatusForbidden, s3err.AccessDenied)
	// Storage is not touched: an anonymous PUT stores nothing.
	hs.do(call{method: "PUT", path: "/bkt/anon", body: []byte("x"), anon: true}).want(t, http.StatusForbidden, s3err.AccessDenied)
	hs.do(call{method: "HEAD", path: "/bkt/anon"}).want(t, http.StatusNotFound, "")

	// A header added after signing is refused.
	hs.do(call{method: "GET", path: "/bkt/k", prepare: func(r *http.Request) { r.Header.Set("X-Amz-Meta-Late", "1") }}).
		want(t, http.StatusForbidden, s3err.AccessDenied)
}

func TestPresigned(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	hs.put("bkt", "k k", []byte("shared"))
	u, err := sigv4.Presign("GET", hs.srv.URL+"/bkt/k%20k", rootCred(), testRegion, testNow(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hs.srv.Client().Get(u)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "shared" {
		t.Errorf("presigned GET: %d %q", resp.StatusCode, body)
	}
	expired, err := sigv4.Presign("GET", hs.srv.URL+"/bkt/k%20k", rootCred(), testRegion, testNow().Add(-2*time.Hour), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	resp, err = hs.srv.Client().Get(expired)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	reply{status: resp.StatusCode, header: resp.Header, body: body}.want(t, http.StatusForbidden, s3err.AccessDenied)
}

func TestStreamingUpload(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	payload := bytes.Repeat([]byte("chunky "), 3000)
	sum := checksum.CRC32C.New()
	sum.Write(payload)
	crc := checksum.Encode(sum.Sum(nil))

	for _, tc := range []struct {
		name     string
		opts     sigv4.ChunkedOptions
		header   http.Header
		status   int
		code     s3err.Code
		checksum string
	}{
		{name: "signed", opts: sigv4.ChunkedOptions{ChunkSize: 8 << 10}, status: http.StatusOK},
		{name: "signed trailer", opts: sigv4.ChunkedOptions{Mode: sigv4.PayloadStreamingSignedTrailer, ChunkSize: 8 << 10,
			Trailers: []sigv4.Trailer{{Name: "x-amz-checksum-crc32c", Value: crc}}}, status: http.StatusOK, checksum: crc},
		{name: "unsigned trailer", opts: sigv4.ChunkedOptions{Mode: sigv4.PayloadStreamingUnsignedTrailer, ChunkSize: 8 << 10,
			Trailers: []sigv4.Trailer{{Name: "x-amz-checksum-crc32c", Value: crc}}}, status: http.StatusOK, checksum: crc},
		{name: "wrong trailer", opts: sigv4.ChunkedOptions{Mode: sigv4.PayloadStreamingUnsignedTrailer,
			Trailers: []sigv4.Trailer{{Name: "x-amz-checksum-crc32c", Value: "AAAAAA=="}}}, status: http.StatusBadRequest, code: s3err.BadDigest},
		{name: "header checksum", opts: sigv4.ChunkedOptions{}, header: header("X-Amz-Checksum-Crc32c", crc), status: http.StatusOK, checksum: crc},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := hs.request(call{method: "PUT", path: "/bkt/" + strings.ReplaceAll(tc.name, " ", "-"), anon: true, header: tc.header})
			if err := sigv4.SignChunked(r, rootCred(), testRegion, testNow(), payload, tc.opts); err != nil {
				t.Fatal(err)
			}
			resp, err := hs.srv.Client().Do(r)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			rp := reply{status: resp.StatusCode, header: resp.Header, body: body}
			rp.want(t, tc.status, tc.code)
			if tc.status != http.StatusOK {
				return
			}
			if got := rp.header.Get("ETag"); got != etagOf(payload) {
				t.Errorf("ETag %q, want %q", got, etagOf(payload))
			}
			if got := rp.header.Get("x-amz-checksum-crc32c"); got != tc.checksum {
				t.Errorf("x-amz-checksum-crc32c %q, want %q", got, tc.checksum)
			}
			got := hs.do(call{method: "GET", path: r.URL.Path}).mustStatus(t, http.StatusOK)
			if !bytes.Equal(got.body, payload) {
				t.Errorf("stored %d bytes, want %d", len(got.body), len(payload))
			}
		})
	}

	// A chunk signature that does not verify fails the upload.
	r := hs.request(call{method: "PUT", path: "/bkt/tampered", anon: true})
	if err := sigv4.SignChunked(r, rootCred(), testRegion, testNow(), payload, sigv4.ChunkedOptions{ChunkSize: 8 << 10}); err != nil {
		t.Fatal(err)
	}
	enc, _ := io.ReadAll(r.Body)
	i := bytes.Index(enc, []byte("chunky"))
	enc[i] = 'C'
	r.Body = io.NopCloser(bytes.NewReader(enc))
	resp, err := hs.srv.Client().Do(r)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	reply{status: resp.StatusCode, header: resp.Header, body: body}.want(t, http.StatusForbidden, s3err.SignatureDoesNotMatch)
	hs.do(call{method: "HEAD", path: "/bkt/tampered"}).want(t, http.StatusNotFound, "")

	// A trailer announced on a request that cannot carry one.
	hs.do(call{method: "PUT", path: "/bkt/t", body: payload, header: header("X-Amz-Trailer", "x-amz-checksum-crc32c")}).
		want(t, http.StatusBadRequest, "")
}

func TestNotImplemented(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	goldenError(t, hs.do(call{method: "GET", path: "/bkt?website"}), "GetBucketWebsite_NotImplemented", http.StatusNotImplemented, s3err.NotImplemented)
	for _, c := range []call{
		{method: "PUT", path: "/bkt/k?retention", body: []byte("<Retention/>")},
		{method: "GET", path: "/bkt?website"},
		{method: "DELETE", path: "/bkt?website"},
		{method: "POST", path: "/bkt/k?restore"},
		{method: "PATCH", path: "/bkt/k"},
		{method: "OPTIONS", path: "/"},
		{method: "POST", path: "/bkt?cors", body: []byte("<CORSConfiguration/>")},
		{method: "POST", path: "/bkt/k"},
	} {
		hs.do(c).want(t, http.StatusNotImplemented, s3err.NotImplemented)
	}
	// PUT ?retention did not store an object.
	hs.do(call{method: "HEAD", path: "/bkt/k"}).want(t, http.StatusNotFound, "")
}

func TestVirtualHosted(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, Config{Domain: testDomain})
	hs.do(call{method: "PUT", path: "/", host: "vhost." + testDomain}).mustStatus(t, http.StatusOK)
	hs.do(call{method: "PUT", path: "/dir//file", host: "vhost." + testDomain, body: []byte("v")}).mustStatus(t, http.StatusOK)
	rp := hs.do(call{method: "GET", path: "/vhost//dir//file"}).mustStatus(t, http.StatusNotFound)
	rp = hs.do(call{method: "GET", path: "/vhost/dir//file"}).mustStatus(t, http.StatusOK)
	if string(rp.body) != "v" {
		t.Errorf("path-style GET of a virtual-hosted PUT: %q", rp.body)
	}
	rp = hs.do(call{method: "GET", path: "/?list-type=2", host: "vhost." + testDomain + ":80"}).mustStatus(t, http.StatusOK)
	if !bytes.Contains(rp.body, []byte("<Key>dir//file</Key>")) {
		t.Errorf("virtual-hosted listing:\n%s", rp.body)
	}
}

// canceled returns a context that is already cancelled.
func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

func TestWriteError(t *testing.T) {
	h := &Handler{log: slog.New(slog.NewTextHandler(io.Discard, nil)), storageErr: func() error { return nil }}
	rq := &request{id: "REQ", hostID: "HOST", op: &ops[0]}
	for _, tc := range []struct {
		name     string
		method   string
		ctx      func() context.Context
		err      error
		pre      func(w http.ResponseWriter)
		status   int
		body     string // substring; "" for none
		noBody   bool
		hdr, val string
		abort    bool // writeError must abort the connection (no response at all)
	}{
		{name: "s3 error", err: s3err.New(s3err.NoSuchKey, "b/k"), status: 404, body: "<Code>NoSuchKey</Code><Message>The specified key does not exist.</Message><Resource>/bkt/k</Resource><RequestId>REQ</RequestId><HostId>HOST</HostId>"},
		{name: "resource defaults to path", err: s3err.New(s3err.NoSuchBucket, ""), status: 404, body: "<Resource>/bkt/k</Resource>"},
		{name: "wrapped", err: errors.Join(errors.New("context"), s3err.New(s3err.BadDigest, "")), status: 400, body: "<Code>BadDigest</Code>"},
		{name: "internal", err: errors.New("disk on fire"), status: 500, body: "<Code>InternalError</Code>"},
		{name: "internal cause hidden", err: errors.New("disk on fire"), status: 500, body: "<Message>We encountered an internal error. Please try again.</Message>"},
		{name: "head", method: "HEAD", err: s3err.New(s3err.NoSuchKey, ""), status: 404, noBody: true},
		{name: "not modified", err: s3err.New(s3err.NotModified, ""), status: 304, noBody: true,
			pre: func(w http.ResponseWriter) { w.Header()["ETag"] = []string{`"e"`} }, hdr: "ETag", val: `"e"`},
		{name: "headers dropped", err: s3err.New(s3err.NoSuchKey, ""), status: 404,
			pre: func(w http.ResponseWriter) { w.Header()["ETag"] = []string{`"e"`} }, hdr: "ETag", val: ""},
		{name: "cors headers kept", err: s3err.New(s3err.AccessDenied, ""), status: 403,
			pre: func(w http.ResponseWriter) { w.Header().Set("Access-Control-Allow-Origin", "https://app.example.com") },
			hdr: "Access-Control-Allow-Origin", val: "https://app.example.com"},
		{name: "vary kept", err: s3err.New(s3err.NoSuchKey, ""), status: 404,
			pre: func(w http.ResponseWriter) { w.Header().Set("Vary", "Origin") }, hdr: "Vary", val: "Origin"},
		{name: "request id kept", err: s3err.New(s3err.NoSuchKey, ""), status: 404,
			pre: func(w http.ResponseWriter) { w.Header()["x-amz-request-id"] = []string{"REQ"} }, hdr: "x-amz-request-id", val: "REQ"},
		{name: "invalid range size", err: s3err.New(s3err.InvalidRange, "").With("RangeRequested", "bytes=9-").With("ActualObjectSize", "5"), status: 416,
			hdr: "Content-Range", val: "bytes */5"},
		{name: "client gone", err: context.Canceled, abort: true},
		{name: "context canceled", method: "PUT", err: s3err.New(s3err.NoSuchBucket, ""), abort: true, ctx: canceled},
		// A read's client that half-closed (its context cancelled) is
		// still there to read the answer: a 404 is written.
		{name: "read's context canceled", err: s3err.New(s3err.NoSuchKey, ""), status: 404, ctx: canceled},
		{name: "status already sent", err: errors.New("stream broke"), status: 206, noBody: true,
			pre: func(w http.ResponseWriter) { w.WriteHeader(206) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = "GET"
			}
			r := httptest.NewRequest(method, "/bkt/k", nil)
			if tc.ctx != nil {
				r = r.WithContext(tc.ctx())
			}
			rec := httptest.NewRecorder()
			w := &httprec.Writer{ResponseWriter: rec}
			if tc.pre != nil {
				tc.pre(w)
			}
			if tc.abort {
				defer func() {
					if v := recover(); v != http.ErrAbortHandler {
						t.Errorf("writeError recovered %v, want http.ErrAbortHandler", v)
					}
					if rec.Body.Len() != 0 || w.Status != 0 {
						t.Errorf("aborted response wrote status %d, body %q", w.Status, rec.Body.String())
					}
				}()
			}
			h.writeError(w, r, rq, tc.err)
			if tc.abort {
				t.Fatal("writeError returned; want an abort")
			}
			if rec.Code != tc.status {
				t.Errorf("status %d, want %d", rec.Code, tc.status)
			}
			body := rec.Body.String()
			if tc.noBody && body != "" {
				t.Errorf("body %q, want none", body)
			}
			if !strings.Contains(body, tc.body) {
				t.Errorf("body %q does not contain %q", body, tc.body)
			}
			if tc.body != "" && rec.Header().Get("Content-Type") != "application/xml" {
				t.Errorf("Content-Type %q", rec.Header().Get("Content-Type"))
			}
			if tc.hdr != "" {
				// Set verbatim, as S3 spells them; look them up so.
				got := rec.Header().Get(tc.hdr)
				if v := rec.Header()[tc.hdr]; len(v) > 0 {
					got = v[0]
				}
				if got != tc.val {
					t.Errorf("%s = %q, want %q", tc.hdr, got, tc.val)
				}
			}
		})
	}
}

// TestPanic checks that a panicking handler answers InternalError.
func TestPanic(t *testing.T) {
	hs := newHarness(t, Config{})
	r := hs.request(call{method: "GET", path: "/bkt/k"})
	r = r.WithContext(context.Background())
	hs.h.objects = nil // the service call panics
	rp := hs.serve(r)
	rp.want(t, http.StatusInternalServerError, s3err.InternalError)
}

// TestStorageFailure checks the answers once the metadata store has failed
// under the handler (here: its disk is full): the write that met the
// failure and every later write get ServiceUnavailable naming the cause
// (the later ones before the service is called); reads are served; and a
// handler that panics meanwhile is answered ServiceUnavailable too.
func TestStorageFailure(t *testing.T) {
	var full atomic.Bool
	hs := newHarnessDisk(t, Config{}, testNow, func(string) error {
		if full.Load() {
			return syscall.ENOSPC
		}
		return nil
	})
	hs.mkBucket("bkt")
	hs.put("bkt", "k", []byte("acknowledged"))

	full.Store(true)
	goldenError(t, hs.do(call{method: "PUT", path: "/bkt/lost", body: []byte("x")}),
		"PutObject_ServiceUnavailable", http.StatusServiceUnavailable, s3err.ServiceUnavailable)
	full.Store(false) // freeing space does not bring a failed store back
	for _, c := range []call{
		{method: "PUT", path: "/bkt/later", body: []byte("y")},
		{method: "DELETE", path: "/bkt/k"},
		{method: "POST", path: "/bkt/k?uploads"},
		{method: "PUT", path: "/other"},
	} {
		rp := hs.do(c)
		rp.want(t, http.StatusServiceUnavailable, s3err.ServiceUnavailable)
		if !bytes.Contains(rp.body, []byte("no space left on device")) {
			t.Errorf("%s %s: body %s does not name the cause", c.method, c.path, rp.body)
		}
	}
	if rp := hs.do(call{method: "GET", path: "/bkt/k"}); rp.status != http.StatusOK || string(rp.body) != "acknowledged" {
		t.Errorf("GET after the failure = %d %q", rp.status, rp.body)
	}
	r := hs.request(call{method: "GET", path: "/bkt/k"})
	hs.h.objects = nil // the service call panics
	hs.serve(r).want(t, http.StatusServiceUnavailable, s3err.ServiceUnavailable)
}

// countingBody is a request body that records how much of it was read.
type countingBody struct {
	r    io.Reader
	read int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.read += int64(n)
	return n, err
}

func (b *countingBody) Close() error { return nil }

func TestWriteErrorDrainsBoundedBody(t *testing.T) {
	// An early error drains the unread body so the client can read the
	// answer, but a caller without valid credentials can make the server
	// read only maxDrainOther bytes, and nobody more than
	// maxDrainAuthenticated.
	h := &Handler{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	h.bufs.New = func() any { b := make([]byte, copyBufSize); return &b }
	const size = 1 << 20
	for _, tc := range []struct {
		name      string
		auth      *sigv4.Result
		principal iam.Principal
		size      int64
		want      int64
	}{
		{name: "unauthenticated", size: size, want: maxDrainOther},
		{name: "anonymous", auth: &sigv4.Result{Anonymous: true}, principal: iam.Principal{Anonymous: true}, size: size, want: maxDrainOther},
		{name: "authenticated", auth: &sigv4.Result{AccessKeyID: "AK"}, principal: iam.Principal{AccessKeyID: "AK", Root: true}, size: size, want: size},
		{name: "authenticated beyond bound", auth: &sigv4.Result{AccessKeyID: "AK"}, principal: iam.Principal{AccessKeyID: "AK", Root: true},
			size: maxDrainAuthenticated + size, want: maxDrainAuthenticated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := &countingBody{r: io.LimitReader(zeroReader{}, tc.size)}
			rq := &request{id: "REQ", hostID: "HOST", op: &ops[0], auth: tc.auth, principal: tc.principal, rawBody: body}
			r := httptest.NewRequest("PUT", "/bkt/k", nil)
			rec := httptest.NewRecorder()
			h.writeError(&httprec.Writer{ResponseWriter: rec}, r, rq, s3err.New(s3err.PreconditionFailed, ""))
			if rec.Code != http.StatusPreconditionFailed {
				t.Errorf("status %d, want 412", rec.Code)
			}
			if body.read != tc.want {
				t.Errorf("read %d bytes of the body, want %d", body.read, tc.want)
			}
		})
	}
}

// zeroReader yields zero bytes forever.
type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// sendPartial writes r (headers and body, as a client would) to a new
// connection to hs, but only n bytes of its body, then waits for the
// answer without closing its side. It returns the status (0 if the server
// closed the connection without one) and how long the answer took.
func (hs *harness) sendPartial(t *testing.T, r *http.Request, n int) (int, string, time.Duration) {
	t.Helper()
	var buf bytes.Buffer
	if err := r.Write(&buf); err != nil {
		t.Fatal(err)
	}
	raw := buf.Bytes()
	end := bytes.Index(raw, []byte("\r\n\r\n")) + 4
	conn, err := net.Dial("tcp", hs.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	if _, err := conn.Write(raw[:end+n]); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), r)
	if err != nil {
		return 0, "", time.Since(start)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, errorCode(body), time.Since(start)
}

// TestStalledBodies: an upload whose client stops sending fails with 400
// RequestTimeout after BodyIdleTimeout, and a refused request whose body
// never comes is answered within the drain bound; neither holds the
// server longer, and nothing is stored.
func TestStalledBodies(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, Config{BodyIdleTimeout: 300 * time.Millisecond, FormFieldsTimeout: time.Second})
	hs.mkBucket("bkt")
	body := bytes.Repeat([]byte("x"), 256<<10)

	// The body's stall is the answer: no drain waits for more of it.
	r := hs.request(call{method: http.MethodPut, path: "/bkt/stalled", body: body, payload: "UNSIGNED-PAYLOAD"})
	status, code, took := hs.sendPartial(t, r, 2<<10)
	if status != http.StatusBadRequest || code != string(s3err.RequestTimeout) || took > 300*time.Millisecond+drainTimeout/2 {
		t.Errorf("signed PUT stalled after 2 KiB: %d %s after %v, want 400 RequestTimeout after about 300ms", status, code, took)
	}
	hs.do(call{method: http.MethodHead, path: "/bkt/stalled"}).want(t, http.StatusNotFound, "")

	// Anonymous: refused before the body is read; the drain waits only
	// for what was sent (a stranger sending no body held the connection
	// for the whole drain bound with each request).
	r = hs.request(call{method: http.MethodPut, path: "/bkt/anon", body: body, anon: true})
	status, code, took = hs.sendPartial(t, r, 100)
	if status != http.StatusForbidden || code != string(s3err.AccessDenied) || took > strangerDrainTimeout+drainTimeout/2 {
		t.Errorf("anonymous PUT stalled after 100 bytes: %d %s after %v, want 403 within %v", status, code, took, strangerDrainTimeout)
	}

	// A form upload's fields arriving a byte at a time, each in time for
	// the idle bound: the request ends with RequestTimeout once the
	// fields have taken FormFieldsTimeout, signed or not (nothing is
	// verified before they are in).
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	mw.WriteField("key", "trickle")
	mw.WriteField("policy", strings.Repeat("p", 4<<10))
	head := fmt.Sprintf("POST /bkt HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n",
		hs.srv.Listener.Addr(), mw.FormDataContentType(), form.Len()+100)
	tc, err := net.Dial("tcp", hs.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	start := time.Now()
	tc.Write([]byte(head))
	answered := make(chan *http.Response, 1)
	go func() {
		resp, _ := http.ReadResponse(bufio.NewReader(tc), nil)
		answered <- resp
	}()
	var fresp *http.Response
trickle:
	for _, c := range form.Bytes() {
		select {
		case fresp = <-answered:
			break trickle
		case <-time.After(100 * time.Millisecond):
			tc.Write([]byte{c})
		}
	}
	if fresp == nil {
		select {
		case fresp = <-answered:
		case <-time.After(10 * time.Second):
		}
	}
	took = time.Since(start)
	if fresp == nil || fresp.StatusCode != http.StatusBadRequest || took > 3*time.Second {
		t.Errorf("form fields a byte every 100ms: %v after %v, want 400 RequestTimeout after about 1s", fresp, took)
	} else if b, _ := io.ReadAll(fresp.Body); errorCode(b) != string(s3err.RequestTimeout) {
		t.Errorf("form fields a byte every 100ms: %s", b)
	}

	// A client that keeps sending, slowly, is not cut off.
	r = hs.request(call{method: http.MethodPut, path: "/bkt/slow", body: body[:4<<10], payload: "UNSIGNED-PAYLOAD"})
	var buf bytes.Buffer
	r.Write(&buf)
	conn, err := net.Dial("tcp", hs.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	raw := buf.Bytes()
	for len(raw) > 0 {
		n := min(len(raw), 1<<10)
		conn.Write(raw[:n])
		raw = raw[n:]
		time.Sleep(150 * time.Millisecond) // less than the idle bound each time, more than it in all
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("slow but steady PUT: %v, %v", resp, err)
	}
}

// TestExpectContinue: a stranger's request with "Expect: 100-continue"
// that is refused before its body is read gets the final answer at once,
// without "100 Continue" (the client then never sends the body, as S3
// intends); one that is allowed gets "100 Continue", sends its body and
// is stored. (An authenticated client's refused body is drained, which
// asks for it: see drainBody.)
func TestExpectContinue(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	body := []byte("0123456789")
	// firstStatus sends r's headers only and returns the status line of
	// the first response, interim ones included, and the reader.
	firstStatus := func(r *http.Request) (string, *bufio.Reader, net.Conn) {
		t.Helper()
		r.Header.Set("Expect", "100-continue")
		var buf bytes.Buffer
		if err := r.Write(&buf); err != nil {
			t.Fatal(err)
		}
		raw := buf.Bytes()
		conn, err := net.Dial("tcp", hs.srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		if _, err := conn.Write(raw[:bytes.Index(raw, []byte("\r\n\r\n"))+4]); err != nil {
			t.Fatal(err)
		}
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(conn)
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("no answer: %v", err)
		}
		return strings.TrimSpace(line), br, conn
	}
	line, _, _ := firstStatus(hs.request(call{method: "PUT", path: "/bkt/anon", body: body, anon: true}))
	if !strings.HasPrefix(line, "HTTP/1.1 403") {
		t.Errorf("anonymous PUT with Expect: first answer %q, want 403 without 100 Continue", line)
	}
	line, _, _ = firstStatus(hs.request(call{method: "PUT", path: "/nope/k", body: body, anon: true}))
	if !strings.HasPrefix(line, "HTTP/1.1 404") {
		t.Errorf("anonymous PUT into a missing bucket with Expect: first answer %q, want 404 without 100 Continue", line)
	}
	line, br, conn := firstStatus(hs.request(call{method: "PUT", path: "/bkt/ok", body: body}))
	if !strings.HasPrefix(line, "HTTP/1.1 100") {
		t.Fatalf("allowed PUT with Expect: first answer %q, want 100 Continue", line)
	}
	if _, err := br.ReadString('\n'); err != nil { // the blank line ending the interim response
		t.Fatal(err)
	}
	if _, err := conn.Write(body); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("allowed PUT after 100 Continue: %v, %v", resp, err)
	}
	resp.Body.Close()
	hs.do(call{method: "HEAD", path: "/bkt/ok"}).mustStatus(t, http.StatusOK)
	hs.do(call{method: "HEAD", path: "/bkt/anon"}).want(t, http.StatusNotFound, "")
}

// An answer cut because its client reset or closed the connection is the
// client's doing: no error code (metrics, the audit log), whatever the
// request's context says yet. A storage failure midway, or an upstream's
// connection failing in gateway mode, is an internal error.
func TestWriteErrorMidBody(t *testing.T) {
	h := &Handler{log: slog.New(slog.NewTextHandler(io.Discard, nil)), storageErr: func() error { return nil }}
	reset := &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.ECONNRESET)}
	for _, tc := range []struct {
		name string
		err  error
		code s3err.Code
	}{
		{name: "client reset", err: fmt.Errorf("stream bkt/k: %w", reset), code: ""},
		{name: "client closed", err: fmt.Errorf("stream bkt/k: %w", &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)}), code: ""},
		{name: "storage failed", err: fmt.Errorf("stream bkt/k: %w", errors.New("read block: input/output error")), code: s3err.InternalError},
		{name: "upstream reset", err: fmt.Errorf("stream bkt/k: %w", &url.Error{Op: "Get", URL: "https://up/b", Err: reset}), code: s3err.InternalError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rq := &request{id: "REQ", hostID: "HOST", op: &ops[0]}
			w := &httprec.Writer{ResponseWriter: httptest.NewRecorder()}
			w.WriteHeader(http.StatusOK)
			h.writeError(w, httptest.NewRequest("GET", "/bkt/k", nil), rq, tc.err)
			if rq.code != tc.code {
				t.Errorf("code %q, want %q", rq.code, tc.code)
			}
		})
	}
}
