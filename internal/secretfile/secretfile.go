// Package secretfile reads files that hold a secret (a password, a key,
// credentials) and tells whether anyone but their owner may read or write
// them. It is the one copy of that check: the server refuses root
// credentials and master-key files that fail it, the CLI refuses a
// --secret-key-file that does, and the PostgreSQL password file, admin
// migrate's bucket-secret file, coffer bench's --targets file (when it
// holds a key or password) and the TLS key are read with a warning.
package secretfile

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// MaxSize is how much of a file ReadLine reads: a line of a secret is far
// shorter, and a file named by mistake (a log, a device) must not be read
// whole.
const MaxSize = 64 << 10

// ExposedError reports a secret file that group or others may read or
// write. Its message names the file and its mode, never the contents.
type ExposedError struct {
	Path string
	Mode fs.FileMode // the permission bits
}

func (e *ExposedError) Error() string {
	return fmt.Sprintf("%s has mode %#o, open to group or others", e.Path, e.Mode)
}

// Check returns an *ExposedError if fi, the information of the file at
// path, gives group or others any permission, else nil.
func Check(path string, fi fs.FileInfo) *ExposedError {
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return &ExposedError{Path: path, Mode: perm}
	}
	return nil
}

// ReadLine returns the first line of the file at path, without its line
// ending ("\n" or "\r\n"), reading at most MaxSize bytes. exposed is the
// result of Check on the opened file: a caller that refuses such a file
// does not use line, one that only warns does. err is an error opening,
// checking or reading the file; line and exposed are then empty.
func ReadLine(path string) (line string, exposed *ExposedError, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxSize))
	if err != nil {
		return "", nil, fmt.Errorf("read %s: %w", path, err)
	}
	b, _, _ = bytes.Cut(b, []byte("\n"))
	return string(bytes.TrimSuffix(b, []byte("\r"))), Check(path, fi), nil
}
