package objects

import (
	"context"
	"fmt"

	"github.com/coffer-s3/coffer/internal/acl"
	"github.com/coffer-s3/coffer/internal/meta"
	"github.com/coffer-s3/coffer/internal/s3err"
)

// ListObjects returns one page of keys in bucket: objects and common
// prefixes in key order, at most in.MaxKeys of both together. Objects carry
// Key, Size, ETag, LastModified and Checksum (not Meta or PartSizes); with
// in.Owners, Owners holds their owners. A common prefix is skipped with one seek
// however many keys it holds. MaxKeys 0 returns nothing, untruncated, as
// S3 does. Errors: NoSuchBucket.
func (s *Service) ListObjects(ctx context.Context, bucket string, in ListInput) (ListResult, error) {
	if err := s.checkBucket(ctx, bucket); err != nil {
		return ListResult{}, err
	}
	if in.MaxKeys <= 0 {
		// S3 answers max-keys=0 with nothing and IsTruncated false.
		return ListResult{}, nil
	}
	opt := meta.ListOptions{
		Prefix: in.Prefix, Delimiter: in.Delimiter, StartAfter: in.StartAfter, Limit: max(in.MaxKeys, 0),
	}
	var es []meta.Entry
	var owners []string
	var truncated bool
	var err error
	if in.Owners {
		es, owners, truncated, err = s.db.ListObjectsOwners(ctx, bucket, opt, s.aclOwner(ctx, bucket))
	} else {
		es, truncated, err = s.db.ListObjects(ctx, bucket, opt)
	}
	if err != nil {
		return ListResult{}, fmt.Errorf("list %s: %w", bucket, err)
	}
	r := ListResult{IsTruncated: truncated}
	nObjects := 0
	for _, e := range es {
		if !e.IsPrefix {
			nObjects++
		}
	}
	r.Objects = make([]ObjectInfo, 0, nObjects)
	if in.Owners {
		r.Owners = make([]string, 0, nObjects)
	}
	for i, e := range es {
		if e.IsPrefix {
			r.CommonPrefixes = append(r.CommonPrefixes, e.Key)
			continue
		}
		r.Objects = append(r.Objects, ObjectInfo{
			Bucket: bucket, Key: e.Key, Size: e.Object.Size, ETag: e.Object.ETag,
			LastModified: e.Object.Modified, Checksum: fromMetaChecksum(e.Object.Checksum),
		})
		if in.Owners {
			r.Owners = append(r.Owners, owners[i])
		}
	}
	if truncated && len(es) > 0 {
		r.NextMarker = es[len(es)-1].Key
	}
	return r, nil
}

// ListObjectVersions returns one page of the versions in bucket: keys in
// order, each key's versions (objects and delete markers) newest first,
// and common prefixes, at most in.MaxKeys of all together (with
// in.Owners, each version's owner). It works on every bucket: the objects of one that
// was never versioned are their null versions. Errors: NoSuchBucket,
// InvalidArgument (a version-id marker without a key marker, or
// malformed).
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListObjectVersions.html
func (s *Service) ListObjectVersions(ctx context.Context, bucket string, in ListVersionsInput) (ListVersionsResult, error) {
	if in.VersionIDMarker != "" {
		if in.KeyMarker == "" {
			return ListVersionsResult{}, s3err.Newf(s3err.InvalidArgument, bucket,
				"A version-id marker cannot be specified without a key marker.").
				With("ArgumentName", "version-id-marker").With("ArgumentValue", in.VersionIDMarker)
		}
		if !meta.ValidVersionID(in.VersionIDMarker) {
			return ListVersionsResult{}, s3err.Newf(s3err.InvalidArgument, bucket, "Invalid version id specified").
				With("ArgumentName", "version-id-marker").With("ArgumentValue", in.VersionIDMarker)
		}
	}
	if err := s.checkBucket(ctx, bucket); err != nil {
		return ListVersionsResult{}, err
	}
	if in.MaxKeys <= 0 {
		return ListVersionsResult{}, nil
	}
	opt := meta.VersionListOptions{
		Prefix: in.Prefix, Delimiter: in.Delimiter,
		KeyMarker: in.KeyMarker, VersionIDMarker: in.VersionIDMarker, Limit: in.MaxKeys,
	}
	if in.Owners {
		opt.Owner = s.aclOwner(ctx, bucket)
	}
	es, truncated, err := s.db.ListVersions(ctx, bucket, opt)
	if err != nil {
		return ListVersionsResult{}, fmt.Errorf("list versions of %s: %w", bucket, err)
	}
	r := ListVersionsResult{IsTruncated: truncated}
	for _, e := range es {
		if e.IsPrefix {
			r.CommonPrefixes = append(r.CommonPrefixes, e.Key)
			continue
		}
		v := e.Version
		r.Versions = append(r.Versions, ObjectVersion{
			Key: e.Key, VersionID: v.VersionID, IsLatest: v.IsLatest, DeleteMarker: v.DeleteMarker,
			Size: v.Size, ETag: v.ETag, LastModified: v.Modified, Checksum: fromMetaChecksum(v.Checksum),
			Owner: v.Owner,
		})
	}
	if truncated && len(es) > 0 {
		last := es[len(es)-1]
		r.NextKeyMarker = last.Key
		if !last.IsPrefix {
			r.NextVersionIDMarker = last.Version.VersionID
		}
	}
	return r, nil
}

// aclOwner returns the owner function of bucket's listings that report
// owners: the canonical ID of the owner in an object's stored ACL
// (acl.DecodeOwner), "" for an object stored without one (the bucket's
// owner's) and for one whose ACL does not decode (a damaged record, listed
// as the bucket owner's rather than failing the page; logged).
func (s *Service) aclOwner(ctx context.Context, bucket string) func(doc []byte) string {
	return func(doc []byte) string {
		if len(doc) == 0 {
			return ""
		}
		id, err := acl.DecodeOwner(doc)
		if err != nil {
			s.log.WarnContext(ctx, "object's ACL does not decode: listed as the bucket owner's", "bucket", bucket, "err", err)
			return ""
		}
		return id
	}
}
