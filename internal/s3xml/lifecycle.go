package s3xml

import (
	"encoding/xml"
	"fmt"
	"io"

	"github.com/coffer-s3/coffer/internal/s3err"
)

// MaxLifecycleBody bounds a PutBucketLifecycleConfiguration body: 1000
// rules (S3's limit), each with a filter of ten tags, take about 1.5 MiB.
const MaxLifecycleBody = 2 << 20

// LifecycleConfiguration is the PutBucketLifecycleConfiguration body and
// the GetBucketLifecycleConfiguration response. See
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutBucketLifecycleConfiguration.html
//
// Elements S3 allows once are slices, so that a document giving one twice
// is refused (S3's schema rejects it) rather than read as its last one;
// the encoder writes each element once per item, none for an empty slice.
type LifecycleConfiguration struct {
	XMLName xml.Name        `xml:"http://s3.amazonaws.com/doc/2006-03-01/ LifecycleConfiguration"`
	Rules   []LifecycleRule `xml:"Rule"`
}

// LifecycleRule is one <Rule>. A rule names its objects with Filter or
// with the legacy Prefix.
type LifecycleRule struct {
	ID                             []string                         `xml:"ID"`
	Prefix                         []string                         `xml:"Prefix"`
	Filter                         []LifecycleFilter                `xml:"Filter"`
	Status                         []string                         `xml:"Status"`
	Expiration                     []LifecycleExpiration            `xml:"Expiration"`
	Transitions                    []LifecycleTransition            `xml:"Transition"`
	NoncurrentVersionTransitions   []NoncurrentVersionTransition    `xml:"NoncurrentVersionTransition"`
	NoncurrentVersionExpiration    []NoncurrentVersionExpiration    `xml:"NoncurrentVersionExpiration"`
	AbortIncompleteMultipartUpload []AbortIncompleteMultipartUpload `xml:"AbortIncompleteMultipartUpload"`
}

// LifecycleFilter is a rule's <Filter>: at most one of its elements; an
// empty filter selects every object.
type LifecycleFilter struct {
	Prefix                []string       `xml:"Prefix"`
	Tag                   []Tag          `xml:"Tag"`
	ObjectSizeGreaterThan []int64        `xml:"ObjectSizeGreaterThan"`
	ObjectSizeLessThan    []int64        `xml:"ObjectSizeLessThan"`
	And                   []LifecycleAnd `xml:"And"`
}

// LifecycleAnd is a filter's <And>: every predicate must hold.
type LifecycleAnd struct {
	Prefix                []string `xml:"Prefix"`
	Tags                  []Tag    `xml:"Tag"`
	ObjectSizeGreaterThan []int64  `xml:"ObjectSizeGreaterThan"`
	ObjectSizeLessThan    []int64  `xml:"ObjectSizeLessThan"`
}

// LifecycleExpiration is a rule's <Expiration>. Date is an ISO 8601
// timestamp, kept as sent; the caller parses it.
type LifecycleExpiration struct {
	Days                      []int32  `xml:"Days"`
	Date                      []string `xml:"Date"`
	ExpiredObjectDeleteMarker []bool   `xml:"ExpiredObjectDeleteMarker"`
}

// LifecycleTransition is a rule's <Transition>.
type LifecycleTransition struct {
	Days         []int32  `xml:"Days"`
	Date         []string `xml:"Date"`
	StorageClass []string `xml:"StorageClass"`
}

// NoncurrentVersionTransition is a rule's <NoncurrentVersionTransition>.
type NoncurrentVersionTransition struct {
	NoncurrentDays          []int32  `xml:"NoncurrentDays"`
	NewerNoncurrentVersions []int32  `xml:"NewerNoncurrentVersions"`
	StorageClass            []string `xml:"StorageClass"`
}

// NoncurrentVersionExpiration is a rule's <NoncurrentVersionExpiration>.
type NoncurrentVersionExpiration struct {
	NoncurrentDays          []int32 `xml:"NoncurrentDays"`
	NewerNoncurrentVersions []int32 `xml:"NewerNoncurrentVersions"`
}

// AbortIncompleteMultipartUpload is a rule's
// <AbortIncompleteMultipartUpload>.
type AbortIncompleteMultipartUpload struct {
	DaysAfterInitiation []int32 `xml:"DaysAfterInitiation"`
}

// DecodeLifecycleConfiguration decodes a PutBucketLifecycleConfiguration
// body of at most limit bytes. Besides Decode's errors it returns
// MalformedXML for an element given more than once where S3 allows one,
// and for a Tag without a Key. The rules themselves (what each needs, the
// limits, the messages S3 answers) are the caller's to check.
func DecodeLifecycleConfiguration(r io.Reader, limit int64) (LifecycleConfiguration, error) {
	var c LifecycleConfiguration
	if err := Decode(r, limit, &c); err != nil {
		return LifecycleConfiguration{}, err
	}
	for i, rule := range c.Rules {
		if err := rule.checkOnce(); err != nil {
			return LifecycleConfiguration{}, s3err.Wrap(s3err.MalformedXML, "", fmt.Errorf("rule %d: %w", i+1, err))
		}
	}
	return c, nil
}

// count is how often an element was given.
type count struct {
	name string
	n    int
}

// once returns an error naming the first element of cs given more than
// once.
func once(cs ...count) error {
	for _, c := range cs {
		if c.n > 1 {
			return fmt.Errorf("%s given %d times", c.name, c.n)
		}
	}
	return nil
}

func (r *LifecycleRule) checkOnce() error {
	if err := once(
		count{"ID", len(r.ID)},
		count{"Prefix", len(r.Prefix)},
		count{"Filter", len(r.Filter)},
		count{"Status", len(r.Status)},
		count{"Expiration", len(r.Expiration)},
		count{"NoncurrentVersionExpiration", len(r.NoncurrentVersionExpiration)},
		count{"AbortIncompleteMultipartUpload", len(r.AbortIncompleteMultipartUpload)},
	); err != nil {
		return err
	}
	for _, f := range r.Filter {
		if err := once(
			count{"Filter/And", len(f.And)},
			count{"Filter/ObjectSizeGreaterThan", len(f.ObjectSizeGreaterThan)},
			count{"Filter/ObjectSizeLessThan", len(f.ObjectSizeLessThan)},
			count{"Filter/Prefix", len(f.Prefix)},
			count{"Filter/Tag", len(f.Tag)},
		); err != nil {
			return err
		}
		for _, a := range f.And {
			if err := once(
				count{"And/ObjectSizeGreaterThan", len(a.ObjectSizeGreaterThan)},
				count{"And/ObjectSizeLessThan", len(a.ObjectSizeLessThan)},
				count{"And/Prefix", len(a.Prefix)},
			); err != nil {
				return err
			}
			if err := checkTagKeys(a.Tags); err != nil {
				return err
			}
		}
		if err := checkTagKeys(f.Tag); err != nil {
			return err
		}
	}
	for _, e := range r.Expiration {
		if err := once(
			count{"Date", len(e.Date)},
			count{"Days", len(e.Days)},
			count{"ExpiredObjectDeleteMarker", len(e.ExpiredObjectDeleteMarker)},
		); err != nil {
			return err
		}
	}
	for _, t := range r.Transitions {
		if err := once(
			count{"Date", len(t.Date)},
			count{"Days", len(t.Days)},
			count{"StorageClass", len(t.StorageClass)},
		); err != nil {
			return err
		}
	}
	for _, t := range r.NoncurrentVersionTransitions {
		if err := once(
			count{"NewerNoncurrentVersions", len(t.NewerNoncurrentVersions)},
			count{"NoncurrentDays", len(t.NoncurrentDays)},
			count{"StorageClass", len(t.StorageClass)},
		); err != nil {
			return err
		}
	}
	for _, n := range r.NoncurrentVersionExpiration {
		if err := once(
			count{"NewerNoncurrentVersions", len(n.NewerNoncurrentVersions)},
			count{"NoncurrentDays", len(n.NoncurrentDays)},
		); err != nil {
			return err
		}
	}
	for _, a := range r.AbortIncompleteMultipartUpload {
		if err := once(count{"DaysAfterInitiation", len(a.DaysAfterInitiation)}); err != nil {
			return err
		}
	}
	return nil
}

func checkTagKeys(tags []Tag) error {
	for _, t := range tags {
		if t.Key == nil {
			return errTagWithoutKey
		}
	}
	return nil
}
