package objects

import (
	"context"

	"github.com/coffer-s3/coffer/internal/checksum"
)

// AttributesInput selects what ObjectAttributes returns of an object's
// parts.
type AttributesInput struct {
	VersionID        string // "" for the current version
	MaxParts         int    // ≤ 0 or > 1000 means 1000
	PartNumberMarker int    // parts numbered above this are listed
}

// ObjectAttributes describes a version without its data: what
// GetObjectAttributes returns.
type ObjectAttributes struct {
	Info ObjectInfo
	// Parts is the page of the parts of a multipart object (nil for
	// other objects); PartsCount counts them all.
	Parts                []PartAttributes
	PartsCount           int
	IsTruncated          bool
	NextPartNumberMarker int
}

// PartAttributes is one part of a multipart object.
type PartAttributes struct {
	Number   int
	Size     int64
	Checksum ChecksumValue // the part's checksum, if the object has checksums
}

// ObjectAttributes returns the attributes of a version of bucket/key:
// its description and, for a multipart object, one page of its parts with
// their sizes and checksums. Errors: as HeadObject (NoSuchKey,
// NoSuchVersion, MethodNotAllowed for a delete marker, InvalidArgument,
// NoSuchBucket). See
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObjectAttributes.html
func (s *Service) ObjectAttributes(ctx context.Context, bucket, key string, in AttributesInput) (ObjectAttributes, error) {
	rec, _, err := s.lookup(ctx, bucket, key, in.VersionID)
	if err != nil {
		return ObjectAttributes{}, err
	}
	out := ObjectAttributes{Info: objectInfo(bucket, key, &rec)}
	if in.VersionID != "" {
		out.Info.VersionID = rec.S3VersionID()
	} else {
		out.Info.VersionID = s.reportedVersion(ctx, bucket, &rec)
	}
	n := len(rec.PartSizes)
	if n == 0 {
		return out, nil
	}
	limit := in.MaxParts
	if limit <= 0 || limit > maxListParts {
		limit = maxListParts
	}
	out.PartsCount = n
	first := max(in.PartNumberMarker, 0) // parts are numbered 1..n in the object
	for i := first; i < n && len(out.Parts) < limit; i++ {
		p := PartAttributes{Number: i + 1, Size: rec.PartSizes[i]}
		if i < len(rec.PartChecksums) && rec.PartChecksums[i] != "" {
			p.Checksum = ChecksumValue{Algorithm: checksum.Algorithm(rec.Checksum.Algorithm), Value: rec.PartChecksums[i]}
		}
		out.Parts = append(out.Parts, p)
	}
	if len(out.Parts) > 0 {
		last := out.Parts[len(out.Parts)-1].Number
		out.NextPartNumberMarker, out.IsTruncated = last, last < n
	}
	return out, nil
}
