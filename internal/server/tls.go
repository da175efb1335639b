package server

import (
	"context"

	"github.com/coffer-s3/coffer/internal/certs"
	"github.com/coffer-s3/coffer/internal/metrics"
)

// registerTLSMetrics registers coffer_tls_certificate_not_after_timestamp_seconds,
// read from c at each scrape, so that a renewed certificate shows as soon
// as it is served, without a restart. One Reloader serves the S3 and the
// ops listener, so the gauge needs no listener label.
func registerTLSMetrics(m *metrics.Registry, c *certs.Reloader) error {
	return m.GaugeFunc("coffer_tls_certificate_not_after_timestamp_seconds",
		"When the TLS certificate served on the S3 and ops listeners expires (its NotAfter, Unix time); a reload that installs a renewed one changes it.",
		func() float64 { return float64(c.NotAfter().Unix()) })
}

// watchCerts reloads the TLS certificate when its files change, until ctx
// ends. Connections already open keep theirs.
func (s *Server) watchCerts(ctx context.Context) {
	s.certs.Watch(ctx, certs.DefaultPollInterval)
}

// Reload reloads what changes without a restart: the TLS certificate
// (connections already open keep theirs). It is what SIGHUP asks for:
// `coffer serve` owns that signal for its whole life and calls Reload.
// Without TLS there is nothing to reload, which it logs. It may be called
// at any time, concurrently with Run, before it and after it.
func (s *Server) Reload() {
	if s.certs == nil {
		s.log.Info("reload asked for (SIGHUP): nothing to reload without TLS")
		return
	}
	s.log.Info("reload asked for (SIGHUP): reloading the TLS certificate")
	_ = s.certs.Reload() // logs its outcome
}
