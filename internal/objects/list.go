package objects

import (
	"context"
	"fmt"

	"github.com/coffer-s3/coffer/internal/meta"
	"github.com/coffer-s3/coffer/internal/s3err"
)

// ListObjects returns one page of keys in bucket: objects and common
// prefixes in key order, at most in.MaxKeys of both together. Objects carry
// Key, Size, ETag, LastModified and Checksum (not Meta or PartSizes); with
// in.ACL, ACLs holds their ACLs. A common prefix is skipped with one seek
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
	var acls [][]byte
	var truncated bool
	var err error
	if in.ACL {
		es, acls, truncated, err = s.db.ListObjectsACL(ctx, bucket, opt)
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
	if in.ACL {
		r.ACLs = make([][]byte, 0, nObjects)
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
		if in.ACL {
			r.ACLs = append(r.ACLs, acls[i])
		}
	}
	if truncated && len(es) > 0 {
		r.NextMarker = es[len(es)-1].Key
	}
	return r, nil
}

// ListObjectVersions returns one page of the versions in bucket: keys in
// order, each key's versions (objects and delete markers) newest first,
// and common prefixes, at most in.MaxKeys of all together (with in.ACL,
// each version's ACL). It works on every bucket: the objects of one that
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
	es, truncated, err := s.db.ListVersions(ctx, bucket, meta.VersionListOptions{
		Prefix: in.Prefix, Delimiter: in.Delimiter,
		KeyMarker: in.KeyMarker, VersionIDMarker: in.VersionIDMarker, Limit: in.MaxKeys,
		ACL: in.ACL,
	})
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
			ACL: v.ACL,
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
