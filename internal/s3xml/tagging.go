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

// DecodeTagging decodes a Tagging body of at most limit bytes. Errors are
// as for Decode, and MalformedXML for a Tag without a Key. The tags
// themselves (count, lengths, characters) are the service's to check.
func DecodeTagging(r io.Reader, limit int64) (Tagging, error) {
	var t Tagging
	if err := Decode(r, limit, &t); err != nil {
		return Tagging{}, err
	}
	for _, tag := range t.TagSet.Tags {
		if tag.Key == nil {
			return Tagging{}, s3err.Wrap(s3err.MalformedXML, "", errTagWithoutKey)
		}
	}
	return t, nil
}
