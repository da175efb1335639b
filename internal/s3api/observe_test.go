package s3api

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/coffer-s3/coffer/internal/httprec"
	"github.com/coffer-s3/coffer/internal/s3err"
	"github.com/coffer-s3/coffer/internal/sigv4"
)

// recorder is an Observer that keeps a copy of every record.
type recorder struct {
	mu   sync.Mutex // guards recs
	recs []RequestRecord
}

func (o *recorder) ObserveRequest(rec *RequestRecord) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.recs = append(o.recs, *rec)
}

// wait returns the one record of request id, failing if it does not come
// within a few seconds or comes more than once. ServeHTTP may return (and
// observe) after the client has read a large response, so records are
// waited for.
func (o *recorder) wait(t *testing.T, id string) RequestRecord {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		o.mu.Lock()
		var found []RequestRecord
		for _, r := range o.recs {
			if r.RequestID == id {
				found = append(found, r)
			}
		}
		o.mu.Unlock()
		switch {
		case len(found) > 1:
			t.Fatalf("request %s observed %d times, want once: %+v", id, len(found), found)
		case len(found) == 1:
			return found[0]
		case time.Now().After(deadline):
			t.Fatalf("request %s never observed", id)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitOp returns the first record of an op, failing if none comes within
// a few seconds.
func (o *recorder) waitOp(t *testing.T, op string) RequestRecord {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		o.mu.Lock()
		for _, r := range o.recs {
			if r.Op == op {
				o.mu.Unlock()
				return r
			}
		}
		o.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("no %s observed within 5 s", op)
		}
		time.Sleep(time.Millisecond)
	}
}

// count returns how many records there are.
func (o *recorder) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.recs)
}

// requestID returns the x-amz-request-id of a response that did not go
// through a connection: the Handler sets it verbatim, not canonicalized.
func requestID(h http.Header) string {
	for k, v := range h {
		if strings.EqualFold(k, "x-amz-request-id") && len(v) > 0 {
			return v[0]
		}
	}
	return ""
}

// observed returns a harness whose Handler reports to a recorder.
func observed(t *testing.T) (*harness, *recorder) {
	hs := newHarness(t, Config{})
	o := &recorder{}
	hs.h.observer = o
	return hs, o
}

// ignoreVarying leaves out of comparisons the fields a test cannot fix:
// the client's port and the request ID (checked separately).
var ignoreVarying = cmpopts.IgnoreFields(RequestRecord{}, "RemoteAddr", "RequestID")

func TestObserver(t *testing.T) {
	t.Parallel()
	hs, o := observed(t)
	hs.mkBucket("bkt")
	body := bytes.Repeat([]byte("0123456789"), 20_000) // 200 kB: past net/http's buffer, so the client has it before ServeHTTP returns
	wrong := sigv4.Credentials{AccessKeyID: rootAccessKey, SecretKey: "not-the-secret"}
	unknown := sigv4.Credentials{AccessKeyID: "AKNOSUCHKEY", SecretKey: "whatever-secret"}
	nobody := hs.user("nobody") // no policies
	for _, tc := range []struct {
		name string
		c    call
		want RequestRecord
	}{
		{
			name: "PutObject",
			c:    call{method: "PUT", path: "/bkt/obj", body: body},
			want: RequestRecord{Op: "PutObject", Status: 200, BytesIn: int64(len(body)), Bucket: "bkt", Key: "obj", AccessKeyID: rootAccessKey},
		},
		{
			name: "GetObject",
			c:    call{method: "GET", path: "/bkt/obj"},
			want: RequestRecord{Op: "GetObject", Status: 200, BytesOut: int64(len(body)), Bucket: "bkt", Key: "obj", AccessKeyID: rootAccessKey},
		},
		{
			name: "range",
			c:    call{method: "GET", path: "/bkt/obj", header: header("Range", "bytes=10-19")},
			want: RequestRecord{Op: "GetObject", Status: 206, BytesOut: 10, Bucket: "bkt", Key: "obj", AccessKeyID: rootAccessKey},
		},
		{
			name: "HeadObject",
			c:    call{method: "HEAD", path: "/bkt/obj"},
			want: RequestRecord{Op: "HeadObject", Status: 200, Bucket: "bkt", Key: "obj", AccessKeyID: rootAccessKey},
		},
		{
			name: "ListBuckets",
			c:    call{method: "GET", path: "/"},
			want: RequestRecord{Op: "ListBuckets", Status: 200, AccessKeyID: rootAccessKey}, // BytesOut checked below
		},
		{
			name: "NoSuchKey",
			c:    call{method: "GET", path: "/bkt/missing"},
			want: RequestRecord{Op: "GetObject", Status: 404, Code: s3err.NoSuchKey, Bucket: "bkt", Key: "missing", AccessKeyID: rootAccessKey},
		},
		{
			name: "NoSuchKey on HEAD",
			c:    call{method: "HEAD", path: "/bkt/missing"},
			want: RequestRecord{Op: "HeadObject", Status: 404, Code: s3err.NoSuchKey, Bucket: "bkt", Key: "missing", AccessKeyID: rootAccessKey},
		},
		{
			// The service reads the body (or writeError drains it): every
			// byte that came off the connection is counted.
			name: "PUT into a missing bucket",
			c:    call{method: "PUT", path: "/nobkt/obj", body: body[:5000]},
			want: RequestRecord{Op: "PutObject", Status: 404, Code: s3err.NoSuchBucket, BytesIn: 5000, Bucket: "nobkt", Key: "obj", AccessKeyID: rootAccessKey},
		},
		{
			name: "bad signature",
			c:    call{method: "GET", path: "/bkt/obj", cred: &wrong},
			want: RequestRecord{Op: "GetObject", Status: 403, Code: s3err.SignatureDoesNotMatch, Bucket: "bkt", Key: "obj", ClaimedAccessKeyID: rootAccessKey, AuthFailed: true},
		},
		{
			name: "unknown access key",
			c:    call{method: "GET", path: "/bkt/obj", cred: &unknown},
			want: RequestRecord{Op: "GetObject", Status: 403, Code: s3err.InvalidAccessKeyID, Bucket: "bkt", Key: "obj", ClaimedAccessKeyID: "AKNOSUCHKEY", AuthFailed: true},
		},
		{
			// A 400, but a failed authentication: the audit log keeps it.
			name: "malformed authorization",
			c: call{method: "GET", path: "/bkt/obj", anon: true,
				header: header("Authorization", "AWS4-HMAC-SHA256 Credential=AKNOSUCHKEY/garbage")},
			want: RequestRecord{Op: "GetObject", Status: 400, Code: s3err.AuthorizationHeaderMalformed, Bucket: "bkt", Key: "obj", AuthFailed: true},
		},
		{
			name: "anonymous",
			c:    call{method: "GET", path: "/bkt/obj", anon: true},
			want: RequestRecord{Op: "GetObject", Status: 403, Code: s3err.AccessDenied, Bucket: "bkt", Key: "obj", Denied: true},
		},
		{
			// Denied, and answered NoSuchBucket as S3 answers it: still
			// a refusal, which a key without permissions can send at will.
			name: "denied PUT into a missing bucket",
			c:    call{method: "PUT", path: "/nobkt/obj", body: body[:10], cred: nobody},
			want: RequestRecord{Op: "PutObject", Status: 404, Code: s3err.NoSuchBucket, BytesIn: 10, Bucket: "nobkt", Key: "obj", AccessKeyID: nobody.AccessKeyID, User: "nobody", Denied: true},
		},
		{
			name: "not implemented",
			c:    call{method: "GET", path: "/bkt?website"},
			want: RequestRecord{Op: "NotImplemented", Status: 501, Code: s3err.NotImplemented, Bucket: "bkt", AccessKeyID: rootAccessKey},
		},
		{
			name: "routing failure",
			c:    call{method: "GET", path: "/k", host: "." + testDomain},
			want: RequestRecord{Op: OpUnknown, Status: 400, Code: s3err.InvalidBucketName},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rp := hs.do(tc.c)
			id := rp.header.Get("x-amz-request-id")
			got := o.wait(t, id)
			want := tc.want
			want.Start = testNow() // the harness clock stands still
			want.Method = tc.c.method
			want.Root = want.AccessKeyID == rootAccessKey
			if tc.name == "ListBuckets" {
				want.BytesOut = int64(len(rp.body))
			}
			if rp.status != want.Status {
				t.Errorf("response status %d, want %d", rp.status, want.Status)
			}
			if tc.c.method != "HEAD" && want.Code == "" && want.BytesOut != int64(len(rp.body)) {
				t.Errorf("client read %d bytes, want %d", len(rp.body), want.BytesOut)
			}
			if want.Code != "" && tc.c.method != "HEAD" && got.BytesOut != int64(len(rp.body)) {
				t.Errorf("BytesOut %d, but the error document has %d bytes", got.BytesOut, len(rp.body))
			}
			if want.Code != "" && tc.c.method != "HEAD" {
				want.BytesOut = got.BytesOut // checked just above
			}
			if diff := cmp.Diff(want, got, ignoreVarying); diff != "" {
				t.Errorf("record mismatch (-want +got):\n%s", diff)
			}
			if got.RequestID != id || !strings.HasPrefix(got.RemoteAddr, "127.0.0.1:") {
				t.Errorf("RequestID %q RemoteAddr %q, want %q and the client's address", got.RequestID, got.RemoteAddr, id)
			}
		})
	}
}

// TestObserverDuration checks Start and Duration against a clock that
// moves: Duration runs from the start to after the last byte written.
func TestObserverDuration(t *testing.T) {
	t.Parallel()
	var ticks atomic.Int64
	clock := func() time.Time { return testNow().Add(time.Duration(ticks.Add(1)) * time.Millisecond) }
	hs := newHarnessAt(t, Config{}, clock)
	o := &recorder{}
	hs.h.observer = o
	var last time.Time
	hs.h.clock = func() time.Time { last = clock(); return last }
	rp := hs.do(call{method: "GET", path: "/"})
	got := o.wait(t, rp.header.Get("x-amz-request-id"))
	if got.Duration <= 0 || !got.Start.Add(got.Duration).Equal(last) {
		t.Errorf("Start %v Duration %v; want a positive duration ending at the handler's last clock reading %v", got.Start, got.Duration, last)
	}
}

// TestObserverPanic checks that a panicking handler is observed once, as
// the InternalError it was answered with.
func TestObserverPanic(t *testing.T) {
	t.Parallel()
	hs, o := observed(t)
	r := hs.request(call{method: "GET", path: "/bkt/k"})
	r.RemoteAddr = "192.0.2.1:1234"
	hs.h.objects = nil // the service call panics
	rp := hs.serve(r)
	rp.want(t, http.StatusInternalServerError, s3err.InternalError)
	got := o.wait(t, requestID(rp.header))
	want := RequestRecord{Op: "GetObject", Status: 500, Code: s3err.InternalError, BytesOut: int64(len(rp.body)),
		Start: testNow(), Bucket: "bkt", Key: "k", Method: "GET", AccessKeyID: rootAccessKey, Root: true, RemoteAddr: "192.0.2.1:1234"}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(RequestRecord{}, "RequestID")); diff != "" {
		t.Errorf("record mismatch (-want +got):\n%s", diff)
	}
}

// TestObserverClientGone checks that a request whose client went away
// before an answer is observed once, with status 499, while ServeHTTP
// still aborts the connection.
func TestObserverClientGone(t *testing.T) {
	t.Parallel()
	hs, o := observed(t)
	hs.mkBucket("bkt")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// A write: a read's answer is written even to a client whose context
	// ended (it may have only half-closed; readContext).
	r := hs.request(call{method: "DELETE", path: "/nobkt/k"}).WithContext(ctx)
	r.RequestURI = r.URL.RequestURI()
	w := httptest.NewRecorder()
	func() {
		defer func() {
			if v := recover(); v != http.ErrAbortHandler {
				t.Errorf("ServeHTTP panicked with %v, want http.ErrAbortHandler", v)
			}
		}()
		hs.h.ServeHTTP(w, r)
	}()
	got := o.wait(t, requestID(w.Header()))
	if got.Status != StatusClientClosed || got.Code != "" || got.Op != "DeleteObject" {
		t.Errorf("record %+v, want DeleteObject with status 499 and no code", got)
	}
}

// TestObserverOncePerRequest sends requests concurrently and checks that
// each is observed exactly once.
func TestObserverOncePerRequest(t *testing.T) {
	t.Parallel()
	hs, o := observed(t)
	hs.mkBucket("bkt")
	before := o.count()
	const n = 50
	ids := make(chan string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			path := "/bkt/missing"
			if i%2 == 0 {
				path = "/"
			}
			r := hs.request(call{method: "GET", path: path})
			resp, err := hs.srv.Client().Do(r)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			ids <- resp.Header.Get("x-amz-request-id")
		})
	}
	wg.Wait()
	close(ids)
	for id := range ids {
		o.wait(t, id)
	}
	if got := o.count() - before; got != n {
		t.Errorf("%d records for %d requests", got, n)
	}
}

// countingObserver counts records without copying them.
type countingObserver struct{ n atomic.Int64 }

func (c *countingObserver) ObserveRequest(*RequestRecord) { c.n.Add(1) }

// TestObserverAllocs checks that observing a request allocates nothing:
// the record handed over and the body counter live in the request's state.
// (BenchmarkGetObjectObserved shows the whole request: as many allocations
// with an observer as without.)
func TestObserverAllocs(t *testing.T) {
	h := &Handler{log: slog.New(slog.DiscardHandler), clock: testNow}
	obs := &countingObserver{}
	h.observer = obs
	r := httptest.NewRequest("PUT", "/bkt/k", strings.NewReader("body"))
	h.obs.New = func() any { return new(observation) }
	rw := &httprec.Writer{ResponseWriter: httptest.NewRecorder()}
	rw.Status, rw.Written = 200, 10
	rq := &request{id: "REQ", op: &ops[0], bucket: "bkt", key: "k"}
	if n := testing.AllocsPerRun(100, func() {
		rq.obs = h.obs.Get().(*observation)
		rq.obs.body.rc = r.Body
		rq.rawBody = &rq.obs.body
		h.finish(rw, r, rq, testNow())
	}); n != 0 {
		t.Errorf("finish with an observer allocates %v times, want 0", n)
	}
	if obs.n.Load() < 100 {
		t.Errorf("observer called %d times, want at least 100", obs.n.Load())
	}
}

func TestOpNames(t *testing.T) {
	names := OpNames()
	seen := map[string]bool{}
	for _, n := range names {
		if n == "" || seen[n] {
			t.Errorf("OpNames has %q twice or empty", n)
		}
		seen[n] = true
	}
	for _, want := range []string{"GetObject", "PutObject", "ListBuckets", "NotImplemented", OpUnknown} {
		if !seen[want] {
			t.Errorf("OpNames lacks %q", want)
		}
	}
	if len(names) != len(ops)+2 {
		t.Errorf("OpNames has %d names, want the %d ops plus NotImplemented and %s", len(names), len(ops), OpUnknown)
	}
}

// BenchmarkGetObjectObserved is BenchmarkGetObject for a small object with
// and without an observer: the cost of the hook itself.
func BenchmarkGetObjectObserved(b *testing.B) {
	for _, observe := range []bool{false, true} {
		name := "observer=none"
		if observe {
			name = "observer=counting"
		}
		b.Run(name, func(b *testing.B) {
			hs := newHarness(b, Config{})
			if observe {
				hs.h.observer = &countingObserver{}
			}
			hs.mkBucket("bench")
			hs.put("bench", "object", bytes.Repeat([]byte{'x'}, 1<<10))
			req := newSignedRequest(b, "GET", "/bench/object", nil, "UNSIGNED-PAYLOAD")
			w := &discardWriter{h: http.Header{}}
			b.SetBytes(1 << 10)
			b.ReportAllocs()
			for b.Loop() {
				if st := req.serve(hs.h, w); st != http.StatusOK {
					b.Fatalf("GetObject status %d", st)
				}
			}
		})
	}
}

// TestObserverDeleteObjectsDenied: a DeleteObjects is denied for the
// audit log (recorded within the bounds for strangers) until one of its
// entries is allowed: a malformed body or an all-denied one from a key
// without permissions is; one that deleted some keys and was refused
// others is not (its deletions must not be summarized away).
func TestObserverDeleteObjectsDenied(t *testing.T) {
	t.Parallel()
	hs, o := observed(t)
	hs.mkBucket("bkt")
	for _, k := range []string{"mine/a", "mine/b", "secret/c"} {
		hs.put("bkt", k, []byte("x"))
	}
	pol := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:DeleteObject","Resource":"arn:aws:s3:::bkt/mine/*"}]}`
	if err := hs.iam.PutPolicy(t.Context(), "mine", []byte(pol)); err != nil {
		t.Fatal(err)
	}
	deleter, nobody := hs.user("deleter", "mine"), hs.user("nobody")
	md5Of := func(b []byte) http.Header {
		d := md5.Sum(b)
		return http.Header{"Content-Md5": {base64.StdEncoding.EncodeToString(d[:])}}
	}
	some := []byte(`<Delete><Object><Key>mine/a</Key></Object><Object><Key>mine/b</Key></Object><Object><Key>secret/c</Key></Object></Delete>`)
	badETag := []byte(`<Delete><Object><Key>k</Key><ETag>"x</ETag></Object></Delete>`)
	for _, tc := range []struct {
		name   string
		cred   *sigv4.Credentials
		body   []byte
		denied bool
	}{
		{"some allowed", deleter, some, false},
		{"none allowed", nobody, some, true},
		{"malformed", nobody, []byte("junk"), true},
		{"bad entry", nobody, badETag, true},
	} {
		rp := hs.do(call{method: "POST", path: "/bkt?delete", body: tc.body, cred: tc.cred, header: md5Of(tc.body)})
		if got := o.wait(t, rp.header.Get("x-amz-request-id")); got.Denied != tc.denied {
			t.Errorf("%s: status %d, Denied %v, want %v", tc.name, got.Status, got.Denied, tc.denied)
		}
	}
	hs.do(call{method: "HEAD", path: "/bkt/mine/a"}).want(t, http.StatusNotFound, "")
}
