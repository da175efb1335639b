package sigv4

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"net/http"
	"strings"

	"github.com/coffer-s3/coffer/internal/s3err"
)

// Trailer is one trailing header of an aws-chunked body.
type Trailer struct {
	Name  string // lowercase, e.g. "x-amz-checksum-crc32c"
	Value string
}

// Body is a request body as the object layer must read it instead of
// r.Body. Depending on Result.Payload it passes bytes through, checks their
// SHA-256, or decodes and verifies aws-chunked encoding.
//
// Only a Read that returns io.EOF vouches for the body: every verification
// error is returned by Read, with n == 0, before the bytes it concerns are
// released, and never later than the Read that delivers the last declared
// byte. A caller that stops reading early must discard what it read. Body is
// not safe for concurrent use.
type Body struct {
	rc   io.ReadCloser
	mode PayloadMode
	err  error // sticky

	// PayloadSigned.
	hash   hash.Hash
	want   [32]byte
	remain int64 // bytes left per Content-Length, or -1 if unknown

	// Streaming modes.
	chunked chunkedReader
}

var (
	_ io.ReadCloser = (*Body)(nil)
	_ io.Reader     = (*chunkedReader)(nil)
)

// Body wraps a request body (normally r.Body) in the reader that enforces
// rs.Payload. It returns an error if rs did not come from Verify.
func (rs *Result) Body(body io.ReadCloser) (*Body, error) {
	if body == nil {
		body = http.NoBody
	}
	b := &Body{rc: body, mode: rs.Payload}
	switch rs.Payload {
	case PayloadUnsigned:
	case PayloadSigned:
		if !parseSignature(&b.want, rs.ContentSHA256) {
			return nil, errors.New("sigv4: result has no valid content sha256")
		}
		b.hash = sha256.New()
		b.remain = rs.contentLength
	case PayloadStreamingSigned, PayloadStreamingSignedTrailer:
		if rs.key == nil {
			return nil, errors.New("sigv4: result has no signing key for a signed stream")
		}
		b.chunked.init(body, rs)
	case PayloadStreamingUnsignedTrailer:
		b.chunked.init(body, rs)
	default:
		return nil, errors.New("sigv4: unknown payload mode " + rs.Payload.String())
	}
	return b, nil
}

// Read implements io.Reader.
func (b *Body) Read(p []byte) (int, error) {
	switch b.mode {
	case PayloadUnsigned:
		return b.rc.Read(p)
	case PayloadSigned:
		return b.readSigned(p)
	}
	return b.chunked.Read(p)
}

// Close closes the underlying body.
func (b *Body) Close() error { return b.rc.Close() }

// Trailer returns the value of the named trailing header (case-insensitive),
// or "" if it was not sent. Trailers are known only once Read has returned
// io.EOF.
func (b *Body) Trailer(name string) string {
	if b.chunked.err != io.EOF {
		return ""
	}
	for _, t := range b.chunked.trailers {
		if strings.EqualFold(t.Name, name) {
			return t.Value
		}
	}
	return ""
}

// Trailers returns the trailing headers once Read has returned io.EOF. The
// caller must not modify the slice.
func (b *Body) Trailers() []Trailer {
	if b.chunked.err != io.EOF {
		return nil
	}
	return b.chunked.trailers
}

// readSigned passes bytes through while hashing them, and compares the hash
// with x-amz-content-sha256 at the end of the body.
func (b *Body) readSigned(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.remain == 0 {
		b.err = b.checkSum()
		return 0, b.err
	}
	if b.remain > 0 && int64(len(p)) > b.remain {
		p = p[:b.remain]
	}
	n, err := b.rc.Read(p)
	b.hash.Write(p[:n])
	if b.remain > 0 {
		b.remain -= int64(n)
	}
	switch {
	case err == io.EOF && b.remain > 0:
		b.err = s3err.Newf(s3err.IncompleteBody, "", "The request body terminated unexpectedly")
		return 0, b.err
	case err == io.EOF || b.remain == 0:
		if b.err = b.checkSum(); b.err != io.EOF {
			return 0, b.err
		}
		return n, io.EOF
	case err != nil:
		b.err = err
	}
	return n, err
}

// checkSum returns io.EOF if the body hashed to the declared value.
func (b *Body) checkSum() error {
	var got [32]byte
	b.hash.Sum(got[:0])
	if got == b.want {
		return io.EOF
	}
	return s3err.New(s3err.XAmzContentSHA256Mismatch, "").
		With("ClientComputedContentSHA256", hex.EncodeToString(b.want[:])).
		With("S3ComputedContentSHA256", hex.EncodeToString(got[:]))
}
