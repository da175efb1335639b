package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/coffer-s3/coffer/internal/config"
)

func TestParseS3Target(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     config.S3Upstream
		wantErr  bool
	}{
		{name: "prefix", in: "http://127.0.0.1:9000/blocks/node1/", want: config.S3Upstream{Endpoint: "http://127.0.0.1:9000", Bucket: "blocks", Prefix: "node1/"}},
		{name: "prefix gets its slash", in: "https://s3.example.com/blocks/a/b", want: config.S3Upstream{Endpoint: "https://s3.example.com", Bucket: "blocks", Prefix: "a/b/"}},
		{name: "no prefix", in: "https://s3.example.com/blocks", want: config.S3Upstream{Endpoint: "https://s3.example.com", Bucket: "blocks"}},
		{name: "no bucket", in: "https://s3.example.com/", wantErr: true},
		{name: "not http", in: "s3://blocks/x/", wantErr: true},
		{name: "credentials", in: "https://AKIA:secret@s3.example.com/blocks/", wantErr: true},
		{name: "query", in: "https://s3.example.com/blocks/?x=1", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseS3Target(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("parseS3Target(%q) error = %v, want error %v", tc.in, err, tc.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("the error quotes the credentials: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("parseS3Target(%q) mismatch (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

// TestAdminMigrateRefuses: secrets on the command line and missing
// settings are usage errors that never echo a secret.
func TestAdminMigrateRefuses(t *testing.T) {
	env := map[string]string{envS3AccessKey: "AK", envS3SecretKey: "SK"}
	base := []string{"migrate", "--from-storage-path", t.TempDir(), "--to-s3", "http://127.0.0.1:1/b/p/"}
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{name: "password in the URL", args: append(base, "--to-postgres", "postgres://u:hunter2@db/coffer"), env: env, want: "holds a password"},
		{name: "password pair", args: append(base, "--to-postgres", "host=db password=hunter2"), env: env, want: "holds a password"},
		{name: "no bucket credentials", args: append(base, "--to-postgres", "postgres://u@db/coffer"), want: envS3AccessKey},
		{name: "no target database", args: base, env: env, want: "--to-postgres is required"},
		{name: "abandon without a source", args: []string{"migrate", "--abandon"}, want: "--from-storage-path is required"},
		{name: "bad target bucket", args: []string{"migrate", "--from-storage-path", "x", "--to-postgres", "postgres://u@db/c", "--to-s3", "blocks"}, env: env, want: "--to-s3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := runAdmin(t.Context(), tc.args, strings.NewReader(""), &out, &errb, func(k string) string { return tc.env[k] })
			if code != exitUsage || !strings.Contains(errb.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want %d saying %q", code, errb.String(), exitUsage, tc.want)
			}
			if strings.Contains(errb.String()+out.String(), "hunter2") {
				t.Errorf("the output echoes the password: %q", errb.String())
			}
		})
	}
}

// TestAdminMigrateSecretFileMode: a --to-s3-secret-key-file open to group
// or others is used with a warning naming it and its mode, never the
// secret; a private one gives none. The migration itself then fails
// (nothing to migrate, no database), which does not matter here.
func TestAdminMigrateSecretFileMode(t *testing.T) {
	const secret = "bucket-secret-never-printed"
	for _, tc := range []struct {
		name     string
		mode     os.FileMode
		wantWarn bool
	}{
		{name: "private", mode: 0o600},
		{name: "world readable", mode: 0o644, wantWarn: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s3-secret")
			if err := os.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, tc.mode); err != nil {
				t.Fatal(err)
			}
			args := []string{"migrate", "--from-storage-path", t.TempDir(), "--to-s3", "http://127.0.0.1:1/b/p/",
				"--to-postgres", "postgres://u@127.0.0.1:1/coffer?connect_timeout=5", "--to-s3-secret-key-file", path}
			env := map[string]string{envS3AccessKey: "AK"}
			var out, errb bytes.Buffer
			code := runAdmin(t.Context(), args, strings.NewReader(""), &out, &errb, func(k string) string { return env[k] })
			if code == exitUsage {
				t.Fatalf("exit %d (usage): %s", code, errb.String())
			}
			want := fmt.Sprintf("warning: --to-s3-secret-key-file %s has mode %#o, open to group or others: run chmod 600 %s", path, tc.mode, path)
			if warned := strings.Contains(errb.String(), want); warned != tc.wantWarn {
				t.Errorf("stderr %q: warned %v, want %v (%q)", errb.String(), warned, tc.wantWarn, want)
			}
			if strings.Contains(errb.String()+out.String(), secret) {
				t.Errorf("the output holds the secret: %q", errb.String())
			}
		})
	}
}
