package s3api

import (
	"net/http"
	"strings"
	"time"

	"github.com/coffer-s3/coffer/internal/objects"
)

// parseReadConditions returns the If-Match, If-None-Match,
// If-Modified-Since and If-Unmodified-Since preconditions of a GET or
// HEAD. Dates are HTTP dates in any of the three formats RFC 9110 allows; a
// date that does not parse is ignored, as S3 ignores it.
func parseReadConditions(h http.Header) objects.ReadConditions {
	return objects.ReadConditions{
		IfMatch:           strings.TrimSpace(h.Get("If-Match")),
		IfNoneMatch:       strings.TrimSpace(h.Get("If-None-Match")),
		IfModifiedSince:   parseHTTPDate(h.Get("If-Modified-Since")),
		IfUnmodifiedSince: parseHTTPDate(h.Get("If-Unmodified-Since")),
	}
}

// parseCopySourceConditions returns the x-amz-copy-source-if-*
// preconditions of CopyObject and UploadPartCopy, parsed as
// parseReadConditions parses the If-* headers.
func parseCopySourceConditions(h http.Header) objects.ReadConditions {
	return objects.ReadConditions{
		IfMatch:           strings.TrimSpace(h.Get("X-Amz-Copy-Source-If-Match")),
		IfNoneMatch:       strings.TrimSpace(h.Get("X-Amz-Copy-Source-If-None-Match")),
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
		IfMatch:     strings.TrimSpace(h.Get("If-Match")),
		IfNoneMatch: strings.TrimSpace(h.Get("If-None-Match")),
	}, nil
}
