package console

import (
	"net/http"

	"github.com/coffer-s3/coffer/internal/acl"
	"github.com/coffer-s3/coffer/internal/iam"
)

// The object browser asks iam the question S3 asks for the same
// request: the action and resource of the S3 operation the page stands
// for, the request's condition keys (listing keys for a listing, the
// object's tags for reads), and, where S3 lets an ACL grant allow what
// no policy does, the bucket's or object's ACL. These helpers build those
// requests the way s3api's authorize does.

// aclNeed says which ACL permission, on the bucket or on the object, an
// action of the object browser needs for an ACL grant to allow it: S3's
// table (s3api's aclPermission) for the actions the browser uses. A
// read-only lookup table.
var aclNeed = map[iam.Action]struct {
	onObject bool
	perm     acl.Permission
}{
	iam.ListBucket:           {false, acl.Read},
	iam.PutObject:            {false, acl.Write},
	iam.DeleteObject:         {false, acl.Write},
	iam.AbortMultipartUpload: {false, acl.Write},
	iam.GetObject:            {true, acl.Read},
	iam.GetObjectVersion:     {true, acl.Read},
}

// tagActions are the browser's actions on an existing object whose
// policies may test its tags (s3:ExistingObjectTag/<key>).
var tagActions = map[iam.Action]bool{iam.GetObject: true, iam.GetObjectVersion: true}

// objectRequest is one authorization question of the object browser.
type objectRequest struct {
	action      iam.Action
	bucket, key string
	versionID   string      // the version an object action is on; "" for the latest
	list        *listParams // the listing's parameters, for ListBucket
}

// listParams are a listing's s3:prefix, s3:delimiter and s3:max-keys.
type listParams struct {
	prefix, delimiter, maxKeys string
}

// authorizeObject asks iam whether the session may do q, as S3 decides it
// for a request of the same principal.
func (h *Handler) authorizeObject(r *http.Request, s *session, q objectRequest) error {
	rq := iam.Request{Principal: s.principal, Action: q.action, Bucket: q.bucket, Key: q.key, Cond: conditions(r)}
	if s.principal.Root {
		return s.allowed(h.iam.Authorize(r.Context(), rq))
	}
	if l := q.list; l != nil {
		rq.Cond.Prefix, rq.Cond.Delimiter, rq.Cond.MaxKeys = &l.prefix, &l.delimiter, &l.maxKeys
	}
	if q.key != "" && tagActions[q.action] {
		rq.Cond.ExistingObjectTags = h.objectTags(r, q)
	}
	rq.ACL = h.aclGrants(r, s, q)
	return s.allowed(h.iam.Authorize(r.Context(), rq))
}

// objectTags returns the loader of the tags of the object q is on, which
// a policy condition calls if it needs them (one metadata read, and none
// for the many policies that never look). An object that cannot be read
// has no tags.
func (h *Handler) objectTags(r *http.Request, q objectRequest) func() map[string]string {
	return func() map[string]string {
		tags, _, _, err := h.browser.Objects.ObjectTagging(r.Context(), q.bucket, q.key, q.versionID)
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

// aclGrants returns the check of whether the bucket's or object's ACL
// grants q to the session's principal, or nil where ACLs never count, as
// s3api's aclGrants does: under Block Public Access's IgnorePublicAcls,
// grants to AllUsers and AuthenticatedUsers do not count.
func (h *Handler) aclGrants(r *http.Request, s *session, q objectRequest) func() bool {
	need, ok := aclNeed[q.action]
	if !ok || need.onObject && q.key == "" {
		return nil
	}
	return func() bool {
		ba, err := h.browser.Objects.BucketAccess(r.Context(), q.bucket)
		if err != nil || acl.Ownership(ba.Ownership) == acl.BucketOwnerEnforced {
			return false
		}
		owner := bucketOwnerID(ba.Owner)
		doc := ba.ACL
		if need.onObject {
			if doc, _, _, err = h.browser.Objects.ObjectACL(r.Context(), q.bucket, q.key, q.versionID); err != nil {
				return false
			}
		}
		a := acl.Private(owner)
		if doc != nil {
			if a, err = acl.Decode(doc); err != nil {
				h.log.ErrorContext(r.Context(), "undecodable ACL", "bucket", q.bucket, "key", q.key, "err", err)
				return false
			}
		}
		if ba.Block.IgnorePublicAcls {
			a = a.WithoutPublic()
		}
		return a.Allows(acl.Requester{ID: h.iam.CanonicalID(s.principal)}, need.perm)
	}
}

// newObjectACL returns the stored ACL of an object the session writes,
// as S3 stores it for a PutObject or CreateMultipartUpload without ACL
// headers: the writer owns the object (private) unless the bucket's
// Object Ownership is BucketOwnerEnforced; nil when that is the bucket
// owner's private ACL.
func (h *Handler) newObjectACL(r *http.Request, s *session, bucket string) ([]byte, error) {
	if s.principal.Root {
		return nil, nil
	}
	ba, err := h.browser.Objects.BucketAccess(r.Context(), bucket)
	if err != nil {
		return nil, err
	}
	writer, bucketOwner := h.iam.CanonicalID(s.principal), bucketOwnerID(ba.Owner)
	if acl.Ownership(ba.Ownership) == acl.BucketOwnerEnforced || writer == bucketOwner {
		return nil, nil
	}
	return acl.Encode(acl.Private(writer)), nil
}

// bucketOwnerID is the canonical ID of a bucket's owner: root's for a
// bucket from before owners were recorded.
func bucketOwnerID(owner string) string {
	if owner == "" {
		return iam.RootCanonicalID()
	}
	return owner
}
