package s3xml

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// Strict decoding is for documents S3 validates against its schema, where
// encoding/xml is lenient: it ignores elements a struct does not name,
// keeps the last of an element given twice and reads an empty number as 0.
// checkSchema walks the document a second time, after it decoded, with
// the struct type as the schema. It is opt-in (decodeStrict), so that the
// other documents keep ignoring elements newer clients may send.

// checkSchema returns an error for the first thing in body, a document
// that decoded into a value of type t (a struct), that t does not allow:
//   - an element none of t's fields names (names are case-sensitive), or
//     one in a namespace other than none or S3's;
//   - an element given twice where its field holds one value (anything
//     but a slice);
//   - text beside the elements of a struct (whitespace and comments may
//     stand anywhere);
//   - an element inside a value;
//   - an empty value for a field that is not a string or []byte
//     (encoding/xml reads an empty number as 0 and an empty bool as false).
//
// Attributes are not checked. A field whose type implements
// xml.Unmarshaler is not looked into. t's fields must be plain elements:
// checkSchema panics on a field tagged attr, chardata, innerxml, any,
// comment or with a path (a>b), and on an embedded struct, which it does
// not support.
func checkSchema(body []byte, t reflect.Type) error {
	d := xml.NewDecoder(bytes.NewReader(body))
	start, err := rootElement(d)
	if err != nil {
		return err
	}
	return checkStruct(d, start.Name.Local, t)
}

// field is what checkSchema knows of a struct field: the type of one of
// its values and whether it holds more than one.
type field struct {
	typ  reflect.Type
	many bool
}

var unmarshalerType = reflect.TypeFor[xml.Unmarshaler]()

// fieldsOf returns the elements struct type t names, by local name.
func fieldsOf(t reflect.Type) map[string]field {
	fields := make(map[string]field, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("xml")
		if !f.IsExported() || tag == "-" || f.Name == "XMLName" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		for _, o := range strings.Split(opts, ",") {
			switch o {
			case "attr", "chardata", "cdata", "innerxml", "any", "comment":
				panic(fmt.Sprintf("s3xml: strict decoding of %v: field %s is tagged %q", t, f.Name, o))
			}
		}
		if f.Anonymous || strings.Contains(name, ">") {
			panic(fmt.Sprintf("s3xml: strict decoding of %v: field %s is embedded or a path", t, f.Name))
		}
		if words := strings.Fields(name); len(words) > 0 {
			name = words[len(words)-1] // "namespace Local"
		} else {
			name = f.Name
		}
		ft, many := f.Type, false
		if ft.Kind() == reflect.Slice && ft.Elem().Kind() != reflect.Uint8 {
			ft, many = ft.Elem(), true
		}
		fields[name] = field{typ: ft, many: many}
	}
	return fields
}

// checkStruct checks the content of element name, whose start d has just
// read, against struct type t, and reads its end.
func checkStruct(d *xml.Decoder, name string, t reflect.Type) error {
	fields := fieldsOf(t)
	seen := make(map[string]bool, len(fields))
	for {
		tok, err := d.Token()
		if err != nil {
			return unexpectedEOF(err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			el := tok.Name.Local
			f, ok := fields[el]
			if !ok || tok.Name.Space != "" && tok.Name.Space != Namespace {
				return fmt.Errorf("%s has no element {%s}%s", name, tok.Name.Space, el)
			}
			if !f.many {
				if seen[el] {
					return fmt.Errorf("%s has %s twice", name, el)
				}
				seen[el] = true
			}
			if err := checkElement(d, el, f.typ); err != nil {
				return err
			}
		case xml.EndElement:
			return nil
		case xml.CharData:
			if len(bytes.TrimSpace(tok)) != 0 {
				return fmt.Errorf("text in %s", name)
			}
		}
	}
}

// checkElement checks the content of element name, whose start d has just
// read, against a field of type t, and reads its end.
func checkElement(d *xml.Decoder, name string, t reflect.Type) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case reflect.PointerTo(t).Implements(unmarshalerType):
		return d.Skip()
	case t.Kind() == reflect.Struct:
		return checkStruct(d, name, t)
	}
	empty := true
	for {
		tok, err := d.Token()
		if err != nil {
			return unexpectedEOF(err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			return fmt.Errorf("element %s in the value of %s", tok.Name.Local, name)
		case xml.EndElement:
			if empty && t.Kind() != reflect.String && t.Kind() != reflect.Slice { // []byte may be empty
				return fmt.Errorf("%s has no value", name)
			}
			return nil
		case xml.CharData:
			empty = empty && len(tok) == 0
		}
	}
}

// unexpectedEOF turns the io.EOF of a document that ends inside an
// element into an error of its own; checkSchema runs after the document
// decoded, so this is only for safety.
func unexpectedEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
