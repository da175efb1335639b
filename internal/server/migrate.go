package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/coffer-s3/coffer/internal/blob"
	"github.com/coffer-s3/coffer/internal/blob/fsblob"
	"github.com/coffer-s3/coffer/internal/blob/s3blob"
	"github.com/coffer-s3/coffer/internal/config"
	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/meta"
	"github.com/coffer-s3/coffer/internal/migrate"
)

// MigrateConfig says what `coffer admin migrate` moves where.
type MigrateConfig struct {
	// StoragePath is the single node's data directory: Pebble metadata
	// under meta/, blocks under blobs/, the master key file.
	StoragePath string
	// Postgres is the target database (its URL holds no password: the
	// caller checks).
	Postgres config.Postgres
	// S3 is the target upstream bucket and prefix, as gateway mode
	// (blob.kind s3) will use them.
	S3 config.S3Upstream
	// MasterKey is COFFER_MASTER_KEY if set: the key the source's IAM
	// secrets are sealed with when it is not in the storage path.
	MasterKey []byte
	// Workers bounds concurrent block copies and reads.
	Workers int
	// BatchKeys bounds the records of one copy transaction; 0 means
	// migrate's default.
	BatchKeys int
	// AcceptMismatches ends the migration done even if records do not
	// match (migrate.Config.AcceptMismatches).
	AcceptMismatches bool
}

// MigrateResult is what Migrate did.
type MigrateResult struct {
	meta.Migration
	// MasterKeyFrom says where the master key came from: the environment
	// or the key file of the storage path; "" if the source has no IAM
	// state to open.
	MasterKeyFrom string
}

// Migrate moves the single node at mc.StoragePath — metadata, IAM state
// and blocks — to mc.Postgres and mc.S3, or resumes doing so (package
// migrate). The source must be stopped: its metadata is opened here, and
// Pebble's directory lock refuses a storage path a server holds.
//
// IAM secrets are not resealed: the state is copied as it is, sealed with
// the source's master key, which every target node must be given. Migrate
// checks that the key opens the state before copying and that it opens
// the copy after.
func Migrate(ctx context.Context, mc MigrateConfig, log *slog.Logger) (MigrateResult, error) {
	var res MigrateResult
	abs, err := filepath.Abs(mc.StoragePath)
	if err != nil {
		return res, err
	}
	if _, err := os.Stat(filepath.Join(abs, metaDir)); err != nil {
		return res, fmt.Errorf("no single-node metadata under %s: %w", abs, err)
	}
	src, err := meta.Open(meta.Config{Dir: filepath.Join(abs, metaDir), Sync: true, Logger: log.With("component", "source")})
	if err != nil {
		return res, fmt.Errorf("open the source metadata (a server using %s must be stopped first): %w", abs, err)
	}
	defer src.Close()
	srcBlobs, err := fsblob.Open(fsblob.Config{Root: filepath.Join(abs, blobDir)})
	if err != nil {
		return res, fmt.Errorf("open the source blocks: %w", err)
	}
	defer srcBlobs.Close()

	key, from, err := migrateMasterKey(ctx, abs, mc.MasterKey, src)
	if err != nil {
		return res, err
	}
	res.MasterKeyFrom = from

	p := mc.Postgres
	dst, err := meta.Open(meta.Config{Kind: meta.EnginePostgres, Sync: true, Logger: log.With("component", "target"),
		Postgres: meta.PostgresConfig{URL: p.URL, PasswordFile: p.PasswordFile, MaxConns: p.MaxConns, StatementTimeout: p.StatementTimeout}})
	if err != nil {
		return res, fmt.Errorf("open the target database: %w", err)
	}
	defer dst.Close()
	u := mc.S3
	octx, cancel := context.WithTimeout(ctx, upstreamCheckTimeout)
	dstBlobs, err := s3blob.New(octx, s3blob.Config{
		Endpoint: u.Endpoint, Region: u.Region, Bucket: u.Bucket, Prefix: u.Prefix,
		AccessKey: u.AccessKey, SecretKey: u.SecretKey, PathStyle: u.PathStyle,
		Logger: log.With("component", "s3blob"),
	})
	cancel()
	if err != nil {
		return res, fmt.Errorf("open the target bucket: %w", err)
	}
	defer dstBlobs.Close()

	res.Migration, err = migrate.Run(ctx, migrate.Config{
		Source: src, SourceBlobs: srcBlobs, Target: dst, TargetBlobs: dstBlobs,
		SourceID: abs, TargetID: u.Bucket + "/" + u.Prefix, TargetEndpoint: u.Endpoint, Workers: mc.Workers, Limits: meta.CopyLimits{Keys: mc.BatchKeys}, AcceptMismatches: mc.AcceptMismatches, Logger: log.With("component", "migrate"),
		// The blocks go where the target's servers will keep them: a
		// prefix another deployment claimed would refuse them at start,
		// after the whole copy.
		Claim: func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, upstreamCheckTimeout)
			defer cancel()
			return claimBlobs(ctx, dstBlobs, dst, "the upstream prefix (blob.s3.prefix)", blob.Local{Shared: true})
		},
	})
	if err != nil {
		return res, err
	}
	if key != nil {
		if err := openIAM(dst, key); err != nil {
			return res, fmt.Errorf("the master key does not open the migrated IAM state: %w", err)
		}
	}
	return res, nil
}

// migrateMasterKey returns the key that opens src's IAM state — env if
// set, else the storage path's key file — and says which; nil if src has
// no IAM state. It fails if the key does not open the state: the target
// nodes would not start with it.
func migrateMasterKey(ctx context.Context, dir string, env []byte, src *meta.DB) ([]byte, string, error) {
	doc, err := src.IAMState(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("read the source's IAM state: %w", err)
	}
	if doc == nil {
		return nil, "", nil
	}
	key, from := env, config.EnvMasterKey
	if key == nil {
		path := filepath.Join(dir, masterKeyFile)
		k, err := readMasterKey(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, "", fmt.Errorf("the source's IAM secrets are sealed with a master key that is neither in %s nor in %s", config.EnvMasterKey, path)
		}
		if err != nil {
			return nil, "", err
		}
		key, from = k, path
	}
	if err := openIAM(src, key); err != nil {
		return nil, "", fmt.Errorf("the master key from %s does not open the source's IAM state: %w", from, err)
	}
	return key, from, nil
}

// openIAM loads db's IAM state and bucket policies as a starting node
// would, with placeholder root credentials (nothing is written).
func openIAM(db *meta.DB, key []byte) error {
	_, err := iam.New(iam.Config{RootAccessKey: "migrate-check", RootSecretKey: strings.Repeat("x", 40), MasterKey: key, Store: iamStore{db}})
	return err
}

// checkMigration refuses to serve a store that is the source of a
// migration (coffer admin migrate), begun or done: writes taken here
// would never reach the copy, which the migration's nodes serve. It also
// refuses the target of a migration that is not done: a node would serve
// a partial copy, and its GC could delete the blocks of the batch being
// copied (written before their records commit).
func checkMigration(ctx context.Context, db *meta.DB, storagePath string) error {
	m, err := db.Migration(ctx)
	switch {
	case errors.Is(err, meta.ErrNotFound):
	case err != nil:
		return fmt.Errorf("read the migration state: %w", err)
	case m.Phase != meta.MigrationDone:
		return fmt.Errorf("the metadata store is the target of a migration from %s (coffer admin migrate, begun %s) that is not done: it is %s; a node would serve a partial copy. "+
			"Finish it: run the same coffer admin migrate again (with --accept-mismatches to end it despite records whose data cannot be repaired); or give it up: drop the database (or schema) and start over",
			m.Source, m.Started.Format(time.RFC3339), m.Phase)
	}
	mk, err := db.MigrationMark(ctx)
	switch {
	case errors.Is(err, meta.ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("read the migration mark: %w", err)
	case mk.Done:
		return fmt.Errorf("%s was migrated (coffer admin migrate, begun %s, blocks to %s): the nodes on its target serve it now, and a node started here would serve an old copy and take writes they never see; "+
			"to serve from here anyway (going back, without what was written there since), run: coffer admin migrate --abandon --from-storage-path %s",
			storagePath, mk.Started.Format(time.RFC3339), mk.Target, storagePath)
	default:
		return fmt.Errorf("%s is being migrated (coffer admin migrate, begun %s, blocks to %s): a node started here would take writes the migration does not carry; "+
			"finish it (run the same coffer admin migrate again), or abandon it and serve from here: coffer admin migrate --abandon --from-storage-path %s",
			storagePath, mk.Started.Format(time.RFC3339), mk.Target, storagePath)
	}
}

// AbandonMigration removes the mark a migration left on the single node
// at storagePath (coffer admin migrate --abandon), so that a server
// serves it again, and returns the mark removed; found is false if there
// was none. The migration's target is left as it is: running the
// migration again continues it only if nothing has written to the
// storage path since (and marks it again).
func AbandonMigration(ctx context.Context, storagePath string, log *slog.Logger) (mk meta.MigrationMark, found bool, err error) {
	abs, err := filepath.Abs(storagePath)
	if err != nil {
		return mk, false, err
	}
	if _, err := os.Stat(filepath.Join(abs, metaDir)); err != nil {
		return mk, false, fmt.Errorf("no single-node metadata under %s: %w", abs, err)
	}
	db, err := meta.Open(meta.Config{Dir: filepath.Join(abs, metaDir), Sync: true, Logger: log.With("component", "source")})
	if err != nil {
		return mk, false, fmt.Errorf("open the metadata (a migration or server using %s must be stopped first): %w", abs, err)
	}
	defer db.Close()
	mk, err = db.MigrationMark(ctx)
	if errors.Is(err, meta.ErrNotFound) {
		return mk, false, nil
	}
	if err != nil {
		return mk, false, err
	}
	return mk, true, db.DeleteMigrationMark(ctx)
}
