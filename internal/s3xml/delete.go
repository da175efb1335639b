package s3xml

import (
	"encoding/xml"
	"fmt"
	"io"

	"github.com/coffer-s3/coffer/internal/s3err"
)

// MaxDeleteObjects is the most keys one DeleteObjects request may name.
const MaxDeleteObjects = 1000

// Delete is the DeleteObjects request body. In quiet mode the response
// lists only the keys that failed. See
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_DeleteObjects.html
type Delete struct {
	XMLName xml.Name           `xml:"http://s3.amazonaws.com/doc/2006-03-01/ Delete"`
	Objects []ObjectIdentifier `xml:"Object"`
	Quiet   bool               `xml:"Quiet,omitempty"`
}

// ObjectIdentifier is one <Object> of a Delete body. ETag,
// LastModifiedTime and Size make the delete of that key conditional; a
// caller that does not implement a condition must refuse a request that
// sets it (NotImplemented) rather than delete unconditionally.
type ObjectIdentifier struct {
	Key              string `xml:"Key"`
	VersionID        string `xml:"VersionId,omitempty"`
	ETag             string `xml:"ETag,omitempty"`
	LastModifiedTime string `xml:"LastModifiedTime,omitempty"`
	Size             *int64 `xml:"Size,omitempty"`
}

// DecodeDeleteObjects decodes a DeleteObjects body of at most limit bytes.
// Besides Decode's errors it returns MalformedXML, as S3 does, for a body
// naming no object or more than MaxDeleteObjects, and for an object with
// an empty or missing Key. (S3 answers UserKeyMustBeSpecified for an
// empty Key, a code s3err does not have yet.)
func DecodeDeleteObjects(r io.Reader, limit int64) (Delete, error) {
	var d Delete
	if err := Decode(r, limit, &d); err != nil {
		return Delete{}, err
	}
	if n := len(d.Objects); n == 0 || n > MaxDeleteObjects {
		return Delete{}, s3err.Wrap(s3err.MalformedXML, "",
			fmt.Errorf("%d objects, want 1 to %d", n, MaxDeleteObjects))
	}
	for i, o := range d.Objects {
		if o.Key == "" {
			return Delete{}, s3err.Wrap(s3err.MalformedXML, "",
				fmt.Errorf("object %d has no key", i+1))
		}
	}
	return d, nil
}

// DeleteResult is the DeleteObjects response: the keys deleted (none in
// quiet mode) and those that failed, each with an S3 error code.
type DeleteResult struct {
	XMLName xml.Name        `xml:"http://s3.amazonaws.com/doc/2006-03-01/ DeleteResult"`
	Deleted []DeletedObject `xml:"Deleted"`
	Errors  []DeleteError   `xml:"Error"`
}

// DeletedObject is one <Deleted> entry. DeleteMarker and
// DeleteMarkerVersionID are for versioned buckets and written only when
// set.
type DeletedObject struct {
	Key                   string `xml:"Key"`
	VersionID             string `xml:"VersionId,omitempty"`
	DeleteMarker          bool   `xml:"DeleteMarker,omitempty"`
	DeleteMarkerVersionID string `xml:"DeleteMarkerVersionId,omitempty"`
}

// DeleteError is one <Error> entry: the key that was not deleted and why.
type DeleteError struct {
	Key       string     `xml:"Key"`
	VersionID string     `xml:"VersionId,omitempty"`
	Code      s3err.Code `xml:"Code"`
	Message   string     `xml:"Message"`
}
