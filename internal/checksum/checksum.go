// Package checksum implements S3's flexible checksums: CRC32, CRC32C,
// CRC64NVME, SHA1, SHA256, SHA512, MD5, XXHASH64, XXHASH3 and XXHASH128,
// their header names and base64 encoding, and the two ways S3 checksums a
// multipart object: COMPOSITE (a checksum of the parts' checksums, see
// [Composite]; every algorithm) and FULL_OBJECT (the CRC of the whole
// object, assembled from the parts' CRCs with [Combine]; the CRCs only).
//
// Every digest is encoded as S3 encodes it: standard base64 of the raw
// digest, big-endian for the CRCs and xxHashes (the xxHash "canonical"
// form), as aws-sdk-go-v2, botocore and the AWS CRT send them.
//
// See https://docs.aws.amazon.com/AmazonS3/latest/userguide/checking-object-integrity.html
package checksum

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/zeebo/xxh3"
)

// Algorithm names a flexible-checksum algorithm as S3 spells it in
// x-amz-checksum-algorithm, e.g. "CRC32C". The zero value means no checksum.
type Algorithm string

// The algorithms S3 supports, as the S3 API model (aws-sdk-go-v2's
// types.ChecksumAlgorithm) names them. XXHASH64 is XXH64, XXHASH3 is
// XXH3-64 and XXHASH128 is XXH3-128, all with seed 0.
const (
	CRC32     Algorithm = "CRC32"
	CRC32C    Algorithm = "CRC32C"
	CRC64NVME Algorithm = "CRC64NVME"
	SHA1      Algorithm = "SHA1"
	SHA256    Algorithm = "SHA256"
	SHA512    Algorithm = "SHA512"
	MD5       Algorithm = "MD5"
	XXHASH64  Algorithm = "XXHASH64"
	XXHASH3   Algorithm = "XXHASH3"
	XXHASH128 Algorithm = "XXHASH128"
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

// maxSize is the largest digest of any algorithm, SHA-512's.
const maxSize = sha512.Size

// decodeBufSize is the most bytes base64 decoding of the longest valid
// value (EncodedLen of the largest digest) can produce: an unpadded final
// quantum decodes to 3 bytes where a padded one holds 1 or 2.
const decodeBufSize = (maxSize + 2) / 3 * 3

// spec describes one algorithm.
type spec struct {
	alg       Algorithm
	header    string // lower case, as S3 writes it
	canonical string // net/http's canonical form of header
	size      int    // bytes of the raw digest
	crc       bool   // a CRC: FULL_OBJECT and Combine are possible
	new       func() hash.Hash
}

// specs lists every Algorithm, in the order of the S3 API model's
// Checksum* members (which is also the order of their XML elements); a
// read-only lookup table.
var specs = [...]spec{
	{CRC32, "x-amz-checksum-crc32", "X-Amz-Checksum-Crc32", crc32.Size, true, func() hash.Hash { return crc32.NewIEEE() }},
	{CRC32C, "x-amz-checksum-crc32c", "X-Amz-Checksum-Crc32c", crc32.Size, true, func() hash.Hash { return crc32.New(castagnoli) }},
	{CRC64NVME, "x-amz-checksum-crc64nvme", "X-Amz-Checksum-Crc64nvme", 8, true, func() hash.Hash { return newCRC64NVME() }},
	{SHA1, "x-amz-checksum-sha1", "X-Amz-Checksum-Sha1", sha1.Size, false, sha1.New},
	{SHA256, "x-amz-checksum-sha256", "X-Amz-Checksum-Sha256", sha256.Size, false, sha256.New},
	{SHA512, "x-amz-checksum-sha512", "X-Amz-Checksum-Sha512", sha512.Size, false, sha512.New},
	{MD5, "x-amz-checksum-md5", "X-Amz-Checksum-Md5", md5.Size, false, md5.New},
	// xxhash.Digest.Sum and xxh3's Sum append the canonical (big-endian)
	// form, as the reference xxhsum prints it and the AWS CRT encodes it.
	{XXHASH64, "x-amz-checksum-xxhash64", "X-Amz-Checksum-Xxhash64", 8, false, func() hash.Hash { return xxhash.New() }},
	{XXHASH3, "x-amz-checksum-xxhash3", "X-Amz-Checksum-Xxhash3", 8, false, func() hash.Hash { return xxh3.New() }},
	{XXHASH128, "x-amz-checksum-xxhash128", "X-Amz-Checksum-Xxhash128", 16, false, func() hash.Hash { return xxh3.New128() }},
}

// castagnoli is the CRC-32C table; a read-only lookup table.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// lookup returns a's spec, or nil if a is not one of the constants.
func (a Algorithm) lookup() *spec {
	for i := range specs {
		if specs[i].alg == a {
			return &specs[i]
		}
	}
	return nil
}

// Algorithms returns every Algorithm, in the order of the S3 API model:
// CRC32, CRC32C, CRC64NVME, SHA1, SHA256, SHA512, MD5, XXHASH64, XXHASH3,
// XXHASH128. The slice is the caller's.
func Algorithms() []Algorithm {
	all := make([]Algorithm, len(specs))
	for i := range specs {
		all[i] = specs[i].alg
	}
	return all
}

// Names returns the algorithm names in the order of [Algorithms], joined
// by ", " as S3 lists them in its error messages.
func Names() string {
	var b strings.Builder
	for i := range specs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(string(specs[i].alg))
	}
	return b.String()
}

// Parse returns the Algorithm named by s, ignoring case ("crc32c" is
// CRC32C). It returns an error wrapping ErrUnknown for anything else,
// including the empty string.
func Parse(s string) (Algorithm, error) {
	for i := range specs {
		if strings.EqualFold(s, string(specs[i].alg)) {
			return specs[i].alg, nil
		}
	}
	return "", fmt.Errorf("%w %q", ErrUnknown, s)
}

// ForHeader returns the Algorithm whose value header is name, ignoring case
// ("X-Amz-Checksum-Sha512" is SHA512), as an x-amz-trailer value names it.
// It reports false for any other name.
func ForHeader(name string) (Algorithm, bool) {
	for i := range specs {
		if strings.EqualFold(name, specs[i].header) {
			return specs[i].alg, true
		}
	}
	return "", false
}

// New returns a new hash computing a. Sum appends the raw digest in the
// byte order S3 encodes: big-endian for the CRCs and xxHashes. New panics
// if a is not one of the constants; validate untrusted names with [Parse]
// first.
func (a Algorithm) New() hash.Hash {
	if s := a.lookup(); s != nil {
		return s.new()
	}
	panic(fmt.Sprintf("checksum: New of unknown algorithm %q", string(a)))
}

// Header returns the lower-case name of the header that carries a's value,
// e.g. "x-amz-checksum-crc32c", or "" if a is not one of the constants.
func (a Algorithm) Header() string {
	if s := a.lookup(); s != nil {
		return s.header
	}
	return ""
}

// canonicalHeader is Header in net/http's canonical form, the key under
// which a server finds it in an http.Header.
func (a Algorithm) canonicalHeader() string {
	if s := a.lookup(); s != nil {
		return s.canonical
	}
	return ""
}

// Size returns the size in bytes of a's raw digest, or 0 if a is not one of
// the constants.
func (a Algorithm) Size() int {
	if s := a.lookup(); s != nil {
		return s.size
	}
	return 0
}

// IsCRC reports whether a is one of the CRCs (CRC32, CRC32C, CRC64NVME),
// the algorithms that support FULL_OBJECT multipart checksums and
// [Combine]. The others, whose digests cannot be combined, allow only
// COMPOSITE.
func (a Algorithm) IsCRC() bool {
	s := a.lookup()
	return s != nil && s.crc
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
