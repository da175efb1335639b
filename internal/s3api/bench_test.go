package s3api

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/coffer-s3/coffer/internal/sigv4"
)

// discardWriter is a ResponseWriter that keeps the status and drops the
// body, so benchmarks measure the handler and not a connection.
type discardWriter struct {
	h      http.Header
	status int
}

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(code int)        { d.status = code }

// benchSizes are the object sizes of BenchmarkPutObject and
// BenchmarkGetObject.
var benchSizes = []struct {
	name string
	size int
}{
	{"1KiB", 1 << 10},
	{"100KiB", 100 << 10},
	{"8MiB", 8 << 20},
	{"64MiB", 64 << 20},
}

// signedRequest is a request signed once and replayed: each iteration gets
// a copy of its headers and a fresh body, so signing is not measured.
type signedRequest struct {
	method string
	u      *url.URL
	host   string
	header http.Header
	body   []byte
}

func newSignedRequest(b *testing.B, method, path string, body []byte, payload string) *signedRequest {
	b.Helper()
	r, err := http.NewRequest(method, "http://"+testDomain+path, bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	if payload == "" {
		sum := sha256.Sum256(body)
		payload = hex.EncodeToString(sum[:])
	}
	r.Header.Set("Content-Length", strconv.Itoa(len(body)))
	sigv4.SignRequest(r, rootCred(), testRegion, testNow(), payload)
	return &signedRequest{method: method, u: r.URL, host: r.Host, header: r.Header, body: body}
}

// serve replays the request through h and returns the status.
func (s *signedRequest) serve(h http.Handler, w *discardWriter) int {
	r := &http.Request{
		Method:        s.method,
		URL:           s.u,
		Host:          s.host,
		RequestURI:    s.u.RequestURI(),
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        s.header.Clone(),
		ContentLength: int64(len(s.body)),
		Body:          io.NopCloser(bytes.NewReader(s.body)),
	}
	clear(w.h)
	w.status = 0
	h.ServeHTTP(w, r)
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

func BenchmarkPutObject(b *testing.B) {
	for _, sz := range benchSizes {
		for _, payload := range []string{"UNSIGNED-PAYLOAD", ""} {
			name := "payload=unsigned"
			if payload == "" {
				name = "payload=signed"
			}
			b.Run(fmt.Sprintf("size=%s/%s", sz.name, name), func(b *testing.B) {
				hs := newHarness(b, Config{})
				hs.mkBucket("bench")
				body := bytes.Repeat([]byte{'x'}, sz.size)
				req := newSignedRequest(b, "PUT", "/bench/object", body, payload)
				w := &discardWriter{h: http.Header{}}
				b.SetBytes(int64(sz.size))
				b.ReportAllocs()
				for b.Loop() {
					if st := req.serve(hs.h, w); st != http.StatusOK {
						b.Fatalf("PutObject status %d", st)
					}
				}
			})
		}
	}
}

func BenchmarkGetObject(b *testing.B) {
	for _, sz := range benchSizes {
		b.Run("size="+sz.name, func(b *testing.B) {
			hs := newHarness(b, Config{})
			hs.mkBucket("bench")
			hs.put("bench", "object", bytes.Repeat([]byte{'x'}, sz.size))
			req := newSignedRequest(b, "GET", "/bench/object", nil, "UNSIGNED-PAYLOAD")
			w := &discardWriter{h: http.Header{}}
			b.SetBytes(int64(sz.size))
			b.ReportAllocs()
			for b.Loop() {
				if st := req.serve(hs.h, w); st != http.StatusOK {
					b.Fatalf("GetObject status %d", st)
				}
			}
		})
	}
}

// BenchmarkGetObjectOrigin measures what an Origin header costs a 1 KiB
// GET: nothing without one, one metadata read with one (a bucket without
// CORS), and a decode and match of the rules when the bucket has them (a
// small configuration, and 100 rules of which the last matches).
func BenchmarkGetObjectOrigin(b *testing.B) {
	var many strings.Builder
	many.WriteString("<CORSConfiguration>")
	for i := range 99 {
		fmt.Fprintf(&many, "<CORSRule><AllowedOrigin>https://site%d.example.com</AllowedOrigin><AllowedMethod>GET</AllowedMethod><AllowedHeader>*</AllowedHeader><ExposeHeader>ETag</ExposeHeader></CORSRule>", i)
	}
	many.WriteString("<CORSRule><AllowedOrigin>https://app.example.com</AllowedOrigin><AllowedMethod>GET</AllowedMethod></CORSRule></CORSConfiguration>")
	for _, tc := range []struct {
		name, origin, config string
	}{
		{name: "no-origin"},
		{name: "origin/no-cors", origin: "https://app.example.com"},
		{name: "origin/1-rule", origin: "https://app.example.com", config: corsBody},
		{name: "origin/100-rules", origin: "https://app.example.com", config: many.String()},
	} {
		b.Run(tc.name, func(b *testing.B) {
			hs := newHarness(b, Config{})
			hs.mkBucket("bench")
			hs.put("bench", "object", bytes.Repeat([]byte{'x'}, 1<<10))
			if tc.config != "" {
				hs.putCORS("bench", tc.config).mustStatus(b, http.StatusOK)
			}
			req := newSignedRequest(b, "GET", "/bench/object", nil, "UNSIGNED-PAYLOAD")
			if tc.origin != "" {
				req.header.Set("Origin", tc.origin)
			}
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				if st := req.serve(hs.h, w); st != http.StatusOK {
					b.Fatalf("GetObject status %d", st)
				}
			}
			if tc.config != "" && w.h.Get("Access-Control-Allow-Origin") == "" {
				b.Fatal("no CORS headers")
			}
		})
	}
}

// BenchmarkGetObjectAnonymous measures an anonymous 1 KiB GET from a
// bucket whose policy lets anyone read (a public website's bucket): the
// request path Block Public Access's RestrictPublicBuckets check sits on.
func BenchmarkGetObjectAnonymous(b *testing.B) {
	hs := newHarness(b, Config{})
	hs.mkBucket("bench")
	hs.put("bench", "object", bytes.Repeat([]byte{'x'}, 1<<10))
	pol := []byte(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bench/*"}]}`)
	hs.do(call{method: "PUT", path: "/bench?policy", body: pol}).mustStatus(b, http.StatusNoContent)
	req := newSignedRequest(b, "GET", "/bench/object", nil, "UNSIGNED-PAYLOAD")
	req.header = http.Header{}
	w := &discardWriter{h: http.Header{}}
	b.SetBytes(1 << 10)
	b.ReportAllocs()
	for b.Loop() {
		if st := req.serve(hs.h, w); st != http.StatusOK {
			b.Fatalf("anonymous GetObject status %d", st)
		}
	}
}
