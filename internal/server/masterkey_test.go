package server

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coffer-s3/coffer/internal/iam"
)

func TestMasterKeyGeneratedOnce(t *testing.T) {
	dir := t.TempDir()
	k1, err := masterKey(dir, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(k1) != iam.MasterKeySize || bytes.Equal(k1, make([]byte, iam.MasterKeySize)) {
		t.Fatalf("generated key %x", k1)
	}
	path := filepath.Join(dir, masterKeyFile)
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, %v", st, err)
	}
	k2, err := masterKey(dir, nil, false)
	if err != nil || !bytes.Equal(k1, k2) {
		t.Fatalf("second start read %x, %v; want %x", k2, err, k1)
	}
	env := bytes.Repeat([]byte{9}, iam.MasterKeySize)
	if k, err := masterKey(dir, env, false); err != nil || !bytes.Equal(k, env) {
		t.Fatalf("env key not used: %x, %v", k, err)
	}
}

func TestMasterKeyFileProblems(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		mode          os.FileMode
		want          string
	}{
		{"open to others", iam.FormatMasterKey(make([]byte, 32)), 0o644, "refusing to start"},
		{"garbage", "not a key", 0o600, "a master key is 32 random bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, masterKeyFile)
			if err := os.WriteFile(path, []byte(tc.content), tc.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, tc.mode); err != nil {
				t.Fatal(err)
			}
			if _, err := masterKey(dir, nil, false); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("masterKey = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestMasterKeyShared: with a shared metadata store no key is generated;
// the environment's or an existing file's is used.
func TestMasterKeyShared(t *testing.T) {
	dir := t.TempDir()
	if _, err := masterKey(dir, nil, true); err == nil || !strings.Contains(err.Error(), "no master key") {
		t.Fatalf("masterKey(shared, no key) = %v, want a refusal", err)
	}
	if _, err := os.Stat(filepath.Join(dir, masterKeyFile)); !os.IsNotExist(err) {
		t.Fatalf("a key file was generated: %v", err)
	}
	env := bytes.Repeat([]byte{9}, iam.MasterKeySize)
	if k, err := masterKey(dir, env, true); err != nil || !bytes.Equal(k, env) {
		t.Fatalf("env key not used: %x, %v", k, err)
	}
	file := bytes.Repeat([]byte{4}, iam.MasterKeySize)
	if err := os.WriteFile(filepath.Join(dir, masterKeyFile), []byte(iam.FormatMasterKey(file)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if k, err := masterKey(dir, nil, true); err != nil || !bytes.Equal(k, file) {
		t.Fatalf("key file not used: %x, %v", k, err)
	}
}
