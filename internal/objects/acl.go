package objects

import (
	"context"
	"errors"
	"fmt"

	"github.com/coffer-s3/coffer/internal/meta"
)

// Access control lists are stored opaquely, in the form package acl
// encodes: a bucket's as its ConfigACL document, an object version's in its
// record. nil means the default: private to the owner — the bucket's
// creator, or for an object the bucket's owner (an object written by
// someone else, or with another ACL, stores its ACL, owner included).
// Object Ownership is the ConfigOwnership document, a setting name. The
// service keeps them; s3api interprets and enforces them.

// BucketAccess is what the authorization of a request needs of a bucket:
// its owner, its ACL (nil: private) and its Object Ownership ("": the
// default).
type BucketAccess struct {
	Owner     string
	ACL       []byte
	Ownership string
}

// BucketAccess returns bucket's owner, ACL and Object Ownership. Errors:
// NoSuchBucket.
func (s *Service) BucketAccess(ctx context.Context, bucket string) (BucketAccess, error) {
	b, err := s.db.Bucket(ctx, bucket)
	switch {
	case errors.Is(err, meta.ErrNotFound):
		return BucketAccess{}, noSuchBucket(bucket)
	case err != nil:
		return BucketAccess{}, fmt.Errorf("read bucket %s: %w", bucket, err)
	}
	ba := BucketAccess{Owner: b.Owner}
	for _, c := range []struct {
		name ConfigName
		set  func([]byte)
	}{
		{ConfigACL, func(doc []byte) { ba.ACL = doc }},
		{ConfigOwnership, func(doc []byte) { ba.Ownership = string(doc) }},
	} {
		doc, err := s.db.BucketConfig(ctx, bucket, string(c.name))
		switch {
		case err == nil:
			c.set(doc)
		case !errors.Is(err, meta.ErrNotFound):
			return BucketAccess{}, fmt.Errorf("%s of %s: %w", c.name, bucket, err)
		}
	}
	return ba, nil
}

// ObjectACL returns the ACL of a version of bucket/key (nil: private to
// the bucket's owner) and the version ID to report. Errors: as
// HeadObject.
func (s *Service) ObjectACL(ctx context.Context, bucket, key, versionID string) ([]byte, string, error) {
	rec, _, err := s.lookup(ctx, bucket, key, versionID)
	if err != nil {
		return nil, "", err
	}
	return rec.ACL, taggingVersionID(&rec, versionID), nil
}

// PutObjectACL replaces the ACL of a version of bucket/key in place (nil:
// private to the bucket's owner). It returns the version ID to report.
// Errors: as ObjectACL.
func (s *Service) PutObjectACL(ctx context.Context, bucket, key, versionID string, doc []byte) (string, error) {
	ctx = writeContext(ctx)
	return s.modifyVersion(ctx, bucket, key, versionID, "set ACL of", func(o *meta.Object) { o.ACL = doc })
}

// PutBucketACL replaces bucket's ACL (nil: private to its owner). Errors:
// NoSuchBucket.
func (s *Service) PutBucketACL(ctx context.Context, bucket string, doc []byte) error {
	return s.PutBucketConfig(ctx, bucket, ConfigACL, doc)
}

// PutBucketOwnership sets bucket's Object Ownership ("" removes the
// setting). Errors: NoSuchBucket.
func (s *Service) PutBucketOwnership(ctx context.Context, bucket, ownership string) error {
	var doc []byte
	if ownership != "" {
		doc = []byte(ownership)
	}
	return s.PutBucketConfig(ctx, bucket, ConfigOwnership, doc)
}
