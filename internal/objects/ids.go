package objects

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"strconv"
	"time"
)

// BlockPrefix is the prefix of every block key the service makes: the
// keys its garbage collection lists and may delete.
const BlockPrefix = "b/"

// Blob keys embed their creation time so that the orphan sweep can tell a
// crash leftover from a write in progress in another process:
// b/<2 hex>/<16 hex unix nanos><16 hex random>. The 2-hex shard spreads
// blobs over 256 directories.
const (
	blobPrefix  = BlockPrefix
	blobNameLen = 32
	blobKeyLen  = len(blobPrefix) + 3 + blobNameLen
)

// newBlobKey returns a fresh blob key created at now.
func newBlobKey(now time.Time) string {
	var r [9]byte
	_, _ = rand.Read(r[:]) // never fails (crypto/rand)
	b := make([]byte, 0, blobKeyLen)
	b = append(b, blobPrefix...)
	b = hex.AppendEncode(b, r[:1])
	b = append(b, '/')
	b = appendHex64(b, uint64(now.UnixNano()))
	b = hex.AppendEncode(b, r[1:])
	return string(b)
}

// blobKeyTime returns the creation time embedded in a blob key, or false if
// k is not a key newBlobKey makes (such blobs are never collected).
func blobKeyTime(k string) (time.Time, bool) {
	if len(k) != blobKeyLen || k[:len(blobPrefix)] != blobPrefix || k[len(blobPrefix)+2] != '/' {
		return time.Time{}, false
	}
	if _, err := hex.DecodeString(k[len(blobPrefix) : len(blobPrefix)+2]); err != nil {
		return time.Time{}, false
	}
	name := k[len(blobPrefix)+3:]
	ns, err := strconv.ParseUint(name[:16], 16, 64)
	if err != nil {
		return time.Time{}, false
	}
	if _, err := hex.DecodeString(name[16:]); err != nil {
		return time.Time{}, false
	}
	return time.Unix(0, int64(ns)), true
}

// newUploadID returns an upload ID: 16 hex digits of the creation time then
// 16 random ones, so IDs of one key sort by initiation time, as S3 lists
// them. Its length is meta.UploadIDLen.
func newUploadID(now time.Time) string {
	var r [8]byte
	_, _ = rand.Read(r[:])
	b := appendHex64(make([]byte, 0, 32), uint64(now.UnixNano()))
	return string(hex.AppendEncode(b, r[:]))
}

func appendHex64(b []byte, v uint64) []byte {
	var x [8]byte
	binary.BigEndian.PutUint64(x[:], v)
	return hex.AppendEncode(b, x[:])
}
