// Package config is Coffer's one settings struct and the rules for filling
// it: Default(), then a TOML file, then COFFER_… environment variables, then
// command-line flags (Load), and the cross-field checks (Validate).
//
// Components own their Config types (objects.Config, s3api.Config,
// iam.Config) and never import this package; Config composes them. Settings
// that several components derive from — the storage path, from which the
// server derives the metadata directory, the blob root and the credentials
// file — stay plain fields here and are turned into component configs by the
// composition root (internal/server).
//
// The flag set built by newFlagSet is the registry of setting names: the
// environment variable and the TOML key of every setting are derived from its
// flag name, and docs/config.md is generated from it.
package config

import (
	"log/slog"
	"time"

	"github.com/coffer-s3/coffer/internal/console"
	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/lifecycle"
	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/s3api"
)

// Blob store kinds accepted by the blob.kind setting.
const (
	BlobFS     = "fs"     // files under <storage-path>/blobs (the default)
	BlobMemory = "memory" // in memory; data is lost on exit (tests, benchmarks)
	BlobS3     = "s3"     // an upstream S3 bucket (gateway mode)
)

// Metadata engines accepted by the meta.kind setting.
const (
	MetaPebble   = "pebble"   // embedded, in <storage-path>/meta (the default)
	MetaPostgres = "postgres" // a PostgreSQL database that several nodes share
)

// Log formats accepted by the log-format setting.
const (
	LogText = "text"
	LogJSON = "json"
)

// Config is every setting of a Coffer server. The zero value is not useful;
// start from Default() or Load.
type Config struct {
	// File is the TOML file Load read, "" if none. It is informational.
	File string

	// StoragePath is the data directory. The server keeps metadata in
	// <StoragePath>/meta, blobs in <StoragePath>/blobs and generated root
	// credentials in <StoragePath>/root-credentials.
	StoragePath string

	// Address is the host:port the S3 API listens on.
	Address string

	// ConsoleAddress is the host:port of the ops listener, which serves
	// /metrics, /healthz, /readyz and the web console. "" disables it,
	// and with it the collection of metrics.
	ConsoleAddress string

	// Console configures the web console: sessions, sign-in limits, the
	// origin of its forms.
	Console console.Config

	// PasswordHash holds the argon2id parameters of new console
	// passwords.
	PasswordHash PasswordHash

	// ShutdownTimeout bounds how long a stopping server waits for requests
	// in flight before it closes their connections.
	ShutdownTimeout time.Duration

	// Fsync makes every acknowledged write durable (metadata commits and
	// blob writes are fsynced). Turning it off is for benchmarks only.
	Fsync bool

	// Meta selects the metadata engine.
	Meta Meta

	// Blob selects the block store.
	Blob Blob

	// Pprof configures the profiling listener.
	Pprof Pprof

	// Log configures the process log and the access log.
	Log Log

	// Audit configures the audit log.
	Audit Audit

	// Objects tunes the object service (inline threshold, block size, GC).
	Objects objects.Config

	// Disk keeps a free-space reserve on the filesystems of the storage
	// path.
	Disk Disk

	// S3 configures the S3 HTTP surface (region, virtual-host domain,
	// request limits and body timeout).
	S3 s3api.Config

	// MaxConnections is the most connections the S3 listener keeps open
	// (DefaultMaxConnections).
	MaxConnections int

	// TLS, when both files are set, serves HTTPS on the S3 and ops
	// listeners.
	TLS TLS

	// MemoryLimit is the Go runtime's soft memory limit in bytes; 0 means
	// automatic: GOMEMLIMIT if set, else 90 % of the cgroup's limit, else
	// none.
	MemoryLimit int64

	// Procs is how many threads may run Go code at once (the runtime's
	// GOMAXPROCS); 0 means automatic: GOMAXPROCS if set, else twice the
	// CPUs the process may use (package procs says why).
	Procs int

	// Lifecycle configures the worker that applies buckets' lifecycle
	// rules.
	Lifecycle lifecycle.Config

	// Root holds the root credentials. They come only from the environment
	// (COFFER_ROOT_ACCESS_KEY, COFFER_ROOT_SECRET_KEY), never from flags or
	// the file: flags show up in ps and files get copied around. When both
	// are empty the server generates them on first start. Root.MasterKey
	// comes from COFFER_MASTER_KEY, likewise only from the environment.
	Root iam.Config
}

// TLS names the certificate and key files of the S3 and ops listeners (PEM;
// the certificate file may hold the chain). They are reloaded on SIGHUP and
// when they change.
type TLS struct {
	CertFile string
	KeyFile  string
}

// PasswordHash holds the argon2id parameters of console password hashes.
// Every hash records its own, so changing them applies to passwords set
// from then on and leaves the others valid.
type PasswordHash struct {
	Memory  int64 // bytes, a multiple of 1KiB
	Time    int   // passes over the memory
	Threads int   // lanes
}

// Params returns h as iam takes them.
func (h PasswordHash) Params() iam.PasswordParams {
	return iam.PasswordParams{Memory: uint32(h.Memory >> 10), Time: uint32(h.Time), Threads: uint8(h.Threads)}
}

// Disk configures the free-space reserve: below it, new data is refused
// (StorageFull) while deletes, metadata commits, the audit log and the
// metadata engine's compactions still have room.
type Disk struct {
	// Reserve is the most space kept free, in bytes; 0 turns the reserve
	// off.
	Reserve int64
	// ReserveFraction caps the reserve at this share of the filesystem's
	// size, so that a small volume is not mostly reserve.
	ReserveFraction float64
}

// Meta selects the metadata engine.
type Meta struct {
	Kind     string // MetaPebble or MetaPostgres
	Postgres Postgres
}

// Postgres is the PostgreSQL database of meta.kind postgres.
type Postgres struct {
	// URL is the connection string. A password in it is accepted only
	// from the environment (COFFER_META_POSTGRES_URL): flags show up in
	// ps, and files get copied around.
	URL string
	// PasswordFile, if set, names a file holding the password.
	PasswordFile string
	// MaxConns bounds the connection pool.
	MaxConns int
	// StatementTimeout bounds every statement and lock wait.
	StatementTimeout time.Duration
}

// Blob selects the block store.
type Blob struct {
	Kind string     // BlobFS, BlobMemory or BlobS3
	FS   FSBlob     // with BlobFS
	S3   S3Upstream // with BlobS3
}

// FSBlob tunes the block store on the local filesystem (blob.kind fs).
type FSBlob struct {
	// Reuse is the most bytes of freed block files kept to be rewritten
	// in place by new blocks of the same size instead of being deleted
	// (fsblob.Config.Reuse); 0 turns reuse off.
	Reuse int64
}

// S3Upstream is the upstream bucket of gateway mode (blob.kind s3).
type S3Upstream struct {
	Endpoint  string // URL of the S3 API, e.g. https://s3.eu-west-1.amazonaws.com
	Region    string
	Bucket    string
	Prefix    string // key prefix in the bucket; one per Coffer metadata store
	AccessKey string
	// SecretKey comes only from the environment (COFFER_BLOB_S3_SECRET_KEY),
	// like the root secret.
	SecretKey string
	PathStyle bool
	// Timeout is the longest the upstream may stall one attempt of a
	// request (s3blob.Config.Timeout).
	Timeout time.Duration
}

// Pprof configures the pprof listener, which is off by default.
type Pprof struct {
	Enabled bool
	Host    string
	Port    int // 0 picks a free port (tests)
}

// Log configures logging.
type Log struct {
	Level  slog.Level // debug, info, warn or error
	Format string     // LogText or LogJSON

	// AccessLogSample is the fraction of requests written to the access
	// log, from 0 (off, the default) to 1 (every request).
	AccessLogSample float64
}

// Audit configures the audit log: every mutating S3 request, admin change
// and refused authentication, in a SQLite file of its own.
type Audit struct {
	Enabled bool
	// Path is the SQLite file; "" means <StoragePath>/audit.db.
	Path string
	// ReadSample is the fraction of successful reads (GET, HEAD) also
	// recorded, from 0 (none, the default) to 1 (all).
	ReadSample float64
	// Retention is how long events are kept; 0 keeps them forever.
	Retention time.Duration
	// MaxBytes caps the audit file and its WAL: past it the oldest
	// events are deleted. 0 means no cap.
	MaxBytes int64
	// MaxEvents caps the number of events kept, likewise. 0 means no cap.
	MaxEvents int
	// PerSource is how many refused or unauthenticated requests of one
	// source (client IP or IPv6 /64, and outcome) are recorded in full per minute;
	// the rest are counted in one summary event.
	PerSource int
	// PerMinute bounds the refused or unauthenticated requests recorded
	// in full per minute, and the sources counted separately.
	PerMinute int
}

// DefaultMaxConnections is how many connections the S3 listener keeps open
// by default. A connection costs the server about 40 KiB while its request
// is read or refused (a goroutine, net/http's buffers, the request), so a
// flood of 10,000 hostile connections against this limit peaks at about
// 120 MiB of RSS (TestHostileConnections); S3 clients use tens to hundreds.
const DefaultMaxConnections = 2048

// Default returns the built-in settings.
func Default() Config {
	return Config{
		StoragePath:    "./data",
		Address:        "127.0.0.1:6789",
		ConsoleAddress: "127.0.0.1:6790",
		Console: console.Config{
			SessionIdle:       console.DefaultSessionIdle,
			SessionLifetime:   console.DefaultSessionLifetime,
			LoginFailures:     console.DefaultLoginFailures,
			LoginWindow:       console.DefaultLoginWindow,
			LoginQueueTimeout: console.DefaultLoginQueueTimeout,
			MetricsInterval:   console.DefaultMetricsInterval,
		},
		PasswordHash: PasswordHash{
			Memory:  int64(iam.DefaultPasswordParams.Memory) << 10,
			Time:    int(iam.DefaultPasswordParams.Time),
			Threads: int(iam.DefaultPasswordParams.Threads),
		},
		ShutdownTimeout: 30 * time.Second,
		Fsync:           true,
		Disk:            Disk{Reserve: 256 << 20, ReserveFraction: 0.03},
		Meta:            Meta{Kind: MetaPebble, Postgres: Postgres{MaxConns: 16, StatementTimeout: 30 * time.Second}},
		Blob:            Blob{Kind: BlobFS, FS: FSBlob{Reuse: 512 << 20}, S3: S3Upstream{Region: "us-east-1", PathStyle: true, Timeout: 10 * time.Second}},
		Pprof:           Pprof{Host: "127.0.0.1", Port: 6060},
		Log:             Log{Level: slog.LevelInfo, Format: LogText},
		Audit: Audit{
			Enabled:   true,
			Retention: 90 * 24 * time.Hour,
			MaxBytes:  1 << 30,
			MaxEvents: 10_000_000,
			PerSource: 5,
			PerMinute: 1000,
		},
		Objects: objects.Config{
			InlineThreshold: 32 << 10,
			BlockSize:       8 << 20,
			MaxObjectSize:   5 << 30,
			GCInterval:      10 * time.Minute,
			GCGrace:         time.Hour,
			SharedFreeDelay: 5 * time.Minute,
		},
		S3: s3api.Config{Region: "us-east-1", MaxRequests: s3api.DefaultMaxRequests, MaxQueued: s3api.DefaultMaxQueued,
			QueueWait: s3api.DefaultQueueWait, BodyIdleTimeout: s3api.DefaultBodyIdleTimeout},
		MaxConnections: DefaultMaxConnections,
		Lifecycle:      lifecycle.Config{Interval: time.Hour, Day: 24 * time.Hour},
	}
}
