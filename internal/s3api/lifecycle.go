package s3api

import (
	"bytes"
	"context"
	"net/http"
	"time"

	"github.com/coffer-s3/coffer/internal/lifecycle"
	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/s3xml"
)

// The lifecycle operations store a bucket's rules (validated by package
// lifecycle, applied by its worker) and tell clients when an object will
// expire. See https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutBucketLifecycleConfiguration.html

// minimumSizeHeader is x-amz-transition-default-minimum-object-size.
const minimumSizeHeader = "x-amz-transition-default-minimum-object-size"

// parseLifecycle decodes and checks a PutBucketLifecycleConfiguration
// body and its x-amz-transition-default-minimum-object-size header
// (minSize, "" when absent), returning the configuration to store (rules
// without an ID are not given one here). Errors are S3's: MalformedXML
// for what does not decode or validate against S3's schema, then
// InvalidArgument, InvalidRequest and NotImplemented (transitions) as
// lifecycle.Configuration.Validate answers.
func parseLifecycle(body []byte, minSize string, limit int64) (*lifecycle.Configuration, error) {
	doc, err := s3xml.DecodeLifecycleConfiguration(bytes.NewReader(body), limit)
	if err != nil {
		return nil, err
	}
	c := &lifecycle.Configuration{MinimumSize: minSize, Rules: make([]lifecycle.Rule, len(doc.Rules))}
	for i := range doc.Rules {
		r, err := lifecycleRule(&doc.Rules[i])
		if err != nil {
			return nil, err
		}
		c.Rules[i] = r
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if c.MinimumSize == "" {
		c.MinimumSize = lifecycle.MinimumSizeAll
	}
	return c, nil
}

// first returns a pointer to the only element of s, or nil; the decoder
// refused documents giving one twice.
func first[T any](s []T) *T {
	if len(s) == 0 {
		return nil
	}
	return &s[0]
}

// intp converts an optional int32 element.
func intp(p *int32) *int {
	if p == nil {
		return nil
	}
	n := int(*p)
	return &n
}

// datep parses an optional Date element.
func datep(p *string) (*time.Time, error) {
	if p == nil {
		return nil, nil
	}
	t, err := lifecycle.ParseDate(*p)
	if err != nil {
		return nil, err
	}
	return &t, nil
}

func tagsOf(ts []s3xml.Tag) []lifecycle.Tag {
	var out []lifecycle.Tag
	for _, t := range ts {
		out = append(out, lifecycle.Tag{Key: *t.Key, Value: t.Value})
	}
	return out
}

// lifecycleRule converts one <Rule>.
func lifecycleRule(x *s3xml.LifecycleRule) (lifecycle.Rule, error) {
	r := lifecycle.Rule{Prefix: first(x.Prefix)}
	if id := first(x.ID); id != nil {
		r.ID = *id
	}
	if st := first(x.Status); st != nil {
		r.Status = *st
	}
	if f := first(x.Filter); f != nil {
		r.Filter = &lifecycle.Filter{
			Prefix: first(f.Prefix), ObjectSizeGreaterThan: first(f.ObjectSizeGreaterThan), ObjectSizeLessThan: first(f.ObjectSizeLessThan),
		}
		if t := first(f.Tag); t != nil {
			r.Filter.Tag = &lifecycle.Tag{Key: *t.Key, Value: t.Value}
		}
		if a := first(f.And); a != nil {
			r.Filter.And = &lifecycle.And{
				Prefix: first(a.Prefix), Tags: tagsOf(a.Tags),
				ObjectSizeGreaterThan: first(a.ObjectSizeGreaterThan), ObjectSizeLessThan: first(a.ObjectSizeLessThan),
			}
		}
	}
	if e := first(x.Expiration); e != nil {
		date, err := datep(first(e.Date))
		if err != nil {
			return r, err
		}
		r.Expiration = &lifecycle.Expiration{Days: intp(first(e.Days)), Date: date, ExpiredObjectDeleteMarker: first(e.ExpiredObjectDeleteMarker)}
	}
	if n := first(x.NoncurrentVersionExpiration); n != nil {
		r.NoncurrentVersionExpiration = &lifecycle.NoncurrentVersionExpiration{
			NoncurrentDays: intp(first(n.NoncurrentDays)), NewerNoncurrentVersions: intp(first(n.NewerNoncurrentVersions)),
		}
	}
	if a := first(x.AbortIncompleteMultipartUpload); a != nil {
		r.AbortIncompleteMultipartUpload = &lifecycle.AbortIncompleteMultipartUpload{DaysAfterInitiation: intp(first(a.DaysAfterInitiation))}
	}
	for _, t := range x.Transitions {
		date, err := datep(first(t.Date))
		if err != nil {
			return r, err
		}
		tr := lifecycle.Transition{Days: intp(first(t.Days)), Date: date}
		if sc := first(t.StorageClass); sc != nil {
			tr.StorageClass = *sc
		}
		r.Transitions = append(r.Transitions, tr)
	}
	for _, t := range x.NoncurrentVersionTransitions {
		tr := lifecycle.NoncurrentVersionTransition{NoncurrentDays: intp(first(t.NoncurrentDays)), NewerNoncurrentVersions: intp(first(t.NewerNoncurrentVersions))}
		if sc := first(t.StorageClass); sc != nil {
			tr.StorageClass = *sc
		}
		r.NoncurrentVersionTransitions = append(r.NoncurrentVersionTransitions, tr)
	}
	return r, nil
}

// one returns a one-element slice of *p, or nil.
func one[T any](p *T) []T {
	if p == nil {
		return nil
	}
	return []T{*p}
}

// int32s converts an optional int for the response.
func int32s(p *int) []int32 {
	if p == nil {
		return nil
	}
	return []int32{int32(*p)}
}

func xmlTags(ts []lifecycle.Tag) []s3xml.Tag {
	var out []s3xml.Tag
	for _, t := range ts {
		out = append(out, s3xml.Tag{Key: &t.Key, Value: t.Value})
	}
	return out
}

// lifecycleXML renders a stored configuration as
// GetBucketLifecycleConfiguration returns it: in the form it was put, each
// rule with its ID.
func lifecycleXML(c *lifecycle.Configuration) s3xml.LifecycleConfiguration {
	out := s3xml.LifecycleConfiguration{Rules: make([]s3xml.LifecycleRule, len(c.Rules))}
	for i := range c.Rules {
		r := &c.Rules[i]
		x := s3xml.LifecycleRule{ID: []string{r.ID}, Status: []string{r.Status}, Prefix: one(r.Prefix)}
		if f := r.Filter; f != nil {
			xf := s3xml.LifecycleFilter{
				Prefix: one(f.Prefix), ObjectSizeGreaterThan: one(f.ObjectSizeGreaterThan), ObjectSizeLessThan: one(f.ObjectSizeLessThan),
				Tag: xmlTags(one(f.Tag)),
			}
			if a := f.And; a != nil {
				xf.And = []s3xml.LifecycleAnd{{
					Prefix: one(a.Prefix), Tags: xmlTags(a.Tags),
					ObjectSizeGreaterThan: one(a.ObjectSizeGreaterThan), ObjectSizeLessThan: one(a.ObjectSizeLessThan),
				}}
			}
			x.Filter = []s3xml.LifecycleFilter{xf}
		}
		if e := r.Expiration; e != nil {
			xe := s3xml.LifecycleExpiration{Days: int32s(e.Days), ExpiredObjectDeleteMarker: one(e.ExpiredObjectDeleteMarker)}
			if e.Date != nil {
				xe.Date = []string{s3xml.Time(*e.Date)}
			}
			x.Expiration = []s3xml.LifecycleExpiration{xe}
		}
		if n := r.NoncurrentVersionExpiration; n != nil {
			x.NoncurrentVersionExpiration = []s3xml.NoncurrentVersionExpiration{{
				NoncurrentDays: int32s(n.NoncurrentDays), NewerNoncurrentVersions: int32s(n.NewerNoncurrentVersions),
			}}
		}
		if a := r.AbortIncompleteMultipartUpload; a != nil {
			x.AbortIncompleteMultipartUpload = []s3xml.AbortIncompleteMultipartUpload{{DaysAfterInitiation: int32s(a.DaysAfterInitiation)}}
		}
		out.Rules[i] = x
	}
	return out
}

// putBucketLifecycle serves PutBucketLifecycleConfiguration. Like S3 it
// requires an integrity check of the body (Content-MD5 or a flexible
// checksum), and names the rules given without an ID.
func (h *Handler) putBucketLifecycle(w http.ResponseWriter, r *http.Request, rq *request) error {
	body, err := readXMLBody(rq.body, rq.op.limit)
	if err != nil {
		return err
	}
	if err := verifyBodyDigest(r.Header, body, rq.trailer); err != nil {
		return err
	}
	c, err := parseLifecycle(body, r.Header.Get(minimumSizeHeader), rq.op.limit)
	if err != nil {
		return err
	}
	c.AssignIDs(lifecycle.NewRuleID)
	if err := h.lifecycle.Put(r.Context(), rq.bucket, c); err != nil {
		return err
	}
	w.Header()[minimumSizeHeader] = []string{c.MinimumSize}
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(http.StatusOK)
	return nil
}

// getBucketLifecycle serves GetBucketLifecycleConfiguration; a bucket
// without a configuration is 404 NoSuchLifecycleConfiguration.
func (h *Handler) getBucketLifecycle(w http.ResponseWriter, r *http.Request, rq *request) error {
	c, err := h.lifecycle.Get(r.Context(), rq.bucket)
	if err != nil {
		return err
	}
	if c.MinimumSize != "" {
		w.Header()[minimumSizeHeader] = []string{c.MinimumSize}
	}
	return writeXML(w, http.StatusOK, lifecycleXML(c))
}

// deleteBucketLifecycle serves DeleteBucketLifecycle: 204, also when the
// bucket has no configuration.
func (h *Handler) deleteBucketLifecycle(w http.ResponseWriter, r *http.Request, rq *request) error {
	if err := h.lifecycle.Delete(r.Context(), rq.bucket); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// setExpiration sets x-amz-expiration on the response of a GET, HEAD or
// write of the current version info of bucket/key when a rule of the
// bucket will expire it; see
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html.
// It reads the bucket's parsed rules (no metadata read once they are
// cached) and evaluates them for this object alone. The date is S3's, by
// S3's calendar. A configuration that cannot be read costs the header,
// never the request: the failure is logged.
func (h *Handler) setExpiration(ctx context.Context, hdr http.Header, bucket string, info *objects.ObjectInfo) {
	c, err := h.lifecycle.Rules(ctx, bucket)
	if err != nil {
		h.log.WarnContext(ctx, "lifecycle rules unreadable", "bucket", bucket, "err", err)
		return
	}
	if c == nil {
		return
	}
	d, ok := c.Expiry(lifecycle.Object{Key: info.Key, Size: info.Size, Tags: info.Tags}, info.LastModified, lifecycle.Calendar{})
	if ok {
		hdr["x-amz-expiration"] = []string{lifecycle.ExpirationHeader(d)}
	}
}

// setAbortDate sets x-amz-abort-date and x-amz-abort-rule-id on the
// response of CreateMultipartUpload or ListParts of an upload a rule will
// abort.
func (h *Handler) setAbortDate(ctx context.Context, hdr http.Header, bucket, key string, initiated time.Time) {
	c, err := h.lifecycle.Rules(ctx, bucket)
	if err != nil {
		h.log.WarnContext(ctx, "lifecycle rules unreadable", "bucket", bucket, "err", err)
		return
	}
	if c == nil {
		return
	}
	if d, ok := c.AbortExpiry(key, initiated, lifecycle.Calendar{}); ok {
		date, id := lifecycle.AbortHeaders(d)
		hdr["x-amz-abort-date"] = []string{date}
		hdr["x-amz-abort-rule-id"] = []string{id}
	}
}
