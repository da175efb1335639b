package s3xml

import "encoding/xml"

// CORSConfiguration is the PutBucketCors body and the GetBucketCors
// response. Decode reads it without checking it; the cors package checks a
// configuration as S3 does. Rules are written in the order of the API
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
