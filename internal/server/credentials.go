package server

import (
	"encoding/json"
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

// credentialsFile is the name, under the storage path, of the generated
// root credentials.
const credentialsFile = "root-credentials"

// storedCredentials is the JSON form of the credentials file.
type storedCredentials struct {
	AccessKeyID     string `json:"access_key_id"`
	SecretAccessKey string `json:"secret_access_key"`
}

// rootCredentials returns the root credentials: env when both keys are set
// (config.Validate has checked they come as a pair), else those stored in
// dir, else new ones, which it stores in dir and prints once to out —
// unless the metadata store is shared (meta.kind postgres): then every
// node must accept the same root user, and credentials of this node's own
// would be accepted by no other node, so a node given none refuses to
// start instead, as masterKey does. The secret is never logged.
//
// A credentials file that group or others may read or write is refused, not
// repaired: someone may already have read it, and the operator should know.
func rootCredentials(dir string, env iam.Config, out io.Writer, shared bool) (iam.Config, error) {
	if env.RootAccessKey != "" && env.RootSecretKey != "" {
		return env, nil
	}
	path := filepath.Join(dir, credentialsFile)
	c, err := readCredentials(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return c, err
	}
	if shared {
		return iam.Config{}, fmt.Errorf("no root credentials: with meta.kind postgres every node must accept the cluster's one root user, and a node does not make its own; "+
			"set %s and %s on every node to the same values, or put the same %s file (mode 0600, JSON with access_key_id and secret_access_key) in every node's storage path",
			config.EnvRootAccessKey, config.EnvRootSecretKey, path)
	}
	c, err = generateCredentials()
	if err != nil {
		return iam.Config{}, err
	}
	if err := writeCredentials(path, c); err != nil {
		return iam.Config{}, err
	}
	_, err = fmt.Fprintf(out, `
Coffer generated root credentials and saved them in %s (mode 0600).
They are printed only this once; later starts read them from that file.

    Access key ID:     %s
    Secret access key: %s

To choose your own, set COFFER_ROOT_ACCESS_KEY and COFFER_ROOT_SECRET_KEY.

`, path, c.RootAccessKey, c.RootSecretKey)
	if err != nil {
		return iam.Config{}, fmt.Errorf("print generated root credentials: %w", err)
	}
	return c, nil
}

func readCredentials(path string) (iam.Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return iam.Config{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return iam.Config{}, err
	}
	if e := secretfile.Check(path, st); e != nil {
		return iam.Config{}, fmt.Errorf("root credentials file %v: refusing to start; run chmod 600 %s (and consider rotating the keys)", e, path)
	}
	var sc storedCredentials
	dec := json.NewDecoder(io.LimitReader(f, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sc); err != nil {
		return iam.Config{}, fmt.Errorf("read root credentials file %s: %w", path, err)
	}
	if sc.AccessKeyID == "" || sc.SecretAccessKey == "" {
		return iam.Config{}, fmt.Errorf("read root credentials file %s: access_key_id and secret_access_key are required", path)
	}
	return iam.Config{RootAccessKey: sc.AccessKeyID, RootSecretKey: sc.SecretAccessKey}, nil
}

// writeCredentials creates the root credentials file.
func writeCredentials(path string, c iam.Config) error {
	data, err := json.MarshalIndent(storedCredentials{c.RootAccessKey, c.RootSecretKey}, "", "  ")
	if err != nil {
		return err
	}
	if err := writeSecretFile(path, append(data, '\n')); err != nil {
		return fmt.Errorf("write root credentials: %w", err)
	}
	return nil
}

// writeSecretFile creates path with mode 0600 atomically: a temporary file
// is written and fsynced, linked into place and the directory fsynced, so
// a crash leaves either no file or a whole one. It fails if path exists.
func writeSecretFile(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name()) // best effort; the error that matters is err
		}
	}()
	// CreateTemp makes the file 0600 already; Chmod also defeats a umask
	// or filesystem that would widen it.
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	// Link, unlike Rename, fails if path appeared meanwhile: never replace
	// a secret someone may already use.
	if err := os.Link(tmp.Name(), path); err != nil {
		return err
	}
	if err := os.Remove(tmp.Name()); err != nil {
		return err
	}
	return syncDir(dir)
}

// syncDir fsyncs a directory so that a new entry in it is durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return d.Close()
}

// generateCredentials returns new random root credentials.
func generateCredentials() (iam.Config, error) {
	ak, sk := iam.GenerateCredentials()
	return iam.Config{RootAccessKey: ak, RootSecretKey: sk}, nil
}
