// Package cli is the coffer command: it parses the subcommand and its flags
// and wires the packages that do the work. It holds no logic of its own
// beyond that, and no global flag state: every subcommand has its own
// flag.FlagSet.
package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/coffer-s3/coffer/internal/config"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1 // the command ran and failed
	exitUsage = 2 // bad subcommand, flag or setting
)

const usage = `Usage: coffer <command> [flags]

Commands:
  serve     run the S3 server
  admin     manage users, keys, policies and buckets; presign URLs; run gc
  bench     benchmark S3 endpoints side by side
  version   print the version

Run 'coffer <command> -h' for the flags of a command.
`

// Main runs the coffer command with args (without the program name) and
// returns the process exit code: 0 on success, 1 when the command failed,
// 2 for a usage error. ctx ends the command (serve shuts down gracefully).
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return run(ctx, args, stdout, stderr, os.Getenv)
}

// run is Main with the environment as a parameter, for tests.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "serve":
		return serve(ctx, rest, stdout, stderr, getenv)
	case "admin":
		return admin(ctx, rest, stdout, stderr, getenv)
	case "bench":
		return bench(ctx, rest, stdout, stderr, getenv)
	case "version":
		return versionCmd(rest, stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "coffer: unknown command %q\n\n%s", cmd, usage)
		return exitUsage
	}
}

// newLogger returns the process logger: text or JSON on w, at the
// configured level.
func newLogger(w io.Writer, c config.Log) *slog.Logger {
	opts := &slog.HandlerOptions{Level: c.Level}
	if c.Format == config.LogJSON {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
