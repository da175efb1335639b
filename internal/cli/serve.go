package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"

	"github.com/coffer-s3/coffer/internal/config"
	"github.com/coffer-s3/coffer/internal/memlimit"
	"github.com/coffer-s3/coffer/internal/procs"
	"github.com/coffer-s3/coffer/internal/server"
)

const serveUsage = `Usage: coffer serve [flags]

Runs the S3 server until SIGINT or SIGTERM, then shuts down gracefully.
SIGHUP reloads the TLS certificate (without TLS it is logged and ignored).
Every flag can also be set by an environment variable or in the file named
by --config; flags win over the environment, which wins over the file.
Reference: docs/config.md.

Flags:
`

func serve(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	// SIGHUP asks for a reload (systemctl reload, kill -HUP). The signal
	// is ours from here to the end, with TLS or without: its default
	// action ends the process. One that comes while the server starts
	// waits for it; while it shuts down, it still reloads.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	cfg, err := config.Load(args, getenv)
	if errors.Is(err, config.ErrHelp) {
		fmt.Fprint(stdout, serveUsage)
		config.PrintUsage(stdout)
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "coffer serve: %v\nRun 'coffer serve -h' for usage.\n", err)
		return exitUsage
	}
	log := newLogger(stderr, cfg.Log)
	if cfg.File != "" {
		log.Info("config file read", "path", cfg.File)
	}
	// In a container with a memory limit, let the Go runtime collect
	// harder near it rather than be OOM-killed (GOMEMLIMIT overrides);
	// memory-limit overrides both.
	if cfg.MemoryLimit > 0 {
		debug.SetMemoryLimit(cfg.MemoryLimit)
		log.Info("Go memory limit set", "limit_bytes", cfg.MemoryLimit, "reason", "memory-limit")
	} else if d, err := memlimit.ApplyFromSystem(debug.SetMemoryLimit); err != nil {
		log.Warn("cannot read the cgroup memory limit", "err", err)
	} else if d.Set {
		log.Info("Go memory limit set from the cgroup", "limit_bytes", d.Limit, "reason", d.Reason)
	}
	if n, reason := procs.Apply(cfg.Procs, getenv, runtime.GOMAXPROCS); reason != "" {
		log.Info("Go processors set", "procs", n, "reason", reason)
	}
	s, err := server.New(cfg, log, stdout)
	if err != nil {
		log.Error("cannot start", "err", err)
		return exitError
	}
	stopReloads := make(chan struct{})
	reloadsDone := make(chan struct{})
	go func() {
		defer close(reloadsDone)
		for {
			select {
			case <-hup:
				s.Reload()
			case <-stopReloads:
				return
			}
		}
	}()
	err = s.Run(ctx)
	close(stopReloads)
	<-reloadsDone
	if err != nil {
		log.Error("server failed", "err", err)
		return exitError
	}
	return exitOK
}
