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

// PutObject stores body (exactly in.Size bytes, or all of it for
// SizeUnknown) as bucket/key, replacing any object there atomically. Errors: NoSuchBucket, KeyTooLongError,
// InvalidArgument (empty or non-UTF-8 key), MetadataTooLarge,
// MissingContentLength (negative size), EntityTooLarge, BadDigest,
// InvalidDigest, InvalidRequest (checksum header), IncompleteBody,
// PreconditionFailed, NoSuchKey (If-Match on an absent key), and any error
// body's Read returned (passed through; nothing is committed).
//
// The data is durable before the record commits: inline, in the commit's
// batch, for small objects, else in blocks the store has synced. The bucket
// and the preconditions are checked atomically with the commit; before
// reading a body bound for blocks, or for a conditional write, they are
// also checked up front, to fail fast.
func (s *Service) PutObject(ctx context.Context, bucket, key string, in PutInput, body io.Reader) (ObjectInfo, error) {
	ctx = writeContext(ctx)
	res := bucket + "/" + key
	if err := checkKey(bucket, key); err != nil {
		return ObjectInfo{}, err
	}
	if err := checkMetadata(res, in.Meta); err != nil {
		return ObjectInfo{}, err
	}
	if err := CheckTags(in.Tags, false); err != nil {
		return ObjectInfo{}, err
	}
	switch {
	case in.Size < 0 && in.Size != SizeUnknown:
		return ObjectInfo{}, s3err.New(s3err.MissingContentLength, res)
	case in.Size > s.cfg.MaxObjectSize:
		return ObjectInfo{}, s3err.New(s3err.EntityTooLarge, res).
			With("ProposedSize", strconv.FormatInt(in.Size, 10)).
			With("MaxSizeAllowed", strconv.FormatInt(s.cfg.MaxObjectSize, 10))
	}
	d, err := prepareDigests(res, in.ContentMD5, in.Checksum, "")
	if err != nil {
		return ObjectInfo{}, err
	}
	// A body that is stored inline is read whole before anything is
	// written, so a missing bucket costs little to find at the commit,
	// which checks it anyway, atomically; a larger body goes to blocks,
	// and is not streamed into a bucket that is not there.
	prechecked := in.Cond.set() || in.Size > s.cfg.InlineThreshold || in.Size == SizeUnknown
	if prechecked {
		if err := s.precheck(ctx, bucket, key, in.Cond); err != nil {
			return ObjectInfo{}, err
		}
	}
	data, err := s.ingest(ctx, body, in.Size, d.alg, false, res)
	if err == nil {
		if err = d.verify(data.md5[:], data.sum); err != nil {
			s.discard(ctx, data)
		}
	}
	if err != nil {
		if !prechecked {
			// Report a missing bucket before a bad body, as the
			// precheck would have.
			err = s.bucketOr(ctx, bucket, err)
		}
		return ObjectInfo{}, err
	}
	rec := s.newRecord(data.size, in.Meta, d.alg, data)
	rec.Tags = toMetaTags(in.Tags)
	rec.ACL = in.ACL
	return s.commit(ctx, bucket, key, in.Cond, rec, data)
}

// bucketOr returns NoSuchBucket if bucket does not exist, else err.
func (s *Service) bucketOr(ctx context.Context, bucket string, err error) error {
	if berr := s.checkBucket(ctx, bucket); berr != nil && s3err.Is(berr, s3err.NoSuchBucket) {
		return berr
	}
	return err
}

// precheck fails a write early, before its body is read, if the bucket is
// missing or a write precondition already fails. commit checks again.
func (s *Service) precheck(ctx context.Context, bucket, key string, c WriteConditions) error {
	if !c.set() {
		return s.checkBucket(ctx, bucket)
	}
	o, err := s.db.Object(ctx, bucket, key)
	switch {
	case errors.Is(err, meta.ErrNotFound):
		if err := s.checkBucket(ctx, bucket); err != nil {
			return err
		}
		return checkWrite(c, nil, bucket, key)
	case err != nil:
		return fmt.Errorf("read object %s/%s: %w", bucket, key, err)
	}
	return checkWrite(c, &o, bucket, key)
}

// newRecord builds the record of a single-part object from ingested data.
func (s *Service) newRecord(size int64, m Metadata, alg checksum.Algorithm, data *ingested) *meta.Object {
	rec := &meta.Object{
		Size:     size,
		ETag:     hex.EncodeToString(data.md5[:]),
		Modified: s.clock(),
		Meta:     toMetaMetadata(m),
		Blocks:   data.blocks,
		Inline:   data.inline,
	}
	if alg != "" {
		rec.Checksum = meta.Checksum{Algorithm: string(alg), Value: checksum.Encode(data.sum), Type: checksumFullObject}
	}
	return rec
}

// The checksum types S3 names.
const (
	checksumFullObject = "FULL_OBJECT"
	checksumComposite  = "COMPOSITE"
)

// commit stores rec as bucket/key if the write conditions hold against the
// current object, atomically, then settles or discards data.
func (s *Service) commit(ctx context.Context, bucket, key string, c WriteConditions, rec *meta.Object, data *ingested) (ObjectInfo, error) {
	committing := false
	cctx, cancel := s.commitContext(ctx, data)
	err := s.db.UpdateObject(cctx, bucket, key, rec.Modified, func(old *meta.Object) (*meta.Object, error) {
		if err := checkWrite(c, old, bucket, key); err != nil {
			return nil, err
		}
		committing = true
		return rec, nil
	})
	cancel()
	err = s.commitTimeout(cctx, err, bucket+"/"+key)
	s.finishWrite(ctx, data, err, committing)
	if err != nil {
		return ObjectInfo{}, s.writeErr(err, bucket, key)
	}
	info := writtenInfo(bucket, key, rec)
	return info, nil
}

// writeErr translates an error of a meta write.
func (s *Service) writeErr(err error, bucket, key string) error {
	var e *s3err.Error
	switch {
	case errors.As(err, &e):
		return err
	case errors.Is(err, meta.ErrNoBucket):
		return noSuchBucket(bucket)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return fmt.Errorf("commit %s/%s: %w", bucket, key, err)
}
