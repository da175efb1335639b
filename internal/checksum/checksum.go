// Package checksum implements S3's flexible checksums: CRC32, CRC32C,
// CRC64NVME, SHA1 and SHA256, their header names and base64 encoding, and the
// two ways S3 checksums a multipart object: COMPOSITE (a checksum of the
// parts' checksums, see [Composite]) and FULL_OBJECT (the CRC of the whole
// object, assembled from the parts' CRCs with [Combine]).
//
// See https://docs.aws.amazon.com/AmazonS3/latest/userguide/checking-object-integrity.html
package checksum

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"strings"
)

// Algorithm names a flexible-checksum algorithm as S3 spells it in
// x-amz-checksum-algorithm, e.g. "CRC32C". The zero value means no checksum.
type Algorithm string

// The algorithms S3 supports.
const (
	CRC32     Algorithm = "CRC32"
	CRC32C    Algorithm = "CRC32C"
	CRC64NVME Algorithm = "CRC64NVME"
	SHA1      Algorithm = "SHA1"
	SHA256    Algorithm = "SHA256"
)

// ErrUnknown is returned (wrapped) for an algorithm name that is not one of
// the constants above. S3 answers such a request with InvalidRequest.
var ErrUnknown = errors.New("checksum: unknown algorithm")

// ErrInvalid is returned (wrapped) for a checksum value that is not the
// canonical base64 encoding of a digest of the algorithm's size. S3 answers
// InvalidRequest ("Value for x-amz-checksum-… header is invalid.").
var ErrInvalid = errors.New("checksum: invalid value")

// ErrMultiple is returned by [FromHeaders] when a request carries more than
// one x-amz-checksum-<algorithm> header. S3 answers InvalidRequest
// ("Expecting a single x-amz-checksum- header").
var ErrMultiple = errors.New("checksum: multiple checksum headers")

// decodeBufSize is the most bytes base64 decoding of the longest valid
// value (EncodedLen of the largest digest) can produce: an unpadded final
// quantum decodes to 3 bytes where a padded one holds 1 or 2.
const decodeBufSize = (sha256.Size + 2) / 3 * 3

// algorithms lists every Algorithm; a read-only lookup table.
var algorithms = [...]Algorithm{CRC32, CRC32C, CRC64NVME, SHA1, SHA256}

// castagnoli is the CRC-32C table; a read-only lookup table.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Parse returns the Algorithm named by s, ignoring case ("crc32c" is
// CRC32C). It returns an error wrapping ErrUnknown for anything else,
// including the empty string.
func Parse(s string) (Algorithm, error) {
	for _, a := range algorithms {
		if strings.EqualFold(s, string(a)) {
			return a, nil
		}
	}
	return "", fmt.Errorf("%w %q", ErrUnknown, s)
}

// New returns a new hash computing a. Sum appends the raw digest, big-endian
// for the CRCs, as S3 encodes it. New panics if a is not one of the
// constants; validate untrusted names with [Parse] first.
func (a Algorithm) New() hash.Hash {
	switch a {
	case CRC32:
		return crc32.NewIEEE()
	case CRC32C:
		return crc32.New(castagnoli)
	case CRC64NVME:
		return newCRC64NVME()
	case SHA1:
		return sha1.New()
	case SHA256:
		return sha256.New()
	}
	panic(fmt.Sprintf("checksum: New of unknown algorithm %q", string(a)))
}

// Header returns the lower-case name of the header that carries a's value,
// e.g. "x-amz-checksum-crc32c", or "" if a is not one of the constants.
func (a Algorithm) Header() string {
	switch a {
	case CRC32:
		return "x-amz-checksum-crc32"
	case CRC32C:
		return "x-amz-checksum-crc32c"
	case CRC64NVME:
		return "x-amz-checksum-crc64nvme"
	case SHA1:
		return "x-amz-checksum-sha1"
	case SHA256:
		return "x-amz-checksum-sha256"
	}
	return ""
}

// canonicalHeader is Header in net/http's canonical form, the key under
// which a server finds it in an http.Header.
func (a Algorithm) canonicalHeader() string {
	switch a {
	case CRC32:
		return "X-Amz-Checksum-Crc32"
	case CRC32C:
		return "X-Amz-Checksum-Crc32c"
	case CRC64NVME:
		return "X-Amz-Checksum-Crc64nvme"
	case SHA1:
		return "X-Amz-Checksum-Sha1"
	case SHA256:
		return "X-Amz-Checksum-Sha256"
	}
	return ""
}

// Size returns the size in bytes of a's raw digest, or 0 if a is not one of
// the constants.
func (a Algorithm) Size() int {
	switch a {
	case CRC32, CRC32C:
		return 4
	case CRC64NVME:
		return 8
	case SHA1:
		return sha1.Size
	case SHA256:
		return sha256.Size
	}
	return 0
}

// IsCRC reports whether a is one of the CRCs, the algorithms that support
// FULL_OBJECT multipart checksums and [Combine].
func (a Algorithm) IsCRC() bool {
	return a == CRC32 || a == CRC32C || a == CRC64NVME
}

// Encode returns sum in standard base64 with padding, the form S3 uses in
// headers and XML.
func Encode(sum []byte) string {
	return base64.StdEncoding.EncodeToString(sum)
}

// Validate checks that b64 is a well-formed value for a: the canonical
// standard base64 encoding of exactly a.Size() bytes. Because only the
// canonical encoding is accepted, a valid value may be compared with
// [Encode]'s output as a string. The error wraps ErrInvalid, or ErrUnknown
// if a is not one of the constants.
func (a Algorithm) Validate(b64 string) error {
	n := a.Size()
	if n == 0 {
		return fmt.Errorf("%w %q", ErrUnknown, string(a))
	}
	// Checking the length first bounds the work on hostile input and makes
	// the decoder's tolerance of CR and LF irrelevant.
	if len(b64) != base64.StdEncoding.EncodedLen(n) {
		return fmt.Errorf("%w: %s value %q: want %d base64 characters", ErrInvalid, a.Header(), b64, base64.StdEncoding.EncodedLen(n))
	}
	// Decode writes up to DecodedLen(len(b64)) bytes, which for unpadded
	// input is more than n: size the buffer for that, and let m tell.
	var buf [decodeBufSize]byte
	m, err := base64.StdEncoding.Strict().Decode(buf[:], []byte(b64))
	if err != nil {
		return fmt.Errorf("%w: %s value %q: %v", ErrInvalid, a.Header(), b64, err)
	}
	if m != n {
		return fmt.Errorf("%w: %s value %q decodes to %d bytes, want %d", ErrInvalid, a.Header(), b64, m, n)
	}
	return nil
}
