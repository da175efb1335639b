package s3xml

import (
	"encoding/xml"
	"errors"
	"io"
	"strconv"

	"github.com/coffer-s3/coffer/internal/s3err"
)

// MaxPartNumber is the highest part number S3 accepts; the lowest is 1.
const MaxPartNumber = 10000

// Checksums holds the base64 flexible checksums of an object or part, each
// written only when set. It is embedded in the structs that carry them, so
// its elements appear inline.
type Checksums struct {
	ChecksumCRC32     string `xml:"ChecksumCRC32,omitempty"`
	ChecksumCRC32C    string `xml:"ChecksumCRC32C,omitempty"`
	ChecksumCRC64NVME string `xml:"ChecksumCRC64NVME,omitempty"`
	ChecksumSHA1      string `xml:"ChecksumSHA1,omitempty"`
	ChecksumSHA256    string `xml:"ChecksumSHA256,omitempty"`
	ChecksumSHA512    string `xml:"ChecksumSHA512,omitempty"`
	ChecksumMD5       string `xml:"ChecksumMD5,omitempty"`
	ChecksumXXHASH64  string `xml:"ChecksumXXHASH64,omitempty"`
	ChecksumXXHASH3   string `xml:"ChecksumXXHASH3,omitempty"`
	ChecksumXXHASH128 string `xml:"ChecksumXXHASH128,omitempty"`
}

// InitiateMultipartUploadResult is the CreateMultipartUpload response. See
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_CreateMultipartUpload.html
type InitiateMultipartUploadResult struct {
	XMLName  xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ InitiateMultipartUploadResult"`
	Bucket   string   `xml:"Bucket"`
	Key      Text     `xml:"Key"`
	UploadID string   `xml:"UploadId"`
}

// CompleteMultipartUpload is the CompleteMultipartUpload request body. See
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_CompleteMultipartUpload.html
type CompleteMultipartUpload struct {
	XMLName xml.Name        `xml:"http://s3.amazonaws.com/doc/2006-03-01/ CompleteMultipartUpload"`
	Parts   []CompletedPart `xml:"Part"`
}

// CompletedPart is one <Part> of a CompleteMultipartUpload body: the part
// number, the ETag the client got from UploadPart (quotes as sent) and the
// part's checksum if the client sent one.
type CompletedPart struct {
	PartNumber int    `xml:"PartNumber"`
	ETag       string `xml:"ETag"`
	Checksums
}

// DecodeCompleteMultipartUpload decodes a CompleteMultipartUpload body of
// at most limit bytes. Besides Decode's errors it returns MalformedXML for
// a body without parts and InvalidArgument for a part number outside
// 1..MaxPartNumber (a missing PartNumber counts as 0). Part order,
// duplicates and ETags are the caller's to check (InvalidPartOrder,
// InvalidPart).
func DecodeCompleteMultipartUpload(r io.Reader, limit int64) (CompleteMultipartUpload, error) {
	var c CompleteMultipartUpload
	present, err := DecodeOptional(r, limit, &c)
	if err != nil {
		return CompleteMultipartUpload{}, err
	}
	if !present {
		// S3 answers MalformedXML, not MissingRequestBodyError, here.
		return CompleteMultipartUpload{}, s3err.Wrap(s3err.MalformedXML, "", errors.New("no body"))
	}
	if len(c.Parts) == 0 {
		return CompleteMultipartUpload{}, s3err.Wrap(s3err.MalformedXML, "", errors.New("no parts"))
	}
	for _, p := range c.Parts {
		if p.PartNumber < 1 || p.PartNumber > MaxPartNumber {
			return CompleteMultipartUpload{}, s3err.Newf(s3err.InvalidArgument, "",
				"Part number must be an integer between 1 and 10000, inclusive").
				With("ArgumentName", "partNumber").
				With("ArgumentValue", strconv.Itoa(p.PartNumber))
		}
	}
	return c, nil
}

// CompleteMultipartUploadResult is the CompleteMultipartUpload response.
// ETag includes its double quotes. Checksums and ChecksumType are written
// only for uploads with a flexible checksum.
type CompleteMultipartUploadResult struct {
	XMLName  xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ CompleteMultipartUploadResult"`
	Location string   `xml:"Location"`
	Bucket   string   `xml:"Bucket"`
	Key      Text     `xml:"Key"`
	ETag     string   `xml:"ETag"`
	Checksums
	ChecksumType string `xml:"ChecksumType,omitempty"`
}

// ListPartsResult is the ListParts response. PartNumberMarker and
// NextPartNumberMarker are always written (0 when there is none), as in
// S3's examples. See
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListParts.html
type ListPartsResult struct {
	XMLName              xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ ListPartsResult"`
	Bucket               string   `xml:"Bucket"`
	Key                  Text     `xml:"Key"`
	UploadID             string   `xml:"UploadId"`
	Initiator            Owner    `xml:"Initiator"`
	Owner                Owner    `xml:"Owner"`
	StorageClass         string   `xml:"StorageClass"`
	ChecksumAlgorithm    string   `xml:"ChecksumAlgorithm,omitempty"`
	ChecksumType         string   `xml:"ChecksumType,omitempty"`
	PartNumberMarker     int      `xml:"PartNumberMarker"`
	NextPartNumberMarker int      `xml:"NextPartNumberMarker"`
	MaxParts             int      `xml:"MaxParts"`
	IsTruncated          bool     `xml:"IsTruncated"`
	Parts                []Part   `xml:"Part"`
}

// Part is one <Part> of ListPartsResult. ETag includes its double quotes
// and LastModified is formatted with Time.
type Part struct {
	PartNumber   int    `xml:"PartNumber"`
	LastModified string `xml:"LastModified"`
	ETag         string `xml:"ETag"`
	Size         int64  `xml:"Size"`
	Checksums
}

// ListMultipartUploadsResult is the ListMultipartUploads response. The four
// markers are always written, empty when unset, as in S3's examples;
// Delimiter, Prefix and EncodingType echo the request and are written only
// when set. See
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListMultipartUploads.html
type ListMultipartUploadsResult struct {
	XMLName            xml.Name       `xml:"http://s3.amazonaws.com/doc/2006-03-01/ ListMultipartUploadsResult"`
	Bucket             string         `xml:"Bucket"`
	KeyMarker          Text           `xml:"KeyMarker"`
	UploadIDMarker     string         `xml:"UploadIdMarker"`
	NextKeyMarker      Text           `xml:"NextKeyMarker"`
	NextUploadIDMarker string         `xml:"NextUploadIdMarker"`
	Delimiter          Text           `xml:"Delimiter,omitempty"`
	Prefix             Text           `xml:"Prefix,omitempty"`
	EncodingType       string         `xml:"EncodingType,omitempty"`
	MaxUploads         int            `xml:"MaxUploads"`
	IsTruncated        bool           `xml:"IsTruncated"`
	Uploads            []Upload       `xml:"Upload"`
	CommonPrefixes     []CommonPrefix `xml:"CommonPrefixes"`
}

// Upload is one <Upload> of ListMultipartUploadsResult. Initiated is
// formatted with Time.
type Upload struct {
	Key               Text   `xml:"Key"`
	UploadID          string `xml:"UploadId"`
	Initiator         Owner  `xml:"Initiator"`
	Owner             Owner  `xml:"Owner"`
	StorageClass      string `xml:"StorageClass"`
	Initiated         string `xml:"Initiated"`
	ChecksumAlgorithm string `xml:"ChecksumAlgorithm,omitempty"`
	ChecksumType      string `xml:"ChecksumType,omitempty"`
}
