package s3blob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/coffer-s3/coffer/internal/blob"
	"github.com/coffer-s3/coffer/internal/checksum"
)

// Payload hashes a Put signs instead of a SHA-256 of the body (see the
// package doc).
const (
	unsignedPayload         = "UNSIGNED-PAYLOAD"
	unsignedPayloadTrailer  = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
	computePayloadHashID    = "ComputePayloadHash" // the SDK's middleware
	payloadHashMiddlewareID = "coffer:s3blob:PayloadHash"
)

// Put streams exactly size bytes from r to the upstream object Prefix+key
// in one PutObject, holding no more of it in memory than the transport's
// buffers (all of it for blob.SizeUnknown). See blob.Store, and the package doc for how the body is framed,
// checked and signed.
//
// A reader that yields fewer or more than size bytes makes Put fail with
// an error wrapping blob.ErrSize; a failing reader, with its error; a
// context that ends, with the context's error. In all three the request is
// aborted before the upstream has the whole body, so nothing is stored. If
// the outcome is unknown (the whole body was sent, then the connection or
// the context ended before the answer), Put deletes key before returning
// the error.
//
// Put retries a retryable failure (Config.MaxAttempts) only while no byte
// of r has been read: when the upstream refused the request before taking
// the body, as with Expect: 100-continue, which the SDK sends for bodies of
// 2 MiB and more. r is never read again after Put returns.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if err := checkKey(key); err != nil {
		return fmt.Errorf("put %q: %w", key, err)
	}
	if size == blob.SizeUnknown {
		// One PutObject needs its length up front: hold the blob in
		// memory (the caller bounds it; see blob.SizeUnknown).
		data, err := io.ReadAll(io.LimitReader(r, maxPutSize+1))
		if err != nil {
			return fmt.Errorf("put %s: %w", key, err)
		}
		r, size = bytes.NewReader(data), int64(len(data))
	}
	if size < 0 {
		return fmt.Errorf("put %s: negative size %d: %w", key, size, blob.ErrSize)
	}
	if size > maxPutSize {
		return fmt.Errorf("put %s: %d bytes is more than one PutObject takes (5 GiB)", key, size)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	probe, done, err := s.gate()
	if err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	defer done()
	attempts := s.retryer.MaxAttempts()
	if probe {
		attempts = 1
	}
	if err := s.put(ctx, key, r, size, attempts); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	return nil
}

// put is Put, with at most attempts attempts.
func (s *Store) put(ctx context.Context, key string, r io.Reader, size int64, attempts int) error {
	b := newBody(ctx, r, size, s.integrity)
	defer b.close()
	if size == 0 {
		if err := b.checkEmpty(); err != nil {
			return err
		}
	}
	for attempt := 1; ; attempt++ {
		out, err := s.putAttempt(ctx, key, b)
		if berr := b.failure(); berr != nil {
			// The body failed: the request was aborted short of its end.
			// (A success here would be an upstream storing a truncated
			// body; do not leave it.)
			if err == nil {
				s.cleanup(ctx, key, false)
			}
			return berr
		}
		if err == nil {
			s.markUp(ctx)
			return s.verifyPut(ctx, key, b, out)
		}
		if cerr := ctx.Err(); cerr != nil {
			if b.delivered() {
				s.cleanup(ctx, key, false)
			}
			return fmt.Errorf("%w (%v)", cerr, err)
		}
		if statusOf(err) == 0 && b.delivered() {
			// No answer to a whole body: it may be stored.
			err = s.upstreamErr(ctx, err)
			s.cleanup(ctx, key, errors.Is(err, blob.ErrUnavailable))
			return err
		}
		if attempt >= attempts || !s.retryer.IsErrorRetryable(err) || b.consumed() {
			return s.upstreamErr(ctx, err)
		}
		delay, derr := s.retryer.RetryDelay(attempt, err)
		if derr != nil {
			return s.upstreamErr(ctx, err)
		}
		s.log.DebugContext(ctx, "retrying put", "bucket", s.bucket, "key", s.prefix+key,
			"attempt", attempt+1, "delay", delay, "err", err)
		if serr := sleep(ctx, delay); serr != nil {
			return fmt.Errorf("%w (retrying after %v)", serr, err)
		}
	}
}

// putAttempt sends one PutObject reading b through a fresh handle. The
// SDK's own retries are off: only put knows whether b can be resent.
//
// The attempt fails, with an error wrapping errStalled, if the upstream
// stalls it for Config.Timeout: a watchdog runs whenever the transport is
// not reading the body (dialing, sending headers, waiting for 100
// Continue, writing the body to a socket the upstream does not drain,
// waiting for the answer) and is paused while it reads (the body's source
// is the caller's, and its pace is not the upstream's fault).
func (s *Store) putAttempt(ctx context.Context, key string, b *body) (*s3.PutObjectOutput, error) {
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	w := time.AfterFunc(s.timeout, func() { cancel(errStalled) })
	defer w.Stop()
	out, err := s.sendAttempt(actx, key, b, &watchdog{t: w, d: s.timeout})
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(actx), errStalled) {
		err = stalled(err)
	}
	return out, err
}

// watchdog is the timer of one Put attempt (see putAttempt).
type watchdog struct {
	t *time.Timer
	d time.Duration
}

func (w *watchdog) pause()  { w.t.Stop() }
func (w *watchdog) resume() { w.t.Reset(w.d) }

// sendAttempt is putAttempt without its watchdog.
func (s *Store) sendAttempt(ctx context.Context, key string, b *body, w *watchdog) (*s3.PutObjectOutput, error) {
	in := &s3.PutObjectInput{
		Bucket:        aws.String(s.bucket),
		Key:           s.objectKey(key),
		ContentLength: aws.Int64(b.encLen),
		ContentType:   aws.String("application/octet-stream"),
	}
	stackFns := []func(*middleware.Stack) error{payloadHash(unsignedPayload)}
	switch {
	case b.size == 0 && s.integrity.alg != "":
		// Nothing to frame: the checksum of no bytes goes in a header.
		stackFns = append(stackFns, smithyhttp.SetHeaderValue(s.integrity.alg.Header(), b.digest(s.integrity)))
	case b.trailer != "":
		in.ContentEncoding = aws.String("aws-chunked")
		stackFns = []func(*middleware.Stack) error{
			payloadHash(unsignedPayloadTrailer),
			smithyhttp.SetHeaderValue("X-Amz-Trailer", b.trailer),
			smithyhttp.SetHeaderValue("X-Amz-Decoded-Content-Length", strconv.FormatInt(b.size, 10)),
			smithyhttp.SetHeaderValue("X-Amz-Sdk-Checksum-Algorithm", string(s.integrity.alg)),
		}
	}
	if b.encLen > 0 {
		ab, err := b.attempt()
		if err != nil {
			return nil, err
		}
		ab.watch = w
		in.Body = ab
	}
	return s.client.PutObject(ctx, in, func(o *s3.Options) {
		o.Retryer = aws.NopRetryer{}
		o.APIOptions = append(o.APIOptions, stackFns...)
	})
}

// payloadHash makes the SDK sign hash as the payload's instead of hashing
// the body, which it could do only by reading it twice.
func payloadHash(hash string) func(*middleware.Stack) error {
	return func(st *middleware.Stack) error {
		return st.Finalize.Insert(middleware.FinalizeMiddlewareFunc(payloadHashMiddlewareID,
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				return next.HandleFinalize(v4.SetPayloadHash(ctx, hash), in)
			}), computePayloadHashID, middleware.Before)
	}
}

// verifyPut checks the upstream's answer against the digest of the bytes
// sent: the checksum it echoes, if it does (it verified the trailer before
// storing), or the ETag in MD5 mode. On a mismatch it deletes the blob.
func (s *Store) verifyPut(ctx context.Context, key string, b *body, out *s3.PutObjectOutput) error {
	var got, want, what string
	switch {
	case s.integrity.alg != "":
		got = putChecksum(out, s.integrity.alg)
		if got == "" {
			return nil // not echoed; the upstream verified the trailer
		}
		want, what = b.digest(s.integrity), "checksum "+string(s.integrity.alg)
	case s.integrity.md5:
		got = strings.Trim(aws.ToString(out.ETag), `"`)
		want, what = b.digest(s.integrity), "ETag"
		if !isMD5Hex(got) {
			s.cleanup(ctx, key, false)
			return fmt.Errorf("upstream ETag %q is not an MD5 digest, which checksum mode MD5 needs (use a CRC or none)", got)
		}
	default:
		return nil
	}
	if got != want {
		s.cleanup(ctx, key, false)
		return fmt.Errorf("%w: upstream %s is %s, the body sent has %s", ErrChecksum, what, got, want)
	}
	return nil
}

// putChecksum returns the checksum of algorithm a in a PutObject answer.
func putChecksum(out *s3.PutObjectOutput, a checksum.Algorithm) string {
	switch a {
	case checksum.CRC32:
		return aws.ToString(out.ChecksumCRC32)
	case checksum.CRC32C:
		return aws.ToString(out.ChecksumCRC32C)
	case checksum.CRC64NVME:
		return aws.ToString(out.ChecksumCRC64NVME)
	case checksum.SHA1:
		return aws.ToString(out.ChecksumSHA1)
	case checksum.SHA256:
		return aws.ToString(out.ChecksumSHA256)
	case checksum.SHA512:
		return aws.ToString(out.ChecksumSHA512)
	case checksum.XXHASH64:
		return aws.ToString(out.ChecksumXXHASH64)
	case checksum.XXHASH3:
		return aws.ToString(out.ChecksumXXHASH3)
	case checksum.XXHASH128:
		return aws.ToString(out.ChecksumXXHASH128)
	}
	return ""
}

// isMD5Hex reports whether s is 32 lower-case hex digits, the ETag S3
// gives a single-PUT object that is not encrypted with SSE-KMS or SSE-C.
func isMD5Hex(s string) bool {
	if len(s) != 32 {
		return false
	}
	for i := range len(s) {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
