package migrate

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"hash"
	"strconv"
	"strings"

	"github.com/coffer-s3/coffer/internal/checksum"
	"github.com/coffer-s3/coffer/internal/meta"
)

// expected is what a record says of its data.
type expected struct {
	size     int64
	etag     string // hex MD5, or the MD5 of the parts' MD5s and "-N"
	checksum meta.Checksum
	parts    []int64 // sizes of the parts of a multipart object
}

// verifier hashes data as it is written and checks it against a record:
// size, ETag (the MD5, or for a multipart object the MD5 of each part's
// MD5) and the flexible checksum (of the whole, or composite over the
// parts).
type verifier struct {
	want      expected
	alg       checksum.Algorithm // "" without a checksum
	composite bool
	partSums  []string // the parts' stored checksums (base64), if any

	n    int64
	md5  hash.Hash // of the whole; nil for a multipart object
	full hash.Hash // the whole's checksum; nil if none or composite

	part     int   // index of the part being hashed
	left     int64 // its bytes still to come
	partMD5  hash.Hash
	partAlg  hash.Hash // nil without a checksum
	partMD5s [][]byte
	partAlgs [][]byte
}

func newVerifier(want expected, partSums []string) (*verifier, error) {
	v := &verifier{want: want, partSums: partSums}
	if c := want.checksum; c.Algorithm != "" {
		alg, err := checksum.Parse(c.Algorithm)
		if err != nil {
			return nil, fmt.Errorf("the record's checksum algorithm %q is unknown", c.Algorithm)
		}
		v.alg = alg
		v.composite = c.Type == "COMPOSITE"
		if v.composite && want.parts == nil {
			return nil, fmt.Errorf("the record has a composite checksum but no part sizes")
		}
	}
	if want.parts == nil {
		v.md5 = md5.New()
	}
	if v.alg != "" && !v.composite {
		v.full = v.alg.New()
	}
	if want.parts != nil {
		v.partMD5 = md5.New()
		if v.alg != "" {
			v.partAlg = v.alg.New()
		}
		v.part = -1
		v.nextPart()
	}
	return v, nil
}

// nextPart finishes nothing and starts the next non-empty part, finishing
// the empty ones on the way.
func (v *verifier) nextPart() {
	for v.part++; v.part < len(v.want.parts) && v.want.parts[v.part] == 0; v.part++ {
		v.finishPart()
	}
	if v.part < len(v.want.parts) {
		v.left = v.want.parts[v.part]
	}
}

func (v *verifier) finishPart() {
	v.partMD5s = append(v.partMD5s, v.partMD5.Sum(nil))
	v.partMD5.Reset()
	if v.partAlg != nil {
		v.partAlgs = append(v.partAlgs, v.partAlg.Sum(nil))
		v.partAlg.Reset()
	}
}

// Write hashes p; it never fails.
func (v *verifier) Write(p []byte) (int, error) {
	n := len(p)
	v.n += int64(n)
	if v.md5 != nil {
		v.md5.Write(p)
	}
	if v.full != nil {
		v.full.Write(p)
	}
	for len(p) > 0 && v.want.parts != nil && v.part < len(v.want.parts) {
		take := min(int64(len(p)), v.left)
		v.partMD5.Write(p[:take])
		if v.partAlg != nil {
			v.partAlg.Write(p[:take])
		}
		v.left -= take
		p = p[take:]
		if v.left == 0 {
			v.finishPart()
			v.nextPart()
		}
	}
	return n, nil
}

// check returns what does not match, "" if everything does.
func (v *verifier) check() string {
	w := v.want
	if v.n != w.size {
		return fmt.Sprintf("read %d bytes, the record says %d", v.n, w.size)
	}
	var problems []string
	if got := v.etag(); got != "" && got != strings.ToLower(w.etag) {
		problems = append(problems, fmt.Sprintf("ETag %s, the record says %s", got, w.etag))
	}
	if v.alg != "" {
		if got := v.sum(); got != w.checksum.Value {
			problems = append(problems, fmt.Sprintf("%s checksum %s, the record says %s", v.alg, got, w.checksum.Value))
		}
		for i, s := range v.partSums {
			if i < len(v.partAlgs) && s != "" && checksum.Encode(v.partAlgs[i]) != s {
				problems = append(problems, fmt.Sprintf("part %d: %s checksum %s, the record says %s", i+1, v.alg, checksum.Encode(v.partAlgs[i]), s))
			}
		}
	}
	return strings.Join(problems, "; ")
}

// etag returns the ETag of the data read, "" if the record's cannot be
// computed (a multipart ETag without the part sizes).
func (v *verifier) etag() string {
	if v.want.parts == nil {
		if strings.Contains(v.want.etag, "-") {
			return ""
		}
		return hex.EncodeToString(v.md5.Sum(nil))
	}
	h := md5.New()
	for _, s := range v.partMD5s {
		h.Write(s)
	}
	return hex.EncodeToString(h.Sum(nil)) + "-" + strconv.Itoa(len(v.partMD5s))
}

// sum returns the checksum of the data read, as the record writes it.
func (v *verifier) sum() string {
	if v.composite {
		return checksum.Composite(v.alg, v.partAlgs)
	}
	return checksum.Encode(v.full.Sum(nil))
}
