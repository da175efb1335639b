package certs

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coffer-s3/coffer/internal/certs/certstest"
)

// serial dials l and returns the serial number of the certificate it shows.
func serial(t *testing.T, addr string, ca *certstest.CA) (int64, *tls.Conn) {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	return c.ConnectionState().PeerCertificates[0].SerialNumber.Int64(), c
}

func TestReload(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	ca := certstest.NewCA(t)
	ca.Issue(t, certFile, keyFile, 100)
	r, err := New(certFile, keyFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", r.Config())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	addr := ln.Addr().String()

	n, old := serial(t, addr, ca)
	defer old.Close()
	if n != 100 {
		t.Fatalf("serial %d, want 100", n)
	}

	// Reload by signal: new handshakes get the new pair, the open
	// connection goes on.
	ca.Issue(t, certFile, keyFile, 200)
	if err := r.Reload(); err != nil {
		t.Fatal(err)
	}
	if n, c := serial(t, addr, ca); n != 200 {
		t.Errorf("after Reload: serial %d, want 200", n)
	} else {
		c.Close()
	}
	if _, err := old.Write([]byte("x")); err != nil {
		t.Errorf("open connection broken by the reload: %v", err)
	}
	buf := make([]byte, 1)
	if _, err := io.ReadFull(old, buf); err != nil || buf[0] != 'x' {
		t.Errorf("open connection broken by the reload: %v", err)
	}

	// A broken pair is refused; the last good one stays.
	if err := os.WriteFile(keyFile, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := r.Reload(); err == nil {
		t.Error("Reload of a broken key succeeded")
	}
	if n, c := serial(t, addr, ca); n != 200 {
		t.Errorf("after a failed reload: serial %d, want 200", n)
	} else {
		c.Close()
	}

	// Watch picks up a change of the files by itself.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go r.Watch(ctx, 10*time.Millisecond)
	ca.Issue(t, certFile, keyFile, 300)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		n, c := serial(t, addr, ca)
		c.Close()
		if n == 300 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Watch did not reload: serial %d", n)
		}
	}
}

func TestNewFails(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := New("", "", nil); err == nil {
		t.Error("New without files succeeded")
	}
	if _, err := New(filepath.Join(dir, "no.crt"), filepath.Join(dir, "no.key"), nil); err == nil {
		t.Error("New with missing files succeeded")
	}
}

// logBuffer collects a logger's text output; Watch logs from its own
// goroutine.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func current(t *testing.T, r *Reloader) int64 {
	t.Helper()
	c, err := r.GetCertificate(nil)
	if err != nil || c == nil || c.Leaf == nil {
		t.Fatalf("GetCertificate = %v, %v", c, err)
	}
	return c.Leaf.SerialNumber.Int64()
}

// TestValidity: New serves any certificate that loads, saying at Error
// when clients will refuse it and at Warn when it expires within
// ExpiryWarning; a reload refuses a certificate outside its validity
// window and keeps the one in use. NotAfter follows the certificate
// served.
func TestValidity(t *testing.T) {
	t.Parallel()
	now := time.Now()
	day := 24 * time.Hour
	for _, tc := range []struct {
		name                string
		notBefore, notAfter time.Time
		wantLog             string // at New
		wantReloadErr       string // "" if a reload installs it
	}{
		{name: "valid", notBefore: now.Add(-day), notAfter: now.Add(90 * day), wantLog: `level=INFO msg="TLS certificate loaded"`},
		{name: "expires soon", notBefore: now.Add(-day), notAfter: now.Add(3 * day), wantLog: `level=WARN msg="TLS certificate expires soon`},
		{name: "expired", notBefore: now.Add(-90 * day), notAfter: now.Add(-day), wantLog: `level=ERROR msg="TLS certificate in use has expired`, wantReloadErr: "expired at"},
		{name: "not yet valid", notBefore: now.Add(day), notAfter: now.Add(90 * day), wantLog: `level=ERROR msg="TLS certificate in use is not valid yet`, wantReloadErr: "is not valid until"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
			ca := certstest.NewCA(t)

			// At the start: served, and said.
			ca.IssueValid(t, certFile, keyFile, 10, tc.notBefore, tc.notAfter)
			var log logBuffer
			r, err := New(certFile, keyFile, slog.New(slog.NewTextHandler(&log, nil)))
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if n := current(t, r); n != 10 {
				t.Errorf("serial %d after New, want 10", n)
			}
			// x509 keeps whole seconds.
			if got := r.NotAfter(); got.Unix() != tc.notAfter.Unix() {
				t.Errorf("NotAfter() = %v after New, want %v", got, tc.notAfter)
			}
			if !strings.Contains(log.String(), tc.wantLog) || !strings.Contains(log.String(), "not_after=") {
				t.Errorf("log of New does not say %q with not_after:\n%s", tc.wantLog, log.String())
			}

			// On a reload over a valid certificate: installed or refused.
			validNotAfter := now.Add(40 * day)
			ca.IssueValid(t, certFile, keyFile, 20, now.Add(-day), validNotAfter)
			if err := r.Reload(); err != nil {
				t.Fatal(err)
			}
			if got := r.NotAfter(); got.Unix() != validNotAfter.Unix() {
				t.Errorf("NotAfter() = %v after a reload, want the new certificate's %v", got, validNotAfter)
			}
			ca.IssueValid(t, certFile, keyFile, 30, tc.notBefore, tc.notAfter)
			err = r.Reload()
			want, wantNotAfter := int64(30), tc.notAfter
			if tc.wantReloadErr != "" {
				want, wantNotAfter = 20, validNotAfter
				if err == nil || !strings.Contains(err.Error(), tc.wantReloadErr) {
					t.Errorf("Reload = %v, want an error saying %q", err, tc.wantReloadErr)
				}
			} else if err != nil {
				t.Errorf("Reload: %v", err)
			}
			if n := current(t, r); n != want {
				t.Errorf("serial %d after the reload, want %d", n, want)
			}
			// NotAfter is the certificate served, not the last one read.
			if got := r.NotAfter(); got.Unix() != wantNotAfter.Unix() {
				t.Errorf("NotAfter() = %v after the reload, want %v", got, wantNotAfter)
			}
		})
	}
}

// TestWatchValidity: Watch loads a pair refused as not yet valid once it
// is, and says when the certificate in use enters its last
// ExpiryWarning and when it expires.
func TestWatchValidity(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	ca := certstest.NewCA(t)
	start := time.Now().Truncate(time.Second)
	ca.IssueValid(t, certFile, keyFile, 1, start.Add(-time.Hour), start.Add(30*24*time.Hour))
	var log logBuffer
	r, err := New(certFile, keyFile, slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	var clock atomic.Int64 // seconds after start
	r.mu.Lock()
	r.now = func() time.Time { return start.Add(time.Duration(clock.Load()) * time.Second) }
	r.mu.Unlock()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go r.Watch(ctx, 5*time.Millisecond)
	waitLog := func(want string) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); !strings.Contains(log.String(), want); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the log does not say %q:\n%s", want, log.String())
			}
		}
	}

	// A renewal valid in an hour: refused now, loaded once the clock
	// gets there, without the files changing again.
	ca.IssueValid(t, certFile, keyFile, 2, start.Add(time.Hour), start.Add(60*24*time.Hour))
	waitLog("is not valid until")
	if n := current(t, r); n != 1 {
		t.Fatalf("serial %d before the new certificate is valid, want 1", n)
	}
	clock.Store(int64(time.Hour/time.Second) + 1)
	waitLog(`msg="TLS certificate reloaded"`)
	if n := current(t, r); n != 2 {
		t.Errorf("serial %d once the new certificate is valid, want 2", n)
	}

	// Time passes: a warning when 14 days are left, once; an error at the
	// expiry.
	if strings.Contains(log.String(), "expires soon") {
		t.Fatalf("warned of a certificate 60 days from expiry:\n%s", log.String())
	}
	clock.Store(int64(50 * 24 * time.Hour / time.Second))
	waitLog(`level=WARN msg="TLS certificate expires soon`)
	clock.Store(int64(61 * 24 * time.Hour / time.Second))
	waitLog(`level=ERROR msg="TLS certificate in use has expired`)
	if n := strings.Count(log.String(), "expires soon"); n != 1 {
		t.Errorf("warned %d times of the expiry, want once:\n%s", n, log.String())
	}
}

// TestKeyFileMode: a key file open to group or others is loaded with a
// warning, at the start and on a reload.
func TestKeyFileMode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode os.FileMode
		warn bool
	}{
		{mode: 0o600},
		{mode: 0o400},
		{mode: 0o640, warn: true},
		{mode: 0o604, warn: true},
		{mode: 0o644, warn: true},
	} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
			ca := certstest.NewCA(t)
			want := `level=WARN msg="TLS key file is open to group or others`
			check := func(step string, log *logBuffer) {
				t.Helper()
				if got := strings.Contains(log.String(), want) && strings.Contains(log.String(), fmt.Sprintf("mode=%#o", tc.mode)); got != tc.warn {
					t.Errorf("%s with a key file of mode %v: warned %v, want %v; log:\n%s", step, tc.mode, got, tc.warn, log.String())
				}
			}

			ca.Issue(t, certFile, keyFile, 1)
			if err := os.Chmod(keyFile, tc.mode); err != nil {
				t.Fatal(err)
			}
			var log logBuffer
			r, err := New(certFile, keyFile, slog.New(slog.NewTextHandler(&log, nil)))
			if err != nil {
				t.Fatal(err)
			}
			check("New", &log)

			ca.Issue(t, certFile, keyFile, 2) // mode 0600 again
			if err := r.Reload(); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(keyFile, tc.mode); err != nil {
				t.Fatal(err)
			}
			var relog logBuffer
			r.log = slog.New(slog.NewTextHandler(&relog, nil))
			if err := r.Reload(); err != nil {
				t.Fatal(err)
			}
			check("Reload", &relog)
		})
	}
}
