package s3api

import (
	"net/http"

	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/s3err"
)

// putObject serves PutObject.
func (h *Handler) putObject(w http.ResponseWriter, r *http.Request, rq *request) error {
	in, err := parsePutObject(r.Header, rq.query)
	if err != nil {
		return err
	}
	in.Size = rq.size
	if err := rq.attachTrailer(&in.Checksum); err != nil {
		return err
	}
	if err := h.authorizeRequestTags(r, rq, in.Tags); err != nil {
		return err
	}
	if in.ACL, err = h.newObjectACL(r, rq); err != nil {
		return err
	}
	info, err := h.objects.PutObject(r.Context(), rq.bucket, rq.key, in, rq.body)
	if err != nil {
		return err
	}
	hdr := w.Header()
	hdr["ETag"] = []string{quoteETag(info.ETag)}
	setVersionHeaders(hdr, info.VersionID, "")
	if in.Checksum.Algorithm != "" {
		setChecksumHeaders(hdr, info.Checksum)
	}
	h.setExpiration(r.Context(), hdr, rq.bucket, &info)
	hdr.Set("Content-Length", "0")
	w.WriteHeader(http.StatusOK)
	return nil
}

// attachTrailer connects a checksum expected in the trailer (an Algorithm
// without a Value) to the body's trailer. A request that announces a
// trailing checksum but has no aws-chunked body to carry it is
// InvalidRequest.
func (rq *request) attachTrailer(c *objects.ChecksumInput) error {
	if c.Algorithm == "" || c.Value != "" {
		return nil
	}
	if rq.trailer == nil {
		return s3err.Newf(s3err.InvalidRequest, "", "The x-amz-trailer header requires an aws-chunked request body (x-amz-content-sha256: STREAMING-…-TRAILER).")
	}
	name, get := c.Algorithm.Header(), rq.trailer
	c.Trailer = func() string { return get(name) }
	return nil
}
