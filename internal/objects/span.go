package objects

import (
	"strconv"

	"github.com/coffer-s3/coffer/internal/meta"
	"github.com/coffer-s3/coffer/internal/s3err"
)

// span is the byte range of an object a read serves.
type span struct {
	start, length int64
	partial       bool // less than the whole object was asked for (206)
}

// checkGetOptions rejects option combinations before anything is read.
func checkGetOptions(opt GetOptions, res string) error {
	if opt.Range != nil && opt.PartNumber != 0 {
		return s3err.Newf(s3err.InvalidRequest, res, "Cannot specify both Range header and partNumber query parameter.")
	}
	if opt.PartNumber < 0 || opt.PartNumber > maxPartNumber {
		return s3err.Newf(s3err.InvalidArgument, res, "Part number must be an integer between 1 and 10000, inclusive.").
			With("ArgumentName", "partNumber").With("ArgumentValue", strconv.Itoa(opt.PartNumber))
	}
	return nil
}

// resolveRange resolves an HTTP byte range against an object of size bytes
// (RFC 7233): a suffix range takes the last Suffix bytes (all of them if
// Suffix ≥ size), an open-ended or overlong range is clamped to the end, and
// a range starting at or past the end — any range of an empty object — is
// InvalidRange. A range whose end precedes its start is syntactically
// invalid and, as RFC 7233 and S3 do, ignored: the whole object is served.
func resolveRange(r *Range, size int64, res string) (span, error) {
	unsatisfiable := func() error {
		return s3err.New(s3err.InvalidRange, res).
			With("RangeRequested", formatRange(r)).With("ActualObjectSize", strconv.FormatInt(size, 10))
	}
	if r.Suffix > 0 || r.Start < 0 {
		if r.Suffix <= 0 || size == 0 {
			return span{}, unsatisfiable()
		}
		n := min(r.Suffix, size)
		return span{start: size - n, length: n, partial: true}, nil
	}
	if r.End >= 0 && r.End < r.Start {
		return span{length: size}, nil
	}
	if r.Start >= size {
		return span{}, unsatisfiable()
	}
	end := size - 1
	if r.End >= 0 && r.End < end {
		end = r.End
	}
	return span{start: r.Start, length: end - r.Start + 1, partial: true}, nil
}

// resolveCopyRange resolves x-amz-copy-source-range, which S3 requires to be
// bytes=first-last within the source.
func resolveCopyRange(r *Range, size int64, res string) (span, error) {
	if r.Suffix > 0 || r.Start < 0 || r.End < r.Start || r.End >= size {
		return span{}, s3err.Newf(s3err.InvalidArgument, res,
			"Range specified is not valid for source object of size: "+strconv.FormatInt(size, 10)).
			With("ArgumentName", "x-amz-copy-source-range").With("ArgumentValue", formatRange(r))
	}
	return span{start: r.Start, length: r.End - r.Start + 1, partial: true}, nil
}

func formatRange(r *Range) string {
	switch {
	case r.Suffix > 0 || r.Start < 0:
		return "bytes=-" + strconv.FormatInt(r.Suffix, 10)
	case r.End < 0:
		return "bytes=" + strconv.FormatInt(r.Start, 10) + "-"
	}
	return "bytes=" + strconv.FormatInt(r.Start, 10) + "-" + strconv.FormatInt(r.End, 10)
}

// partSpan returns the bytes of part n of o. An object not made by
// multipart upload has one part, the whole object. A part number past the
// last is S3's InvalidPartNumber (416).
func partSpan(o *meta.Object, n int, res string) (span, error) {
	count := max(len(o.PartSizes), 1)
	if n > count {
		return span{}, s3err.New(s3err.InvalidPartNumber, res).
			With("PartNumberRequested", strconv.Itoa(n)).With("ActualPartCount", strconv.Itoa(count))
	}
	if len(o.PartSizes) == 0 {
		return span{length: o.Size, partial: o.Size > 0}, nil
	}
	var start int64
	for _, sz := range o.PartSizes[:n-1] {
		start += sz
	}
	// An empty part (an object of one, or an empty last part) is answered
	// 200 with no body, as an empty object not uploaded in parts is: no
	// Content-Range can name zero bytes ("bytes 5120-5119/5120" is none).
	return span{start: start, length: o.PartSizes[n-1], partial: o.PartSizes[n-1] > 0}, nil
}

// partChecksum returns the checksum of part n of o, whose checksum is sum:
// sum itself for an object not made of parts, else the part's stored
// checksum with sum's algorithm and type (zero if the upload had none).
// n is a part of o (partSpan checked it).
func partChecksum(o *meta.Object, sum ChecksumValue, n int) ChecksumValue {
	if len(o.PartSizes) == 0 {
		return sum
	}
	if n > len(o.PartChecksums) || o.PartChecksums[n-1] == "" || sum.Algorithm == "" {
		return ChecksumValue{}
	}
	return ChecksumValue{Algorithm: sum.Algorithm, Value: o.PartChecksums[n-1], Type: sum.Type}
}
