package server

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/coffer-s3/coffer/internal/certs"
)

// watchCerts reloads the TLS certificate on SIGHUP and when its files
// change, until ctx ends. Connections already open keep theirs.
func (s *Server) watchCerts(ctx context.Context) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go s.certs.Watch(ctx, certs.DefaultPollInterval)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			s.log.Info("SIGHUP: reloading the TLS certificate")
			_ = s.certs.Reload() // logs its outcome
		}
	}
}
