package objects

import (
	"crypto/md5"
	"encoding/base64"
	"errors"

	"github.com/coffer-s3/coffer/internal/checksum"
	"github.com/coffer-s3/coffer/internal/s3err"
)

// digests is what a write must verify once its body is read: the
// Content-MD5 and flexible checksum the client sent, checked before a
// single byte is read where possible.
type digests struct {
	res    string
	md5    []byte // decoded Content-MD5; nil if absent
	alg    checksum.Algorithm
	value  string        // expected checksum from a header; "" if absent
	trailr func() string // expected checksum from the trailer, read after EOF
}

// prepareDigests validates the Content-MD5 and checksum a write carries.
// alg is the algorithm to compute (the client's, or the upload's); ck the
// client's expectation, whose algorithm must agree with alg if both are set.
func prepareDigests(res, contentMD5 string, ck ChecksumInput, alg checksum.Algorithm) (digests, error) {
	d := digests{res: res, alg: alg}
	if contentMD5 != "" {
		b, err := base64.StdEncoding.DecodeString(contentMD5)
		if err != nil || len(b) != md5.Size {
			return d, s3err.New(s3err.InvalidDigest, res)
		}
		d.md5 = b
	}
	if ck.Algorithm == "" {
		return d, nil
	}
	if err := checkAlgorithm(ck.Algorithm, res); err != nil {
		return d, err
	}
	if d.alg == "" {
		d.alg = ck.Algorithm
	} else if d.alg != ck.Algorithm {
		return d, s3err.Newf(s3err.InvalidRequest, res,
			"Checksum Type mismatch occurred, expected checksum Type: "+lower(d.alg)+", actual checksum Type: "+lower(ck.Algorithm))
	}
	if ck.Value != "" {
		if err := ck.Algorithm.Validate(ck.Value); err != nil {
			return d, invalidChecksumValue(ck.Algorithm, res, err)
		}
		d.value = ck.Value
	} else {
		d.trailr = ck.Trailer
	}
	return d, nil
}

// verify checks the digests of a body read whole: md5Sum is its MD5 and sum
// its checksum under d.alg. A mismatch is BadDigest.
func (d *digests) verify(md5Sum, sum []byte) error {
	if d.md5 != nil && string(d.md5) != string(md5Sum) {
		return s3err.New(s3err.BadDigest, d.res).
			With("ExpectedDigest", base64.StdEncoding.EncodeToString(d.md5)).
			With("CalculatedDigest", base64.StdEncoding.EncodeToString(md5Sum))
	}
	want := d.value
	if want == "" && d.trailr != nil {
		// A checksum the request declared as its trailer (x-amz-trailer)
		// must come, and be one: an empty or missing one would store the
		// body unchecked.
		want = d.trailr()
		if err := d.alg.Validate(want); err != nil {
			return invalidChecksumValue(d.alg, d.res, err)
		}
	}
	if want != "" && want != checksum.Encode(sum) {
		return checksumMismatch(d.alg, d.res)
	}
	return nil
}

// checksumMismatch is S3's BadDigest for a flexible checksum.
func checksumMismatch(alg checksum.Algorithm, res string) error {
	return s3err.Newf(s3err.BadDigest, res, "The "+string(alg)+" you specified did not match the calculated checksum.")
}

func invalidChecksumValue(alg checksum.Algorithm, res string, err error) error {
	e := s3err.Newf(s3err.InvalidRequest, res, "Value for "+alg.Header()+" header is invalid.")
	e.Err = err
	return e
}

// checkAlgorithm rejects an algorithm that is not one of checksum's.
func checkAlgorithm(alg checksum.Algorithm, res string) error {
	if alg.Size() == 0 {
		e := s3err.Newf(s3err.InvalidRequest, res, "Checksum algorithm provided is unsupported. Please try again with any of the valid types: ["+checksum.Names()+"]")
		e.Err = errors.New("unknown checksum algorithm " + string(alg))
		return e
	}
	return nil
}

func lower(a checksum.Algorithm) string {
	b := []byte(a)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
