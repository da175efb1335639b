package meta

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var testTime = time.Date(2025, 3, 4, 5, 6, 7, 890, time.UTC)

func fullObject() Object {
	return Object{
		VersionID: "0123456789abcdef",
		Size:      3 << 20,
		ETag:      "d41d8cd98f00b204e9800998ecf8427e-2",
		Modified:  testTime,
		Checksum:  Checksum{Algorithm: "CRC32C", Value: "yZRlqg==-2", Type: "COMPOSITE"},
		Meta: Metadata{
			ContentType: "text/plain", ContentEncoding: "gzip", ContentDisposition: "inline",
			ContentLanguage: "en", CacheControl: "no-cache", Expires: "Thu, 01 Dec 1994 16:00:00 GMT",
			User: map[string]string{"a": "1", "b": ""},
		},
		PartSizes: []int64{2 << 20, 1 << 20},
		Blocks:    []Block{{Key: "b/00/1", Size: 2 << 20}, {Key: "b/01/2", Size: 1 << 20}},
	}
}

func TestObjectCodec(t *testing.T) {
	inline := Object{VersionID: "v", Size: 5, ETag: "e", Modified: testTime, Inline: []byte("hello")}
	for _, tc := range []struct {
		name   string
		in     Object
		detail objectDetail
		want   Object
	}{
		{name: "full", in: fullObject(), detail: objectFull, want: fullObject()},
		{name: "inline", in: inline, detail: objectFull, want: inline},
		{name: "empty", in: Object{}, detail: objectFull, want: Object{}},
		{name: "inline layout", in: inline, detail: objectLayout,
			want: Object{VersionID: "v", Size: 5, ETag: "e", Modified: testTime}},
		{name: "summary", in: fullObject(), detail: objectSummary,
			want: Object{Size: 3 << 20, ETag: "d41d8cd98f00b204e9800998ecf8427e-2",
				Modified: testTime, Checksum: fullObject().Checksum}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeObject(appendObject(nil, &tc.in), tc.detail)
			if err != nil {
				t.Fatalf("decodeObject: %v", err)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("round trip mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOtherCodecs(t *testing.T) {
	b := Bucket{Name: "bkt", Region: "eu-west-1", Created: testTime}
	gotB, err := decodeBucket("bkt", appendBucket(nil, &b))
	if err != nil || !cmp.Equal(b, gotB) {
		t.Errorf("bucket round trip = %+v, %v; want %+v", gotB, err, b)
	}
	u := Upload{Bucket: "bkt", Key: "k", ID: "id", Initiated: testTime, Meta: fullObject().Meta,
		ChecksumAlgorithm: "CRC32", ChecksumType: "FULL_OBJECT"}
	gotU, err := decodeUpload("bkt", "k", "id", appendUpload(nil, &u))
	if diff := cmp.Diff(u, gotU); err != nil || diff != "" {
		t.Errorf("upload round trip: %v (-want +got):\n%s", err, diff)
	}
	p := Part{Number: 7, Size: 10, ETag: "x", Modified: testTime, Checksum: Checksum{Algorithm: "SHA1", Value: "v"},
		Blocks: []Block{{Key: "b/1", Size: 10}}}
	gotP, err := decodePart(7, appendPart(nil, &p))
	if diff := cmp.Diff(p, gotP); err != nil || diff != "" {
		t.Errorf("part round trip: %v (-want +got):\n%s", err, diff)
	}
	g := Garbage{Time: testTime, BlobKey: "b/1", VersionID: "v", Size: 9}
	gotG, err := decodeGarbage(testTime, "b/1", appendGarbage(nil, &g))
	if diff := cmp.Diff(g, gotG); err != nil || diff != "" {
		t.Errorf("garbage round trip: %v (-want +got):\n%s", err, diff)
	}
}

func TestDecodeCorrupt(t *testing.T) {
	good := appendObject(nil, ptr(fullObject()))
	for _, tc := range []struct {
		name string
		in   []byte
	}{
		{"empty", nil},
		{"unknown version", append([]byte{9}, good[1:]...)},
		{"truncated", good[:len(good)-3]},
		{"trailing bytes", append(bytes.Clone(good), 0)},
		{"huge count", []byte{recordVersion, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}},
		{"negative size", []byte{recordVersion, 0, 0, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := decodeObject(tc.in, objectFull); !errors.Is(err, errCorrupt) {
				t.Errorf("decodeObject(%q) error = %v, want errCorrupt", tc.in, err)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// FuzzDecodeRecord checks that decoding arbitrary bytes never panics and that
// whatever decodes re-encodes to something that decodes the same.
func FuzzDecodeRecord(f *testing.F) {
	f.Add(appendObject(nil, ptr(fullObject())))
	f.Add(appendObject(nil, &Object{Inline: []byte("x")}))
	f.Add(appendUpload(nil, &Upload{Meta: fullObject().Meta}))
	f.Add(appendPart(nil, &Part{Blocks: []Block{{Key: "k", Size: 1}}}))
	f.Add(appendBucket(nil, &Bucket{Region: "r", Created: testTime}))
	f.Add(appendGarbage(nil, &Garbage{VersionID: "v", Size: 1}))
	f.Fuzz(func(t *testing.T, b []byte) {
		if o, err := decodeObject(b, objectFull); err == nil {
			again, err := decodeObject(appendObject(nil, &o), objectFull)
			if err != nil {
				t.Fatalf("re-decode object: %v", err)
			}
			if diff := cmp.Diff(o, again, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("object re-encode mismatch:\n%s", diff)
			}
		}
		_, _ = decodeObject(b, objectSummary)
		_, _ = decodeObject(b, objectLayout)
		if u, err := decodeUpload("b", "k", "i", b); err == nil {
			again, err := decodeUpload("b", "k", "i", appendUpload(nil, &u))
			if err != nil || !cmp.Equal(u, again, cmpopts.EquateEmpty()) {
				t.Fatalf("upload re-encode mismatch: %v", err)
			}
		}
		if p, err := decodePart(1, b); err == nil {
			again, err := decodePart(1, appendPart(nil, &p))
			if err != nil || !cmp.Equal(p, again, cmpopts.EquateEmpty()) {
				t.Fatalf("part re-encode mismatch: %v", err)
			}
		}
		_, _ = decodeBucket("b", b)
		_, _ = decodeGarbage(testTime, "k", b)
	})
}
