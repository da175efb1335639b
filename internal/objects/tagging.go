package objects

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/coffer-s3/coffer/internal/meta"
	"github.com/coffer-s3/coffer/internal/s3err"
)

// Tag is one object or bucket tag.
type Tag struct {
	Key, Value string
}

// S3's limits on tags. See
// https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-tagging.html
// and https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutBucketTagging.html
const (
	maxObjectTags  = 10
	maxBucketTags  = 50
	maxTagKeyLen   = 128 // Unicode characters
	maxTagValueLen = 256
)

// CheckTags validates a tag set as S3 does for an object (bucket false: at
// most 10 tags) or a bucket (at most 50): keys of 1 to 128 characters and
// values of up to 256, of letters, digits, spaces and + - = . _ : / @,
// keys unique and not starting with "aws:". Errors: InvalidTag.
func CheckTags(tags []Tag, bucket bool) error {
	invalid := func(msg string) error {
		return s3err.Newf(s3err.InvalidTag, "", msg)
	}
	limit, what := maxObjectTags, "Object tags"
	if bucket {
		limit, what = maxBucketTags, "Bucket tag count"
	}
	if len(tags) > limit {
		return invalid(what + " cannot be greater than " + strconv.Itoa(limit))
	}
	seen := make(map[string]bool, len(tags))
	for _, t := range tags {
		switch n := utf8.RuneCountInString(t.Key); {
		case n == 0:
			return invalid("The TagKey you have provided is invalid")
		case n > maxTagKeyLen:
			return invalid("The TagKey you have provided is too long, max " + strconv.Itoa(maxTagKeyLen))
		}
		if utf8.RuneCountInString(t.Value) > maxTagValueLen {
			return invalid("The TagValue you have provided is too long, max " + strconv.Itoa(maxTagValueLen))
		}
		if !validTagText(t.Key) || strings.HasPrefix(strings.ToLower(t.Key), "aws:") {
			return invalid("The TagKey you have provided is invalid")
		}
		if !validTagText(t.Value) {
			return invalid("The TagValue you have provided is invalid")
		}
		if seen[t.Key] {
			return invalid("Cannot provide multiple Tags with the same key")
		}
		seen[t.Key] = true
	}
	return nil
}

// validTagText reports whether s holds only what S3 allows in tags
// (^([\p{L}\p{Z}\p{N}_.:/=+\-@]*)$): letters, numbers and separators
// (spaces) of any script, and + - = . _ : / @; not tabs, newlines or
// other controls, which unicode.IsSpace would let in.
func validTagText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		switch {
		case unicode.IsLetter(r), unicode.IsNumber(r), unicode.Is(unicode.Z, r):
		case strings.ContainsRune("+-=._:/@", r):
		default:
			return false
		}
	}
	return true
}

// toMetaTags returns ts as stored: sorted by key, the order S3 (and
// clients comparing tag sets) return them in.
func toMetaTags(ts []Tag) []meta.Tag {
	if len(ts) == 0 {
		return nil
	}
	out := make([]meta.Tag, len(ts))
	for i, t := range ts {
		out[i] = meta.Tag{Key: t.Key, Value: t.Value}
	}
	slices.SortFunc(out, func(a, b meta.Tag) int { return strings.Compare(a.Key, b.Key) })
	return out
}

func fromMetaTags(ts []meta.Tag) []Tag {
	if len(ts) == 0 {
		return nil
	}
	out := make([]Tag, len(ts))
	for i, t := range ts {
		out[i] = Tag{Key: t.Key, Value: t.Value}
	}
	return out
}

// ObjectTagging returns the tags of a version of bucket/key (versionID ""
// for the current one), the version ID to report and a Pin of the
// version read. Errors: as HeadObject (NoSuchKey, NoSuchVersion,
// MethodNotAllowed for a delete marker, InvalidArgument, NoSuchBucket).
func (s *Service) ObjectTagging(ctx context.Context, bucket, key, versionID string) ([]Tag, string, Pin, error) {
	rec, _, err := s.lookup(ctx, bucket, key, versionID)
	if err != nil {
		return nil, "", Pin{}, err
	}
	return fromMetaTags(rec.Tags), s.taggingVersionID(ctx, bucket, &rec, versionID), pinOf(&rec), nil
}

// A Pin names what a read saw (ObjectTagging, ObjectACL): the version, by
// its internal identity, which every write of a key changes, even in a
// bucket without versioning, and digests of its ACL and of its tags, what
// an authorization decides on. A change of a subresource given a set Pin
// applies only if the version is still that one, with the ACL and tags
// the Pin holds (Version, WithoutTags and WithoutACL pin less): a request
// authorized against a version (its ACL grants, its tags in policy
// conditions), whose key was overwritten or whose grants were revoked
// before its change was written (its body may trickle in for minutes),
// must not change what it was never authorized for; and only what the
// decision read is pinned, so that a change of the tags does not refuse
// a PutObjectAcl that never looked at them. NoVersion pins the absence of
// the version. The zero Pin pins nothing.
type Pin struct{ id, acl, tags string }

// NoVersion is the Pin of a read that found no version (NoSuchKey,
// NoSuchVersion, a delete marker): a change given it is refused if there
// is one by the time it is written.
var NoVersion = Pin{id: "-"}

// Version returns p pinning the version only.
func (p Pin) Version() Pin { return Pin{id: p.id} }

// WithoutTags returns p without its tags.
func (p Pin) WithoutTags() Pin { p.tags = ""; return p }

// WithoutACL returns p without its ACL.
func (p Pin) WithoutACL() Pin { p.acl = ""; return p }

// Merge returns the Pin holding what p and q hold, and false if they
// disagree (another version, or another ACL or tags of it).
func (p Pin) Merge(q Pin) (Pin, bool) {
	pick := func(a, b string) (string, bool) {
		switch {
		case a == "":
			return b, true
		case b == "" || a == b:
			return a, true
		}
		return "", false
	}
	id, ok0 := pick(p.id, q.id)
	acl, ok1 := pick(p.acl, q.acl)
	tags, ok2 := pick(p.tags, q.tags)
	return Pin{id: id, acl: acl, tags: tags}, ok0 && ok1 && ok2
}

// holds reports whether o (nil: no version) is what p pins.
func (p Pin) holds(o *meta.Object) bool {
	switch {
	case p == Pin{}:
		return true
	case p == NoVersion:
		return o == nil || o.DeleteMarker
	case o == nil:
		return false
	}
	cur := pinOf(o)
	return cur.id == p.id && (p.acl == "" || cur.acl == p.acl) && (p.tags == "" || cur.tags == p.tags)
}

// pinOf returns the Pin of o as it is now: its version, ACL and tags.
func pinOf(o *meta.Object) Pin {
	acl := sha256.Sum256(o.ACL)
	h := sha256.New()
	for _, t := range o.Tags {
		h.Write([]byte(t.Key))
		h.Write([]byte{0})
		h.Write([]byte(t.Value))
		h.Write([]byte{0})
	}
	return Pin{id: o.VersionID, acl: string(acl[:]), tags: string(h.Sum(nil))}
}

// errPinned is the cause of the ConditionalRequestConflict a change
// answers when the version is not the pinned one.
var errPinned = errors.New("the version, its ACL or its tags changed since the request read them")

// PutObjectTagging replaces the tags of a version of bucket/key (versionID
// "" for the current one; pin: see Pin), in place: no new version is
// made. It returns the version ID to report. Errors: InvalidTag,
// ConditionalRequestConflict (pin), and those of ObjectTagging.
func (s *Service) PutObjectTagging(ctx context.Context, bucket, key, versionID string, pin Pin, tags []Tag) (string, error) {
	ctx = writeContext(ctx)
	if err := CheckTags(tags, false); err != nil {
		return "", err
	}
	return s.setTags(ctx, bucket, key, versionID, pin, toMetaTags(tags))
}

// DeleteObjectTagging removes the tags of a version of bucket/key (pin:
// see Pin). It returns the version ID to report. Errors: as
// PutObjectTagging.
func (s *Service) DeleteObjectTagging(ctx context.Context, bucket, key, versionID string, pin Pin) (string, error) {
	ctx = writeContext(ctx)
	return s.setTags(ctx, bucket, key, versionID, pin, nil)
}

func (s *Service) setTags(ctx context.Context, bucket, key, versionID string, pin Pin, tags []meta.Tag) (string, error) {
	return s.modifyVersion(ctx, bucket, key, versionID, pin, "tag", func(o *meta.Object) { o.Tags = tags })
}

// modifyVersion changes a subresource of a version of bucket/key (its tags,
// its ACL) in place with set, and returns the version ID to report. A
// delete marker has none: MethodNotAllowed, as S3 answers. A version other
// than the one pin names (if set) is ConditionalRequestConflict. what says
// what was being done, for an unexpected error ("tag", "set ACL of").
func (s *Service) modifyVersion(ctx context.Context, bucket, key, versionID string, pin Pin, what string, set func(*meta.Object)) (string, error) {
	res := bucket + "/" + key
	if err := checkVersionID(versionID, res); err != nil {
		return "", err
	}
	rec, err := s.db.ModifyVersion(ctx, bucket, key, versionID, func(o *meta.Object) error {
		if !pin.holds(o) {
			return s3err.Wrap(s3err.ConditionalRequestConflict, res, errPinned)
		}
		if o.DeleteMarker {
			return s3err.New(s3err.MethodNotAllowed, res).
				With("Method", "PUT").With("ResourceType", "DeleteMarker").
				WithHeader("x-amz-delete-marker", "true").WithHeader("x-amz-version-id", o.S3VersionID())
		}
		set(o)
		return nil
	})
	switch {
	case errors.Is(err, meta.ErrNotFound):
		// Say why, as a read would: no such key (under a delete marker
		// or not), or no such version.
		_, _, err = s.lookup(ctx, bucket, key, versionID)
		if err == nil {
			// Written in between: as if it came a moment earlier, which
			// was not what the request saw.
			err = s3err.Wrap(s3err.ConditionalRequestConflict, res, fmt.Errorf("%s %s: version gone and back", what, res))
		}
		return "", err
	case err != nil:
		return "", s.writeErr(err, bucket, key)
	}
	return s.taggingVersionID(ctx, bucket, &rec, versionID), nil
}

// taggingVersionID is the version ID a tagging response reports: the
// version's when asked for one, else what a GET reports.
func (s *Service) taggingVersionID(ctx context.Context, bucket string, o *meta.Object, asked string) string {
	if asked != "" {
		return o.S3VersionID()
	}
	return s.reportedVersion(ctx, bucket, o)
}

// PutBucketTagging replaces bucket's tags. Errors: NoSuchBucket, InvalidTag.
func (s *Service) PutBucketTagging(ctx context.Context, bucket string, tags []Tag) error {
	if err := CheckTags(tags, true); err != nil {
		return err
	}
	tags = slices.SortedFunc(slices.Values(tags), func(a, b Tag) int { return strings.Compare(a.Key, b.Key) })
	doc, err := json.Marshal(tags)
	if err != nil {
		return fmt.Errorf("encode tags of %s: %w", bucket, err)
	}
	return s.PutBucketConfig(ctx, bucket, ConfigTagging, doc)
}

// BucketTagging returns bucket's tags. Errors: NoSuchBucket, NoSuchTagSet.
func (s *Service) BucketTagging(ctx context.Context, bucket string) ([]Tag, error) {
	doc, ok, err := s.BucketConfig(ctx, bucket, ConfigTagging)
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, s3err.New(s3err.NoSuchTagSet, bucket).With("BucketName", bucket)
	}
	var tags []Tag
	if err := json.Unmarshal(doc, &tags); err != nil {
		return nil, fmt.Errorf("tags of %s: %w", bucket, err)
	}
	return tags, nil
}

// DeleteBucketTagging removes bucket's tags. Errors: NoSuchBucket.
func (s *Service) DeleteBucketTagging(ctx context.Context, bucket string) error {
	return s.PutBucketConfig(ctx, bucket, ConfigTagging, nil)
}
