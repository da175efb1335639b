package s3api

import (
	"bytes"
	"errors"
	"net/http"
	"strings"

	"github.com/coffer-s3/coffer/internal/acl"
	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/s3err"
	"github.com/coffer-s3/coffer/internal/s3xml"
)

// Access control lists, as S3 has them (see package acl and
// docs/design/0009-acls.md): every bucket and object has an owner (the
// principal that created it, by canonical ID) and an ACL, private unless a
// canned ACL (x-amz-acl), grant headers (x-amz-grant-*) or an
// AccessControlPolicy body says otherwise. Grants name Coffer principals
// by canonical ID, or the AllUsers, AuthenticatedUsers and LogDelivery
// groups. An ACL grant allows a request no policy allows (public-read
// opens GET to anonymous callers), never against an explicit Deny or an
// access key's scope. A bucket whose Object Ownership is
// BucketOwnerEnforced has no ACLs: the bucket owner owns every object,
// and only policies decide.

// grantHeaders maps the x-amz-grant-* headers to the permission each
// grants. A read-only lookup table.
var grantHeaders = [...]struct {
	header string
	perm   acl.Permission
}{
	{"X-Amz-Grant-Read", acl.Read},
	{"X-Amz-Grant-Write", acl.Write},
	{"X-Amz-Grant-Read-Acp", acl.ReadACP},
	{"X-Amz-Grant-Write-Acp", acl.WriteACP},
	{"X-Amz-Grant-Full-Control", acl.FullControl},
}

// requestedACL is what a request's headers ask of a new resource's ACL:
// nothing, a canned ACL, or explicit grants.
type requestedACL struct {
	canned acl.Canned
	grants []acl.Grant // grants of x-amz-grant-* headers
	set    bool
}

// parseACLHeaders parses x-amz-acl or the x-amz-grant-* headers (not
// both: InvalidRequest). Grantees are id="…" (a canonical ID), uri="…" (a
// group) or emailAddress="…", comma-separated; resolve checks that an ID
// names a principal. An e-mail address cannot: Coffer's principals have
// none (UnresolvableGrantByEmailAddress).
func parseACLHeaders(h http.Header, resolve func(id string) bool) (requestedACL, error) {
	var ra requestedACL
	if c := h.Get("X-Amz-Acl"); c != "" {
		ra.canned, ra.set = acl.Canned(c), true
		if _, err := acl.Expand(ra.canned, "x", "x"); err != nil {
			if errors.Is(err, acl.ErrUnsupportedCanned) {
				return requestedACL{}, notImplementedHeader("x-amz-acl")
			}
			return requestedACL{}, invalidArgument("x-amz-acl", c, "")
		}
	}
	for _, gh := range grantHeaders {
		vs, ok := h[gh.header]
		if !ok {
			continue
		}
		if ra.canned != "" {
			return requestedACL{}, s3err.Newf(s3err.InvalidRequest, "", "Specifying both Canned ACLs and Header Grants is not allowed")
		}
		ra.set = true
		for _, v := range vs {
			for item := range strings.SplitSeq(v, ",") {
				g, err := parseGrantee(strings.TrimSpace(item), gh.header, resolve)
				if err != nil {
					return requestedACL{}, err
				}
				ra.grants = append(ra.grants, acl.Grant{Grantee: g, Permission: gh.perm})
			}
		}
	}
	return ra, nil
}

// parseGrantee parses one grantee of a grant header: type="value".
func parseGrantee(item, header string, resolve func(string) bool) (acl.Grantee, error) {
	typ, val, ok := strings.Cut(item, "=")
	val = strings.Trim(strings.TrimSpace(val), `"`)
	bad := func() error {
		return invalidArgument(strings.ToLower(header), item, "Invalid grantee in "+strings.ToLower(header))
	}
	if !ok || val == "" {
		return acl.Grantee{}, bad()
	}
	switch strings.ToLower(strings.TrimSpace(typ)) {
	case "id":
		if !resolve(val) {
			return acl.Grantee{}, invalidArgument(strings.ToLower(header), val, "Invalid id")
		}
		return acl.Grantee{ID: val}, nil
	case "uri":
		if !acl.KnownGroup(val) {
			return acl.Grantee{}, invalidArgument(strings.ToLower(header), val, "Invalid group uri")
		}
		return acl.Grantee{URI: val}, nil
	case "emailaddress":
		return acl.Grantee{}, s3err.New(s3err.UnresolvableGrantByEmailAddress, "").With("EmailAddress", val)
	}
	return acl.Grantee{}, bad()
}

// build returns the ACL ra asks for on a resource owned by owner in a
// bucket owned by bucketOwner.
func (ra requestedACL) build(owner, bucketOwner string) (acl.ACL, error) {
	if ra.canned != "" {
		return acl.Expand(ra.canned, owner, bucketOwner)
	}
	a := acl.ACL{Owner: owner, Grants: ra.grants}
	if !ra.set {
		a = acl.Private(owner)
	}
	return a, a.Validate()
}

// resolveID reports whether id is the canonical ID of a principal.
func (h *Handler) resolveID(id string) bool {
	_, ok := h.iam.CanonicalUser(id)
	return ok
}

// canonicalOwner returns the owner S3 reports for the principal with
// canonical ID id: its ID and display name.
func (h *Handler) canonicalOwner(id string) s3xml.Owner {
	p, ok := h.iam.CanonicalUser(id)
	if !ok {
		return s3xml.Owner{ID: id}
	}
	return s3xml.Owner{ID: id, DisplayName: iam.DisplayName(p)}
}

// bucketOwnerID returns the canonical ID of a bucket's owner: root's for
// a bucket created before owners were recorded.
func bucketOwnerID(owner string) string {
	if owner == "" {
		return iam.RootCanonicalID()
	}
	return owner
}

// decodeACL returns the ACL of stored form doc, or the private ACL of
// owner when doc is nil.
func decodeACL(doc []byte, owner string) (acl.ACL, error) {
	if doc == nil {
		return acl.Private(owner), nil
	}
	return acl.Decode(doc)
}

// writeACL writes a as an AccessControlPolicy.
func (h *Handler) writeACL(w http.ResponseWriter, a acl.ACL) error {
	out := s3xml.AccessControlPolicy{Owner: h.canonicalOwner(a.Owner)}
	for _, g := range a.Grants {
		x := s3xml.Grant{Permission: string(g.Permission)}
		if g.Grantee.URI != "" {
			x.Grantee = s3xml.Grantee{Type: s3xml.GranteeGroup, URI: g.Grantee.URI}
		} else {
			o := h.canonicalOwner(g.Grantee.ID)
			x.Grantee = s3xml.Grantee{Type: s3xml.GranteeCanonicalUser, ID: o.ID, DisplayName: o.DisplayName}
		}
		out.Grants = append(out.Grants, x)
	}
	return writeXML(w, http.StatusOK, out)
}

// getBucketACL serves GetBucketAcl.
func (h *Handler) getBucketACL(w http.ResponseWriter, r *http.Request, rq *request) error {
	ba, err := h.objects.BucketAccess(r.Context(), rq.bucket)
	if err != nil {
		return err
	}
	owner := bucketOwnerID(ba.Owner)
	doc := ba.ACL
	if acl.Ownership(ba.Ownership) == acl.BucketOwnerEnforced {
		doc = nil // ACLs are off: the owner has full control, alone
	}
	a, err := decodeACL(doc, owner)
	if err != nil {
		return err
	}
	return h.writeACL(w, a)
}

// getObjectACL serves GetObjectAcl.
func (h *Handler) getObjectACL(w http.ResponseWriter, r *http.Request, rq *request) error {
	vid, err := parseVersionID(rq.query)
	if err != nil {
		return err
	}
	ba, err := h.objects.BucketAccess(r.Context(), rq.bucket)
	if err != nil {
		return err
	}
	doc, reported, _, err := h.objects.ObjectACL(r.Context(), rq.bucket, rq.key, vid)
	if err != nil {
		return err
	}
	if acl.Ownership(ba.Ownership) == acl.BucketOwnerEnforced {
		doc = nil
	}
	a, err := decodeACL(doc, bucketOwnerID(ba.Owner))
	if err != nil {
		return err
	}
	setTaggingVersion(w, reported)
	return h.writeACL(w, a)
}

// parsePutACL returns the ACL a PutBucketAcl or PutObjectAcl asks for, on
// a resource owned by owner in a bucket owned by bucketOwner: from
// x-amz-acl or x-amz-grant-* headers, or from an AccessControlPolicy body
// (both at once is UnexpectedContent; neither, MissingSecurityHeader). A
// body may not change the owner (AccessDenied).
func (h *Handler) parsePutACL(r *http.Request, rq *request, owner, bucketOwner string) (acl.ACL, error) {
	ra, err := parseACLHeaders(r.Header, h.resolveID)
	if err != nil {
		return acl.ACL{}, err
	}
	b, err := readXMLBody(rq.body, rq.op.limit)
	if err != nil {
		return acl.ACL{}, err
	}
	if ra.set {
		if len(b) > 0 {
			return acl.ACL{}, s3err.New(s3err.UnexpectedContent, "")
		}
		return ra.build(owner, bucketOwner)
	}
	if len(b) == 0 {
		return acl.ACL{}, s3err.New(s3err.MissingSecurityHeader, "").With("MissingHeaderName", "x-amz-acl")
	}
	p, err := s3xml.DecodeAccessControlPolicy(bytes.NewReader(b), rq.op.limit)
	if err != nil {
		return acl.ACL{}, err
	}
	if p.Owner.ID != "" && p.Owner.ID != owner {
		return acl.ACL{}, s3err.Newf(s3err.AccessDenied, "", "An ACL cannot change the owner of a bucket or object.")
	}
	a := acl.ACL{Owner: owner}
	for _, g := range p.Grants {
		ag := acl.Grant{Permission: acl.Permission(g.Permission)}
		switch g.Grantee.Type {
		case s3xml.GranteeCanonicalUser:
			if !h.resolveID(g.Grantee.ID) {
				return acl.ACL{}, s3err.Newf(s3err.InvalidArgument, "", "Invalid id").With("ArgumentName", "CanonicalUser/ID").With("ArgumentValue", g.Grantee.ID)
			}
			ag.Grantee.ID = g.Grantee.ID
		case s3xml.GranteeGroup:
			if !acl.KnownGroup(g.Grantee.URI) {
				return acl.ACL{}, s3err.Newf(s3err.InvalidArgument, "", "Invalid group uri").With("ArgumentName", "Group/URI").With("ArgumentValue", g.Grantee.URI)
			}
			ag.Grantee.URI = g.Grantee.URI
		default:
			return acl.ACL{}, s3err.New(s3err.UnresolvableGrantByEmailAddress, "").With("EmailAddress", g.Grantee.EmailAddress)
		}
		a.Grants = append(a.Grants, ag)
	}
	if err := a.Validate(); err != nil {
		return acl.ACL{}, s3err.Wrap(s3err.MalformedACLError, "", err)
	}
	return a, nil
}

// putBucketACL serves PutBucketAcl.
func (h *Handler) putBucketACL(w http.ResponseWriter, r *http.Request, rq *request) error {
	ba, err := h.objects.BucketAccess(r.Context(), rq.bucket)
	if err != nil {
		return err
	}
	owner := bucketOwnerID(ba.Owner)
	a, err := h.parsePutACL(r, rq, owner, owner)
	if err != nil {
		return err
	}
	if ba, err = h.freshBucketAccess(r, rq, ba); err != nil {
		return err
	}
	if err := checkACL(ba, a); err != nil {
		return err
	}
	var doc []byte
	if !a.IsPrivate() {
		doc = acl.Encode(a)
	}
	if err := h.objects.PutBucketACL(r.Context(), rq.bucket, doc); err != nil {
		return err
	}
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(http.StatusOK)
	return nil
}

// putObjectACL serves PutObjectAcl.
func (h *Handler) putObjectACL(w http.ResponseWriter, r *http.Request, rq *request) error {
	vid, err := parseVersionID(rq.query)
	if err != nil {
		return err
	}
	ba, err := h.objects.BucketAccess(r.Context(), rq.bucket)
	if err != nil {
		return err
	}
	bucketOwner := bucketOwnerID(ba.Owner)
	cur, _, read, err := h.objects.ObjectACL(r.Context(), rq.bucket, rq.key, vid)
	if err != nil {
		return err
	}
	// The change applies to the version read here (its owner stays the
	// owner), which must be the one authorized.
	pin, err := rq.pinned(vid, read)
	if err != nil {
		return err
	}
	old, err := decodeACL(cur, bucketOwner)
	if err != nil {
		return err
	}
	a, err := h.parsePutACL(r, rq, old.Owner, bucketOwner)
	if err != nil {
		return err
	}
	// The bucket's settings as they are once the body is in (it may have
	// taken minutes): Block Public Access turned on meanwhile refuses a
	// public ACL.
	if ba, err = h.freshBucketAccess(r, rq, ba); err != nil {
		return err
	}
	if err := checkACL(ba, a); err != nil {
		return err
	}
	reported, err := h.objects.PutObjectACL(r.Context(), rq.bucket, rq.key, vid, pin, objectACLDoc(a, bucketOwner))
	if err != nil {
		return err
	}
	setTaggingVersion(w, reported)
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(http.StatusOK)
	return nil
}

// freshBucketAccess reads the bucket's access settings again after a
// request's body has been read, for a decision on what the body asks
// (checkACL): before has an owner, which the bucket must still have (a
// bucket deleted and made again meanwhile is another bucket:
// ConditionalRequestConflict).
func (h *Handler) freshBucketAccess(r *http.Request, rq *request, before objects.BucketAccess) (objects.BucketAccess, error) {
	ba, err := h.objects.BucketAccess(r.Context(), rq.bucket)
	if err != nil {
		return ba, err
	}
	if ba.Owner != before.Owner {
		return ba, s3err.New(s3err.ConditionalRequestConflict, rq.bucket)
	}
	return ba, nil
}

// objectACLDoc returns the stored form of an object's ACL: nil for the
// default, private to the bucket's owner.
func objectACLDoc(a acl.ACL, bucketOwner string) []byte {
	if a.Owner == bucketOwner && a.IsPrivate() {
		return nil
	}
	return acl.Encode(a)
}

// newObjectACL returns the stored ACL of an object a request writes
// (PutObject, CopyObject, CreateMultipartUpload), from its x-amz-acl or
// x-amz-grant-* headers and the bucket's Object Ownership: the writer owns
// it (ObjectWriter, the default), or the bucket owner does (ACLs off, or
// BucketOwnerPreferred with bucket-owner-full-control). A root write
// without ACL headers is the bucket owner's and costs no metadata read.
// A write whose ACL headers set an ACL needs s3:PutObjectAcl besides its
// own permission, as S3 requires (not where ACLs are off: the headers
// BucketOwnerEnforced accepts set nothing).
func (h *Handler) newObjectACL(r *http.Request, rq *request) ([]byte, error) {
	ra, err := parseACLHeaders(r.Header, h.resolveID)
	if err != nil {
		return nil, err
	}
	if !ra.set && rq.principal.Root {
		return nil, nil
	}
	ba, err := h.objects.BucketAccess(r.Context(), rq.bucket)
	if err != nil {
		return nil, err
	}
	bucketOwner := bucketOwnerID(ba.Owner)
	writer := h.iam.CanonicalID(rq.principal)
	owner := writer
	switch acl.Ownership(ba.Ownership) {
	case acl.BucketOwnerEnforced:
		if ra.set && !(ra.canned == acl.CannedBucketOwnerFullControl || ra.canned == acl.CannedPrivate) {
			return nil, s3err.New(s3err.AccessControlListNotSupported, "")
		}
		return nil, nil
	case acl.BucketOwnerPreferred:
		if ra.canned == acl.CannedBucketOwnerFullControl {
			owner = bucketOwner
		}
	}
	if writer == "" {
		owner = bucketOwner // an anonymous writer owns nothing
	}
	if ra.set {
		if err := h.authorizeWriteACL(r, rq); err != nil {
			return nil, err
		}
	}
	a, err := ra.build(owner, bucketOwner)
	if err != nil {
		return nil, err
	}
	if err := checkACL(ba, a); err != nil {
		return nil, err
	}
	return objectACLDoc(a, bucketOwner), nil
}

// aclPermission says which ACL permission, on the bucket or on the
// object, an action needs for an ACL grant to allow it. A read-only
// lookup table; actions not in it are never allowed by an ACL. See
// https://docs.aws.amazon.com/AmazonS3/latest/userguide/acl-overview.html#permissions
var aclPermission = map[iam.Action]struct {
	onObject bool
	perm     acl.Permission
}{
	iam.ListBucket:                 {false, acl.Read},
	iam.ListBucketVersions:         {false, acl.Read},
	iam.ListBucketMultipartUploads: {false, acl.Read},
	iam.PutObject:                  {false, acl.Write},
	iam.DeleteObject:               {false, acl.Write},
	iam.AbortMultipartUpload:       {false, acl.Write},
	iam.ListMultipartUploadParts:   {false, acl.Write},
	iam.GetBucketAcl:               {false, acl.ReadACP},
	iam.PutBucketAcl:               {false, acl.WriteACP},
	iam.GetObject:                  {true, acl.Read},
	iam.GetObjectVersion:           {true, acl.Read},
	iam.GetObjectAcl:               {true, acl.ReadACP},
	iam.PutObjectAcl:               {true, acl.WriteACP},
	iam.GetObjectVersionAcl:        {true, acl.ReadACP},
	iam.PutObjectVersionAcl:        {true, acl.WriteACP},
}

// aclGrants returns the check iam consults when no policy allows a
// request: whether the ACL of the bucket (or of the object, for object
// reads and object ACLs) grants the request's principal the permission
// action needs. It reads the ACL only if called.
func (h *Handler) aclGrants(r *http.Request, rq *request, action iam.Action, t target) func() bool {
	bucket, key := t.bucket, t.key
	need, ok := aclPermission[action]
	if !ok || bucket == "" || need.onObject && key == "" {
		return nil
	}
	return func() bool {
		ba, err := h.objects.BucketAccess(r.Context(), bucket)
		if err != nil || acl.Ownership(ba.Ownership) == acl.BucketOwnerEnforced {
			return false
		}
		owner := bucketOwnerID(ba.Owner)
		doc := ba.ACL
		if need.onObject {
			var pin objects.Pin
			doc, _, pin, err = h.objects.ObjectACL(r.Context(), bucket, key, t.versionID)
			rq.notePin(t, pin.WithoutTags(), err)
			if err != nil {
				return false
			}
		}
		a, err := decodeACL(doc, owner)
		if err != nil {
			h.log.ErrorContext(r.Context(), "undecodable ACL", "request_id", rq.id, "bucket", bucket, "key", key, "err", err)
			return false
		}
		if ba.Block.IgnorePublicAcls {
			a = a.WithoutPublic()
		}
		return a.Allows(acl.Requester{ID: h.iam.CanonicalID(rq.principal), Anonymous: rq.principal.Anonymous}, need.perm)
	}
}

// getBucketOwnership serves GetBucketOwnershipControls; a bucket without
// the setting is OwnershipControlsNotFoundError, as in S3.
func (h *Handler) getBucketOwnership(w http.ResponseWriter, r *http.Request, rq *request) error {
	ba, err := h.objects.BucketAccess(r.Context(), rq.bucket)
	if err != nil {
		return err
	}
	if ba.Ownership == "" {
		return s3err.New(s3err.OwnershipControlsNotFoundError, rq.bucket).With("BucketName", rq.bucket)
	}
	return writeXML(w, http.StatusOK, s3xml.OwnershipControls{Rules: []s3xml.OwnershipControlsRule{{ObjectOwnership: ba.Ownership}}})
}

// putBucketOwnership serves PutBucketOwnershipControls: one rule naming
// ObjectWriter, BucketOwnerPreferred or BucketOwnerEnforced. Turning ACLs
// off does not erase them; they stop counting.
func (h *Handler) putBucketOwnership(w http.ResponseWriter, r *http.Request, rq *request) error {
	var oc s3xml.OwnershipControls
	if err := s3xml.Decode(rq.body, rq.op.limit, &oc); err != nil {
		return err
	}
	if len(oc.Rules) != 1 || !acl.Ownership(oc.Rules[0].ObjectOwnership).Valid() {
		return s3err.New(s3err.MalformedXML, rq.bucket)
	}
	if err := h.objects.PutBucketOwnership(r.Context(), rq.bucket, oc.Rules[0].ObjectOwnership); err != nil {
		return err
	}
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(http.StatusOK)
	return nil
}

// deleteBucketOwnership serves DeleteBucketOwnershipControls: the bucket
// goes back to the default, ObjectWriter.
func (h *Handler) deleteBucketOwnership(w http.ResponseWriter, r *http.Request, rq *request) error {
	if err := h.objects.PutBucketOwnership(r.Context(), rq.bucket, ""); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
