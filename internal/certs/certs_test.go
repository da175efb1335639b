package certs

import (
	"context"
	"crypto/tls"
	"io"
	"os"
	"path/filepath"
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
