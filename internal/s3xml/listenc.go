package s3xml

import (
	"bufio"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Listings are the largest documents Coffer writes and the only ones on a
// hot path: a page of 1000 keys takes encoding/xml about 3 ms of
// reflection. ListBucketResult and ListBucketResultV2 are therefore written
// by hand here, byte for byte as encoding/xml writes them (same element
// order, same omissions, same escaping). The differential tests and
// FuzzEncodeListing compare the two.

// encodeListing writes v with the hand-written encoder if it is a listing
// with its default root name, and reports whether it did.
func encodeListing(w io.Writer, v any) (bool, error) {
	var write func(*xmlWriter)
	switch r := v.(type) {
	case ListBucketResult:
		write = r.writeXML
	case *ListBucketResult:
		write = r.writeXML
	case ListBucketResultV2:
		write = r.writeXML
	case *ListBucketResultV2:
		write = r.writeXML
	default:
		return false, nil
	}
	if !defaultRoot(v) {
		return false, nil
	}
	x := &xmlWriter{w: bufio.NewWriterSize(w, 16<<10)}
	x.raw(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	write(x)
	return true, x.w.Flush()
}

// defaultRoot reports whether v is a non-nil listing whose XMLName is
// unset, so that its root element is the one its tag names.
func defaultRoot(v any) bool {
	switch r := v.(type) {
	case ListBucketResult:
		return r.XMLName.Local == ""
	case *ListBucketResult:
		return r != nil && r.XMLName.Local == ""
	case ListBucketResultV2:
		return r.XMLName.Local == ""
	case *ListBucketResultV2:
		return r != nil && r.XMLName.Local == ""
	}
	return false
}

func (r *ListBucketResult) writeXML(x *xmlWriter) {
	x.raw(`<ListBucketResult xmlns="` + Namespace + `">`)
	x.elem("Name", r.Name)
	x.elemText("Prefix", r.Prefix)
	x.elemText("Marker", r.Marker)
	x.elemTextOmitEmpty("NextMarker", r.NextMarker)
	x.elemInt("MaxKeys", int64(r.MaxKeys))
	x.elemTextOmitEmpty("Delimiter", r.Delimiter)
	x.elemOmitEmpty("EncodingType", r.EncodingType)
	x.elemBool("IsTruncated", r.IsTruncated)
	x.contents(r.Contents, r.CommonPrefixes)
	x.raw(`</ListBucketResult>`)
}

func (r *ListBucketResultV2) writeXML(x *xmlWriter) {
	x.raw(`<ListBucketResult xmlns="` + Namespace + `">`)
	x.elem("Name", r.Name)
	x.elemText("Prefix", r.Prefix)
	x.elemOmitEmpty("ContinuationToken", r.ContinuationToken)
	x.elemOmitEmpty("NextContinuationToken", r.NextContinuationToken)
	x.elemTextOmitEmpty("StartAfter", r.StartAfter)
	x.elemInt("KeyCount", int64(r.KeyCount))
	x.elemInt("MaxKeys", int64(r.MaxKeys))
	x.elemTextOmitEmpty("Delimiter", r.Delimiter)
	x.elemOmitEmpty("EncodingType", r.EncodingType)
	x.elemBool("IsTruncated", r.IsTruncated)
	x.contents(r.Contents, r.CommonPrefixes)
	x.raw(`</ListBucketResult>`)
}

// xmlWriter writes XML through a bufio.Writer, whose first error sticks
// and is returned by Flush.
type xmlWriter struct {
	w   *bufio.Writer
	num [20]byte // scratch for integers, here so it does not escape per call
}

// contents writes the <Contents> and <CommonPrefixes> of a listing.
func (x *xmlWriter) contents(objects []Object, prefixes []CommonPrefix) {
	for i := range objects {
		o := &objects[i]
		x.raw("<Contents>")
		x.elemText("Key", o.Key)
		x.elem("LastModified", o.LastModified)
		x.elem("ETag", o.ETag)
		x.elemOmitEmpty("ChecksumAlgorithm", o.ChecksumAlgorithm)
		x.elemOmitEmpty("ChecksumType", o.ChecksumType)
		x.elemInt("Size", o.Size)
		if o.Owner != nil {
			x.raw("<Owner>")
			x.elem("ID", o.Owner.ID)
			x.elemOmitEmpty("DisplayName", o.Owner.DisplayName)
			x.raw("</Owner>")
		}
		x.elem("StorageClass", o.StorageClass)
		x.raw("</Contents>")
	}
	for _, p := range prefixes {
		x.raw("<CommonPrefixes>")
		x.elemText("Prefix", p.Prefix)
		x.raw("</CommonPrefixes>")
	}
}

func (x *xmlWriter) raw(s string) { x.w.WriteString(s) }

// elem writes <name>value</name> with value escaped.
func (x *xmlWriter) elem(name, value string) {
	x.open(name)
	escape(x.w, value, false)
	x.close(name)
}

// elemText is elem for a Text field.
func (x *xmlWriter) elemText(name string, value Text) {
	x.open(name)
	escape(x.w, string(value), true)
	x.close(name)
}

// elemOmitEmpty is elem for a field tagged omitempty.
func (x *xmlWriter) elemOmitEmpty(name, value string) {
	if value != "" {
		x.elem(name, value)
	}
}

// elemTextOmitEmpty is elemText for a field tagged omitempty.
func (x *xmlWriter) elemTextOmitEmpty(name string, value Text) {
	if value != "" {
		x.elemText(name, value)
	}
}

func (x *xmlWriter) elemInt(name string, n int64) {
	x.open(name)
	x.w.Write(strconv.AppendInt(x.num[:0], n, 10))
	x.close(name)
}

func (x *xmlWriter) elemBool(name string, b bool) {
	x.open(name)
	x.w.WriteString(strconv.FormatBool(b))
	x.close(name)
}

func (x *xmlWriter) open(name string) {
	x.w.WriteByte('<')
	x.w.WriteString(name)
	x.w.WriteByte('>')
}

func (x *xmlWriter) close(name string) {
	x.w.WriteString("</")
	x.w.WriteString(name)
	x.w.WriteByte('>')
}

// plainLow has bit c set for each byte c below 0x40 that is written as
// it is: the printable ones but for the markup characters.
const plainLow uint64 = (1<<64 - 1) &^ (1<<0x20 - 1) &^ (1<<'"' | 1<<'&' | 1<<'\'' | 1<<'<' | 1<<'>')

// plain reports whether c is an ASCII byte written unescaped.
func plain(c byte) bool {
	if c >= 0x40 {
		return c < utf8.RuneSelf
	}
	return plainLow>>c&1 != 0
}

// escape writes s to w as encoding/xml's EscapeString does: the five
// markup characters and tab, newline and carriage return as references,
// U+FFFD for each byte of invalid UTF-8 and for each character outside
// XML's Char production (most C0 controls, U+FFFE, U+FFFF) — except that
// with refs set such a character is written as a hexadecimal character
// reference, &#x1; for U+0001, as Amazon S3 writes keys, where U+FFFD
// would name a key that does not exist. See [Text].
func escape(w io.StringWriter, s string, refs bool) {
	last := 0
	for i := 0; i < len(s); {
		if plain(s[i]) {
			i++
			continue
		}
		r, width := utf8.DecodeRuneInString(s[i:])
		var esc string
		switch r {
		case '"':
			esc = "&#34;"
		case '\'':
			esc = "&#39;"
		case '&':
			esc = "&amp;"
		case '<':
			esc = "&lt;"
		case '>':
			esc = "&gt;"
		case '\t':
			esc = "&#x9;"
		case '\n':
			esc = "&#xA;"
		case '\r':
			esc = "&#xD;"
		default:
			switch {
			case r == utf8.RuneError && width == 1:
				esc = "\uFFFD"
			case isXMLChar(r):
				i += width
				continue
			case !refs:
				esc = "\uFFFD"
			default:
				esc = "&#x" + strings.ToUpper(strconv.FormatInt(int64(r), 16)) + ";"
			}
		}
		w.WriteString(s[last:i])
		w.WriteString(esc)
		i += width
		last = i
	}
	w.WriteString(s[last:])
}
