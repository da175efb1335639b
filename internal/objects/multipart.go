package objects

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/coffer-s3/coffer/internal/checksum"
	"github.com/coffer-s3/coffer/internal/meta"
	"github.com/coffer-s3/coffer/internal/s3err"
)

// CreateMultipartUpload starts an upload and returns it. A checksum
// algorithm makes every part carry that checksum and the object a
// COMPOSITE (the default; the only type of SHA1, SHA256, SHA512, MD5 and
// the xxHashes) or FULL_OBJECT (CRCs only; the default for CRC64NVME)
// checksum. Errors: NoSuchBucket, KeyTooLongError, InvalidArgument,
// MetadataTooLarge, InvalidRequest (checksum algorithm or type).
func (s *Service) CreateMultipartUpload(ctx context.Context, bucket, key string, in CreateUploadInput) (Upload, error) {
	ctx = writeContext(ctx)
	res := bucket + "/" + key
	if err := checkKey(bucket, key); err != nil {
		return Upload{}, err
	}
	if err := checkMetadata(res, in.Meta); err != nil {
		return Upload{}, err
	}
	if err := CheckTags(in.Tags, false); err != nil {
		return Upload{}, err
	}
	typ, err := uploadChecksumType(in.ChecksumAlgorithm, in.ChecksumType, res)
	if err != nil {
		return Upload{}, err
	}
	now := s.clock()
	u := meta.Upload{
		Bucket: bucket, Key: key, ID: newUploadID(now), Initiated: now, Meta: toMetaMetadata(in.Meta),
		ChecksumAlgorithm: string(in.ChecksumAlgorithm), ChecksumType: typ, Tags: toMetaTags(in.Tags), ACL: in.ACL,
		Initiator: in.Initiator,
	}
	if err := s.db.CreateUpload(ctx, u); err != nil {
		return Upload{}, s.writeErr(err, bucket, key)
	}
	return uploadInfo(&u), nil
}

// uploadChecksumType validates an upload's checksum algorithm and type and
// returns the type, defaulted. See
// https://docs.aws.amazon.com/AmazonS3/latest/userguide/checking-object-integrity.html
func uploadChecksumType(alg checksum.Algorithm, typ, res string) (string, error) {
	if alg == "" {
		if typ != "" {
			return "", s3err.Newf(s3err.InvalidRequest, res, "The x-amz-checksum-type header can only be used with the x-amz-checksum-algorithm header.")
		}
		return "", nil
	}
	if err := checkAlgorithm(alg, res); err != nil {
		return "", err
	}
	switch typ {
	case "":
		if alg == checksum.CRC64NVME {
			return checksumFullObject, nil
		}
		return checksumComposite, nil
	case checksumFullObject:
		if !alg.IsCRC() {
			return "", s3err.Newf(s3err.InvalidRequest, res, "The FULL_OBJECT checksum type cannot be used with the "+lower(alg)+" checksum algorithm.")
		}
	case checksumComposite:
		if alg == checksum.CRC64NVME {
			return "", s3err.Newf(s3err.InvalidRequest, res, "The COMPOSITE checksum type cannot be used with the crc64nvme checksum algorithm.")
		}
	default:
		return "", s3err.Newf(s3err.InvalidRequest, res, "Value for x-amz-checksum-type header is invalid.")
	}
	return typ, nil
}

// checkPartNumber rejects part numbers outside 1..10000.
func checkPartNumber(n int, res string) error {
	if n < 1 || n > maxPartNumber {
		return s3err.Newf(s3err.InvalidArgument, res, "Part number must be an integer between 1 and 10000, inclusive").
			With("ArgumentName", "partNumber").With("ArgumentValue", strconv.Itoa(n))
	}
	return nil
}

// upload returns an upload, or NoSuchUpload (NoSuchBucket if the bucket is
// gone).
func (s *Service) upload(ctx context.Context, bucket, key, id string) (*meta.Upload, error) {
	u, err := s.db.Upload(ctx, bucket, key, id)
	if err != nil {
		return nil, s.uploadError(ctx, bucket, id, err)
	}
	return &u, nil
}

// uploadError turns an error reading upload id of bucket into S3's:
// NoSuchUpload for a missing upload, NoSuchBucket if the bucket is gone
// too.
func (s *Service) uploadError(ctx context.Context, bucket, id string, err error) error {
	if errors.Is(err, meta.ErrNotFound) {
		if err := s.checkBucket(ctx, bucket); err != nil {
			return err
		}
		return noSuchUpload(id)
	}
	return fmt.Errorf("read upload %s: %w", id, err)
}

// UploadPart stores part n (1..10000) of an upload, replacing any earlier
// part n (whose blocks go to the garbage queue). Parts are always stored as
// blocks, which CompleteMultipartUpload links into the object without
// copying. If the upload has a checksum algorithm, the part's checksum is
// computed (and verified if the client sent one). Errors: NoSuchUpload,
// NoSuchBucket, InvalidArgument (part number), EntityTooLarge (> 5 GiB),
// MissingContentLength, BadDigest, InvalidDigest, InvalidRequest,
// IncompleteBody, and any error body's Read returned (passed through).
func (s *Service) UploadPart(ctx context.Context, bucket, key, uploadID string, n int, in PartInput, body io.Reader) (Part, error) {
	ctx = writeContext(ctx)
	res := bucket + "/" + key
	if err := checkPartNumber(n, res); err != nil {
		return Part{}, err
	}
	switch {
	case in.Size < 0:
		return Part{}, s3err.New(s3err.MissingContentLength, res)
	case in.Size > maxPartSize:
		return Part{}, s3err.New(s3err.EntityTooLarge, res).
			With("ProposedSize", strconv.FormatInt(in.Size, 10)).With("MaxSizeAllowed", strconv.Itoa(maxPartSize))
	}
	u, err := s.upload(ctx, bucket, key, uploadID)
	if err != nil {
		return Part{}, err
	}
	d, err := prepareDigests(res, in.ContentMD5, in.Checksum, checksum.Algorithm(u.ChecksumAlgorithm))
	if err != nil {
		return Part{}, err
	}
	data, err := s.ingest(ctx, body, in.Size, d.alg, true, res)
	if err != nil {
		return Part{}, err
	}
	if err := d.verify(data.md5[:], data.sum); err != nil {
		s.discard(ctx, data)
		return Part{}, err
	}
	return s.commitPart(ctx, u, n, in.Size, d.alg, data)
}

// commitPart records an ingested part if its upload still exists.
func (s *Service) commitPart(ctx context.Context, u *meta.Upload, n int, size int64, alg checksum.Algorithm, data *ingested) (Part, error) {
	p := meta.Part{Number: n, Size: size, ETag: hex.EncodeToString(data.md5[:]), Modified: s.clock(), Blocks: data.blocks}
	if alg != "" {
		p.Checksum = meta.Checksum{Algorithm: string(alg), Value: checksum.Encode(data.sum)}
	}
	cctx, cancel := s.commitContext(ctx, data)
	err := s.db.PutPart(cctx, u.Bucket, u.Key, u.ID, p, p.Modified)
	cancel()
	// PutPart writes nothing when the upload is gone or ctx ended first;
	// but commitContext's deadline may end it while it commits, which
	// leaves the outcome unknown, and the blocks to GC.
	timedOut := err != nil && errors.Is(cctx.Err(), context.DeadlineExceeded)
	committing := err != nil && !errors.Is(err, meta.ErrNotFound) &&
		(timedOut || !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded))
	err = s.commitTimeout(cctx, err, u.Bucket+"/"+u.Key)
	s.finishWrite(ctx, data, err, committing)
	switch {
	case errors.Is(err, meta.ErrNotFound):
		return Part{}, noSuchUpload(u.ID)
	case err != nil:
		return Part{}, s.writeErr(err, u.Bucket, u.Key)
	}
	return partInfo(&p), nil
}

// UploadPartCopy stores part n from a range of an existing object (the
// whole object without in.SrcRange), copying the data. Errors: as
// UploadPart, plus NoSuchKey (source), PreconditionFailed (source
// conditions), NoSuchVersion, InvalidRequest (a source version that is a
// delete marker, or more than 5 GiB to copy) and InvalidArgument (range
// outside the source).
func (s *Service) UploadPartCopy(ctx context.Context, bucket, key, uploadID string, n int, in PartCopyInput) (PartCopyResult, error) {
	ctx = writeContext(ctx)
	res := bucket + "/" + key
	if err := checkPartNumber(n, res); err != nil {
		return PartCopyResult{}, err
	}
	u, err := s.upload(ctx, bucket, key, uploadID)
	if err != nil {
		return PartCopyResult{}, err
	}
	src, err := s.open(ctx, in.SrcBucket, in.SrcKey, openOptions{
		get:       GetOptions{VersionID: in.SrcVersionID, Cond: in.SrcCond},
		copyRange: in.SrcRange, copySource: true, body: true,
	})
	if err != nil {
		return PartCopyResult{}, err
	}
	defer src.Body.Close()
	if src.Length > maxPartSize {
		// Too large to be a part, the whole source or a range of it: S3
		// answers both as it answers CopyObject of a source too large
		// (InvalidRequest), not as an UploadPart too large
		// (EntityTooLarge).
		return PartCopyResult{}, copySourceTooLarge(res, maxPartSize)
	}
	alg := checksum.Algorithm(u.ChecksumAlgorithm)
	data, err := s.ingest(ctx, src.Body, src.Length, alg, true, res)
	if err != nil {
		return PartCopyResult{}, err
	}
	p, err := s.commitPart(ctx, u, n, src.Length, alg, data)
	if err != nil {
		return PartCopyResult{}, err
	}
	return PartCopyResult{Part: p, SourceVersionID: src.Info.VersionID}, nil
}

// PartCopyResult is what UploadPartCopy stored: the part, and the version
// ID of the source version it copied ("" if the source has none to
// report).
type PartCopyResult struct {
	Part
	SourceVersionID string
}

// AbortMultipartUpload discards an upload and its parts (their blocks go to
// the garbage queue). Errors: NoSuchUpload, NoSuchBucket.
func (s *Service) AbortMultipartUpload(ctx context.Context, bucket, key, uploadID string) error {
	ctx = writeContext(ctx)
	err := s.db.AbortUpload(ctx, bucket, key, uploadID, s.clock())
	if errors.Is(err, meta.ErrNotFound) {
		if err := s.checkBucket(ctx, bucket); err != nil {
			return err
		}
		return noSuchUpload(uploadID)
	}
	if err != nil {
		return fmt.Errorf("abort upload %s: %w", uploadID, err)
	}
	return nil
}
