package objects

import (
	"context"
	"errors"
	"fmt"

	"github.com/coffer-s3/coffer/internal/meta"
	"github.com/coffer-s3/coffer/internal/s3err"
)

// HeadObject returns the description of bucket/key after checking
// preconditions; Start, Length and Partial describe the range a GET with the
// same options would serve, and Body is empty. Errors: NoSuchBucket,
// NoSuchKey, PreconditionFailed, NotModified, InvalidRange,
// InvalidPartNumber (a partNumber past the last part),
// InvalidRequest (Range with partNumber), InvalidArgument (partNumber out
// of 1..10000). With NotModified the *Object is returned too, for the ETag
// and Last-Modified headers of the 304.
func (s *Service) HeadObject(ctx context.Context, bucket, key string, opt GetOptions) (*Object, error) {
	return s.open(ctx, bucket, key, openOptions{get: opt})
}

// GetObject opens bucket/key for reading; errors as HeadObject. The caller
// must close Body. Data of block objects is streamed block by block, and
// the version being read stays readable until Body is closed (or ctx ends)
// even if the object is overwritten or deleted meanwhile.
func (s *Service) GetObject(ctx context.Context, bucket, key string, opt GetOptions) (*Object, error) {
	return s.open(ctx, bucket, key, openOptions{get: opt, body: true})
}

// openOptions selects what open checks and returns.
type openOptions struct {
	get        GetOptions
	copyRange  *Range // x-amz-copy-source-range (strict), instead of get.Range
	copySource bool   // preconditions of a copy source: failures are all 412
	body       bool   // open a Body
}

// maxOpenAttempts bounds how often open retries when the object changes
// between reading its record and registering as its reader.
const maxOpenAttempts = 16

func (s *Service) open(ctx context.Context, bucket, key string, o openOptions) (*Object, error) {
	res := bucket + "/" + key
	if err := checkGetOptions(o.get, res); err != nil {
		return nil, err
	}
	for range maxOpenAttempts {
		obj, retry, err := s.openOnce(ctx, bucket, key, o, res)
		if !retry {
			return obj, err
		}
	}
	return nil, s3err.New(s3err.SlowDown, res)
}

// openOnce is one attempt of open; retry reports that the object changed
// before its data could be read or its reader could register.
func (s *Service) openOnce(ctx context.Context, bucket, key string, o openOptions, res string) (obj *Object, retry bool, err error) {
	vid := o.get.VersionID
	rec, current, err := s.lookup(ctx, bucket, key, vid)
	if o.copySource && s3err.Is(err, s3err.MethodNotAllowed) {
		// A copy source naming a delete marker by its version ID is a
		// bad request, not a method on the marker, as S3 answers it.
		return nil, false, s3err.Newf(s3err.InvalidRequest, res,
			"The source of a copy request may not specifically refer to a delete marker by version id.")
	}
	if err != nil {
		return nil, false, err
	}
	obj = &Object{Info: objectInfo(bucket, key, &rec), Body: emptyBody{}, tags: rec.Tags}
	if vid != "" {
		obj.Info.VersionID = rec.S3VersionID() // asked for by ID: always named
	} else {
		obj.Info.VersionID = s.reportedVersion(ctx, bucket, &rec)
	}
	if err := checkRead(o.get.Cond, res, rec.ETag, rec.Modified, o.copySource); err != nil {
		if s3err.Is(err, s3err.NotModified) {
			return obj, false, err
		}
		return nil, false, err
	}
	if o.get.Range != nil && o.get.Cond.IfRange != nil && !o.get.Cond.IfRange.holds(rec.ETag) {
		o.get.Range = nil // changed since the client's copy: all of it
	}
	sp, err := s.span(&rec, o, res)
	if err != nil {
		return nil, false, err
	}
	obj.Start, obj.Length, obj.Partial = sp.start, sp.length, sp.partial
	if o.get.PartNumber > 0 {
		obj.PartChecksum = partChecksum(&rec, obj.Info.Checksum, o.get.PartNumber)
	}
	if !o.body || sp.length == 0 {
		return obj, false, nil
	}
	if len(rec.Blocks) == 0 {
		body, err := s.inlineBody(ctx, bucket, key, &rec, current, sp)
		switch {
		case err != nil:
			return nil, false, err
		case body == nil: // replaced or deleted since rec was read
			return nil, true, nil
		}
		obj.Body = body
		return obj, false, nil
	}
	// Register as a reader of this version, then make sure it is still
	// there: once it is, any commit that makes it garbage comes after the
	// registration, so GC sees the reader before it may delete the
	// version's blocks. If it changed, the caller starts over.
	release := s.readers.acquire(rec.VersionID)
	var again meta.Object
	if vid == "" {
		again, err = s.db.Object(ctx, bucket, key)
	} else {
		again, _, err = s.db.ObjectVersion(ctx, bucket, key, vid)
	}
	if err == nil && again.VersionID == rec.VersionID {
		br := s.newBlockReader(ctx, rec.Blocks, sp.start, sp.length, release)
		// The first block is opened now, before the caller sends a
		// status line: a block store that cannot be reached is then a
		// 503 (a missing block a 500), not a 200 cut short.
		if err := br.open(); err != nil {
			br.Close()
			return nil, false, blocksUnavailable(err, res)
		}
		obj.Body = br
		return obj, false, nil
	}
	release()
	if err != nil && !errors.Is(err, meta.ErrNotFound) {
		return nil, false, fmt.Errorf("read object %s: %w", res, err)
	}
	return nil, true, nil
}

// lookup reads the record of version vid of bucket/key ("" for the
// current one) and reports whether it is the current version. A missing
// key is NoSuchKey, carrying x-amz-delete-marker and the marker's version
// ID when the latest version is a delete marker; a missing version is
// NoSuchVersion; a delete marker asked for by ID is MethodNotAllowed, as in
// S3. See https://docs.aws.amazon.com/AmazonS3/latest/userguide/DeleteMarker.html
func (s *Service) lookup(ctx context.Context, bucket, key, vid string) (meta.Object, bool, error) {
	res := bucket + "/" + key
	var rec meta.Object
	current := true
	var err error
	if vid == "" {
		rec, err = s.db.Object(ctx, bucket, key)
	} else {
		if err := checkVersionID(vid, res); err != nil {
			return meta.Object{}, false, err
		}
		rec, current, err = s.db.ObjectVersion(ctx, bucket, key, vid)
	}
	switch {
	case err == nil && rec.DeleteMarker:
		return meta.Object{}, false, s3err.New(s3err.MethodNotAllowed, res).
			With("Method", "GET").With("ResourceType", "DeleteMarker").
			WithHeader("x-amz-delete-marker", "true").
			WithHeader("x-amz-version-id", rec.S3VersionID()).
			WithHeader("Allow", "DELETE").
			WithHeader("Last-Modified", rec.Modified.UTC().Format(http1123))
	case err == nil:
		return rec, current, nil
	case !errors.Is(err, meta.ErrNotFound):
		return meta.Object{}, false, fmt.Errorf("read object %s: %w", res, err)
	}
	if err := s.checkBucket(ctx, bucket); err != nil {
		return meta.Object{}, false, err
	}
	if vid != "" {
		return meta.Object{}, false, noSuchVersion(bucket, key, vid)
	}
	e := noSuchKey(bucket, key).(*s3err.Error)
	dm, err := s.db.LatestDeleteMarker(ctx, bucket, key)
	switch {
	case err == nil:
		e.WithHeader("x-amz-delete-marker", "true").WithHeader("x-amz-version-id", dm.S3VersionID())
	case errors.Is(err, meta.ErrNotFound):
		e.WithHeader("x-amz-delete-marker", "false") // as S3 answers a key without one
	default:
		return meta.Object{}, false, fmt.Errorf("read versions of %s: %w", res, err)
	}
	return meta.Object{}, false, e
}

// http1123 is the HTTP date format (net/http's TimeFormat; objects does
// not import net/http).
const http1123 = "Mon, 02 Jan 2006 15:04:05 GMT"

// inlineBody reads the data of inline record rec (the current version, or
// a noncurrent one) into a pooled buffer and returns a Body serving span sp
// of it, which returns the buffer on Close. It returns nil and no error if
// the version moved or went since rec was read.
func (s *Service) inlineBody(ctx context.Context, bucket, key string, rec *meta.Object, current bool, sp span) (*inlineBody, error) {
	bufp := s.inlineBufs.Get().(*[]byte)
	var data, buf []byte
	var err error
	if current {
		data, buf, err = s.db.ObjectData(ctx, bucket, key, rec.VersionID, *bufp)
	} else {
		data, buf, err = s.db.VersionData(ctx, bucket, key, rec, *bufp)
	}
	*bufp = buf
	switch {
	case errors.Is(err, meta.ErrNotFound):
		s.putReadBuf(bufp)
		return nil, nil
	case err != nil:
		s.putReadBuf(bufp)
		return nil, fmt.Errorf("read object %s/%s: %w", bucket, key, err)
	case int64(len(data)) != rec.Size:
		s.putReadBuf(bufp)
		return nil, fmt.Errorf("object %s/%s has %d bytes of inline data, its record says %d", bucket, key, len(data), rec.Size)
	}
	return newInlineBody(data[sp.start:sp.start+sp.length], func() { s.putReadBuf(bufp) }), nil
}

// putReadBuf returns a data buffer to the pool unless a value larger than
// any inline object's grew it, or a failed read left it smaller than the
// pool's (the metadata store returns none when it fails).
func (s *Service) putReadBuf(bufp *[]byte) {
	if c := int64(cap(*bufp)); c > s.cfg.InlineThreshold+dataSlack || c < s.cfg.InlineThreshold+1 {
		return
	}
	if s.scribble {
		b := (*bufp)[:cap(*bufp)]
		for i := range b {
			b[i] = scribbleByte
		}
	}
	*bufp = (*bufp)[:0]
	s.inlineBufs.Put(bufp)
}

// scribbleByte is what tests (Service.scribble) fill released buffers with.
const scribbleByte = 0xAA

// span resolves the byte range a read serves.
func (s *Service) span(rec *meta.Object, o openOptions, res string) (span, error) {
	switch {
	case o.copyRange != nil:
		return resolveCopyRange(o.copyRange, rec.Size, res)
	case o.get.Range != nil:
		return resolveRange(o.get.Range, rec.Size, res)
	case o.get.PartNumber > 0:
		return partSpan(rec, o.get.PartNumber, res)
	}
	return span{length: rec.Size}, nil
}
