package s3blob

import "github.com/coffer-s3/coffer/internal/blob"

// maxKeyLen is the longest blob key blob.Store allows.
const maxKeyLen = blob.MaxKeyLen

// checkKey enforces the key syntax of blob.Store's contract, so that the
// gateway refuses exactly the keys fsblob and memblob refuse.
func checkKey(key string) error { return blob.CheckKey(key) }
