package s3api

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/coffer-s3/coffer/internal/checksum"
	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/s3err"
	"github.com/coffer-s3/coffer/internal/s3xml"
)

// copySource is the object an x-amz-copy-source header names.
type copySource struct {
	bucket, key string
	versionID   string // "" for the current version
}

// srcAction is what the caller must be allowed on the source.
func (c copySource) srcAction() iam.Action {
	if c.versionID != "" {
		return iam.GetObjectVersion
	}
	return iam.GetObject
}

// parseCopySource parses x-amz-copy-source: "bucket/key", URL-encoded,
// with an optional leading '/' and an optional "?versionId=…". Only a
// final "?…" that names versionId is a query: a '?' the client left
// unencoded in the key ("b/k?x.txt", as clients that build the header
// with a plain format send it) belongs to the key, so that the copy is of
// that object and not of "b/k".
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_CopyObject.html#API_CopyObject_RequestSyntax
func parseCopySource(hdr string) (copySource, error) {
	bad := func() error {
		return invalidArgument("x-amz-copy-source", hdr, "Copy Source must mention the source bucket and key: sourcebucket/sourcekey")
	}
	raw, vid := hdr, ""
	if i := strings.LastIndexByte(hdr, '?'); i >= 0 && strings.Contains(hdr[i+1:], "versionId") {
		q, err := url.ParseQuery(hdr[i+1:])
		if err != nil {
			return copySource{}, bad()
		}
		if vid, err = parseVersionID(q); err != nil {
			return copySource{}, err
		}
		raw = hdr[:i]
	}
	p, err := url.PathUnescape(raw)
	if err != nil {
		return copySource{}, bad()
	}
	p = strings.TrimPrefix(p, "/")
	bucket, key, ok := strings.Cut(p, "/")
	if !ok || bucket == "" || key == "" {
		return copySource{}, bad()
	}
	return copySource{bucket: bucket, key: key, versionID: vid}, nil
}

// parseCopyObject turns the headers of a CopyObject into its input.
// x-amz-metadata-directive is COPY (the default: the source's metadata) or
// REPLACE (the request's); anything else is InvalidArgument.
func parseCopyObject(h http.Header) (objects.CopyInput, error) {
	src, err := parseCopySource(h.Get("X-Amz-Copy-Source"))
	if err != nil {
		return objects.CopyInput{}, err
	}
	if err := checkUnsupported(h); err != nil {
		return objects.CopyInput{}, err
	}
	in := objects.CopyInput{SrcBucket: src.bucket, SrcKey: src.key, SrcVersionID: src.versionID, SrcCond: parseCopySourceConditions(h),
		StorageClass: h.Get("X-Amz-Storage-Class") != ""} // checkUnsupported allows STANDARD only
	switch d := h.Get("X-Amz-Metadata-Directive"); d {
	case "", "COPY":
	case "REPLACE":
		in.ReplaceMeta = true
		if in.Meta, err = parseMetadata(h); err != nil {
			return objects.CopyInput{}, err
		}
	default:
		return objects.CopyInput{}, invalidArgument("x-amz-metadata-directive", d, "Unknown metadata directive.")
	}
	switch d := h.Get("X-Amz-Tagging-Directive"); d {
	case "", "COPY":
	case "REPLACE":
		in.ReplaceTags = true
		if in.Tags, err = parseTaggingHeader(h); err != nil {
			return objects.CopyInput{}, err
		}
	default:
		return objects.CopyInput{}, invalidArgument("x-amz-tagging-directive", d, "Unknown tagging directive.")
	}
	if in.Cond, err = parseWriteConditions(h); err != nil {
		return objects.CopyInput{}, err
	}
	if in.ChecksumAlgorithm, err = parseChecksumAlgorithm(h); err != nil {
		return objects.CopyInput{}, err
	}
	return in, nil
}

// copyObject serves CopyObject. The caller must also be allowed to read
// the source; that is checked before the service is called.
func (h *Handler) copyObject(w http.ResponseWriter, r *http.Request, rq *request) error {
	in, err := parseCopyObject(r.Header)
	if err != nil {
		return err
	}
	src := copySource{bucket: in.SrcBucket, key: in.SrcKey, versionID: in.SrcVersionID}
	if err := h.authorizeSource(r, rq, src); err != nil {
		return err
	}
	if err := h.authorizeRequestTags(r, rq, in.Tags); err != nil {
		return err
	}
	if in.ACL, err = h.newObjectACL(r, rq); err != nil {
		return err
	}
	info, err := h.objects.CopyObject(r.Context(), rq.bucket, rq.key, in)
	if err != nil {
		return copySourceFailed(err)
	}
	setVersionHeaders(w.Header(), info.VersionID, info.SourceVersionID)
	h.setExpiration(r.Context(), w.Header(), rq.bucket, &info.ObjectInfo)
	out := s3xml.CopyObjectResult{
		LastModified: s3xml.Time(info.LastModified),
		ETag:         quoteETag(info.ETag),
		Checksums:    xmlChecksums(info.Checksum),
		ChecksumType: checksumType(info.Checksum),
	}
	return writeXML(w, http.StatusOK, out)
}

// setVersionHeaders sets x-amz-version-id (of a version written) and
// x-amz-copy-source-version-id (of the source version copied), each if
// there is one to report.
func setVersionHeaders(hdr http.Header, versionID, sourceVersionID string) {
	if versionID != "" {
		hdr["x-amz-version-id"] = []string{versionID}
	}
	if sourceVersionID != "" {
		hdr["x-amz-copy-source-version-id"] = []string{sourceVersionID}
	}
}

// copySourceFailed maps a failed copy-source precondition to S3's answer:
// x-amz-copy-source-if-none-match and -if-modified-since fail with 412,
// not 304, because a copy has no cached copy to keep using.
func copySourceFailed(err error) error {
	if s3err.Is(err, s3err.NotModified) {
		return s3err.Wrap(s3err.PreconditionFailed, "", err)
	}
	return err
}

// xmlChecksums puts a checksum in the element its algorithm names.
func xmlChecksums(c objects.ChecksumValue) s3xml.Checksums {
	var x s3xml.Checksums
	if f := checksumField(&x, c.Algorithm); f != nil {
		*f = c.Value
	}
	return x
}

// checksumField returns the field of x, named Checksum<algorithm> as its
// XML element is, that holds a's value; nil if a is not an algorithm.
func checksumField(x *s3xml.Checksums, a checksum.Algorithm) *string {
	switch a {
	case checksum.CRC32:
		return &x.ChecksumCRC32
	case checksum.CRC32C:
		return &x.ChecksumCRC32C
	case checksum.CRC64NVME:
		return &x.ChecksumCRC64NVME
	case checksum.SHA1:
		return &x.ChecksumSHA1
	case checksum.SHA256:
		return &x.ChecksumSHA256
	case checksum.SHA512:
		return &x.ChecksumSHA512
	case checksum.MD5:
		return &x.ChecksumMD5
	case checksum.XXHASH64:
		return &x.ChecksumXXHASH64
	case checksum.XXHASH3:
		return &x.ChecksumXXHASH3
	case checksum.XXHASH128:
		return &x.ChecksumXXHASH128
	}
	return nil
}
