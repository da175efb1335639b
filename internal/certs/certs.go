// Package certs serves the TLS certificate of Coffer's listeners from a
// certificate file and a key file, and reloads them without dropping a
// connection: on Reload (the server calls it on SIGHUP) and when either
// file changes (Watch polls them). Handshakes in progress and connections
// already open keep the certificate they started with; new handshakes get
// the new one. A pair that fails to load (a half-written file, a key that
// does not match) is logged and the last good pair stays in use.
package certs

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultPollInterval is how often Watch looks at the files.
const DefaultPollInterval = 2 * time.Second

// Reloader holds the current certificate. It is safe for concurrent use.
type Reloader struct {
	certFile, keyFile string
	log               *slog.Logger

	cur atomic.Pointer[tls.Certificate]

	mu   sync.Mutex // serializes loads and guards seen
	seen [2]stamp   // the files as last loaded (or last failed to load)
}

// stamp identifies a version of a file without reading it.
type stamp struct {
	mod  time.Time
	size int64
}

// New loads the pair once; an error names the file at fault. A nil log
// discards.
func New(certFile, keyFile string, log *slog.Logger) (*Reloader, error) {
	if certFile == "" || keyFile == "" {
		return nil, errors.New("certs: both a certificate file and a key file are needed")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Reloader{certFile: certFile, keyFile: keyFile, log: log}
	if err := r.load(); err != nil {
		return nil, err
	}
	return r, nil
}

// Config returns a server TLS configuration that takes its certificate
// from r: TLS 1.2 at least, HTTP/1.1 only (S3 clients speak it).
func (r *Reloader) Config() *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: r.GetCertificate,
		NextProtos:     []string{"http/1.1"},
	}
}

// GetCertificate returns the current certificate (tls.Config.GetCertificate).
func (r *Reloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return r.cur.Load(), nil
}

// Reload loads the pair again. On failure the current certificate stays
// and the error is returned (and logged).
func (r *Reloader) Reload() error {
	if err := r.load(); err != nil {
		r.log.Error("TLS certificate not reloaded; the previous one stays in use", "cert_file", r.certFile, "key_file", r.keyFile, "err", err)
		return err
	}
	r.log.Info("TLS certificate reloaded", "cert_file", r.certFile, "not_after", r.notAfter())
	return nil
}

// Watch reloads the pair whenever either file's modification time or size
// changes, looking every interval (DefaultPollInterval if not positive),
// until ctx ends.
func (r *Reloader) Watch(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = DefaultPollInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if now, err := r.stamps(); err == nil && r.changed(now) {
			_ = r.Reload()
		}
	}
}

// load reads, parses and installs the pair, recording the files' stamps
// first so that a pair that fails is not retried until it changes again.
func (r *Reloader) load() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, err := r.stamps()
	if err != nil {
		return err
	}
	r.seen = st
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return fmt.Errorf("certs: load %s and %s: %w", r.certFile, r.keyFile, err)
	}
	r.cur.Store(&cert)
	return nil
}

func (r *Reloader) stamps() ([2]stamp, error) {
	var st [2]stamp
	for i, name := range []string{r.certFile, r.keyFile} {
		fi, err := os.Stat(name)
		if err != nil {
			return st, fmt.Errorf("certs: %w", err)
		}
		st[i] = stamp{fi.ModTime(), fi.Size()}
	}
	return st, nil
}

func (r *Reloader) changed(now [2]stamp) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return now != r.seen
}

// notAfter is the current certificate's expiry, for the log.
func (r *Reloader) notAfter() time.Time {
	if c := r.cur.Load(); c != nil && c.Leaf != nil {
		return c.Leaf.NotAfter
	}
	return time.Time{}
}
