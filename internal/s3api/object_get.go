package s3api

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/s3err"
)

// getObject serves GetObject, streaming the body through a pooled buffer
// (or the body's own WriteTo); an object is never held whole in memory.
func (h *Handler) getObject(w http.ResponseWriter, r *http.Request, rq *request) error {
	opt, overrides, err := parseObjectRead(r.Header, rq)
	if err != nil {
		return err
	}
	obj, err := h.objects.GetObject(r.Context(), rq.bucket, rq.key, opt)
	if err != nil {
		return h.readFailed(r, w, rq, obj, overrides, err)
	}
	defer obj.Body.Close()
	status := setObjectHeaders(w.Header(), obj, opt, checksumMode(r.Header), overrides)
	if opt.VersionID == "" {
		h.setExpiration(r.Context(), w.Header(), rq.bucket, &obj.Info)
	}
	w.WriteHeader(status)
	buf := h.bufs.Get().(*[]byte)
	defer h.bufs.Put(buf)
	if _, err := io.CopyBuffer(w, obj.Body, *buf); err != nil {
		return fmt.Errorf("stream %s/%s: %w", rq.bucket, rq.key, err)
	}
	return nil
}

// headObject serves HeadObject: GetObject's status and headers, no body.
func (h *Handler) headObject(w http.ResponseWriter, r *http.Request, rq *request) error {
	opt, overrides, err := parseObjectRead(r.Header, rq)
	if err != nil {
		return err
	}
	obj, err := h.objects.HeadObject(r.Context(), rq.bucket, rq.key, opt)
	if err != nil {
		return h.readFailed(r, w, rq, obj, overrides, err)
	}
	if obj.Body != nil {
		obj.Body.Close()
	}
	status := setObjectHeaders(w.Header(), obj, opt, checksumMode(r.Header), overrides)
	if opt.VersionID == "" {
		h.setExpiration(r.Context(), w.Header(), rq.bucket, &obj.Info)
	}
	w.WriteHeader(status)
	return nil
}

// parseObjectRead parses what GetObject and HeadObject share.
func parseObjectRead(h http.Header, rq *request) (objects.GetOptions, []headerOverride, error) {
	opt, err := parseGetObject(h, rq.query)
	if err != nil {
		return objects.GetOptions{}, nil, err
	}
	overrides, err := parseResponseOverrides(rq.query, rq.anonymous())
	if err != nil {
		return objects.GetOptions{}, nil, err
	}
	return opt, overrides, nil
}

// checksumMode reports whether the client asked for checksums with
// x-amz-checksum-mode: ENABLED.
func checksumMode(h http.Header) bool {
	return strings.EqualFold(h.Get("X-Amz-Checksum-Mode"), "ENABLED")
}

// readFailed returns err after, for NotModified, setting the headers a
// 304 carries (RFC 9110 §15.4.5: the validators, Cache-Control and
// Expires, the last two as the request's response-* parameters override
// them for a 200) from obj, the object the service checked the
// precondition against; a NoSuchKey becomes AccessDenied for a caller
// without s3:ListBucket, as in S3.
func (h *Handler) readFailed(r *http.Request, w http.ResponseWriter, rq *request, obj *objects.Object, overrides []headerOverride, err error) error {
	if s3err.Is(err, s3err.NoSuchKey) && !rq.principal.Root {
		// S3 tells a caller that may read the key but not list the
		// bucket 403, not whether the key exists.
		if aerr := h.authorize(r, rq, iam.ListBucket, rq.bucket, ""); aerr != nil {
			return aerr
		}
	}
	if !s3err.Is(err, s3err.NotModified) || obj == nil {
		return err
	}
	// The version the precondition was checked against (not another
	// lookup, which a concurrent write could answer with a newer one).
	if obj.Body != nil {
		obj.Body.Close()
	}
	hdr := w.Header()
	hdr["ETag"] = []string{quoteETag(obj.Info.ETag)}
	hdr.Set("Last-Modified", httpTime(obj))
	if obj.Info.VersionID != "" {
		hdr["x-amz-version-id"] = []string{obj.Info.VersionID}
	}
	setIf(hdr, "Cache-Control", obj.Info.Meta.CacheControl)
	setIf(hdr, "Expires", obj.Info.Meta.Expires)
	for _, o := range overrides {
		if o.header == "Cache-Control" || o.header == "Expires" {
			hdr.Set(o.header, o.value)
		}
	}
	return err
}

// setObjectHeaders sets the response headers of a GetObject or HeadObject
// and returns its status: 206 for a range or part, else 200.
func setObjectHeaders(hdr http.Header, obj *objects.Object, opt objects.GetOptions, withChecksum bool, overrides []headerOverride) int {
	info := &obj.Info
	// ETag is set verbatim: S3 spells it so, and some clients look it up
	// case-sensitively.
	hdr["ETag"] = []string{quoteETag(info.ETag)}
	hdr.Set("Last-Modified", httpTime(obj))
	hdr.Set("Content-Length", strconv.FormatInt(obj.Length, 10))
	hdr.Set("Accept-Ranges", "bytes")
	if info.VersionID != "" {
		hdr["x-amz-version-id"] = []string{info.VersionID}
	}
	ct := info.Meta.ContentType
	if ct == "" {
		ct = "binary/octet-stream" // what S3 stores for a PUT without Content-Type
	}
	hdr.Set("Content-Type", ct)
	setIf(hdr, "Content-Encoding", info.Meta.ContentEncoding)
	setIf(hdr, "Content-Disposition", info.Meta.ContentDisposition)
	setIf(hdr, "Content-Language", info.Meta.ContentLanguage)
	setIf(hdr, "Cache-Control", info.Meta.CacheControl)
	setIf(hdr, "Expires", info.Meta.Expires)
	for k, v := range info.Meta.User {
		hdr["x-amz-meta-"+k] = []string{encodeMetaValue(v)}
	}
	if info.TagCount > 0 {
		hdr["x-amz-tagging-count"] = []string{strconv.Itoa(info.TagCount)}
	}
	if opt.PartNumber > 0 && info.PartCount() > 0 {
		hdr["x-amz-mp-parts-count"] = []string{strconv.Itoa(info.PartCount())}
	}
	// A checksum covers what it names: the whole object, or with
	// partNumber the part served. S3 sends none for a byte range.
	switch {
	case !withChecksum:
	case opt.PartNumber > 0:
		setChecksumHeaders(hdr, obj.PartChecksum)
	case !obj.Partial:
		setChecksumHeaders(hdr, info.Checksum)
	}
	for _, o := range overrides {
		hdr.Set(o.header, o.value)
	}
	if obj.Partial {
		hdr.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", obj.Start, obj.Start+obj.Length-1, info.Size))
		return http.StatusPartialContent
	}
	return http.StatusOK
}

// setChecksumHeaders sets x-amz-checksum-<algorithm> and
// x-amz-checksum-type for a stored checksum.
func setChecksumHeaders(hdr http.Header, c objects.ChecksumValue) {
	if c.Algorithm == "" || c.Value == "" {
		return
	}
	hdr[c.Algorithm.Header()] = []string{c.Value}
	if c.Type != "" {
		hdr["x-amz-checksum-type"] = []string{c.Type}
	}
}

// setIf sets hdr[k] to v when v is not empty.
func setIf(hdr http.Header, k, v string) {
	if v != "" {
		hdr.Set(k, v)
	}
}

// httpTime formats an object's modification time as an HTTP date.
func httpTime(obj *objects.Object) string {
	return obj.Info.LastModified.UTC().Format(http.TimeFormat)
}
