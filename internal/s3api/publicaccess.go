package s3api

import (
	"bytes"
	"context"
	"net/http"

	"github.com/coffer-s3/coffer/internal/acl"
	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/s3err"
	"github.com/coffer-s3/coffer/internal/s3xml"
)

// Block Public Access (a bucket's PublicAccessBlockConfiguration) is
// enforced where what it governs is decided:
//
//   - BlockPublicAcls: checkACL refuses a public ACL (grants to AllUsers or
//     AuthenticatedUsers) on PutBucketAcl, PutObjectAcl and the writes that
//     set an object's ACL from x-amz-acl or x-amz-grant-* headers;
//   - IgnorePublicAcls: aclGrants evaluates ACLs without their public
//     grants;
//   - BlockPublicPolicy: putBucketPolicy refuses a public policy;
//   - RestrictPublicBuckets: authorize tells iam, which then lets no
//     anonymous request through a public bucket policy.
//
// Each refusal is 403 AccessDenied, as in S3. Unlike S3 since 2023, a new
// bucket has no settings (everything off), as in MinIO and Ceph; there
// are no account-level settings.
// https://docs.aws.amazon.com/AmazonS3/latest/userguide/access-control-block-public-access.html

// getPublicAccessBlock serves GetPublicAccessBlock; a bucket without
// settings is NoSuchPublicAccessBlockConfiguration.
func (h *Handler) getPublicAccessBlock(w http.ResponseWriter, r *http.Request, rq *request) error {
	b, ok, err := h.objects.PublicAccessBlock(r.Context(), rq.bucket)
	if err != nil {
		return err
	}
	if !ok {
		return s3err.New(s3err.NoSuchPublicAccessBlockConfiguration, rq.bucket).With("BucketName", rq.bucket)
	}
	return writeXML(w, http.StatusOK, s3xml.PublicAccessBlockConfiguration{
		BlockPublicAcls: b.BlockPublicAcls, IgnorePublicAcls: b.IgnorePublicAcls,
		BlockPublicPolicy: b.BlockPublicPolicy, RestrictPublicBuckets: b.RestrictPublicBuckets,
	})
}

// putPublicAccessBlock serves PutPublicAccessBlock. S3 requires the body
// to carry Content-MD5 or a flexible checksum, verified before anything is
// stored.
func (h *Handler) putPublicAccessBlock(w http.ResponseWriter, r *http.Request, rq *request) error {
	body, err := h.readConfigBody(r, rq)
	if err != nil {
		return err
	}
	var c s3xml.PublicAccessBlockConfiguration
	if err := s3xml.Decode(bytes.NewReader(body), rq.op.limit, &c); err != nil {
		return err
	}
	b := objects.PublicAccessBlock{
		BlockPublicAcls: c.BlockPublicAcls, IgnorePublicAcls: c.IgnorePublicAcls,
		BlockPublicPolicy: c.BlockPublicPolicy, RestrictPublicBuckets: c.RestrictPublicBuckets,
	}
	if err := h.objects.PutPublicAccessBlock(context.WithoutCancel(r.Context()), rq.bucket, &b); err != nil {
		return err
	}
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(http.StatusOK)
	return nil
}

// deletePublicAccessBlock serves DeletePublicAccessBlock: the bucket goes
// back to no settings (everything off).
func (h *Handler) deletePublicAccessBlock(w http.ResponseWriter, r *http.Request, rq *request) error {
	if err := h.objects.PutPublicAccessBlock(r.Context(), rq.bucket, nil); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// checkACL refuses an ACL a request would set on a resource of a bucket
// with the settings in ba: any but the private one where ACLs are off
// (Object Ownership BucketOwnerEnforced: AccessControlListNotSupported),
// a public one where Block Public Access blocks public ACLs
// (AccessDenied), as S3 does.
func checkACL(ba objects.BucketAccess, a acl.ACL) error {
	if acl.Ownership(ba.Ownership) == acl.BucketOwnerEnforced && !a.IsPrivate() {
		return s3err.New(s3err.AccessControlListNotSupported, "")
	}
	if ba.Block.BlockPublicAcls && a.Public() {
		return s3err.New(s3err.AccessDenied, "")
	}
	return nil
}
