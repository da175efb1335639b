package objects

import (
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/coffer-s3/coffer/internal/checksum"
	"github.com/coffer-s3/coffer/internal/meta"
	"github.com/coffer-s3/coffer/internal/s3err"
)

// CompleteMultipartUpload assembles the listed parts into the object,
// atomically replacing any object there: the parts' blocks become the
// object's (no data is copied), parts not listed are discarded, and the
// upload ends. The ETag is the MD5 of the parts' binary MD5s followed by
// "-N"; with a checksum algorithm the object's checksum combines the
// parts' (COMPOSITE or FULL_OBJECT). Errors: NoSuchUpload, NoSuchBucket,
// MalformedXML (no parts), InvalidPartOrder, InvalidPart (missing part,
// ETag or checksum mismatch), EntityTooSmall (a part but the last below
// MinPartSize), BadDigest (the object checksum or checksum type the client
// asserted), PreconditionFailed / NoSuchKey (conditional write),
// NotImplemented.
func (s *Service) CompleteMultipartUpload(ctx context.Context, bucket, key, uploadID string, in CompleteInput) (ObjectInfo, error) {
	ctx = writeContext(ctx)
	res := bucket + "/" + key
	if len(in.Parts) == 0 {
		return ObjectInfo{}, s3err.New(s3err.MalformedXML, res)
	}
	now := s.clock()
	var rec *meta.Object
	err := s.db.CompleteUpload(ctx, bucket, key, uploadID, now, func(u *meta.Upload, parts []meta.Part, old *meta.Object) (*meta.Object, error) {
		r, err := s.assemble(u, parts, in, now, res)
		if err != nil {
			return nil, err
		}
		if err := checkWrite(in.Cond, old, bucket, key); err != nil {
			return nil, err
		}
		rec = r
		return r, nil
	})
	switch {
	case errors.Is(err, meta.ErrNotFound):
		return s.completedBefore(ctx, bucket, key, uploadID, in)
	case err != nil:
		return ObjectInfo{}, s.writeErr(err, bucket, key)
	}
	return writtenInfo(bucket, key, rec), nil
}

// completedBefore answers a CompleteMultipartUpload for an upload that no
// longer exists: if it is the upload the current object was completed
// from, with the same parts, the request is a retry (of a completion
// whose response was lost) and gets the same answer, as from S3;
// otherwise NoSuchUpload.
func (s *Service) completedBefore(ctx context.Context, bucket, key, uploadID string, in CompleteInput) (ObjectInfo, error) {
	rec, err := s.db.Object(ctx, bucket, key)
	switch {
	case errors.Is(err, meta.ErrNotFound):
		return ObjectInfo{}, noSuchUpload(uploadID)
	case err != nil:
		return ObjectInfo{}, fmt.Errorf("read object %s/%s: %w", bucket, key, err)
	case rec.UploadID != uploadID || rec.ETag != multipartETag(in.Parts):
		return ObjectInfo{}, noSuchUpload(uploadID)
	}
	return writtenInfo(bucket, key, &rec), nil
}

// multipartETag returns the ETag an object completed from parts has: the
// MD5 of their binary MD5s, then "-N"; "" if an ETag is not an MD5.
func multipartETag(parts []CompletePart) string {
	md5s := make([]byte, 0, md5.Size*len(parts))
	for _, p := range parts {
		sum, err := hex.DecodeString(normETag(p.ETag))
		if err != nil || len(sum) != md5.Size {
			return ""
		}
		md5s = append(md5s, sum...)
	}
	etag := md5.Sum(md5s)
	return hex.EncodeToString(etag[:]) + "-" + strconv.Itoa(len(parts))
}

// assemble builds the record of a completed upload from its stored parts
// (sorted by number) and the client's list, checking the list as S3 does:
// strictly ascending, every part present with its ETag (and checksum, if
// given), every part but the last at least MinPartSize.
func (s *Service) assemble(u *meta.Upload, stored []meta.Part, in CompleteInput, now time.Time, res string) (*meta.Object, error) {
	for i := 1; i < len(in.Parts); i++ {
		if in.Parts[i].Number <= in.Parts[i-1].Number {
			return nil, s3err.New(s3err.InvalidPartOrder, res)
		}
	}
	chosen := make([]*meta.Part, len(in.Parts))
	for i, cp := range in.Parts {
		j, ok := slices.BinarySearchFunc(stored, cp.Number, func(p meta.Part, n int) int { return p.Number - n })
		if !ok || stored[j].ETag != normETag(cp.ETag) {
			return nil, invalidPart(res, cp)
		}
		p := &stored[j]
		if cp.Checksum != "" && u.ChecksumAlgorithm != "" && cp.Checksum != p.Checksum.Value {
			return nil, invalidPart(res, cp)
		}
		chosen[i] = p
	}
	if err := checkMultipartSize(chosen, res); err != nil {
		return nil, err
	}
	for i, p := range chosen[:len(chosen)-1] {
		if p.Size < s.cfg.MinPartSize {
			return nil, s3err.New(s3err.EntityTooSmall, res).
				With("ProposedSize", strconv.FormatInt(p.Size, 10)).
				With("MinSizeAllowed", strconv.FormatInt(s.cfg.MinPartSize, 10)).
				With("PartNumber", strconv.Itoa(in.Parts[i].Number)).
				With("ETag", p.ETag)
		}
	}
	rec := &meta.Object{
		Modified:  now,
		Meta:      u.Meta,
		Tags:      u.Tags,
		ACL:       u.ACL,
		UploadID:  u.ID,
		PartSizes: make([]int64, len(chosen)),
	}
	md5s := make([]byte, 0, md5.Size*len(chosen))
	for i, p := range chosen {
		sum, err := hex.DecodeString(p.ETag)
		if err != nil || len(sum) != md5.Size {
			return nil, fmt.Errorf("part %d of upload %s has a malformed ETag %q", p.Number, u.ID, p.ETag)
		}
		md5s = append(md5s, sum...)
		rec.Size += p.Size
		rec.PartSizes[i] = p.Size
		rec.Blocks = append(rec.Blocks, p.Blocks...)
	}
	etag := md5.Sum(md5s)
	rec.ETag = hex.EncodeToString(etag[:]) + "-" + strconv.Itoa(len(chosen))
	if u.ChecksumAlgorithm != "" {
		if in.ChecksumType != "" && in.ChecksumType != u.ChecksumType {
			return nil, s3err.Newf(s3err.BadDigest, res, "The x-amz-checksum-type you specified ("+in.ChecksumType+
				") does not match the checksum type of the upload ("+u.ChecksumType+").")
		}
		if a := in.Checksum.Algorithm; a != "" && a != checksum.Algorithm(u.ChecksumAlgorithm) {
			// Another algorithm's value cannot be compared: S3's answer
			// for a checksum of the wrong type, not BadDigest.
			return nil, s3err.Newf(s3err.InvalidRequest, res,
				"Checksum Type mismatch occurred, expected checksum Type: "+lower(checksum.Algorithm(u.ChecksumAlgorithm))+", actual checksum Type: "+lower(a))
		}
		c, err := combineChecksums(u, chosen)
		if err != nil {
			return nil, err
		}
		if want := in.Checksum.Value; want != "" && !assertedChecksum(want, c) {
			return nil, checksumMismatch(checksum.Algorithm(u.ChecksumAlgorithm), res)
		}
		rec.Checksum = c
		rec.PartChecksums = make([]string, len(chosen))
		for i, p := range chosen {
			rec.PartChecksums[i] = p.Checksum.Value
		}
	} else if in.Checksum.Value != "" || in.ChecksumType != "" {
		// Parts uploaded without checksums give nothing to check an
		// asserted one against: refused, never passed unchecked (a
		// client would believe its whole-object checksum verified).
		return nil, s3err.Newf(s3err.InvalidRequest, res,
			"The upload was created without a checksum algorithm, so the complete request cannot assert a checksum or checksum type.")
	}
	return rec, nil
}

func invalidPart(res string, cp CompletePart) error {
	return s3err.New(s3err.InvalidPart, res).
		With("PartNumber", strconv.Itoa(cp.Number)).With("ETag", normETag(cp.ETag))
}

// combineChecksums computes the object checksum of an upload from its
// chosen parts: COMPOSITE hashes the concatenated part checksums,
// FULL_OBJECT folds the part CRCs into the CRC of the whole object.
func combineChecksums(u *meta.Upload, parts []*meta.Part) (meta.Checksum, error) {
	alg := checksum.Algorithm(u.ChecksumAlgorithm)
	sums := make([][]byte, len(parts))
	for i, p := range parts {
		b, err := base64.StdEncoding.DecodeString(p.Checksum.Value)
		if err != nil || p.Checksum.Algorithm != string(alg) || len(b) != alg.Size() {
			return meta.Checksum{}, fmt.Errorf("part %d of upload %s has no %s checksum", p.Number, u.ID, alg)
		}
		sums[i] = b
	}
	c := meta.Checksum{Algorithm: string(alg), Type: u.ChecksumType}
	if u.ChecksumType != checksumFullObject {
		c.Value = checksum.Composite(alg, sums)
		return c, nil
	}
	crc := sums[0]
	for i := 1; i < len(sums); i++ {
		var err error
		if crc, err = checksum.Combine(alg, crc, sums[i], parts[i].Size); err != nil {
			return meta.Checksum{}, fmt.Errorf("combine checksums of upload %s: %w", u.ID, err)
		}
	}
	c.Value = checksum.Encode(crc)
	return c, nil
}

// assertedChecksum reports whether want, the object checksum a client
// asserts in CompleteMultipartUpload, is c: its value as GetObject returns
// it, or for a COMPOSITE checksum also without the "-N" part count.
func assertedChecksum(want string, c meta.Checksum) bool {
	if want == c.Value {
		return true
	}
	i := strings.LastIndexByte(c.Value, '-')
	return c.Type != checksumFullObject && i >= 0 && want == c.Value[:i]
}

// ListParts returns one page of an upload's parts: those numbered above
// in.PartNumberMarker, at most in.MaxParts (≤ 0 or > 1000 means 1000).
// Errors: NoSuchUpload, NoSuchBucket.
func (s *Service) ListParts(ctx context.Context, bucket, key, uploadID string, in ListPartsInput) (ListPartsResult, error) {
	limit := in.MaxParts
	if limit <= 0 || limit > maxListParts {
		limit = maxListParts
	}
	u, parts, truncated, err := s.db.UploadParts(ctx, bucket, key, uploadID, max(in.PartNumberMarker, 0), limit)
	if err != nil {
		return ListPartsResult{}, s.uploadError(ctx, bucket, uploadID, err)
	}
	r := ListPartsResult{Upload: uploadInfo(&u), IsTruncated: truncated}
	for i := range parts {
		r.Parts = append(r.Parts, partInfo(&parts[i]))
	}
	if len(parts) > 0 {
		r.NextPartNumberMarker = parts[len(parts)-1].Number
	}
	return r, nil
}

// ListMultipartUploads returns one page of a bucket's uploads in progress,
// ordered by key and then by initiation, with common prefixes rolled up as
// in ListObjects; in.MaxUploads ≤ 0 or > 1000 means 1000. Errors:
// NoSuchBucket.
func (s *Service) ListMultipartUploads(ctx context.Context, bucket string, in ListUploadsInput) (ListUploadsResult, error) {
	if err := s.checkBucket(ctx, bucket); err != nil {
		return ListUploadsResult{}, err
	}
	limit := in.MaxUploads
	if limit <= 0 || limit > maxListUploads {
		limit = maxListUploads
	}
	es, truncated, err := s.db.ListUploads(ctx, bucket, meta.UploadListOptions{
		Prefix: in.Prefix, Delimiter: in.Delimiter, KeyMarker: in.KeyMarker, UploadIDMarker: in.UploadIDMarker, Limit: limit,
	})
	if err != nil {
		return ListUploadsResult{}, fmt.Errorf("list uploads of %s: %w", bucket, err)
	}
	r := ListUploadsResult{IsTruncated: truncated}
	for _, e := range es {
		if e.Upload == nil {
			r.CommonPrefixes = append(r.CommonPrefixes, e.Prefix)
			continue
		}
		r.Uploads = append(r.Uploads, uploadInfo(e.Upload))
	}
	if truncated && len(es) > 0 {
		if last := es[len(es)-1]; last.Upload != nil {
			r.NextKeyMarker, r.NextUploadIDMarker = last.Upload.Key, last.Upload.ID
		} else {
			r.NextKeyMarker = last.Prefix
		}
	}
	return r, nil
}

// checkMultipartSize refuses parts that add up to more than S3's largest
// object, 5 TiB (EntityTooLarge): 10,000 parts of up to 5 GiB each could
// make twice that.
func checkMultipartSize(parts []*meta.Part, res string) error {
	var size int64
	for _, p := range parts {
		size += p.Size
	}
	if size <= maxMultipartSize {
		return nil
	}
	return s3err.New(s3err.EntityTooLarge, res).
		With("ProposedSize", strconv.FormatInt(size, 10)).
		With("MaxSizeAllowed", strconv.FormatInt(maxMultipartSize, 10))
}
