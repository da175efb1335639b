package s3xml

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"

	"github.com/coffer-s3/coffer/internal/s3err"
)

// EncodeError writes the S3 error document for e to w:
//
//	<?xml version="1.0" encoding="UTF-8"?>
//	<Error><Code>NoSuchKey</Code><Message>…</Message><Resource>…</Resource>…<RequestId>…</RequestId><HostId>…</HostId></Error>
//
// Resource is written only when set, then e.Extra in order (S3 puts
// elements such as Key, BucketName or ArgumentName there), then RequestId
// and, when set, HostId. The root has no namespace, as S3's has none. An
// extra field whose name is not a plain XML name is an error, reported
// before anything is written. See
// https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html#RESTErrorResponses
func EncodeError(w io.Writer, e *s3err.Error, requestID, hostID string) error {
	if e == nil {
		return errors.New("s3xml: encode nil error")
	}
	for _, f := range e.Extra {
		if !isElementName(f.Name) {
			return fmt.Errorf("s3xml: error field name %q is not an XML element name", f.Name)
		}
	}
	enc := xml.NewEncoder(w)
	if err := writeDeclaration(enc); err != nil {
		return err
	}
	root := xml.StartElement{Name: xml.Name{Local: "Error"}}
	if err := enc.EncodeToken(root); err != nil {
		return err
	}
	fields := make([]s3err.Field, 0, 5+len(e.Extra))
	fields = append(fields, s3err.Field{Name: "Code", Value: string(e.Code)}, s3err.Field{Name: "Message", Value: e.Msg()})
	if e.Resource != "" {
		fields = append(fields, s3err.Field{Name: "Resource", Value: e.Resource})
	}
	fields = append(fields, e.Extra...)
	fields = append(fields, s3err.Field{Name: "RequestId", Value: requestID})
	if hostID != "" {
		fields = append(fields, s3err.Field{Name: "HostId", Value: hostID})
	}
	for _, f := range fields {
		if err := enc.EncodeElement(f.Value, xml.StartElement{Name: xml.Name{Local: f.Name}}); err != nil {
			return err
		}
	}
	if err := enc.EncodeToken(root.End()); err != nil {
		return err
	}
	return enc.Close()
}

// isElementName reports whether s is an XML element name made of ASCII
// letters, digits, '_', '-' and '.', starting with a letter or '_'. That
// covers every element S3 puts in an error document and excludes prefixes.
func isElementName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', c == '_':
		case i > 0 && ('0' <= c && c <= '9' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return true
}
