package s3xml

import "encoding/xml"

// CopyObjectResult is the CopyObject response. ETag includes its double
// quotes and LastModified is formatted with Time; the checksum of the new
// object is written only when it has one. See
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_CopyObject.html
type CopyObjectResult struct {
	XMLName      xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ CopyObjectResult"`
	LastModified string   `xml:"LastModified"`
	ETag         string   `xml:"ETag"`
	Checksums
	ChecksumType string `xml:"ChecksumType,omitempty"`
}

// CopyPartResult is the UploadPartCopy response. See
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_UploadPartCopy.html
type CopyPartResult struct {
	XMLName      xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ CopyPartResult"`
	LastModified string   `xml:"LastModified"`
	ETag         string   `xml:"ETag"`
	Checksums
}
