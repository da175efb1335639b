package s3api

import (
	"bytes"
	"context"
	"fmt"
	"net/http"

	"github.com/coffer-s3/coffer/internal/cors"
	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/s3err"
	"github.com/coffer-s3/coffer/internal/s3xml"
)

// CORS: a bucket's configuration is checked by the cors package and kept
// by the object service with the bucket, in cors's stored form. Preflights
// (OPTIONS) are answered from it without authentication, and every other
// request that carries an Origin header gets the headers of the rule that
// allows it, on success and on error alike. See
// https://docs.aws.amazon.com/AmazonS3/latest/userguide/cors.html and
// docs/design/0007-cors.md.

// putBucketCORS serves PutBucketCors. As in S3 the body must carry
// Content-MD5 or a flexible checksum, which is verified.
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutBucketCors.html
func (h *Handler) putBucketCORS(w http.ResponseWriter, r *http.Request, rq *request) error {
	body, err := h.readConfigBody(r, rq)
	if err != nil {
		return err
	}
	cfg, err := parseCORSConfiguration(body, rq.op.limit)
	if err != nil {
		return err
	}
	if err := h.objects.PutBucketConfig(context.WithoutCancel(r.Context()), rq.bucket, objects.ConfigCORS, cors.Encode(cfg)); err != nil {
		return err
	}
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(http.StatusOK)
	return nil
}

// readConfigBody reads the body of a PUT of a bucket configuration whose
// body S3 requires an integrity check of (Content-MD5 or a flexible
// checksum), and verifies it. A missing bucket is NoSuchBucket whatever
// the body; the store checks again under the bucket's lock when it
// writes the configuration.
func (h *Handler) readConfigBody(r *http.Request, rq *request) ([]byte, error) {
	body, err := readXMLBody(rq.body, rq.op.limit)
	if err != nil {
		return nil, err
	}
	if _, err := h.objects.HeadBucket(r.Context(), rq.bucket); err != nil {
		return nil, err
	}
	if err := verifyBodyDigest(r.Header, body, rq.trailer); err != nil {
		return nil, err
	}
	return body, nil
}

// parseCORSConfiguration decodes and checks a PutBucketCors body of at
// most limit bytes. It does no I/O.
func parseCORSConfiguration(body []byte, limit int64) (*cors.Config, error) {
	doc, err := s3xml.DecodeCORSConfiguration(bytes.NewReader(body), limit)
	if err != nil {
		return nil, err
	}
	cfg := &cors.Config{Rules: make([]cors.Rule, len(doc.Rules))}
	for i, r := range doc.Rules {
		cfg.Rules[i] = cors.Rule{
			ID:             r.ID,
			AllowedMethods: r.AllowedMethods,
			AllowedOrigins: r.AllowedOrigins,
			AllowedHeaders: r.AllowedHeaders,
			ExposeHeaders:  r.ExposeHeaders,
			MaxAgeSeconds:  r.MaxAgeSeconds,
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// corsDocument is the GetBucketCors response for cfg.
func corsDocument(cfg *cors.Config) s3xml.CORSConfiguration {
	doc := s3xml.CORSConfiguration{Rules: make([]s3xml.CORSRule, len(cfg.Rules))}
	for i, r := range cfg.Rules {
		doc.Rules[i] = s3xml.CORSRule{
			AllowedHeaders: r.AllowedHeaders,
			AllowedMethods: r.AllowedMethods,
			AllowedOrigins: r.AllowedOrigins,
			ExposeHeaders:  r.ExposeHeaders,
			ID:             r.ID,
			MaxAgeSeconds:  r.MaxAgeSeconds,
		}
	}
	return doc
}

// bucketCORS returns bucket's CORS configuration, nil if it has none.
// Errors: NoSuchBucket.
func (h *Handler) bucketCORS(ctx context.Context, bucket string) (*cors.Config, error) {
	doc, ok, err := h.objects.BucketConfig(ctx, bucket, objects.ConfigCORS)
	if err != nil || !ok {
		return nil, err
	}
	cfg, err := cors.Decode(doc)
	if err != nil {
		return nil, fmt.Errorf("stored CORS configuration of %s: %w", bucket, err)
	}
	return cfg, nil
}

// getBucketCORS serves GetBucketCors.
func (h *Handler) getBucketCORS(w http.ResponseWriter, r *http.Request, rq *request) error {
	cfg, err := h.bucketCORS(r.Context(), rq.bucket)
	if err != nil {
		return err
	}
	if cfg == nil {
		return s3err.New(s3err.NoSuchCORSConfiguration, rq.bucket).With("BucketName", rq.bucket)
	}
	return writeXML(w, http.StatusOK, corsDocument(cfg))
}

// deleteBucketCORS serves DeleteBucketCors; deleting no configuration
// succeeds, as in S3.
func (h *Handler) deleteBucketCORS(w http.ResponseWriter, r *http.Request, rq *request) error {
	if err := h.objects.PutBucketConfig(context.WithoutCancel(r.Context()), rq.bucket, objects.ConfigCORS, nil); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// preflight answers a CORS preflight, OPTIONS on a bucket or an object
// (OptionsBucket, OptionsObject). It is not authenticated: the bucket's
// rules decide, and a request they do not allow is AccessForbidden. The
// checks come in S3's order: the Origin (BadRequest), the bucket and its
// configuration (AccessForbidden, even without a method), the method and
// request headers (BadRequest), the rules.
// https://docs.aws.amazon.com/AmazonS3/latest/API/RESTOPTIONSobject.html
func (h *Handler) preflight(w http.ResponseWriter, r *http.Request, rq *request) error {
	if _, err := cors.PreflightOrigin(r.Header); err != nil {
		return err
	}
	cfg, err := h.bucketCORS(r.Context(), rq.bucket)
	switch {
	case s3err.Is(err, s3err.NoSuchBucket):
		return cors.BucketNotFound(r.Header, r.Method)
	case err != nil:
		return err
	case cfg == nil:
		return cors.NotEnabled(r.Header, r.Method)
	}
	p, err := cors.ParsePreflight(r.Header)
	if err != nil {
		return err
	}
	resource := cors.ResourceObject
	if rq.key == "" {
		resource = cors.ResourceBucket
	}
	rule, err := p.Answer(cfg, resource)
	if err != nil {
		return err
	}
	rule.SetHeaders(w.Header(), p.Origin, p.Headers)
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(http.StatusOK)
	return nil
}

// setCORSHeaders sets the CORS headers of an actual request with an
// Origin header to a bucket or an object, before it is authenticated: if
// a rule of the bucket allows the origin and method (and the names of an
// Access-Control-Request-Headers, which S3 checks when an actual request
// sends one), its headers, which writeError keeps. It costs one metadata read (a missing bucket and a
// bucket without CORS read alike) and a scan of the stored rules that
// decodes only the one that matches; nothing is cached, so a change of the
// rules applies to the next request on every node. A failure to read or
// decode the rules is logged and sends no headers: the browser then
// refuses the response, which is the safe side.
func (h *Handler) setCORSHeaders(w http.ResponseWriter, r *http.Request, rq *request) {
	origin := r.Header.Get("Origin")
	method := cors.ActualMethod(r.Header, r.Method)
	headers, ok := cors.ActualHeaders(r.Header)
	if origin == "" || method == "" || !ok {
		return
	}
	doc, ok, err := h.objects.LookupBucketConfig(r.Context(), rq.bucket, objects.ConfigCORS)
	if err != nil {
		h.log.WarnContext(r.Context(), "read cors configuration", "request_id", rq.id, "bucket", rq.bucket, "err", err)
		return
	}
	if !ok {
		return
	}
	rule, err := cors.MatchStored(doc, origin, method, headers)
	if err != nil {
		h.log.ErrorContext(r.Context(), "stored cors configuration does not decode", "request_id", rq.id, "bucket", rq.bucket, "err", err)
		return
	}
	if rule != nil {
		rule.SetHeaders(w.Header(), origin, nil)
	}
}
