package s3api

import (
	"math"
	"strings"

	"github.com/coffer-s3/coffer/internal/objects"
)

// parseRange parses a GetObject Range header into an unresolved range.
// S3 serves one range per request: a header with several ranges, or one it
// cannot parse (a unit other than bytes, last < first, junk), is ignored
// and the whole object is served with 200, as S3 and RFC 9110 §14.2 do; in
// that case parseRange returns nil, nil. Numbers too large for an int64
// saturate, so that the service finds them unsatisfiable (416) or
// open-ended; so does it the empty suffix "bytes=-0", which no object can
// satisfy (its 416 names the object's size).
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html#API_GetObject_RequestSyntax
func parseRange(hdr string) *objects.Range {
	unit, spec, ok := strings.Cut(strings.TrimSpace(hdr), "=")
	if !ok || !strings.EqualFold(strings.TrimSpace(unit), "bytes") || strings.Contains(spec, ",") {
		return nil
	}
	first, last, ok := strings.Cut(strings.TrimSpace(spec), "-")
	if !ok {
		return nil
	}
	first, last = strings.TrimSpace(first), strings.TrimSpace(last)
	if first == "" {
		n, ok := parseDigits(last)
		switch {
		case !ok:
			return nil
		}
		return &objects.Range{Start: -1, End: -1, Suffix: n} // n may be 0
	}
	start, ok := parseDigits(first)
	if !ok {
		return nil
	}
	if last == "" {
		return &objects.Range{Start: start, End: -1}
	}
	end, ok := parseDigits(last)
	if !ok || end < start {
		return nil
	}
	return &objects.Range{Start: start, End: end}
}

// parseDigits parses a non-empty string of ASCII digits, saturating at
// math.MaxInt64. It reports false for anything else, including signs.
func parseDigits(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if n > (math.MaxInt64-d)/10 {
			n = math.MaxInt64
			continue // keep checking that the rest is digits
		}
		n = n*10 + d
	}
	return n, true
}

// parseCopyRange parses x-amz-copy-source-range for UploadPartCopy. Unlike
// Range, it must be exactly bytes=first-last with first <= last, or S3
// answers InvalidArgument; "" means the whole source.
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_UploadPartCopy.html
func parseCopyRange(hdr string) (*objects.Range, error) {
	if hdr == "" {
		return nil, nil
	}
	bad := func() error {
		return invalidArgument("x-amz-copy-source-range", hdr,
			"The x-amz-copy-source-range value must be of the form bytes=first-last where first and last are the zero-based offsets of the first and last bytes to copy")
	}
	spec, ok := strings.CutPrefix(hdr, "bytes=")
	if !ok {
		return nil, bad()
	}
	first, last, ok := strings.Cut(spec, "-")
	if !ok {
		return nil, bad()
	}
	start, ok1 := parseDigits(first)
	end, ok2 := parseDigits(last)
	if !ok1 || !ok2 || end < start {
		return nil, bad()
	}
	return &objects.Range{Start: start, End: end}, nil
}
