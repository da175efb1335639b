package adminapi

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/s3err"
)

// Buckets is what the Handler needs of the object service for the bucket
// and usage endpoints. *objects.Service implements it; every method must be
// safe for concurrent use.
type Buckets interface {
	BucketsUsage(ctx context.Context) ([]objects.BucketUsage, error)
	BucketUsage(ctx context.Context, name string) (objects.BucketUsage, error)
	// BucketPolicy returns a bucket's policy document, or an *s3err.Error
	// with code NoSuchBucketPolicy if it has none.
	BucketPolicy(ctx context.Context, bucket string) ([]byte, error)
	BucketPolicies(ctx context.Context) (map[string][]byte, error)
	CheckUsage(ctx context.Context, repair bool) (objects.UsageCheck, error)
}

var _ Buckets = (*objects.Service)(nil)

// errNoBuckets answers the bucket endpoints of a Handler without Buckets.
var errNoBuckets = errorf(http.StatusNotImplemented, CodeNotImplemented, "bucket information is not available on this server")

// listBuckets lists the buckets the caller may see, by the rule of S3's
// ListBuckets (iam.CanSeeBucket): root sees all of them.
func (h *Handler) listBuckets(ctx context.Context, rq *request) (any, error) {
	if h.buckets == nil {
		return nil, errNoBuckets
	}
	all, err := h.buckets.BucketsUsage(ctx)
	if err != nil {
		return nil, err
	}
	policies, err := h.buckets.BucketPolicies(ctx)
	if err != nil {
		return nil, err
	}
	out := BucketList{Buckets: []BucketInfo{}}
	for _, bu := range all {
		if h.iam.CanSeeBucket(rq.principal, bu.Name) {
			out.Buckets = append(out.Buckets, h.bucketInfoFor(rq, bu, policies[bu.Name]))
		}
	}
	return out, nil
}

// getBucket describes one bucket. A bucket the caller may not see is
// refused as AccessDenied whether or not it exists, so that the answer does
// not tell which names are taken.
func (h *Handler) getBucket(ctx context.Context, rq *request) (any, error) {
	if h.buckets == nil {
		return nil, errNoBuckets
	}
	name := rq.vars[0]
	if !h.iam.CanSeeBucket(rq.principal, name) {
		return nil, errorf(http.StatusForbidden, CodeAccessDenied, "%s may not see bucket %s", who(rq.principal), name)
	}
	bu, err := h.buckets.BucketUsage(ctx, name)
	if err != nil {
		return nil, err
	}
	doc, err := h.buckets.BucketPolicy(ctx, name)
	switch {
	case s3err.Is(err, s3err.NoSuchBucketPolicy):
		doc = nil
	case err != nil:
		return nil, err
	}
	return h.bucketInfoFor(rq, bu, doc), nil
}

// bucketInfoFor is bucketInfo told to rq's caller: the bucket's usage and
// whether it is public only to a caller S3 would tell them, one that may
// list the whole bucket and one that may get its policy status.
func (h *Handler) bucketInfoFor(rq *request, bu objects.BucketUsage, policy []byte) BucketInfo {
	bi := bucketInfo(bu, policy)
	if !h.may(rq, iam.ListBucket, bu.Name) {
		bi.Usage, bi.UsageCorrupt, bi.UsageHidden = Usage{}, false, true
	}
	if bi.Public && !h.may(rq, iam.GetBucketPolicyStatus, bu.Name) {
		bi.Public = false
	}
	return bi
}

// bucketInfo describes bu, public if its policy document grants anything
// to everyone.
func bucketInfo(bu objects.BucketUsage, policy []byte) BucketInfo {
	bi := BucketInfo{
		Name: bu.Name, Region: bu.Region, Created: bu.Created,
		Usage: Usage(bu.Usage), UsageCorrupt: bu.UsageCorrupt,
	}
	if policy != nil {
		// Stored policies were validated when they were set; one that no
		// longer parses grants nothing, as iam treats it.
		bi.Public, _ = iam.ParseBucketPolicy(bu.Name, policy)
	}
	return bi
}

// who names a principal in messages.
func who(p iam.Principal) string {
	if p.User != "" {
		return "user " + p.User
	}
	return "access key " + p.AccessKeyID
}

func (h *Handler) checkUsage(ctx context.Context, rq *request) (any, error) {
	if h.buckets == nil {
		return nil, errNoBuckets
	}
	var in UsageCheckRequest
	if len(bytes.TrimSpace(rq.body)) > 0 {
		if err := decodeJSON(rq.body, &in); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	c, err := h.buckets.CheckUsage(ctx, in.Repair)
	if err != nil {
		return nil, fmt.Errorf("check usage (repaired %d): %w", c.Repaired, err)
	}
	out := UsageCheckResult{
		Buckets: c.Buckets, Mismatches: []UsageMismatch{}, Repaired: c.Repaired,
		DurationSeconds: time.Since(start).Seconds(),
	}
	for _, m := range c.Mismatches {
		out.Mismatches = append(out.Mismatches, UsageMismatch{
			Bucket: m.Bucket, Stored: Usage(m.Stored), Counted: Usage(m.Counted), Problem: m.Problem,
		})
	}
	return out, nil
}

// may reports whether rq's caller may perform action on bucket, as S3
// would decide it for a request of the same caller.
func (h *Handler) may(rq *request, action iam.Action, bucket string) bool {
	return h.iam.Authorize(rq.r.Context(), iam.Request{Principal: rq.principal, Action: action, Bucket: bucket, Cond: conditions(rq.r, rq.auth)}) == nil
}
