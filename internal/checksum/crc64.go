package checksum

import (
	"encoding/binary"
	"hash"
	"hash/crc64"
)

// nvmePoly is the CRC-64/NVME polynomial 0xAD93D23594C93659 in the reflected
// (LSB-first) form hash/crc64 uses. With hash/crc64's conventions (initial
// value and final XOR all ones, reflected input and output) it yields
// CRC-64/NVME, whose check value for "123456789" is 0xAE8B14860A799888.
const nvmePoly = 0x9A6C9329AC4BC9B5

// nvmeTables holds slicing-by-8 tables for CRC-64/NVME; a read-only lookup
// table built once. hash/crc64 builds slicing tables only for its ISO and
// ECMA polynomials and otherwise rebuilds (and allocates) them on every large
// Write, so CRC64NVME keeps its own.
var nvmeTables = makeSlicing8(crc64.MakeTable(nvmePoly))

// makeSlicing8 extends a byte-at-a-time table t to the eight tables of
// Intel's slicing-by-8 method: entry k[i] is the CRC of byte i followed by k
// zero bytes.
func makeSlicing8(t *crc64.Table) *[8][256]uint64 {
	var tabs [8][256]uint64
	tabs[0] = *t
	for i := range 256 {
		crc := tabs[0][i]
		for k := 1; k < 8; k++ {
			crc = tabs[0][crc&0xff] ^ crc>>8
			tabs[k][i] = crc
		}
	}
	return &tabs
}

// updateNVME returns crc updated with p. crc is the finalized (complemented)
// value, as Sum64 returns it, so updates compose like crc64.Update.
func updateNVME(crc uint64, p []byte) uint64 {
	t := nvmeTables
	crc = ^crc
	for len(p) >= 8 {
		crc ^= binary.LittleEndian.Uint64(p)
		crc = t[7][crc&0xff] ^
			t[6][crc>>8&0xff] ^
			t[5][crc>>16&0xff] ^
			t[4][crc>>24&0xff] ^
			t[3][crc>>32&0xff] ^
			t[2][crc>>40&0xff] ^
			t[1][crc>>48&0xff] ^
			t[0][crc>>56]
		p = p[8:]
	}
	for _, b := range p {
		crc = t[0][byte(crc)^b] ^ crc>>8
	}
	return ^crc
}

// crc64NVME is a hash.Hash64 computing CRC-64/NVME.
type crc64NVME struct {
	crc uint64
}

var _ hash.Hash64 = (*crc64NVME)(nil)

func newCRC64NVME() *crc64NVME { return &crc64NVME{} }

// Size returns 8, the size of a CRC-64 in bytes.
func (d *crc64NVME) Size() int { return crc64.Size }

// BlockSize returns 1: the CRC accepts writes of any length.
func (d *crc64NVME) BlockSize() int { return 1 }

// Reset returns the hash to its initial state.
func (d *crc64NVME) Reset() { d.crc = 0 }

// Write adds p to the running checksum. It never returns an error.
func (d *crc64NVME) Write(p []byte) (int, error) {
	d.crc = updateNVME(d.crc, p)
	return len(p), nil
}

// Sum64 returns the CRC of the data written so far.
func (d *crc64NVME) Sum64() uint64 { return d.crc }

// Sum appends the big-endian CRC to in, the byte order S3 encodes.
func (d *crc64NVME) Sum(in []byte) []byte {
	return binary.BigEndian.AppendUint64(in, d.crc)
}
