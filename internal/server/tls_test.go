package server

import (
	"crypto/tls"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/coffer-s3/coffer/internal/certs/certstest"
	"github.com/coffer-s3/coffer/internal/config"
)

// TestTLSCertificateMetric: coffer_tls_certificate_not_after_timestamp_seconds is
// the expiry of the certificate served, and a reload that installs a
// renewed pair changes it without a restart.
func TestTLSCertificateMetric(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	ca := certstest.NewCA(t)
	now := time.Now()
	first := now.Add(30 * 24 * time.Hour)
	ca.IssueValid(t, certFile, keyFile, 1, now.Add(-time.Hour), first)
	cfg := testConfig(t)
	cfg.TLS = config.TLS{CertFile: certFile, KeyFile: keyFile}
	s, _ := start(t, cfg, testLogger(io.Discard))
	hc := &http.Client{
		Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}},
		Timeout:   30 * time.Second,
	}
	sample := regexp.MustCompile(`(?m)^coffer_tls_certificate_not_after_timestamp_seconds (\S+)$`)
	notAfter := func() int64 {
		t.Helper()
		resp, err := hc.Get("https://" + s.ConsoleAddr() + "/metrics")
		if err != nil {
			t.Fatalf("GET /metrics: %v", err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /metrics = %d, %v", resp.StatusCode, err)
		}
		m := sample.FindSubmatch(body)
		if m == nil {
			t.Fatalf("no sample coffer_tls_certificate_not_after_timestamp_seconds in /metrics:\n%s", body)
		}
		v, err := strconv.ParseFloat(string(m[1]), 64)
		if err != nil {
			t.Fatal(err)
		}
		return int64(v)
	}

	// x509 keeps whole seconds.
	if got := notAfter(); got != first.Unix() {
		t.Errorf("coffer_tls_certificate_not_after_timestamp_seconds = %d, want %d", got, first.Unix())
	}
	renewed := now.Add(90 * 24 * time.Hour)
	ca.IssueValid(t, certFile, keyFile, 2, now.Add(-time.Hour), renewed)
	s.Reload()
	if got := notAfter(); got != renewed.Unix() {
		t.Errorf("coffer_tls_certificate_not_after_timestamp_seconds after a reload = %d, want the renewed certificate's %d", got, renewed.Unix())
	}
}
