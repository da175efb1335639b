package s3xml_test

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/coffer-s3/coffer/internal/s3err"
	"github.com/coffer-s3/coffer/internal/s3xml"
)

func TestTime(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   time.Time
		want string
	}{
		{"utc", time.Date(2009, 10, 12, 17, 50, 30, 0, time.UTC), "2009-10-12T17:50:30.000Z"},
		{"milliseconds kept, rest truncated", time.Date(2024, 2, 29, 0, 0, 0, 123_987_654, time.UTC), "2024-02-29T00:00:00.123Z"},
		{"converted to utc", time.Date(2020, 1, 1, 1, 0, 0, 0, time.FixedZone("CET", 3600)), "2020-01-01T00:00:00.000Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := s3xml.Time(tc.in); got != tc.want {
				t.Errorf("Time(%v) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestNeedsURLEncoding(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want bool
	}{
		{"empty", "", false},
		{"plain", "photos/2006/index.html", false},
		{"markup characters", `<a>&"b'`, false},
		{"tab newline carriage return", "a\tb\nc\rd", false},
		{"unicode", "é 😀 日本", false},
		{"replacement character itself", "\uFFFD", false},
		{"nul", "a\x00b", true},
		{"soh", "a\x01", true},
		{"unit separator", "\x1f", true},
		{"invalid utf-8", "bad\xff", true},
		{"truncated utf-8", "\xe6\x97", true},
		{"encoded surrogate", "\xed\xa0\x80", true},
		{"U+FFFE", "\uFFFE", true},
		{"U+FFFF", "\uFFFF", true},
		{"del is valid", "\x7f", false},
		{"C1 control is valid", "\u0085", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := s3xml.NeedsURLEncoding(tc.in); got != tc.want {
				t.Errorf("NeedsURLEncoding(%q) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

// TestEncodeOddKeys checks how keys are written, in the hand-written
// listings and in Text fields of documents encoding/xml writes: keys XML
// 1.0 can carry give a well-formed document a strict parser reads back
// unchanged; a character XML 1.0 cannot carry is written as a character
// reference, as S3 writes it (the document then names the key exactly but
// strict parsers refuse it); invalid UTF-8, which no stored key holds,
// becomes U+FFFD.
func TestEncodeOddKeys(t *testing.T) {
	for _, tc := range []struct {
		key, escaped string
	}{
		{`<a>&"b'`, "&lt;a&gt;&amp;&#34;b&#39;"},
		{"tab\tnl\ncr\r crlf\r\n", "tab&#x9;nl&#xA;cr&#xD; crlf&#xD;&#xA;"},
		{"]]>", "]]&gt;"},
		{"é 😀", "é 😀"},
		{"ctl\x01\x1f", "ctl&#x1;&#x1F;"},
		{"nul\x00", "nul&#x0;"},
		{"nonchar\uFFFE\uFFFF", "nonchar&#xFFFE;&#xFFFF;"},
		{"bad\xff\xfe", "bad\uFFFD\uFFFD"},
	} {
		t.Run(fmt.Sprintf("%q", tc.key), func(t *testing.T) {
			for _, doc := range []any{
				s3xml.ListBucketResultV2{Name: "b", Contents: []s3xml.Object{{Key: s3xml.Text(tc.key)}}, CommonPrefixes: []s3xml.CommonPrefix{{Prefix: s3xml.Text(tc.key)}}},
				s3xml.ListVersionsResult{Name: "b", Versions: []s3xml.ObjectVersion{s3xml.NewVersion(s3xml.Text(tc.key), "v", true, "t", `"e"`, 1)}, CommonPrefixes: []s3xml.CommonPrefix{{Prefix: s3xml.Text(tc.key)}}},
			} {
				var buf bytes.Buffer
				if err := s3xml.Encode(&buf, doc); err != nil {
					t.Fatal(err)
				}
				body := buf.String()
				for _, want := range []string{"<Key>" + tc.escaped + "</Key>", "<Prefix>" + tc.escaped + "</Prefix>"} {
					if !strings.Contains(body, want) {
						t.Errorf("%T: %s not in\n%s", doc, want, body)
					}
				}
				if s3xml.NeedsURLEncoding(tc.key) {
					continue
				}
				if err := wellFormed(buf.Bytes()); err != nil {
					t.Fatalf("not well-formed: %v\n%s", err, body)
				}
			}
			if s3xml.NeedsURLEncoding(tc.key) {
				return
			}
			var buf bytes.Buffer
			if err := s3xml.Encode(&buf, s3xml.ListBucketResultV2{Contents: []s3xml.Object{{Key: s3xml.Text(tc.key)}}}); err != nil {
				t.Fatal(err)
			}
			var out s3xml.ListBucketResultV2
			if err := xml.Unmarshal(buf.Bytes(), &out); err != nil {
				t.Fatal(err)
			}
			if got := string(out.Contents[0].Key); got != tc.key {
				t.Errorf("key %q came back as %q", tc.key, got)
			}
		})
	}
}

// TestRequestRoundTrip checks that the request types encode to documents
// their decoders accept and read back unchanged.
func TestRequestRoundTrip(t *testing.T) {
	size := int64(42)
	t.Run("CompleteMultipartUpload", func(t *testing.T) {
		in := s3xml.CompleteMultipartUpload{Parts: []s3xml.CompletedPart{
			{PartNumber: 1, ETag: `"a"`, Checksums: s3xml.Checksums{ChecksumSHA256: "x", ChecksumCRC32C: "y"}},
			{PartNumber: 10000, ETag: "b"},
		}}
		if diff := cmp.Diff(in, roundTrip(t, in, s3xml.DecodeCompleteMultipartUpload), ignoreXMLName); diff != "" {
			t.Errorf("mismatch (-want +got):\n%s", diff)
		}
	})
	t.Run("Delete", func(t *testing.T) {
		in := s3xml.Delete{Quiet: true, Objects: []s3xml.ObjectIdentifier{
			{Key: "a\nb"}, {Key: "k", VersionID: "v", ETag: `"e"`, LastModifiedTime: "2009-10-12T17:50:30.000Z", Size: &size},
		}}
		if diff := cmp.Diff(in, roundTrip(t, in, s3xml.DecodeDeleteObjects), ignoreXMLName); diff != "" {
			t.Errorf("mismatch (-want +got):\n%s", diff)
		}
	})
	t.Run("AccessControlPolicy", func(t *testing.T) {
		in := s3xml.AccessControlPolicy{Owner: s3xml.Owner{ID: "o"}, Grants: []s3xml.Grant{
			{Grantee: s3xml.Grantee{Type: s3xml.GranteeCanonicalUser, ID: "o", DisplayName: "d"}, Permission: s3xml.PermissionFullControl},
			{Grantee: s3xml.Grantee{Type: s3xml.GranteeGroup, URI: "http://acs.amazonaws.com/groups/global/AllUsers"}, Permission: s3xml.PermissionRead},
		}}
		if diff := cmp.Diff(in, roundTrip(t, in, s3xml.DecodeAccessControlPolicy), ignoreXMLName); diff != "" {
			t.Errorf("mismatch (-want +got):\n%s", diff)
		}
	})
	t.Run("CreateBucketConfiguration", func(t *testing.T) {
		in := s3xml.CreateBucketConfiguration{LocationConstraint: "eu-west-1"}
		if diff := cmp.Diff(in, roundTrip(t, in, s3xml.DecodeCreateBucketConfiguration), ignoreXMLName); diff != "" {
			t.Errorf("mismatch (-want +got):\n%s", diff)
		}
	})
}

func TestEncodeErrorRejectsBadFieldName(t *testing.T) {
	for _, name := range []string{"", "1st", "a b", "x:y", "<Key>", "Key>"} {
		t.Run(fmt.Sprintf("%q", name), func(t *testing.T) {
			var buf bytes.Buffer
			err := s3xml.EncodeError(&buf, s3err.New(s3err.NoSuchKey, "").With(name, "v"), "r", "")
			if err == nil {
				t.Fatalf("EncodeError with field %q succeeded:\n%s", name, buf.Bytes())
			}
			if buf.Len() != 0 {
				t.Errorf("EncodeError wrote %q before failing", buf.Bytes())
			}
		})
	}
	if err := s3xml.EncodeError(io.Discard, nil, "r", ""); err == nil {
		t.Error("EncodeError(nil) succeeded")
	}
}

func TestEncodeWriteError(t *testing.T) {
	errFull := errors.New("disk full")
	for _, tc := range []struct {
		name   string
		encode func(io.Writer) error
	}{
		{"Encode", func(w io.Writer) error { return s3xml.Encode(w, s3xml.OwnerFullControl(s3xml.Owner{ID: "o"})) }},
		{"EncodeError", func(w io.Writer) error {
			return s3xml.EncodeError(w, s3err.New(s3err.NoSuchBucket, "b"), "r", "h")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.encode(failingWriter{errFull}); !errors.Is(err, errFull) {
				t.Errorf("error = %v, want %v", err, errFull)
			}
		})
	}
}

// failingWriter fails every write.
type failingWriter struct{ err error }

func (f failingWriter) Write([]byte) (int, error) { return 0, f.err }

// TestEncodeDeclaration pins the first line of every document, which some
// clients compare literally.
func TestEncodeDeclaration(t *testing.T) {
	var buf bytes.Buffer
	if err := s3xml.Encode(&buf, s3xml.LocationConstraint{}); err != nil {
		t.Fatal(err)
	}
	const want = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<LocationConstraint "
	if !strings.HasPrefix(buf.String(), want) {
		t.Errorf("Encode wrote %q, want prefix %q", buf.String(), want)
	}
}

// listing returns a ListBucketResult of n objects shaped like a real page.
func listing(n int) s3xml.ListBucketResult {
	res := s3xml.ListBucketResult{Name: "bench-bucket", Prefix: "data/", MaxKeys: n, IsTruncated: true, NextMarker: "data/next"}
	owner := &s3xml.Owner{ID: "75aa57f09aa0c8caeab4f8c24e99d10f8e7faeebf76c078efc7c6caea54ba06a"}
	lm := s3xml.Time(time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC))
	for i := range n {
		res.Contents = append(res.Contents, s3xml.Object{
			Key:          s3xml.Text(fmt.Sprintf("data/2024/05/01/object-%06d.parquet", i)),
			LastModified: lm,
			ETag:         `"d41d8cd98f00b204e9800998ecf8427e"`,
			Size:         int64(1024 * i),
			Owner:        owner,
			StorageClass: "STANDARD",
		})
	}
	return res
}

// BenchmarkEncodeListBucketResult encodes a page of 1000 keys with Encode
// and, for comparison, with encoding/xml alone.
func BenchmarkEncodeListBucketResult(b *testing.B) {
	res := listing(1000)
	for _, bc := range []struct {
		name   string
		encode func(io.Writer, any) error
	}{
		{"impl=s3xml", s3xml.Encode},
		{"impl=encoding-xml", func(w io.Writer, v any) error {
			if _, err := io.WriteString(w, xml.Header); err != nil {
				return err
			}
			return xml.NewEncoder(w).Encode(v)
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var buf bytes.Buffer
			if err := bc.encode(&buf, res); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(buf.Len()))
			b.ReportAllocs()
			for b.Loop() {
				if err := bc.encode(io.Discard, res); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
