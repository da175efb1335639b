package checksum

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strconv"
)

// Composite returns S3's COMPOSITE checksum of a multipart object: the
// algorithm applied to the concatenation of the parts' raw checksums, in
// base64, followed by "-" and the number of parts, e.g. "Xkc0Bg==-3".
// partSums are raw digests (not base64), in part order. Every algorithm
// supports it; it is the only multipart checksum of the non-CRCs (SHA1,
// SHA256, SHA512, MD5 and the xxHashes). Composite panics if a is not one
// of the constants, as New does.
//
// See https://docs.aws.amazon.com/AmazonS3/latest/userguide/checking-object-integrity.html#large-object-checksums
func Composite(a Algorithm, partSums [][]byte) string {
	h := a.New()
	for _, s := range partSums {
		h.Write(s)
	}
	var buf [maxSize]byte
	return Encode(h.Sum(buf[:0])) + "-" + strconv.Itoa(len(partSums))
}

// Combine returns the CRC of the concatenation A‖B given crc1 = CRC(A),
// crc2 = CRC(B) and len2 = len(B), without the data. It is how S3's
// FULL_OBJECT checksum of a multipart object is computed from the parts'
// CRCs: fold Combine over the parts in order. CRCs are raw big-endian
// digests as New's Sum returns them. Combine supports only the CRC
// algorithms (see [Algorithm.IsCRC]); it returns an error for other
// algorithms, for digests of the wrong size and for a negative len2.
//
// The method is zlib's crc32_combine (1.2.12 and later), which works in
// GF(2)[x] modulo the CRC polynomial: appending len2 zero bytes to A
// multiplies its CRC register by x^(8·len2), computed by repeated squaring
// in O(log len2) polynomial products. It is the same algebra as the older
// GF(2) matrix formulation, at a fraction of the cost (no 64×64 matrix
// squarings), which matters when folding 10,000 parts.
func Combine(a Algorithm, crc1, crc2 []byte, len2 int64) ([]byte, error) {
	c := specFor(a)
	if c == nil {
		return nil, fmt.Errorf("combine %s: not a CRC algorithm", a)
	}
	size := int(c.width / 8)
	if len(crc1) != size || len(crc2) != size {
		return nil, fmt.Errorf("combine %s: checksums of %d and %d bytes, want %d", a, len(crc1), len(crc2), size)
	}
	if len2 < 0 {
		return nil, fmt.Errorf("combine %s: negative length %d", a, len2)
	}
	if c.width == 32 {
		v := c.combine(uint64(binary.BigEndian.Uint32(crc1)), uint64(binary.BigEndian.Uint32(crc2)), len2)
		return binary.BigEndian.AppendUint32(nil, uint32(v)), nil
	}
	v := c.combine(binary.BigEndian.Uint64(crc1), binary.BigEndian.Uint64(crc2), len2)
	return binary.BigEndian.AppendUint64(nil, v), nil
}

// crcSpec describes a reflected CRC with initial value and final XOR all
// ones (true of CRC32, CRC32C and CRC-64/NVME) for Combine. Polynomials are
// stored reflected: bit width-1 holds x^0 and bit 0 holds x^(width-1).
type crcSpec struct {
	width uint   // 32 or 64
	poly  uint64 // reflected polynomial without the x^width term
	// x2n[k] is x^(2^k) mod poly. 67 entries cover every shift of an int64
	// byte count (k runs from 3 to 65) without assuming that the sequence
	// is periodic, which holds only for some polynomials.
	x2n [67]uint64
}

// The CRCs Combine supports; read-only lookup tables.
var (
	crc32Spec     = newCRCSpec(32, crc32.IEEE)
	crc32cSpec    = newCRCSpec(32, crc32.Castagnoli)
	crc64NVMESpec = newCRCSpec(64, nvmePoly)
)

// specFor returns the crcSpec of a, or nil if a is not a CRC.
func specFor(a Algorithm) *crcSpec {
	switch a {
	case CRC32:
		return crc32Spec
	case CRC32C:
		return crc32cSpec
	case CRC64NVME:
		return crc64NVMESpec
	}
	return nil
}

func newCRCSpec(width uint, poly uint64) *crcSpec {
	c := &crcSpec{width: width, poly: poly}
	p := uint64(1) << (width - 2) // x^1
	c.x2n[0] = p
	for k := 1; k < len(c.x2n); k++ {
		p = c.multmodp(p, p)
		c.x2n[k] = p
	}
	return c
}

// multmodp returns a·b mod poly, both operands reflected.
func (c *crcSpec) multmodp(a, b uint64) uint64 {
	if a == 0 {
		return 0
	}
	m := uint64(1) << (c.width - 1) // x^0
	var p uint64
	for {
		if a&m != 0 {
			p ^= b
			if a&(m-1) == 0 {
				break
			}
		}
		m >>= 1
		// b *= x, reducing modulo poly.
		if b&1 != 0 {
			b = b>>1 ^ c.poly
		} else {
			b >>= 1
		}
	}
	return p
}

// x2nmodp returns x^(n·2^k) mod poly.
func (c *crcSpec) x2nmodp(n uint64, k int) uint64 {
	p := uint64(1) << (c.width - 1) // x^0
	for n != 0 {
		if n&1 != 0 {
			p = c.multmodp(c.x2n[k], p)
		}
		n >>= 1
		k++
	}
	return p
}

// combine returns CRC(A‖B) from CRC(A), CRC(B) and len(B). The all-ones
// initial value and final XOR cancel out, leaving crc1·x^(8·len2) ⊕ crc2.
func (c *crcSpec) combine(crc1, crc2 uint64, len2 int64) uint64 {
	return c.multmodp(c.x2nmodp(uint64(len2), 3), crc1) ^ crc2
}
