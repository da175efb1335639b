package cli

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/coffer-s3/coffer/internal/adminapi"
	"github.com/coffer-s3/coffer/internal/config"
	"github.com/coffer-s3/coffer/internal/server"
)

// adminServerCommands are the commands about the server itself.
func adminServerCommands() []adminCmd {
	return []adminCmd{
		{name: "gc", flagHint: "[--grace D] [--offline]", summary: "collect garbage: blobs no object references",
			about: "Runs one garbage-collection pass: removes blobs that no object, part or\n" +
				"pending upload references and that are older than --grace. On a\n" +
				"cluster (metadata on PostgreSQL) the grace is at least the server's\n" +
				"gc-grace, since only that spares the blocks of writes in flight on other\n" +
				"nodes.\n\n" +
				"By default the running server at --endpoint does it (admin:RunGC).\n" +
				"With --offline, this process opens the storage itself, so the server must\n" +
				"be stopped (it fails if a server holds the storage); the storage path\n" +
				"and blob kind come from --storage-path, --config and the COFFER_*\n" +
				"variables, as for 'coffer serve'.\n\n" +
				"A pass over a large store takes a while, so --timeout has no limit by\n" +
				"default here.",
			timeout: noTimeout, setup: adminGC},
		{name: "meta status", flagHint: "[--storage-path DIR] [--config FILE]", summary: "show the metadata engine and its schema version",
			about: "Opens the metadata store named by --storage-path, --config and the\n" +
				"COFFER_* variables (meta.kind, meta.postgres.*), as 'coffer serve' would,\n" +
				"and shows its engine and schema version. A PostgreSQL schema is created\n" +
				"or upgraded as a starting server would do it; a Pebble store must not be\n" +
				"in use by a running server.",
			setup: adminMetaStatus},
		{name: "whoami", summary: "show whom the credentials belong to",
			about: "Asks the server whom the access key belongs to: a quick check of the\nendpoint and the credentials.",
			setup: noFlags(adminWhoAmI)},
	}
}

// metaStatusResult is the --json output of admin meta status.
type metaStatusResult struct {
	Engine        string `json:"engine"`
	SchemaVersion int    `json:"schema_version"`
	KnownVersion  int    `json:"known_version"`
	// StoreID names the metadata store in a gateway's claim of its
	// upstream prefix (docs/scale-out.md).
	StoreID string `json:"store_id"`
}

func adminMetaStatus(fs *flag.FlagSet) adminRun {
	fs.String("storage-path", "", "data directory (default from COFFER_STORAGE_PATH, the config file, or ./data)")
	fs.String("config", "", "TOML config file (default COFFER_CONFIG)")
	return func(ctx context.Context, s *adminSession, _ []string) error {
		var loadArgs []string
		fs.Visit(func(f *flag.Flag) {
			if f.Name == "storage-path" || f.Name == "config" {
				loadArgs = append(loadArgs, "--"+f.Name, f.Value.String())
			}
		})
		cfg, err := config.Load(loadArgs, s.getenv)
		if err != nil {
			return usagef("%v", err)
		}
		st, err := server.MetaStatus(ctx, cfg, newLogger(s.stderr, cfg.Log))
		if err != nil {
			return err
		}
		res := metaStatusResult{Engine: st.Engine, SchemaVersion: st.SchemaVersion, KnownVersion: st.KnownVersion, StoreID: st.StoreID}
		if s.g.json {
			return s.printJSON(res)
		}
		s.printf("engine: %s\nschema version: %d (this Coffer knows up to %d)\nstore id: %s\n", res.Engine, res.SchemaVersion, res.KnownVersion, res.StoreID)
		return nil
	}
}

// gcResult is the --json output of admin gc --offline.
type gcResult struct {
	StoragePath     string  `json:"storage_path"`
	GraceSeconds    float64 `json:"grace_seconds"`
	Scanned         int     `json:"scanned"`
	Deleted         int     `json:"deleted"`
	DeletedBytes    int64   `json:"deleted_bytes"`
	ExpiredUploads  int     `json:"expired_uploads"`
	DurationSeconds float64 `json:"duration_seconds"`
}

func adminGC(fs *flag.FlagSet) adminRun {
	grace := fs.Duration("grace", 0, "keep blobs younger than this (a write may still be committing them); default: the server's gc-grace")
	offline := fs.Bool("offline", false, "collect in the storage of a stopped server instead of asking the running one")
	// These two are passed on to config.Load, so that the environment and
	// the file apply as they do for serve.
	fs.String("storage-path", "", "with --offline: data directory (default from COFFER_STORAGE_PATH, the config file, or ./data)")
	fs.String("config", "", "with --offline: TOML config file (default COFFER_CONFIG)")
	return func(ctx context.Context, s *adminSession, _ []string) error {
		if *grace < 0 {
			return usagef("--grace must not be negative")
		}
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if *offline {
			var loadArgs []string
			for _, name := range []string{"storage-path", "config"} {
				if set[name] {
					loadArgs = append(loadArgs, "--"+name, fs.Lookup(name).Value.String())
				}
			}
			var g *time.Duration // nil: the gc-grace of the loaded configuration
			if set["grace"] {
				g = grace
			}
			return adminGCOffline(ctx, s, loadArgs, g)
		}
		if set["storage-path"] || set["config"] {
			return usagef("--storage-path and --config name the storage of a stopped server: add --offline")
		}
		c, err := s.client()
		if err != nil {
			return err
		}
		var in adminapi.GCRequest
		if set["grace"] {
			secs := grace.Seconds()
			in.GraceSeconds = &secs
		}
		res, err := c.GC(ctx, in)
		if err != nil {
			return err
		}
		if s.g.json {
			return s.printJSON(res)
		}
		if res.Elsewhere {
			s.printf("gc on %s: another node of the cluster is running a pass (it holds the GC lease); nothing done\n", c.Endpoint())
			return nil
		}
		s.printf("gc on %s (grace %s): scanned %d blobs, deleted %d (%d bytes), expired %d uploads in %s\n",
			c.Endpoint(), time.Duration(res.GraceSeconds*float64(time.Second)), res.Scanned, res.Deleted, res.DeletedBytes,
			res.ExpiredUploads, time.Duration(res.DurationSeconds*float64(time.Second)).Round(time.Millisecond))
		return nil
	}
}

// adminGCOffline runs a pass over the storage named by loadArgs and the
// environment, with the server stopped.
// adminGCOffline runs a pass in the storage that loadArgs and the
// environment name, with grace, or with that configuration's gc-grace if
// grace is nil, as the server's own passes and POST /gc do.
func adminGCOffline(ctx context.Context, s *adminSession, loadArgs []string, grace *time.Duration) error {
	cfg, err := config.Load(loadArgs, s.getenv)
	if err != nil {
		return usagef("%v", err)
	}
	g := cfg.Objects.GCGrace
	if grace != nil {
		g = *grace
	}
	log := newLogger(s.stderr, cfg.Log)
	start := time.Now()
	stats, err := server.GC(ctx, cfg, log, g)
	if err != nil {
		return err
	}
	res := gcResult{
		StoragePath:     cfg.StoragePath,
		GraceSeconds:    stats.Grace.Seconds(),
		Scanned:         stats.Scanned,
		Deleted:         stats.Deleted,
		DeletedBytes:    stats.DeletedBytes,
		ExpiredUploads:  stats.ExpiredUploads,
		DurationSeconds: time.Since(start).Seconds(),
	}
	if s.g.json {
		return s.printJSON(res)
	}
	s.printf("gc of %s (grace %s): scanned %d blobs, deleted %d (%d bytes), expired %d uploads in %s\n",
		res.StoragePath, stats.Grace, res.Scanned, res.Deleted, res.DeletedBytes, res.ExpiredUploads, time.Since(start).Round(time.Millisecond))
	return nil
}

func adminWhoAmI(ctx context.Context, s *adminSession, _ []string) error {
	c, err := s.client()
	if err != nil {
		return err
	}
	w, err := c.WhoAmI(ctx)
	if err != nil {
		return err
	}
	if s.g.json {
		return s.printJSON(w)
	}
	tw := s.table()
	fmt.Fprintf(tw, "Endpoint:\t%s\n", c.Endpoint())
	fmt.Fprintf(tw, "Access key ID:\t%s\n", w.AccessKey)
	if w.Root {
		fmt.Fprintf(tw, "User:\t(root)\n")
	} else {
		fmt.Fprintf(tw, "User:\t%s\n", w.User)
	}
	return tw.Flush()
}
