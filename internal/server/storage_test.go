package server

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coffer-s3/coffer/internal/blob"
	"github.com/coffer-s3/coffer/internal/config"
	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/sigv4"
)

func TestGCOffline(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		mod     func(c *config.Config)
		wantErr string
	}{
		{name: "empty storage", mod: func(c *config.Config) {}},
		{name: "memory blobs", mod: func(c *config.Config) { c.Blob.Kind = config.BlobMemory }, wantErr: "blob.kind is memory"},
		{name: "no storage", mod: func(c *config.Config) { c.StoragePath = filepath.Join(c.StoragePath, "missing") }, wantErr: "storage path: stat"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig(t)
			tc.mod(&cfg)
			stats, err := GC(t.Context(), cfg, testLogger(io.Discard), time.Hour)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("GC = %+v, %v; want error containing %q", stats, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("GC = %v", err)
			}
			if stats.Deleted != 0 {
				t.Errorf("GC of empty storage deleted %d blobs", stats.Deleted)
			}
		})
	}
}

// TestGCAfterServer checks that GC can open storage a server has released.
func TestGCAfterServer(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	_, stop := start(t, cfg, testLogger(io.Discard))
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := GC(t.Context(), cfg, testLogger(io.Discard), time.Hour); err != nil {
		t.Fatalf("GC after the server stopped: %v", err)
	}
}

func TestKeyring(t *testing.T) {
	t.Parallel()
	m, err := iam.New(iam.Config{RootAccessKey: "ROOTKEY", RootSecretKey: "root-secret"})
	if err != nil {
		t.Fatal(err)
	}
	k := keyring{m}
	ctx := context.Background()
	if sk, err := k.SecretKey(ctx, "ROOTKEY"); err != nil || sk != "root-secret" {
		t.Errorf("SecretKey(ROOTKEY) = %q, %v; want the root secret", sk, err)
	}
	if sk, err := k.SecretKey(ctx, "OTHER"); !errors.Is(err, sigv4.ErrUnknownKey) || sk != "" {
		t.Errorf("SecretKey(OTHER) = %q, %v; want sigv4.ErrUnknownKey", sk, err)
	}
}

// TestOpenStoragePathWarning: a storage path that group or others may
// enter is reported at start (it is made 0700 only when created), and its
// metadata is private all the same.
func TestOpenStoragePathWarning(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		mode     os.FileMode
		wantWarn bool
	}{
		{name: "private", mode: 0o700},
		{name: "open", mode: 0o755, wantWarn: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig(t)
			if err := os.Chmod(cfg.StoragePath, tc.mode); err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			st, err := openStorage(cfg, testLogger(&logs), nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.close(); err != nil {
				t.Fatal(err)
			}
			warned := strings.Contains(logs.String(), "storage path is open to group or others")
			if warned != tc.wantWarn {
				t.Errorf("warned %v, want %v; log:\n%s", warned, tc.wantWarn, logs.String())
			}
			fi, err := os.Stat(filepath.Join(cfg.StoragePath, metaDir))
			if err != nil {
				t.Fatal(err)
			}
			if perm := fi.Mode().Perm(); perm != 0o700 {
				t.Errorf("metadata directory has mode %#o, want 0700", perm)
			}
		})
	}
}

// The blob directory of a storage path is claimed for the metadata store
// that first opened it: a store that replaced it (the meta directory
// removed while the blocks stayed) is refused, before its garbage
// collection could delete blocks it does not know.
func TestStorageClaim(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	st, err := openStorage(cfg, testLogger(io.Discard), nil)
	if err != nil {
		t.Fatal(err)
	}
	id := st.db.StoreID()
	if err := st.close(); err != nil {
		t.Fatal(err)
	}
	claim, err := os.ReadFile(filepath.Join(cfg.StoragePath, blobDir, blob.ClaimName))
	if err != nil || !strings.Contains(string(claim), id) {
		t.Fatalf("claim file = %q, %v; want one naming store %s", claim, err, id)
	}
	// Reopening the same store is fine.
	st, err = openStorage(cfg, testLogger(io.Discard), nil)
	if err != nil {
		t.Fatalf("reopen = %v", err)
	}
	if err := st.close(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(cfg.StoragePath, metaDir)); err != nil {
		t.Fatal(err)
	}
	if st, err := openStorage(cfg, testLogger(io.Discard), nil); !errors.Is(err, blob.ErrClaimed) {
		if err == nil {
			st.close()
		}
		t.Fatalf("open with a new metadata store = %v, want ErrClaimed", err)
	} else if !strings.Contains(err.Error(), "claim the blob directory") || !strings.Contains(err.Error(), id) {
		t.Errorf("error %q does not say what was claimed by whom", err)
	}
}
