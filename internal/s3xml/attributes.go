package s3xml

import "encoding/xml"

// GetObjectAttributesResponse is the GetObjectAttributes response. Each
// element is written only when the request asked for that attribute
// (nil or empty otherwise). ETag is written without quotes, as S3 does
// here. See
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObjectAttributes.html
type GetObjectAttributesResponse struct {
	XMLName      xml.Name         `xml:"http://s3.amazonaws.com/doc/2006-03-01/ GetObjectAttributesResponse"`
	ETag         string           `xml:"ETag,omitempty"`
	Checksum     *ObjectChecksum  `xml:"Checksum,omitempty"`
	ObjectParts  *ObjectPartsPage `xml:"ObjectParts,omitempty"`
	StorageClass string           `xml:"StorageClass,omitempty"`
	ObjectSize   *int64           `xml:"ObjectSize,omitempty"`
}

// ObjectChecksum is the <Checksum> of GetObjectAttributes: the object's
// checksum in the element of its algorithm, and its type.
type ObjectChecksum struct {
	Checksums
	ChecksumType string `xml:"ChecksumType,omitempty"`
}

// ObjectPartsPage is the <ObjectParts> of GetObjectAttributes: one page of
// a multipart object's parts.
type ObjectPartsPage struct {
	IsTruncated          bool         `xml:"IsTruncated"`
	MaxParts             int          `xml:"MaxParts"`
	NextPartNumberMarker int          `xml:"NextPartNumberMarker"`
	PartNumberMarker     int          `xml:"PartNumberMarker"`
	Parts                []ObjectPart `xml:"Part"`
	PartsCount           int          `xml:"PartsCount"`
}

// ObjectPart is one <Part> of ObjectParts.
type ObjectPart struct {
	Checksums
	PartNumber int   `xml:"PartNumber"`
	Size       int64 `xml:"Size"`
}
