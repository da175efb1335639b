package s3api

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/s3xml"
)

// parseTaggingHeader parses x-amz-tagging, the tags of a PutObject,
// CopyObject (with x-amz-tagging-directive: REPLACE) or
// CreateMultipartUpload: URL query parameters, "k1=v1&k2", a key without
// "=" having an empty value. The tags are returned in order; an absent or
// empty header is no tags. A value that does not decode, or a key given
// twice, is InvalidArgument, as S3 answers; the service checks the tags
// themselves (InvalidTag).
func parseTaggingHeader(h http.Header) ([]objects.Tag, error) {
	v := h.Get("X-Amz-Tagging")
	if v == "" {
		return nil, nil
	}
	bad := func() error {
		return invalidArgument("x-amz-tagging", v,
			"The header 'x-amz-tagging' shall be encoded as UTF-8 then URLEncoded URL query parameters without tag name duplicates.")
	}
	var tags []objects.Tag
	seen := map[string]bool{}
	for part := range strings.SplitSeq(v, "&") {
		if part == "" {
			continue
		}
		k, val, _ := strings.Cut(part, "=")
		k, err1 := url.QueryUnescape(k)
		val, err2 := url.QueryUnescape(val)
		if err1 != nil || err2 != nil || seen[k] {
			return nil, bad()
		}
		seen[k] = true
		tags = append(tags, objects.Tag{Key: k, Value: val})
	}
	return tags, nil
}

// parseTaggingBody decodes a Tagging body into tags.
func parseTaggingBody(rq *request) ([]objects.Tag, error) {
	doc, err := s3xml.DecodeTagging(rq.body, rq.op.limit)
	if err != nil {
		return nil, err
	}
	tags := make([]objects.Tag, len(doc.TagSet.Tags))
	for i, t := range doc.TagSet.Tags {
		tags[i] = objects.Tag{Key: *t.Key, Value: t.Value}
	}
	return tags, nil
}

// tagMap returns tags as a map, for policy conditions.
func tagMap(tags []objects.Tag) map[string]string {
	m := make(map[string]string, len(tags))
	for _, t := range tags {
		m[t.Key] = t.Value
	}
	return m
}

// taggingXML converts tags to the response document.
func taggingXML(tags []objects.Tag) s3xml.Tagging {
	out := s3xml.Tagging{}
	for _, t := range tags {
		out.TagSet.Tags = append(out.TagSet.Tags, s3xml.Tag{Key: &t.Key, Value: t.Value})
	}
	return out
}

// setTaggingVersion sets x-amz-version-id on a tagging response.
func setTaggingVersion(w http.ResponseWriter, versionID string) {
	if versionID != "" {
		w.Header()["x-amz-version-id"] = []string{versionID}
	}
}

// getObjectTagging serves GetObjectTagging.
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObjectTagging.html
func (h *Handler) getObjectTagging(w http.ResponseWriter, r *http.Request, rq *request) error {
	vid, err := parseVersionID(rq.query)
	if err != nil {
		return err
	}
	tags, reported, _, err := h.objects.ObjectTagging(r.Context(), rq.bucket, rq.key, vid)
	if err != nil {
		return err
	}
	setTaggingVersion(w, reported)
	return writeXML(w, http.StatusOK, taggingXML(tags))
}

// putObjectTagging serves PutObjectTagging: the tags of a version are
// replaced in place (no new version).
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutObjectTagging.html
func (h *Handler) putObjectTagging(w http.ResponseWriter, r *http.Request, rq *request) error {
	vid, err := parseVersionID(rq.query)
	if err != nil {
		return err
	}
	tags, err := parseTaggingBody(rq)
	if err != nil {
		return err
	}
	// The op authorizes here, now that the tags it sets are known, for
	// policies that test them.
	rq.tags = tagMap(tags)
	if err := h.authorize(r, rq, rq.op.actionFor(rq.query), rq.bucket, rq.key); err != nil {
		return err
	}
	pin, err := rq.pinned(vid, objects.Pin{})
	if err != nil {
		return err
	}
	reported, err := h.objects.PutObjectTagging(r.Context(), rq.bucket, rq.key, vid, pin, tags)
	if err != nil {
		return err
	}
	setTaggingVersion(w, reported)
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(http.StatusOK)
	return nil
}

// deleteObjectTagging serves DeleteObjectTagging.
func (h *Handler) deleteObjectTagging(w http.ResponseWriter, r *http.Request, rq *request) error {
	vid, err := parseVersionID(rq.query)
	if err != nil {
		return err
	}
	pin, err := rq.pinned(vid, objects.Pin{})
	if err != nil {
		return err
	}
	reported, err := h.objects.DeleteObjectTagging(r.Context(), rq.bucket, rq.key, vid, pin)
	if err != nil {
		return err
	}
	setTaggingVersion(w, reported)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// getBucketTagging serves GetBucketTagging; a bucket without tags is
// NoSuchTagSet.
func (h *Handler) getBucketTagging(w http.ResponseWriter, r *http.Request, rq *request) error {
	tags, err := h.objects.BucketTagging(r.Context(), rq.bucket)
	if err != nil {
		return err
	}
	return writeXML(w, http.StatusOK, taggingXML(tags))
}

// putBucketTagging serves PutBucketTagging.
func (h *Handler) putBucketTagging(w http.ResponseWriter, r *http.Request, rq *request) error {
	tags, err := parseTaggingBody(rq)
	if err != nil {
		return err
	}
	if err := h.objects.PutBucketTagging(r.Context(), rq.bucket, tags); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// deleteBucketTagging serves DeleteBucketTagging.
func (h *Handler) deleteBucketTagging(w http.ResponseWriter, r *http.Request, rq *request) error {
	if err := h.objects.DeleteBucketTagging(r.Context(), rq.bucket); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// authorizeRequestTags checks that a write carrying tags (x-amz-tagging)
// may also tag: S3 requires s3:PutObjectTagging for that besides the
// write's own action.
func (h *Handler) authorizeRequestTags(r *http.Request, rq *request, tags []objects.Tag) error {
	if len(tags) == 0 {
		return nil
	}
	return h.authorize(r, rq, iam.PutObjectTagging, rq.bucket, rq.key)
}
