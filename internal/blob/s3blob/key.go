package s3blob

import (
	"fmt"

	"github.com/coffer-s3/coffer/internal/blob"
)

// maxKeyLen is the longest blob key blob.Store allows.
const maxKeyLen = blob.MaxKeyLen

// checkKey enforces the key syntax of blob.Store's contract, so that the
// gateway refuses exactly the keys fsblob and memblob refuse, and refuses
// the claim's name besides: no Put, Get or Delete of a blob may replace,
// read or remove the prefix's claim (a damaged record naming it, say).
func checkKey(key string) error {
	if key == ClaimName {
		return fmt.Errorf("invalid key: %q is the prefix's claim, not a blob", key)
	}
	return blob.CheckKey(key)
}
