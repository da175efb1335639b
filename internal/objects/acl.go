package objects

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/coffer-s3/coffer/internal/meta"
	"github.com/coffer-s3/coffer/internal/s3err"
)

// Access control lists are stored opaquely, in the form package acl
// encodes: a bucket's as its ConfigACL document, an object version's in its
// record. nil means the default: private to the owner — the bucket's
// creator, or for an object the bucket's owner (an object written by
// someone else, or with another ACL, stores its ACL, owner included).
// Object Ownership is the ConfigOwnership document, a setting name. The
// service keeps them; s3api interprets and enforces them.

// BucketAccess is what the authorization of a request needs of a bucket:
// its owner, its ACL (nil: private), its Object Ownership ("": the
// default) and its Block Public Access settings (all off without any).
type BucketAccess struct {
	Owner     string
	ACL       []byte
	Ownership string
	Block     PublicAccessBlock
}

// PublicAccessBlock is a bucket's Block Public Access settings, as S3's
// PublicAccessBlockConfiguration names them; s3api enforces them. See
// https://docs.aws.amazon.com/AmazonS3/latest/userguide/access-control-block-public-access.html
type PublicAccessBlock struct {
	BlockPublicAcls       bool // refuse requests that set a public ACL
	IgnorePublicAcls      bool // public ACL grants allow nothing
	BlockPublicPolicy     bool // refuse a public bucket policy
	RestrictPublicBuckets bool // a public bucket policy allows no one outside the account (anonymous requests)
}

// PublicAccessBlock returns bucket's Block Public Access settings, and
// false if it has none, kept decoded between changes (ConfigCache).
// Errors: NoSuchBucket, a stored document that does not decode.
func (s *Service) PublicAccessBlock(ctx context.Context, bucket string) (PublicAccessBlock, bool, error) {
	return s.publicAccess.Get(ctx, bucket)
}

// PutPublicAccessBlock sets bucket's Block Public Access settings, or with
// nil removes them. Errors: NoSuchBucket.
func (s *Service) PutPublicAccessBlock(ctx context.Context, bucket string, b *PublicAccessBlock) error {
	var doc []byte
	if b != nil {
		doc, _ = json.Marshal(b) // four bools: it cannot fail
	}
	return s.PutBucketConfig(ctx, bucket, ConfigPublicAccessBlock, doc)
}

func decodePublicAccessBlock(doc []byte) (PublicAccessBlock, error) {
	var b PublicAccessBlock
	err := json.Unmarshal(doc, &b)
	return b, err
}

// BucketAccess returns bucket's owner, ACL, Object Ownership and Block
// Public Access settings. Errors: NoSuchBucket.
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
	block, _, err := s.publicAccess.Get(ctx, bucket)
	switch {
	case s3err.Is(err, s3err.NoSuchBucket):
		return BucketAccess{}, err
	case err != nil:
		// Fail closed: settings that cannot be read block everything.
		block = PublicAccessBlock{true, true, true, true}
	}
	ba.Block = block
	return ba, nil
}

// ObjectACL returns the ACL of a version of bucket/key (nil: private to
// the bucket's owner), the version ID to report and a Pin of the version
// read. Errors: as HeadObject.
func (s *Service) ObjectACL(ctx context.Context, bucket, key, versionID string) ([]byte, string, Pin, error) {
	rec, _, err := s.lookup(ctx, bucket, key, versionID)
	if err != nil {
		return nil, "", Pin{}, err
	}
	return rec.ACL, s.taggingVersionID(ctx, bucket, &rec, versionID), pinOf(&rec), nil
}

// PutObjectACL replaces the ACL of a version of bucket/key in place (nil:
// private to the bucket's owner), of the version pin names if it is set
// (see Pin). It returns the version ID to report. Errors: as ObjectACL,
// and ConditionalRequestConflict if the version is not the pinned one.
func (s *Service) PutObjectACL(ctx context.Context, bucket, key, versionID string, pin Pin, doc []byte) (string, error) {
	ctx = writeContext(ctx)
	return s.modifyVersion(ctx, bucket, key, versionID, pin, "set ACL of", func(o *meta.Object) { o.ACL = doc })
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
