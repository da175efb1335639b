package checksum

import (
	"encoding/binary"
	"errors"
	"hash/crc64"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/google/go-cmp/cmp"
	"github.com/zeebo/xxh3"
)

// checkInput is the standard CRC check string; every algorithm's digest of
// it is pinned below from independent references (the CRC catalogue,
// Python's hashlib, and for the xxHashes the reference xxhsum 0.8.1 and the
// AWS CRT's awscrt.checksums.XXHash, which botocore sends them with).
const checkInput = "123456789"

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Algorithm
		wantErr bool
	}{
		{in: "CRC32", want: CRC32},
		{in: "crc32", want: CRC32},
		{in: "crc32c", want: CRC32C},
		{in: "Crc32C", want: CRC32C},
		{in: "crc64nvme", want: CRC64NVME},
		{in: "CRC64NVME", want: CRC64NVME},
		{in: "sha1", want: SHA1},
		{in: "SHA256", want: SHA256},
		{in: "sha512", want: SHA512},
		{in: "md5", want: MD5},
		{in: "XXHASH64", want: XXHASH64},
		{in: "xxhash3", want: XXHASH3},
		{in: "XxHash128", want: XXHASH128},
		{in: "", wantErr: true},
		{in: "xxhash", wantErr: true},
		{in: "xxh3", wantErr: true},
		{in: "sha384", wantErr: true},
		{in: "crc32 ", wantErr: true},
		{in: "crc64", wantErr: true},
		{in: "sha-256", wantErr: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := Parse(tc.in)
			if tc.wantErr {
				if !errors.Is(err, ErrUnknown) {
					t.Fatalf("Parse(%q) = %q, %v; want error wrapping ErrUnknown", tc.in, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Parse(%q) = %q, %v; want %q, nil", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestAlgorithm(t *testing.T) {
	for _, tc := range []struct {
		alg    Algorithm
		header string
		size   int
		isCRC  bool
		check  string // base64 digest of checkInput
	}{
		{CRC32, "x-amz-checksum-crc32", 4, true, "y/Q5Jg=="},                                                                                     // 0xCBF43926
		{CRC32C, "x-amz-checksum-crc32c", 4, true, "4waSgw=="},                                                                                   // 0xE3069283
		{CRC64NVME, "x-amz-checksum-crc64nvme", 8, true, "rosUhgp5mIg="},                                                                         // 0xAE8B14860A799888
		{SHA1, "x-amz-checksum-sha1", 20, false, "98O8HYCOBHMq32eZZczDTKeuNEE="},                                                                 // f7c3bc1d…
		{SHA256, "x-amz-checksum-sha256", 32, false, "FeKw08M4keuw8e9gnsQZQgwg4yDOlMZfvIwzEkSOsiU="},                                             // 15e2b0d3…
		{SHA512, "x-amz-checksum-sha512", 64, false, "2eZ2LdHI6vbWGzxhkvxAjU1tXxF20MKRabwk5xw/J0rSf81YEbMT1oH35V7ALXPUmclUVba1u1A6z1dPuo/+hQ=="}, // d9e6762d…
		{MD5, "x-amz-checksum-md5", 16, false, "JfnnlDI7RTiF9RgfG2JNCw=="},                                                                       // 25f9e794323b453885f5181f1b624d0b
		{XXHASH64, "x-amz-checksum-xxhash64", 8, false, "jLhB20DmroM="},                                                                          // 0x8cb841db40e6ae83
		{XXHASH3, "x-amz-checksum-xxhash3", 8, false, "ctyxi2ehff8="},                                                                            // 0x72dcb18b67a17dff
		{XXHASH128, "x-amz-checksum-xxhash128", 16, false, "MxGUd+3l3NXpcWQnaB1YYA=="},                                                           // 0x33119477ede5dcd5e9716427681d5860
	} {
		t.Run(string(tc.alg), func(t *testing.T) {
			if got := tc.alg.Header(); got != tc.header {
				t.Errorf("Header() = %q, want %q", got, tc.header)
			}
			if got := tc.alg.canonicalHeader(); got != http.CanonicalHeaderKey(tc.header) {
				t.Errorf("canonicalHeader() = %q, want %q", got, http.CanonicalHeaderKey(tc.header))
			}
			if got, ok := ForHeader(strings.ToUpper(tc.header)); got != tc.alg || !ok {
				t.Errorf("ForHeader(%q) = %q, %v; want %q, true", strings.ToUpper(tc.header), got, ok, tc.alg)
			}
			if got := tc.alg.Size(); got != tc.size {
				t.Errorf("Size() = %d, want %d", got, tc.size)
			}
			if got := tc.alg.IsCRC(); got != tc.isCRC {
				t.Errorf("IsCRC() = %v, want %v", got, tc.isCRC)
			}
			h := tc.alg.New()
			if h.Size() != tc.size {
				t.Errorf("New().Size() = %d, want %d", h.Size(), tc.size)
			}
			h.Write([]byte(checkInput))
			sum := h.Sum(nil)
			if got := Encode(sum); got != tc.check {
				t.Errorf("Encode(digest(%q)) = %q, want %q", checkInput, got, tc.check)
			}
			if err := tc.alg.Validate(tc.check); err != nil {
				t.Errorf("Validate(%q) = %v, want nil", tc.check, err)
			}
			// Sum must not change the state, and writes must compose.
			h.Reset()
			h.Write([]byte(checkInput[:4]))
			h.Sum(nil)
			h.Write([]byte(checkInput[4:]))
			if got := Encode(h.Sum(nil)); got != tc.check {
				t.Errorf("digest after Reset and split writes = %q, want %q", got, tc.check)
			}
		})
	}
}

func TestAlgorithms(t *testing.T) {
	want := []Algorithm{CRC32, CRC32C, CRC64NVME, SHA1, SHA256, SHA512, MD5, XXHASH64, XXHASH3, XXHASH128}
	if diff := cmp.Diff(want, Algorithms()); diff != "" {
		t.Errorf("Algorithms() mismatch (-want +got):\n%s", diff)
	}
	if got, want := Names(), "CRC32, CRC32C, CRC64NVME, SHA1, SHA256, SHA512, MD5, XXHASH64, XXHASH3, XXHASH128"; got != want {
		t.Errorf("Names() = %q, want %q", got, want)
	}
	Algorithms()[0] = "changed"
	if Algorithms()[0] != CRC32 {
		t.Error("Algorithms() returned the package's own table")
	}
	for _, name := range []string{"x-amz-checksum-algorithm", "x-amz-checksum-type", "x-amz-checksum-mode", "x-amz-checksum-", "x-amz-checksum-xxh3", "content-md5", ""} {
		if got, ok := ForHeader(name); ok {
			t.Errorf("ForHeader(%q) = %q, true; want false", name, got)
		}
	}
}

// TestXXHash pins the xxHashes of inputs that take each of their code
// paths (empty, 1–3 bytes, 4–8, 129–240 and over 240 bytes, several
// 1 KiB blocks), from the reference xxhsum 0.8.1 (-H1, -H3, -H2; the
// canonical big-endian form) and checked against the AWS CRT. Every
// vector is also computed with the input split across two writes at
// several points, since S3 bodies arrive in pieces.
func TestXXHash(t *testing.T) {
	long := strings.Repeat("coffer!\n", 1<<17+8)
	for _, tc := range []struct {
		name                string
		in                  string
		xxh64, xxh3, xxh128 string // base64
	}{
		{"empty", "", "70bbN1HY6Zk=", "LQaABTjTlMI=", "maoG0wFHmNhgAcMkRo1Jfw=="},                   // ef46db3751d8e999, 2d06800538d394c2, 99aa06d3014798d86001c324468d497f
		{"a", "a", "0k7E8amMbls=", "5sYyth6WTh8=", "qW+vcFrxaDTmxjK2HpZOHw=="},                      // d24ec4f1a98c6e5b, e6c632b61e964e1f, a96faf705af16834e6c632b61e964e1f
		{"check", checkInput, "jLhB20DmroM=", "ctyxi2ehff8=", "MxGUd+3l3NXpcWQnaB1YYA=="},           // 8cb841db40e6ae83, 72dcb18b67a17dff, 33119477ede5dcd5e9716427681d5860
		{"241 bytes", long[:241], "P7L8IZyr5q4=", "pGVNBBkNKsE=", "BHaeomAymfukZU0EGQ0qwQ=="},       // 3fb2fc219cabe6ae, a4654d04190d2ac1, 04769ea2603299fba4654d04190d2ac1
		{"1 MiB + 17", long[:1<<20+17], "jty1YFoJ+pI=", "Z0udk1p8uxs=", "BMPaoy4+WmlnS52TWny7Gw=="}, // 8edcb5605a09fa92, 674b9d935a7cbb1b, 04c3daa32e3e5a69674b9d935a7cbb1b
	} {
		for alg, want := range map[Algorithm]string{XXHASH64: tc.xxh64, XXHASH3: tc.xxh3, XXHASH128: tc.xxh128} {
			h := alg.New()
			for _, split := range []int{0, 1, len(tc.in) / 3, len(tc.in) - 1, len(tc.in)} {
				if split < 0 || split > len(tc.in) {
					continue
				}
				h.Reset()
				io.WriteString(h, tc.in[:split])
				io.WriteString(h, tc.in[split:])
				if got := Encode(h.Sum(nil)); got != want {
					t.Errorf("%s of %s split at %d = %s, want %s", alg, tc.name, split, got, want)
				}
			}
		}
	}
}

// TestStreamingMatchesOneShot checks the streaming hashes against their
// libraries' one-shot functions (which those libraries test against the C
// reference's vectors) at every length around their buffer and block
// boundaries, the input written in random pieces.
func TestStreamingMatchesOneShot(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	data := make([]byte, 5000)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	lengths := []int{}
	for n := 0; n <= 300; n++ {
		lengths = append(lengths, n)
	}
	for _, b := range []int{1024, 1088, 2048, 2112, 4096} {
		for n := b - 65; n <= b+65; n++ {
			lengths = append(lengths, n)
		}
	}
	for _, n := range lengths {
		p := data[:n]
		want := map[Algorithm][]byte{
			XXHASH64: binary.BigEndian.AppendUint64(nil, xxhash.Sum64(p)),
			XXHASH3:  binary.BigEndian.AppendUint64(nil, xxh3.Hash(p)),
		}
		w128 := xxh3.Hash128(p).Bytes()
		want[XXHASH128] = w128[:]
		for alg, w := range want {
			h := alg.New()
			for rest := p; len(rest) > 0; {
				k := min(len(rest), rng.IntN(300)+1)
				h.Write(rest[:k])
				rest = rest[k:]
			}
			if got := h.Sum(nil); !cmp.Equal(got, w) {
				t.Fatalf("%s of %d bytes written in pieces = %x, want %x", alg, n, got, w)
			}
		}
	}
}

func TestUnknownAlgorithm(t *testing.T) {
	a := Algorithm("BLAKE3")
	if got := a.Header(); got != "" {
		t.Errorf("Header() = %q, want empty", got)
	}
	if got := a.Size(); got != 0 {
		t.Errorf("Size() = %d, want 0", got)
	}
	if a.IsCRC() {
		t.Error("IsCRC() = true, want false")
	}
	if err := a.Validate("AAAAAA=="); !errors.Is(err, ErrUnknown) {
		t.Errorf("Validate() = %v, want ErrUnknown", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("New() did not panic")
		}
	}()
	a.New()
}

func TestCRC64NVMEMatchesHashCRC64(t *testing.T) {
	// The slicing-by-8 implementation must agree with hash/crc64's
	// byte-at-a-time table at every length and alignment, however the input
	// is split across writes.
	table := crc64.MakeTable(nvmePoly)
	if got, want := crc64.Checksum([]byte(checkInput), table), uint64(0xAE8B14860A799888); got != want {
		t.Fatalf("crc64.Checksum with nvmePoly = %#x, want %#x", got, want)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 5000)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	for n := range 70 {
		for _, start := range []int{0, 1, 3, 7} {
			p := data[start : start+n]
			want := crc64.Checksum(p, table)
			d := newCRC64NVME()
			split := rng.IntN(n + 1)
			d.Write(p[:split])
			d.Write(p[split:])
			if got := d.Sum64(); got != want {
				t.Fatalf("len %d start %d split %d: got %#x, want %#x", n, start, split, got, want)
			}
		}
	}
	for _, n := range []int{100, 1000, 2047, 2048, 4999} {
		if got, want := updateNVME(0, data[:n]), crc64.Checksum(data[:n], table); got != want {
			t.Errorf("len %d: got %#x, want %#x", n, got, want)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		alg  Algorithm
		in   string
		ok   bool
	}{
		{name: "crc32 ok", alg: CRC32, in: "y/Q5Jg==", ok: true},
		{name: "crc32 zero", alg: CRC32, in: "AAAAAA==", ok: true},
		{name: "crc64 ok", alg: CRC64NVME, in: "rosUhgp5mIg=", ok: true},
		{name: "sha256 ok", alg: SHA256, in: "FeKw08M4keuw8e9gnsQZQgwg4yDOlMZfvIwzEkSOsiU=", ok: true},
		{name: "empty", alg: CRC32, in: ""},
		{name: "no padding", alg: CRC32, in: "y/Q5Jg"},
		{name: "too long", alg: CRC32, in: "y/Q5JgAA"},
		{name: "crc64 value for crc32", alg: CRC32, in: "rosUhgp5mIg="},
		{name: "crc32 value for crc64", alg: CRC64NVME, in: "y/Q5Jg=="},
		{name: "url alphabet", alg: CRC32, in: "y_Q5Jg=="},
		{name: "bad character", alg: CRC32, in: "y*Q5Jg=="},
		{name: "non-canonical padding bits", alg: CRC32, in: "y/Q5Jh=="},
		{name: "newline", alg: CRC32, in: "y/Q5\nJg="},
		{name: "sha1 too short", alg: SHA1, in: "98O8HYCOBHMq32eZZczDTKeuNE=="},
		{name: "sha512 ok", alg: SHA512, in: "2eZ2LdHI6vbWGzxhkvxAjU1tXxF20MKRabwk5xw/J0rSf81YEbMT1oH35V7ALXPUmclUVba1u1A6z1dPuo/+hQ==", ok: true},
		{name: "sha512 unpadded", alg: SHA512, in: strings.Repeat("A", 88)},
		{name: "sha256 value for sha512", alg: SHA512, in: "FeKw08M4keuw8e9gnsQZQgwg4yDOlMZfvIwzEkSOsiU="},
		{name: "md5 ok", alg: MD5, in: "JfnnlDI7RTiF9RgfG2JNCw==", ok: true},
		{name: "md5 hex", alg: MD5, in: "25f9e794323b453885f5181f1b624d0b"},
		{name: "xxhash64 ok", alg: XXHASH64, in: "jLhB20DmroM=", ok: true},
		{name: "xxhash3 ok", alg: XXHASH3, in: "ctyxi2ehff8=", ok: true},
		{name: "xxhash3 value of xxhash128", alg: XXHASH3, in: "MxGUd+3l3NXpcWQnaB1YYA=="},
		{name: "xxhash128 ok", alg: XXHASH128, in: "MxGUd+3l3NXpcWQnaB1YYA==", ok: true},
		{name: "xxhash128 value of xxhash64", alg: XXHASH128, in: "jLhB20DmroM="},
		// Unpadded, 44 characters decode to 33 bytes: more than a SHA-256
		// digest, which must be an error, not a decoder overrun.
		{name: "sha256 unpadded", alg: SHA256, in: strings.Repeat("A", 44)},
		{name: "sha1 unpadded", alg: SHA1, in: strings.Repeat("A", 28)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.alg.Validate(tc.in)
			if tc.ok {
				if err != nil {
					t.Fatalf("Validate(%q) = %v, want nil", tc.in, err)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Validate(%q) = %v, want error wrapping ErrInvalid", tc.in, err)
			}
		})
	}
}

func TestFromHeaders(t *testing.T) {
	for _, tc := range []struct {
		name    string
		h       http.Header
		wantAlg Algorithm
		wantVal string
		wantErr error
	}{
		{name: "none", h: http.Header{"Content-Type": {"text/plain"}}},
		{
			name:    "crc32c",
			h:       http.Header{"X-Amz-Checksum-Crc32c": {"4waSgw=="}},
			wantAlg: CRC32C, wantVal: "4waSgw==",
		},
		{
			name:    "crc64nvme with algorithm and type headers",
			h:       http.Header{"X-Amz-Checksum-Crc64nvme": {"rosUhgp5mIg="}, "X-Amz-Checksum-Algorithm": {"CRC64NVME"}, "X-Amz-Checksum-Type": {"FULL_OBJECT"}},
			wantAlg: CRC64NVME, wantVal: "rosUhgp5mIg=",
		},
		{
			name:    "sha256",
			h:       http.Header{"X-Amz-Checksum-Sha256": {"FeKw08M4keuw8e9gnsQZQgwg4yDOlMZfvIwzEkSOsiU="}},
			wantAlg: SHA256, wantVal: "FeKw08M4keuw8e9gnsQZQgwg4yDOlMZfvIwzEkSOsiU=",
		},
		{
			name:    "two algorithms",
			h:       http.Header{"X-Amz-Checksum-Crc32": {"y/Q5Jg=="}, "X-Amz-Checksum-Sha1": {"98O8HYCOBHMq32eZZczDTKeuNEE="}},
			wantErr: ErrMultiple,
		},
		{
			name:    "one header repeated",
			h:       http.Header{"X-Amz-Checksum-Crc32": {"y/Q5Jg==", "y/Q5Jg=="}},
			wantErr: ErrMultiple,
		},
		{
			name:    "bad value",
			h:       http.Header{"X-Amz-Checksum-Crc32": {"not base64"}},
			wantAlg: CRC32, wantErr: ErrInvalid,
		},
		{
			name:    "value of the wrong size",
			h:       http.Header{"X-Amz-Checksum-Sha1": {"y/Q5Jg=="}},
			wantAlg: SHA1, wantErr: ErrInvalid,
		},
		{
			name:    "sha512",
			h:       http.Header{"X-Amz-Checksum-Sha512": {"2eZ2LdHI6vbWGzxhkvxAjU1tXxF20MKRabwk5xw/J0rSf81YEbMT1oH35V7ALXPUmclUVba1u1A6z1dPuo/+hQ=="}},
			wantAlg: SHA512, wantVal: "2eZ2LdHI6vbWGzxhkvxAjU1tXxF20MKRabwk5xw/J0rSf81YEbMT1oH35V7ALXPUmclUVba1u1A6z1dPuo/+hQ==",
		},
		{name: "md5", h: http.Header{"X-Amz-Checksum-Md5": {"JfnnlDI7RTiF9RgfG2JNCw=="}}, wantAlg: MD5, wantVal: "JfnnlDI7RTiF9RgfG2JNCw=="},
		{name: "xxhash128", h: http.Header{"X-Amz-Checksum-Xxhash128": {"MxGUd+3l3NXpcWQnaB1YYA=="}}, wantAlg: XXHASH128, wantVal: "MxGUd+3l3NXpcWQnaB1YYA=="},
		{
			name:    "xxhash3 and xxhash64",
			h:       http.Header{"X-Amz-Checksum-Xxhash3": {"ctyxi2ehff8="}, "X-Amz-Checksum-Xxhash64": {"jLhB20DmroM="}},
			wantErr: ErrMultiple,
		},
		{name: "md5 not Content-MD5", h: http.Header{"Content-Md5": {"JfnnlDI7RTiF9RgfG2JNCw=="}}},
		{name: "unknown algorithm header ignored", h: http.Header{"X-Amz-Checksum-Blake3": {"AAAA"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			alg, val, err := FromHeaders(tc.h)
			if !errors.Is(err, tc.wantErr) || (err != nil) != (tc.wantErr != nil) {
				t.Fatalf("FromHeaders() error = %v, want %v", err, tc.wantErr)
			}
			if alg != tc.wantAlg || val != tc.wantVal {
				t.Errorf("FromHeaders() = %q, %q; want %q, %q", alg, val, tc.wantAlg, tc.wantVal)
			}
		})
	}
}

func TestEncode(t *testing.T) {
	for _, tc := range []struct {
		in   []byte
		want string
	}{
		{nil, ""},
		{[]byte{0, 0, 0, 0}, "AAAAAA=="},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, "//////////8="},
	} {
		if got := Encode(tc.in); got != tc.want {
			t.Errorf("Encode(%x) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestComposite(t *testing.T) {
	sum := func(a Algorithm, s string) []byte {
		h := a.New()
		h.Write([]byte(s))
		return h.Sum(nil)
	}
	for _, tc := range []struct {
		name  string
		alg   Algorithm
		parts []string
		want  string
	}{
		// CRC32("hello") = 0x3610a686, CRC32("world") = 0x3a771143;
		// CRC32(36 10 a6 86 3a 77 11 43) = 0xc299fbb6 = "wpn7tg==".
		// Computed independently with Python's zlib.crc32.
		{name: "crc32", alg: CRC32, parts: []string{"hello", "world"}, want: "wpn7tg==-2"},
		// sha256(sha256("hello") ‖ sha256("world") ‖ sha256("!")), from
		// Python's hashlib.
		{name: "sha256", alg: SHA256, parts: []string{"hello", "world", "!"}, want: "hhE8XY/PCO6r52koutWHFBftHRcSeNs0iE1UtOU0ls4=-3"},
		// The same for the newer algorithms: hashlib for SHA512 and MD5,
		// xxhsum of the concatenated canonical digests for the xxHashes.
		{name: "sha512", alg: SHA512, parts: []string{"hello", "world", "!"}, want: "4jcyyPUuglRWy1oTXVeDY7apTdr/2KI9u0g5wDvS1/MNe0mkRiWOidOUbM6KrtzDg51YJrBtNkmuzDc60HxdzA==-3"},
		{name: "md5", alg: MD5, parts: []string{"hello", "world", "!"}, want: "D+azBts3BthEk6a5MLteqA==-3"},
		{name: "xxhash64", alg: XXHASH64, parts: []string{"hello", "world", "!"}, want: "fZ1h0rB+PGo=-3"},
		{name: "xxhash3", alg: XXHASH3, parts: []string{"hello", "world", "!"}, want: "igva1JazSe0=-3"},
		{name: "xxhash128", alg: XXHASH128, parts: []string{"hello", "world", "!"}, want: "7dlC+WEgFg/Y9/UWA/Beyg==-3"},
		// One part: the checksum of the part's checksum, not the part's.
		{name: "crc32 one part", alg: CRC32, parts: []string{checkInput}, want: Encode(sum(CRC32, string([]byte{0xcb, 0xf4, 0x39, 0x26}))) + "-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sums [][]byte
			for _, p := range tc.parts {
				sums = append(sums, sum(tc.alg, p))
			}
			if got := Composite(tc.alg, sums); got != tc.want {
				t.Errorf("Composite(%s, %q) = %q, want %q", tc.alg, tc.parts, got, tc.want)
			}
		})
	}
}

func TestCombine(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	data := make([]byte, 1<<20+17)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	sum := func(a Algorithm, p []byte) []byte {
		h := a.New()
		h.Write(p)
		return h.Sum(nil)
	}
	for _, a := range []Algorithm{CRC32, CRC32C, CRC64NVME} {
		t.Run(string(a), func(t *testing.T) {
			n := len(data)
			splits := []int{0, 1, 7, 8, n - 1, n}
			for range 40 {
				splits = append(splits, rng.IntN(n+1))
			}
			for _, i := range splits {
				got, err := Combine(a, sum(a, data[:i]), sum(a, data[i:]), int64(n-i))
				if err != nil {
					t.Fatalf("Combine at %d: %v", i, err)
				}
				if want := sum(a, data); !cmp.Equal(got, want) {
					t.Fatalf("Combine at split %d = %x, want %x", i, got, want)
				}
			}
			// Folding over several parts, as a FULL_OBJECT multipart
			// checksum does.
			bounds := []int{0, 5 << 10, 5<<10 + 1, 300 << 10, 300<<10 + 1, n}
			acc := sum(a, data[:bounds[1]])
			for j := 1; j+1 < len(bounds); j++ {
				part := data[bounds[j]:bounds[j+1]]
				var err error
				acc, err = Combine(a, acc, sum(a, part), int64(len(part)))
				if err != nil {
					t.Fatal(err)
				}
			}
			if want := sum(a, data); !cmp.Equal(acc, want) {
				t.Fatalf("folded Combine = %x, want %x", acc, want)
			}
		})
	}
}

func TestCombineErrors(t *testing.T) {
	four, eight := make([]byte, 4), make([]byte, 8)
	for _, tc := range []struct {
		name       string
		alg        Algorithm
		crc1, crc2 []byte
		len2       int64
	}{
		{name: "sha256", alg: SHA256, crc1: make([]byte, 32), crc2: make([]byte, 32), len2: 1},
		{name: "unknown", alg: "BLAKE3", crc1: four, crc2: four, len2: 1},
		{name: "md5", alg: MD5, crc1: make([]byte, 16), crc2: make([]byte, 16), len2: 1},
		{name: "xxhash64", alg: XXHASH64, crc1: eight, crc2: eight, len2: 1},
		{name: "short crc1", alg: CRC32, crc1: four[:3], crc2: four, len2: 1},
		{name: "long crc2", alg: CRC32C, crc1: four, crc2: eight, len2: 1},
		{name: "crc32 for crc64", alg: CRC64NVME, crc1: four, crc2: four, len2: 1},
		{name: "negative length", alg: CRC32, crc1: four, crc2: four, len2: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, err := Combine(tc.alg, tc.crc1, tc.crc2, tc.len2); err == nil {
				t.Fatalf("Combine() = %x, nil; want error", got)
			}
		})
	}
}

func TestCombineHugeLength(t *testing.T) {
	// A length whose top bit is set in int64 terms exercises the last
	// entries of x2n. Check associativity instead of computing 2^62 bytes:
	// combining zeros of length a then b equals zeros of length a+b.
	zero := func(a Algorithm, n int64) []byte {
		// CRC of n zero bytes, built by doubling with Combine itself from
		// the directly computed CRC of one zero byte.
		one := a.New()
		one.Write([]byte{0})
		acc, unit := []byte(nil), one.Sum(nil)
		for bit := int64(1); n > 0; bit <<= 1 {
			if n&1 != 0 {
				if acc == nil {
					acc = unit
				} else {
					acc, _ = Combine(a, acc, unit, bit)
				}
			}
			unit, _ = Combine(a, unit, unit, bit)
			n >>= 1
		}
		return acc
	}
	for _, a := range []Algorithm{CRC32, CRC32C, CRC64NVME} {
		h := a.New()
		h.Write(make([]byte, 1000))
		if got, want := zero(a, 1000), h.Sum(nil); !cmp.Equal(got, want) {
			t.Fatalf("%s: CRC of 1000 zeros by doubling = %x, want %x", a, got, want)
		}
		x, y := int64(1)<<61+12345, int64(1)<<61+99
		lhs, _ := Combine(a, zero(a, x), zero(a, y), y)
		if rhs := zero(a, x+y); !cmp.Equal(lhs, rhs) {
			t.Errorf("%s: Combine(zeros(%d), zeros(%d)) = %x, want %x", a, x, y, lhs, rhs)
		}
	}
}

func BenchmarkHash(b *testing.B) {
	data := []byte(strings.Repeat("coffer!\n", 1<<17)) // 1 MiB
	for _, a := range Algorithms() {
		b.Run(string(a)+"/size=1MiB", func(b *testing.B) {
			h := a.New()
			var buf [64]byte
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				h.Reset()
				h.Write(data)
				h.Sum(buf[:0])
			}
		})
	}
}

func BenchmarkCombine(b *testing.B) {
	for _, a := range []Algorithm{CRC32, CRC32C, CRC64NVME} {
		b.Run(string(a), func(b *testing.B) {
			crc := make([]byte, a.Size())
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Combine(a, crc, crc, 5<<20); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
