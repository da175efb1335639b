package objects

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/coffer-s3/coffer/internal/checksum"
	"github.com/coffer-s3/coffer/internal/meta"
	"github.com/coffer-s3/coffer/internal/s3err"
)

func toMetaMetadata(m Metadata) meta.Metadata {
	return meta.Metadata{
		ContentType: m.ContentType, ContentEncoding: m.ContentEncoding,
		ContentDisposition: m.ContentDisposition, ContentLanguage: m.ContentLanguage,
		CacheControl: m.CacheControl, Expires: m.Expires, User: m.User,
	}
}

func fromMetaMetadata(m meta.Metadata) Metadata {
	return Metadata{
		ContentType: m.ContentType, ContentEncoding: m.ContentEncoding,
		ContentDisposition: m.ContentDisposition, ContentLanguage: m.ContentLanguage,
		CacheControl: m.CacheControl, Expires: m.Expires, User: m.User,
	}
}

func fromMetaChecksum(c meta.Checksum) ChecksumValue {
	return ChecksumValue{Algorithm: checksum.Algorithm(c.Algorithm), Value: c.Value, Type: c.Type}
}

// objectInfo describes the object record o stored as bucket/key.
func objectInfo(bucket, key string, o *meta.Object) ObjectInfo {
	return ObjectInfo{
		Bucket: bucket, Key: key, Size: o.Size, ETag: o.ETag, LastModified: o.Modified,
		Meta: fromMetaMetadata(o.Meta), Checksum: fromMetaChecksum(o.Checksum), PartSizes: o.PartSizes,
		TagCount: len(o.Tags), Tags: fromMetaTags(o.Tags), VersionID: reportedVersionID(o),
	}
}

// writtenInfo describes rec, just written as bucket/key. A write reports
// a version ID only when it made a version with an ID of its own: S3 sends
// no x-amz-version-id for the null version a write makes while versioning
// is suspended.
func writtenInfo(bucket, key string, rec *meta.Object) ObjectInfo {
	info := objectInfo(bucket, key, rec)
	if rec.Versioning != meta.VersioningEnabled {
		info.VersionID = ""
	}
	return info
}

// reportedVersionID is the version ID S3 reports for o in x-amz-version-id,
// as far as the record alone tells: none for an object written to a bucket
// that had no versioning configured then. Reads replace that with "null"
// once the bucket has versioning configured (Service.reportedVersion).
func reportedVersionID(o *meta.Object) string {
	if o.Versioning == meta.Unversioned {
		return ""
	}
	return o.S3VersionID()
}

func partInfo(p *meta.Part) Part {
	return Part{Number: p.Number, Size: p.Size, ETag: p.ETag, LastModified: p.Modified, Checksum: fromMetaChecksum(p.Checksum)}
}

func uploadInfo(u *meta.Upload) Upload {
	return Upload{
		Bucket: u.Bucket, Key: u.Key, UploadID: u.ID, Initiated: u.Initiated, Meta: fromMetaMetadata(u.Meta),
		ChecksumAlgorithm: checksum.Algorithm(u.ChecksumAlgorithm), ChecksumType: u.ChecksumType,
		ACL: u.ACL, Initiator: u.Initiator,
	}
}

// Errors for missing things, with the extra elements S3 sends.
func noSuchBucket(bucket string) error {
	return s3err.New(s3err.NoSuchBucket, bucket).With("BucketName", bucket)
}

func noSuchKey(bucket, key string) error {
	return s3err.New(s3err.NoSuchKey, bucket+"/"+key).With("Key", key)
}

func noSuchVersion(bucket, key, id string) error {
	return s3err.New(s3err.NoSuchVersion, bucket+"/"+key).With("Key", key).With("VersionId", id)
}

// checkVersionID rejects a version ID Coffer cannot have made, as S3
// rejects one it cannot parse.
func checkVersionID(id string, res string) error {
	if id != "" && !meta.ValidVersionID(id) {
		return s3err.Newf(s3err.InvalidArgument, res, "Invalid version id specified").
			With("ArgumentName", "versionId").With("ArgumentValue", id)
	}
	return nil
}

func noSuchUpload(id string) error {
	return s3err.New(s3err.NoSuchUpload, id).With("UploadId", id)
}

// checkBucket returns NoSuchBucket if bucket does not exist.
func (s *Service) checkBucket(ctx context.Context, bucket string) error {
	_, err := s.db.Bucket(ctx, bucket)
	if errors.Is(err, meta.ErrNotFound) {
		return noSuchBucket(bucket)
	}
	if err != nil {
		return fmt.Errorf("read bucket %s: %w", bucket, err)
	}
	return nil
}

// normETag strips the quotes and weak marker a client may send with an ETag.
func normETag(s string) string {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, "W/")
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	return s
}
