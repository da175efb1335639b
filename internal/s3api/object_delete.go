package s3api

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/coffer-s3/coffer/internal/checksum"
	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/s3err"
	"github.com/coffer-s3/coffer/internal/s3xml"
)

// deleteObject serves DeleteObject. Deleting an absent key or version
// succeeds, as in S3. On a versioned bucket the response names the delete
// marker written (or the version removed) in x-amz-version-id, with
// x-amz-delete-marker: true when that is a delete marker. If-Match,
// x-amz-if-match-last-modified-time and x-amz-if-match-size make it
// conditional (objects.DeleteConditions); one that compares the object's
// ETag, time or size needs read permission as well.
func (h *Handler) deleteObject(w http.ResponseWriter, r *http.Request, rq *request) error {
	vid, err := parseVersionID(rq.query)
	if err != nil {
		return err
	}
	cond, err := parseDeleteConditions(r.Header)
	if err != nil {
		return err
	}
	if err := h.authorizeDeleteRead(r, rq, target{bucket: rq.bucket, key: rq.key, versionID: vid}, r.Header, cond); err != nil {
		return err
	}
	res, err := h.objects.DeleteObject(r.Context(), rq.bucket, objects.ObjectRef{Key: rq.key, VersionID: vid, If: cond})
	if err != nil {
		return err
	}
	setDeleteHeaders(w.Header(), res)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// authorizeDeleteRead checks the read permission a conditional delete of
// key (version vid) needs besides the delete permission when its
// conditions reveal the object's ETag, time or size (deleteReveals):
// s3:GetObject, or s3:GetObjectVersion for a version.
func (h *Handler) authorizeDeleteRead(r *http.Request, rq *request, t target, hdr http.Header, c objects.DeleteConditions) error {
	if !deleteReveals(c) {
		return nil
	}
	action := iam.GetObject
	if t.versionID != "" {
		action = iam.GetObjectVersion
	}
	return h.authorizeTarget(r, rq, action, t, hdr)
}

// deleteEntryHeader returns the request headers policy conditions see for
// a DeleteObjects entry: the request's, with the entry's ETag as its
// If-Match (s3:if-match) in place of any the request carries, as if it
// were the DeleteObject it stands for. A policy that requires conditional
// deletes thus holds for DeleteObjects too, entry by entry.
func deleteEntryHeader(h http.Header, etag string) http.Header {
	c := make(http.Header, len(h)+1)
	for k, v := range h {
		if k != "If-Match" && k != "If-None-Match" {
			c[k] = v
		}
	}
	if etag != "" {
		c["If-Match"] = []string{etag}
	}
	return c
}

// deleteEntryConditions returns the preconditions of a DeleteObjects
// entry: its ETag, LastModifiedTime (parseTimestamp; anything else is
// MalformedXML) and Size (a negative one is MalformedXML too).
func deleteEntryConditions(o s3xml.ObjectIdentifier) (objects.DeleteConditions, error) {
	c := objects.DeleteConditions{IfMatch: strings.TrimSpace(o.ETag), IfMatchSize: o.Size}
	if o.Size != nil && *o.Size < 0 {
		return c, s3err.New(s3err.MalformedXML, "")
	}
	if v := strings.TrimSpace(o.LastModifiedTime); v != "" {
		t, ok := parseTimestamp(v)
		if !ok {
			return c, s3err.New(s3err.MalformedXML, "")
		}
		c.IfMatchLastModified = &t
	}
	return c, nil
}

// setDeleteHeaders sets the version headers of a delete's response.
func setDeleteHeaders(hdr http.Header, res objects.DeleteResult) {
	switch {
	case res.VersionID != "":
		hdr["x-amz-version-id"] = []string{res.VersionID}
	case res.DeleteMarkerVersionID != "":
		hdr["x-amz-version-id"] = []string{res.DeleteMarkerVersionID}
	}
	if res.DeleteMarker {
		hdr["x-amz-delete-marker"] = []string{"true"}
	}
}

// deleteObjects serves DeleteObjects. S3 requires the body to carry an
// integrity check, Content-MD5 or a flexible checksum; either is accepted
// and verified before anything is deleted. Each key is authorized on its
// own, as S3 does (s3:DeleteObject per object, s3:DeleteObjectVersion for
// a version), and fails alone.
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_DeleteObjects.html
func (h *Handler) deleteObjects(w http.ResponseWriter, r *http.Request, rq *request) error {
	// Authorized entry by entry: until one is allowed, nothing about the
	// request is (the audit log records it as a refusal: a key without
	// permissions could otherwise send malformed bodies, or entries it
	// may not delete, recorded in full at will). Once one is, the request
	// is an allowed one, whatever its other entries met: a denied entry
	// must not hide the deletions beside it.
	rq.denied = true
	body, err := readXMLBody(rq.body, rq.op.limit)
	if err != nil {
		return err
	}
	if err := verifyBodyDigest(r.Header, body, rq.trailer); err != nil {
		return err
	}
	del, err := s3xml.DecodeDeleteObjects(bytes.NewReader(body), rq.op.limit)
	if err != nil {
		return err
	}
	conds := make([]objects.DeleteConditions, len(del.Objects))
	for i, o := range del.Objects {
		if conds[i], err = deleteEntryConditions(o); err != nil {
			return err
		}
	}
	out := s3xml.DeleteResult{}
	fail := func(o s3xml.ObjectIdentifier, err error) {
		out.Errors = append(out.Errors, h.deleteError(r.Context(), rq, o, err))
	}
	refs := make([]objects.ObjectRef, 0, len(del.Objects))
	todo := make([]s3xml.ObjectIdentifier, 0, len(del.Objects))
	for i, o := range del.Objects {
		action := iam.DeleteObject
		if o.VersionID != "" {
			action = iam.DeleteObjectVersion
		}
		t := target{bucket: rq.bucket, key: o.Key, versionID: o.VersionID}
		hdr := r.Header
		if !rq.principal.Root { // root's requests never see conditions
			hdr = deleteEntryHeader(r.Header, strings.TrimSpace(o.ETag))
		}
		if err := h.authorizeTarget(r, rq, action, t, hdr); err != nil {
			fail(o, err)
			continue
		}
		if err := h.authorizeDeleteRead(r, rq, t, hdr, conds[i]); err != nil {
			fail(o, err)
			continue
		}
		refs = append(refs, objects.ObjectRef{Key: o.Key, VersionID: o.VersionID, If: conds[i]})
		todo = append(todo, o)
	}
	rq.denied = len(refs) == 0
	if len(refs) > 0 {
		res, err := h.objects.DeleteObjects(r.Context(), rq.bucket, refs)
		if err != nil {
			return err
		}
		if len(res) != len(refs) {
			return fmt.Errorf("delete objects: %d results for %d keys", len(res), len(refs))
		}
		for i, d := range res {
			if d.Err != nil {
				fail(todo[i], d.Err)
				continue
			}
			if !del.Quiet {
				out.Deleted = append(out.Deleted, s3xml.DeletedObject{
					Key: todo[i].Key, VersionID: todo[i].VersionID,
					DeleteMarker: d.DeleteMarker, DeleteMarkerVersionID: d.DeleteMarkerVersionID,
				})
			}
		}
	}
	return writeXML(w, http.StatusOK, out)
}

// deleteError makes the <Error> entry for a key that was not deleted. A
// cause that is not an *s3err.Error is logged, as writeError would.
func (h *Handler) deleteError(ctx context.Context, rq *request, o s3xml.ObjectIdentifier, err error) s3xml.DeleteError {
	e, ok := errors.AsType[*s3err.Error](err)
	if !ok {
		h.log.ErrorContext(ctx, "internal error", "request_id", rq.id, "op", rq.opName(), "bucket", rq.bucket, "key", o.Key, "err", err)
		e = s3err.New(s3err.InternalError, "")
	}
	return s3xml.DeleteError{Key: o.Key, VersionID: o.VersionID, Code: e.Code, Message: e.Msg()}
}

// readXMLBody reads a whole XML body of at most limit bytes, so that any
// payload verification the body reader does at EOF has happened before the
// body is used.
func readXMLBody(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, s3err.New(s3err.MaxMessageLengthExceeded, "").With("MaxMessageLengthBytes", strconv.FormatInt(limit, 10))
	}
	return b, nil
}

// verifyBodyDigest checks the Content-MD5 or flexible checksum a request
// must carry (in an x-amz-checksum-* header, or in the aws-chunked trailer
// x-amz-trailer names, which trailer returns once the body was read)
// against body. Neither is InvalidRequest, as S3 answers; a mismatch is
// BadDigest.
func verifyBodyDigest(h http.Header, body []byte, trailer func(string) string) error {
	md5b64, err := parseContentMD5(h)
	if err != nil {
		return err
	}
	sum, err := parseChecksum(h)
	if err != nil {
		return err
	}
	if sum.Algorithm != "" && sum.Value == "" && trailer != nil {
		sum.Value = trailer(sum.Algorithm.Header())
		if err := sum.Algorithm.Validate(sum.Value); err != nil {
			return s3err.Newf(s3err.InvalidRequest, "", "Value for "+sum.Algorithm.Header()+" trailing header is invalid.")
		}
	}
	if md5b64 == "" && sum.Value == "" {
		return s3err.Newf(s3err.InvalidRequest, "", "Missing required header for this request: Content-MD5")
	}
	if md5b64 != "" {
		d := md5.Sum(body)
		if base64.StdEncoding.EncodeToString(d[:]) != md5b64 {
			return s3err.New(s3err.BadDigest, "")
		}
	}
	if sum.Value != "" {
		hh := sum.Algorithm.New()
		hh.Write(body)
		if checksum.Encode(hh.Sum(nil)) != sum.Value {
			return s3err.Newf(s3err.BadDigest, "", "The "+string(sum.Algorithm)+" you specified did not match the calculated checksum.")
		}
	}
	return nil
}
