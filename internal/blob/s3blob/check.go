package s3blob

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// probeSize is the size of the test blob New writes: more than one read
// buffer, so that framing and length checks are exercised.
const probeSize = 70 << 10

// checkBucket fails unless HeadBucket succeeds, with an error an operator
// can act on.
func (s *Store) checkBucket(ctx context.Context) error {
	_, err := s.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(s.bucket)})
	if err == nil {
		return nil
	}
	where := fmt.Sprintf("bucket %q at %s", s.bucket, s.endpoint)
	switch status := statusOf(err); {
	case status == 0:
		if cerr := ctx.Err(); cerr != nil {
			return fmt.Errorf("s3blob: check %s: %w", where, cerr)
		}
		return fmt.Errorf("s3blob: cannot reach %s: %w", where, err)
	case status == http.StatusMovedPermanently:
		// AWS answers 301 to a request signed for the wrong region.
		region := "another region"
		var re *smithyhttp.ResponseError
		if errors.As(err, &re) && re.Response != nil {
			if r := re.Response.Header.Get("X-Amz-Bucket-Region"); r != "" {
				region = "region " + r
			}
		}
		return fmt.Errorf("s3blob: %s is in %s, not %s: set the region to the bucket's: %w", where, region, s.region, err)
	case status == http.StatusNotFound:
		return fmt.Errorf("s3blob: %s does not exist (create it first): %w", where, err)
	case status == http.StatusForbidden || status == http.StatusBadRequest || status == http.StatusUnauthorized:
		// An answer to HEAD has no error document; a GET tells why.
		if derr := s.diagnose(ctx); derr != nil {
			err = derr
		}
		return fmt.Errorf("s3blob: %s refused access key %s%s: %w", where, s.accessKey, describeAPIError(err), err)
	default:
		return fmt.Errorf("s3blob: check %s: %w", where, err)
	}
}

// diagnose repeats checkBucket's request as a GET (ListObjectsV2 of at most
// one key under Prefix), whose error answer carries the S3 error code, and
// returns its error.
func (s *Store) diagnose(ctx context.Context) error {
	_, err := s.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{
		Bucket:  aws.String(s.bucket),
		Prefix:  aws.String(s.prefix),
		MaxKeys: aws.Int32(1),
	}, func(o *s3.Options) { o.Retryer = aws.NopRetryer{} })
	return err
}

// describeAPIError returns ": Code (message)" for an S3 error answer, or "".
func describeAPIError(err error) string {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return ""
	}
	if msg := ae.ErrorMessage(); msg != "" {
		return fmt.Sprintf(": %s (%s)", ae.ErrorCode(), msg)
	}
	return ": " + ae.ErrorCode()
}

// probe puts a test blob under Prefix, reads it back whole, compares it and
// deletes it. It proves the credentials may write, read and delete, and
// that the upstream stores what the configured Checksum mode sends: an
// upstream that does not decode aws-chunked bodies would store the framing
// too, and be caught here rather than by the first object read.
func (s *Store) probe(ctx context.Context) error {
	var id [8]byte
	rand.Read(id[:])
	key := "s3blob-probe/" + hex.EncodeToString(id[:])
	data := make([]byte, probeSize)
	rand.Read(data)
	where := fmt.Sprintf("bucket %q at %s (key %s, access key %s, checksum %s)",
		s.bucket, s.endpoint, s.prefix+key, s.accessKey, s.integrity)

	if err := s.Put(ctx, key, bytes.NewReader(data), int64(len(data))); err != nil {
		hint := ""
		if st := statusOf(err); s.integrity.alg != "" && st >= 400 && st < 500 && st != http.StatusForbidden {
			hint = "; if the upstream does not accept aws-chunked bodies with a checksum trailer, set the checksum mode to MD5 or none"
		}
		return fmt.Errorf("s3blob: test write to %s failed%s%s: %w", where, describeAPIError(err), hint, err)
	}
	got, verified, err := s.readProbe(ctx, key)
	if err == nil && !bytes.Equal(got, data) {
		err = fmt.Errorf("read back %d bytes that differ from the %d written", len(got), len(data))
		if s.integrity.alg != "" {
			err = fmt.Errorf("%w: the upstream does not decode aws-chunked bodies; set the checksum mode to MD5 or none", err)
		}
	}
	if derr := s.Delete(ctx, key); err == nil && derr != nil {
		err = fmt.Errorf("delete: %w", derr)
	}
	if err != nil {
		return fmt.Errorf("s3blob: test blob in %s%s: %w", where, describeAPIError(err), err)
	}
	if !verified && s.integrity != (integrity{}) {
		s.log.WarnContext(ctx, "upstream returns no checksum for whole-blob reads; reads are not verified",
			"bucket", s.bucket, "checksum", s.integrity.String())
	}
	return nil
}

// readProbe reads the whole test blob.
func (s *Store) readProbe(ctx context.Context, key string) ([]byte, bool, error) {
	rc, verified, err := s.get(ctx, key, 0, -1)
	if err != nil {
		return nil, false, fmt.Errorf("read back: %w", err)
	}
	defer rc.Close()
	got, err := io.ReadAll(io.LimitReader(rc, 2*probeSize))
	if err != nil {
		return nil, false, fmt.Errorf("read back: %w", err)
	}
	return got, verified, nil
}
