package console

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"

	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/s3err"
)

// Uploads go through the console, not to S3 directly: browser.js sends
// each file (or each part of a large one) to these endpoints with the
// session cookie and the CSRF token in the X-CSRF-Token header, and each
// handler authorizes the S3 operation it stands for with iam for the
// signed-in principal, then streams the body into the object service.
// The browser never holds a secret or a presigned URL, needs no CORS rule
// on the bucket, and a user with a console password but no access key
// can upload. See docs/console.md.
//
// The endpoints answer JSON: {"etag", "versionId"} or {"uploadId"}, or
// {"error"} with the status S3 would answer.

// maxCompleteBody bounds the JSON body of a complete request: 10,000
// parts of about 60 bytes each.
const maxCompleteBody = 1 << 20

// uploadTarget is the object an upload request writes: the path's bucket
// and the query's key (and uploadId).
type uploadTarget struct {
	bucket, key, uploadID string
}

// parseUploadTarget reads an upload request's object. It is pure.
func parseUploadTarget(r *http.Request) (uploadTarget, error) {
	q := r.URL.Query()
	t := uploadTarget{bucket: r.PathValue("bucket"), key: q.Get("key"), uploadID: q.Get("uploadId")}
	if t.key == "" {
		return t, pageError(http.StatusBadRequest, "No object key given.")
	}
	return t, nil
}

// writeJSON writes v as the JSON answer of an upload endpoint.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// jsonErrors answers an upload endpoint's error as JSON, with the status
// and message the console would show on a page (and its S3 code in the
// audit record of session s). A body that stopped coming for the body's
// idle bound is 400 RequestTimeout, as S3 answers it. A body cut short is
// a browser that went away (Cancel, a closed tab): logged at Debug, and
// answered 400 IncompleteBody, which nobody reads but the audit log
// records. (Answering nothing made net/http send an empty 200: a stalled
// upload looked stored to the page and to the audit log.)
func (h *Handler) jsonErrors(w http.ResponseWriter, r *http.Request, s *session, err error) error {
	if err == nil {
		return nil
	}
	body, _ := r.Body.(*clientBody)
	fromClient := body != nil && body.err != nil && errors.Is(err, body.err)
	if ne, ok := errors.AsType[net.Error](err); fromClient && (ok && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded)) {
		s.act.failed(s3err.New(s3err.RequestTimeout, ""))
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "The upload stalled: no data arrived for too long. Try again."})
		return nil
	}
	if fromClient || r.Context().Err() != nil {
		h.log.DebugContext(r.Context(), "console upload cut short", "path", r.URL.Path, "err", err)
		s.act.failed(s3err.New(s3err.IncompleteBody, ""))
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "The upload was cut short."})
		return nil
	}
	status, msg := h.describe(r, err)
	if status == http.StatusServiceUnavailable && unavailable(err) {
		w.Header().Set("Retry-After", retryAfterUnavailable)
	}
	s.act.failed(err)
	writeJSON(w, status, map[string]string{"error": msg})
	return nil
}

// clientBody is an upload's request body, which remembers the first
// error reading it met: the client's doing (a stall, a cut), unlike an
// error of the storage behind (an upstream's timeout or reset in gateway
// mode), which jsonErrors must not blame on the browser.
type clientBody struct {
	rc  io.ReadCloser
	err error
}

func (b *clientBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil && err != io.EOF && b.err == nil {
		b.err = err
	}
	return n, err
}

func (b *clientBody) Close() error { return b.rc.Close() }

// bodySize returns the request's declared body length, which an upload
// must have, as S3's PutObject and UploadPart must.
func bodySize(r *http.Request) (int64, error) {
	if r.ContentLength < 0 {
		return 0, pageError(http.StatusLengthRequired, "The upload has no Content-Length.")
	}
	return r.ContentLength, nil
}

// putObject stores the request body as one object: PutObject, authorized
// as s3:PutObject. The body's Content-Type becomes the object's.
func (h *Handler) putObject(w http.ResponseWriter, r *http.Request, s *session) error {
	return h.jsonErrors(w, r, s, func() error {
		t, err := parseUploadTarget(r)
		if err != nil {
			return err
		}
		size, err := bodySize(r)
		if err != nil {
			return err
		}
		if err := h.authorizeObject(r, s, objectRequest{action: iam.PutObject, bucket: t.bucket, key: t.key}); err != nil {
			return err
		}
		in := objects.PutInput{Size: size, Meta: objects.Metadata{ContentType: r.Header.Get("Content-Type")}}
		if in.ACL, err = h.newObjectACL(r, s, t.bucket); err != nil {
			return err
		}
		info, err := h.browser.Objects.PutObject(r.Context(), t.bucket, t.key, in, r.Body)
		if err != nil {
			return err
		}
		h.log.InfoContext(r.Context(), "console change", "op", "PutObject", "bucket", t.bucket, "key", t.key, "size", size, "user", displayName(s.principal))
		writeJSON(w, http.StatusOK, map[string]string{"etag": info.ETag, "versionId": info.VersionID})
		return nil
	}())
}

// createUpload starts a multipart upload (query: key, contentType):
// CreateMultipartUpload, authorized as s3:PutObject.
func (h *Handler) createUpload(w http.ResponseWriter, r *http.Request, s *session) error {
	return h.jsonErrors(w, r, s, func() error {
		t, err := parseUploadTarget(r)
		if err != nil {
			return err
		}
		if err := h.authorizeObject(r, s, objectRequest{action: iam.PutObject, bucket: t.bucket, key: t.key}); err != nil {
			return err
		}
		in := objects.CreateUploadInput{Meta: objects.Metadata{ContentType: r.URL.Query().Get("contentType")},
			Initiator: iam.UploadInitiator(s.principal)}
		if in.ACL, err = h.newObjectACL(r, s, t.bucket); err != nil {
			return err
		}
		u, err := h.browser.Objects.CreateMultipartUpload(r.Context(), t.bucket, t.key, in)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, map[string]string{"uploadId": u.UploadID})
		return nil
	}())
}

// uploadPart stores the body as a part (query: key, uploadId,
// partNumber): UploadPart, authorized as s3:PutObject.
func (h *Handler) uploadPart(w http.ResponseWriter, r *http.Request, s *session) error {
	return h.jsonErrors(w, r, s, func() error {
		t, err := parseUploadTarget(r)
		if err != nil {
			return err
		}
		n, err := strconv.Atoi(r.URL.Query().Get("partNumber"))
		if err != nil {
			return pageError(http.StatusBadRequest, "The part number is not a number.")
		}
		size, err := bodySize(r)
		if err != nil {
			return err
		}
		if err := h.authorizeObject(r, s, objectRequest{action: iam.PutObject, bucket: t.bucket, key: t.key}); err != nil {
			return err
		}
		p, err := h.browser.Objects.UploadPart(r.Context(), t.bucket, t.key, t.uploadID, n, objects.PartInput{Size: size}, r.Body)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, map[string]string{"etag": p.ETag})
		return nil
	}())
}

// completeRequest is the JSON body of a complete request.
type completeRequest struct {
	Parts []struct {
		PartNumber int    `json:"partNumber"`
		ETag       string `json:"etag"`
	} `json:"parts"`
}

// completeUpload assembles the object from the parts listed in the JSON
// body (query: key, uploadId): CompleteMultipartUpload, authorized as
// s3:PutObject.
func (h *Handler) completeUpload(w http.ResponseWriter, r *http.Request, s *session) error {
	return h.jsonErrors(w, r, s, func() error {
		t, err := parseUploadTarget(r)
		if err != nil {
			return err
		}
		if err := h.authorizeObject(r, s, objectRequest{action: iam.PutObject, bucket: t.bucket, key: t.key}); err != nil {
			return err
		}
		var cr completeRequest
		if err := json.NewDecoder(http.MaxBytesReader(unwrap(w), r.Body, maxCompleteBody)).Decode(&cr); err != nil {
			return pageError(http.StatusBadRequest, "The list of parts could not be read.")
		}
		in := objects.CompleteInput{}
		for _, p := range cr.Parts {
			in.Parts = append(in.Parts, objects.CompletePart{Number: p.PartNumber, ETag: p.ETag})
		}
		info, err := h.browser.Objects.CompleteMultipartUpload(r.Context(), t.bucket, t.key, t.uploadID, in)
		if err != nil {
			return err
		}
		h.log.InfoContext(r.Context(), "console change", "op", "CompleteMultipartUpload", "bucket", t.bucket, "key", t.key,
			"size", info.Size, "user", displayName(s.principal))
		writeJSON(w, http.StatusOK, map[string]string{"etag": info.ETag, "versionId": info.VersionID})
		return nil
	}())
}

// abortUpload cancels a multipart upload and discards its parts (query:
// key, uploadId): AbortMultipartUpload, authorized as
// s3:AbortMultipartUpload.
func (h *Handler) abortUpload(w http.ResponseWriter, r *http.Request, s *session) error {
	return h.jsonErrors(w, r, s, func() error {
		t, err := parseUploadTarget(r)
		if err != nil {
			return err
		}
		if err := h.authorizeObject(r, s, objectRequest{action: iam.AbortMultipartUpload, bucket: t.bucket, key: t.key}); err != nil {
			return err
		}
		if err := h.browser.Objects.AbortMultipartUpload(r.Context(), t.bucket, t.key, t.uploadID); err != nil {
			return err
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	}())
}
