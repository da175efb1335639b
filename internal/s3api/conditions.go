package s3api

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/coffer-s3/coffer/internal/objects"
)

// parseReadConditions returns the If-Match, If-None-Match,
// If-Modified-Since and If-Unmodified-Since preconditions of a GET or
// HEAD, and its If-Range. Dates are HTTP dates in any of the three formats RFC 9110 allows; a
// date that does not parse is ignored, as S3 ignores it.
func parseReadConditions(h http.Header) objects.ReadConditions {
	return objects.ReadConditions{
		IfMatch:           etagList(h, "If-Match"),
		IfNoneMatch:       etagList(h, "If-None-Match"),
		IfModifiedSince:   parseHTTPDate(h.Get("If-Modified-Since")),
		IfUnmodifiedSince: parseHTTPDate(h.Get("If-Unmodified-Since")),
		IfRange:           parseIfRange(h.Get("If-Range")),
	}
}

// parseIfRange parses If-Range: a quoted entity tag. A weak entity tag,
// an HTTP date (see objects.RangeValidator: never honoured) or anything
// else is a validator that never holds: the Range is not served, as RFC
// 9110 section 13.1.5 asks of a validator that does not match.
func parseIfRange(v string) *objects.RangeValidator {
	v = strings.TrimSpace(v)
	switch {
	case v == "":
		return nil
	case len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"':
		return &objects.RangeValidator{ETag: v[1 : len(v)-1]}
	}
	return &objects.RangeValidator{}
}

// parseCopySourceConditions returns the x-amz-copy-source-if-*
// preconditions of CopyObject and UploadPartCopy, parsed as
// parseReadConditions parses the If-* headers.
func parseCopySourceConditions(h http.Header) objects.ReadConditions {
	return objects.ReadConditions{
		IfMatch:           etagList(h, "X-Amz-Copy-Source-If-Match"),
		IfNoneMatch:       etagList(h, "X-Amz-Copy-Source-If-None-Match"),
		IfModifiedSince:   parseHTTPDate(h.Get("X-Amz-Copy-Source-If-Modified-Since")),
		IfUnmodifiedSince: parseHTTPDate(h.Get("X-Amz-Copy-Source-If-Unmodified-Since")),
	}
}

// parseHTTPDate parses an HTTP date, returning the zero time for "" or
// anything that does not parse.
func parseHTTPDate(s string) time.Time {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}
	}
	t, err := http.ParseTime(s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// parseWriteConditions returns the conditional-write preconditions of
// PutObject, CopyObject and CompleteMultipartUpload: If-None-Match (* to
// create only, or ETags the current object must not have) and If-Match.
// The service evaluates them atomically with the commit.
// https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes.html
func parseWriteConditions(h http.Header) (objects.WriteConditions, error) {
	return objects.WriteConditions{
		IfMatch:     etagList(h, "If-Match"),
		IfNoneMatch: etagList(h, "If-None-Match"),
	}, nil
}

// parseDeleteConditions returns the preconditions of a conditional
// DeleteObject: If-Match (* or ETags), x-amz-if-match-last-modified-time
// (parseTimestamp) and x-amz-if-match-size. A
// value that does not parse is InvalidArgument: ignoring it would delete
// unconditionally what the client meant to protect.
// https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-deletes.html
func parseDeleteConditions(h http.Header) (objects.DeleteConditions, error) {
	c := objects.DeleteConditions{IfMatch: etagList(h, "If-Match")}
	if v := strings.TrimSpace(h.Get("X-Amz-If-Match-Last-Modified-Time")); v != "" {
		t, ok := parseTimestamp(v)
		if !ok {
			return c, invalidArgument("x-amz-if-match-last-modified-time", v, "Invalid date in x-amz-if-match-last-modified-time.")
		}
		c.IfMatchLastModified = &t
	}
	if v := strings.TrimSpace(h.Get("X-Amz-If-Match-Size")); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || v[0] == '+' {
			return c, invalidArgument("x-amz-if-match-size", v, "x-amz-if-match-size must be a non-negative integer.")
		}
		c.IfMatchSize = &n
	}
	return c, nil
}

// parseTimestamp parses a conditional delete's time: an HTTP date (the
// SDKs send one, in the header and in DeleteObjects' XML alike) or an ISO
// 8601 timestamp.
func parseTimestamp(v string) (time.Time, bool) {
	if t, err := http.ParseTime(v); err == nil {
		return t, true
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	return t, err == nil
}

// deleteReveals reports whether a conditional delete tells its sender
// something about the object beyond its existence (an ETag, time or size
// that matched or not), so that it needs read permission too, as S3
// requires s3:GetObject for If-Match with an ETag.
func deleteReveals(c objects.DeleteConditions) bool {
	return (c.IfMatch != "" && c.IfMatch != "*") || c.IfMatchLastModified != nil || c.IfMatchSize != nil
}

// etagList returns the ETags of the header name: one list of all its
// lines, as RFC 9110 reads a field sent on several lines (a second
// If-Match line is not ignored).
func etagList(h http.Header, name string) string {
	vs := h.Values(name)
	if len(vs) == 1 {
		return strings.TrimSpace(vs[0])
	}
	return strings.TrimSpace(strings.Join(vs, ","))
}
