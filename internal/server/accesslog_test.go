package server

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestAccessKeyID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, auth, query, want string
	}{
		{name: "header", auth: "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=abc", want: "AKIDEXAMPLE"},
		{name: "header without slash", auth: "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE, SignedHeaders=host, Signature=abc", want: "AKIDEXAMPLE"},
		{name: "header without credential", auth: "Bearer token", want: ""},
		{name: "sigv2 header", auth: "AWS AKIDEXAMPLE:signature", want: "AKIDEXAMPLE"},
		{name: "presigned", query: "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDQUERY%2F20150830%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Signature=abc", want: "AKIDQUERY"},
		{name: "sigv2 presigned", query: "AWSAccessKeyId=AKIDV2&Signature=c2ln&Expires=1", want: "AKIDV2"},
		{name: "anonymous", want: ""},
		{name: "overlong", auth: "Credential=" + strings.Repeat("A", 500), want: strings.Repeat("A", maxAccessKeyLen)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/b/k?"+tc.query, nil)
			if tc.auth != "" {
				r.Header.Set("Authorization", tc.auth)
			}
			if got := accessKeyID(r); got != tc.want {
				t.Errorf("accessKeyID = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestAccessLogRecord(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	a := newAccessLog(slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelError})), 1)
	h := a.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["x-amz-request-id"] = []string{"REQ123"}
		w.WriteHeader(http.StatusPartialContent)
		io.WriteString(w, "hello")
		io.Copy(w, strings.NewReader(" world")) // through ReadFrom
	}))
	r := httptest.NewRequest(http.MethodGet, "/b/k?X-Amz-Signature=sig", nil)
	r.RemoteAddr = "192.0.2.7:5555"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	stop := make(chan struct{})
	close(stop)
	a.run(stop)
	got := out.String()
	// The level of the process log does not hide sampled records.
	for _, want := range []string{`"msg":"request"`, `"method":"GET"`, `"path":"/b/k"`, `"status":206`, `"bytes":11`, `"request_id":"REQ123"`, `"remote":"192.0.2.7"`} {
		if !strings.Contains(got, want) {
			t.Errorf("record lacks %s: %s", want, got)
		}
	}
	if strings.Contains(got, "sig") {
		t.Errorf("record contains the query string: %s", got)
	}
	if w.Body.String() != "hello world" || w.Code != http.StatusPartialContent {
		t.Errorf("response = %d %q, want 206 \"hello world\"", w.Code, w.Body.String())
	}
}

func TestAccessLogDropsWhenFull(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	a := newAccessLog(slog.New(slog.NewTextHandler(&out, nil)), 1)
	h := a.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	// No writer is running: the queue fills, then requests drop records
	// instead of blocking.
	for range accessQueueLen + 10 {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	}
	if got := a.dropped.Load(); got != 10 {
		t.Errorf("dropped = %d, want 10", got)
	}
	stop := make(chan struct{})
	close(stop)
	a.run(stop)
	if n := strings.Count(out.String(), "msg=request"); n != accessQueueLen {
		t.Errorf("wrote %d records, want %d", n, accessQueueLen)
	}
	if !strings.Contains(out.String(), "access log records dropped") || !strings.Contains(out.String(), "dropped=10") {
		t.Errorf("drops not reported:\n%.500s", out.String())
	}
}

func TestAccessLogSampling(t *testing.T) {
	t.Parallel()
	a := newAccessLog(slog.New(slog.NewTextHandler(io.Discard, nil)), 0.25)
	h := a.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	const n = 2000
	for range n {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	}
	// 500 expected; the bounds are 8 standard deviations (σ ≈ 19.4) wide.
	if got := len(a.queue); got < 345 || got > 655 {
		t.Errorf("sampled %d of %d requests at 0.25, want about 500", got, n)
	}
}

func BenchmarkAccessLog(b *testing.B) {
	for _, sample := range []float64{0.01, 1} {
		b.Run(fmt.Sprint("sample=", sample), func(b *testing.B) {
			a := newAccessLog(slog.New(slog.NewTextHandler(io.Discard, nil)), sample)
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() { a.run(stop); close(done) }()
			h := a.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) }))
			r := httptest.NewRequest(http.MethodGet, "/bucket/key", nil)
			r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=abc")
			w := httptest.NewRecorder()
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(w, r)
			}
			b.StopTimer()
			close(stop)
			<-done
		})
	}
}
