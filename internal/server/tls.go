package server

import (
	"context"

	"github.com/coffer-s3/coffer/internal/certs"
)

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
