package s3xml_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/coffer-s3/coffer/internal/s3err"
	"github.com/coffer-s3/coffer/internal/s3xml"
)

// testdata returns the contents of testdata/name.
func testdata(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// readers returns the ways each decode case is fed: whole, and one byte
// per Read.
func readers(body string) map[string]io.Reader {
	return map[string]io.Reader{
		"whole":   strings.NewReader(body),
		"onebyte": iotest.OneByteReader(strings.NewReader(body)),
	}
}

// checkCode fails t unless err carries code (none when code is "").
func checkCode(t *testing.T, call string, err error, code s3err.Code) {
	t.Helper()
	if got := s3err.CodeOf(err); got != code {
		t.Fatalf("%s error = %v, want code %q", call, err, code)
	}
}

// parts builds n CompleteMultipartUpload parts numbered from 1.
func parts(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, `<Part><PartNumber>%d</PartNumber><ETag>"e%d"</ETag></Part>`, i, i)
	}
	return b.String()
}

// objects builds n Delete objects named k1, k2, ….
func objects(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, `<Object><Key>k%d</Key></Object>`, i)
	}
	return b.String()
}

type completeCase struct {
	name    string
	body    string
	limit   int64 // 0 means s3xml.MaxCompleteBody
	want    s3xml.CompleteMultipartUpload
	wantErr s3err.Code
}

func completeCases(t testing.TB) []completeCase {
	three := []s3xml.CompletedPart{
		{PartNumber: 1, ETag: `"a54357aff0632cce46d942af68356b38"`},
		{PartNumber: 2, ETag: `"0c78aef83f66abc1fa1e8477f296d394"`},
		{PartNumber: 3, ETag: `"acbd18db4cc2f85cedef654fccc4a4d8"`},
	}
	one := []s3xml.CompletedPart{{PartNumber: 1, ETag: `"e1"`}}
	const root = "CompleteMultipartUpload"
	wrap := func(inner string) string { return "<" + root + ">" + inner + "</" + root + ">" }
	return []completeCase{
		{name: "aws example", body: testdata(t, "CompleteMultipartUpload.xml"), want: s3xml.CompleteMultipartUpload{Parts: three}},
		{name: "checksums with namespace", body: testdata(t, "CompleteMultipartUpload-checksum.xml"), want: s3xml.CompleteMultipartUpload{Parts: []s3xml.CompletedPart{
			{PartNumber: 1, ETag: `"a54357aff0632cce46d942af68356b38"`, Checksums: s3xml.Checksums{ChecksumCRC32: "i9aeUg=="}},
			{PartNumber: 10000, ETag: `"0c78aef83f66abc1fa1e8477f296d394"`, Checksums: s3xml.Checksums{ChecksumCRC32: "AAAAAA=="}},
		}}},
		{name: "prefixed namespace", body: `<s3:CompleteMultipartUpload xmlns:s3="http://s3.amazonaws.com/doc/2006-03-01/"><s3:Part><s3:PartNumber>1</s3:PartNumber><s3:ETag>"e1"</s3:ETag></s3:Part></s3:CompleteMultipartUpload>`, want: s3xml.CompleteMultipartUpload{Parts: one}},
		{name: "unknown elements ignored", body: wrap(`<Part><PartNumber>1</PartNumber><ETag>"e1"</ETag><ChecksumBLAKE3>x</ChecksumBLAKE3></Part><Extra/>`), want: s3xml.CompleteMultipartUpload{Parts: one}},
		{name: "newer checksums", body: wrap(`<Part><ChecksumSHA512>s</ChecksumSHA512><ETag>"e1"</ETag><PartNumber>1</PartNumber></Part>` +
			`<Part><ChecksumMD5>m</ChecksumMD5><ChecksumXXHASH64>x64</ChecksumXXHASH64><ChecksumXXHASH3>x3</ChecksumXXHASH3><ChecksumXXHASH128>x128</ChecksumXXHASH128><ETag>"e2"</ETag><PartNumber>2</PartNumber></Part>`),
			want: s3xml.CompleteMultipartUpload{Parts: []s3xml.CompletedPart{
				{PartNumber: 1, ETag: `"e1"`, Checksums: s3xml.Checksums{ChecksumSHA512: "s"}},
				{PartNumber: 2, ETag: `"e2"`, Checksums: s3xml.Checksums{ChecksumMD5: "m", ChecksumXXHASH64: "x64", ChecksumXXHASH3: "x3", ChecksumXXHASH128: "x128"}},
			}}},
		{name: "comments and whitespace around root", body: "<?xml version=\"1.0\"?>\n<!-- c -->\n" + wrap(parts(1)) + "\n<!-- trailing -->\n", want: s3xml.CompleteMultipartUpload{Parts: one}},
		{name: "out of order left to caller", body: wrap(`<Part><PartNumber>2</PartNumber><ETag>a</ETag></Part><Part><PartNumber>2</PartNumber><ETag>b</ETag></Part>`), want: s3xml.CompleteMultipartUpload{Parts: []s3xml.CompletedPart{{PartNumber: 2, ETag: "a"}, {PartNumber: 2, ETag: "b"}}}},
		{name: "exactly the limit", body: wrap(parts(1)), limit: int64(len(wrap(parts(1)))), want: s3xml.CompleteMultipartUpload{Parts: one}},
		{name: "one byte over the limit", body: wrap(parts(1)), limit: int64(len(wrap(parts(1)))) - 1, wantErr: s3err.MaxMessageLengthExceeded},
		{name: "far over the limit", body: wrap(parts(5000)), limit: 1024, wantErr: s3err.MaxMessageLengthExceeded},
		{name: "empty", body: "", wantErr: s3err.MalformedXML}, // as S3 answers it
		{name: "whitespace only", body: " \n", wantErr: s3err.MalformedXML},
		{name: "no parts", body: wrap(""), wantErr: s3err.MalformedXML},
		{name: "self-closing root", body: "<CompleteMultipartUpload/>", wantErr: s3err.MalformedXML},
		{name: "part number 0", body: wrap(`<Part><PartNumber>0</PartNumber><ETag>a</ETag></Part>`), wantErr: s3err.InvalidArgument},
		{name: "part number 10001", body: wrap(`<Part><PartNumber>10001</PartNumber><ETag>a</ETag></Part>`), wantErr: s3err.InvalidArgument},
		{name: "negative part number", body: wrap(`<Part><PartNumber>-1</PartNumber><ETag>a</ETag></Part>`), wantErr: s3err.InvalidArgument},
		{name: "missing part number", body: wrap(`<Part><ETag>a</ETag></Part>`), wantErr: s3err.InvalidArgument},
		{name: "part number not an integer", body: wrap(`<Part><PartNumber>one</PartNumber><ETag>a</ETag></Part>`), wantErr: s3err.MalformedXML},
		{name: "part number overflows", body: wrap(`<Part><PartNumber>99999999999999999999</PartNumber><ETag>a</ETag></Part>`), wantErr: s3err.MalformedXML},
		{name: "wrong root", body: "<Delete>" + parts(1) + "</Delete>", wantErr: s3err.MalformedXML},
		{name: "wrong namespace", body: `<CompleteMultipartUpload xmlns="urn:example">` + parts(1) + "</CompleteMultipartUpload>", wantErr: s3err.MalformedXML},
		{name: "unclosed root", body: "<CompleteMultipartUpload>" + parts(1), wantErr: s3err.MalformedXML},
		{name: "mismatched end tag", body: "<CompleteMultipartUpload><Part></Parts></CompleteMultipartUpload>", wantErr: s3err.MalformedXML},
		{name: "trailing element", body: wrap(parts(1)) + wrap(parts(1)), wantErr: s3err.MalformedXML},
		{name: "trailing text", body: wrap(parts(1)) + "garbage", wantErr: s3err.MalformedXML},
		{name: "text before root", body: "x" + wrap(parts(1)), wantErr: s3err.MalformedXML},
		{name: "doctype with entity", body: `<!DOCTYPE CompleteMultipartUpload [<!ENTITY e "x">]>` + wrap(`<Part><PartNumber>1</PartNumber><ETag>&e;</ETag></Part>`), wantErr: s3err.MalformedXML},
		{name: "undefined entity", body: wrap(`<Part><PartNumber>1</PartNumber><ETag>&bogus;</ETag></Part>`), wantErr: s3err.MalformedXML},
		{name: "invalid utf-8", body: wrap("<Part><PartNumber>1</PartNumber><ETag>\xff</ETag></Part>"), wantErr: s3err.MalformedXML},
		{name: "control character reference", body: wrap(`<Part><PartNumber>1</PartNumber><ETag>&#x1;</ETag></Part>`), wantErr: s3err.MalformedXML},
		{name: "non-UTF-8 encoding", body: `<?xml version="1.0" encoding="ISO-8859-1"?>` + wrap(parts(1)), wantErr: s3err.MalformedXML},
		{name: "not xml", body: `{"Parts":[]}`, wantErr: s3err.MalformedXML},
	}
}

func TestDecodeCompleteMultipartUpload(t *testing.T) {
	for _, tc := range completeCases(t) {
		for rname, r := range readers(tc.body) {
			t.Run(tc.name+"/"+rname, func(t *testing.T) {
				limit := tc.limit
				if limit == 0 {
					limit = s3xml.MaxCompleteBody
				}
				got, err := s3xml.DecodeCompleteMultipartUpload(r, limit)
				checkCode(t, "DecodeCompleteMultipartUpload", err, tc.wantErr)
				if diff := cmp.Diff(tc.want, got, ignoreXMLName); diff != "" {
					t.Errorf("DecodeCompleteMultipartUpload mismatch (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func TestDecodeCompleteMultipartUploadErrorFields(t *testing.T) {
	_, err := s3xml.DecodeCompleteMultipartUpload(strings.NewReader(
		`<CompleteMultipartUpload><Part><PartNumber>10001</PartNumber><ETag>a</ETag></Part></CompleteMultipartUpload>`), 1024)
	e, ok := errors.AsType[*s3err.Error](err)
	if !ok {
		t.Fatalf("error %v is not an *s3err.Error", err)
	}
	want := []s3err.Field{{Name: "ArgumentName", Value: "partNumber"}, {Name: "ArgumentValue", Value: "10001"}}
	if diff := cmp.Diff(want, e.Extra); diff != "" {
		t.Errorf("extra fields mismatch (-want +got):\n%s", diff)
	}
	if e.Status() != 400 {
		t.Errorf("status = %d, want 400", e.Status())
	}
}

type deleteCase struct {
	name    string
	body    string
	want    s3xml.Delete
	wantErr s3err.Code
}

func deleteCases(t testing.TB) []deleteCase {
	zero := int64(0)
	wrap := func(inner string) string { return "<Delete>" + inner + "</Delete>" }
	thousand := make([]s3xml.ObjectIdentifier, 1000)
	for i := range thousand {
		thousand[i] = s3xml.ObjectIdentifier{Key: fmt.Sprintf("k%d", i+1)}
	}
	return []deleteCase{
		{name: "aws example", body: testdata(t, "Delete.xml"), want: s3xml.Delete{Objects: []s3xml.ObjectIdentifier{{Key: "sample1.txt"}, {Key: "sample2.txt"}}}},
		{name: "quiet with versions and conditions", body: testdata(t, "Delete-quiet-versions.xml"), want: s3xml.Delete{Quiet: true, Objects: []s3xml.ObjectIdentifier{
			{Key: "SampleDocument.txt", VersionID: "OYcLXagmS.WaD..oyH4KRguB95_YhLs7"},
			{Key: "a & b <c> 😀", ETag: `"fba9dede5f27731c9771645a39863328"`, Size: &zero},
		}}},
		{name: "quiet false", body: wrap(`<Object><Key>k1</Key></Object><Quiet>false</Quiet>`), want: s3xml.Delete{Objects: thousand[:1]}},
		{name: "key of spaces kept", body: wrap(`<Object><Key> </Key></Object>`), want: s3xml.Delete{Objects: []s3xml.ObjectIdentifier{{Key: " "}}}},
		{name: "key with newline reference", body: wrap(`<Object><Key>a&#xA;b&#xD;</Key></Object>`), want: s3xml.Delete{Objects: []s3xml.ObjectIdentifier{{Key: "a\nb\r"}}}},
		{name: "1000 objects", body: wrap(objects(1000)), want: s3xml.Delete{Objects: thousand}},
		{name: "1001 objects", body: wrap(objects(1001)), wantErr: s3err.MalformedXML},
		{name: "no objects", body: wrap(`<Quiet>true</Quiet>`), wantErr: s3err.MalformedXML},
		{name: "empty key", body: wrap(`<Object><Key></Key></Object>`), wantErr: s3err.MalformedXML},
		{name: "missing key", body: wrap(`<Object><VersionId>v</VersionId></Object>`), wantErr: s3err.MalformedXML},
		{name: "quiet not a boolean", body: wrap(`<Object><Key>k</Key></Object><Quiet>maybe</Quiet>`), wantErr: s3err.MalformedXML},
		{name: "size not a number", body: wrap(`<Object><Key>k</Key><Size>big</Size></Object>`), wantErr: s3err.MalformedXML},
		{name: "empty", body: "", wantErr: s3err.MissingRequestBodyError},
		{name: "wrong root", body: `<CompleteMultipartUpload><Object><Key>k</Key></Object></CompleteMultipartUpload>`, wantErr: s3err.MalformedXML},
		{name: "truncated", body: `<Delete><Object><Key>k</Key></Obj`, wantErr: s3err.MalformedXML},
		{name: "too large", body: wrap(strings.Repeat(" ", s3xml.MaxDeleteBody)), wantErr: s3err.MaxMessageLengthExceeded},
	}
}

func TestDecodeDeleteObjects(t *testing.T) {
	for _, tc := range deleteCases(t) {
		for rname, r := range readers(tc.body) {
			t.Run(tc.name+"/"+rname, func(t *testing.T) {
				got, err := s3xml.DecodeDeleteObjects(r, s3xml.MaxDeleteBody)
				checkCode(t, "DecodeDeleteObjects", err, tc.wantErr)
				if diff := cmp.Diff(tc.want, got, ignoreXMLName); diff != "" {
					t.Errorf("DecodeDeleteObjects mismatch (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func TestDecodeAccessControlPolicy(t *testing.T) {
	owner := s3xml.Owner{ID: "75aa57f09aa0c8caeab4f8c24e99d10f8e7faeebf76c078efc7c6caea54ba06a", DisplayName: "CustomersName@amazon.com"}
	grant := func(grantee, perm string) string {
		return `<AccessControlPolicy><Owner><ID>o</ID></Owner><AccessControlList><Grant>` + grantee +
			`<Permission>` + perm + `</Permission></Grant></AccessControlList></AccessControlPolicy>`
	}
	const xsi = `xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"`
	groupRead := []s3xml.Grant{{Grantee: s3xml.Grantee{Type: "Group", URI: "http://acs.amazonaws.com/groups/global/AllUsers"}, Permission: "READ"}}
	for _, tc := range []struct {
		name    string
		body    string
		want    s3xml.AccessControlPolicy
		wantErr s3err.Code
	}{
		{name: "aws example", body: testdata(t, "AccessControlPolicy.xml"), want: s3xml.AccessControlPolicy{Owner: owner, Grants: []s3xml.Grant{
			{Grantee: s3xml.Grantee{Type: "CanonicalUser", ID: owner.ID, DisplayName: owner.DisplayName}, Permission: "FULL_CONTROL"},
			groupRead[0],
			{Grantee: s3xml.Grantee{Type: "AmazonCustomerByEmail", EmailAddress: "xyz@amazon.com"}, Permission: "WRITE_ACP"},
		}}},
		{name: "xsi declared on the root", body: `<AccessControlPolicy xmlns="http://s3.amazonaws.com/doc/2006-03-01/" xmlns:i="http://www.w3.org/2001/XMLSchema-instance"><Owner><ID>o</ID></Owner><AccessControlList><Grant><Grantee i:type="Group"><URI>http://acs.amazonaws.com/groups/global/AllUsers</URI></Grantee><Permission>READ</Permission></Grant></AccessControlList></AccessControlPolicy>`,
			want: s3xml.AccessControlPolicy{Owner: s3xml.Owner{ID: "o"}, Grants: groupRead}},
		{name: "xsi prefix undeclared", body: grant(`<Grantee xsi:type="Group"><URI>http://acs.amazonaws.com/groups/global/AllUsers</URI></Grantee>`, "READ"),
			want: s3xml.AccessControlPolicy{Owner: s3xml.Owner{ID: "o"}, Grants: groupRead}},
		{name: "no grants", body: `<AccessControlPolicy><Owner><ID>o</ID></Owner><AccessControlList/></AccessControlPolicy>`, want: s3xml.AccessControlPolicy{Owner: s3xml.Owner{ID: "o"}}},
		{name: "unknown permission", body: grant(`<Grantee `+xsi+` xsi:type="CanonicalUser"><ID>x</ID></Grantee>`, "EVERYTHING"), wantErr: s3err.MalformedACLError},
		{name: "no grantee type", body: grant(`<Grantee><ID>x</ID></Grantee>`, "READ"), wantErr: s3err.MalformedACLError},
		{name: "type in another namespace", body: grant(`<Grantee xmlns:t="urn:x" t:type="CanonicalUser"><ID>x</ID></Grantee>`, "READ"), wantErr: s3err.MalformedACLError},
		{name: "unknown grantee type", body: grant(`<Grantee `+xsi+` xsi:type="Robot"><ID>x</ID></Grantee>`, "READ"), wantErr: s3err.MalformedACLError},
		{name: "canonical user without ID", body: grant(`<Grantee `+xsi+` xsi:type="CanonicalUser"><DisplayName>x</DisplayName></Grantee>`, "READ"), wantErr: s3err.MalformedACLError},
		{name: "group without URI", body: grant(`<Grantee `+xsi+` xsi:type="Group"><ID>x</ID></Grantee>`, "READ"), wantErr: s3err.MalformedACLError},
		{name: "email without address", body: grant(`<Grantee `+xsi+` xsi:type="AmazonCustomerByEmail"></Grantee>`, "READ"), wantErr: s3err.MalformedACLError},
		{name: "not well-formed", body: `<AccessControlPolicy><Owner>`, wantErr: s3err.MalformedACLError},
		{name: "wrong root", body: `<Policy/>`, wantErr: s3err.MalformedACLError},
		{name: "empty", body: "", wantErr: s3err.MissingRequestBodyError},
		{name: "too large", body: strings.Repeat(" ", s3xml.MaxConfigBody+1), wantErr: s3err.MaxMessageLengthExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s3xml.DecodeAccessControlPolicy(strings.NewReader(tc.body), s3xml.MaxConfigBody)
			checkCode(t, "DecodeAccessControlPolicy", err, tc.wantErr)
			if diff := cmp.Diff(tc.want, got, ignoreXMLName); diff != "" {
				t.Errorf("DecodeAccessControlPolicy mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeCreateBucketConfiguration(t *testing.T) {
	for _, tc := range []struct {
		name    string
		body    string
		want    s3xml.CreateBucketConfiguration
		wantErr s3err.Code
	}{
		{name: "aws example", body: testdata(t, "CreateBucketConfiguration.xml"), want: s3xml.CreateBucketConfiguration{LocationConstraint: "Europe"}},
		{name: "no namespace", body: `<CreateBucketConfiguration><LocationConstraint>eu-west-1</LocationConstraint></CreateBucketConfiguration>`, want: s3xml.CreateBucketConfiguration{LocationConstraint: "eu-west-1"}},
		{name: "empty body means default region", body: ""},
		{name: "empty configuration", body: `<CreateBucketConfiguration/>`},
		{name: "whitespace only", body: "\n", wantErr: s3err.MalformedXML},
		{name: "wrong root", body: `<LocationConstraint>eu-west-1</LocationConstraint>`, wantErr: s3err.MalformedXML},
		{name: "too large", body: strings.Repeat(" ", s3xml.MaxConfigBody+1), wantErr: s3err.MaxMessageLengthExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s3xml.DecodeCreateBucketConfiguration(strings.NewReader(tc.body), s3xml.MaxConfigBody)
			checkCode(t, "DecodeCreateBucketConfiguration", err, tc.wantErr)
			if diff := cmp.Diff(tc.want, got, ignoreXMLName); diff != "" {
				t.Errorf("DecodeCreateBucketConfiguration mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecode(t *testing.T) {
	t.Run("versioning configuration", func(t *testing.T) {
		var got s3xml.VersioningConfiguration
		if err := s3xml.Decode(strings.NewReader(testdata(t, "VersioningConfiguration.xml")), s3xml.MaxConfigBody, &got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(s3xml.VersioningConfiguration{Status: "Enabled"}, got, ignoreXMLName); diff != "" {
			t.Errorf("mismatch (-want +got):\n%s", diff)
		}
	})
	t.Run("namespace normalized", func(t *testing.T) {
		for _, body := range []string{`<Delete><Object><Key>k</Key></Object></Delete>`, `<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Object><Key>k</Key></Object></Delete>`} {
			var got s3xml.Delete
			if err := s3xml.Decode(strings.NewReader(body), 1024, &got); err != nil {
				t.Fatal(err)
			}
			if got.XMLName.Space != s3xml.Namespace || got.XMLName.Local != "Delete" {
				t.Errorf("Decode(%q) XMLName = %v, want {%s Delete}", body, got.XMLName, s3xml.Namespace)
			}
		}
	})
	t.Run("optional body present", func(t *testing.T) {
		var got s3xml.VersioningConfiguration
		present, err := s3xml.DecodeOptional(strings.NewReader(`<VersioningConfiguration><Status>Suspended</Status></VersioningConfiguration>`), 1024, &got)
		if err != nil || !present || got.Status != "Suspended" {
			t.Errorf("DecodeOptional = %v, %v, %+v; want true, nil, Suspended", present, err, got)
		}
	})
	t.Run("optional body absent", func(t *testing.T) {
		got := s3xml.VersioningConfiguration{Status: "untouched"}
		present, err := s3xml.DecodeOptional(strings.NewReader(""), 1024, &got)
		if err != nil || present || got.Status != "untouched" {
			t.Errorf("DecodeOptional = %v, %v, %+v; want false, nil, untouched", present, err, got)
		}
	})
	t.Run("reader s3 error keeps its code", func(t *testing.T) {
		r := io.MultiReader(strings.NewReader("<Delete>"), iotest.ErrReader(s3err.New(s3err.XAmzContentSHA256Mismatch, "")))
		var got s3xml.Delete
		checkCode(t, "Decode", s3xml.Decode(r, 1024, &got), s3err.XAmzContentSHA256Mismatch)
	})
	t.Run("reader error is wrapped", func(t *testing.T) {
		errBroken := errors.New("connection reset")
		var got s3xml.Delete
		err := s3xml.Decode(iotest.ErrReader(errBroken), 1024, &got)
		if !errors.Is(err, errBroken) {
			t.Errorf("Decode error = %v, want it to wrap %v", err, errBroken)
		}
	})
	t.Run("oversized reader is not drained", func(t *testing.T) {
		r := &countingReader{r: strings.NewReader(strings.Repeat("x", 1<<20))}
		var got s3xml.Delete
		checkCode(t, "Decode", s3xml.Decode(r, 100, &got), s3err.MaxMessageLengthExceeded)
		if r.n > 101 {
			t.Errorf("Decode read %d bytes with limit 100, want at most 101", r.n)
		}
	})
	for _, tc := range []struct {
		name  string
		limit int64
		v     any
	}{
		{"non-positive limit", 0, &s3xml.Delete{}},
		{"not a pointer", 1024, s3xml.Delete{}},
		{"nil", 1024, nil},
		{"no XMLName", 1024, &struct{ Key string }{}},
		{"XMLName without name", 1024, &struct {
			XMLName struct{} `xml:"Delete"`
		}{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := s3xml.Decode(strings.NewReader("<Delete/>"), tc.limit, tc.v)
			if err == nil {
				t.Fatal("Decode succeeded, want a usage error")
			}
			if _, ok := errors.AsType[*s3err.Error](err); ok {
				t.Errorf("Decode error = %v, want a plain error for a programming mistake", err)
			}
		})
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// ignoreXMLName ignores the XMLName fields that Decode sets.
var ignoreXMLName = cmp.FilterPath(func(p cmp.Path) bool {
	sf, ok := p.Last().(cmp.StructField)
	return ok && sf.Name() == "XMLName"
}, cmp.Ignore())

// roundTrip encodes v, decodes the result with decode and returns it.
func roundTrip[T any](t *testing.T, v T, decode func(io.Reader, int64) (T, error)) T {
	t.Helper()
	var buf bytes.Buffer
	if err := s3xml.Encode(&buf, v); err != nil {
		t.Fatalf("Encode(%+v): %v", v, err)
	}
	got, err := decode(&buf, 1<<30)
	if err != nil {
		t.Fatalf("decoding the encoding of %+v: %v\n%s", v, err, buf.Bytes())
	}
	return got
}

type taggingCase struct {
	name    string
	body    string
	want    s3xml.Tagging
	wantErr s3err.Code
}

func taggingCases() []taggingCase {
	str := func(s string) *string { return &s }
	wrap := func(inner string) string { return "<Tagging><TagSet>" + inner + "</TagSet></Tagging>" }
	return []taggingCase{
		{name: "aws example", body: `<Tagging xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><TagSet><Tag><Key>Key4</Key><Value>Value4</Value></Tag></TagSet></Tagging>`,
			want: s3xml.Tagging{TagSet: s3xml.TagSet{Tags: []s3xml.Tag{{Key: str("Key4"), Value: "Value4"}}}}},
		{name: "two tags, empty value", body: wrap(`<Tag><Key>a</Key><Value></Value></Tag><Tag><Key>b c</Key><Value>ä</Value></Tag>`),
			want: s3xml.Tagging{TagSet: s3xml.TagSet{Tags: []s3xml.Tag{{Key: str("a")}, {Key: str("b c"), Value: "ä"}}}}},
		{name: "no value element", body: wrap(`<Tag><Key>a</Key></Tag>`), want: s3xml.Tagging{TagSet: s3xml.TagSet{Tags: []s3xml.Tag{{Key: str("a")}}}}},
		{name: "empty tag set", body: wrap(``), want: s3xml.Tagging{}},
		{name: "no key", body: wrap(`<Tag><Value>v</Value></Tag>`), wantErr: s3err.MalformedXML},
		{name: "no tag set", body: `<Tagging></Tagging>`, wantErr: s3err.MalformedXML},
		{name: "two tag sets", body: `<Tagging><TagSet></TagSet><TagSet></TagSet></Tagging>`, wantErr: s3err.MalformedXML},
		{name: "two keys", body: wrap(`<Tag><Key>a</Key><Key>b</Key><Value>v</Value></Tag>`), wantErr: s3err.MalformedXML},
		{name: "unknown element", body: wrap(`<Tag><Key>a</Key><Colour>v</Colour></Tag>`), wantErr: s3err.MalformedXML},
		{name: "not xml", body: `Tagging`, wantErr: s3err.MalformedXML},
		{name: "wrong root", body: `<Delete/>`, wantErr: s3err.MalformedXML},
		{name: "empty", body: ``, wantErr: s3err.MissingRequestBodyError},
		{name: "too large", body: wrap(strings.Repeat(" ", s3xml.MaxConfigBody)), wantErr: s3err.MaxMessageLengthExceeded},
	}
}

func TestDecodeTagging(t *testing.T) {
	for _, tc := range taggingCases() {
		for rname, r := range readers(tc.body) {
			t.Run(tc.name+"/"+rname, func(t *testing.T) {
				got, err := s3xml.DecodeTagging(r, s3xml.MaxConfigBody)
				checkCode(t, "DecodeTagging", err, tc.wantErr)
				if diff := cmp.Diff(tc.want, got, ignoreXMLName, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("DecodeTagging mismatch (-want +got):\n%s", diff)
				}
			})
		}
	}
}

type lifecycleCase struct {
	name    string
	body    string
	want    s3xml.LifecycleConfiguration
	wantErr s3err.Code
}

func lifecycleCases() []lifecycleCase {
	str := func(s string) *string { return &s }
	wrap := func(rules string) string {
		return `<LifecycleConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">` + rules + `</LifecycleConfiguration>`
	}
	rule := func(inner string) string { return wrap("<Rule>" + inner + "</Rule>") }
	return []lifecycleCase{
		{name: "aws example", body: wrap(`<Rule><ID>id1</ID><Filter><And><Prefix>documents/</Prefix>` +
			`<Tag><Key>key1</Key><Value>value1</Value></Tag><Tag><Key>key2</Key><Value>value2</Value></Tag></And></Filter>` +
			`<Status>Enabled</Status><Transition><Days>365</Days><StorageClass>GLACIER</StorageClass></Transition>` +
			`<Expiration><Days>3650</Days></Expiration></Rule>` +
			`<Rule><ID>id2</ID><Filter><Prefix>logs/</Prefix></Filter><Status>Enabled</Status>` +
			`<NoncurrentVersionExpiration><NoncurrentDays>30</NoncurrentDays><NewerNoncurrentVersions>3</NewerNoncurrentVersions></NoncurrentVersionExpiration>` +
			`<AbortIncompleteMultipartUpload><DaysAfterInitiation>7</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule>`),
			want: s3xml.LifecycleConfiguration{Rules: []s3xml.LifecycleRule{
				{
					ID: []string{"id1"}, Status: []string{"Enabled"},
					Filter: []s3xml.LifecycleFilter{{And: []s3xml.LifecycleAnd{{
						Prefix: []string{"documents/"},
						Tags:   []s3xml.Tag{{Key: str("key1"), Value: "value1"}, {Key: str("key2"), Value: "value2"}},
					}}}},
					Transitions: []s3xml.LifecycleTransition{{Days: []int32{365}, StorageClass: []string{"GLACIER"}}},
					Expiration:  []s3xml.LifecycleExpiration{{Days: []int32{3650}}},
				},
				{
					ID: []string{"id2"}, Status: []string{"Enabled"},
					Filter:                         []s3xml.LifecycleFilter{{Prefix: []string{"logs/"}}},
					NoncurrentVersionExpiration:    []s3xml.NoncurrentVersionExpiration{{NoncurrentDays: []int32{30}, NewerNoncurrentVersions: []int32{3}}},
					AbortIncompleteMultipartUpload: []s3xml.AbortIncompleteMultipartUpload{{DaysAfterInitiation: []int32{7}}},
				},
			}}},
		{name: "legacy prefix, date, marker", body: wrap(`<Rule><Prefix></Prefix><Status>Disabled</Status>` +
			`<Expiration><Date>2027-01-01T00:00:00.000Z</Date></Expiration></Rule>` +
			`<Rule><Prefix>a</Prefix><Status>Enabled</Status><Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration></Rule>`),
			want: s3xml.LifecycleConfiguration{Rules: []s3xml.LifecycleRule{
				{Prefix: []string{""}, Status: []string{"Disabled"}, Expiration: []s3xml.LifecycleExpiration{{Date: []string{"2027-01-01T00:00:00.000Z"}}}},
				{Prefix: []string{"a"}, Status: []string{"Enabled"}, Expiration: []s3xml.LifecycleExpiration{{ExpiredObjectDeleteMarker: []bool{true}}}},
			}}},
		{name: "empty filter, sizes", body: rule(`<Filter></Filter><Status>Enabled</Status>` +
			`<NoncurrentVersionTransition><NoncurrentDays>1</NoncurrentDays><StorageClass>GLACIER</StorageClass></NoncurrentVersionTransition></Rule>` +
			`<Rule><Filter><ObjectSizeGreaterThan>10</ObjectSizeGreaterThan></Filter><Status>Enabled</Status>` +
			`<Expiration><Days>1</Days></Expiration>`),
			want: s3xml.LifecycleConfiguration{Rules: []s3xml.LifecycleRule{
				{Filter: []s3xml.LifecycleFilter{{}}, Status: []string{"Enabled"},
					NoncurrentVersionTransitions: []s3xml.NoncurrentVersionTransition{{NoncurrentDays: []int32{1}, StorageClass: []string{"GLACIER"}}}},
				{Filter: []s3xml.LifecycleFilter{{ObjectSizeGreaterThan: []int64{10}}}, Status: []string{"Enabled"},
					Expiration: []s3xml.LifecycleExpiration{{Days: []int32{1}}}},
			}}},
		{name: "no rules", body: wrap(``), want: s3xml.LifecycleConfiguration{}},
		{name: "no namespace", body: `<LifecycleConfiguration><Rule><Status>Enabled</Status></Rule></LifecycleConfiguration>`,
			want: s3xml.LifecycleConfiguration{Rules: []s3xml.LifecycleRule{{Status: []string{"Enabled"}}}}},
		{name: "two expirations", body: rule(`<Status>Enabled</Status><Expiration><Days>1</Days></Expiration><Expiration><Days>2</Days></Expiration>`), wantErr: s3err.MalformedXML},
		{name: "two IDs", body: rule(`<ID>a</ID><ID>b</ID>`), wantErr: s3err.MalformedXML},
		{name: "two filter prefixes", body: rule(`<Filter><Prefix>a</Prefix><Prefix>b</Prefix></Filter>`), wantErr: s3err.MalformedXML},
		{name: "two and prefixes", body: rule(`<Filter><And><Prefix>a</Prefix><Prefix>b</Prefix></And></Filter>`), wantErr: s3err.MalformedXML},
		{name: "two days", body: rule(`<Expiration><Days>1</Days><Days>2</Days></Expiration>`), wantErr: s3err.MalformedXML},
		{name: "two transition classes", body: rule(`<Transition><Days>1</Days><StorageClass>GLACIER</StorageClass><StorageClass>GLACIER</StorageClass></Transition>`), wantErr: s3err.MalformedXML},
		{name: "two noncurrent transition days", body: rule(`<NoncurrentVersionTransition><NoncurrentDays>1</NoncurrentDays><NoncurrentDays>1</NoncurrentDays></NoncurrentVersionTransition>`), wantErr: s3err.MalformedXML},
		{name: "two noncurrent days", body: rule(`<NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays><NoncurrentDays>1</NoncurrentDays></NoncurrentVersionExpiration>`), wantErr: s3err.MalformedXML},
		{name: "two abort days", body: rule(`<AbortIncompleteMultipartUpload><DaysAfterInitiation>1</DaysAfterInitiation><DaysAfterInitiation>1</DaysAfterInitiation></AbortIncompleteMultipartUpload>`), wantErr: s3err.MalformedXML},
		{name: "tag without key", body: rule(`<Filter><Tag><Value>v</Value></Tag></Filter>`), wantErr: s3err.MalformedXML},
		{name: "and tag without key", body: rule(`<Filter><And><Tag><Value>v</Value></Tag></And></Filter>`), wantErr: s3err.MalformedXML},
		{name: "days not a number", body: rule(`<Expiration><Days>one</Days></Expiration>`), wantErr: s3err.MalformedXML},
		{name: "days past int32", body: rule(`<Expiration><Days>2147483648</Days></Expiration>`), wantErr: s3err.MalformedXML},
		{name: "marker not a bool", body: rule(`<Expiration><ExpiredObjectDeleteMarker>yes</ExpiredObjectDeleteMarker></Expiration>`), wantErr: s3err.MalformedXML},
		{name: "wrong root", body: `<Lifecycle/>`, wantErr: s3err.MalformedXML},
		{name: "empty", body: ``, wantErr: s3err.MissingRequestBodyError},
		{name: "too large", body: wrap(strings.Repeat(" ", s3xml.MaxLifecycleBody)), wantErr: s3err.MaxMessageLengthExceeded},
	}
}

func TestDecodeLifecycleConfiguration(t *testing.T) {
	for _, tc := range lifecycleCases() {
		for rname, r := range readers(tc.body) {
			t.Run(tc.name+"/"+rname, func(t *testing.T) {
				got, err := s3xml.DecodeLifecycleConfiguration(r, s3xml.MaxLifecycleBody)
				checkCode(t, "DecodeLifecycleConfiguration", err, tc.wantErr)
				if diff := cmp.Diff(tc.want, got, ignoreXMLName, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("DecodeLifecycleConfiguration mismatch (-want +got):\n%s", diff)
				}
			})
		}
	}
}

type corsCase struct {
	name    string
	body    string
	want    s3xml.CORSConfiguration
	wantErr s3err.Code
}

// corsCases are PutBucketCors bodies. S3 validates this document against
// its schema, so what encoding/xml would let pass (an unknown element, a
// value given twice, an empty number) is MalformedXML.
func corsCases(t testing.TB) []corsCase {
	intp := func(n int) *int { return &n }
	wrap := func(rules ...string) string {
		return `<CORSConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><CORSRule>` +
			strings.Join(rules, "</CORSRule><CORSRule>") + `</CORSRule></CORSConfiguration>`
	}
	const minimal = `<AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod>`
	one := func(r s3xml.CORSRule) s3xml.CORSConfiguration {
		if r.AllowedOrigins == nil {
			r.AllowedOrigins, r.AllowedMethods = []string{"*"}, []string{"GET"}
		}
		return s3xml.CORSConfiguration{Rules: []s3xml.CORSRule{r}}
	}
	return []corsCase{
		{name: "aws example", body: testdata(t, "CORSConfiguration.xml"), want: s3xml.CORSConfiguration{Rules: []s3xml.CORSRule{
			{AllowedOrigins: []string{"http://www.example.com"}, AllowedMethods: []string{"PUT", "POST", "DELETE"},
				AllowedHeaders: []string{"*"}, MaxAgeSeconds: intp(3000), ExposeHeaders: []string{"x-amz-server-side-encryption", "x-amz-request-id", "x-amz-id-2"}},
			{AllowedOrigins: []string{"*"}, AllowedMethods: []string{"GET"}},
		}}},
		{name: "minimal, no namespace", body: `<CORSConfiguration><CORSRule>` + minimal + `</CORSRule></CORSConfiguration>`, want: one(s3xml.CORSRule{})},
		{name: "every element, any order", body: wrap(`<MaxAgeSeconds>0</MaxAgeSeconds><ExposeHeader>ETag</ExposeHeader><ID>r</ID>` +
			`<AllowedHeader>a</AllowedHeader>` + minimal + `<AllowedHeader>b</AllowedHeader>`),
			want: one(s3xml.CORSRule{ID: "r", AllowedHeaders: []string{"a", "b"}, ExposeHeaders: []string{"ETag"}, MaxAgeSeconds: intp(0)})},
		{name: "empty strings", body: wrap(`<ID></ID><AllowedOrigin/><AllowedMethod>GET</AllowedMethod><AllowedHeader></AllowedHeader>`),
			want: one(s3xml.CORSRule{AllowedOrigins: []string{""}, AllowedMethods: []string{"GET"}, AllowedHeaders: []string{""}})},
		{name: "max age with spaces", body: wrap(minimal + "<MaxAgeSeconds> 60\n</MaxAgeSeconds>"), want: one(s3xml.CORSRule{MaxAgeSeconds: intp(60)})},
		{name: "comments and whitespace", body: wrap("\n  <!-- c -->" + minimal + "<ID>a<!-- c -->b</ID>\n"), want: one(s3xml.CORSRule{ID: "ab"})},
		{name: "prefixed S3 namespace", body: `<s3:CORSConfiguration xmlns:s3="http://s3.amazonaws.com/doc/2006-03-01/"><s3:CORSRule>` +
			`<s3:AllowedOrigin>*</s3:AllowedOrigin><s3:AllowedMethod>GET</s3:AllowedMethod></s3:CORSRule></s3:CORSConfiguration>`, want: one(s3xml.CORSRule{})},
		{name: "no rules", body: `<CORSConfiguration/>`, want: s3xml.CORSConfiguration{}}, // cors.Validate refuses it

		{name: "plural AllowedHeaders", body: wrap(minimal + "<AllowedHeaders>*</AllowedHeaders>"), wantErr: s3err.MalformedXML},
		{name: "lower-case element", body: wrap(minimal + "<allowedheader>*</allowedheader>"), wantErr: s3err.MalformedXML},
		{name: "unknown empty element", body: wrap(minimal + "<Bogus/>"), wantErr: s3err.MalformedXML},
		{name: "text after the root", body: wrap(minimal) + "x", wantErr: s3err.MalformedXML},
		{name: "unknown element in the root", body: `<CORSConfiguration><CORSRule>` + minimal + `</CORSRule><Owner>me</Owner></CORSConfiguration>`, wantErr: s3err.MalformedXML},
		{name: "rule elements in the root", body: `<CORSConfiguration>` + minimal + `</CORSConfiguration>`, wantErr: s3err.MalformedXML},
		{name: "rule in a rule", body: wrap(minimal + "<CORSRule>" + minimal + "</CORSRule>"), wantErr: s3err.MalformedXML},
		{name: "element in another namespace", body: wrap(minimal + `<AllowedHeader xmlns="urn:other">a</AllowedHeader>`), wantErr: s3err.MalformedXML},
		{name: "two IDs", body: wrap(minimal + "<ID>a</ID><ID>b</ID>"), wantErr: s3err.MalformedXML},
		{name: "two IDs, the first empty", body: wrap(minimal + "<ID></ID><ID>b</ID>"), wantErr: s3err.MalformedXML},
		{name: "two MaxAgeSeconds", body: wrap(minimal + "<MaxAgeSeconds>1</MaxAgeSeconds><MaxAgeSeconds>2</MaxAgeSeconds>"), wantErr: s3err.MalformedXML},
		{name: "empty MaxAgeSeconds", body: wrap(minimal + "<MaxAgeSeconds></MaxAgeSeconds>"), wantErr: s3err.MalformedXML},
		{name: "self-closed MaxAgeSeconds", body: wrap(minimal + "<MaxAgeSeconds/>"), wantErr: s3err.MalformedXML},
		{name: "blank MaxAgeSeconds", body: wrap(minimal + "<MaxAgeSeconds> </MaxAgeSeconds>"), wantErr: s3err.MalformedXML},
		{name: "MaxAgeSeconds not a number", body: wrap(minimal + "<MaxAgeSeconds>soon</MaxAgeSeconds>"), wantErr: s3err.MalformedXML},
		{name: "text in a rule", body: wrap(minimal + "text"), wantErr: s3err.MalformedXML},
		{name: "text in the root", body: `<CORSConfiguration>text<CORSRule>` + minimal + `</CORSRule></CORSConfiguration>`, wantErr: s3err.MalformedXML},
		{name: "element in a value", body: wrap(`<AllowedOrigin><Origin>*</Origin></AllowedOrigin><AllowedMethod>GET</AllowedMethod>`), wantErr: s3err.MalformedXML},
		{name: "not xml", body: `CORS`, wantErr: s3err.MalformedXML},
		{name: "wrong root", body: `<CORSRule>` + minimal + `</CORSRule>`, wantErr: s3err.MalformedXML},
		{name: "empty", body: ``, wantErr: s3err.MissingRequestBodyError},
		{name: "too large", body: wrap(minimal + strings.Repeat(" ", s3xml.MaxConfigBody)), wantErr: s3err.MaxMessageLengthExceeded},
	}
}

func TestDecodeCORSConfiguration(t *testing.T) {
	for _, tc := range corsCases(t) {
		for rname, r := range readers(tc.body) {
			t.Run(tc.name+"/"+rname, func(t *testing.T) {
				got, err := s3xml.DecodeCORSConfiguration(r, s3xml.MaxConfigBody)
				checkCode(t, "DecodeCORSConfiguration", err, tc.wantErr)
				if diff := cmp.Diff(tc.want, got, ignoreXMLName, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("DecodeCORSConfiguration mismatch (-want +got):\n%s", diff)
				}
			})
		}
	}
}
