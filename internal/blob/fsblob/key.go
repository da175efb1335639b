package fsblob

import (
	"errors"
	"fmt"
	"strings"

	"github.com/coffer-s3/coffer/internal/blob"
)

// tmpDir is the directory under the root that holds files being written.
const tmpDir = ".tmp"

// maxKeyLen is the longest key blob.Store allows.
const maxKeyLen = 200

// errInvalidKey is wrapped by every key-syntax error.
var errInvalidKey = errors.New("invalid key")

// checkKey enforces blob.Store's key syntax, which also makes every key a
// clean relative path: printable [0-9a-z/._-], 1 to 200 bytes, no leading
// or trailing slash, no "..", and no empty or "." segment (those would make
// two keys name one file). Keys under .tmp, and the claim's name
// (blob.ClaimName), are refused too. It does not
// touch the filesystem.
func checkKey(key string) error {
	if len(key) == 0 || len(key) > maxKeyLen {
		return fmt.Errorf("%w: length %d not in 1 to %d", errInvalidKey, len(key), maxKeyLen)
	}
	for i := range len(key) {
		if !keyByte(key[i]) {
			return fmt.Errorf("%w: byte %#02x not in [0-9a-z/._-]", errInvalidKey, key[i])
		}
	}
	if key[0] == '/' || key[len(key)-1] == '/' {
		return fmt.Errorf("%w: leading or trailing slash", errInvalidKey)
	}
	if strings.Contains(key, "..") {
		return fmt.Errorf(`%w: contains ".."`, errInvalidKey)
	}
	for seg := range strings.SplitSeq(key, "/") {
		if seg == "" || seg == "." {
			return fmt.Errorf(`%w: empty or "." path segment`, errInvalidKey)
		}
	}
	if key == tmpDir || strings.HasPrefix(key, tmpDir+"/") {
		return fmt.Errorf("%w: %s is reserved for temporary files", errInvalidKey, tmpDir)
	}
	if key == blob.ClaimName {
		return fmt.Errorf("%w: %s is the store's claim", errInvalidKey, blob.ClaimName)
	}
	return nil
}

func keyByte(c byte) bool {
	return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '/' || c == '.' || c == '_' || c == '-'
}
