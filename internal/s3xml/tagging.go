package s3xml

import (
	"encoding/xml"
	"errors"
	"io"

	"github.com/coffer-s3/coffer/internal/s3err"
)

// Tagging is the PutObjectTagging and PutBucketTagging body and the
// GetObjectTagging and GetBucketTagging response. See
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutObjectTagging.html
type Tagging struct {
	XMLName xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ Tagging"`
	TagSet  TagSet   `xml:"TagSet"`
}

// TagSet is the <TagSet> element: one <Tag> per tag, and an empty
// <TagSet></TagSet> when there is none, as S3 writes it.
type TagSet struct {
	Tags []Tag `xml:"Tag"`
}

// Tag is one <Tag>. Key is required (a Tag without one is MalformedXML);
// Value may be empty.
type Tag struct {
	Key   *string `xml:"Key"`
	Value string  `xml:"Value"`
}

// errTagWithoutKey is the cause of the MalformedXML for a Tag without Key.
var errTagWithoutKey = errors.New("s3xml: Tag without Key")

// errNoTagSet is the cause of the MalformedXML for a Tagging without
// TagSet.
var errNoTagSet = errors.New("s3xml: Tagging without TagSet")

// taggingIn is Tagging as a request sends it: TagSet is required.
type taggingIn struct {
	XMLName xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ Tagging"`
	TagSet  *TagSet  `xml:"TagSet"`
}

// DecodeTagging decodes a Tagging body of at most limit bytes, checked
// against S3's schema (decodeStrict): a Tagging without TagSet (which
// would erase every tag), with two, or a Tag with two Keys or Values, or
// without a Key, is MalformedXML; other errors are as for Decode. The
// tags themselves (count, lengths, characters) are the service's to
// check.
func DecodeTagging(r io.Reader, limit int64) (Tagging, error) {
	var in taggingIn
	if err := decodeStrict(r, limit, &in); err != nil {
		return Tagging{}, err
	}
	if in.TagSet == nil {
		return Tagging{}, s3err.Wrap(s3err.MalformedXML, "", errNoTagSet)
	}
	for _, tag := range in.TagSet.Tags {
		if tag.Key == nil {
			return Tagging{}, s3err.Wrap(s3err.MalformedXML, "", errTagWithoutKey)
		}
	}
	return Tagging{TagSet: *in.TagSet}, nil
}
