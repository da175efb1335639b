package server

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/meta"
)

// TestMigrateMasterKey: the key that opens the source's IAM state is
// found in the environment or the storage path, and a key that does not
// open it is refused before anything is copied.
func TestMigrateMasterKey(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	fileKey := bytes.Repeat([]byte{1}, iam.MasterKeySize)
	db, err := meta.Open(meta.Config{Dir: filepath.Join(dir, metaDir), Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if k, from, err := migrateMasterKey(ctx, dir, nil, db); k != nil || from != "" || err != nil {
		t.Fatalf("without IAM state: %v, %q, %v; want no key needed", k, from, err)
	}
	m, err := iam.New(iam.Config{RootAccessKey: "ROOTKEY", RootSecretKey: strings.Repeat("s", 40), MasterKey: fileKey, Store: iamStore{db}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.CreateUser(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := migrateMasterKey(ctx, dir, nil, db); err == nil || !strings.Contains(err.Error(), "neither in COFFER_MASTER_KEY nor in") {
		t.Errorf("no key anywhere: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, masterKeyFile), []byte(iam.FormatMasterKey(fileKey)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	k, from, err := migrateMasterKey(ctx, dir, nil, db)
	if err != nil || !bytes.Equal(k, fileKey) || from != filepath.Join(dir, masterKeyFile) {
		t.Errorf("key from the file: %x, %q, %v", k, from, err)
	}
	other := bytes.Repeat([]byte{2}, iam.MasterKeySize)
	if _, _, err := migrateMasterKey(ctx, dir, other, db); err == nil || !strings.Contains(err.Error(), "from COFFER_MASTER_KEY does not open") {
		t.Errorf("another key in the environment: %v, want a refusal", err)
	}
	if k, from, err := migrateMasterKey(ctx, dir, fileKey, db); err != nil || from != "COFFER_MASTER_KEY" || !bytes.Equal(k, fileKey) {
		t.Errorf("the right key in the environment: %x, %q, %v", k, from, err)
	}
}
