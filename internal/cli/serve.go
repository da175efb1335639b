package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/coffer-s3/coffer/internal/config"
	"github.com/coffer-s3/coffer/internal/memlimit"
	"github.com/coffer-s3/coffer/internal/server"
)

const serveUsage = `Usage: coffer serve [flags]

Runs the S3 server until SIGINT or SIGTERM, then shuts down gracefully.
Every flag can also be set by an environment variable or in the file named
by --config; flags win over the environment, which wins over the file.
Reference: docs/config.md.

Flags:
`

func serve(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
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
	if n, reason := applyProcs(cfg.Procs, getenv, runtime.GOMAXPROCS); reason != "" {
		log.Info("Go processors set", "procs", n, "reason", reason)
	}
	s, err := server.New(cfg, log, stdout)
	if err != nil {
		log.Error("cannot start", "err", err)
		return exitError
	}
	if err := s.Run(ctx); err != nil {
		log.Error("server failed", "err", err)
		return exitError
	}
	return exitOK
}

// applyProcs sets how many threads may run Go code at once (GOMAXPROCS,
// through set): n if positive, else nothing if the GOMAXPROCS environment
// variable is set (the runtime has applied it), else twice the runtime's
// default, the CPUs the process may use. It returns the number and why,
// or "" if it left the runtime's setting alone.
//
// Why twice: about 45 % of the server's CPU under the mixed workload is
// spent in the kernel, in file system calls that block their thread
// (fdatasync, fsync, openat, renameat; Pebble's WAL sync); while a thread
// is in one, the processor it held runs no Go code until the runtime hands
// it to another thread. With twice as many, Go code runs on the CPU time
// those calls leave, and the kernel shares the CPUs among the threads. On
// the 2-CPU reference machine the mixed workload served 1.07–1.12× the
// requests with 4 than with 2 (A/B, bench/2026-11-26-spares), and 8 gained
// nothing over 4. Setting it fixes the number: the runtime no longer
// follows a change of the cgroup's CPU limit.
func applyProcs(n int, getenv func(string) string, set func(int) int) (int, string) {
	switch {
	case n > 0:
		set(n)
		return n, "procs"
	case getenv("GOMAXPROCS") != "":
		return 0, ""
	}
	n = 2 * set(0)
	set(n)
	return n, "twice the CPUs available"
}
