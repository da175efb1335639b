package server

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/coffer-s3/coffer/internal/iam"
)

func TestRootCredentialsGeneratedOnce(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Root = iam.Config{}
	var out bytes.Buffer
	var logs syncBuffer
	s, err := New(cfg, testLogger(&logs), &out)
	if err != nil {
		t.Fatal(err)
	}
	ak, sk := s.RootCredentials()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[A-Z0-9]{20}$`).MatchString(ak) {
		t.Errorf("generated access key %q, want 20 characters of [A-Z0-9]", ak)
	}
	if !regexp.MustCompile(`^[A-Za-z0-9+/]{40}$`).MatchString(sk) {
		t.Errorf("generated secret %q, want 40 base64 characters", sk)
	}
	if !strings.Contains(out.String(), ak) || !strings.Contains(out.String(), sk) {
		t.Errorf("first start printed %q, want both keys", out.String())
	}
	if strings.Contains(logs.String(), sk) {
		t.Errorf("the secret reached the log:\n%s", logs.String())
	}
	path := filepath.Join(cfg.StoragePath, credentialsFile)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := st.Mode().Perm(); perm != 0o600 {
		t.Errorf("%s has mode %#o, want 0600", path, perm)
	}
	entries, err := os.ReadDir(cfg.StoragePath)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}

	// Second start: the same credentials, read from the file, printed nowhere.
	out.Reset()
	s, err = New(cfg, testLogger(&logs), &out)
	if err != nil {
		t.Fatal(err)
	}
	ak2, sk2 := s.RootCredentials()
	s.Close()
	if ak2 != ak || sk2 != sk {
		t.Errorf("second start credentials %q/%q, want the stored %q/%q", ak2, sk2, ak, sk)
	}
	if out.Len() != 0 {
		t.Errorf("second start printed %q, want nothing", out.String())
	}
}

func TestRootCredentialsFromEnvWin(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	// A stored file from an earlier start does not override the environment.
	if err := writeCredentials(filepath.Join(cfg.StoragePath, credentialsFile), iam.Config{RootAccessKey: "STOREDKEY", RootSecretKey: "stored-secret"}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	s, err := New(cfg, testLogger(io.Discard), &out)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if ak, sk := s.RootCredentials(); ak != cfg.Root.RootAccessKey || sk != cfg.Root.RootSecretKey {
		t.Errorf("RootCredentials() = %q/%q, want the environment's %q/%q", ak, sk, cfg.Root.RootAccessKey, cfg.Root.RootSecretKey)
	}
	if out.Len() != 0 {
		t.Errorf("printed %q with credentials from the environment", out.String())
	}
}

func TestRootCredentialsFileNotWrittenWithEnv(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	s, err := New(cfg, testLogger(io.Discard), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := os.Stat(filepath.Join(cfg.StoragePath, credentialsFile)); !os.IsNotExist(err) {
		t.Errorf("credentials file exists with credentials from the environment (stat: %v)", err)
	}
}

func TestRootCredentialsFileProblems(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		content string
		mode    os.FileMode
		wantErr string
	}{
		{name: "group readable", content: `{"access_key_id":"AK","secret_access_key":"secretsecret"}`, mode: 0o640, wantErr: "has mode 0640, open to group or others: refusing to start"},
		{name: "world readable", content: `{"access_key_id":"AK","secret_access_key":"secretsecret"}`, mode: 0o604, wantErr: "has mode 0604"},
		{name: "not json", content: "AK\nsecret\n", mode: 0o600, wantErr: "read root credentials file"},
		{name: "missing secret", content: `{"access_key_id":"AK"}`, mode: 0o600, wantErr: "access_key_id and secret_access_key are required"},
		{name: "unknown field", content: `{"access_key_id":"AK","secret_access_key":"s","extra":1}`, mode: 0o600, wantErr: `unknown field "extra"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig(t)
			cfg.Root = iam.Config{}
			path := filepath.Join(cfg.StoragePath, credentialsFile)
			if err := os.WriteFile(path, []byte(tc.content), tc.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, tc.mode); err != nil { // defeat the umask
				t.Fatal(err)
			}
			s, err := New(cfg, testLogger(io.Discard), io.Discard)
			if err == nil {
				s.Close()
				t.Fatal("New succeeded")
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("New error = %v, want it to contain %q", err, tc.wantErr)
			}
			// The storage was released: nothing holds the lock.
			if _, err := GC(t.Context(), cfg, testLogger(io.Discard), 1); err != nil && strings.Contains(err.Error(), "locked") {
				t.Errorf("storage still locked after a failed New: %v", err)
			}
		})
	}
}

func TestGenerateCredentialsDistinct(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 100 {
		c, err := generateCredentials()
		if err != nil {
			t.Fatal(err)
		}
		if seen[c.RootAccessKey] || seen[c.RootSecretKey] {
			t.Fatalf("generateCredentials repeated a value: %+v", c)
		}
		seen[c.RootAccessKey], seen[c.RootSecretKey] = true, true
	}
}

func TestWriteCredentialsRefusesToReplace(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), credentialsFile)
	if err := writeCredentials(path, iam.Config{RootAccessKey: "FIRST", RootSecretKey: "first-secret"}); err != nil {
		t.Fatal(err)
	}
	if err := writeCredentials(path, iam.Config{RootAccessKey: "SECOND", RootSecretKey: "second-secret"}); err == nil {
		t.Fatal("writeCredentials replaced an existing file")
	}
	got, err := readCredentials(path)
	if err != nil || got.RootAccessKey != "FIRST" {
		t.Errorf("readCredentials = %+v, %v; want the first credentials", got, err)
	}
}

// TestRootCredentialsShared: with a shared metadata store no credentials
// are generated, and the refusal says what to set; the environment's or
// an existing file's are used.
func TestRootCredentialsShared(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var out bytes.Buffer
	_, err := rootCredentials(dir, iam.Config{}, &out, true)
	if err == nil {
		t.Fatal("rootCredentials(shared, none given) succeeded, want a refusal")
	}
	for _, want := range []string{"no root credentials", "COFFER_ROOT_ACCESS_KEY", "COFFER_ROOT_SECRET_KEY", "every node", filepath.Join(dir, credentialsFile)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, credentialsFile)); !os.IsNotExist(err) {
		t.Errorf("a credentials file was generated (stat: %v)", err)
	}
	if out.Len() != 0 {
		t.Errorf("printed %q while refusing", out.String())
	}
	env := iam.Config{RootAccessKey: "ENVKEY", RootSecretKey: "env-secret"}
	if got, err := rootCredentials(dir, env, &out, true); err != nil || got.RootAccessKey != env.RootAccessKey || got.RootSecretKey != env.RootSecretKey {
		t.Errorf("rootCredentials(shared, env) = %+v, %v; want the environment's", got, err)
	}
	file := iam.Config{RootAccessKey: "FILEKEY", RootSecretKey: "file-secret"}
	if err := writeCredentials(filepath.Join(dir, credentialsFile), file); err != nil {
		t.Fatal(err)
	}
	if got, err := rootCredentials(dir, iam.Config{}, &out, true); err != nil || got.RootAccessKey != file.RootAccessKey || got.RootSecretKey != file.RootSecretKey {
		t.Errorf("rootCredentials(shared, file) = %+v, %v; want the file's", got, err)
	}
}
