package s3api

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/s3err"
	"github.com/coffer-s3/coffer/internal/sigv4"
)

// authenticate verifies the request's signature (never reading the body)
// and resolves its principal.
func (h *Handler) authenticate(r *http.Request, rq *request) error {
	res, err := h.verifier.Verify(r)
	if err != nil {
		rq.claimedKey, rq.authFailed = claimedAccessKey(err), true
		return err
	}
	rq.auth = res
	if res.Anonymous {
		rq.principal = iam.Principal{Anonymous: true}
		return nil
	}
	if res.V2 && !v2Selects(rq.op) {
		rq.authFailed = true // a signature of a kind not taken for this op: no principal
		return s3err.Newf(s3err.InvalidRequest, "", "The authorization mechanism you have provided is not supported. Please use AWS4-HMAC-SHA256.")
	}
	rq.principal = h.iam.Principal(res.AccessKeyID)
	return nil
}

// v2Selects reports whether SigV2 signs what makes a request op: the
// sub-resource that selects it, if any. Operations newer than SigV2
// (?publicAccessBlock, ?attributes and others) are selected by a query
// parameter SigV2 leaves unsigned, so a SigV2-signed request for another
// operation (DeleteBucket, GetObject) could be turned into one of them by
// adding it; S3 takes SigV4 only for them. ListObjectsV2's list-type
// chooses between two listings of the same permission.
func v2Selects(o *op) bool {
	name, _, _ := strings.Cut(o.query, "=")
	return name == "" || name == "list-type" || sigv4.V2SignsSubResource(name)
}

// authorize asks iam whether the request's principal may do action on
// bucket/key. The pipeline calls it with the op's action before the body
// is read or storage touched; copies call it again for their source, and
// DeleteObjects for each key.
func (h *Handler) authorize(r *http.Request, rq *request, action iam.Action, bucket, key string) error {
	if rq.principal.Root {
		return h.authorizeTarget(r, rq, action, target{bucket: bucket, key: key}, nil)
	}
	return h.authorizeTarget(r, rq, action, target{bucket: bucket, key: key, versionID: requestVersion(rq, bucket, key)}, r.Header)
}

// target is what an authorization is about: a bucket, or an object of it
// (key), and the version the request names (versionID, "" for the
// current one), whose tags and ACL policies and grants may test.
type target struct {
	bucket, key, versionID string
	// aclAs, if set, is the action whose ACL grant counts for the one
	// authorized (see authorizeWriteACL).
	aclAs iam.Action
}

// requestVersion returns the version of bucket/key the request names: its
// versionId for its own object, if its operation acts on a version it
// names (op.versionAction), else "" (the current version). A copy's
// source is authorized by authorizeSource, with the version of
// x-amz-copy-source: a source that is the destination's own key must not
// be checked against the destination's query, which a copy ignores.
func requestVersion(rq *request, bucket, key string) string {
	if key == "" || bucket != rq.bucket || key != rq.key || rq.op.versionAction == "" {
		return ""
	}
	vid, _ := parseVersionID(rq.query)
	return vid
}

// authorizeSource asks iam whether the request's principal may read the
// copy source src (the version it names), as CopyObject and
// UploadPartCopy must besides writing their destination.
func (h *Handler) authorizeSource(r *http.Request, rq *request, src copySource) error {
	t := target{bucket: src.bucket, key: src.key, versionID: src.versionID}
	if rq.principal.Root {
		return h.authorizeTarget(r, rq, src.srcAction(), t, nil)
	}
	return h.authorizeTarget(r, rq, src.srcAction(), t, r.Header)
}

// authorizeTarget is authorize with the target and the request headers
// that policy conditions see (hdr: s3:if-match, s3:x-amz-acl and the
// like) given: DeleteObjects authorizes each entry as the DeleteObject it
// stands for (deleteEntryHeader).
func (h *Handler) authorizeTarget(r *http.Request, rq *request, action iam.Action, t target, hdr http.Header) (err error) {
	defer func() {
		if err != nil {
			rq.denied = true
		}
	}()
	if rq.principal.Root {
		// Root is allowed everything; skip building the conditions.
		return h.iam.Authorize(r.Context(), iam.Request{Principal: rq.principal, Action: action, Bucket: t.bucket, Key: t.key})
	}
	c := conditions(r, rq, action)
	c.Header = hdr
	if t.key != "" && tagConditionActions[action] {
		c.ExistingObjectTags = h.existingTags(r, rq, t)
	}
	aclAction := action
	if t.aclAs != "" {
		aclAction = t.aclAs
	}
	return h.iam.Authorize(r.Context(), iam.Request{Principal: rq.principal, Action: action, Bucket: t.bucket, Key: t.key, Cond: c,
		ACL: h.aclGrants(r, rq, aclAction, t), RestrictPublic: h.restrictPublic(r, rq, t.bucket)})
}

// authorizeWriteACL checks that a write (PutObject, PostObject, CopyObject,
// CreateMultipartUpload) may set the ACL its headers ask for:
// s3:PutObjectAcl on the object, as S3 requires of a writer its policies
// let in. For a writer the bucket's ACL lets in (WRITE), that grant covers
// the new object's ACL too: on S3 an anonymous form upload with
// acl=public-read to a public-read-write bucket succeeds.
func (h *Handler) authorizeWriteACL(r *http.Request, rq *request) error {
	if rq.principal.Root {
		return nil
	}
	t := target{bucket: rq.bucket, key: rq.key, aclAs: iam.PutObject}
	return h.authorizeTarget(r, rq, iam.PutObjectAcl, t, r.Header)
}

// restrictPublic returns the check iam consults when a public bucket
// policy would let an anonymous request in: whether the bucket's Block
// Public Access settings restrict it (RestrictPublicBuckets); nil for an
// authenticated request, which iam never asks. It reads them only if
// called; a bucket whose settings cannot be read is restricted (fail
// closed).
func (h *Handler) restrictPublic(r *http.Request, rq *request, bucket string) func() bool {
	if bucket == "" || !rq.principal.Anonymous {
		return nil
	}
	return func() bool {
		b, _, err := h.objects.PublicAccessBlock(r.Context(), bucket)
		return err != nil || b.RestrictPublicBuckets
	}
}

// tagConditionActions are the actions on an existing object whose
// policies may test its tags (s3:ExistingObjectTag/<key>). A read-only
// lookup table.
var tagConditionActions = map[iam.Action]bool{
	iam.GetObject: true, iam.GetObjectVersion: true, iam.GetObjectAcl: true, iam.PutObjectAcl: true,
	iam.GetObjectVersionAcl: true, iam.PutObjectVersionAcl: true,
	iam.GetObjectTagging: true, iam.GetObjectVersionTagging: true,
	iam.PutObjectTagging: true, iam.PutObjectVersionTagging: true,
	iam.DeleteObjectTagging: true, iam.DeleteObjectVersionTagging: true,
	iam.GetObjectAttributes: true, iam.GetObjectVersionAttributes: true,
}

// existingTags returns the loader of the tags of t's object version that
// a policy condition calls if it needs them: one metadata read, and none
// for the many requests whose policies never look. An object that cannot
// be read has no tags.
func (h *Handler) existingTags(r *http.Request, rq *request, t target) func() map[string]string {
	return func() map[string]string {
		tags, _, pin, err := h.objects.ObjectTagging(r.Context(), t.bucket, t.key, t.versionID)
		rq.notePin(t, pin.WithoutACL(), err)
		if err != nil || len(tags) == 0 {
			return nil
		}
		m := make(map[string]string, len(tags))
		for _, t := range tags {
			m[t.Key] = t.Value
		}
		return m
	}
}

// notePin records that the request's authorization read pin, a version
// of the request's own object (see request.pin); err is the read's error:
// a read that found no version pins that (objects.NoVersion), another
// error pins nothing (the request's own read of the object meets it too).
func (rq *request) notePin(t target, pin objects.Pin, err error) {
	if t.bucket != rq.bucket || t.key != rq.key || rq.key == "" {
		return
	}
	if err != nil {
		switch s3err.CodeOf(err) {
		case s3err.NoSuchKey, s3err.NoSuchVersion, s3err.MethodNotAllowed:
			pin = objects.NoVersion
		default:
			return
		}
	}
	if rq.pin == (objects.Pin{}) {
		rq.pin, rq.pinVersion = pin, t.versionID
		return
	}
	merged, ok := rq.pin.Merge(pin)
	if !ok || rq.pinVersion != t.versionID {
		rq.pinSplit = true
		return
	}
	rq.pin = merged
}

// pinned returns the Pin a change of the ACL or tags of version vid of
// the request's own object must be given: what the authorization read
// (its ACL if it read that, its tags if it read those), and the version
// got names, the one the change read itself (zero if it read nothing),
// which must be the one the authorization read. Reads that disagree (the
// key was written between them) are ConditionalRequestConflict.
func (rq *request) pinned(vid string, got objects.Pin) (objects.Pin, error) {
	pin, ok := rq.pin.Merge(got.Version())
	if !ok || rq.pinSplit || rq.pin != (objects.Pin{}) && rq.pinVersion != vid {
		return objects.Pin{}, s3err.New(s3err.ConditionalRequestConflict, rq.bucket+"/"+rq.key)
	}
	return pin, nil
}

// conditions returns the policy condition keys of a request.
// https://docs.aws.amazon.com/AmazonS3/latest/userguide/amazon-s3-policy-keys.html
func conditions(r *http.Request, rq *request, action iam.Action) iam.Conditions {
	c := iam.Conditions{
		SecureTransport: r.TLS != nil,
		UserAgent:       r.UserAgent(),
		Referer:         r.Referer(),
	}
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		c.SourceIP = ap.Addr().Unmap()
	}
	c.Header = r.Header
	if v := r.Header.Get("X-Amz-Copy-Source"); v != "" {
		if src, err := parseCopySource(v); err == nil {
			c.CopySource = src.bucket + "/" + src.key
		}
	}
	c.ContentSHA256 = payloadCondition(rq.auth)
	if rq.auth != nil && !rq.auth.Anonymous {
		c.AuthType, c.SignatureVersion = "REST-HEADER", "AWS4-HMAC-SHA256"
		if rq.op.form {
			c.AuthType = "POST"
		} else if rq.auth.Presigned {
			c.AuthType = "REST-QUERY-STRING"
		}
		if rq.auth.V2 {
			c.SignatureVersion = "AWS"
		}
	}
	if action == iam.PutObject || action == iam.PutObjectTagging || action == iam.PutObjectVersionTagging {
		// The tags a write sets: s3:RequestObjectTag/<key> and
		// s3:RequestObjectTagKeys. PutObjectTagging (of a version too)
		// sets those of its body and authorizes itself once it has read
		// it (rq.tags).
		if rq.tags != nil {
			c.RequestObjectTags = rq.tags
		} else if tags, err := parseTaggingHeader(r.Header); err == nil && tags != nil {
			c.RequestObjectTags = tagMap(tags)
		}
	}
	if (action == iam.ListBucket || action == iam.ListBucketVersions) && rq.op.action == action && rq.op.name != "HeadBucket" {
		// A listing always has a prefix, "" when none is given, so that
		// policies can allow the top level with StringEquals s3:prefix "".
		p := rq.query.Get("prefix")
		c.Prefix = &p
		if _, ok := rq.query["delimiter"]; ok {
			// The value the listing uses (the first), not another one a
			// repeated parameter could slip past a condition.
			d := rq.query.Get("delimiter")
			c.Delimiter = &d
		}
		if vs, ok := rq.query["max-keys"]; ok {
			n := strings.Join(vs, "")
			c.MaxKeys = &n
		}
	}
	return c
}

// payloadCondition returns s3:x-amz-content-sha256 for a request
// authenticated as res: how its payload is verified, as the signature
// check decided — the SHA-256 it must have, or the keyword of its mode
// (UNSIGNED-PAYLOAD for a presigned URL without the header, STREAMING-…)
// — never a header line as sent, which a second line or its absence
// would change. A body that nothing verifies (anonymous, SigV2, a POST
// form's file) is UNSIGNED-PAYLOAD. "" (absent) without a Result.
func payloadCondition(res *sigv4.Result) string {
	switch {
	case res == nil:
		return ""
	case res.Anonymous || res.V2:
		return sigv4.PayloadUnsigned.String()
	case res.Payload == sigv4.PayloadSigned:
		return res.ContentSHA256
	}
	return res.Payload.String()
}

// prepareBody checks the declared length of a body the op reads and wraps
// the body in the reader that verifies it (sigv4.Body: the SHA-256 of a
// signed payload, or aws-chunked decoding with chunk signatures and
// trailers), cut to exactly the declared length. Limits are enforced from
// the headers, before a byte is read: object data needs a length
// (MissingContentLength) of at most 5 GiB (EntityTooLarge), XML bodies at
// most op.limit bytes (MaxMessageLengthExceeded).
func (h *Handler) prepareBody(r *http.Request, rq *request) error {
	if rq.op.body == bodyNone {
		return nil
	}
	res := rq.auth
	size := int64(-1)
	if hasContentLength(r) {
		size = r.ContentLength
	}
	if res.Payload.Streaming() {
		if size >= 0 && res.DecodedLength > size {
			return s3err.New(s3err.IncompleteBody, "")
		}
		size = res.DecodedLength
	}
	switch rq.op.body {
	case bodyStream:
		if size < 0 {
			return s3err.New(s3err.MissingContentLength, "")
		}
		if size > maxObjectSize {
			return s3err.New(s3err.EntityTooLarge, "").
				With("ProposedSize", strconv.FormatInt(size, 10)).
				With("MaxSizeAllowed", strconv.FormatInt(maxObjectSize, 10))
		}
	case bodyXML:
		if size > rq.op.limit {
			return s3err.New(s3err.MaxMessageLengthExceeded, "").
				With("MaxMessageLengthBytes", strconv.FormatInt(rq.op.limit, 10))
		}
	}
	b, err := res.Body(rq.rawBody) // r.Body, counted when observed
	if err != nil {
		return err
	}
	rq.size = size
	rq.body = &exactReader{r: b, n: size}
	if res.Payload == sigv4.PayloadStreamingSignedTrailer || res.Payload == sigv4.PayloadStreamingUnsignedTrailer {
		rq.trailer = b.Trailer
	}
	return nil
}

// hasContentLength reports whether the request declared its body's length.
// net/http reports 0 both for "Content-Length: 0" and for no header at all,
// which S3 treats differently (MissingContentLength).
func hasContentLength(r *http.Request) bool {
	if r.ContentLength > 0 {
		return true
	}
	_, ok := r.Header["Content-Length"]
	return r.ContentLength == 0 && ok
}

// exactReader delivers exactly n bytes from r (any number if n < 0) and
// makes sure r is at its end before delivering the last of them, so a
// consumer that reads exactly n bytes and stops has still seen every
// verification r does at EOF. A body that ends early is IncompleteBody; one
// that goes on is IncompleteBody too, since the declared length was a lie.
//
// With n known, a Read fills p as far as the body goes rather than
// returning what one read of the connection brought: fsblob writes each
// Read to the blob's file, so a 100 KiB body is one write, not one per
// arriving segment. It blocks only for bytes the client must send anyway.
type exactReader struct {
	r       io.Reader
	n       int64 // bytes left; < 0 if unknown
	err     error // sticky
	pending error // r's error that came after bytes of this Read, for the next one
	probe   [1]byte
}

// Read implements io.Reader.
func (e *exactReader) Read(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	if e.n == 0 {
		e.err = e.finish()
		return 0, e.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if e.n > 0 && int64(len(p)) > e.n {
		p = p[:e.n]
	}
	var k int
	var err error
	if e.pending != nil {
		err, e.pending = e.pending, nil
	} else {
		k, err = e.r.Read(p)
	}
	for e.n > 0 && err == nil && k < len(p) {
		m, rerr := e.r.Read(p[k:])
		if rerr != nil && (rerr != io.EOF || int64(k+m) != e.n) {
			// The bytes so far came cleanly: they go now, and this
			// read's error (with the bytes that came with it, as when
			// it is the first read of a call) to the next call.
			e.pending = rerr
			break
		}
		k += m
		err = rerr
	}
	if e.n > 0 {
		e.n -= int64(k)
	}
	switch {
	case err == io.EOF && e.n > 0:
		e.err = s3err.New(s3err.IncompleteBody, "")
		return 0, e.err
	case err == io.EOF:
		e.err = io.EOF
		if k == 0 {
			return 0, io.EOF
		}
		return k, nil
	case err != nil:
		e.err = bodyError(err)
		return 0, e.err
	}
	if e.n == 0 {
		if e.err = e.finish(); e.err != io.EOF {
			return 0, e.err
		}
	}
	return k, nil
}

// finish reads r to its end, returning io.EOF if it ends where declared.
func (e *exactReader) finish() error {
	for range 100 {
		k, err := e.r.Read(e.probe[:])
		switch {
		case k > 0:
			return s3err.New(s3err.IncompleteBody, "")
		case err == io.EOF:
			return io.EOF
		case err != nil:
			return bodyError(err)
		}
	}
	return io.ErrNoProgress
}

// bodyError maps an error reading a request body to what the client is
// told: an *s3err.Error (a signature or checksum mismatch) as is, a
// timeout as RequestTimeout, anything else — a client that hung up — as
// IncompleteBody, keeping the cause for the log.
func bodyError(err error) error {
	if _, ok := errors.AsType[*s3err.Error](err); ok {
		return err
	}
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		return s3err.Wrap(s3err.RequestTimeout, "", err)
	}
	return s3err.Wrap(s3err.IncompleteBody, "", err)
}

// claimedAccessKey returns the access key an authentication error names
// (sigv4 adds it as AWSAccessKeyId to InvalidAccessKeyId and
// SignatureDoesNotMatch), or "".
func claimedAccessKey(err error) string {
	var e *s3err.Error
	if !errors.As(err, &e) {
		return ""
	}
	for _, f := range e.Extra {
		if f.Name == "AWSAccessKeyId" {
			return f.Value
		}
	}
	return ""
}
