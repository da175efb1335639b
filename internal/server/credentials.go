package server

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/coffer-s3/coffer/internal/iam"
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
// dir, else new ones, which it stores in dir and prints once to out. The
// secret is never logged.
//
// A credentials file that group or others may read or write is refused, not
// repaired: someone may already have read it, and the operator should know.
func rootCredentials(dir string, env iam.Config, out io.Writer) (iam.Config, error) {
	if env.RootAccessKey != "" && env.RootSecretKey != "" {
		return env, nil
	}
	path := filepath.Join(dir, credentialsFile)
	c, err := readCredentials(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return c, err
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
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return iam.Config{}, fmt.Errorf("root credentials file %s has mode %#o, open to group or others: refusing to start; run chmod 600 %s (and consider rotating the keys)", path, perm, path)
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

// writeCredentials creates path with mode 0600 atomically: a temporary file
// is written and fsynced, renamed into place and the directory fsynced, so
// a crash leaves either no file or a whole one.
func writeCredentials(path string, c iam.Config) (err error) {
	data, err := json.MarshalIndent(storedCredentials{c.RootAccessKey, c.RootSecretKey}, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, credentialsFile+".tmp*")
	if err != nil {
		return fmt.Errorf("write root credentials: %w", err)
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
		return fmt.Errorf("write root credentials: %w", err)
	}
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("write root credentials: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write root credentials: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write root credentials: %w", err)
	}
	// Link, unlike Rename, fails if path appeared meanwhile: never replace
	// credentials someone may already use.
	if err := os.Link(tmp.Name(), path); err != nil {
		return fmt.Errorf("write root credentials: %w", err)
	}
	if err := os.Remove(tmp.Name()); err != nil {
		return fmt.Errorf("write root credentials: %w", err)
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

// accessKeyAlphabet is the alphabet of generated access key IDs, as AWS's.
const accessKeyAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// generateCredentials returns a random access key ID of 20 characters from
// [A-Z0-9] and a secret of 40 base64 characters (240 bits).
func generateCredentials() (iam.Config, error) {
	ak := make([]byte, 0, 20)
	var buf [32]byte
	for len(ak) < cap(ak) {
		if _, err := rand.Read(buf[:]); err != nil {
			return iam.Config{}, fmt.Errorf("generate root credentials: %w", err)
		}
		for _, b := range buf {
			// Reject the top 4 values of 256 so every symbol of the 36 is
			// equally likely (252 = 7 × 36).
			if b < 252 && len(ak) < cap(ak) {
				ak = append(ak, accessKeyAlphabet[b%36])
			}
		}
	}
	var secret [30]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return iam.Config{}, fmt.Errorf("generate root credentials: %w", err)
	}
	return iam.Config{
		RootAccessKey: string(ak),
		RootSecretKey: base64.StdEncoding.EncodeToString(secret[:]),
	}, nil
}
