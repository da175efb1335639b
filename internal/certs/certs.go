// Package certs serves the TLS certificate of Coffer's listeners from a
// certificate file and a key file, and reloads them without dropping a
// connection: on Reload (the server calls it on SIGHUP) and when either
// file changes (Watch polls them). Handshakes in progress and connections
// already open keep the certificate they started with; new handshakes get
// the new one. A pair that fails to load (a half-written file, a key that
// does not match) is logged and the last good pair stays in use, and so
// does one whose certificate is outside its validity window (an old pair
// copied back by renewal tooling): it would only replace a certificate
// clients accept with one they refuse.
//
// At the start there is no previous pair to keep: an expired or not yet
// valid certificate is served, with an error in the log, as nginx does.
// Refusing to start would turn a certificate that
// clients refuse (and that a renewed pair replaces within seconds, without
// a restart) into an outage of both listeners, health checks included.
//
// Every load logs the certificate's expiry (not_after), and NotAfter
// tells it at any time, for a metric; a certificate that expires within
// ExpiryWarning is logged at Warn, at the load and when it enters that
// window while in use, and one that has expired at Error. A key file open
// to group or others is logged at Warn.
package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coffer-s3/coffer/internal/secretfile"
)

// DefaultPollInterval is how often Watch looks at the files.
const DefaultPollInterval = 2 * time.Second

// ExpiryWarning is how long before its expiry a certificate in use is
// logged at Warn.
const ExpiryWarning = 14 * 24 * time.Hour

// Reloader holds the current certificate. It is safe for concurrent use.
type Reloader struct {
	certFile, keyFile string
	log               *slog.Logger
	now               func() time.Time // the clock; tests set it

	cur atomic.Pointer[tls.Certificate]

	mu   sync.Mutex // serializes loads and guards seen, retryAt, said
	seen [2]stamp   // the files as last loaded (or last failed to load)
	// retryAt is when the pair last refused for being not yet valid
	// becomes valid, for Watch to load it then; zero if none is waiting.
	retryAt time.Time
	said    validity // what the log last said of the current certificate
}

// stamp identifies a version of a file without reading it.
type stamp struct {
	mod  time.Time
	size int64
}

// validity is where a certificate stands against its validity window.
type validity int

const (
	validityUnknown validity = iota // nothing said yet
	validityOK
	validitySoon    // expires within ExpiryWarning
	validityExpired // after NotAfter
	validityNotYet  // before NotBefore
)

// New loads the pair once; an error names the file at fault. A nil log
// discards. A certificate outside its validity window is loaded, and
// logged at Error (see the package documentation).
func New(certFile, keyFile string, log *slog.Logger) (*Reloader, error) {
	if certFile == "" || keyFile == "" {
		return nil, errors.New("certs: both a certificate file and a key file are needed")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Reloader{certFile: certFile, keyFile: keyFile, log: log, now: time.Now}
	if err := r.load(true); err != nil {
		return nil, err
	}
	r.log.Info("TLS certificate loaded", "cert_file", r.certFile, "not_after", r.NotAfter())
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

// Reload loads the pair again. On failure — the files do not load, or the
// certificate is expired or not yet valid — the current certificate stays
// and the error is returned (and logged).
func (r *Reloader) Reload() error {
	if err := r.load(false); err != nil {
		r.log.Error("TLS certificate not reloaded; the previous one stays in use", "cert_file", r.certFile, "key_file", r.keyFile, "err", err)
		return err
	}
	r.log.Info("TLS certificate reloaded", "cert_file", r.certFile, "not_after", r.NotAfter())
	return nil
}

// Watch reloads the pair whenever either file's modification time or size
// changes, and a pair refused for being not yet valid once it is, looking
// every interval (DefaultPollInterval if not positive), until ctx ends.
// It also logs the current certificate entering the last ExpiryWarning of
// its life, and expiring.
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
		if now, err := r.stamps(); err == nil && r.due(now) {
			_ = r.Reload()
		}
		r.mu.Lock()
		r.tell()
		r.mu.Unlock()
	}
}

// load reads, parses and installs the pair, recording the files' stamps
// first so that a pair that fails is not retried until it changes again
// (or, if it is not yet valid, until it is). Unless initial, a
// certificate outside its validity window is refused.
func (r *Reloader) load(initial bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, err := r.stamps()
	if err != nil {
		return err
	}
	r.seen = st
	r.retryAt = time.Time{}
	r.checkKeyMode()
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return fmt.Errorf("certs: load %s and %s: %w", r.certFile, r.keyFile, err)
	}
	if cert.Leaf == nil { // GODEBUG=x509keypairleaf=0
		if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return fmt.Errorf("certs: parse %s: %w", r.certFile, err)
		}
	}
	if !initial {
		now := r.now()
		switch leaf := cert.Leaf; {
		case now.Before(leaf.NotBefore):
			r.retryAt = leaf.NotBefore
			return fmt.Errorf("certs: the certificate in %s is not valid until %s (it is loaded then)", r.certFile, leaf.NotBefore.UTC().Format(time.RFC3339))
		case now.After(leaf.NotAfter):
			return fmt.Errorf("certs: the certificate in %s expired at %s", r.certFile, leaf.NotAfter.UTC().Format(time.RFC3339))
		}
	}
	r.cur.Store(&cert)
	r.said = validityUnknown
	r.tell()
	return nil
}

// due reports whether Watch should load the pair: its files changed
// since the last load, or a pair refused as not yet valid has become
// valid.
func (r *Reloader) due(now [2]stamp) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return now != r.seen || !r.retryAt.IsZero() && !r.now().Before(r.retryAt)
}

// tell logs where the current certificate stands against its validity
// window when that has changed since it last did. r.mu must be held.
func (r *Reloader) tell() {
	c := r.cur.Load()
	if c == nil {
		return
	}
	leaf, now := c.Leaf, r.now()
	v := validityOK
	switch {
	case now.Before(leaf.NotBefore):
		v = validityNotYet
	case now.After(leaf.NotAfter):
		v = validityExpired
	case leaf.NotAfter.Sub(now) <= ExpiryWarning:
		v = validitySoon
	}
	if v == r.said {
		return
	}
	r.said = v
	attrs := []any{"cert_file", r.certFile, "not_before", leaf.NotBefore, "not_after", leaf.NotAfter}
	switch v {
	case validityNotYet:
		r.log.Error("TLS certificate in use is not valid yet: clients refuse it; check the clock, or install a valid pair (it is loaded without a restart)", attrs...)
	case validityExpired:
		r.log.Error("TLS certificate in use has expired: clients refuse it; install a renewed pair (it is loaded without a restart)", attrs...)
	case validitySoon:
		r.log.Warn("TLS certificate expires soon: install a renewed pair", append(attrs, "expires_in", leaf.NotAfter.Sub(now).Round(time.Minute).String())...)
	}
}

// checkKeyMode warns if the key file is open to group or others, as the
// server does of its other secret files (which it refuses); a key file
// may be shared with other TLS servers through a group, so it is not.
func (r *Reloader) checkKeyMode() {
	fi, err := os.Stat(r.keyFile)
	if err != nil {
		return // LoadX509KeyPair says
	}
	if e := secretfile.Check(r.keyFile, fi); e != nil {
		r.log.Warn("TLS key file is open to group or others: run chmod 600 on it (and consider a new key)", "key_file", r.keyFile, "mode", fmt.Sprintf("%#o", e.Mode))
	}
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

// NotAfter returns the expiry of the certificate being served: that of
// the pair last loaded, so a reload that installs a renewed pair changes
// it. It is cheap and safe to call at any time, as a metrics scrape does
// (coffer_tls_certificate_not_after_timestamp_seconds).
func (r *Reloader) NotAfter() time.Time {
	if c := r.cur.Load(); c != nil && c.Leaf != nil {
		return c.Leaf.NotAfter
	}
	return time.Time{}
}
