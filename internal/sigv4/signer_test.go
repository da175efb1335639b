package sigv4

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// A signerCase is a client request to sign.
type signerCase struct {
	name, method, url string
	body              []byte
	header            map[string][]string
	payload           string
}

// signerRequests cover what the signed-header list and the canonical
// request depend on.
var signerRequests = []signerCase{
	{name: "get", method: http.MethodGet, url: "http://127.0.0.1:9000/bucket/obj-1-2", payload: unsignedPayload},
	{name: "put with body", method: http.MethodPut, url: "http://127.0.0.1:9000/bucket/key", body: []byte("hello"), payload: unsignedPayload},
	{name: "put empty body", method: http.MethodPut, url: "http://127.0.0.1:9000/bucket", body: []byte{}, payload: emptySHA256},
	{name: "query", method: http.MethodGet, url: "http://h/bucket?list-type=2&max-keys=1000&prefix=a%2Fb+c&x=2&x=1", payload: emptySHA256},
	{name: "escaped key", method: http.MethodHead, url: "http://h/b/%C3%BC%20x/a+b%2b~", payload: unsignedPayload},
	{name: "virtual host", method: http.MethodDelete, url: "http://bucket.s3.example.com:8443/k?versionId=3HL4kqtJ", payload: unsignedPayload},
	{name: "headers", method: http.MethodPost, url: "http://h/b/k?uploads", body: []byte("<x/>"), payload: unsignedPayload,
		header: map[string][]string{
			"Content-Type":    {"application/xml"},
			"X-Amz-Meta-Tags": {"  a   b ", "c"},
			"Range":           {"bytes=0-9"},
			"User-Agent":      {"bench/1"},
			"Expect":          {"100-continue"},
			"x-lower-case":    {"v"}, // a key net/http did not canonicalize
			"Authorization":   {"stale"},
		}},
	{name: "streaming keyword", method: http.MethodPut, url: "http://h/b/k", body: []byte("x"), payload: streamingSigned,
		header: map[string][]string{"Content-Encoding": {"aws-chunked"}, "X-Amz-Decoded-Content-Length": {"1"}}},
}

func (tc *signerCase) request(t testing.TB) *http.Request {
	t.Helper()
	r := newRequest(t, tc.method, tc.url, tc.body)
	for k, vs := range tc.header {
		r.Header[k] = append([]string(nil), vs...)
	}
	return r
}

// TestSignerMatchesSignRequest checks that Sign produces the headers
// SignRequest produces, for every request, on either side of midnight, and
// that the Verifier accepts them.
func TestSignerMatchesSignRequest(t *testing.T) {
	t.Parallel()
	s := NewSigner(testCred, "us-east-1", "s3")
	times := []time.Time{testTime, testTime.Add(14*time.Hour - time.Second), testTime.Add(14 * time.Hour), testTime}
	for i := range signerRequests {
		tc := &signerRequests[i]
		t.Run(tc.name, func(t *testing.T) {
			for _, at := range times {
				want := tc.request(t)
				SignRequest(want, testCred, "us-east-1", at, tc.payload)
				got := tc.request(t)
				if err := s.Sign(got, tc.payload, at); err != nil {
					t.Fatalf("Sign: %v", err)
				}
				if diff := cmp.Diff(want.Header, got.Header); diff != "" {
					t.Fatalf("Sign at %v differs from SignRequest (-SignRequest +Sign):\n%s", at, diff)
				}
				v := newTestVerifier(at, testCred)
				res, err := v.Verify(serverSide(t, got))
				if err != nil {
					t.Fatalf("Verify of a request signed at %v: %v", at, err)
				}
				if res.AccessKeyID != testCred.AccessKeyID {
					t.Errorf("verified as %q, want %q", res.AccessKeyID, testCred.AccessKeyID)
				}
			}
		})
	}
}

func TestSignerPresignMatchesPresign(t *testing.T) {
	t.Parallel()
	s := NewSigner(testCred, "", "") // defaults: us-east-1, s3
	for _, tc := range []struct {
		name, method, url string
		expires           time.Duration
	}{
		{"get", http.MethodGet, "http://127.0.0.1:9000/bucket/obj-1-2", 15 * time.Minute},
		{"query and escapes", http.MethodGet, "http://bucket.localhost:6789/a%20b/%C3%BC?versionId=3&response-content-type=text%2Fplain", time.Hour},
		{"put", http.MethodPut, "https://h:8443/b/k", maxExpires},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := Presign(tc.method, tc.url, testCred, "us-east-1", testTime, tc.expires)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.Presign(tc.method, tc.url, testTime, tc.expires)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("Signer.Presign = %s\nPresign        = %s", got, want)
			}
			if _, err := newTestVerifier(testTime, testCred).Verify(serverSide(t, newRequest(t, tc.method, got, nil))); err != nil {
				t.Errorf("Verify: %v", err)
			}
		})
	}
	// Bad input fails as it does for Presign.
	for _, tc := range []struct {
		url     string
		expires time.Duration
		want    string
	}{
		{"/relative", time.Minute, "url must be absolute"},
		{"http://h/b/k", 1500 * time.Millisecond, "not a whole number of seconds"},
		{"http://h/b/k", maxExpires + time.Second, "not a whole number of seconds"},
		{"http://h/b/k?X-Amz-Signature=x", time.Minute, "url already has X-Amz-Signature"},
		{"http://h/%zz", time.Minute, "presign:"},
	} {
		if _, err := s.Presign(http.MethodGet, tc.url, testTime, tc.expires); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Presign(%q, %v) error = %v, want %q", tc.url, tc.expires, err, tc.want)
		}
	}
}

func TestSignerOtherRegionAndService(t *testing.T) {
	t.Parallel()
	cred := Credentials{AccessKeyID: "AKIDOTHER", SecretKey: "other-secret"}
	s := NewSigner(cred, "eu-west-3", "sts")
	r := newRequest(t, http.MethodGet, "http://h/b/k", nil)
	if err := s.Sign(r, unsignedPayload, testTime); err != nil {
		t.Fatal(err)
	}
	if got := r.Header.Get("Authorization"); !strings.Contains(got, "Credential=AKIDOTHER/20250601/eu-west-3/sts/aws4_request,") {
		t.Errorf("Authorization = %q, want the eu-west-3/sts scope", got)
	}
	v := NewVerifier(Config{Region: "eu-west-3", Service: "sts", Clock: func() time.Time { return testTime }}, newKeyring(cred))
	if _, err := v.Verify(serverSide(t, r)); err != nil {
		t.Errorf("Verify: %v", err)
	}
	// The wrong secret is rejected: the cached key is the secret's.
	bad := NewSigner(Credentials{AccessKeyID: cred.AccessKeyID, SecretKey: "nope"}, "eu-west-3", "sts")
	r = newRequest(t, http.MethodGet, "http://h/b/k", nil)
	if err := bad.Sign(r, unsignedPayload, testTime); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(serverSide(t, r)); err == nil {
		t.Error("Verify accepted a request signed with the wrong secret")
	}
}

func TestSignerBadInput(t *testing.T) {
	t.Parallel()
	s := NewSigner(testCred, "", "")
	if err := s.Sign(&http.Request{Method: http.MethodGet}, unsignedPayload, testTime); err == nil {
		t.Error("Sign of a request without URL succeeded")
	}
	r := newRequest(t, http.MethodGet, "http://h/b/k", nil)
	if err := s.Sign(r, "", testTime); err == nil || len(r.Header) != 0 {
		t.Errorf("Sign with an empty payload hash = %v, headers %v; want an error and no headers", err, r.Header)
	}
}

// TestSignerKeepsNewestDate checks that a request stamped with yesterday's
// date gets a correct signature without evicting today's cached key.
func TestSignerKeepsNewestDate(t *testing.T) {
	t.Parallel()
	s := NewSigner(testCred, "", "")
	today := testTime.Add(24 * time.Hour)
	for _, at := range []time.Time{today, testTime} {
		r := newRequest(t, http.MethodGet, "http://h/b/k", nil)
		if err := s.Sign(r, unsignedPayload, at); err != nil {
			t.Fatal(err)
		}
		if _, err := newTestVerifier(at, testCred).Verify(serverSide(t, r)); err != nil {
			t.Errorf("Verify of a request signed at %v: %v", at, err)
		}
	}
	if got := s.day.Load().date; got != "20250602" {
		t.Errorf("cached date %s, want 20250602", got)
	}
}

// TestSignerConcurrent signs from many goroutines across a date change;
// run with -race.
func TestSignerConcurrent(t *testing.T) {
	t.Parallel()
	s := NewSigner(testCred, "", "")
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				at := testTime.Add(time.Duration(g*50+i) * 5 * time.Minute) // crosses midnight
				want := newRequest(t, http.MethodGet, "http://h/b/k?i=1", nil)
				SignRequest(want, testCred, "us-east-1", at, unsignedPayload)
				got := newRequest(t, http.MethodGet, "http://h/b/k?i=1", nil)
				if err := s.Sign(got, unsignedPayload, at); err != nil {
					errs <- err
					return
				}
				if g, w := got.Header.Get("Authorization"), want.Header.Get("Authorization"); g != w {
					errs <- &mismatch{at, g, w}
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

type mismatch struct {
	at        time.Time
	got, want string
}

func (m *mismatch) Error() string {
	return "at " + m.at.String() + ": Authorization " + m.got + ", want " + m.want
}

// BenchmarkSign compares signing a typical load-generator request with
// SignRequest (which derives the key per call) and with a Signer.
func BenchmarkSign(b *testing.B) {
	const u = "http://127.0.0.1:9000/coffer-bench-0123456789ab/obj-3-1234"
	b.Run("impl=SignRequest", func(b *testing.B) {
		r := newRequest(b, http.MethodGet, u, nil)
		b.ReportAllocs()
		for b.Loop() {
			SignRequest(r, testCred, "us-east-1", testTime, unsignedPayload)
		}
	})
	b.Run("impl=Signer", func(b *testing.B) {
		s := NewSigner(testCred, "us-east-1", "s3")
		r := newRequest(b, http.MethodGet, u, nil)
		b.ReportAllocs()
		for b.Loop() {
			if err := s.Sign(r, unsignedPayload, testTime); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=Presign", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Presign(http.MethodGet, u, testCred, "us-east-1", testTime, 15*time.Minute); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=Signer.Presign", func(b *testing.B) {
		s := NewSigner(testCred, "us-east-1", "s3")
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Presign(http.MethodGet, u, testTime, 15*time.Minute); err != nil {
				b.Fatal(err)
			}
		}
	})
}
