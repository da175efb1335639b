// Package acl is S3's access control lists: grants of READ, WRITE,
// READ_ACP, WRITE_ACP and FULL_CONTROL to canonical users and groups, the
// canned ACLs, what each permission allows, and the stored form of an
// ACL. It is a leaf package: who a canonical ID is, and how an ACL joins
// the rest of the authorization decision, are iam's and s3api's.
// See https://docs.aws.amazon.com/AmazonS3/latest/userguide/acl-overview.html
package acl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Permission is an ACL permission.
type Permission string

// The permissions S3 grants.
const (
	Read        Permission = "READ"
	Write       Permission = "WRITE"
	ReadACP     Permission = "READ_ACP"
	WriteACP    Permission = "WRITE_ACP"
	FullControl Permission = "FULL_CONTROL"
)

// Valid reports whether p is one of S3's permissions.
func (p Permission) Valid() bool {
	switch p {
	case Read, Write, ReadACP, WriteACP, FullControl:
		return true
	}
	return false
}

// The predefined groups a grant may name.
const (
	AllUsers           = "http://acs.amazonaws.com/groups/global/AllUsers"
	AuthenticatedUsers = "http://acs.amazonaws.com/groups/global/AuthenticatedUsers"
	LogDelivery        = "http://acs.amazonaws.com/groups/s3/LogDelivery"
)

// KnownGroup reports whether uri names one of the predefined groups.
func KnownGroup(uri string) bool {
	return uri == AllUsers || uri == AuthenticatedUsers || uri == LogDelivery
}

// Grantee is who a grant is for: a canonical user (ID) or a group (URI).
// Grants by e-mail address are resolved to canonical users before they are
// stored, or refused.
type Grantee struct {
	ID  string `json:"id,omitempty"`
	URI string `json:"uri,omitempty"`
}

// Grant gives one permission to one grantee.
type Grant struct {
	Grantee    Grantee    `json:"grantee"`
	Permission Permission `json:"permission"`
}

// ACL is the access control list of a bucket or an object: its owner's
// canonical ID and its grants, in order.
type ACL struct {
	Owner  string  `json:"owner"`
	Grants []Grant `json:"grants"`
}

// Private returns the ACL of a private resource: owner has FULL_CONTROL.
func Private(owner string) ACL {
	return ACL{Owner: owner, Grants: []Grant{{Grantee: Grantee{ID: owner}, Permission: FullControl}}}
}

// IsPrivate reports whether a is the private ACL of its owner: nothing but
// FULL_CONTROL to the owner.
func (a ACL) IsPrivate() bool {
	for _, g := range a.Grants {
		if g.Grantee.ID != a.Owner || g.Grantee.URI != "" || g.Permission != FullControl {
			return false
		}
	}
	return true
}

// Canned names a canned ACL (x-amz-acl).
type Canned string

// The canned ACLs S3 defines.
const (
	CannedPrivate                Canned = "private"
	CannedPublicRead             Canned = "public-read"
	CannedPublicReadWrite        Canned = "public-read-write"
	CannedAuthenticatedRead      Canned = "authenticated-read"
	CannedAWSExecRead            Canned = "aws-exec-read"
	CannedBucketOwnerRead        Canned = "bucket-owner-read"
	CannedBucketOwnerFullControl Canned = "bucket-owner-full-control"
	CannedLogDeliveryWrite       Canned = "log-delivery-write"
)

// ErrUnknownCanned is returned by Expand for a name S3 does not define.
var ErrUnknownCanned = errors.New("acl: unknown canned ACL")

// ErrUnsupportedCanned is returned by Expand for aws-exec-read, which
// grants to an AWS service account Coffer does not have.
var ErrUnsupportedCanned = errors.New("acl: canned ACL not supported")

// Expand returns the grants canned ACL c gives a resource owned by owner
// in a bucket owned by bucketOwner (the same for a bucket). See
// https://docs.aws.amazon.com/AmazonS3/latest/userguide/acl-overview.html#canned-acl
// (bucket-owner-read and bucket-owner-full-control grant the bucket owner
// only on objects; on a bucket they are private). Group grants come
// before the owner's, as S3 lists them: clients that index into the list
// (ceph/s3-tests does) depend on it.
func Expand(c Canned, owner, bucketOwner string) (ACL, error) {
	var groups []Grant
	a := Private(owner)
	group := func(uri string, p Permission) {
		groups = append(groups, Grant{Grantee: Grantee{URI: uri}, Permission: p})
	}
	add := func(g Grantee, p Permission) { a.Grants = append(a.Grants, Grant{Grantee: g, Permission: p}) }
	switch c {
	case CannedPrivate:
	case CannedPublicRead:
		group(AllUsers, Read)
	case CannedPublicReadWrite:
		group(AllUsers, Read)
		group(AllUsers, Write)
	case CannedAuthenticatedRead:
		group(AuthenticatedUsers, Read)
	case CannedBucketOwnerRead:
		if bucketOwner != owner {
			add(Grantee{ID: bucketOwner}, Read)
		}
	case CannedBucketOwnerFullControl:
		if bucketOwner != owner {
			add(Grantee{ID: bucketOwner}, FullControl)
		}
	case CannedLogDeliveryWrite:
		group(LogDelivery, Write)
		group(LogDelivery, ReadACP)
	case CannedAWSExecRead:
		return ACL{}, fmt.Errorf("%w: %s", ErrUnsupportedCanned, c)
	default:
		return ACL{}, fmt.Errorf("%w: %q", ErrUnknownCanned, c)
	}
	a.Grants = append(groups, a.Grants...)
	return a, nil
}

// Requester is who makes a request, as ACLs see it.
type Requester struct {
	ID        string // canonical ID; "" for an anonymous request
	Anonymous bool
}

// Allows reports whether a gives r permission p: a grant of p or of
// FULL_CONTROL to r's canonical ID, to AllUsers, or (r authenticated) to
// AuthenticatedUsers. The owner always has READ_ACP and WRITE_ACP, as in
// S3, whatever the grants say.
func (a ACL) Allows(r Requester, p Permission) bool {
	if !r.Anonymous && r.ID != "" && r.ID == a.Owner && (p == ReadACP || p == WriteACP) {
		return true
	}
	return slices.ContainsFunc(a.Grants, func(g Grant) bool {
		if g.Permission != p && g.Permission != FullControl {
			return false
		}
		switch {
		case g.Grantee.URI == AllUsers:
			return true
		case g.Grantee.URI == AuthenticatedUsers:
			return !r.Anonymous
		case g.Grantee.ID != "":
			return !r.Anonymous && g.Grantee.ID == r.ID
		}
		return false
	})
}

// Public reports whether a grants anything to AllUsers or
// AuthenticatedUsers, which S3's Block Public Access counts as public.
func (a ACL) Public() bool {
	return slices.ContainsFunc(a.Grants, publicGrant)
}

// WithoutPublic returns a without its grants to AllUsers and
// AuthenticatedUsers: the ACL S3 evaluates when a bucket ignores public
// ACLs (Block Public Access IgnorePublicAcls).
func (a ACL) WithoutPublic() ACL {
	if !a.Public() {
		return a
	}
	return ACL{Owner: a.Owner, Grants: slices.DeleteFunc(slices.Clone(a.Grants), publicGrant)}
}

func publicGrant(g Grant) bool {
	return g.Grantee.URI == AllUsers || g.Grantee.URI == AuthenticatedUsers
}

// maxGrants bounds an ACL, as S3 does (100 grants).
const maxGrants = 100

// ErrTooManyGrants is returned by Validate for an ACL of more than 100
// grants.
var ErrTooManyGrants = errors.New("acl: more than 100 grants")

// Validate checks an ACL built from a request: an owner, at most 100
// grants, each a known permission to a canonical ID or a known group.
func (a ACL) Validate() error {
	if a.Owner == "" {
		return errors.New("acl: no owner")
	}
	if len(a.Grants) > maxGrants {
		return ErrTooManyGrants
	}
	for _, g := range a.Grants {
		if !g.Permission.Valid() {
			return fmt.Errorf("acl: unknown permission %q", g.Permission)
		}
		switch {
		case g.Grantee.ID != "" && g.Grantee.URI == "":
		case g.Grantee.URI != "" && g.Grantee.ID == "":
			if !KnownGroup(g.Grantee.URI) {
				return fmt.Errorf("acl: unknown group %q", g.Grantee.URI)
			}
		default:
			return errors.New("acl: a grantee needs an ID or a group URI")
		}
	}
	return nil
}

// Encode returns the stored form of a.
func Encode(a ACL) []byte {
	b, err := json.Marshal(a)
	if err != nil {
		panic("acl: encode: " + err.Error()) // plain strings cannot fail
	}
	return b
}

// Decode parses the stored form of an ACL and validates it.
func Decode(b []byte) (ACL, error) {
	var a ACL
	if err := json.Unmarshal(b, &a); err != nil {
		return ACL{}, fmt.Errorf("acl: decode: %w", err)
	}
	if err := a.Validate(); err != nil {
		return ACL{}, err
	}
	return a, nil
}

// encodedOwner is how Encode begins: the owner, first, then the grants.
const encodedOwner = `{"owner":"`

// DecodeOwner returns the owner of the ACL of stored form b without
// decoding its grants when b begins as Encode writes it for a canonical
// ID, owner first: {"owner":"<64 lowercase hex digits>","grants": — a
// listing reports the owner of every object it lists. Grants Decode would
// refuse then go unnoticed. Anything else (another beginning, another
// owner) is decoded whole, as Decode does, so the two never disagree on
// what Encode wrote.
func DecodeOwner(b []byte) (string, error) {
	if rest, ok := bytes.CutPrefix(b, []byte(encodedOwner)); ok && len(rest) > canonicalIDLen {
		id := rest[:canonicalIDLen]
		if isLowerHex(id) && bytes.HasPrefix(rest[canonicalIDLen:], []byte(`","grants":`)) {
			return string(id), nil
		}
	}
	a, err := Decode(b)
	return a.Owner, err
}

// canonicalIDLen is the length of a canonical user ID: a SHA-256 in hex.
const canonicalIDLen = 64

// isLowerHex reports whether b is all lowercase hex digits.
func isLowerHex(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Ownership is a bucket's Object Ownership setting: who owns the objects
// written into it, and whether ACLs are in force. See
// https://docs.aws.amazon.com/AmazonS3/latest/userguide/about-object-ownership.html
type Ownership string

// The Object Ownership settings. A bucket without one is ObjectWriter, as
// S3 buckets were before 2023 and as S3-compatible stores keep them: ACLs
// apply, and the writer owns what it writes.
const (
	ObjectWriter         Ownership = "ObjectWriter"
	BucketOwnerPreferred Ownership = "BucketOwnerPreferred"
	BucketOwnerEnforced  Ownership = "BucketOwnerEnforced"
)

// Valid reports whether o is one of S3's settings.
func (o Ownership) Valid() bool {
	return o == ObjectWriter || o == BucketOwnerPreferred || o == BucketOwnerEnforced
}
