package s3xml

import (
	"encoding/xml"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// Namespace is the XML namespace of S3 documents, set on the root element
// of every response except error documents.
const Namespace = "http://s3.amazonaws.com/doc/2006-03-01/"

// TimeFormat is the layout of timestamps in S3 XML bodies: UTC with
// milliseconds, e.g. 2009-10-12T17:50:30.000Z.
const TimeFormat = "2006-01-02T15:04:05.000Z"

// Time formats t as S3 writes timestamps in XML bodies.
func Time(t time.Time) string {
	return t.UTC().Format(TimeFormat)
}

// Encode writes the XML declaration, a newline and v as one element to w.
// v is one of the response types of this package (or a pointer to one).
// See the package documentation for how strings XML cannot carry are
// written.
func Encode(w io.Writer, v any) error {
	if done, err := encodeListing(w, v); done {
		return err
	}
	enc := xml.NewEncoder(w)
	if err := writeDeclaration(enc); err != nil {
		return err
	}
	if err := enc.Encode(v); err != nil {
		return err
	}
	return enc.Close()
}

// Text is a string field that may hold an object key: a key, or a prefix
// or marker that echoes part of one. It is written as encoding/xml writes
// a string but for characters XML 1.0 cannot carry, which become character
// references such as &#x1;, as in S3's responses, instead of U+FFFD
// (see [escape]).
type Text string

// MarshalXML writes t as the element start.
func (t Text) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	if !NeedsURLEncoding(string(t)) {
		return e.EncodeElement(string(t), start)
	}
	var b strings.Builder
	escape(&b, string(t), true)
	return e.EncodeElement(struct {
		Escaped string `xml:",innerxml"`
	}{b.String()}, start)
}

// writeDeclaration writes `<?xml version="1.0" encoding="UTF-8"?>` and a
// newline through enc's buffer.
func writeDeclaration(enc *xml.Encoder) error {
	decl := xml.ProcInst{Target: "xml", Inst: []byte(`version="1.0" encoding="UTF-8"`)}
	if err := enc.EncodeToken(decl); err != nil {
		return err
	}
	return enc.EncodeToken(xml.CharData("\n"))
}

// NeedsURLEncoding reports whether s holds bytes a well-formed XML 1.0
// document cannot carry: invalid UTF-8, or a character outside XML's Char
// production (most C0 controls, surrogates, U+FFFE and U+FFFF). Encode
// writes such characters in keys as character references, as S3 does,
// which strict XML 1.0 parsers refuse; only encoding-type=url lists such a
// key in a form every client reads. See
// https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-keys.html#object-key-xml-related-constraints
func NeedsURLEncoding(s string) bool {
	for i := 0; i < len(s); {
		if c := s[i]; c >= 0x20 && c < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || !isXMLChar(r) {
			return true
		}
		i += n
	}
	return false
}

// isXMLChar reports whether r is in the Char production of XML 1.0:
// https://www.w3.org/TR/xml/#charsets
func isXMLChar(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D ||
		r >= 0x20 && r <= 0xD7FF ||
		r >= 0xE000 && r <= 0xFFFD ||
		r >= 0x10000 && r <= utf8.MaxRune
}
