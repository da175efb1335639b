package meta

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"time"
)

// Key layout (see docs/design/0001-storage-engine.md). Every key starts with a
// one-byte table prefix. Bucket names never contain 0x00, so
// "o" bucket 0x00 key sorts the objects of one bucket contiguously and in
// byte order of the object key, whatever bytes the key holds.
const (
	tableBucket  = 'b' // b bucket                              → bucket record
	tableData    = 'd' // d bucket 0x00 key                     → inline data of an object
	tableOldData = 'e' // e bucket 0x00 esc(key) 0x00 0x01 vid  → inline data of a noncurrent version
	tableGarbage = 'g' // g time(8, BE) blobkey                 → garbage record
	tableHistory = 'h' // h bucket 0x00 esc(key) 0x00 0x01 vid  → noncurrent version or delete marker
	tableObject  = 'o' // o bucket 0x00 key                     → object record (the current version)
	tablePart    = 'p' // p uploadID partnumber(4, BE)          → part record
	tableUpload  = 'u' // u bucket 0x00 key 0x00 uploadID       → upload record
	// tableIAM 'i' and tablePolicy 'y' are declared in policy.go.
)

// UploadIDLen is the length of every upload ID: u keys are parsed from the
// end, so an object key may contain 0x00.
const UploadIDLen = 32

// errBadKey is returned when a stored key does not parse; it means
// corruption or a bug, never bad user input.
var errBadKey = errors.New("meta: malformed key")

// bucketKey returns the key of bucket's record.
func bucketKey(bucket string) []byte {
	k := make([]byte, 0, 1+len(bucket))
	k = append(k, tableBucket)
	return append(k, bucket...)
}

// bucketPrefix returns "t" bucket 0x00, the common prefix of bucket's keys
// in table t (tableObject or tableUpload).
func bucketPrefix(t byte, bucket string) []byte {
	k := make([]byte, 0, 2+len(bucket))
	k = append(k, t)
	k = append(k, bucket...)
	return append(k, 0)
}

// objectKey appends the key of bucket/key's object record to dst.
func objectKey(dst []byte, bucket, key string) []byte {
	dst = append(dst, tableObject)
	dst = append(dst, bucket...)
	dst = append(dst, 0)
	return append(dst, key...)
}

// dataKey appends the key of bucket/key's inline data to dst. It mirrors
// objectKey in its own table, so that record reads (HEAD, listings, the
// read-modify-write of every overwrite and delete, the GC reference scan)
// never load the data bytes, and the reference scan over [g, q) skips them.
func dataKey(dst []byte, bucket, key string) []byte {
	dst = append(dst, tableData)
	dst = append(dst, bucket...)
	dst = append(dst, 0)
	return append(dst, key...)
}

// decodeObjectKey is the inverse of objectKey.
func decodeObjectKey(k []byte) (bucket, key string, err error) {
	if len(k) < 2 || k[0] != tableObject {
		return "", "", errBadKey
	}
	i := bytes.IndexByte(k[1:], 0)
	if i < 0 {
		return "", "", errBadKey
	}
	return string(k[1 : 1+i]), string(k[2+i:]), nil
}

// uploadKey returns the key of an upload record.
func uploadKey(bucket, key, id string) []byte {
	k := make([]byte, 0, 3+len(bucket)+len(key)+len(id))
	k = append(k, tableUpload)
	k = append(k, bucket...)
	k = append(k, 0)
	k = append(k, key...)
	k = append(k, 0)
	return append(k, id...)
}

// decodeUploadKey is the inverse of uploadKey. The upload ID is the last
// UploadIDLen bytes, so the object key may contain 0x00.
func decodeUploadKey(k []byte) (bucket, key, id string, err error) {
	if len(k) < 3+UploadIDLen || k[0] != tableUpload || k[len(k)-UploadIDLen-1] != 0 {
		return "", "", "", errBadKey
	}
	rest := k[1 : len(k)-UploadIDLen-1]
	i := bytes.IndexByte(rest, 0)
	if i < 0 {
		return "", "", "", errBadKey
	}
	return string(rest[:i]), string(rest[i+1:]), string(k[len(k)-UploadIDLen:]), nil
}

// partPrefix returns the common prefix of an upload's part keys.
func partPrefix(id string) []byte {
	k := make([]byte, 0, 1+len(id)+4)
	k = append(k, tablePart)
	return append(k, id...)
}

// partKey returns the key of part n of upload id.
func partKey(id string, n int) []byte {
	return binary.BigEndian.AppendUint32(partPrefix(id), uint32(n))
}

// decodePartKey is the inverse of partKey.
func decodePartKey(k []byte) (id string, n int, err error) {
	if len(k) < 5 || k[0] != tablePart {
		return "", 0, errBadKey
	}
	return string(k[1 : len(k)-4]), int(binary.BigEndian.Uint32(k[len(k)-4:])), nil
}

// VersionIDLen is the length of every version ID a version key holds (see
// NewVersionID).
const VersionIDLen = 32

// historyKey appends to dst the key of version vid of bucket/key in table
// t (tableHistory or tableOldData). The object key is escaped (escapeKey)
// and terminated by 0x00 0x01, so that the versions of a key sort together
// and keys sort in byte order even when they hold 0x00; vid (VersionIDLen
// bytes, newest first) sorts the versions of one key.
func historyKey(dst []byte, t byte, bucket, key, vid string) []byte {
	dst = historyNamePrefix(dst, t, bucket, key)
	return append(dst, vid...)
}

// historyNamePrefix appends the common prefix of the keys of every version
// of bucket/key in table t: everything but the version ID.
func historyNamePrefix(dst []byte, t byte, bucket, key string) []byte {
	dst = append(dst, t)
	dst = append(dst, bucket...)
	dst = append(dst, 0)
	dst = escapeKey(dst, key)
	return append(dst, 0, 1)
}

// decodeHistoryName splits a key of tableHistory or tableOldData after its
// bucket prefix (rest = esc(key) 0x00 0x01 vid) into the object key and the
// version ID.
func decodeHistoryName(rest []byte) (key, vid string, err error) {
	n := len(rest) - VersionIDLen - 2
	if n < 0 || rest[n] != 0 || rest[n+1] != 1 {
		return "", "", errBadKey
	}
	k, ok := unescapeKey(rest[:n])
	if !ok {
		return "", "", errBadKey
	}
	return k, string(rest[n+2:]), nil
}

// escapeKey appends key to dst with every 0x00 byte written as 0x00 0xFF.
// Escaped keys compare as the keys do, and no escaped key contains
// 0x00 0x01, which therefore ends one: "a" 0x00 0x01 sorts before
// "a\x00" escaped (0x00 0xFF), as "a" sorts before "a\x00". The mapping is
// a homomorphism, so an escaped prefix is a prefix of the escaped key.
func escapeKey(dst []byte, key string) []byte {
	for {
		i := strings.IndexByte(key, 0)
		if i < 0 {
			return append(dst, key...)
		}
		dst = append(dst, key[:i]...)
		dst = append(dst, 0, 0xFF)
		key = key[i+1:]
	}
}

// unescapeKey is the inverse of escapeKey; it reports false for bytes
// escapeKey cannot produce.
func unescapeKey(b []byte) (string, bool) {
	if bytes.IndexByte(b, 0) < 0 {
		return string(b), true
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		out = append(out, b[i])
		if b[i] == 0 {
			if i+1 >= len(b) || b[i+1] != 0xFF {
				return "", false
			}
			i++
		}
	}
	return string(out), true
}

// garbageKey returns the key of a garbage entry: the time the blob became
// garbage, then the blob key, so the queue is scanned oldest first.
func garbageKey(t time.Time, blobKey string) []byte {
	k := make([]byte, 0, 9+len(blobKey))
	k = append(k, tableGarbage)
	k = binary.BigEndian.AppendUint64(k, timeBits(t))
	return append(k, blobKey...)
}

// garbageBound returns the smallest garbage key at time t.
func garbageBound(t time.Time) []byte {
	return binary.BigEndian.AppendUint64([]byte{tableGarbage}, timeBits(t))
}

// decodeGarbageKey is the inverse of garbageKey.
func decodeGarbageKey(k []byte) (time.Time, string, error) {
	if len(k) < 9 || k[0] != tableGarbage {
		return time.Time{}, "", errBadKey
	}
	return bitsTime(binary.BigEndian.Uint64(k[1:9])), string(k[9:]), nil
}

// timeBits maps t to a uint64 whose big-endian bytes sort like the instants
// (unix nanoseconds with the sign bit flipped).
func timeBits(t time.Time) uint64 { return uint64(t.UnixNano()) ^ 1<<63 }

// bitsTime is the inverse of timeBits.
func bitsTime(b uint64) time.Time { return time.Unix(0, int64(b^1<<63)).UTC() }

// successor returns the smallest key greater than every key having prefix p:
// p with its last byte incremented, carrying past 0xFF bytes. It returns nil
// if there is none (p is empty or all 0xFF), meaning "no upper bound". It
// does not modify p.
func successor(p []byte) []byte {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] != 0xFF {
			s := make([]byte, i+1)
			copy(s, p[:i+1])
			s[i]++
			return s
		}
	}
	return nil
}
