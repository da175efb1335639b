package config

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/coffer-s3/coffer/internal/bytesize"
)

// A setting is one entry of the registry: a flag, from whose name the
// environment variable and the TOML key are derived.
type setting struct {
	name   string // flag name; dots become TOML tables
	usage  string // one line, lowercase, no final period
	value  value
	noFile bool // not settable from the TOML file (the file's own name)
}

// settings returns the registry bound to the fields of c, in the order the
// documentation lists them.
func settings(c *Config) []setting {
	return []setting{
		{name: "config", value: &stringValue{&c.File}, noFile: true,
			usage: "TOML file to read settings from (\"\" for none)"},
		{name: "storage-path", value: &stringValue{&c.StoragePath},
			usage: "data directory: metadata, blobs and generated root credentials live under it"},
		{name: "address", value: &stringValue{&c.Address},
			usage: "host:port the S3 API listens on"},
		{name: "console-address", value: &stringValue{&c.ConsoleAddress},
			usage: "host:port of the ops listener (the web console under /, /metrics, /healthz, /readyz); \"\" disables it; metrics are served nowhere else, so keep it on loopback or a private network"},
		{name: "tls-cert-file", value: &stringValue{&c.TLS.CertFile},
			usage: "PEM certificate (and chain) to serve HTTPS with on the S3 and ops listeners; reloaded on SIGHUP and when it changes (a reload that fails, or whose certificate is expired or not yet valid, keeps the one in use); \"\" serves plain HTTP"},
		{name: "tls-key-file", value: &stringValue{&c.TLS.KeyFile},
			usage: "PEM private key of tls-cert-file"},
		{name: "console.session-idle", value: &durationValue{p: &c.Console.SessionIdle},
			usage: "a console session ends after this long without a request"},
		{name: "console.session-lifetime", value: &durationValue{p: &c.Console.SessionLifetime},
			usage: "a console session ends this long after sign-in, however active"},
		{name: "console.login-failures", value: &intValue{&c.Console.LoginFailures},
			usage: "failed console sign-ins per client address (IPv6: per /64) and per user name within console.login-window that lock further attempts out (429 with Retry-After, even with the right password)"},
		{name: "console.login-window", value: &durationValue{p: &c.Console.LoginWindow},
			usage: "the sliding window in which console.login-failures are counted"},
		{name: "console.login-queue-timeout", value: &durationValue{p: &c.Console.LoginQueueTimeout},
			usage: "password checks run one per CPU at a time; a sign-in waits this long for its turn, then gets 503 with Retry-After"},
		{name: "console.origin", value: &stringValue{&c.Console.Origin},
			usage: "public origin of the console (scheme://host[:port]) that its forms must come from, when a proxy serves it under another; \"\" means the origin each request reached"},
		{name: "console.s3-url", value: &stringValue{&c.Console.S3URL},
			usage: "public base URL of the S3 endpoint (scheme://host[:port]) that the console's share links point at; \"\" means the S3 listener's address"},
		{name: "console.metrics-interval", value: &durationValue{p: &c.Console.MetricsInterval},
			usage: "how often the server samples its own metrics for the console's Metrics page, which keeps an hour of samples (at most 3600)"},
		{name: "console.argon2.memory", value: &sizeValue{&c.PasswordHash.Memory},
			usage: "argon2id memory per console password hash (OWASP: at least 19MiB); also what each concurrent sign-in costs"},
		{name: "console.argon2.time", value: &intValue{&c.PasswordHash.Time},
			usage: "argon2id passes per console password hash (OWASP: at least 2 with 19MiB)"},
		{name: "console.argon2.threads", value: &intValue{&c.PasswordHash.Threads},
			usage: "argon2id lanes per console password hash; hashes made with other parameters keep verifying, and are re-made with these at their user's next sign-in"},
		{name: "region", value: &stringValue{&c.S3.Region},
			usage: "region the server reports and that request signatures must name"},
		{name: "domain", value: &stringValue{&c.S3.Domain},
			usage: "domain suffix for virtual-hosted-style requests (BUCKET.DOMAIN); \"\" serves path-style requests only"},
		{name: "meta.kind", value: &enumValue{&c.Meta.Kind, []string{MetaPebble, MetaPostgres}},
			usage: "metadata engine: pebble (embedded, in the meta directory of storage-path) or postgres (a PostgreSQL database that several nodes can share, see meta.postgres.*)"},
		{name: "meta.postgres.url", value: &stringValue{&c.Meta.Postgres.URL},
			usage: "with meta.kind postgres: connection string (postgres://user@host:port/db?sslmode=… or key=value pairs); a password (password or sslpassword) in it only from COFFER_META_POSTGRES_URL, else use meta.postgres.password-file or a .pgpass file"},
		{name: "meta.postgres.password-file", value: &stringValue{&c.Meta.Postgres.PasswordFile},
			usage: "with meta.kind postgres: file holding the database password (its first line); a warning is logged when group or others may read it"},
		{name: "meta.postgres.max-conns", value: &intValue{&c.Meta.Postgres.MaxConns},
			usage: "with meta.kind postgres: most connections to the database; a write holds one from its first read to its commit"},
		{name: "meta.postgres.statement-timeout", value: &durationValue{p: &c.Meta.Postgres.StatementTimeout},
			usage: "with meta.kind postgres: longest a statement (a lock wait included) or an idle transaction may take before the database cancels it"},
		{name: "blob.kind", value: &enumValue{&c.Blob.Kind, []string{BlobFS, BlobMemory, BlobS3}},
			usage: "block store: fs (files in the blobs directory of storage-path), s3 (an upstream S3 bucket: gateway mode, see blob.s3.*) or memory (lost on exit; tests and benchmarks)"},
		{name: "blob.fs.reuse", value: &sizeValue{&c.Blob.FS.Reuse},
			usage: "with blob.kind fs: at most this much of deleted and overwritten blocks' files under 1 MiB (and at most 5 % of the filesystem) is kept to be rewritten in place by new blocks of the same size, instead of being deleted and allocated again; a kept file is deleted after a minute unused, or at once when free space nears disk.reserve; 0 turns reuse off"},
		{name: "blob.s3.endpoint", value: &stringValue{&c.Blob.S3.Endpoint},
			usage: "with blob.kind s3: URL of the upstream S3 API (http:// or https://)"},
		{name: "blob.s3.region", value: &stringValue{&c.Blob.S3.Region},
			usage: "with blob.kind s3: region the upstream signs for"},
		{name: "blob.s3.bucket", value: &stringValue{&c.Blob.S3.Bucket},
			usage: "with blob.kind s3: upstream bucket holding the blocks; it must exist"},
		{name: "blob.s3.prefix", value: &stringValue{&c.Blob.S3.Prefix},
			usage: "with blob.kind s3: key prefix of the blocks in the bucket, \"\" or ending in /; one metadata store's own (GC removes what its metadata does not reference), claimed at start"},
		{name: "blob.s3.access-key", value: &stringValue{&c.Blob.S3.AccessKey},
			usage: "with blob.kind s3: upstream access key ID (the secret comes only from COFFER_BLOB_S3_SECRET_KEY)"},
		{name: "blob.s3.path-style", value: &boolValue{&c.Blob.S3.PathStyle},
			usage: "with blob.kind s3: path-style requests (endpoint/bucket/key), which MinIO, Ceph and Coffer need; false for virtual-hosted (bucket.endpoint)"},
		{name: "blob.s3.timeout", value: &durationValue{p: &c.Blob.S3.Timeout},
			usage: "with blob.kind s3: longest the upstream may take to accept a connection, to answer, or to take or send more of a body, before the attempt fails; requests that need an upstream that is down answer 503 within 3 times this plus 3s of retry backoff (0 means 10s)"},
		{name: "fsync", value: &boolValue{&c.Fsync},
			usage: "fsync every acknowledged write; false is for benchmarks only and loses data on power failure"},
		{name: "inline-threshold", value: &sizeValue{&c.Objects.InlineThreshold},
			usage: "objects up to this size are stored in the metadata database, committed with their record in one batch (at most 1MiB and block-size)"},
		{name: "block-size", value: &sizeValue{&c.Objects.BlockSize},
			usage: "larger objects are cut into blocks of this size (64KiB to 1GiB)"},
		{name: "max-object-size", value: &sizeValue{&c.Objects.MaxObjectSize},
			usage: "largest object a single PUT may store (at most 5TiB)"},
		{name: "gc-interval", value: &durationValue{p: &c.Objects.GCInterval, zeroDisables: true},
			usage: "how often background garbage collection runs; 0 disables it"},
		{name: "disk.reserve", value: &sizeValue{&c.Disk.Reserve},
			usage: "below this much free space on the storage path's filesystems, new object data is refused with 507 StorageFull (deletes and reads go on); 0 turns the reserve off"},
		{name: "disk.reserve-fraction", value: &fractionValue{&c.Disk.ReserveFraction},
			usage: "the reserve is at most this share of the filesystem's size (0.03: 3 %), but at least the 64MiB the metadata engine needs to flush and compact"},
		{name: "gc-free-delay", value: &durationValue{p: &c.Objects.FreeDelay},
			usage: "blocks of deleted and overwritten objects, replaced parts and aborted uploads are freed this long after the commit that dropped them (0: at once; a reader still streaming a block keeps it until done)"},
		{name: "gc-shared-free-delay", value: &durationValue{p: &c.Objects.SharedFreeDelay},
			usage: "with metadata on PostgreSQL (several nodes), the least gc-free-delay: a node does not see another's readers, so a GET that streams an object version through one node must finish within this after the version is deleted or overwritten through another"},
		{name: "gc-grace", value: &durationValue{p: &c.Objects.GCGrace},
			usage: "garbage collection never removes a blob younger than this; must be positive, at least 1s with meta.kind postgres (offline admin gc takes --grace 0s)"},
		{name: "lifecycle.interval", value: &durationValue{p: &c.Lifecycle.Interval, zeroDisables: true},
			usage: "how often the lifecycle worker applies buckets' lifecycle rules (S3 applies them once a day); 0 disables it ('coffer admin lifecycle run' still runs a pass)"},
		{name: "lifecycle.day", value: &durationValue{p: &c.Lifecycle.Day},
			usage: "length of a lifecycle day, for testing only: with anything but 24h, rules count days of this length and due times are not rounded up to midnight UTC as S3 does"},
		{name: "limits.connections", value: &intValue{&c.MaxConnections},
			usage: "most connections the S3 listener, and the ops listener, each keep open; at the limit a new one closes the connection that has waited longest without a request in progress (idle, or still sending its headers), else one whose client has read nothing of its answer for 2s"},
		{name: "limits.requests", value: &intValue{&c.S3.MaxRequests},
			usage: "most S3 requests served at once; more wait in a queue (limits.queue)"},
		{name: "limits.queue", value: &intValue{&c.S3.MaxQueued},
			usage: "most S3 requests waiting to be served; past it, or after limits.queue-wait, they are answered 503 SlowDown with Retry-After"},
		{name: "limits.queue-wait", value: &durationValue{p: &c.S3.QueueWait},
			usage: "longest an S3 request waits to be served before it is answered 503 SlowDown"},
		{name: "limits.body-idle", value: &durationValue{p: &c.S3.BodyIdleTimeout},
			usage: "a request body that sends nothing for this long fails with 400 RequestTimeout and nothing of it is stored (S3 waits about 20s); an answer the client reads nothing of for this long ends its request and connection"},
		{name: "memory-limit", value: &sizeValue{&c.MemoryLimit},
			usage: "soft memory limit of the Go runtime: it collects garbage harder as the heap nears it (0: GOMEMLIMIT if set, else 90 % of the cgroup's memory limit, else none)"},
		{name: "procs", value: &intValue{&c.Procs},
			usage: "threads that may run Go code at once (GOMAXPROCS); 0: GOMAXPROCS if set, else twice the CPUs available, since much of a request's time is spent in blocking file system calls"},
		{name: "shutdown-timeout", value: &durationValue{p: &c.ShutdownTimeout},
			usage: "on SIGINT/SIGTERM, how long to wait for requests in flight before closing their connections"},
		{name: "log-level", value: &levelValue{&c.Log.Level},
			usage: "least severe log level written: debug, info, warn or error"},
		{name: "log-format", value: &enumValue{&c.Log.Format, []string{LogText, LogJSON}},
			usage: "log format on stderr: text or json"},
		{name: "access-log-sample", value: &fractionValue{&c.Log.AccessLogSample},
			usage: "fraction of requests written to the access log, from 0 (off) to 1 (all)"},
		{name: "audit.enabled", value: &boolValue{&c.Audit.Enabled},
			usage: "keep the audit log: every mutating S3 request, admin change and refused request, with who, what, where from and the outcome"},
		{name: "audit.path", value: &stringValue{&c.Audit.Path},
			usage: "SQLite file of the audit log; \"\" means audit.db in storage-path (not with meta.kind postgres, whose log is a PostgreSQL table)"},
		{name: "audit.read-sample", value: &fractionValue{&c.Audit.ReadSample},
			usage: "fraction of successful reads (GET, HEAD) also written to the audit log, from 0 (none) to 1 (all)"},
		{name: "audit.retention", value: &durationValue{p: &c.Audit.Retention, zeroDisables: true},
			usage: "how long audit events are kept (2160h is 90 days); 0 keeps them forever"},
		{name: "audit.max-bytes", value: &sizeValue{&c.Audit.MaxBytes},
			usage: "most disk space of the audit log (its file and WAL); past it the oldest events are deleted; 0 for no cap, else at least 1MiB"},
		{name: "audit.max-events", value: &intValue{&c.Audit.MaxEvents},
			usage: "most events the audit log keeps; past it the oldest are deleted; 0 for no cap"},
		{name: "audit.refused.per-source", value: &intValue{&c.Audit.PerSource},
			usage: "refused (401, 403) or unauthenticated requests recorded one by one per source (client IP, or IPv6 /64, and outcome) and minute; the source's others are counted in one summary event (1 to 100000)"},
		{name: "audit.refused.per-minute", value: &intValue{&c.Audit.PerMinute},
			usage: "refused or unauthenticated requests recorded one by one per minute over all sources, and sources counted separately (further ones share one count per kind of source and outcome); such requests add at most 2×this+12 events a minute (1 to 100000)"},
		{name: "pprof", value: &boolValue{&c.Pprof.Enabled},
			usage: "serve net/http/pprof on its own listener (pprof-host:pprof-port)"},
		{name: "pprof-host", value: &stringValue{&c.Pprof.Host},
			usage: "host the pprof listener binds to; keep it on loopback"},
		{name: "pprof-port", value: &portValue{&c.Pprof.Port},
			usage: "port of the pprof listener (0 picks a free port)"},
	}
}

// newFlagSet returns the flag set of every setting, bound to c. Its errors
// are returned, never printed.
func newFlagSet(name string, c *Config) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	for _, s := range settings(c) {
		fs.Var(s.value, s.name, s.usage)
	}
	return fs
}

// envName is the environment variable of a flag: COFFER_ followed by the
// name upper-cased with '-' and '.' replaced by '_'.
func envName(flagName string) string {
	return "COFFER_" + strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(flagName))
}

// Environment variables that are not flags.
const (
	EnvRootAccessKey = "COFFER_ROOT_ACCESS_KEY"
	EnvRootSecretKey = "COFFER_ROOT_SECRET_KEY"
	// EnvMasterKey holds the key that seals IAM secrets at rest (32 bytes,
	// base64 or hex). Without it the server keeps one in the storage path.
	EnvMasterKey = "COFFER_MASTER_KEY"
	// EnvBlobS3SecretKey is the upstream secret key of gateway mode.
	EnvBlobS3SecretKey = "COFFER_BLOB_S3_SECRET_KEY"
)

// A value is a flag.Value that also says which TOML types it accepts.
type value interface {
	flag.Value
	// fromTOML converts a value decoded from TOML to the string Set takes,
	// or reports that its TOML type is wrong.
	fromTOML(v any) (string, error)
	// kind names the expected input in usage text and documentation.
	kind() string
}

func tomlType(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case int64:
		return "integer"
	case float64:
		return "float"
	case bool:
		return "boolean"
	case []any, []map[string]any:
		return "array"
	case map[string]any:
		return "table"
	default:
		return "datetime"
	}
}

func wrongType(want string, v any) error {
	return fmt.Errorf("want %s, got %s", want, tomlType(v))
}

type stringValue struct{ p *string }

func (v *stringValue) String() string {
	if v.p == nil {
		return ""
	}
	return *v.p
}
func (v *stringValue) Set(s string) error { *v.p = s; return nil }
func (v *stringValue) fromTOML(x any) (string, error) {
	if s, ok := x.(string); ok {
		return s, nil
	}
	return "", wrongType("a string", x)
}
func (v *stringValue) kind() string { return "string" }

type enumValue struct {
	p       *string
	allowed []string
}

func (v *enumValue) String() string {
	if v.p == nil {
		return ""
	}
	return *v.p
}
func (v *enumValue) Set(s string) error {
	for _, a := range v.allowed {
		if s == a {
			*v.p = s
			return nil
		}
	}
	return fmt.Errorf("invalid value %q: want one of %s", s, strings.Join(v.allowed, ", "))
}
func (v *enumValue) fromTOML(x any) (string, error) {
	if s, ok := x.(string); ok {
		return s, nil
	}
	return "", wrongType("a string", x)
}
func (v *enumValue) kind() string { return strings.Join(v.allowed, "|") }

type boolValue struct{ p *bool }

func (v *boolValue) IsBoolFlag() bool { return true }
func (v *boolValue) String() string {
	if v.p == nil {
		return "false"
	}
	return strconv.FormatBool(*v.p)
}
func (v *boolValue) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("invalid boolean %q: want true or false", s)
	}
	*v.p = b
	return nil
}
func (v *boolValue) fromTOML(x any) (string, error) {
	if b, ok := x.(bool); ok {
		return strconv.FormatBool(b), nil
	}
	return "", wrongType("a boolean", x)
}
func (v *boolValue) kind() string { return "bool" }

type portValue struct{ p *int }

func (v *portValue) String() string {
	if v.p == nil {
		return "0"
	}
	return strconv.Itoa(*v.p)
}
func (v *portValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || checkPort(n) != nil {
		return fmt.Errorf("invalid port %q: want 0 to 65535", s)
	}
	*v.p = n
	return nil
}
func (v *portValue) fromTOML(x any) (string, error) {
	if n, ok := x.(int64); ok {
		return strconv.FormatInt(n, 10), nil
	}
	return "", wrongType("an integer", x)
}
func (v *portValue) kind() string { return "port" }

// intValue holds a non-negative integer; Validate checks its range.
type intValue struct{ p *int }

func (v *intValue) String() string {
	if v.p == nil {
		return "0"
	}
	return strconv.Itoa(*v.p)
}
func (v *intValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return fmt.Errorf("invalid integer %q: want a whole number, 0 or more", s)
	}
	*v.p = n
	return nil
}
func (v *intValue) fromTOML(x any) (string, error) {
	if n, ok := x.(int64); ok {
		return strconv.FormatInt(n, 10), nil
	}
	return "", wrongType("an integer", x)
}
func (v *intValue) kind() string { return "integer" }

type sizeValue struct{ p *int64 }

func (v *sizeValue) String() string {
	if v.p == nil {
		return "0"
	}
	return bytesize.Format(*v.p)
}
func (v *sizeValue) Set(s string) error {
	n, err := bytesize.Parse(s)
	if err != nil {
		return err
	}
	*v.p = n
	return nil
}
func (v *sizeValue) fromTOML(x any) (string, error) {
	switch x := x.(type) {
	case int64:
		return strconv.FormatInt(x, 10), nil
	case string:
		return x, nil
	}
	return "", wrongType(`an integer or a string such as "8MiB"`, x)
}
func (v *sizeValue) kind() string { return "size" }

// durationValue holds a non-negative duration. With zeroDisables, "0" is
// stored as -1, which objects.Config reads as "disabled" (its zero value
// means "default").
type durationValue struct {
	p            *time.Duration
	zeroDisables bool
}

func (v *durationValue) String() string {
	if v.p == nil || *v.p < 0 {
		return "0s"
	}
	return formatDuration(*v.p)
}

// formatDuration is time.Duration.String without zero trailing units:
// "10m" rather than "10m0s".
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
func (v *durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return fmt.Errorf("invalid duration %q: want a non-negative Go duration such as 90s, 10m or 1h30m", s)
	}
	if d == 0 && v.zeroDisables {
		d = -1
	}
	*v.p = d
	return nil
}
func (v *durationValue) fromTOML(x any) (string, error) {
	if s, ok := x.(string); ok {
		return s, nil
	}
	return "", wrongType(`a string such as "10m"`, x)
}
func (v *durationValue) kind() string { return "duration" }

// levelNames are the accepted log levels; slog's own parser also takes
// offsets such as "info+2", which we do not document and so do not accept.
var levelNames = map[string]slog.Level{
	"debug": slog.LevelDebug,
	"info":  slog.LevelInfo,
	"warn":  slog.LevelWarn,
	"error": slog.LevelError,
}

type levelValue struct{ p *slog.Level }

func (v *levelValue) String() string {
	if v.p == nil {
		return "info"
	}
	return strings.ToLower(v.p.String())
}
func (v *levelValue) Set(s string) error {
	l, ok := levelNames[strings.ToLower(s)]
	if !ok {
		return fmt.Errorf("invalid log level %q: want debug, info, warn or error", s)
	}
	*v.p = l
	return nil
}
func (v *levelValue) fromTOML(x any) (string, error) {
	if s, ok := x.(string); ok {
		return s, nil
	}
	return "", wrongType("a string", x)
}
func (v *levelValue) kind() string { return "level" }

type fractionValue struct{ p *float64 }

func (v *fractionValue) String() string {
	if v.p == nil {
		return "0"
	}
	return strconv.FormatFloat(*v.p, 'g', -1, 64)
}
func (v *fractionValue) Set(s string) error {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || checkFraction(f) != nil {
		return fmt.Errorf("invalid fraction %q: want a number from 0 to 1", s)
	}
	*v.p = f
	return nil
}
func (v *fractionValue) fromTOML(x any) (string, error) {
	switch x := x.(type) {
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	}
	return "", wrongType("a number", x)
}
func (v *fractionValue) kind() string { return "fraction" }
