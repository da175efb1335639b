package s3blob

import (
	"errors"
	"fmt"
	"strings"
)

// maxKeyLen is the longest blob key blob.Store allows.
const maxKeyLen = 200

// checkKey enforces the key syntax of blob.Store's contract, so that the
// gateway refuses exactly the keys fsblob and memblob refuse. It duplicates
// their checkKey; all three could move to package blob.
func checkKey(key string) error {
	if len(key) == 0 || len(key) > maxKeyLen {
		return errors.New("invalid key: length must be 1 to 200 bytes")
	}
	for i := range len(key) {
		c := key[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '/' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("invalid key: byte %#02x not in [0-9a-z/._-]", c)
		}
	}
	if key[0] == '/' || key[len(key)-1] == '/' {
		return errors.New("invalid key: leading or trailing slash")
	}
	if strings.Contains(key, "..") {
		return errors.New(`invalid key: contains ".."`)
	}
	for seg := range strings.SplitSeq(key, "/") {
		if seg == "" || seg == "." {
			return fmt.Errorf("invalid key: empty or %q path segment", ".")
		}
	}
	return nil
}
