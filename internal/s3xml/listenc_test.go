package s3xml_test

import (
	"bytes"
	"encoding/xml"
	"testing"

	"github.com/coffer-s3/coffer/internal/s3xml"
)

// reference encodes v with encoding/xml alone, as Encode does for every
// type without a hand-written encoder.
func reference(t *testing.T, v any) []byte {
	t.Helper()
	b, err := xml.Marshal(v)
	if err != nil {
		t.Fatalf("xml.Marshal: %v", err)
	}
	return append([]byte(xml.Header), b...)
}

// checkSameAsReference fails t unless Encode writes exactly what
// encoding/xml writes for v.
func checkSameAsReference(t *testing.T, v any) {
	t.Helper()
	var buf bytes.Buffer
	if err := s3xml.Encode(&buf, v); err != nil {
		t.Fatalf("Encode: %v", err)
	}
	if want := reference(t, v); !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("Encode differs from encoding/xml for %#v\ngot:\n%s\nwant:\n%s", v, buf.Bytes(), want)
	}
}

// oddStrings are values that exercise every escaping rule.
var oddStrings = []string{
	"", "plain/key.txt", `<a>&"b'`, "tab\tnl\ncr\r", "ctl\x00\x01\x1f\x7f", "bad\xff\xfe", "\xe6\x97",
	"\xed\xa0\x80", "\uFFFD", "\uFFFE\uFFFF", "é 😀 日本", "]]>", "a%20b",
}

func TestListingEncoderMatchesEncodingXML(t *testing.T) {
	owner := &s3xml.Owner{ID: "id"}
	full := s3xml.ListBucketResult{
		Name: "b", Prefix: "p", Marker: "m", NextMarker: "n", MaxKeys: 7, Delimiter: "/", EncodingType: "url", IsTruncated: true,
		Contents: []s3xml.Object{
			{Key: "k", LastModified: "t", ETag: `"e"`, ChecksumAlgorithm: "CRC32", ChecksumType: "FULL_OBJECT", Size: -1, Owner: &s3xml.Owner{ID: "i", DisplayName: "d"}, StorageClass: "STANDARD"},
			{Key: "k2", Size: 1 << 62, Owner: owner},
			{},
		},
		CommonPrefixes: []s3xml.CommonPrefix{{Prefix: "a/"}, {}},
	}
	fullV2 := s3xml.ListBucketResultV2{
		Name: "b", Prefix: "p", ContinuationToken: "c", NextContinuationToken: "n", StartAfter: "s", KeyCount: 3, MaxKeys: 3,
		Delimiter: "/", EncodingType: "url", IsTruncated: true, Contents: full.Contents, CommonPrefixes: full.CommonPrefixes,
	}
	for _, tc := range []struct {
		name string
		v    any
	}{
		{"v1 zero", s3xml.ListBucketResult{}},
		{"v1 full", full},
		{"v1 pointer", &full},
		{"v2 zero", s3xml.ListBucketResultV2{}},
		{"v2 full", fullV2},
		{"v2 pointer", &fullV2},
		{"v1 large", listing(1000)},
		{"XMLName set falls back", s3xml.ListBucketResult{XMLName: xml.Name{Local: "Other"}, Name: "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkSameAsReference(t, tc.v) })
	}
	for _, s := range oddStrings {
		checkSameAsReference(t, listingOf(s, 0, false))
		checkSameAsReference(t, listingV2Of(s, 0, false))
	}
}

// listingOf returns a version 1 listing with s in every string field.
func listingOf(s string, size int64, truncated bool) s3xml.ListBucketResult {
	k := s3xml.Text(s)
	return s3xml.ListBucketResult{
		Name: s, Prefix: k, Marker: k, NextMarker: k, MaxKeys: int(size), Delimiter: k, EncodingType: s, IsTruncated: truncated,
		Contents: []s3xml.Object{{
			Key: k, LastModified: s, ETag: s, ChecksumAlgorithm: s, ChecksumType: s, Size: size,
			Owner: &s3xml.Owner{ID: s, DisplayName: s}, StorageClass: s,
		}},
		CommonPrefixes: []s3xml.CommonPrefix{{Prefix: k}},
	}
}

// listingV2Of returns a version 2 listing with s in every string field.
func listingV2Of(s string, size int64, truncated bool) s3xml.ListBucketResultV2 {
	v1 := listingOf(s, size, truncated)
	return s3xml.ListBucketResultV2{
		Name: s, Prefix: s3xml.Text(s), ContinuationToken: s, NextContinuationToken: s, StartAfter: s3xml.Text(s), KeyCount: int(size), MaxKeys: int(size),
		Delimiter: s3xml.Text(s), EncodingType: s, IsTruncated: truncated, Contents: v1.Contents, CommonPrefixes: v1.CommonPrefixes,
	}
}

// FuzzEncodeListing checks that the hand-written listing encoder writes
// exactly what encoding/xml writes, for any string.
func FuzzEncodeListing(f *testing.F) {
	for i, s := range oddStrings {
		f.Add(s, int64(i), i%2 == 0)
	}
	f.Fuzz(func(t *testing.T, s string, size int64, truncated bool) {
		checkSameAsReference(t, listingOf(s, size, truncated))
		checkSameAsReference(t, listingV2Of(s, size, truncated))
	})
}
