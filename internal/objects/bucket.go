package objects

import (
	"context"
	"errors"
	"fmt"

	"github.com/coffer-s3/coffer/internal/meta"
	"github.com/coffer-s3/coffer/internal/s3err"
)

// ListBuckets returns all buckets in name order.
func (s *Service) ListBuckets(ctx context.Context) ([]Bucket, error) {
	bs, err := s.db.Buckets(ctx)
	if err != nil {
		return nil, fmt.Errorf("list buckets: %w", err)
	}
	out := make([]Bucket, len(bs))
	for i, b := range bs {
		out[i] = bucketInfo(b)
	}
	return out, nil
}

// CreateBucketInput describes a CreateBucket.
type CreateBucketInput struct {
	Region string // LocationConstraint as given; the caller checks it against the server's
	Owner  string // canonical ID of the creator
	// ACL is the bucket's access control list in its stored form (package
	// acl), nil for the default (private); Ownership its Object Ownership
	// setting, "" for the default. Both are stored with the bucket,
	// atomically.
	ACL       []byte
	Ownership string
	// LegacyOwner is whom a bucket without a recorded owner (created
	// before owners were recorded) belongs to: root's canonical ID.
	LegacyOwner string
	// RecreateOwned makes re-creating a bucket the caller owns a success
	// that resets its ACL, as S3 answers in us-east-1; elsewhere it is
	// BucketAlreadyOwnedByYou.
	RecreateOwned bool
	// CheckRecreate, if set, is called before a re-creation resets the
	// ACL (RecreateOwned); an error refuses the request and is returned.
	// The caller checks there what it would check for a PutBucketAcl.
	CheckRecreate func(ctx context.Context) error
}

// CreateBucket creates a bucket. Errors: InvalidBucketName,
// BucketAlreadyOwnedByYou (the caller owns a bucket of that name, unless
// in.RecreateOwned), BucketAlreadyExists (someone else does). See
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_CreateBucket.html
func (s *Service) CreateBucket(ctx context.Context, name string, in CreateBucketInput) error {
	ctx = writeContext(ctx)
	if err := checkBucketName(name); err != nil {
		return err
	}
	configs := map[string][]byte{}
	if in.ACL != nil {
		configs[string(ConfigACL)] = in.ACL
	}
	if in.Ownership != "" {
		configs[string(ConfigOwnership)] = []byte(in.Ownership)
	}
	err := s.db.CreateBucketWith(ctx, meta.Bucket{Name: name, Region: in.Region, Created: s.clock(), Owner: in.Owner}, configs)
	if errors.Is(err, meta.ErrConflict) {
		return s.recreate(ctx, name, in)
	}
	if err != nil {
		return fmt.Errorf("create bucket %s: %w", name, err)
	}
	s.configGen.bump()
	return nil
}

// recreate answers a CreateBucket of an existing bucket.
func (s *Service) recreate(ctx context.Context, name string, in CreateBucketInput) error {
	b, err := s.db.Bucket(ctx, name)
	if err != nil {
		return fmt.Errorf("read bucket %s: %w", name, err)
	}
	owner := b.Owner
	if owner == "" {
		owner = in.LegacyOwner
	}
	switch {
	case owner != in.Owner:
		return s3err.New(s3err.BucketAlreadyExists, name).With("BucketName", name)
	case !in.RecreateOwned:
		return s3err.New(s3err.BucketAlreadyOwnedByYou, name).With("BucketName", name)
	}
	if in.CheckRecreate != nil {
		if err := in.CheckRecreate(ctx); err != nil {
			return err
		}
	}
	return s.PutBucketConfig(ctx, name, ConfigACL, in.ACL)
}

// HeadBucket returns a bucket. Errors: NoSuchBucket.
func (s *Service) HeadBucket(ctx context.Context, name string) (Bucket, error) {
	b, err := s.db.Bucket(ctx, name)
	if errors.Is(err, meta.ErrNotFound) {
		return Bucket{}, noSuchBucket(name)
	}
	if err != nil {
		return Bucket{}, fmt.Errorf("read bucket %s: %w", name, err)
	}
	return bucketInfo(b), nil
}

func bucketInfo(b meta.Bucket) Bucket {
	return Bucket{Name: b.Name, Region: b.Region, Created: b.Created, Versioning: b.Versioning.String(), Owner: b.Owner}
}

// PutBucketVersioning sets a bucket's versioning to status "Enabled" or
// "Suspended". Versioning once enabled can be suspended but not turned
// off, as in S3. MFA delete is not supported: mfaDelete "Enabled" is
// NotImplemented. Errors: NoSuchBucket, MalformedXML (another status).
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutBucketVersioning.html
func (s *Service) PutBucketVersioning(ctx context.Context, bucket, status, mfaDelete string) error {
	ctx = writeContext(ctx)
	var v meta.Versioning
	switch status {
	case "Enabled":
		v = meta.VersioningEnabled
	case "Suspended":
		v = meta.VersioningSuspended
	default:
		return s3err.New(s3err.MalformedXML, bucket)
	}
	switch mfaDelete {
	case "", "Disabled":
	case "Enabled":
		return s3err.Newf(s3err.NotImplemented, bucket, "MFA delete is not implemented.")
	default:
		return s3err.New(s3err.MalformedXML, bucket)
	}
	err := s.db.SetVersioning(ctx, bucket, v)
	if errors.Is(err, meta.ErrNotFound) {
		return noSuchBucket(bucket)
	}
	if err != nil {
		return fmt.Errorf("set versioning of %s: %w", bucket, err)
	}
	s.configGen.bump() // reads report "null" for objects written before
	return nil
}

// DeleteBucket removes a bucket that holds no object version and no
// delete marker. Multipart uploads in
// progress are aborted with it, as S3 does. Errors: NoSuchBucket,
// BucketNotEmpty. The check and the delete are atomic with respect to
// writes into the bucket.
func (s *Service) DeleteBucket(ctx context.Context, name string) error {
	ctx = writeContext(ctx)
	err := s.db.DeleteBucket(ctx, name, s.clock())
	switch {
	case errors.Is(err, meta.ErrNotFound):
		return noSuchBucket(name)
	case errors.Is(err, meta.ErrBucketNotEmpty):
		return s3err.New(s3err.BucketNotEmpty, name).With("BucketName", name)
	case err != nil:
		return fmt.Errorf("delete bucket %s: %w", name, err)
	}
	s.configGen.bump() // its configurations went with it
	return nil
}
