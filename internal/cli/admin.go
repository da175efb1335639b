package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/coffer-s3/coffer/internal/config"
	"github.com/coffer-s3/coffer/internal/server"
)

const adminUsage = `Usage: coffer admin <command> [flags]

Commands:
  gc    collect garbage in the storage of a stopped server

Run 'coffer admin <command> -h' for the flags of a command.
`

func admin(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, adminUsage)
		return exitUsage
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "gc":
		return adminGC(ctx, rest, stdout, stderr, getenv)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, adminUsage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "coffer admin: unknown command %q\n\n%s", cmd, adminUsage)
		return exitUsage
	}
}

const gcUsage = `Usage: coffer admin gc [flags]

Runs one garbage-collection pass over the storage path: removes blobs that
no object, part or pending upload references and that are older than
--grace. It opens the storage itself, so the server must be stopped (it
fails if a server holds the storage). The storage path and blob kind come
from the flags, COFFER_* variables and config file, as for 'coffer serve'.

Flags:
`

// gcResult is the --json output of admin gc.
type gcResult struct {
	StoragePath     string  `json:"storage_path"`
	GraceSeconds    float64 `json:"grace_seconds"`
	Scanned         int     `json:"scanned"`
	Deleted         int     `json:"deleted"`
	DeletedBytes    int64   `json:"deleted_bytes"`
	ExpiredUploads  int     `json:"expired_uploads"`
	DurationSeconds float64 `json:"duration_seconds"`
}

func adminGC(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := flag.NewFlagSet("coffer admin gc", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	// These two are passed on to config.Load, so that the environment and
	// the file apply as they do for serve.
	fs.String("storage-path", "", "data directory (default from COFFER_STORAGE_PATH, the config file, or ./data)")
	fs.String("config", "", "TOML config file (default COFFER_CONFIG)")
	grace := fs.Duration("grace", time.Hour, "keep blobs younger than this (a write may still be committing them)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, gcUsage)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return exitOK
		}
		fmt.Fprintf(stderr, "coffer admin gc: %v\nRun 'coffer admin gc -h' for usage.\n", err)
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "coffer admin gc: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	if *grace < 0 {
		fmt.Fprintf(stderr, "coffer admin gc: --grace must not be negative\n")
		return exitUsage
	}
	var loadArgs []string
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "storage-path" || f.Name == "config" {
			loadArgs = append(loadArgs, "--"+f.Name, f.Value.String())
		}
	})
	cfg, err := config.Load(loadArgs, getenv)
	if err != nil {
		fmt.Fprintf(stderr, "coffer admin gc: %v\n", err)
		return exitUsage
	}
	log := newLogger(stderr, cfg.Log)
	start := time.Now()
	stats, err := server.GC(ctx, cfg, log, *grace)
	if err != nil {
		fmt.Fprintf(stderr, "coffer admin gc: %v\n", err)
		return exitError
	}
	res := gcResult{
		StoragePath:     cfg.StoragePath,
		GraceSeconds:    grace.Seconds(),
		Scanned:         stats.Scanned,
		Deleted:         stats.Deleted,
		DeletedBytes:    stats.DeletedBytes,
		ExpiredUploads:  stats.ExpiredUploads,
		DurationSeconds: time.Since(start).Seconds(),
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			fmt.Fprintf(stderr, "coffer admin gc: %v\n", err)
			return exitError
		}
		return exitOK
	}
	fmt.Fprintf(stdout, "gc of %s (grace %s): scanned %d blobs, deleted %d (%d bytes), expired %d uploads in %s\n",
		res.StoragePath, *grace, res.Scanned, res.Deleted, res.DeletedBytes, res.ExpiredUploads, time.Since(start).Round(time.Millisecond))
	return exitOK
}
