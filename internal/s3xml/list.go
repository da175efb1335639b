package s3xml

import "encoding/xml"

// ListBucketResult is the ListObjects (version 1) response. Name, Prefix,
// Marker, MaxKeys and IsTruncated are always written, Marker and Prefix
// empty when the request had none, as S3 does. NextMarker is written only
// when set: S3 sets it only for a truncated listing with a delimiter.
// Delimiter and EncodingType echo the request and are written only when
// set. With EncodingType "url" the caller URL-encodes Prefix, Marker,
// NextMarker, Delimiter, the keys and the common prefixes. See
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListObjects.html
type ListBucketResult struct {
	XMLName        xml.Name       `xml:"http://s3.amazonaws.com/doc/2006-03-01/ ListBucketResult"`
	Name           string         `xml:"Name"`
	Prefix         Text           `xml:"Prefix"`
	Marker         Text           `xml:"Marker"`
	NextMarker     Text           `xml:"NextMarker,omitempty"`
	MaxKeys        int            `xml:"MaxKeys"`
	Delimiter      Text           `xml:"Delimiter,omitempty"`
	EncodingType   string         `xml:"EncodingType,omitempty"`
	IsTruncated    bool           `xml:"IsTruncated"`
	Contents       []Object       `xml:"Contents"`
	CommonPrefixes []CommonPrefix `xml:"CommonPrefixes"`
}

// ListBucketResultV2 is the ListObjectsV2 response. Name, Prefix, KeyCount,
// MaxKeys and IsTruncated are always written. ContinuationToken and
// StartAfter echo the request, NextContinuationToken is set only when
// truncated, and Delimiter and EncodingType echo the request; each is
// written only when set. With EncodingType "url" the caller URL-encodes
// Prefix, StartAfter, Delimiter, the keys and the common prefixes. See
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListObjectsV2.html
type ListBucketResultV2 struct {
	XMLName               xml.Name       `xml:"http://s3.amazonaws.com/doc/2006-03-01/ ListBucketResult"`
	Name                  string         `xml:"Name"`
	Prefix                Text           `xml:"Prefix"`
	ContinuationToken     string         `xml:"ContinuationToken,omitempty"`
	NextContinuationToken string         `xml:"NextContinuationToken,omitempty"`
	StartAfter            Text           `xml:"StartAfter,omitempty"`
	KeyCount              int            `xml:"KeyCount"`
	MaxKeys               int            `xml:"MaxKeys"`
	Delimiter             Text           `xml:"Delimiter,omitempty"`
	EncodingType          string         `xml:"EncodingType,omitempty"`
	IsTruncated           bool           `xml:"IsTruncated"`
	Contents              []Object       `xml:"Contents"`
	CommonPrefixes        []CommonPrefix `xml:"CommonPrefixes"`
}

// Object is one <Contents> entry of a listing. ETag includes its double
// quotes and LastModified is formatted with Time. Owner is written only
// when set: always in version 1, with fetch-owner=true in version 2.
// ChecksumAlgorithm and ChecksumType are written only for objects stored
// with a flexible checksum.
type Object struct {
	Key               Text   `xml:"Key"`
	LastModified      string `xml:"LastModified"`
	ETag              string `xml:"ETag"`
	ChecksumAlgorithm string `xml:"ChecksumAlgorithm,omitempty"`
	ChecksumType      string `xml:"ChecksumType,omitempty"`
	Size              int64  `xml:"Size"`
	Owner             *Owner `xml:"Owner,omitempty"`
	StorageClass      string `xml:"StorageClass"`
}

// CommonPrefix is one <CommonPrefixes> entry: a prefix rolled up at the
// delimiter. S3 writes one <CommonPrefixes> element per prefix.
type CommonPrefix struct {
	Prefix Text `xml:"Prefix"`
}

// ListVersionsResult is the ListObjectVersions response. Name, Prefix,
// KeyMarker, VersionIdMarker, MaxKeys and IsTruncated are always written
// (the markers empty when the request had none); NextKeyMarker and
// NextVersionIdMarker only when truncated; Delimiter and EncodingType echo
// the request and are written only when set. Versions holds object
// versions and delete markers in listing order: each entry is written as
// a <Version> or, with DeleteMarker set, a <DeleteMarker> element, so the
// two interleave as S3 writes them. With EncodingType "url" the caller
// URL-encodes Prefix, KeyMarker, NextKeyMarker, Delimiter, the keys and
// the common prefixes. See
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListObjectVersions.html
type ListVersionsResult struct {
	XMLName             xml.Name        `xml:"http://s3.amazonaws.com/doc/2006-03-01/ ListVersionsResult"`
	Name                string          `xml:"Name"`
	Prefix              Text            `xml:"Prefix"`
	KeyMarker           Text            `xml:"KeyMarker"`
	VersionIDMarker     string          `xml:"VersionIdMarker"`
	NextKeyMarker       Text            `xml:"NextKeyMarker,omitempty"`
	NextVersionIDMarker string          `xml:"NextVersionIdMarker,omitempty"`
	MaxKeys             int             `xml:"MaxKeys"`
	Delimiter           Text            `xml:"Delimiter,omitempty"`
	EncodingType        string          `xml:"EncodingType,omitempty"`
	IsTruncated         bool            `xml:"IsTruncated"`
	Versions            []ObjectVersion `xml:"Version"`
	CommonPrefixes      []CommonPrefix  `xml:"CommonPrefixes"`
}

// ObjectVersion is one <Version> or <DeleteMarker> entry of a version
// listing. A delete marker has no ETag, size, checksum or storage class.
type ObjectVersion struct {
	DeleteMarker      bool   `xml:"-"` // written as <DeleteMarker>, else <Version>
	Key               Text   `xml:"Key"`
	VersionID         string `xml:"VersionId"`
	IsLatest          bool   `xml:"IsLatest"`
	LastModified      string `xml:"LastModified"`
	ETag              string `xml:"ETag,omitempty"`
	ChecksumAlgorithm string `xml:"ChecksumAlgorithm,omitempty"`
	ChecksumType      string `xml:"ChecksumType,omitempty"`
	Size              *int64 `xml:"Size,omitempty"`
	Owner             *Owner `xml:"Owner,omitempty"`
	StorageClass      string `xml:"StorageClass,omitempty"`
}

// MarshalXML writes v as a <Version> or a <DeleteMarker> element, in the
// document's namespace.
func (v ObjectVersion) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	start.Name = xml.Name{Local: "Version"}
	if v.DeleteMarker {
		start.Name.Local = "DeleteMarker"
	}
	type plain ObjectVersion // without this method
	return e.EncodeElement(plain(v), start)
}

// NewVersion returns the <Version> entry of an object version.
func NewVersion(key Text, versionID string, latest bool, modified string, etag string, size int64) ObjectVersion {
	return ObjectVersion{Key: key, VersionID: versionID, IsLatest: latest,
		LastModified: modified, ETag: etag, Size: &size, StorageClass: "STANDARD"}
}

// NewDeleteMarker returns the <DeleteMarker> entry of a delete marker.
func NewDeleteMarker(key Text, versionID string, latest bool, modified string) ObjectVersion {
	return ObjectVersion{DeleteMarker: true, Key: key, VersionID: versionID, IsLatest: latest, LastModified: modified}
}
