package s3xml

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/coffer-s3/coffer/internal/s3err"
)

// Body limits for Decode callers. S3 documents none of these; they are
// sized for the worst realistic body of each kind with room to spare, and
// the whole body is held in memory while it is decoded.
const (
	// MaxConfigBody bounds small configuration bodies:
	// CreateBucketConfiguration, VersioningConfiguration and
	// AccessControlPolicy (100 grants take about 30 KiB).
	MaxConfigBody = 64 << 10
	// MaxDeleteBody bounds a DeleteObjects body: 1000 keys of 1024 bytes,
	// each byte possibly escaped as a 6-byte entity, with version IDs.
	MaxDeleteBody = 8 << 20
	// MaxCompleteBody bounds a CompleteMultipartUpload body: 10000 parts
	// with ETags and checksums take about 2.5 MiB.
	MaxCompleteBody = 8 << 20
)

// Decode reads a body of at most limit bytes from r and decodes it into v,
// a pointer to one of the request structs of this package (any struct
// whose XMLName field is tagged with its root element works).
//
// It returns an *s3err.Error with code MissingRequestBodyError for an empty
// body, MaxMessageLengthExceeded for a body longer than limit (it reads at
// most limit+1 bytes), and MalformedXML for ill-formed XML, a DOCTYPE, a
// root element other than v's (in no namespace or S3's) and anything but
// whitespace, comments and processing instructions after the root. Values
// that do not parse as their field's type (a PartNumber of "x") are
// MalformedXML too. A read error is returned wrapped; limit must be
// positive. After an error v may be partly filled.
func Decode(r io.Reader, limit int64, v any) error {
	present, err := DecodeOptional(r, limit, v)
	if err != nil {
		return err
	}
	if !present {
		return s3err.New(s3err.MissingRequestBodyError, "")
	}
	return nil
}

// DecodeOptional is Decode for bodies that may be absent, such as
// CreateBucketConfiguration: an empty body leaves v untouched and returns
// false. A body of only whitespace is not empty; it is MalformedXML.
func DecodeOptional(r io.Reader, limit int64, v any) (present bool, err error) {
	body, err := readDocument(r, limit, v)
	return len(body) != 0, err
}

// decodeStrict is Decode for documents S3 validates against its schema:
// anything checkSchema refuses is MalformedXML too.
func decodeStrict(r io.Reader, limit int64, v any) error {
	body, err := readDocument(r, limit, v)
	if err != nil {
		return err
	}
	if len(body) == 0 {
		return s3err.New(s3err.MissingRequestBodyError, "")
	}
	if err := checkSchema(body, reflect.TypeOf(v).Elem()); err != nil {
		return s3err.Wrap(s3err.MalformedXML, "", err)
	}
	return nil
}

// readDocument reads a body of at most limit bytes from r and, unless it
// is empty, decodes it into v. It returns the body.
func readDocument(r io.Reader, limit int64, v any) ([]byte, error) {
	root, err := rootName(v)
	if err != nil {
		return nil, err
	}
	body, err := readBody(r, limit)
	if err != nil || len(body) == 0 {
		return nil, err
	}
	if err := decodeDocument(body, root, v); err != nil {
		return nil, s3err.Wrap(s3err.MalformedXML, "", err)
	}
	return body, nil
}

// readBody reads all of r if it is at most limit bytes long.
func readBody(r io.Reader, limit int64) ([]byte, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("s3xml: body limit %d is not positive", limit)
	}
	n := limit
	if n < math.MaxInt64 {
		n++
	}
	body, err := io.ReadAll(io.LimitReader(r, n))
	if err != nil {
		return nil, fmt.Errorf("read xml body: %w", err)
	}
	if int64(len(body)) > limit {
		return nil, s3err.New(s3err.MaxMessageLengthExceeded, "").
			With("MaxMessageLengthBytes", strconv.FormatInt(limit, 10))
	}
	return body, nil
}

// decodeDocument decodes body, whose root element must be named root, into
// v. Its errors are causes for MalformedXML.
func decodeDocument(body []byte, root string, v any) error {
	d := xml.NewDecoder(bytes.NewReader(body))
	start, err := rootElement(d)
	if err != nil {
		return err
	}
	if start.Name.Local != root || start.Name.Space != "" && start.Name.Space != Namespace {
		return fmt.Errorf("root element is {%s}%s, want %s", start.Name.Space, start.Name.Local, root)
	}
	// Both spellings decode alike, and into types whose XMLName tag carries
	// the namespace, which encoding/xml would otherwise insist on.
	start.Name.Space = Namespace
	if err := d.DecodeElement(v, &start); err != nil {
		return err
	}
	return trailer(d)
}

// rootElement returns the first start element of d, allowing only the
// prolog's XML declaration, processing instructions, comments and
// whitespace before it.
func rootElement(d *xml.Decoder) (xml.StartElement, error) {
	for {
		tok, err := d.Token()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return xml.StartElement{}, errors.New("no root element")
			}
			return xml.StartElement{}, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			return t, nil
		case xml.CharData:
			if len(bytes.TrimSpace(t)) != 0 {
				return xml.StartElement{}, errors.New("text before the root element")
			}
		case xml.Directive:
			// A DOCTYPE could declare entities; S3 accepts none.
			return xml.StartElement{}, errors.New("directive before the root element")
		}
	}
}

// trailer checks that nothing but whitespace, comments and processing
// instructions follows the root element.
func trailer(d *xml.Decoder) error {
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.Comment, xml.ProcInst:
		case xml.CharData:
			if len(bytes.TrimSpace(t)) != 0 {
				return errors.New("text after the root element")
			}
		default:
			return fmt.Errorf("%T after the root element", tok)
		}
	}
}

// rootName returns the root element name from the XMLName tag of the
// struct v points to.
func rootName(v any) (string, error) {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return "", fmt.Errorf("s3xml: decode into %T: want a pointer to a struct", v)
	}
	f, ok := t.Elem().FieldByName("XMLName")
	if !ok || f.Type != reflect.TypeFor[xml.Name]() {
		return "", fmt.Errorf("s3xml: decode into %T: no XMLName field", v)
	}
	tag, _, _ := strings.Cut(f.Tag.Get("xml"), ",")
	fields := strings.Fields(tag)
	if len(fields) == 0 {
		return "", fmt.Errorf("s3xml: decode into %T: XMLName has no element name", v)
	}
	return fields[len(fields)-1], nil
}
