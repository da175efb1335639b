package objects

import (
	"context"

	"github.com/coffer-s3/coffer/internal/meta"
	"github.com/coffer-s3/coffer/internal/s3err"
)

// DeleteObject deletes a version of bucket/key: with ref.VersionID "", the
// latest (an unversioned bucket's object is removed, a versioned bucket
// gets a delete marker); with a version ID ("null" included), that version,
// for good; if it was the latest, the version below becomes the latest.
// Deleting an absent key or version succeeds. ref.If makes the delete
// conditional (DeleteConditions). Errors: NoSuchBucket, InvalidArgument (a
// malformed version ID), PreconditionFailed. Removed blocks go to the
// garbage queue in the same commit; a reader streaming them finishes first.
// See https://docs.aws.amazon.com/AmazonS3/latest/API/API_DeleteObject.html
func (s *Service) DeleteObject(ctx context.Context, bucket string, ref ObjectRef) (DeleteResult, error) {
	ctx = writeContext(ctx)
	if err := checkVersionID(ref.VersionID, bucket+"/"+ref.Key); err != nil {
		return DeleteResult{}, err
	}
	res, err := s.DeleteObjects(ctx, bucket, []ObjectRef{ref})
	if err != nil {
		return DeleteResult{}, err
	}
	return res[0], res[0].Err
}

// DeleteObjects deletes up to 1000 object versions in one commit, each as
// DeleteObject would, returning one result per ref in order. A malformed
// version ID (NoSuchVersion, as S3 answers in a DeleteObjects result) or a
// precondition that does not hold (PreconditionFailed) fails that ref
// alone. The error is for the whole request: NoSuchBucket, or MalformedXML
// for more than 1000 refs.
func (s *Service) DeleteObjects(ctx context.Context, bucket string, refs []ObjectRef) ([]DeleteResult, error) {
	ctx = writeContext(ctx)
	if len(refs) > maxDeleteKeys {
		return nil, s3err.New(s3err.MalformedXML, bucket)
	}
	out := make([]DeleteResult, len(refs))
	todo := make([]meta.VersionRef, 0, len(refs))
	at := make([]int, 0, len(refs))
	for i, r := range refs {
		out[i] = DeleteResult{Key: r.Key, VersionID: r.VersionID}
		if r.VersionID != "" && !meta.ValidVersionID(r.VersionID) {
			out[i].Err = noSuchVersion(bucket, r.Key, r.VersionID)
			continue
		}
		ref := meta.VersionRef{Key: r.Key, VersionID: r.VersionID}
		if r.If.set() {
			c, res := r.If, bucket+"/"+r.Key
			ref.Check = func(o *meta.Object) error { return c.check(o, res) }
		}
		todo = append(todo, ref)
		at = append(at, i)
	}
	if len(todo) == 0 {
		return out, nil
	}
	ds, err := s.db.DeleteVersions(ctx, bucket, todo, s.clock())
	if err != nil {
		return nil, s.writeErr(err, bucket, "")
	}
	for j, d := range ds {
		r := &out[at[j]]
		if d.Err != nil {
			r.Err = d.Err
			continue
		}
		if d.DeleteMarker {
			r.DeleteMarker, r.DeleteMarkerVersionID = true, d.VersionID
		}
	}
	return out, nil
}
