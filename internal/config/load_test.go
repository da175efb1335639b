package config

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// writeFile writes content to a fresh file and returns its path.
func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "coffer.toml")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadPrecedence(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		file string // TOML content; "" for no file
		env  map[string]string
		args []string
		want func(c *Config) // applied to Default()
	}{
		{
			name: "defaults",
			want: func(c *Config) {},
		},
		{
			name: "file over default",
			file: "address = \"127.0.0.1:7000\"\n[blob]\nkind = \"memory\"\n",
			want: func(c *Config) { c.Address = "127.0.0.1:7000"; c.Blob.Kind = BlobMemory },
		},
		{
			name: "env over file",
			file: "address = \"127.0.0.1:7000\"\nblock-size = \"4MiB\"\n",
			env:  map[string]string{"COFFER_ADDRESS": "127.0.0.1:7001"},
			want: func(c *Config) { c.Address = "127.0.0.1:7001"; c.Objects.BlockSize = 4 << 20 },
		},
		{
			name: "flag over env over file",
			file: "address = \"127.0.0.1:7000\"\nregion = \"eu-west-1\"\nlog-level = \"warn\"\n",
			env:  map[string]string{"COFFER_ADDRESS": "127.0.0.1:7001", "COFFER_REGION": "eu-north-1"},
			args: []string{"--address", "127.0.0.1:7002"},
			want: func(c *Config) {
				c.Address = "127.0.0.1:7002"
				c.S3.Region = "eu-north-1"
				c.Log.Level = slog.LevelWarn
			},
		},
		{
			name: "flag over default",
			args: []string{"-storage-path=/srv/coffer", "--pprof", "--pprof-port", "0", "--fsync=false", "--inline-threshold", "1048576"},
			want: func(c *Config) {
				c.StoragePath = "/srv/coffer"
				c.Pprof.Enabled = true
				c.Pprof.Port = 0
				c.Fsync = false
				c.Objects.InlineThreshold = 1 << 20
			},
		},
		{
			name: "dotted flag and env",
			env:  map[string]string{"COFFER_BLOB_KIND": "memory", "COFFER_GC_INTERVAL": "0"},
			args: []string{"--gc-grace", "90s"},
			want: func(c *Config) {
				c.Blob.Kind = BlobMemory
				c.Objects.GCInterval = -1
				c.Objects.GCGrace = 90 * time.Second
			},
		},
		{
			name: "postgres with the password from the environment",
			env:  map[string]string{"COFFER_META_KIND": "postgres", "COFFER_META_POSTGRES_URL": "postgres://u:s3cret@db/coffer"},
			args: []string{"--meta.postgres.max-conns", "4"},
			want: func(c *Config) {
				c.Meta.Kind, c.Meta.Postgres.URL, c.Meta.Postgres.MaxConns = MetaPostgres, "postgres://u:s3cret@db/coffer", 4
			},
		},
		{
			name: "console off in the file",
			file: "console-address = \"\"\n",
			want: func(c *Config) { c.ConsoleAddress = "" },
		},
		{
			name: "console off by flag",
			env:  map[string]string{"COFFER_CONSOLE_ADDRESS": "127.0.0.1:7000"},
			args: []string{"--console-address", ""},
			want: func(c *Config) { c.ConsoleAddress = "" },
		},
		{
			name: "empty env is unset",
			file: "region = \"eu-west-1\"\n",
			env:  map[string]string{"COFFER_REGION": ""},
			want: func(c *Config) { c.S3.Region = "eu-west-1" },
		},
		{
			name: "gateway mode from the environment",
			env: map[string]string{
				"COFFER_BLOB_KIND": "s3", "COFFER_BLOB_S3_ENDPOINT": "https://s3.example.com", "COFFER_BLOB_S3_BUCKET": "blocks",
				"COFFER_BLOB_S3_PREFIX": "node1/", "COFFER_BLOB_S3_ACCESS_KEY": "upak", "COFFER_BLOB_S3_SECRET_KEY": "upsecret",
				"COFFER_BLOB_S3_PATH_STYLE": "false", "COFFER_BLOB_S3_REGION": "eu-west-1", "COFFER_BLOB_S3_TIMEOUT": "3s",
			},
			want: func(c *Config) {
				c.Blob = Blob{Kind: BlobS3, FS: c.Blob.FS, S3: S3Upstream{Endpoint: "https://s3.example.com", Region: "eu-west-1", Bucket: "blocks",
					Prefix: "node1/", AccessKey: "upak", SecretKey: "upsecret", Timeout: 3 * time.Second}}
			},
		},
		{
			name: "every env",
			env: map[string]string{
				"COFFER_STORAGE_PATH": "/d", "COFFER_ADDRESS": ":1", "COFFER_REGION": "r1", "COFFER_DOMAIN": "s3.test",
				"COFFER_BLOB_KIND": "memory", "COFFER_FSYNC": "0", "COFFER_INLINE_THRESHOLD": "1KiB",
				"COFFER_BLOCK_SIZE": "1GiB", "COFFER_MAX_OBJECT_SIZE": "5TiB", "COFFER_GC_INTERVAL": "1s",
				"COFFER_GC_GRACE": "2s", "COFFER_SHUTDOWN_TIMEOUT": "0s", "COFFER_LOG_LEVEL": "ERROR",
				"COFFER_LOG_FORMAT": "json", "COFFER_ACCESS_LOG_SAMPLE": "1", "COFFER_PPROF": "true",
				"COFFER_PPROF_HOST": "::1", "COFFER_PPROF_PORT": "7070", "COFFER_CONSOLE_ADDRESS": "[::1]:7071",
				"COFFER_ROOT_ACCESS_KEY": "rootkey", "COFFER_ROOT_SECRET_KEY": "rootsecret",
				"COFFER_AUDIT_ENABLED": "false", "COFFER_AUDIT_PATH": "/a/audit.db", "COFFER_AUDIT_READ_SAMPLE": "0.5",
				"COFFER_AUDIT_RETENTION": "24h", "COFFER_LIFECYCLE_INTERVAL": "2s", "COFFER_LIFECYCLE_DAY": "10s",
				"COFFER_AUDIT_MAX_BYTES": "2MiB", "COFFER_AUDIT_MAX_EVENTS": "0", "COFFER_AUDIT_REFUSED_PER_SOURCE": "1",
				"COFFER_AUDIT_REFUSED_PER_MINUTE": "100000",
			},
			want: func(c *Config) {
				c.StoragePath, c.Address, c.S3.Region, c.S3.Domain = "/d", ":1", "r1", "s3.test"
				c.Blob.Kind, c.Fsync = BlobMemory, false
				c.Objects.InlineThreshold, c.Objects.BlockSize, c.Objects.MaxObjectSize = 1<<10, 1<<30, 5<<40
				c.Objects.GCInterval, c.Objects.GCGrace, c.ShutdownTimeout = time.Second, 2*time.Second, 0
				c.Log = Log{Level: slog.LevelError, Format: LogJSON, AccessLogSample: 1}
				c.Pprof = Pprof{Enabled: true, Host: "::1", Port: 7070}
				c.ConsoleAddress = "[::1]:7071"
				c.Root.RootAccessKey, c.Root.RootSecretKey = "rootkey", "rootsecret"
				c.Audit = Audit{Path: "/a/audit.db", ReadSample: 0.5, Retention: 24 * time.Hour,
					MaxBytes: 2 << 20, MaxEvents: 0, PerSource: 1, PerMinute: 100000}
				c.Lifecycle.Interval, c.Lifecycle.Day = 2*time.Second, 10*time.Second
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := map[string]string{}
			for k, v := range tc.env {
				e[k] = v
			}
			want := Default()
			tc.want(&want)
			if tc.file != "" {
				e["COFFER_CONFIG"] = writeFile(t, tc.file)
				want.File = e["COFFER_CONFIG"]
			}
			got, err := Load(tc.args, env(e))
			if err != nil {
				t.Fatalf("Load(%q) error = %v", tc.args, err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Load(%q) mismatch (-want +got):\n%s", tc.args, diff)
			}
		})
	}
}

// TestLoadConfigFlagOverEnv checks that --config names the file even when
// COFFER_CONFIG names another.
func TestLoadConfigFlagOverEnv(t *testing.T) {
	t.Parallel()
	fromEnv := writeFile(t, "region = \"env-file\"\n")
	fromFlag := writeFile(t, "region = \"flag-file\"\n")
	got, err := Load([]string{"--config", fromFlag}, env(map[string]string{"COFFER_CONFIG": fromEnv}))
	if err != nil {
		t.Fatal(err)
	}
	if got.S3.Region != "flag-file" || got.File != fromFlag {
		t.Errorf("Load: region %q from %q, want flag-file from %q", got.S3.Region, got.File, fromFlag)
	}
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		file    string
		env     map[string]string
		args    []string
		wantErr string // substring; the full message is in the failure output
	}{
		{name: "unknown flag", args: []string{"--nope"}, wantErr: "flag provided but not defined: -nope"},
		{name: "positional argument", args: []string{"--pprof", "serve"}, wantErr: `unexpected argument "serve"`},
		{name: "bad flag size", args: []string{"--block-size", "x"}, wantErr: `invalid value "x" for flag -block-size: invalid size "x"`},
		{name: "bad flag bool", args: []string{"--fsync=maybe"}, wantErr: `invalid boolean "maybe"`},
		{name: "bad flag enum", args: []string{"--blob.kind", "ftp"}, wantErr: `-blob.kind: invalid value "ftp": want one of fs, memory, s3`},
		{name: "bad env size", env: map[string]string{"COFFER_BLOCK_SIZE": "x"}, wantErr: `COFFER_BLOCK_SIZE: invalid size "x"`},
		{name: "bad env unit", env: map[string]string{"COFFER_MAX_OBJECT_SIZE": "5GB"}, wantErr: `COFFER_MAX_OBJECT_SIZE: invalid size "5GB": unknown unit "GB"`},
		{name: "bad env duration", env: map[string]string{"COFFER_GC_GRACE": "1 hour"}, wantErr: `COFFER_GC_GRACE: invalid duration "1 hour"`},
		{name: "negative env duration", env: map[string]string{"COFFER_SHUTDOWN_TIMEOUT": "-1s"}, wantErr: `COFFER_SHUTDOWN_TIMEOUT: invalid duration "-1s"`},
		{name: "bad env level", env: map[string]string{"COFFER_LOG_LEVEL": "trace"}, wantErr: `COFFER_LOG_LEVEL: invalid log level "trace"`},
		{name: "bad env port", env: map[string]string{"COFFER_PPROF_PORT": "70000"}, wantErr: `COFFER_PPROF_PORT: invalid port "70000"`},
		{name: "bad env fraction", env: map[string]string{"COFFER_ACCESS_LOG_SAMPLE": "2"}, wantErr: `COFFER_ACCESS_LOG_SAMPLE: invalid fraction "2"`},
		{name: "bad env integer", env: map[string]string{"COFFER_AUDIT_MAX_EVENTS": "1e6"}, wantErr: `COFFER_AUDIT_MAX_EVENTS: invalid integer "1e6"`},
		{name: "negative flag integer", args: []string{"--audit.refused.per-source", "-1"}, wantErr: `invalid integer "-1"`},
		{name: "bad file integer", file: "[audit.refused]\nper-minute = \"10\"\n", wantErr: `audit.refused.per-minute: want an integer, got string`},
		{name: "NaN fraction", env: map[string]string{"COFFER_ACCESS_LOG_SAMPLE": "NaN"}, wantErr: `invalid fraction "NaN"`},
		{name: "bad file size", file: "block-size = \"x\"\n", wantErr: `block-size: invalid size "x"`},
		{name: "bad file type", file: "block-size = true\n", wantErr: `block-size: want an integer or a string such as "8MiB", got boolean`},
		{name: "unknown file key", file: "foo = 1\n", wantErr: `unknown key "foo"`},
		{name: "missing file", env: map[string]string{"COFFER_CONFIG": "/nonexistent/coffer.toml"}, wantErr: "read config file: open /nonexistent/coffer.toml"},
		{name: "validate after merge", env: map[string]string{"COFFER_INLINE_THRESHOLD": "1MiB"}, args: []string{"--block-size", "512KiB"},
			wantErr: "inline-threshold (from COFFER_INLINE_THRESHOLD): 1MiB is larger than block-size 512KiB"},
		{name: "validate names flag", args: []string{"--address", "nohost"}, wantErr: `address (from flag --address): invalid address "nohost"`},
		{name: "bad master key", env: map[string]string{"COFFER_MASTER_KEY": "c2hvcnQ="},
			wantErr: "COFFER_MASTER_KEY: a master key is 32 random bytes"},
		{name: "only one root key", env: map[string]string{"COFFER_ROOT_ACCESS_KEY": "rootkey"},
			wantErr: "COFFER_ROOT_ACCESS_KEY and COFFER_ROOT_SECRET_KEY must be set together"},
		{name: "postgres without url", args: []string{"--meta.kind", "postgres"},
			wantErr: "meta.postgres.url: required with meta.kind postgres"},
		{name: "password in url flag", args: []string{"--meta.kind", "postgres", "--meta.postgres.url", "postgres://u:s3cret@db/coffer"},
			wantErr: "meta.postgres.url (from flag --meta.postgres.url) holds a password: give it only through COFFER_META_POSTGRES_URL"},
		{name: "gc grace under a second with postgres", args: []string{"--meta.kind", "postgres", "--meta.postgres.url", "host=db", "--gc-grace", "500ms"},
			wantErr: "gc-grace (from flag --gc-grace): must be at least 1s with meta.kind postgres"},
		{name: "memory blocks with postgres", args: []string{"--meta.kind", "postgres", "--meta.postgres.url", "host=db", "--blob.kind", "memory"},
			wantErr: "blob.kind (from flag --blob.kind): memory keeps blocks in this process only: not with meta.kind postgres"},
		{name: "audit file with postgres", args: []string{"--meta.kind", "postgres", "--meta.postgres.url", "host=db", "--audit.path", "/var/log/audit.db"},
			wantErr: "audit.path (from flag --audit.path): with meta.kind postgres the audit log is the cluster's, in PostgreSQL"},
		{name: "password in url file", file: "[meta]\nkind = \"postgres\"\n[meta.postgres]\nurl = \"host=db password = s3cret\"\n",
			wantErr: "holds a password"},
		// sslpassword unlocks the client's TLS key: as secret as password.
		{name: "sslpassword in url flag", args: []string{"--meta.kind", "postgres", "--meta.postgres.url", "postgres://u@db/coffer?sslmode=verify-full&sslpassword=s3cret"},
			wantErr: "meta.postgres.url (from flag --meta.postgres.url) holds a password"},
		{name: "sslpassword in url file", file: "[meta]\nkind = \"postgres\"\n[meta.postgres]\nurl = \"host=db sslkey=/k sslpassword=s3cret\"\n",
			wantErr: "holds a password"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := map[string]string{}
			for k, v := range tc.env {
				e[k] = v
			}
			if tc.file != "" {
				e["COFFER_CONFIG"] = writeFile(t, tc.file)
			}
			_, err := Load(tc.args, env(e))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Load(%q) error = %v, want it to contain %q", tc.args, err, tc.wantErr)
			}
			if tc.file != "" && !strings.Contains(err.Error(), e["COFFER_CONFIG"]) {
				t.Errorf("Load error = %v, want it to name the file %s", err, e["COFFER_CONFIG"])
			}
		})
	}
}

func TestLoadHelp(t *testing.T) {
	t.Parallel()
	for _, arg := range []string{"-h", "--help", "-help"} {
		if _, err := Load([]string{arg}, env(nil)); !errors.Is(err, ErrHelp) {
			t.Errorf("Load(%q) error = %v, want ErrHelp", arg, err)
		}
	}
}

// TestLoadTestdata loads every file in testdata/: each must either load to
// the settings listed here or fail with the error listed here.
func TestLoadTestdata(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		want    func(c *Config)
		wantErr string
	}{
		"full.toml": {want: func(c *Config) {
			c.StoragePath, c.Address, c.S3.Region, c.S3.Domain = "/var/lib/coffer", "0.0.0.0:9000", "eu-west-1", "s3.example.com"
			c.Fsync, c.Blob.Kind = false, BlobMemory
			c.Objects.InlineThreshold, c.Objects.BlockSize, c.Objects.MaxObjectSize = 64<<10, 16<<20, 1<<30
			c.Objects.GCInterval, c.Objects.GCGrace, c.ShutdownTimeout = 5*time.Minute, 2*time.Hour, time.Minute
			c.Log = Log{Level: slog.LevelDebug, Format: LogJSON, AccessLogSample: 0.25}
			c.Pprof = Pprof{Enabled: true, Host: "0.0.0.0", Port: 6061}
			c.Lifecycle.Interval, c.Lifecycle.Day = -1, 10*time.Second
			c.Audit = Audit{Path: "/var/lib/coffer-audit/audit.db", ReadSample: 0.01, Retention: 720 * time.Hour,
				MaxBytes: 256 << 20, MaxEvents: 1000000, PerSource: 3, PerMinute: 200}
		}},
		"dotted.toml":             {want: func(c *Config) { c.Blob.Kind = BlobMemory; c.Objects.BlockSize = 4 << 20 }},
		"inline_table.toml":       {want: func(c *Config) { c.Blob.Kind = BlobMemory }},
		"gc_disabled.toml":        {want: func(c *Config) { c.Objects.GCInterval = -1 }},
		"unknown_key.toml":        {wantErr: `unknown key "foo"`},
		"unknown_table_key.toml":  {wantErr: `unknown key "blob.root"`},
		"unknown_inline_key.toml": {wantErr: `unknown key "blob.root"`},
		"bad_size.toml":           {wantErr: `block-size: invalid size "8MB": unknown unit "MB"`},
		"wrong_type.toml":         {wantErr: `fsync: want a boolean, got string`},
		"config_key.toml":         {wantErr: `unknown key "config"`},
		"syntax_error.toml":       {wantErr: `syntax_error.toml:2: `},
		"out_of_range.toml":       {wantErr: "inline-threshold (from testdata/out_of_range.toml): 2MiB is larger than the maximum 1MiB"},
	}
	files, err := filepath.Glob("testdata/*.toml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(cases) {
		t.Errorf("testdata has %d .toml files, the table %d: keep them in step", len(files), len(cases))
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tc, ok := cases[name]
			if !ok {
				t.Fatalf("no case for %s", f)
			}
			got, err := Load([]string{"--config", f}, env(nil))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), f) {
					t.Fatalf("Load(%s) error = %v, want it to name the file and contain %q", f, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load(%s) error = %v", f, err)
			}
			want := Default()
			tc.want(&want)
			want.File = f
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Load(%s) mismatch (-want +got):\n%s", f, diff)
			}
		})
	}
}

func TestEnvNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ flag, want string }{
		{"storage-path", "COFFER_STORAGE_PATH"},
		{"blob.kind", "COFFER_BLOB_KIND"},
		{"pprof-port", "COFFER_PPROF_PORT"},
		{"config", "COFFER_CONFIG"},
	} {
		if got := envName(tc.flag); got != tc.want {
			t.Errorf("envName(%q) = %q, want %q", tc.flag, got, tc.want)
		}
	}
	// Derived names must not collide with each other or with the
	// environment-only variables.
	seen := map[string]string{EnvRootAccessKey: "(root)", EnvRootSecretKey: "(root)"}
	var c Config
	for _, s := range settings(&c) {
		e := envName(s.name)
		if other, ok := seen[e]; ok {
			t.Errorf("flags %q and %q share the variable %s", s.name, other, e)
		}
		seen[e] = s.name
		if s.usage == "" || strings.HasSuffix(s.usage, ".") {
			t.Errorf("flag %q: usage %q must be one line without a final period", s.name, s.usage)
		}
	}
}

func TestPrintUsage(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	PrintUsage(&b)
	var c Config
	for _, s := range settings(&c) {
		for _, want := range []string{"-" + s.name + " ", envName(s.name), s.usage} {
			if !strings.Contains(b.String(), want) {
				t.Errorf("PrintUsage output lacks %q", want)
			}
		}
	}
}
