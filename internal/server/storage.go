package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/coffer-s3/coffer/internal/blob"
	"github.com/coffer-s3/coffer/internal/blob/fsblob"
	"github.com/coffer-s3/coffer/internal/blob/memblob"
	"github.com/coffer-s3/coffer/internal/blob/s3blob"
	"github.com/coffer-s3/coffer/internal/config"
	"github.com/coffer-s3/coffer/internal/diskspace"
	"github.com/coffer-s3/coffer/internal/meta"
	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/version"
)

// upstreamCheckTimeout bounds the check, at start, that the upstream
// bucket of gateway mode answers.
const upstreamCheckTimeout = 30 * time.Second

// publishTimeout bounds a starting node's first publication of its GC
// settings in the cluster's database (objects.Service.Publish).
const publishTimeout = 30 * time.Second

// Directories under the storage path.
const (
	metaDir = "meta"
	blobDir = "blobs"
)

// storage is the opened data directory: the metadata index, the block store
// and the object service over both.
type storage struct {
	db      *meta.DB
	blobs   blob.Store
	objects *objects.Service
	space   *diskspace.Guard // the free-space reserve; nil when off
}

// openStorage opens (creating if needed) the data directory of cfg. It
// fails if another process — a server or an admin command — has it open.
// failWrite is meta.Config.FailWrite: nil but in tests.
func openStorage(cfg config.Config, log *slog.Logger, failWrite func(path string) error) (*storage, error) {
	if err := os.MkdirAll(cfg.StoragePath, 0o700); err != nil {
		return nil, fmt.Errorf("create storage path: %w", err)
	}
	warnOpenStoragePath(cfg.StoragePath, log)
	db, err := meta.Open(metaConfig(cfg, log, failWrite))
	if err != nil {
		return nil, fmt.Errorf("open metadata: %w", err)
	}
	if err := checkMigration(context.Background(), db, cfg.StoragePath); err != nil {
		return nil, errors.Join(err, db.Close())
	}
	st := &storage{db: db}
	switch cfg.Blob.Kind {
	case config.BlobMemory:
		st.blobs = memblob.New()
	case config.BlobFS:
		fs, err := fsblob.Open(fsblob.Config{Root: filepath.Join(cfg.StoragePath, blobDir), Sync: cfg.Fsync, Reuse: cfg.Blob.FS.Reuse, Spares: fsblob.DefaultSpares})
		if err != nil {
			return nil, errors.Join(err, st.close())
		}
		st.blobs = fs
		if err := claimBlobs(context.Background(), fs, db, "the blob directory", blobDirLocal(cfg)); err != nil {
			return nil, errors.Join(err, st.close())
		}
	case config.BlobS3:
		u := cfg.Blob.S3
		ctx, cancel := context.WithTimeout(context.Background(), upstreamCheckTimeout)
		s3, err := s3blob.New(ctx, s3blob.Config{
			Endpoint: u.Endpoint, Region: u.Region, Bucket: u.Bucket, Prefix: u.Prefix,
			AccessKey: u.AccessKey, SecretKey: u.SecretKey, PathStyle: u.PathStyle, Timeout: u.Timeout,
			Logger: log.With("component", "s3blob"),
		})
		if err != nil {
			cancel()
			return nil, errors.Join(fmt.Errorf("open the upstream block store (blob.s3.*): %w", err), st.close())
		}
		st.blobs = s3
		err = claimBlobs(ctx, s3, db, "the upstream prefix (blob.s3.prefix)", blob.Local{Shared: cfg.Meta.Kind == config.MetaPostgres})
		cancel()
		if err != nil {
			return nil, errors.Join(err, st.close())
		}
	default:
		return nil, errors.Join(fmt.Errorf("unknown blob kind %q", cfg.Blob.Kind), st.close())
	}
	st.objects, err = objects.New(cfg.Objects, db, st.blobs, log.With("component", "objects"))
	if err != nil {
		return nil, errors.Join(fmt.Errorf("start object service: %w", err), st.close())
	}
	if cfg.Disk.Reserve > 0 {
		// The metadata and the blocks (unless upstream) live under the
		// storage path, but either directory may be a mount of its own
		// (the guard watches each filesystem once); the audit log may
		// live elsewhere, and writes nothing that the reserve must admit.
		paths := []string{cfg.StoragePath}
		if cfg.Meta.Kind != config.MetaPostgres {
			paths = append(paths, filepath.Join(cfg.StoragePath, metaDir))
		}
		var reclaim func() int64
		if fs, ok := st.blobs.(*fsblob.Store); ok {
			reclaim = fs.Reclaim // freed files kept for reuse go first
			paths = append(paths, filepath.Join(cfg.StoragePath, blobDir))
		}
		st.space, err = diskspace.New(diskspace.Config{
			Paths: paths, Reserve: cfg.Disk.Reserve, ReservePercent: cfg.Disk.ReserveFraction * 100,
			Pending: db.UnflushedBytes,
			Floor:   meta.MinFreeSpace,
			Reclaim: reclaim,
			Logger:  log.With("component", "diskspace"),
		})
		if err != nil {
			return nil, errors.Join(err, st.close())
		}
		_, localBlocks := st.blobs.(*fsblob.Store)
		st.objects.UseSpace(st.space, localBlocks, cfg.Meta.Kind != config.MetaPostgres)
	}
	return st, nil
}

// claimBlobs claims the block store c — gateway mode's upstream prefix,
// or the blob directory of the storage path — for the metadata store db
// (see blob.Claimer), before anything may write or delete blocks there:
// every deployment's garbage collection deletes the blocks its own
// metadata does not reference, so a block store shared by two
// deployments with different metadata stores (two single-node gateways on
// one prefix, a PostgreSQL deployment started on a single-node one's
// storage path, a test instance pointed at production's) would lose data
// silently. It fails if another store claimed it first. The nodes of one
// cluster share one store, and so its claim. what names the store for
// errors; local says what Claim cannot ask db (Shared, Beside).
func claimBlobs(ctx context.Context, c blob.Claimer, db *meta.DB, what string, local blob.Local) error {
	has, err := db.HasBuckets(ctx)
	if err != nil {
		return fmt.Errorf("claim %s: %w", what, err)
	}
	local.HasBuckets, local.NewID, local.Blocks = has, db.StoreIDNew(), objects.BlockPrefix
	_, err = c.Claim(ctx, blob.Owner{StoreID: db.StoreID(), Claimed: time.Now().UTC(), Version: version.Version()}, local)
	if err != nil {
		return fmt.Errorf("claim %s: %w", what, err)
	}
	return nil
}

// blobDirLocal is the blob.Local of a blob directory in the storage path
// of cfg: with the metadata in PostgreSQL, a single node's metadata
// beside it (a storage path given to the wrong deployment) keeps the
// blocks there from being claimed before that node has claimed them.
func blobDirLocal(cfg config.Config) blob.Local {
	if cfg.Meta.Kind != config.MetaPostgres {
		return blob.Local{}
	}
	local := blob.Local{Shared: true}
	if p := filepath.Join(cfg.StoragePath, metaDir); dirExists(p) {
		local.Beside = "a single node's metadata in " + p
	}
	return local
}

// dirExists reports whether p is a directory.
func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// warnOpenStoragePath warns when group or others may enter or list the
// storage path, which MkdirAll makes 0700 only when it creates it. It is
// left as it is: the operator may share it on purpose, and what matters
// below it is private anyway (meta.Open makes the metadata so, fsblob
// writes its files 0600, the credentials and master-key files must be
// 0600), but a file put there by hand would not be.
func warnOpenStoragePath(path string, log *slog.Logger) {
	fi, err := os.Stat(path)
	if err != nil {
		return // opening the stores below will say why
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		log.Warn("storage path is open to group or others: run chmod 700 on it", "path", path, "mode", fmt.Sprintf("%#o", perm))
	}
}

// MetaStatus opens the metadata store of cfg, as a server would (creating
// or upgrading a PostgreSQL schema), and returns its engine and schema
// version. A Pebble store must not be open in a running server.
func MetaStatus(ctx context.Context, cfg config.Config, log *slog.Logger) (meta.Status, error) {
	if cfg.Meta.Kind != config.MetaPostgres {
		if _, err := os.Stat(filepath.Join(cfg.StoragePath, metaDir)); err != nil {
			return meta.Status{}, fmt.Errorf("metadata: %w", err)
		}
	}
	db, err := meta.Open(metaConfig(cfg, log, nil))
	if err != nil {
		return meta.Status{}, fmt.Errorf("open metadata: %w", err)
	}
	st, err := db.Status(ctx)
	return st, errors.Join(err, db.Close())
}

// metaConfig returns the configuration of the metadata store of cfg.
func metaConfig(cfg config.Config, log *slog.Logger, failWrite func(path string) error) meta.Config {
	mc := meta.Config{
		Kind:      cfg.Meta.Kind,
		Dir:       filepath.Join(cfg.StoragePath, metaDir),
		Sync:      cfg.Fsync,
		Logger:    log.With("component", cfg.Meta.Kind),
		FailWrite: failWrite,
	}
	if cfg.Meta.Kind == config.MetaPostgres {
		p := cfg.Meta.Postgres
		mc.Dir = ""
		mc.Postgres = meta.PostgresConfig{URL: p.URL, PasswordFile: p.PasswordFile,
			MaxConns: p.MaxConns, StatementTimeout: p.StatementTimeout}
	}
	return mc
}

// close closes what openStorage opened, the block store first (nothing
// writes blobs once requests and GC have stopped) and then the metadata.
func (st *storage) close() error {
	var errs []error
	if c, ok := st.blobs.(io.Closer); ok { // memblob has nothing to close
		if err := c.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close blob store: %w", err))
		}
	}
	if err := st.db.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close metadata: %w", err))
	}
	return errors.Join(errs...)
}

// GC runs one garbage-collection pass over the data directory of cfg,
// keeping blobs younger than grace, without a server: `coffer admin gc`. It
// opens the directory itself, so it fails if a server holds it.
func GC(ctx context.Context, cfg config.Config, log *slog.Logger, grace time.Duration) (objects.GCStats, error) {
	if cfg.Blob.Kind == config.BlobMemory {
		return objects.GCStats{}, errors.New("blob.kind is memory: there are no stored blobs to collect")
	}
	if _, err := os.Stat(cfg.StoragePath); err != nil {
		return objects.GCStats{}, fmt.Errorf("storage path: %w", err)
	}
	st, err := openStorage(cfg, log, nil)
	if err != nil {
		return objects.GCStats{}, err
	}
	stats, err := st.objects.GC(ctx, grace)
	if cerr := st.close(); cerr != nil {
		err = errors.Join(err, cerr)
	}
	return stats, err
}
