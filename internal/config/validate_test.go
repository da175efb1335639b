package config

import (
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	t.Parallel()
	const leak = "Sup3rS3cret" // a password or token in a URL, never to be shown
	for _, tc := range []struct {
		name    string
		mod     func(c *Config)
		wantErr string // "" for valid
	}{
		{name: "default", mod: func(c *Config) {}},
		{name: "smallest block", mod: func(c *Config) { c.Objects.BlockSize = 64 << 10; c.Objects.InlineThreshold = 64 << 10 }},
		{name: "largest block", mod: func(c *Config) { c.Objects.BlockSize = 1 << 30 }},
		{name: "no inline data", mod: func(c *Config) { c.Objects.InlineThreshold = 0 }},
		{name: "gc disabled", mod: func(c *Config) { c.Objects.GCInterval = -1 }},
		{name: "any port", mod: func(c *Config) { c.Address = ":0"; c.Pprof.Enabled = true; c.Pprof.Port = 0 }},
		{name: "ipv6", mod: func(c *Config) { c.Address = "[::1]:6789" }},
		{name: "root from env", mod: func(c *Config) { c.Root.RootAccessKey, c.Root.RootSecretKey = "AKIAEXAMPLE", "wJalrXUtnFEMI/K7MDENG" }},
		{name: "block too small", mod: func(c *Config) { c.Objects.BlockSize = 32 << 10; c.Objects.InlineThreshold = 0 },
			wantErr: "block-size: 32KiB is out of range: want 64KiB to 1GiB"},
		{name: "block too large", mod: func(c *Config) { c.Objects.BlockSize = 2 << 30 }, wantErr: "block-size: 2GiB is out of range"},
		{name: "inline above block", mod: func(c *Config) { c.Objects.InlineThreshold, c.Objects.BlockSize = 128<<10, 64<<10 }, wantErr: "inline-threshold: 128KiB is larger than block-size 64KiB"},
		{name: "inline above max", mod: func(c *Config) { c.Objects.InlineThreshold = 1<<20 + 1 }, wantErr: "inline-threshold: 1048577 is larger than the maximum 1MiB"},
		{name: "inline negative", mod: func(c *Config) { c.Objects.InlineThreshold = -1 }, wantErr: "inline-threshold: must not be negative"},
		{name: "max object zero", mod: func(c *Config) { c.Objects.MaxObjectSize = 0 }, wantErr: "max-object-size: 0 is out of range"},
		{name: "max object huge", mod: func(c *Config) { c.Objects.MaxObjectSize = 6 << 40 }, wantErr: "max-object-size: 6TiB is out of range"},
		{name: "gc interval zero", mod: func(c *Config) { c.Objects.GCInterval = 0 }, wantErr: "gc-interval: must be positive"},
		{name: "gc grace zero", mod: func(c *Config) { c.Objects.GCGrace = 0 }, wantErr: "gc-grace: must be positive"},
		{name: "lifecycle off", mod: func(c *Config) { c.Lifecycle.Interval = -1 }},
		{name: "lifecycle test day", mod: func(c *Config) { c.Lifecycle.Day = 10 * time.Second }},
		{name: "lifecycle interval zero", mod: func(c *Config) { c.Lifecycle.Interval = 0 }, wantErr: "lifecycle.interval: must be positive"},
		{name: "lifecycle day zero", mod: func(c *Config) { c.Lifecycle.Day = 0 }, wantErr: "lifecycle.day: must be positive"},
		{name: "empty storage path", mod: func(c *Config) { c.StoragePath = "" }, wantErr: "storage-path: must not be empty"},
		{name: "address without port", mod: func(c *Config) { c.Address = "localhost" }, wantErr: `address: invalid address "localhost"`},
		{name: "address bad port", mod: func(c *Config) { c.Address = "localhost:http" }, wantErr: "address: invalid port"},
		{name: "address port range", mod: func(c *Config) { c.Address = ":65536" }, wantErr: "address: invalid port"},
		{name: "pprof port range", mod: func(c *Config) { c.Pprof.Port = -1 }, wantErr: "pprof-port: invalid port -1"},
		{name: "pprof on S3 port", mod: func(c *Config) { c.Pprof.Enabled = true; c.Pprof.Port = 6789 }, wantErr: "pprof-port: 6789 is also the S3 port"},
		{name: "pprof on S3 port disabled", mod: func(c *Config) { c.Pprof.Port = 6789 }},
		{name: "pprof same port other host", mod: func(c *Config) { c.Pprof.Enabled = true; c.Pprof.Port = 6789; c.Pprof.Host = "127.0.0.2" }},
		{name: "console off", mod: func(c *Config) { c.ConsoleAddress = "" }},
		{name: "console any port", mod: func(c *Config) { c.Address = ":0"; c.ConsoleAddress = ":0" }},
		{name: "console same port other host", mod: func(c *Config) { c.ConsoleAddress = "127.0.0.2:6789" }},
		{name: "console without port", mod: func(c *Config) { c.ConsoleAddress = "localhost" }, wantErr: `console-address: invalid address "localhost"`},
		{name: "console bad port", mod: func(c *Config) { c.ConsoleAddress = "127.0.0.1:99999" }, wantErr: "console-address: invalid port"},
		{name: "console on S3 port", mod: func(c *Config) { c.ConsoleAddress = ":6789" }, wantErr: "console-address: port 6789 is also the S3 port"},
		{name: "console on pprof port", mod: func(c *Config) { c.Pprof.Enabled = true; c.ConsoleAddress = "127.0.0.1:6060" }, wantErr: "console-address: port 6060 is also the pprof port"},
		{name: "console on pprof port, pprof off", mod: func(c *Config) { c.ConsoleAddress = "127.0.0.1:6060" }},
		{name: "console origin", mod: func(c *Config) { c.Console.Origin = "https://coffer.example.com:8443" }},
		{name: "console origin with path", mod: func(c *Config) { c.Console.Origin = "https://coffer.example.com/console" },
			wantErr: `console.origin: "https://coffer.example.com/console" is not an origin`},
		{name: "console origin with credentials", mod: func(c *Config) { c.Console.Origin = "https://admin:" + leak + "@coffer.example.com" },
			wantErr: `console.origin: "https://***@coffer.example.com" is not an origin`},
		{name: "console origin with a token as user", mod: func(c *Config) { c.Console.Origin = "https://ghp_" + leak + "@coffer.example.com" },
			wantErr: `console.origin: "https://***@coffer.example.com" is not an origin`},
		{name: "console origin unparsable", mod: func(c *Config) { c.Console.Origin = "https://admin:" + leak + "@coffer.example.com/%zz" },
			wantErr: `console.origin: a value that does not parse as a URL (not shown: it may hold a password) is not an origin`},
		{name: "console s3 url with credentials", mod: func(c *Config) { c.Console.S3URL = "https://AKID:" + leak + "@s3.example.com/base" },
			wantErr: `console.s3-url: "https://***@s3.example.com/base" is not a base URL`},
		{name: "console s3 url with a token as user", mod: func(c *Config) { c.Console.S3URL = "https://" + leak + "@s3.example.com/base" },
			wantErr: `console.s3-url: "https://***@s3.example.com/base" is not a base URL`},
		{name: "console s3 url unparsable", mod: func(c *Config) { c.Console.S3URL = "https://AKID:" + leak + "@s3.example.com/%zz" },
			wantErr: `console.s3-url: a value that does not parse as a URL`},
		{name: "console idle zero", mod: func(c *Config) { c.Console.SessionIdle = 0 }, wantErr: "console.session-idle: must be positive"},
		{name: "console failures zero", mod: func(c *Config) { c.Console.LoginFailures = 0 }, wantErr: "console.login-failures: 0 is out of range"},
		{name: "argon2 stronger", mod: func(c *Config) { c.PasswordHash = PasswordHash{Memory: 64 << 20, Time: 3, Threads: 4} }},
		{name: "argon2 memory small", mod: func(c *Config) { c.PasswordHash.Memory = 512 << 10 }, wantErr: "console.argon2.memory: argon2id memory 512 KiB is out of range"},
		{name: "argon2 memory odd", mod: func(c *Config) { c.PasswordHash.Memory = 19<<20 + 1 }, wantErr: "console.argon2.memory: 19922945 is not a whole number of KiB"},
		{name: "argon2 time zero", mod: func(c *Config) { c.PasswordHash.Time = 0 }, wantErr: "console.argon2.time: 0 is out of range"},
		{name: "argon2 threads", mod: func(c *Config) { c.PasswordHash.Threads = 256 }, wantErr: "console.argon2.threads: 256 is out of range"},
		{name: "negative shutdown", mod: func(c *Config) { c.ShutdownTimeout = -1 }, wantErr: "shutdown-timeout: must not be negative"},
		{name: "blob kind", mod: func(c *Config) { c.Blob.Kind = "ftp" }, wantErr: `blob.kind: invalid value "ftp"`},
		{name: "s3 upstream missing", mod: func(c *Config) { c.Blob.Kind = BlobS3 },
			wantErr: "blob.s3.endpoint: required with blob.kind s3\nblob.s3.bucket: required with blob.kind s3\nblob.s3.access-key: required with blob.kind s3\nCOFFER_BLOB_S3_SECRET_KEY: required"},
		{name: "s3 endpoint with a path", mod: func(c *Config) {
			c.Blob.Kind, c.Blob.S3 = BlobS3, S3Upstream{Endpoint: "http://h:9000/bucket", Region: "r", Bucket: "b", AccessKey: "a", SecretKey: "s"}
		}, wantErr: `blob.s3.endpoint: "http://h:9000/bucket": want http:// or https:// with a host and no path`},
		{name: "s3 endpoint scheme", mod: func(c *Config) {
			c.Blob.Kind, c.Blob.S3 = BlobS3, S3Upstream{Endpoint: "h:9000", Region: "r", Bucket: "b", AccessKey: "a", SecretKey: "s", Prefix: "/p"}
		}, wantErr: "blob.s3.endpoint: \"h:9000\": want http:// or https://"},
		{name: "s3 endpoint with credentials", mod: func(c *Config) {
			c.Blob.Kind, c.Blob.S3 = BlobS3, S3Upstream{Endpoint: "https://AKID:" + leak + "@s3.example.com", Region: "r", Bucket: "b", AccessKey: "a", SecretKey: "s"}
		}, wantErr: `blob.s3.endpoint: "https://***@s3.example.com": want http:// or https:// with a host and no path, query or credentials`},
		{name: "s3 endpoint with a secret as user", mod: func(c *Config) {
			c.Blob.Kind, c.Blob.S3 = BlobS3, S3Upstream{Endpoint: "https://" + leak + "@s3.example.com", Region: "r", Bucket: "b", AccessKey: "a", SecretKey: "s"}
		}, wantErr: `blob.s3.endpoint: "https://***@s3.example.com": want http://`},
		{name: "s3 endpoint without slashes", mod: func(c *Config) {
			c.Blob.Kind, c.Blob.S3 = BlobS3, S3Upstream{Endpoint: "https:AKID:" + leak + "@s3.example.com", Region: "r", Bucket: "b", AccessKey: "a", SecretKey: "s"}
		}, wantErr: `blob.s3.endpoint: "***@s3.example.com": want http://`},
		{name: "s3 endpoint unparsable", mod: func(c *Config) {
			c.Blob.Kind, c.Blob.S3 = BlobS3, S3Upstream{Endpoint: "https://AKID:" + leak + "@s3.example.com/%zz", Region: "r", Bucket: "b", AccessKey: "a", SecretKey: "s"}
		}, wantErr: `blob.s3.endpoint: a value that does not parse as a URL (not shown: it may hold a password): want http://`},
		{name: "s3 prefix", mod: func(c *Config) {
			c.Blob.Kind, c.Blob.S3 = BlobS3, S3Upstream{Endpoint: "https://s3.example", Region: "r", Bucket: "b", AccessKey: "a", SecretKey: "s", Prefix: "/p"}
		}, wantErr: `blob.s3.prefix: "/p" must not start with /`},
		{name: "s3 prefix end", mod: func(c *Config) {
			c.Blob.Kind, c.Blob.S3 = BlobS3, S3Upstream{Endpoint: "https://s3.example", Region: "r", Bucket: "b", AccessKey: "a", SecretKey: "s", Prefix: "node1"}
		}, wantErr: `blob.s3.prefix: "node1" must end with /`},
		{name: "log level", mod: func(c *Config) { c.Log.Level = slog.LevelInfo + 2 }, wantErr: "log-level: invalid log level"},
		{name: "log format", mod: func(c *Config) { c.Log.Format = "xml" }, wantErr: `log-format: invalid value "xml"`},
		{name: "sample", mod: func(c *Config) { c.Log.AccessLogSample = 1.5 }, wantErr: "access-log-sample: invalid fraction 1.5"},
		{name: "audit sample", mod: func(c *Config) { c.Audit.ReadSample = -0.1 }, wantErr: "audit.read-sample: invalid fraction -0.1"},
		{name: "audit retention", mod: func(c *Config) { c.Audit.Retention = -time.Hour }, wantErr: "audit.retention: must not be negative"},
		{name: "audit no cap", mod: func(c *Config) { c.Audit.MaxBytes, c.Audit.MaxEvents = 0, 0 }},
		{name: "audit smallest cap", mod: func(c *Config) { c.Audit.MaxBytes = 1 << 20 }},
		{name: "audit cap too small", mod: func(c *Config) { c.Audit.MaxBytes = 1<<20 - 1 }, wantErr: "audit.max-bytes: 1048575 is too small: want 0 (no cap) or at least 1MiB"},
		{name: "audit negative cap", mod: func(c *Config) { c.Audit.MaxBytes = -1 }, wantErr: "audit.max-bytes: "},
		{name: "audit negative events", mod: func(c *Config) { c.Audit.MaxEvents = -1 }, wantErr: "audit.max-events: must not be negative"},
		{name: "audit per source 0", mod: func(c *Config) { c.Audit.PerSource = 0 }, wantErr: "audit.refused.per-source: 0 is out of range: want 1 to 100000"},
		{name: "audit per minute too high", mod: func(c *Config) { c.Audit.PerMinute = 100001 }, wantErr: "audit.refused.per-minute: 100001 is out of range"},
		{name: "audit per minute highest", mod: func(c *Config) { c.Audit.PerMinute = 100000 }},
		{name: "procs negative", mod: func(c *Config) { c.Procs = -1 }, wantErr: "procs: -1 is out of range: want 0 (automatic) or more"},
		{name: "procs set", mod: func(c *Config) { c.Procs = 3 }},
		{name: "region empty", mod: func(c *Config) { c.S3.Region = "" }, wantErr: `region: invalid region ""`},
		{name: "region upper", mod: func(c *Config) { c.S3.Region = "US-EAST-1" }, wantErr: "region: invalid region"},
		{name: "domain with scheme", mod: func(c *Config) { c.S3.Domain = "https://s3.example.com" }, wantErr: "domain: invalid domain"},
		{name: "domain with port", mod: func(c *Config) { c.S3.Domain = "s3.example.com:9000" }, wantErr: "domain: invalid domain"},
		{name: "root half", mod: func(c *Config) { c.Root.RootSecretKey = "secretsecret" }, wantErr: "must be set together"},
		{name: "root key short", mod: func(c *Config) { c.Root.RootAccessKey, c.Root.RootSecretKey = "ak", "secretsecret" },
			wantErr: "COFFER_ROOT_ACCESS_KEY: want 3 to 128 characters"},
		{name: "root key slash", mod: func(c *Config) { c.Root.RootAccessKey, c.Root.RootSecretKey = "a/k", "secretsecret" },
			wantErr: "COFFER_ROOT_ACCESS_KEY: want printable ASCII without spaces"},
		{name: "root secret short", mod: func(c *Config) { c.Root.RootAccessKey, c.Root.RootSecretKey = "rootkey", "short" },
			wantErr: "COFFER_ROOT_SECRET_KEY: want 8 to 128 characters"},
		{name: "root secret space", mod: func(c *Config) { c.Root.RootAccessKey, c.Root.RootSecretKey = "rootkey", "secret secret" },
			wantErr: "COFFER_ROOT_SECRET_KEY: want printable ASCII"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := Default()
			tc.mod(&c)
			err := c.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Validate() = %v, want error containing %q", err, tc.wantErr)
			}
			if c.Root.RootSecretKey != "" && strings.Contains(err.Error(), c.Root.RootSecretKey) {
				t.Errorf("Validate() = %v: the error leaks the secret key", err)
			}
			if strings.Contains(err.Error(), leak) {
				t.Errorf("Validate() = %v: the error leaks the password in a URL", err)
			}
		})
	}
}

// TestValidateReportsAll checks that Validate lists every problem at once,
// so an operator fixes a config file in one round.
func TestValidateReportsAll(t *testing.T) {
	t.Parallel()
	c := Default()
	c.Address = "nope"
	c.Objects.BlockSize = 1
	c.Log.Format = "xml"
	err := c.Validate()
	for _, want := range []string{"address:", "block-size:", "log-format:"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to contain %q", err, want)
		}
	}
}
