package checksum

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/zeebo/xxh3"
)

// FuzzValidate checks, for every algorithm, that Validate never panics and
// accepts exactly the canonical base64 encodings of a digest of the
// algorithm's size: an accepted value decodes to Size bytes that encode
// back to the same string.
func FuzzValidate(f *testing.F) {
	for _, s := range []string{
		"", "y/Q5Jg==", "AAAAAA==", "rosUhgp5mIg=", "98O8HYCOBHMq32eZZczDTKeuNEE=",
		"FeKw08M4keuw8e9gnsQZQgwg4yDOlMZfvIwzEkSOsiU=", "y/Q5Jh==", "y_Q5Jg==", "y/Q5\nJg=",
		"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAAAAAAAAAA",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 1<<10 {
			return
		}
		for _, a := range Algorithms() {
			if err := a.Validate(s); err != nil {
				continue
			}
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil || len(b) != a.Size() {
				t.Fatalf("%s.Validate(%q) = nil, but it decodes to %d bytes (%v), want %d", a, s, len(b), err, a.Size())
			}
			if got := Encode(b); got != s {
				t.Fatalf("%s.Validate(%q) = nil, but the canonical encoding is %q", a, s, got)
			}
		}
	})
}

// FuzzHashSplit checks that every algorithm's streaming hash gives the same
// digest however its input is split across writes, and that the xxHashes
// agree with their libraries' one-shot functions, which take other code
// paths.
func FuzzHashSplit(f *testing.F) {
	f.Add([]byte(checkInput), uint16(4))
	f.Add([]byte(strings.Repeat("coffer!\n", 300)), uint16(1087))
	f.Add([]byte{}, uint16(0))
	f.Fuzz(func(t *testing.T, data []byte, split uint16) {
		if len(data) > 64<<10 {
			return
		}
		k := int(split) % (len(data) + 1)
		for _, a := range Algorithms() {
			whole, parts := a.New(), a.New()
			whole.Write(data)
			parts.Write(data[:k])
			parts.Write(data[k:])
			w, p := whole.Sum(nil), parts.Sum(nil)
			if !bytes.Equal(w, p) {
				t.Fatalf("%s of %d bytes split at %d = %x, written whole = %x", a, len(data), k, p, w)
			}
			var oneShot []byte
			switch a {
			case XXHASH64:
				oneShot = binary.BigEndian.AppendUint64(nil, xxhash.Sum64(data))
			case XXHASH3:
				oneShot = binary.BigEndian.AppendUint64(nil, xxh3.Hash(data))
			case XXHASH128:
				b := xxh3.Hash128(data).Bytes()
				oneShot = b[:]
			default:
				continue
			}
			if !bytes.Equal(w, oneShot) {
				t.Fatalf("%s of %d bytes = %x, one-shot = %x", a, len(data), w, oneShot)
			}
		}
	})
}
