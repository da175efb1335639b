package objects

import (
	"context"
	"strconv"

	"github.com/coffer-s3/coffer/internal/s3err"
)

// CopyObject copies in.SrcBucket/in.SrcKey to bucket/key. Copying an object
// onto itself is allowed only with ReplaceMeta (else InvalidRequest). The
// data is copied (the new object gets its own blocks, so GC never has to
// reason about shared blocks), streamed from the source without holding it
// in memory; the new ETag is the MD5 of the data, as S3 gives a copied
// object, and the checksum is computed afresh (FULL_OBJECT) with
// in.ChecksumAlgorithm or the source's algorithm. Errors: NoSuchBucket,
// NoSuchKey (source, also when its latest version is a delete marker),
// NoSuchVersion (in.SrcVersionID), InvalidRequest (in.SrcVersionID names a
// delete marker, as S3 answers), PreconditionFailed (source conditions,
// destination If-None-Match/If-Match), KeyTooLongError, MetadataTooLarge.
func (s *Service) CopyObject(ctx context.Context, bucket, key string, in CopyInput) (CopyResult, error) {
	ctx = writeContext(ctx)
	res := bucket + "/" + key
	if err := checkKey(bucket, key); err != nil {
		return CopyResult{}, err
	}
	if in.ReplaceMeta {
		if err := checkMetadata(res, in.Meta); err != nil {
			return CopyResult{}, err
		}
	}
	if err := CheckTags(in.Tags, false); err != nil {
		return CopyResult{}, err
	}
	if in.ChecksumAlgorithm != "" {
		if err := checkAlgorithm(in.ChecksumAlgorithm, res); err != nil {
			return CopyResult{}, err
		}
	}
	src, err := s.open(ctx, in.SrcBucket, in.SrcKey, openOptions{
		get: GetOptions{VersionID: in.SrcVersionID, Cond: in.SrcCond}, copySource: true, body: true,
	})
	if err != nil {
		return CopyResult{}, err
	}
	defer src.Body.Close()
	// Copying an older version over its key restores it, as S3 allows.
	if in.SrcBucket == bucket && in.SrcKey == key && in.SrcVersionID == "" &&
		!in.ReplaceMeta && !in.ReplaceTags && !in.StorageClass && in.ChecksumAlgorithm == "" {
		return CopyResult{}, s3err.Newf(s3err.InvalidRequest, res,
			"This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes.")
	}
	if src.Info.Size > s.cfg.MaxObjectSize {
		return CopyResult{}, copySourceTooLarge(res, s.cfg.MaxObjectSize)
	}
	if err := s.precheck(ctx, bucket, key, in.Cond); err != nil {
		return CopyResult{}, err
	}
	alg := in.ChecksumAlgorithm
	if alg == "" {
		alg = src.Info.Checksum.Algorithm
	}
	data, err := s.ingest(ctx, src.Body, src.Length, alg, false, res)
	if err != nil {
		return CopyResult{}, err
	}
	m := src.Info.Meta
	if in.ReplaceMeta {
		m = in.Meta
	}
	rec := s.newRecord(src.Length, m, alg, data)
	rec.Tags = src.tags
	if in.ReplaceTags {
		rec.Tags = toMetaTags(in.Tags)
	}
	rec.ACL = in.ACL
	info, err := s.commit(ctx, bucket, key, in.Cond, rec, data)
	if err != nil {
		return CopyResult{}, err
	}
	return CopyResult{ObjectInfo: info, SourceVersionID: src.Info.VersionID}, nil
}

// CopyResult is what CopyObject made: the new object, and the version ID
// of the source version it copied ("" if the source has none to report).
type CopyResult struct {
	ObjectInfo
	SourceVersionID string
}

// copySourceTooLarge is S3's answer to a copy of a whole source larger than
// max bytes (CopyObject, UploadPartCopy without a range).
func copySourceTooLarge(res string, max int64) error {
	return s3err.Newf(s3err.InvalidRequest, res,
		"The specified copy source is larger than the maximum allowable size for a copy source: "+strconv.FormatInt(max, 10))
}
