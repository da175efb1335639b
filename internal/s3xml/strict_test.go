package s3xml

import (
	"encoding/xml"
	"reflect"
	"strings"
	"testing"
)

// TestCheckSchemaTypes checks what checkSchema makes of field types the
// CORS document does not have: nested and pointer structs, []byte, types
// with their own UnmarshalXML, and the tags it refuses to handle.
func TestCheckSchemaTypes(t *testing.T) {
	type inner struct {
		N *int32 `xml:"N"`
	}
	type doc struct {
		XMLName xml.Name `xml:"Doc"`
		In      *inner   `xml:"In"`
		Ins     []inner  `xml:"Ins"`
		Raw     []byte   `xml:"Raw"`
		Grantee *Grantee `xml:"Grantee"` // has UnmarshalXML: not looked into
		Ignored string   `xml:"-"`
	}
	for _, tc := range []struct {
		body    string
		wantErr string // a part of the error; "" for none
	}{
		{body: `<Doc><In><N>1</N></In><Ins/><Ins><N>2</N></Ins><Raw>x</Raw><Grantee><Anything/></Grantee></Doc>`},
		{body: `<Doc><Raw></Raw></Doc>`},
		{body: `<Doc><In><N>1</N></In><In/></Doc>`, wantErr: "Doc has In twice"},
		{body: `<Doc><Raw>x</Raw><Raw>y</Raw></Doc>`, wantErr: "Doc has Raw twice"},
		{body: `<Doc><In><N></N></In></Doc>`, wantErr: "N has no value"},
		{body: `<Doc><Ins><M>1</M></Ins></Doc>`, wantErr: "Ins has no element {}M"},
		{body: `<Doc><Ignored>x</Ignored></Doc>`, wantErr: "Doc has no element {}Ignored"},
	} {
		err := checkSchema([]byte(tc.body), reflect.TypeFor[doc]())
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("checkSchema(%s) = %v, want %q", tc.body, err, tc.wantErr)
		}
	}

	type attr struct {
		XMLName xml.Name `xml:"Doc"`
		A       string   `xml:"a,attr"`
	}
	type path struct {
		XMLName xml.Name `xml:"Doc"`
		A       string   `xml:"A>B"`
	}
	for name, typ := range map[string]reflect.Type{"attr": reflect.TypeFor[attr](), "path": reflect.TypeFor[path]()} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("checkSchema of a type with a %s field did not panic", name)
				}
			}()
			_ = checkSchema([]byte(`<Doc/>`), typ)
		}()
	}
}
