package meta

import (
	"bytes"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPebblePrivate checks that a store opened in a directory others may
// read keeps every file and directory to its owner: the metadata holds
// console password hashes, sealed secrets and inline object data. Under
// the usual umask (022) Pebble's own files would be 0644; a store made
// before (or by hand) with open modes is tightened at open, and says so.
func TestPebblePrivate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		setup    func(t *testing.T, dir string)
		wantWarn bool
	}{
		{name: "new directory", setup: func(*testing.T, string) {}},
		{name: "existing open directory", wantWarn: true, setup: func(t *testing.T, dir string) {
			// As an older Coffer left it: directory 0755, files 0644.
			mustDo(t, os.Mkdir(dir, 0o755))
			mustDo(t, os.Chmod(dir, 0o755)) // whatever the umask
			old := openAt(t, dir)
			mustCreateBucket(t, old, "b")
			mustDo(t, old.Close())
			mustDo(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				return os.Chmod(p, 0o644)
			}))
			mustDo(t, os.Mkdir(filepath.Join(dir, "archive"), 0o755))
			mustDo(t, os.Chmod(filepath.Join(dir, "archive"), 0o755))
			mustDo(t, os.WriteFile(filepath.Join(dir, "archive", "old.sst"), nil, 0o644))
			mustDo(t, os.Chmod(filepath.Join(dir, "archive", "old.sst"), 0o644))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			parent := t.TempDir()
			mustDo(t, os.Chmod(parent, 0o755)) // the storage path, open to all
			dir := filepath.Join(parent, "meta")
			tc.setup(t, dir)
			var logs bytes.Buffer
			db, err := Open(Config{Dir: dir, Sync: true, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			// Write, flush (an sstable, a new log and manifest) and
			// reopen (the log recycled, OPTIONS rewritten).
			mustCreateBucket(t, db, "private")
			mustDo(t, db.kv.(*pebbleKV).db.Flush())
			mustDo(t, db.Close())
			db = openAt(t, dir)
			mustCreateBucket(t, db, "again")
			mustDo(t, db.kv.(*pebbleKV).db.Flush())
			n := 0
			mustDo(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				fi, err := d.Info()
				if err != nil {
					return err
				}
				n++
				if perm := fi.Mode().Perm(); perm&0o077 != 0 {
					t.Errorf("%s has mode %#o: open to group or others", p, perm)
				}
				return nil
			}))
			if n < 5 {
				t.Errorf("walked %d entries: the store made fewer files than expected", n)
			}
			warned := strings.Contains(logs.String(), "metadata was open to group or others")
			if warned != tc.wantWarn {
				t.Errorf("warned %v, want %v; log:\n%s", warned, tc.wantWarn, logs.String())
			}
		})
	}
}

func mustDo(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
