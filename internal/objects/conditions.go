package objects

import (
	"strings"
	"time"

	"github.com/coffer-s3/coffer/internal/meta"
	"github.com/coffer-s3/coffer/internal/s3err"
)

// checkRead evaluates the If-* preconditions of a GET or HEAD (RFC 7232
// section 6, with S3's documented precedence) against an object with the
// given ETag and modification time. For a copy source (copySource) every
// failure is PreconditionFailed; for GET and HEAD a failed If-None-Match or
// If-Modified-Since is NotModified.
//
// If-Match, when present, decides alone and If-Unmodified-Since is ignored
// (so If-Match true with If-Unmodified-Since false serves the object);
// likewise If-None-Match decides alone over If-Modified-Since. See
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html and
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_CopyObject.html
func checkRead(c ReadConditions, res, etag string, modified time.Time, copySource bool) error {
	// HTTP dates have whole seconds; compare at that resolution so that a
	// client echoing Last-Modified back sees the object as unmodified.
	lm := modified.Truncate(time.Second)
	failed := func() *s3err.Error { return s3err.New(s3err.PreconditionFailed, res) }
	switch {
	case c.IfMatch != "":
		if !etagMatches(c.IfMatch, etag) {
			return failed().With("Condition", "If-Match")
		}
	case !c.IfUnmodifiedSince.IsZero():
		if lm.After(c.IfUnmodifiedSince) {
			return failed().With("Condition", "If-Unmodified-Since")
		}
	}
	notModified := func(cond string) error {
		if copySource {
			return failed().With("Condition", cond)
		}
		return s3err.New(s3err.NotModified, res)
	}
	switch {
	case c.IfNoneMatch != "":
		if etagMatches(c.IfNoneMatch, etag) {
			return notModified("If-None-Match")
		}
	case !c.IfModifiedSince.IsZero():
		if !lm.After(c.IfModifiedSince) {
			return notModified("If-Modified-Since")
		}
	}
	return nil
}

// etagMatches reports whether a list of entity tags from If-Match or
// If-None-Match ("*", or comma-separated, quoted or not) names etag.
// Comparison is by value: S3 ETags are never weak.
func etagMatches(list, etag string) bool {
	for t := range strings.SplitSeq(list, ",") {
		t = strings.TrimSpace(t)
		if t == "*" {
			return true
		}
		// An empty entry ("" or a stray comma) names no ETag: it must not
		// match a delete marker, whose ETag is empty.
		if n := normETag(t); n != "" && n == etag {
			return true
		}
	}
	return false
}

// checkWrite evaluates the conditional-write preconditions against the
// current object (nil if absent, or if the latest version is a delete
// marker). It runs inside the commit, under the key's lock, so the check
// and the write are atomic. If-None-Match (* or a list of ETags) fails when
// the current object matches it; If-Match fails with NoSuchKey when there
// is no current object (as S3 documents for conditional writes) and with
// PreconditionFailed when its ETag does not match (* matches any). See
// https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes.html
func checkWrite(c WriteConditions, old *meta.Object, bucket, key string) error {
	res := bucket + "/" + key
	if c.IfNoneMatch != "" && old != nil && etagMatches(c.IfNoneMatch, old.ETag) {
		return s3err.New(s3err.PreconditionFailed, res).With("Condition", "If-None-Match")
	}
	if c.IfMatch != "" {
		if old == nil {
			return noSuchKey(bucket, key)
		}
		if !etagMatches(c.IfMatch, old.ETag) {
			return s3err.New(s3err.PreconditionFailed, res).With("Condition", "If-Match")
		}
	}
	return nil
}

func (c WriteConditions) set() bool { return c.IfMatch != "" || c.IfNoneMatch != "" }

func (c DeleteConditions) set() bool {
	return c.IfMatch != "" || c.IfMatchLastModified != nil || c.IfMatchSize != nil
}

// check evaluates the conditions against o, the version a delete acts on
// (see DeleteConditions); every one that is present must hold.
func (c DeleteConditions) check(o *meta.Object, res string) error {
	failed := func(cond string) error {
		return s3err.New(s3err.PreconditionFailed, res).With("Condition", cond)
	}
	if c.IfMatch != "" && !etagMatches(c.IfMatch, o.ETag) {
		return failed("If-Match")
	}
	if c.IfMatchLastModified != nil &&
		!o.Modified.Truncate(time.Second).Equal(c.IfMatchLastModified.Truncate(time.Second)) {
		return failed("x-amz-if-match-last-modified-time")
	}
	if c.IfMatchSize != nil && *c.IfMatchSize != o.Size {
		return failed("x-amz-if-match-size")
	}
	return nil
}
