package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/coffer-s3/coffer/internal/bytesize"
	"github.com/coffer-s3/coffer/internal/console"
	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/redact"
)

// Limits checked by Validate.
const (
	minBlockSize          = 64 << 10 // smaller blocks multiply metadata and per-block overhead
	maxBlockSize          = 1 << 30  // a block is buffered by some readers; keep it bounded
	maxInlineThreshold    = 1 << 20  // inline data is held in memory and rewritten by Pebble compactions
	maxObjectSizeLimit    = 5 << 40  // S3's largest object
	minRootAccessKeyLen   = 3
	maxRootAccessKeyLen   = 128
	minRootSecretKeyLen   = 8
	maxRootSecretKeyLen   = 128
	accessKeyForbiddenSet = "/=,"
	minAuditMaxBytes      = 1 << 20 // audit.MinMaxBytes: the schema and WAL alone need about this
	maxAuditPerMinute     = 100_000 // each source counted costs memory for a minute
	maxLoginFailures      = 1000
)

// Validate checks every setting and the rules between them, returning all
// problems found joined into one error, each naming its setting.
func (c Config) Validate() error {
	var errs []error
	add := func(name string, err error) {
		if err != nil {
			errs = append(errs, &settingError{name, err})
		}
	}
	if c.StoragePath == "" {
		add("storage-path", errors.New("must not be empty"))
	}
	add("address", checkHostPort(c.Address))
	if c.ShutdownTimeout < 0 {
		add("shutdown-timeout", errors.New("must not be negative"))
	}
	switch c.Blob.Kind {
	case BlobFS, BlobMemory:
	case BlobS3:
		errs = append(errs, c.validateBlobS3()...)
	default:
		add("blob.kind", fmt.Errorf("invalid value %q: want fs, s3 or memory", c.Blob.Kind))
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		add("tls-cert-file", errors.New("tls-cert-file and tls-key-file go together: set both or neither"))
	}
	add("pprof-port", checkPort(c.Pprof.Port))
	if c.Pprof.Enabled && c.Pprof.Port != 0 {
		if _, port, err := net.SplitHostPort(c.Address); err == nil && port == strconv.Itoa(c.Pprof.Port) && sameHost(c.Address, c.Pprof.Host) {
			add("pprof-port", fmt.Errorf("%d is also the S3 port (address %s)", c.Pprof.Port, c.Address))
		}
	}
	if c.ConsoleAddress != "" {
		if err := checkHostPort(c.ConsoleAddress); err != nil {
			add("console-address", err)
		} else {
			host, port, _ := net.SplitHostPort(c.ConsoleAddress)
			switch {
			case port == "0":
			case samePort(c.Address, port) && sameHost(c.Address, host):
				add("console-address", fmt.Errorf("port %s is also the S3 port (address %s)", port, c.Address))
			case c.Pprof.Enabled && port == strconv.Itoa(c.Pprof.Port) && sameHost(c.ConsoleAddress, c.Pprof.Host):
				add("console-address", fmt.Errorf("port %s is also the pprof port", port))
			}
		}
	}
	if _, ok := levelNames[strings.ToLower(c.Log.Level.String())]; !ok {
		add("log-level", fmt.Errorf("invalid log level %q: want debug, info, warn or error", c.Log.Level))
	}
	if c.Log.Format != LogText && c.Log.Format != LogJSON {
		add("log-format", fmt.Errorf("invalid value %q: want text or json", c.Log.Format))
	}
	add("access-log-sample", checkFraction(c.Log.AccessLogSample))
	add("audit.read-sample", checkFraction(c.Audit.ReadSample))
	if c.Audit.Retention < 0 {
		add("audit.retention", errors.New("must not be negative"))
	}
	if b := c.Audit.MaxBytes; b < 0 || b > 0 && b < minAuditMaxBytes {
		add("audit.max-bytes", fmt.Errorf("%s is too small: want 0 (no cap) or at least %s", bytesize.Format(b), bytesize.Format(minAuditMaxBytes)))
	}
	if c.Audit.MaxEvents < 0 {
		add("audit.max-events", errors.New("must not be negative"))
	}
	for _, s := range []struct {
		name string
		v    int
	}{{"audit.refused.per-source", c.Audit.PerSource}, {"audit.refused.per-minute", c.Audit.PerMinute}} {
		if s.v < 1 || s.v > maxAuditPerMinute {
			add(s.name, fmt.Errorf("%d is out of range: want 1 to %d", s.v, maxAuditPerMinute))
		}
	}
	for _, s := range []struct {
		name string
		v    int
	}{{"limits.connections", c.MaxConnections}, {"limits.requests", c.S3.MaxRequests}, {"limits.queue", c.S3.MaxQueued}} {
		if s.v < 1 {
			add(s.name, fmt.Errorf("%d is out of range: want at least 1", s.v))
		}
	}
	for _, s := range []struct {
		name string
		v    time.Duration
	}{{"limits.queue-wait", c.S3.QueueWait}, {"limits.body-idle", c.S3.BodyIdleTimeout}} {
		if s.v <= 0 {
			add(s.name, errors.New("must be positive"))
		}
	}
	if c.Procs < 0 {
		add("procs", fmt.Errorf("%d is out of range: want 0 (automatic) or more", c.Procs))
	}
	if c.Lifecycle.Interval == 0 {
		add("lifecycle.interval", errors.New("must be positive (or negative to disable)"))
	}
	if c.Lifecycle.Day <= 0 {
		add("lifecycle.day", errors.New("must be positive"))
	}
	errs = append(errs, c.validateObjects()...)
	errs = append(errs, c.validateS3()...)
	errs = append(errs, c.validateConsole()...)
	errs = append(errs, c.validateMeta()...)
	if err := checkRoot(c.Root.RootAccessKey, c.Root.RootSecretKey); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// validateMeta checks the PostgreSQL settings of meta.kind postgres.
func (c Config) validateMeta() []error {
	if c.Meta.Kind != MetaPostgres {
		return nil
	}
	var errs []error
	p := c.Meta.Postgres
	if p.URL == "" {
		errs = append(errs, &settingError{"meta.postgres.url", errors.New("required with meta.kind postgres")})
	}
	if p.MaxConns < 1 {
		errs = append(errs, &settingError{"meta.postgres.max-conns", fmt.Errorf("%d is out of range: want at least 1", p.MaxConns)})
	}
	if p.StatementTimeout <= 0 {
		errs = append(errs, &settingError{"meta.postgres.statement-timeout", errors.New("must be positive")})
	}
	if c.Blob.Kind == BlobMemory {
		// Blocks no other node can read, and lost on exit, while the
		// shared metadata references them.
		errs = append(errs, &settingError{"blob.kind", errors.New("memory keeps blocks in this process only: not with meta.kind postgres, whose other nodes could not read them")})
	}
	if c.Audit.Enabled && c.Audit.Path != "" {
		// One log for the cluster: a file per node would be a second,
		// partial record, and a node keeps no state of its own.
		errs = append(errs, &settingError{"audit.path", errors.New("with meta.kind postgres the audit log is the cluster's, in PostgreSQL (table coffer_audit), and no node keeps an audit file: leave audit.path unset")})
	}
	return errs
}

// HasPostgresPassword reports whether a PostgreSQL connection string
// holds a password: commands that take one as a flag refuse it.
func HasPostgresPassword(conn string) bool { return hasPassword(conn) }

// hasPassword reports whether a PostgreSQL connection string, of either
// form, holds a password: password, or sslpassword (which decrypts the
// client's TLS key). It never returns the string in an error: the
// password must not reach a log.
func hasPassword(conn string) bool {
	if strings.HasPrefix(conn, "postgres://") || strings.HasPrefix(conn, "postgresql://") {
		u, err := url.Parse(conn)
		if err != nil {
			return true // cannot tell: assume the worst
		}
		if _, ok := u.User.Password(); ok {
			return true
		}
		q := u.Query()
		return q.Has("password") || q.Has("sslpassword")
	}
	fs := strings.Fields(strings.ReplaceAll(conn, "=", " = ")) // key = value, spaces optional
	for i := 0; i+1 < len(fs); i++ {
		if (fs[i] == "password" || fs[i] == "sslpassword") && fs[i+1] == "=" {
			return true
		}
	}
	return false
}

// validateBlobS3 checks the upstream of gateway mode: everything needed
// to reach it, so that a typo fails at start rather than at the first PUT.
func (c Config) validateBlobS3() []error {
	var errs []error
	add := func(name string, err error) {
		if err != nil {
			errs = append(errs, &settingError{name: name, err: err})
		}
	}
	s := c.Blob.S3
	switch u, err := url.Parse(s.Endpoint); {
	case s.Endpoint == "":
		add("blob.s3.endpoint", errors.New("required with blob.kind s3"))
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil:
		add("blob.s3.endpoint", fmt.Errorf("%s: want http:// or https:// with a host and no path, query or credentials", quoteURL(u, err)))
	}
	if s.Bucket == "" {
		add("blob.s3.bucket", errors.New("required with blob.kind s3"))
	}
	if s.Region == "" {
		add("blob.s3.region", errors.New("required with blob.kind s3"))
	}
	switch {
	case strings.HasPrefix(s.Prefix, "/"):
		add("blob.s3.prefix", fmt.Errorf("%q must not start with /", s.Prefix))
	case s.Prefix != "" && !strings.HasSuffix(s.Prefix, "/"):
		// So that no prefix is the start of another's ("node1" of "node10/").
		add("blob.s3.prefix", fmt.Errorf("%q must end with /", s.Prefix))
	}
	if s.AccessKey == "" {
		add("blob.s3.access-key", errors.New("required with blob.kind s3"))
	}
	if s.SecretKey == "" {
		errs = append(errs, fmt.Errorf("%s: required with blob.kind s3", EnvBlobS3SecretKey))
	}
	return errs
}

// minClusterGCGrace is the least gc-grace of a node of a cluster.
const minClusterGCGrace = time.Second

func (c Config) validateObjects() []error {
	var errs []error
	o := c.Objects
	if o.BlockSize < minBlockSize || o.BlockSize > maxBlockSize {
		errs = append(errs, &settingError{"block-size", fmt.Errorf("%s is out of range: want %s to %s",
			bytesize.Format(o.BlockSize), bytesize.Format(minBlockSize), bytesize.Format(maxBlockSize))})
	}
	switch {
	case o.InlineThreshold < 0:
		errs = append(errs, &settingError{"inline-threshold", errors.New("must not be negative")})
	case o.InlineThreshold > maxInlineThreshold:
		errs = append(errs, &settingError{"inline-threshold", fmt.Errorf("%s is larger than the maximum %s",
			bytesize.Format(o.InlineThreshold), bytesize.Format(maxInlineThreshold))})
	case o.InlineThreshold > o.BlockSize:
		errs = append(errs, &settingError{"inline-threshold", fmt.Errorf("%s is larger than block-size %s",
			bytesize.Format(o.InlineThreshold), bytesize.Format(o.BlockSize))})
	}
	if o.MaxObjectSize <= 0 || o.MaxObjectSize > maxObjectSizeLimit {
		errs = append(errs, &settingError{"max-object-size", fmt.Errorf("%s is out of range: want 1 to %s",
			bytesize.Format(o.MaxObjectSize), bytesize.Format(maxObjectSizeLimit))})
	}
	if o.GCInterval == 0 {
		// objects.Config reads 0 as "default"; Default() and the flag never
		// produce it, so a hand-built Config is ambiguous.
		errs = append(errs, &settingError{"gc-interval", errors.New("must be positive (or negative to disable)")})
	}
	switch {
	case o.GCGrace <= 0:
		errs = append(errs, &settingError{"gc-grace", errors.New("must be positive")})
	case c.Meta.Kind == MetaPostgres && o.GCGrace < minClusterGCGrace:
		// A node publishes it every eighth of it (objects.Service.Publish)
		// and refuses writes with blocks after half of it without.
		errs = append(errs, &settingError{"gc-grace", fmt.Errorf("must be at least %v with meta.kind postgres", minClusterGCGrace)})
	}
	if o.SharedFreeDelay <= 0 {
		errs = append(errs, &settingError{"gc-shared-free-delay", errors.New("must be positive")})
	}
	return errs
}

func (c Config) validateS3() []error {
	var errs []error
	if err := checkRegion(c.S3.Region); err != nil {
		errs = append(errs, &settingError{"region", err})
	}
	if d := c.S3.Domain; d != "" {
		if strings.ContainsAny(d, "/: \t") || strings.HasPrefix(d, ".") || strings.HasSuffix(d, ".") {
			errs = append(errs, &settingError{"domain", fmt.Errorf("invalid domain %q: want a host name such as s3.example.com, without scheme or port", d)})
		}
	}
	return errs
}

// quoteURL quotes a URL-valued setting for an error message, which goes
// to the terminal or the journal: with its user information replaced by
// "***" (redact.URL; the user name may be a token, which
// url.URL.Redacted would show), and, when it does not parse (err, the
// result of url.Parse), not at all, since nothing then tells which part
// of it is a secret.
func quoteURL(u *url.URL, err error) string {
	if err != nil {
		return "a value that does not parse as a URL (not shown: it may hold a password)"
	}
	return strconv.Quote(redact.URL(u))
}

// A settingError is a problem with one setting, named by its flag.
type settingError struct {
	name string
	err  error
}

func (e *settingError) Error() string { return e.name + ": " + e.err.Error() }
func (e *settingError) Unwrap() error { return e.err }

func checkHostPort(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("invalid address %q: want host:port, e.g. 127.0.0.1:6789 or :6789", addr)
	}
	n, err := strconv.Atoi(port)
	if err != nil || checkPort(n) != nil {
		return fmt.Errorf("invalid port in address %q: want 0 to 65535", addr)
	}
	if strings.ContainsAny(host, " /") {
		return fmt.Errorf("invalid host in address %q", addr)
	}
	return nil
}

// sameHost reports whether the host of addr and host would bind the same
// interface, treating an empty host as every interface.
func sameHost(addr, host string) bool {
	h, _, _ := net.SplitHostPort(addr)
	return h == host || h == "" || host == "" || h == "0.0.0.0" || host == "0.0.0.0" || h == "::" || host == "::"
}

// samePort reports whether addr (host:port) has the given port.
func samePort(addr, port string) bool {
	_, p, err := net.SplitHostPort(addr)
	return err == nil && p == port
}

func checkPort(n int) error {
	if n < 0 || n > 65535 {
		return fmt.Errorf("invalid port %d: want 0 to 65535", n)
	}
	return nil
}

func checkFraction(f float64) error {
	if !(f >= 0 && f <= 1) { // also rejects NaN
		return fmt.Errorf("invalid fraction %v: want a number from 0 to 1", f)
	}
	return nil
}

// checkRegion accepts AWS-style region names: lowercase letters, digits and
// dashes, as they appear in the credential scope of a signature.
func checkRegion(r string) error {
	if r == "" || len(r) > 64 {
		return fmt.Errorf("invalid region %q: want 1 to 64 characters", r)
	}
	for _, ch := range r {
		if (ch < 'a' || ch > 'z') && (ch < '0' || ch > '9') && ch != '-' {
			return fmt.Errorf("invalid region %q: want lowercase letters, digits and dashes", r)
		}
	}
	return nil
}

// checkRoot validates root credentials from the environment. It never puts
// a secret into an error message.
func checkRoot(ak, sk string) error {
	switch {
	case ak == "" && sk == "":
		return nil // generated on first start
	case ak == "" || sk == "":
		return fmt.Errorf("%s and %s must be set together (or both left unset to use generated credentials)", EnvRootAccessKey, EnvRootSecretKey)
	case len(ak) < minRootAccessKeyLen || len(ak) > maxRootAccessKeyLen:
		return fmt.Errorf("%s: want %d to %d characters, got %d", EnvRootAccessKey, minRootAccessKeyLen, maxRootAccessKeyLen, len(ak))
	case strings.ContainsAny(ak, accessKeyForbiddenSet) || !printableASCII(ak):
		return fmt.Errorf("%s: want printable ASCII without spaces, '/', '=' or ','", EnvRootAccessKey)
	case len(sk) < minRootSecretKeyLen || len(sk) > maxRootSecretKeyLen:
		return fmt.Errorf("%s: want %d to %d characters, got %d", EnvRootSecretKey, minRootSecretKeyLen, maxRootSecretKeyLen, len(sk))
	case !printableASCII(sk):
		return fmt.Errorf("%s: want printable ASCII", EnvRootSecretKey)
	}
	return nil
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// validateConsole checks the web console's settings.
func (c Config) validateConsole() []error {
	var errs []error
	add := func(name string, err error) {
		if err != nil {
			errs = append(errs, &settingError{name: name, err: err})
		}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"console.session-idle", c.Console.SessionIdle},
		{"console.session-lifetime", c.Console.SessionLifetime},
		{"console.login-window", c.Console.LoginWindow},
		{"console.login-queue-timeout", c.Console.LoginQueueTimeout},
	} {
		if d.v <= 0 {
			add(d.name, errors.New("must be positive"))
		}
	}
	if d := c.Console.MetricsInterval; d < console.MinMetricsInterval || d > console.MaxMetricsInterval {
		add("console.metrics-interval", fmt.Errorf("%v is out of range: want %v to %v", d, console.MinMetricsInterval, console.MaxMetricsInterval))
	}
	if n := c.Console.LoginFailures; n < 1 || n > maxLoginFailures {
		add("console.login-failures", fmt.Errorf("%d is out of range: want 1 to %d", n, maxLoginFailures))
	}
	if o := c.Console.Origin; o != "" {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.User != nil {
			add("console.origin", fmt.Errorf("%s is not an origin: want scheme://host[:port], e.g. https://coffer.example.com", quoteURL(u, err)))
		}
	}
	if o := c.Console.S3URL; o != "" {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.User != nil {
			add("console.s3-url", fmt.Errorf("%s is not a base URL: want scheme://host[:port][/path], e.g. https://s3.example.com", quoteURL(u, err)))
		}
	}
	h := c.PasswordHash
	switch {
	case h.Memory%1024 != 0 || h.Memory < 0 || h.Memory > int64(iam.MaxPasswordMemory)<<10:
		add("console.argon2.memory", fmt.Errorf("%s is not a whole number of KiB up to %s", bytesize.Format(h.Memory), bytesize.Format(int64(iam.MaxPasswordMemory)<<10)))
	case h.Time < 1 || h.Time > iam.MaxPasswordTime:
		add("console.argon2.time", fmt.Errorf("%d is out of range: want 1 to %d", h.Time, iam.MaxPasswordTime))
	case h.Threads < 1 || h.Threads > 255:
		add("console.argon2.threads", fmt.Errorf("%d is out of range: want 1 to 255", h.Threads))
	default:
		if err := h.Params().Validate(); err != nil {
			add("console.argon2.memory", err)
		}
	}
	return errs
}
