package s3blob

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Delete removes the upstream object Prefix+key with DeleteObject. An
// absent key is not an error (S3 answers 204 either way; a 404 from a
// stricter upstream is taken as success too). See blob.Store.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return fmt.Errorf("delete %q: %w", key, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	return s.delete(ctx, key)
}

// delete is Delete, with options for the SDK call.
func (s *Store) delete(ctx context.Context, key string, opts ...func(*s3.Options)) error {
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: s.objectKey(key)}, opts...)
	if err != nil && isNotFound(err) {
		err = nil
	}
	if err = s.upstreamErr(ctx, err); err != nil {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	return nil
}

// List calls fn for every blob key with the given prefix, page by page of
// ListObjectsV2 under Prefix+prefix, with Prefix removed. Upstream objects
// under Prefix whose names are not valid blob keys (which Put would have
// refused) are skipped, so that GC never sees, and never deletes, what
// another program left there; so is the prefix's claim (ClaimName). If fn
// returns an error, List stops and returns it unwrapped. See blob.Store.
func (s *Store) List(ctx context.Context, prefix string, fn func(key string) error) error {
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{
		Bucket: aws.String(s.bucket),
		Prefix: aws.String(s.prefix + prefix),
	})
	for p.HasMorePages() {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("list %q: %w", prefix, err)
		}
		// The transport bounds the wait for each answer's headers, not
		// for its body, which the SDK reads whole while decoding the
		// page: an upstream that stalls a listing's body would hang a GC
		// pass. So each page has the deadline of its attempts.
		pctx, cancel := context.WithTimeoutCause(ctx, s.pageTimeout(), errStalled)
		page, err := p.NextPage(pctx)
		if err != nil && ctx.Err() == nil && pctx.Err() != nil {
			err = stalled(err)
		}
		cancel()
		if err = s.upstreamErr(ctx, err); err != nil {
			return fmt.Errorf("list %q: %w", prefix, err)
		}
		for _, obj := range page.Contents {
			key, ok := strings.CutPrefix(aws.ToString(obj.Key), s.prefix)
			if !ok || key == ClaimName || checkKey(key) != nil {
				continue
			}
			if err := fn(key); err != nil {
				return err
			}
		}
	}
	return nil
}

// pageTimeout is the longest one page of a listing may take, its retries
// included: every attempt's Timeout plus the longest backoff before each
// attempt after the first.
func (s *Store) pageTimeout() time.Duration {
	n := max(s.retryer.MaxAttempts(), 1)
	return time.Duration(n)*s.timeout + time.Duration(n-1)*maxBackoff
}
