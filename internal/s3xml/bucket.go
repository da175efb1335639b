package s3xml

import (
	"encoding/xml"
	"io"
)

// Owner identifies an account: the owner of buckets and objects, or the
// initiator of a multipart upload. S3 is phasing DisplayName out; it is
// omitted when empty.
type Owner struct {
	ID          string `xml:"ID"`
	DisplayName string `xml:"DisplayName,omitempty"`
}

// ListAllMyBucketsResult is the ListBuckets response. ContinuationToken and
// Prefix are written only when set. See
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListBuckets.html
type ListAllMyBucketsResult struct {
	XMLName           xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ ListAllMyBucketsResult"`
	Owner             Owner    `xml:"Owner"`
	Buckets           Buckets  `xml:"Buckets"`
	ContinuationToken string   `xml:"ContinuationToken,omitempty"`
	Prefix            string   `xml:"Prefix,omitempty"`
}

// Buckets is the <Buckets> element of ListAllMyBucketsResult: one <Bucket>
// per entry, and an empty <Buckets></Buckets> when there is none, as S3
// writes it.
type Buckets []Bucket

// MarshalXML implements xml.Marshaler.
func (bs Buckets) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	if err := e.EncodeToken(start); err != nil {
		return err
	}
	item := xml.StartElement{Name: xml.Name{Local: "Bucket"}}
	for _, b := range bs {
		if err := e.EncodeElement(b, item); err != nil {
			return err
		}
	}
	return e.EncodeToken(start.End())
}

// Bucket is one bucket of ListAllMyBucketsResult. CreationDate is
// formatted with Time.
type Bucket struct {
	Name         string `xml:"Name"`
	CreationDate string `xml:"CreationDate"`
	BucketRegion string `xml:"BucketRegion,omitempty"`
}

// LocationConstraint is the GetBucketLocation response: the bucket's
// region, empty for us-east-1, which S3 writes as an empty element. See
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetBucketLocation.html
type LocationConstraint struct {
	XMLName xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ LocationConstraint"`
	Region  string   `xml:",chardata"`
}

// VersioningConfiguration is the GetBucketVersioning response and the
// PutBucketVersioning body. A bucket that was never versioned has neither
// Status nor MFADelete, and its document is empty. Status is "Enabled" or
// "Suspended"; Decode does not check it. See
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetBucketVersioning.html
type VersioningConfiguration struct {
	XMLName   xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ VersioningConfiguration"`
	Status    string   `xml:"Status,omitempty"`
	MFADelete string   `xml:"MfaDelete,omitempty"`
}

// PolicyStatus is the GetBucketPolicyStatus response. See
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetBucketPolicyStatus.html
type PolicyStatus struct {
	XMLName  xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ PolicyStatus"`
	IsPublic bool     `xml:"IsPublic"`
}

// CreateBucketConfiguration is the optional CreateBucket body. See
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_CreateBucket.html
type CreateBucketConfiguration struct {
	XMLName            xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ CreateBucketConfiguration"`
	LocationConstraint string   `xml:"LocationConstraint,omitempty"`
}

// DecodeCreateBucketConfiguration decodes a CreateBucket body of at most
// limit bytes. The body is optional: an empty one yields the zero value,
// which asks for the default region. Errors are as for Decode.
func DecodeCreateBucketConfiguration(r io.Reader, limit int64) (CreateBucketConfiguration, error) {
	var c CreateBucketConfiguration
	if _, err := DecodeOptional(r, limit, &c); err != nil {
		return CreateBucketConfiguration{}, err
	}
	return c, nil
}

// OwnershipControls is the PutBucketOwnershipControls body and the
// GetBucketOwnershipControls response: one rule naming the bucket's Object
// Ownership. See
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutBucketOwnershipControls.html
type OwnershipControls struct {
	XMLName xml.Name                `xml:"http://s3.amazonaws.com/doc/2006-03-01/ OwnershipControls"`
	Rules   []OwnershipControlsRule `xml:"Rule"`
}

// OwnershipControlsRule is one <Rule> of OwnershipControls.
type OwnershipControlsRule struct {
	ObjectOwnership string `xml:"ObjectOwnership"`
}

// PublicAccessBlockConfiguration is the PutPublicAccessBlock body and the
// GetPublicAccessBlock response: a bucket's Block Public Access settings;
// an element left out is false. See
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutPublicAccessBlock.html
type PublicAccessBlockConfiguration struct {
	XMLName               xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ PublicAccessBlockConfiguration"`
	BlockPublicAcls       bool     `xml:"BlockPublicAcls"`
	IgnorePublicAcls      bool     `xml:"IgnorePublicAcls"`
	BlockPublicPolicy     bool     `xml:"BlockPublicPolicy"`
	RestrictPublicBuckets bool     `xml:"RestrictPublicBuckets"`
}

// PostResponse is the answer to a browser form upload whose
// success_action_status is 201.
type PostResponse struct {
	XMLName  xml.Name `xml:"PostResponse"`
	Location string   `xml:"Location"`
	Bucket   string   `xml:"Bucket"`
	Key      string   `xml:"Key"`
	ETag     string   `xml:"ETag"`
}
