package s3api

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/s3err"
	"github.com/coffer-s3/coffer/internal/s3xml"
)

// Bucket policies: the document is checked by iam, stored by the object
// service with its bucket, and iam's cache is refreshed after every change
// (see iam.RefreshBucketPolicy), so the next request sees it.
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutBucketPolicy.html

// putBucketPolicy serves PutBucketPolicy.
func (h *Handler) putBucketPolicy(w http.ResponseWriter, r *http.Request, rq *request) error {
	doc, err := readXMLBody(rq.body, rq.op.limit)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(doc)) == 0 {
		return s3err.New(s3err.MissingRequestBodyError, "")
	}
	// A missing bucket is NoSuchBucket whatever the document, as in S3;
	// PutBucketPolicy checks again under the bucket's lock.
	if _, err := h.objects.HeadBucket(r.Context(), rq.bucket); err != nil {
		return err
	}
	// Stored bound to the users it names (iam.BindBucketPolicy).
	stored, public, err := h.iam.BindBucketPolicy(r.Context(), rq.bucket, doc)
	if err != nil {
		return malformedPolicy(err)
	}
	if public {
		// Block Public Access may refuse a public policy.
		b, _, err := h.objects.PublicAccessBlock(r.Context(), rq.bucket)
		if err != nil {
			return err
		}
		if b.BlockPublicPolicy {
			return s3err.New(s3err.AccessDenied, "")
		}
	}
	ctx := context.WithoutCancel(r.Context())
	if err := h.objects.PutBucketPolicy(ctx, rq.bucket, stored); err != nil {
		return err
	}
	if err := h.iam.RefreshBucketPolicy(ctx, rq.bucket); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// malformedPolicy turns iam's explanation of a bad policy into S3's
// MalformedPolicy error, keeping the explanation as the message.
func malformedPolicy(err error) error {
	msg := strings.TrimPrefix(err.Error(), iam.ErrPolicy.Error()+": ")
	return s3err.Newf(s3err.MalformedPolicy, "", msg)
}

// getBucketPolicy serves GetBucketPolicy: the document as it was put.
func (h *Handler) getBucketPolicy(w http.ResponseWriter, r *http.Request, rq *request) error {
	stored, err := h.objects.BucketPolicy(r.Context(), rq.bucket)
	if err != nil {
		return err
	}
	doc, err := h.iam.BucketPolicyDocument(stored)
	if err != nil {
		return err
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "application/json")
	hdr.Set("Content-Length", strconv.Itoa(len(doc)))
	w.WriteHeader(http.StatusOK)
	_, err = w.Write(doc)
	return err
}

// deleteBucketPolicy serves DeleteBucketPolicy; deleting no policy
// succeeds, as in S3.
func (h *Handler) deleteBucketPolicy(w http.ResponseWriter, r *http.Request, rq *request) error {
	ctx := context.WithoutCancel(r.Context())
	if err := h.objects.DeleteBucketPolicy(ctx, rq.bucket); err != nil {
		return err
	}
	if err := h.iam.RefreshBucketPolicy(ctx, rq.bucket); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// getBucketPolicyStatus serves GetBucketPolicyStatus: whether the bucket's
// policy grants anything to everyone.
func (h *Handler) getBucketPolicyStatus(w http.ResponseWriter, r *http.Request, rq *request) error {
	doc, err := h.objects.BucketPolicy(r.Context(), rq.bucket)
	if s3err.Is(err, s3err.NoSuchBucketPolicy) {
		// No policy makes nothing public. (AWS answers NoSuchBucketPolicy
		// here; MinIO, Ceph and the s3-tests suite answer IsPublic false,
		// which is what a caller asking "is this public?" wants to know.)
		return writeXML(w, http.StatusOK, s3xml.PolicyStatus{IsPublic: false})
	}
	if err != nil {
		return err
	}
	public, err := iam.ParseBucketPolicy(rq.bucket, doc)
	if err != nil {
		// Stored policies were checked when put; this one no longer
		// parses (a stricter Coffer?). Say so rather than guess.
		return errors.Join(errors.New("stored bucket policy does not parse"), err)
	}
	return writeXML(w, http.StatusOK, s3xml.PolicyStatus{IsPublic: public})
}
