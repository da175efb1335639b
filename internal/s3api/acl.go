package s3api

import (
	"bytes"
	"io"
	"net/http"

	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/s3err"
	"github.com/coffer-s3/coffer/internal/s3xml"
)

// Coffer has no ACLs: every bucket and object is private to its owner, as
// in S3 with Object Ownership "bucket owner enforced". The ACL operations
// report that, and accept only a request that asks for it — the canned ACL
// private (or bucket-owner-full-control, the same thing with one owner),
// or a policy granting the owner alone FULL_CONTROL. Anything else would be
// a false success, so it is NotImplemented. (S3 with ACLs disabled answers
// AccessControlListNotSupported; NotImplemented says more plainly that the
// request was understood and cannot be honoured.)
// https://docs.aws.amazon.com/AmazonS3/latest/userguide/about-object-ownership.html

// getBucketACL serves GetBucketAcl.
func (h *Handler) getBucketACL(w http.ResponseWriter, r *http.Request, rq *request) error {
	if _, err := h.objects.HeadBucket(r.Context(), rq.bucket); err != nil {
		return err
	}
	return writeXML(w, http.StatusOK, s3xml.OwnerFullControl(h.owner(rq)))
}

// getObjectACL serves GetObjectAcl.
func (h *Handler) getObjectACL(w http.ResponseWriter, r *http.Request, rq *request) error {
	if err := h.objectExists(r, rq); err != nil {
		return err
	}
	return writeXML(w, http.StatusOK, s3xml.OwnerFullControl(h.owner(rq)))
}

// putBucketACL serves PutBucketAcl.
func (h *Handler) putBucketACL(w http.ResponseWriter, r *http.Request, rq *request) error {
	if err := parsePutACL(r.Header, rq.body, rq.op.limit, h.owner(rq)); err != nil {
		return err
	}
	if _, err := h.objects.HeadBucket(r.Context(), rq.bucket); err != nil {
		return err
	}
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(http.StatusOK)
	return nil
}

// putObjectACL serves PutObjectAcl.
func (h *Handler) putObjectACL(w http.ResponseWriter, r *http.Request, rq *request) error {
	if err := parsePutACL(r.Header, rq.body, rq.op.limit, h.owner(rq)); err != nil {
		return err
	}
	if err := h.objectExists(r, rq); err != nil {
		return err
	}
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(http.StatusOK)
	return nil
}

// objectExists checks that the object an ACL request names exists.
func (h *Handler) objectExists(r *http.Request, rq *request) error {
	vid, err := parseVersionID(rq.query)
	if err != nil {
		return err
	}
	obj, err := h.objects.HeadObject(r.Context(), rq.bucket, rq.key, objects.GetOptions{VersionID: vid})
	if err != nil {
		return err
	}
	if obj.Body != nil {
		obj.Body.Close()
	}
	return nil
}

// parsePutACL checks that a PutBucketAcl or PutObjectAcl asks for the
// private ACL: by x-amz-acl, or by a body whose only grant is
// FULL_CONTROL to owner. Both at once is UnexpectedContent, as S3 allows
// one or the other; x-amz-grant-* headers are NotImplemented.
func parsePutACL(h http.Header, body io.Reader, limit int64, owner s3xml.Owner) error {
	for _, k := range [...]string{"X-Amz-Grant-Full-Control", "X-Amz-Grant-Read", "X-Amz-Grant-Read-Acp", "X-Amz-Grant-Write", "X-Amz-Grant-Write-Acp"} {
		if _, ok := h[k]; ok {
			return notImplementedHeader(k)
		}
	}
	b, err := readXMLBody(body, limit)
	if err != nil {
		return err
	}
	if h.Get("X-Amz-Acl") != "" {
		if len(b) > 0 {
			return s3err.Newf(s3err.UnexpectedContent, "", "This request does not support content with the x-amz-acl header.")
		}
		return checkCannedACL(h)
	}
	if len(b) == 0 {
		return s3err.Newf(s3err.MissingSecurityHeader, "", "Your request was missing a required header: x-amz-acl, or an AccessControlPolicy body.").With("MissingHeaderName", "x-amz-acl")
	}
	p, err := s3xml.DecodeAccessControlPolicy(bytes.NewReader(b), limit)
	if err != nil {
		return err
	}
	if !ownerOnly(p, owner) {
		return s3err.Newf(s3err.NotImplemented, "", "Coffer has no ACLs: only FULL_CONTROL for the owner alone (the private ACL) can be set.")
	}
	return nil
}

// ownerOnly reports whether p grants owner FULL_CONTROL and nothing else.
func ownerOnly(p s3xml.AccessControlPolicy, owner s3xml.Owner) bool {
	if p.Owner.ID != "" && p.Owner.ID != owner.ID || len(p.Grants) != 1 {
		return false
	}
	g := p.Grants[0]
	return g.Permission == s3xml.PermissionFullControl &&
		g.Grantee.Type == s3xml.GranteeCanonicalUser && g.Grantee.ID == owner.ID
}
