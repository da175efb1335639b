package s3blob

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/coffer-s3/coffer/internal/blob"
	"github.com/coffer-s3/coffer/internal/checksum"
)

// Get returns the upstream's response body for n bytes of key at off,
// streaming: a ranged GetObject (bytes=off-off+n-1, or bytes=off- for
// n < 0), or a plain one for the whole blob. See blob.Store.
//
// An absent key is blob.ErrNotFound. A range that starts at or past the end
// of the blob yields an empty reader, as the other stores do. A whole-blob
// Get (off 0, n < 0) asks for the stored checksum (x-amz-checksum-mode) and
// its reader verifies it at the end, failing with an error wrapping
// ErrChecksum on a mismatch; in MD5 mode it compares the MD5 with the ETag.
// Ranged reads are not verified: S3 keeps no checksum of a range.
func (s *Store) Get(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	if err := checkKey(key); err != nil {
		return nil, fmt.Errorf("get %q: %w", key, err)
	}
	if off < 0 {
		return nil, fmt.Errorf("get %s: negative offset %d", key, off)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	probe, done, err := s.gate()
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	defer done()
	var opts []func(*s3.Options)
	if probe {
		opts = append(opts, func(o *s3.Options) { o.Retryer = aws.NopRetryer{} })
	}
	rc, _, err := s.get(ctx, key, off, n, opts...)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", key, s.upstreamErr(ctx, err))
	}
	s.markUp(ctx)
	return rc, nil
}

// get is Get, with opts for every request it makes; verified reports
// whether the reader checks a digest.
func (s *Store) get(ctx context.Context, key string, off, n int64, opts ...func(*s3.Options)) (rc io.ReadCloser, verified bool, err error) {
	if n == 0 {
		// Nothing to read, but an absent key must still be reported.
		_, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: s.objectKey(key)}, opts...)
		if err != nil {
			if isNotFound(err) {
				return nil, false, blob.ErrNotFound
			}
			return nil, false, err
		}
		return io.NopCloser(bytes.NewReader(nil)), false, nil
	}
	whole := off == 0 && n < 0
	in := &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: s.objectKey(key)}
	if whole {
		// The header rather than in.ChecksumMode: that would make the SDK
		// verify too, and verifyingReader also covers MD5 mode.
		opts = append(opts, func(o *s3.Options) {
			o.APIOptions = append(o.APIOptions, smithyhttp.SetHeaderValue("X-Amz-Checksum-Mode", "ENABLED"))
		})
	} else {
		in.Range = aws.String(rangeHeader(off, n))
	}
	// The body is read under a context of its own, which a Read that
	// stalls for Config.Timeout cancels (see stallReader).
	gctx, cancel := context.WithCancelCause(ctx)
	out, err := s.client.GetObject(gctx, in, opts...)
	if err != nil {
		cancel(nil)
		switch {
		case isNotFound(err):
			return nil, false, blob.ErrNotFound
		case !whole && isInvalidRange(err):
			// S3 checks that the key exists before the range.
			return io.NopCloser(bytes.NewReader(nil)), false, nil
		}
		return nil, false, err
	}
	out.Body = s.newStallReader(ctx, out.Body, cancel)
	if whole {
		rc, verified = s.verifier(key, out)
		return rc, verified, nil
	}
	rc, err = fitRange(out, off, n)
	return rc, false, err
}

// rangeHeader returns the Range header for n bytes at off, n < 0 meaning
// to the end. No blob is larger than one PutObject, so a larger n means to
// the end too; that also keeps off+n-1 from overflowing here or upstream.
func rangeHeader(off, n int64) string {
	if n < 0 || n > maxPutSize || off > math.MaxInt64-n+1 {
		return "bytes=" + strconv.FormatInt(off, 10) + "-"
	}
	return "bytes=" + strconv.FormatInt(off, 10) + "-" + strconv.FormatInt(off+n-1, 10)
}

// fitRange returns the body of a ranged GetObject as at most n bytes from
// off. An upstream that ignored the Range header sent the whole object
// (200, no Content-Range): the bytes before off are skipped.
func fitRange(out *s3.GetObjectOutput, off, n int64) (io.ReadCloser, error) {
	body := out.Body
	if cr := aws.ToString(out.ContentRange); cr != "" {
		start, err := contentRangeStart(cr)
		if err != nil || start != off {
			body.Close()
			return nil, fmt.Errorf("upstream answered range %q for bytes from %d", cr, off)
		}
	} else if off > 0 {
		if _, err := io.CopyN(io.Discard, body, off); err != nil && err != io.EOF {
			body.Close()
			return nil, fmt.Errorf("skip to offset %d: %w", off, err)
		}
	}
	if n < 0 {
		return body, nil
	}
	return readCloser{io.LimitReader(body, n), body}, nil
}

// contentRangeStart returns the first byte of a Content-Range "bytes
// first-last/size".
func contentRangeStart(cr string) (int64, error) {
	rest, ok := strings.CutPrefix(cr, "bytes ")
	first, _, ok2 := strings.Cut(rest, "-")
	if !ok || !ok2 {
		return 0, fmt.Errorf("malformed Content-Range %q", cr)
	}
	return strconv.ParseInt(first, 10, 64)
}

// readCloser reads from a reader and closes a closer.
type readCloser struct {
	io.Reader
	io.Closer
}

// verifier wraps the body of a whole-blob GetObject in a verifyingReader if
// the answer carries a full-object checksum (or, in MD5 mode, an MD5 ETag).
func (s *Store) verifier(key string, out *s3.GetObjectOutput) (io.ReadCloser, bool) {
	if out.ChecksumType != types.ChecksumTypeComposite {
		for _, c := range []struct {
			alg checksum.Algorithm
			val *string
		}{
			{checksum.CRC32C, out.ChecksumCRC32C},
			{checksum.CRC64NVME, out.ChecksumCRC64NVME},
			{checksum.CRC32, out.ChecksumCRC32},
			{checksum.SHA256, out.ChecksumSHA256},
			{checksum.SHA1, out.ChecksumSHA1},
			{checksum.XXHASH128, out.ChecksumXXHASH128},
			{checksum.XXHASH3, out.ChecksumXXHASH3},
			{checksum.XXHASH64, out.ChecksumXXHASH64},
			{checksum.SHA512, out.ChecksumSHA512},
			{checksum.MD5, out.ChecksumMD5},
		} {
			if v := aws.ToString(c.val); v != "" && c.alg.Validate(v) == nil {
				return &verifyingReader{rc: out.Body, h: c.alg.New(), want: v, encode: checksum.Encode,
					what: "checksum " + string(c.alg), key: s.prefix + key, left: contentLength(out)}, true
			}
		}
	}
	if etag := strings.Trim(aws.ToString(out.ETag), `"`); s.integrity.md5 && isMD5Hex(etag) {
		return &verifyingReader{rc: out.Body, h: md5.New(), want: etag, encode: hex.EncodeToString,
			what: "ETag", key: s.prefix + key, left: contentLength(out)}, true
	}
	return out.Body, false
}

// contentLength returns the length of a GetObject answer's body, or -1 if
// the upstream did not say (a chunked answer).
func contentLength(out *s3.GetObjectOutput) int64 {
	if out.ContentLength == nil {
		return -1
	}
	return *out.ContentLength
}

// verifyingReader hashes what it reads and, at the end, fails with
// ErrChecksum unless the digest is the one the upstream stored. The end is
// the body's EOF, or, when its length is known, the Read that brings the
// last byte: a reader of exactly that many bytes (a LimitReader, a copy
// loop) never asks for the EOF, and the check must not wait for it.
type verifyingReader struct {
	rc     io.ReadCloser
	h      hash.Hash
	want   string
	encode func([]byte) string
	what   string // "checksum CRC32C", "ETag"
	key    string // the upstream key, for the error
	left   int64  // bytes still to come; -1 if not known
	err    error  // sticky once the end is reached
}

func (v *verifyingReader) Read(p []byte) (int, error) {
	if v.err != nil {
		return 0, v.err
	}
	n, err := v.rc.Read(p)
	v.h.Write(p[:n])
	if v.left >= 0 {
		v.left -= int64(n)
		if v.left <= 0 && err == nil {
			err = io.EOF
		}
	}
	if err == io.EOF {
		if got := v.encode(v.h.Sum(nil)); got != v.want {
			err = fmt.Errorf("%w: %s read from the upstream has %s, the upstream's %s is %s", ErrChecksum, v.key, got, v.what, v.want)
		}
		v.err = err
		return n, err
	}
	return n, err
}

func (v *verifyingReader) Close() error { return v.rc.Close() }
