package s3xml

import (
	"encoding/xml"
	"io"
)

// CORSConfiguration is the PutBucketCors body and the GetBucketCors
// response. DecodeCORSConfiguration reads it as S3 does, strictly; the
// cors package checks the rules. Rules are written in the order of the API
// Reference's response syntax. See
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutBucketCors.html
type CORSConfiguration struct {
	XMLName xml.Name   `xml:"http://s3.amazonaws.com/doc/2006-03-01/ CORSConfiguration"`
	Rules   []CORSRule `xml:"CORSRule"`
}

// CORSRule is one <CORSRule>. ID is written only when set, and
// MaxAgeSeconds only when not nil.
type CORSRule struct {
	AllowedHeaders []string `xml:"AllowedHeader"`
	AllowedMethods []string `xml:"AllowedMethod"`
	AllowedOrigins []string `xml:"AllowedOrigin"`
	ExposeHeaders  []string `xml:"ExposeHeader"`
	ID             string   `xml:"ID,omitempty"`
	MaxAgeSeconds  *int     `xml:"MaxAgeSeconds,omitempty"`
}

// DecodeCORSConfiguration decodes a PutBucketCors body of at most limit
// bytes. S3 validates this document against its schema, so besides
// Decode's errors it answers MalformedXML for an element that
// CORSConfiguration or CORSRule does not have (such as the common
// <AllowedHeaders>, or <allowedheader>), an ID or MaxAgeSeconds given
// twice, an empty MaxAgeSeconds, text beside the elements and an element
// inside a value, all of which encoding/xml would let pass (ignored, the
// last one kept, read as 0). Element order is free, as in S3. What the
// rules hold is the cors package's to check.
func DecodeCORSConfiguration(r io.Reader, limit int64) (CORSConfiguration, error) {
	var c CORSConfiguration
	if err := decodeStrict(r, limit, &c); err != nil {
		return CORSConfiguration{}, err
	}
	return c, nil
}
