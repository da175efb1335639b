package loadgen

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coffer-s3/coffer/internal/sigv4"
)

func TestReadError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		status int
		body   string
		want   string
	}{
		{"s3 error", 403, "<Error><Code>AccessDenied</Code><Message>no</Message></Error>", "AccessDenied (HTTP 403): no"},
		{"bodiless 404", 404, "", "NotFound (HTTP 404)"},
		{"not xml", 502, "bad gateway", "BadGateway (HTTP 502)"},
		{"unknown status", 599, "", "HTTP599 (HTTP 599)"},
	} {
		resp := &http.Response{StatusCode: tc.status, Body: io.NopCloser(strings.NewReader(tc.body))}
		err := readError(resp)
		if err.Error() != tc.want {
			t.Errorf("%s: readError = %q, want %q", tc.name, err, tc.want)
		}
		if got, want, _ := strings.Cut(tc.want, " "); errCode(err) != got {
			t.Errorf("%s: errCode = %q, want %q", tc.name, errCode(err), want)
		}
	}
	if got := errCode(errors.New("x")); got != "ClientError" {
		t.Errorf("errCode(plain error) = %q, want ClientError", got)
	}
}

// BenchmarkSignRequest is the cost of making and signing one generator
// request, with the client's cached signing key and, for comparison, with
// sigv4.SignRequest, which derives the key per call.
func BenchmarkSignRequest(b *testing.B) {
	const u = "http://127.0.0.1:9000/coffer-bench-0123456789ab/obj-3-1234"
	c := newClient(Target{Name: "b", URL: "http://127.0.0.1:9000", AccessKey: "AK", SecretKey: "SK"}, 1, nil)
	defer c.close()
	b.Run("signer=client", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			req, err := http.NewRequest(http.MethodGet, u, nil)
			if err != nil {
				b.Fatal(err)
			}
			if err := c.signer.Sign(req, unsignedPayload, time.Now()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("signer=SignRequest", func(b *testing.B) {
		cred := sigv4.Credentials{AccessKeyID: "AK", SecretKey: "SK"}
		b.ReportAllocs()
		for b.Loop() {
			req, err := http.NewRequest(http.MethodGet, u, nil)
			if err != nil {
				b.Fatal(err)
			}
			sigv4.SignRequest(req, cred, "us-east-1", time.Now(), unsignedPayload)
		}
	})
}

// BenchmarkClientPut is the generator's cost of one 100 KiB PUT, including
// the in-process server's work of draining the body.
func BenchmarkClientPut(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	defer srv.Close()
	c := newClient(Target{Name: "b", URL: srv.URL, AccessKey: "AK", SecretKey: "SK"}, 1, nil)
	defer c.close()
	payload := make([]byte, 100<<10)
	buf := make([]byte, 64<<10)
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.do(b.Context(), http.MethodPut, "/bucket/key", "", payload, buf); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkClientGet is the generator's cost of one 100 KiB GET, including
// the in-process server's work of writing the body.
func BenchmarkClientGet(b *testing.B) {
	body := make([]byte, 100<<10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	c := newClient(Target{Name: "b", URL: srv.URL, AccessKey: "AK", SecretKey: "SK"}, 1, nil)
	defer c.close()
	buf := make([]byte, 64<<10)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if n, err := c.do(b.Context(), http.MethodGet, "/bucket/key", "", nil, buf); err != nil || n != int64(len(body)) {
			b.Fatal(n, err)
		}
	}
}
