package server

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// TestMigratedSourceRefused: a storage path marked as the source of a
// migration, in progress or done, is refused by New (coffer serve) and
// offline GC, with the way out; AbandonMigration removes the mark.
func TestMigratedSourceRefused(t *testing.T) {
	ctx := t.Context()
	for _, tc := range []struct {
		name string
		mark meta.MigrationMark
		want string
	}{
		{name: "in progress", mark: meta.MigrationMark{Target: "https://s3.example.com/blocks/c1/", Started: time.Now()}, want: "is being migrated"},
		{name: "done", mark: meta.MigrationMark{Target: "https://s3.example.com/blocks/c1/", Started: time.Now(), Done: true}, want: "was migrated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			db, err := meta.Open(meta.Config{Dir: filepath.Join(cfg.StoragePath, metaDir), Sync: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := db.SetMigrationMark(ctx, tc.mark); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			want := []string{tc.want, "blocks to https://s3.example.com/blocks/c1/", "coffer admin migrate --abandon --from-storage-path " + cfg.StoragePath}
			_, err = New(cfg, testLogger(io.Discard), io.Discard)
			for _, w := range want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("New on a migration's source: %v, want an error saying %q", err, w)
				}
			}
			if _, err := GC(ctx, cfg, testLogger(io.Discard), time.Hour); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("GC on a migration's source: %v, want a refusal", err)
			}

			mk, found, err := AbandonMigration(ctx, cfg.StoragePath, testLogger(io.Discard))
			if err != nil || !found || mk.Done != tc.mark.Done || mk.Target != tc.mark.Target {
				t.Fatalf("AbandonMigration = %+v, %v, %v; want the mark", mk, found, err)
			}
			if _, found, err := AbandonMigration(ctx, cfg.StoragePath, testLogger(io.Discard)); err != nil || found {
				t.Errorf("AbandonMigration again = %v, %v; want nothing found", found, err)
			}
			s, stop := start(t, cfg, testLogger(io.Discard))
			if code, _ := get(t, "http://"+s.Addr()+"/"); code != http.StatusForbidden {
				t.Errorf("GET / after the mark's removal: %d, want 403 (served)", code)
			}
			if err := stop(); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestMigrationTargetRefused: a metadata store holding a migration that
// is not done (copying, verifying, failed) is refused by New and offline
// GC, with the ways out; once done it is served. A node started on a
// failed migration's target served a partial copy.
func TestMigrationTargetRefused(t *testing.T) {
	ctx := t.Context()
	for _, tc := range []struct {
		phase string
		serve bool
	}{
		{phase: meta.MigrationCopying},
		{phase: meta.MigrationVerifying},
		{phase: meta.MigrationFailed},
		{phase: meta.MigrationDone, serve: true},
	} {
		t.Run(tc.phase, func(t *testing.T) {
			cfg := testConfig(t)
			db, err := meta.Open(meta.Config{Dir: filepath.Join(cfg.StoragePath, metaDir), Sync: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := db.SaveMigration(ctx, &meta.Migration{Source: "/var/lib/coffer", Phase: tc.phase, Started: time.Now()}); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if tc.serve {
				_, stop := start(t, cfg, testLogger(io.Discard))
				if err := stop(); err != nil {
					t.Error(err)
				}
				return
			}
			_, err = New(cfg, testLogger(io.Discard), io.Discard)
			for _, w := range []string{"target of a migration from /var/lib/coffer", "it is " + tc.phase, "run the same coffer admin migrate again", "--accept-mismatches", "drop the database"} {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("New on the target of a migration %s: %v, want an error saying %q", tc.phase, err, w)
				}
			}
			if _, err := GC(ctx, cfg, testLogger(io.Discard), time.Hour); err == nil || !strings.Contains(err.Error(), "not done") {
				t.Errorf("GC on the target of a migration %s: %v, want a refusal", tc.phase, err)
			}
		})
	}
}
