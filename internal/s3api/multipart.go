package s3api

import (
	"context"
	"math"
	"net/http"
	"net/url"
	"strings"

	"github.com/coffer-s3/coffer/internal/acl"
	"github.com/coffer-s3/coffer/internal/checksum"
	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/s3err"
	"github.com/coffer-s3/coffer/internal/s3xml"
)

// parseUploadID returns the uploadId query parameter. An empty one names no
// upload: NoSuchUpload.
func parseUploadID(q url.Values) (string, error) {
	id := q.Get("uploadId")
	if id == "" {
		return "", s3err.New(s3err.NoSuchUpload, "")
	}
	return id, nil
}

// parsePartTarget returns the upload ID and part number of UploadPart and
// UploadPartCopy.
func parsePartTarget(q url.Values) (string, int, error) {
	id, err := parseUploadID(q)
	if err != nil {
		return "", 0, err
	}
	n, err := parsePartNumber(q.Get("partNumber"))
	if err != nil {
		return "", 0, err
	}
	return id, n, nil
}

// parseCreateUpload turns the headers of a CreateMultipartUpload into its
// input. x-amz-checksum-type is COMPOSITE or FULL_OBJECT and must come
// with an algorithm; without it the type is left for objects to default
// by algorithm (FULL_OBJECT for CRC64NVME, else COMPOSITE).
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_CreateMultipartUpload.html
func parseCreateUpload(h http.Header) (objects.CreateUploadInput, error) {
	if err := checkUnsupported(h); err != nil {
		return objects.CreateUploadInput{}, err
	}
	meta, err := parseMetadata(h)
	if err != nil {
		return objects.CreateUploadInput{}, err
	}
	alg, err := parseChecksumAlgorithm(h)
	if err != nil {
		return objects.CreateUploadInput{}, err
	}
	tags, err := parseTaggingHeader(h)
	if err != nil {
		return objects.CreateUploadInput{}, err
	}
	in := objects.CreateUploadInput{Meta: meta, Tags: tags, ChecksumAlgorithm: alg}
	switch t := strings.ToUpper(h.Get("X-Amz-Checksum-Type")); t {
	case "":
	case "COMPOSITE", "FULL_OBJECT":
		if alg == "" {
			return objects.CreateUploadInput{}, s3err.Newf(s3err.InvalidRequest, "", "The x-amz-checksum-type header can only be used with the x-amz-checksum-algorithm header.")
		}
		in.ChecksumType = t
	default:
		return objects.CreateUploadInput{}, s3err.Newf(s3err.InvalidRequest, "", "Value for x-amz-checksum-type header is invalid.")
	}
	return in, nil
}

// createMultipartUpload serves CreateMultipartUpload.
func (h *Handler) createMultipartUpload(w http.ResponseWriter, r *http.Request, rq *request) error {
	in, err := parseCreateUpload(r.Header)
	if err != nil {
		return err
	}
	if err := h.authorizeRequestTags(r, rq, in.Tags); err != nil {
		return err
	}
	if in.ACL, err = h.newObjectACL(r, rq); err != nil {
		return err
	}
	in.Initiator = iam.UploadInitiator(rq.principal)
	up, err := h.objects.CreateMultipartUpload(r.Context(), rq.bucket, rq.key, in)
	if err != nil {
		return err
	}
	if up.ChecksumAlgorithm != "" {
		w.Header()["x-amz-checksum-algorithm"] = []string{string(up.ChecksumAlgorithm)}
		w.Header()["x-amz-checksum-type"] = []string{uploadChecksumType(up)}
	}
	h.setAbortDate(r.Context(), w.Header(), rq.bucket, rq.key, up.Initiated)
	return writeXML(w, http.StatusOK, s3xml.InitiateMultipartUploadResult{Bucket: rq.bucket, Key: s3xml.Text(rq.key), UploadID: up.UploadID})
}

// uploadPart serves UploadPart.
func (h *Handler) uploadPart(w http.ResponseWriter, r *http.Request, rq *request) error {
	id, n, err := parsePartTarget(rq.query)
	if err != nil {
		return err
	}
	in, err := parsePart(r.Header)
	if err != nil {
		return err
	}
	in.Size = rq.size
	if err := rq.attachTrailer(&in.Checksum); err != nil {
		return err
	}
	p, err := h.objects.UploadPart(r.Context(), rq.bucket, rq.key, id, n, in, rq.body)
	if err != nil {
		return err
	}
	hdr := w.Header()
	hdr["ETag"] = []string{quoteETag(p.ETag)}
	setChecksumHeaders(hdr, objects.ChecksumValue{Algorithm: p.Checksum.Algorithm, Value: p.Checksum.Value})
	hdr.Set("Content-Length", "0")
	w.WriteHeader(http.StatusOK)
	return nil
}

// uploadPartCopy serves UploadPartCopy. The caller must also be allowed to
// read the source.
func (h *Handler) uploadPartCopy(w http.ResponseWriter, r *http.Request, rq *request) error {
	id, n, err := parsePartTarget(rq.query)
	if err != nil {
		return err
	}
	src, err := parseCopySource(r.Header.Get("X-Amz-Copy-Source"))
	if err != nil {
		return err
	}
	rng, err := parseCopyRange(r.Header.Get("X-Amz-Copy-Source-Range"))
	if err != nil {
		return err
	}
	if err := h.authorizeSource(r, rq, src); err != nil {
		return err
	}
	in := objects.PartCopyInput{
		SrcBucket: src.bucket, SrcKey: src.key, SrcVersionID: src.versionID,
		SrcRange: rng, SrcCond: parseCopySourceConditions(r.Header),
	}
	p, err := h.objects.UploadPartCopy(r.Context(), rq.bucket, rq.key, id, n, in)
	if err != nil {
		return copySourceFailed(err)
	}
	setVersionHeaders(w.Header(), "", p.SourceVersionID)
	out := s3xml.CopyPartResult{LastModified: s3xml.Time(p.LastModified), ETag: quoteETag(p.ETag), Checksums: xmlChecksums(p.Checksum)}
	return writeXML(w, http.StatusOK, out)
}

// parseComplete turns the body and headers of a CompleteMultipartUpload
// into its input. The body has been decoded by s3xml; the full-object
// checksum the client asserts, if any, comes from x-amz-checksum-*, and
// its type from x-amz-checksum-type.
func parseComplete(h http.Header, doc s3xml.CompleteMultipartUpload) (objects.CompleteInput, error) {
	cond, err := parseWriteConditions(h)
	if err != nil {
		return objects.CompleteInput{}, err
	}
	alg, val, err := checksumHeaderOf(h, true)
	if err != nil {
		return objects.CompleteInput{}, err
	}
	in := objects.CompleteInput{Cond: cond, Checksum: objects.ChecksumInput{Algorithm: alg, Value: val}}
	switch t := strings.ToUpper(h.Get("X-Amz-Checksum-Type")); t {
	case "", "COMPOSITE", "FULL_OBJECT":
		in.ChecksumType = t
	default:
		return objects.CompleteInput{}, s3err.Newf(s3err.InvalidRequest, "", "Value for x-amz-checksum-type header is invalid.")
	}
	in.Parts = make([]objects.CompletePart, len(doc.Parts))
	for i, p := range doc.Parts {
		in.Parts[i] = objects.CompletePart{Number: p.PartNumber, ETag: p.ETag, Checksum: firstChecksum(p.Checksums)}
	}
	return in, nil
}

// firstChecksum returns the checksum a <Part> carries, if any.
func firstChecksum(c s3xml.Checksums) string {
	for _, a := range checksum.Algorithms() {
		if v := *checksumField(&c, a); v != "" {
			return v
		}
	}
	return ""
}

// completeMultipartUpload serves CompleteMultipartUpload.
func (h *Handler) completeMultipartUpload(w http.ResponseWriter, r *http.Request, rq *request) error {
	id, err := parseUploadID(rq.query)
	if err != nil {
		return err
	}
	doc, err := s3xml.DecodeCompleteMultipartUpload(rq.body, rq.op.limit)
	if err != nil {
		return err
	}
	in, err := parseComplete(r.Header, doc)
	if err != nil {
		return err
	}
	info, err := h.objects.CompleteMultipartUpload(r.Context(), rq.bucket, rq.key, id, in)
	if err != nil {
		return err
	}
	setVersionHeaders(w.Header(), info.VersionID, "")
	h.setExpiration(r.Context(), w.Header(), rq.bucket, &info)
	out := s3xml.CompleteMultipartUploadResult{
		Location:     objectLocation(r, rq),
		Bucket:       rq.bucket,
		Key:          s3xml.Text(rq.key),
		ETag:         quoteETag(info.ETag),
		Checksums:    xmlChecksums(info.Checksum),
		ChecksumType: checksumType(info.Checksum),
	}
	return writeXML(w, http.StatusOK, out)
}

// objectLocation returns the URL of the object a request addresses, as
// the client reached it.
func objectLocation(r *http.Request, rq *request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	u := url.URL{Scheme: scheme, Host: r.Host, Path: r.URL.Path}
	return u.String()
}

// abortMultipartUpload serves AbortMultipartUpload.
func (h *Handler) abortMultipartUpload(w http.ResponseWriter, r *http.Request, rq *request) error {
	id, err := parseUploadID(rq.query)
	if err != nil {
		return err
	}
	if err := h.objects.AbortMultipartUpload(r.Context(), rq.bucket, rq.key, id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// parseListParts parses the query of ListParts: max-parts (default and cap
// maxParts) and part-number-marker (parseCount).
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListParts.html
func parseListParts(q url.Values, maxParts int) (string, objects.ListPartsInput, error) {
	id, err := parseUploadID(q)
	if err != nil {
		return "", objects.ListPartsInput{}, err
	}
	var in objects.ListPartsInput
	if in.MaxParts, err = parseCount(q, "max-parts", maxParts); err != nil {
		return "", objects.ListPartsInput{}, err
	}
	if _, ok := q["part-number-marker"]; ok {
		if in.PartNumberMarker, err = parseCount(q, "part-number-marker", math.MaxInt32); err != nil {
			return "", objects.ListPartsInput{}, err
		}
	}
	return id, in, nil
}

// listParts serves ListParts.
func (h *Handler) listParts(w http.ResponseWriter, r *http.Request, rq *request) error {
	id, in, err := parseListParts(rq.query, h.cfg.MaxKeys)
	if err != nil {
		return err
	}
	// max-parts=0 is an empty, final page, as max-keys=0 is. The service
	// (whose 0 means its default) is asked for one part, to answer
	// NoSuchUpload and describe the upload all the same.
	ask := in
	ask.MaxParts = max(in.MaxParts, 1)
	res, err := h.objects.ListParts(r.Context(), rq.bucket, rq.key, id, ask)
	if err != nil {
		return err
	}
	if in.MaxParts == 0 {
		res.Parts, res.IsTruncated, res.NextPartNumberMarker = nil, false, in.PartNumberMarker
	}
	h.setAbortDate(r.Context(), w.Header(), rq.bucket, rq.key, res.Upload.Initiated)
	ba, err := h.objects.BucketAccess(r.Context(), rq.bucket)
	if err != nil {
		return err
	}
	initiator, owner := h.uploadParties(r.Context(), ba, res.Upload)
	out := s3xml.ListPartsResult{
		Bucket:            rq.bucket,
		Key:               s3xml.Text(rq.key),
		UploadID:          id,
		Initiator:         initiator,
		Owner:             owner,
		StorageClass:      "STANDARD",
		ChecksumAlgorithm: string(res.Upload.ChecksumAlgorithm),
		ChecksumType:      uploadChecksumType(res.Upload),
		PartNumberMarker:  in.PartNumberMarker,
		MaxParts:          in.MaxParts,
		IsTruncated:       res.IsTruncated,
	}
	out.NextPartNumberMarker = res.NextPartNumberMarker
	for _, p := range res.Parts {
		out.Parts = append(out.Parts, s3xml.Part{
			PartNumber:   p.Number,
			LastModified: s3xml.Time(p.LastModified),
			ETag:         quoteETag(p.ETag),
			Size:         p.Size,
			Checksums:    xmlChecksums(p.Checksum),
		})
	}
	return writeXML(w, http.StatusOK, out)
}

// uploadParties returns the Initiator and Owner that ListMultipartUploads
// and ListParts report for upload u of a bucket with access settings ba.
// Owner is who will own the object (its ACL's owner, the bucket's owner
// under BucketOwnerEnforced). Initiator is who started the upload,
// whoever lists it: for a user, its ARN and name, as S3 gives an IAM
// user; for root, Coffer's account, the same as Owner would be for its
// own object; for an upload of an anonymous caller or from before the
// initiator was kept, the Owner. See
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_Initiator.html
//
// An ACL that does not decode (a damaged record) names the bucket's owner,
// logged, rather than fail a whole listing.
func (h *Handler) uploadParties(ctx context.Context, ba objects.BucketAccess, u objects.Upload) (initiator, owner s3xml.Owner) {
	doc := u.ACL
	if acl.Ownership(ba.Ownership) == acl.BucketOwnerEnforced {
		doc = nil // ACLs are off: the bucket owner owns every object
	}
	a, err := decodeACL(doc, bucketOwnerID(ba.Owner))
	if err != nil {
		h.log.WarnContext(ctx, "upload's ACL does not decode: listed as the bucket owner's", "key", u.Key, "upload_id", u.UploadID, "err", err)
		a.Owner = bucketOwnerID(ba.Owner)
	}
	owner = h.canonicalOwner(a.Owner)
	switch p, ok := iam.ParseUploadInitiator(u.Initiator); {
	case !ok:
		initiator = owner
	case p.Root:
		initiator = s3xml.Owner{ID: h.iam.CanonicalID(p), DisplayName: iam.DisplayName(p)}
	default:
		initiator = s3xml.Owner{ID: iam.ARN(p), DisplayName: p.User}
	}
	return initiator, owner
}
