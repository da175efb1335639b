package server

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/coffer-s3/coffer/internal/config"
	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/secretfile"
)

// masterKeyFile is the name, under the storage path, of the generated
// master key.
const masterKeyFile = "master-key"

// masterKey returns the key that seals IAM secrets at rest: env when set
// (COFFER_MASTER_KEY, decoded by config), else the key stored in dir, else
// a new random one, which it stores in dir (mode 0600) — unless the
// metadata store is shared (meta.kind postgres): then every node must
// open the same sealed secrets, and a key of this node's own would not,
// so a node given no key refuses to start instead.
//
// Keeping the key file beside the data protects secrets in copies of the
// metadata (backups, support bundles) but not from someone who can read
// the whole storage path; set COFFER_MASTER_KEY from a secret manager for
// that. A key file open to group or others is refused, as the credentials
// file is.
func masterKey(dir string, env []byte, shared bool) ([]byte, error) {
	if env != nil {
		return env, nil
	}
	path := filepath.Join(dir, masterKeyFile)
	k, err := readMasterKey(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return k, err
	}
	if shared {
		return nil, fmt.Errorf("no master key: with meta.kind postgres every node must seal IAM secrets with the cluster's one key, and a node does not make its own; "+
			"set %s on every node to the same key (make one once with: head -c %d /dev/urandom | base64), or put it in %s (mode 0600) on every node",
			config.EnvMasterKey, iam.MasterKeySize, path)
	}
	k = make([]byte, iam.MasterKeySize)
	_, _ = rand.Read(k) // crypto/rand.Read never fails
	if err := writeSecretFile(path, []byte(iam.FormatMasterKey(k)+"\n")); err != nil {
		return nil, fmt.Errorf("write master key: %w", err)
	}
	return k, nil
}

func readMasterKey(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if e := secretfile.Check(path, st); e != nil {
		return nil, fmt.Errorf("master key file %v: refusing to start; run chmod 600 %s", e, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, 1<<10))
	if err != nil {
		return nil, fmt.Errorf("read master key file %s: %w", path, err)
	}
	k, err := iam.ParseMasterKey(string(b))
	if err != nil {
		return nil, fmt.Errorf("master key file %s: %w", path, err)
	}
	return k, nil
}

// clusterKeyError explains ErrWrongMasterKey on a shared store: this
// node's key is not the one the cluster's IAM state was sealed with. It
// names the problem and the fix, never a key.
func clusterKeyError(err error) error {
	if !errors.Is(err, iam.ErrWrongMasterKey) {
		return err
	}
	return fmt.Errorf("this node's master key is not the cluster's: the IAM state in PostgreSQL was sealed with another key, so this node could not open its secrets; "+
		"start every node with the same %s (or master-key file) as the node that first started on this database: %w", config.EnvMasterKey, err)
}
