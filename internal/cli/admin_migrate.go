package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"strings"

	"github.com/coffer-s3/coffer/internal/config"
	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/migrate"
	"github.com/coffer-s3/coffer/internal/secretfile"
	"github.com/coffer-s3/coffer/internal/server"
)

// Environment variables of the target bucket's credentials: the names a
// node in gateway mode reads them from.
const (
	envS3AccessKey = "COFFER_BLOB_S3_ACCESS_KEY"
	envS3SecretKey = "COFFER_BLOB_S3_SECRET_KEY"
)

func adminMigrateCommands() []adminCmd {
	return []adminCmd{
		{name: "migrate", flagHint: "--from-storage-path DIR --to-postgres URL --to-s3 ENDPOINT/BUCKET/PREFIX",
			summary: "move a stopped single node to PostgreSQL and an S3 bucket (scale-out)",
			about: "Moves the single node whose data is in --from-storage-path — buckets,\n" +
				"objects and their versions, multipart uploads in progress, bucket\n" +
				"configurations and policies, usage, IAM users and keys — into the\n" +
				"PostgreSQL database --to-postgres, and its blocks into the upstream bucket\n" +
				"--to-s3 (endpoint URL, bucket and key prefix), where nodes started with\n" +
				"--meta.kind postgres --blob.kind s3 serve them.\n\n" +
				"Offline: the server of the storage path must be stopped (the command\n" +
				"fails while it holds the metadata), and no node may serve the target yet.\n" +
				"The target database must be empty. Resumable: run it again after an\n" +
				"interruption and it continues where it stopped. Every object version and\n" +
				"part is then read back from the target and checked against its ETag and\n" +
				"checksum; a mismatch fails the command, naming the records.\n\n" +
				"From its start the storage path is marked as the source of a migration,\n" +
				"and coffer serve refuses it, also once the migration is done (a node there\n" +
				"would serve an old copy); --abandon removes the mark. A run that finds the\n" +
				"source changed since the migration began refuses to go on. Nodes refuse\n" +
				"a target whose migration is not done; --accept-mismatches ends one whose\n" +
				"verification found damage that cannot be repaired.\n\n" +
				"IAM secrets stay sealed with the node's master key (" + config.EnvMasterKey + ", else\n" +
				"the storage path's master-key file), which every new node must be given.\n\n" +
				"Secrets never come from flags: the database password from PGPASSWORD,\n" +
				"--to-postgres-password-file or a .pgpass file; the bucket's keys from\n" +
				envS3AccessKey + " and " + envS3SecretKey + " (or --to-s3-secret-key-file).",
			timeout: noTimeout, setup: adminMigrate},
	}
}

// migrateResult is the --json output of admin migrate.
type migrateResult struct {
	Source        string `json:"source"`
	Phase         string `json:"phase"`
	Keys          int64  `json:"keys"`
	Blocks        int64  `json:"blocks"`
	BlockBytes    int64  `json:"block_bytes"`
	Verified      int64  `json:"verified"`
	Mismatched    int64  `json:"mismatched"`
	MasterKeyFrom string `json:"master_key_from,omitempty"`
}

func adminMigrate(fs *flag.FlagSet) adminRun {
	from := fs.String("from-storage-path", "", "data directory of the stopped single node (required)")
	pg := fs.String("to-postgres", "", "target PostgreSQL connection string, without a password (required)")
	pgPass := fs.String("to-postgres-password-file", "", "file whose first line is the database password")
	to := fs.String("to-s3", "", "target bucket: ENDPOINT/BUCKET/PREFIX, e.g. https://s3.example.com/coffer-blocks/node1/ (required)")
	region := fs.String("to-s3-region", "us-east-1", "region of the target bucket")
	pathStyle := fs.Bool("to-s3-path-style", true, "address the target bucket path-style (endpoint/bucket/key)")
	secretFile := fs.String("to-s3-secret-key-file", "", "file whose first line is the bucket's secret key (default $"+envS3SecretKey+")")
	workers := fs.Int("workers", migrate.DefaultWorkers, "blocks copied or read back at once")
	batch := fs.Int("batch-keys", migrate.DefaultBatchKeys, "records per transaction of the target: the unit of progress (an interruption repeats at most one batch's block copies)")
	accept := fs.Bool("accept-mismatches", false, "end the migration done even if records read back do not match (blocks damaged or missing on the source that cannot be restored): those objects stay as copied")
	abandon := fs.Bool("abandon", false, "remove the mark of a migration from --from-storage-path, begun or done, so that a node serves it again; the target is left as it is")
	return func(ctx context.Context, s *adminSession, _ []string) error {
		if *from == "" {
			return usagef("--from-storage-path is required")
		}
		if *abandon {
			return abandonMigration(ctx, s, *from)
		}
		switch {
		case *pg == "":
			return usagef("--to-postgres is required")
		case *to == "":
			return usagef("--to-s3 is required")
		case *workers < 1:
			return usagef("--workers must be at least 1")
		case *batch < 1:
			return usagef("--batch-keys must be at least 1")
		case config.HasPostgresPassword(*pg):
			// Never echo the value.
			return usagef("--to-postgres holds a password, which other users of this machine can read from the process list: use PGPASSWORD, --to-postgres-password-file or a .pgpass file")
		}
		up, err := parseS3Target(*to)
		if err != nil {
			return usagef("--to-s3: %v", err)
		}
		up.Region, up.PathStyle = *region, *pathStyle
		up.AccessKey, up.SecretKey = s.getenv(envS3AccessKey), s.getenv(envS3SecretKey)
		if *secretFile != "" {
			line, exposed, err := secretfile.ReadLine(*secretFile)
			if err != nil {
				return fmt.Errorf("read the bucket's secret key: %w", err)
			}
			if exposed != nil {
				fmt.Fprintf(s.stderr, "coffer admin migrate: warning: --to-s3-secret-key-file %v: run chmod 600 %s\n", exposed, exposed.Path)
			}
			up.SecretKey = strings.TrimSpace(line)
		}
		if up.AccessKey == "" || up.SecretKey == "" {
			return usagef("the target bucket's credentials come from %s and %s (or --to-s3-secret-key-file)", envS3AccessKey, envS3SecretKey)
		}
		def := config.Default()
		mc := server.MigrateConfig{
			StoragePath: *from,
			Postgres: config.Postgres{URL: *pg, PasswordFile: *pgPass, MaxConns: *workers + 2,
				StatementTimeout: def.Meta.Postgres.StatementTimeout},
			S3:               up,
			Workers:          *workers,
			BatchKeys:        *batch,
			AcceptMismatches: *accept,
		}
		if v := s.getenv(config.EnvMasterKey); v != "" {
			mc.MasterKey, err = iam.ParseMasterKey(v)
			if err != nil {
				return usagef("%s: %v", config.EnvMasterKey, err)
			}
		}
		log := newLogger(s.stderr, def.Log)
		res, err := server.Migrate(ctx, mc, log)
		out := migrateResult{Source: res.Source, Phase: res.Phase, Keys: res.Keys, Blocks: res.Blocks, BlockBytes: res.BlockBytes,
			Verified: res.Verified, Mismatched: res.Mismatched, MasterKeyFrom: res.MasterKeyFrom}
		if err != nil {
			if res.Phase != "" {
				s.printf("migration of %s stopped in phase %s: %d keys and %d blocks copied, %d records verified, %d mismatched; run the command again to continue\n",
					res.Source, res.Phase, res.Keys, res.Blocks, res.Verified, res.Mismatched)
			}
			// Printed here: the session's description of errors is about
			// reaching the admin endpoint, which this command never calls.
			fmt.Fprintf(s.stderr, "coffer admin migrate: %v\n", err)
			return &exitStatus{code: exitError}
		}
		if s.g.json {
			return s.printJSON(out)
		}
		s.printf("migrated %s: %d keys, %d blocks (%d bytes); %d records read back and verified\n",
			out.Source, out.Keys, out.Blocks, out.BlockBytes, out.Verified)
		if out.Mismatched > 0 {
			s.printf("%d records do not match and were accepted as they are (--accept-mismatches); the log names each one\n", out.Mismatched)
		}
		s.printf("\nStart the new nodes with\n  --meta.kind postgres --meta.postgres.url <the URL above> --blob.kind s3 \\\n"+
			"  --blob.s3.endpoint %s --blob.s3.bucket %s --blob.s3.prefix '%s' --blob.s3.region %s --blob.s3.path-style=%t\n",
			up.Endpoint, up.Bucket, up.Prefix, up.Region, up.PathStyle)
		switch {
		case out.MasterKeyFrom == config.EnvMasterKey:
			s.printf("and the same %s on every node: the IAM secrets are sealed with it.\n", config.EnvMasterKey)
		case out.MasterKeyFrom != "":
			s.printf("and the master key of %s on every node (%s=$(cat %s), or that file copied\n"+
				"into each node's storage path with mode 0600): the IAM secrets are sealed with it.\n", out.Source, config.EnvMasterKey, out.MasterKeyFrom)
		}
		s.printf("The root credentials are not in the database: give the nodes COFFER_ROOT_ACCESS_KEY and\n" +
			"COFFER_ROOT_SECRET_KEY, or copy root-credentials from the old storage path.\n")
		return nil
	}
}

// abandonResult is the --json output of admin migrate --abandon.
type abandonResult struct {
	Source    string `json:"source"`
	Abandoned bool   `json:"abandoned"` // false: there was no mark
	Done      bool   `json:"done"`      // the migration abandoned was done
	Target    string `json:"target,omitempty"`
}

// abandonMigration removes the migration mark from the storage path dir.
func abandonMigration(ctx context.Context, s *adminSession, dir string) error {
	mk, found, err := server.AbandonMigration(ctx, dir, newLogger(s.stderr, config.Default().Log))
	if err != nil {
		fmt.Fprintf(s.stderr, "coffer admin migrate: %v\n", err)
		return &exitStatus{code: exitError}
	}
	res := abandonResult{Source: dir, Abandoned: found, Done: mk.Done, Target: mk.Target}
	if s.g.json {
		return s.printJSON(res)
	}
	switch {
	case !res.Abandoned:
		s.printf("%s is not marked as the source of a migration: nothing to abandon\n", dir)
	case res.Done:
		s.printf("%s is no longer marked as migrated (to %s): a node may serve it again.\n"+
			"The nodes on the target go on serving their copy: writes made here from now on are not there, nor theirs here.\n", dir, res.Target)
	default:
		s.printf("%s is no longer marked as being migrated (to %s): a node may serve it again.\n"+
			"The target database keeps what was copied. Running the migration again continues it only if nothing\n"+
			"wrote here in between; once a node has, start over into an empty database.\n", dir, res.Target)
	}
	return nil
}

// parseS3Target splits ENDPOINT/BUCKET/PREFIX: an http(s) URL whose path
// is the bucket and then the key prefix, which gets a trailing slash.
func parseS3Target(s string) (config.S3Upstream, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		// Not quoted: it may hold credentials.
		return config.S3Upstream{}, errors.New("want http(s)://host[:port]/bucket[/prefix], without credentials or a query")
	}
	bucket, prefix, _ := strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
	if bucket == "" {
		return config.S3Upstream{}, errors.New("no bucket: want http(s)://host[:port]/bucket[/prefix]")
	}
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return config.S3Upstream{Endpoint: u.Scheme + "://" + u.Host, Bucket: bucket, Prefix: prefix}, nil
}
