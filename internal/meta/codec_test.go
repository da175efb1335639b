package meta

import (
	"bytes"
	"encoding/binary"
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

// appendObjectV1 encodes o as a version 1 record, with its inline data
// inside, as records were written before the data key existed.
func appendObjectV1(b []byte, o *Object) []byte {
	return appendBytes(appendObjectOld(b, o, objectV1), o.Inline)
}

// appendObjectOld encodes o in the layout of record versions 1 and 2:
// version 3's without the optional fields (and for version 1 without the
// inline data that follows).
func appendObjectOld(b []byte, o *Object, version byte) []byte {
	b = append(b, version)
	b = binary.AppendUvarint(b, objectFlags(o))
	b = appendString(b, o.VersionID)
	b = binary.AppendVarint(b, o.Size)
	b = appendString(b, o.ETag)
	b = appendTime(b, o.Modified)
	b = appendChecksum(b, &o.Checksum)
	b = appendMetadata(b, &o.Meta)
	b = binary.AppendUvarint(b, uint64(len(o.PartSizes)))
	for _, s := range o.PartSizes {
		b = binary.AppendVarint(b, s)
	}
	return appendBlocks(b, o.Blocks)
}

// withFields returns o with every optional field of version 3 set.
func withFields(o Object) Object {
	o.Tags = []Tag{{"project", "blue"}, {"empty", ""}}
	o.UploadID = "0123456789abcdef0123456789abcdef"
	o.PartChecksums = []string{"AAAAAA==", "BBBBBB=="}
	o.ACL = []byte("acl document")
	return o
}

func TestObjectCodec(t *testing.T) {
	inline := Object{VersionID: "v", Size: 5, ETag: "e", Modified: testTime, Inline: []byte("hello")}
	noData := Object{VersionID: "v", Size: 5, ETag: "e", Modified: testTime}
	for _, tc := range []struct {
		name   string
		in     Object
		v1     bool // encode as a version 1 record
		v2     bool // encode as a version 2 record
		detail objectDetail
		want   Object
	}{
		{name: "full", in: fullObject(), detail: objectFull, want: fullObject()},
		{name: "inline data is not in the record", in: inline, detail: objectFull, want: noData},
		{name: "empty", in: Object{}, detail: objectFull, want: Object{}},
		{name: "inline layout", in: inline, detail: objectLayout, want: noData},
		{name: "summary", in: fullObject(), detail: objectSummary,
			want: Object{Size: 3 << 20, ETag: "d41d8cd98f00b204e9800998ecf8427e-2",
				Modified: testTime, Checksum: fullObject().Checksum}},
		{name: "v1 full", in: fullObject(), v1: true, detail: objectFull, want: fullObject()},
		{name: "v1 inline", in: inline, v1: true, detail: objectFull, want: inline},
		{name: "v1 inline layout", in: inline, v1: true, detail: objectLayout, want: noData},
		{name: "v1 summary", in: inline, v1: true, detail: objectSummary,
			want: Object{Size: 5, ETag: "e", Modified: testTime}},
		{name: "v2", in: fullObject(), v2: true, detail: objectFull, want: fullObject()},
		{name: "fields", in: withFields(fullObject()), detail: objectFull, want: withFields(fullObject())},
		{name: "fields layout", in: withFields(fullObject()), detail: objectLayout, want: withFields(fullObject())},
		{name: "fields summary", in: withFields(fullObject()), detail: objectSummary,
			want: Object{Size: 3 << 20, ETag: "d41d8cd98f00b204e9800998ecf8427e-2", Modified: testTime, Checksum: fullObject().Checksum}},
		{name: "tagged", in: withFields(fullObject()), detail: objectTagged,
			want: Object{VersionID: fullObject().VersionID, Size: 3 << 20, ETag: "d41d8cd98f00b204e9800998ecf8427e-2",
				Modified: testTime, Checksum: fullObject().Checksum, Tags: withFields(fullObject()).Tags}},
		{name: "tagged without tags", in: fullObject(), detail: objectTagged,
			want: Object{VersionID: fullObject().VersionID, Size: 3 << 20, ETag: "d41d8cd98f00b204e9800998ecf8427e-2",
				Modified: testTime, Checksum: fullObject().Checksum}},
		{name: "v2 tagged", in: withFields(fullObject()), v2: true, detail: objectTagged,
			want: Object{VersionID: fullObject().VersionID, Size: 3 << 20, ETag: "d41d8cd98f00b204e9800998ecf8427e-2",
				Modified: testTime, Checksum: fullObject().Checksum}},
		{name: "v1 tagged", in: inline, v1: true, detail: objectTagged,
			want: Object{VersionID: "v", Size: 5, ETag: "e", Modified: testTime}},
		{name: "summary ACL", in: withFields(fullObject()), detail: objectSummaryACL,
			want: Object{Size: 3 << 20, ETag: "d41d8cd98f00b204e9800998ecf8427e-2",
				Modified: testTime, Checksum: fullObject().Checksum, ACL: withFields(fullObject()).ACL}},
		{name: "version summary ACL", in: withFields(fullObject()), detail: objectVersionSummaryACL,
			want: Object{VersionID: fullObject().VersionID, Size: 3 << 20, ETag: "d41d8cd98f00b204e9800998ecf8427e-2",
				Modified: testTime, Checksum: fullObject().Checksum, ACL: withFields(fullObject()).ACL}},
		{name: "summary ACL without ACL", in: fullObject(), detail: objectSummaryACL,
			want: Object{Size: 3 << 20, ETag: "d41d8cd98f00b204e9800998ecf8427e-2", Modified: testTime, Checksum: fullObject().Checksum}},
		{name: "v2 summary ACL", in: withFields(fullObject()), v2: true, detail: objectSummaryACL,
			want: Object{Size: 3 << 20, ETag: "d41d8cd98f00b204e9800998ecf8427e-2", Modified: testTime, Checksum: fullObject().Checksum}},
		{name: "v1 version summary ACL", in: inline, v1: true, detail: objectVersionSummaryACL,
			want: Object{VersionID: "v", Size: 5, ETag: "e", Modified: testTime}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			enc := appendObject(nil, &tc.in)
			switch {
			case tc.v1:
				enc = appendObjectV1(nil, &tc.in)
			case tc.v2:
				enc = appendObjectOld(nil, &tc.in, objectV2)
			}
			got, err := decodeObject(enc, tc.detail)
			if err != nil {
				t.Fatalf("decodeObject: %v", err)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty(), cmp.AllowUnexported(Object{})); diff != "" {
				t.Errorf("round trip mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDataCodec(t *testing.T) {
	for _, data := range [][]byte{nil, []byte("hello")} {
		v := append(appendDataHeader(nil, "v1"), data...)
		id, got, err := decodeData(v)
		if err != nil || string(id) != "v1" || !bytes.Equal(got, data) {
			t.Errorf("decodeData(%q) = %q, %q, %v; want v1, %q", v, id, got, err, data)
		}
	}
	for _, bad := range [][]byte{nil, {dataVersion + 1, 0}, {dataVersion, 5, 'a'}} {
		if _, _, err := decodeData(bad); !errors.Is(err, errCorrupt) {
			t.Errorf("decodeData(%q) error = %v, want errCorrupt", bad, err)
		}
	}
}

func TestOtherCodecs(t *testing.T) {
	b := Bucket{Name: "bkt", Region: "eu-west-1", Created: testTime}
	gotB, err := decodeBucket("bkt", appendBucket(nil, &b))
	if err != nil || !cmp.Equal(b, gotB) {
		t.Errorf("bucket round trip = %+v, %v; want %+v", gotB, err, b)
	}
	u := Upload{Bucket: "bkt", Key: "k", ID: "id", Initiated: testTime, Meta: fullObject().Meta,
		ChecksumAlgorithm: "CRC32", ChecksumType: "FULL_OBJECT", Tags: []Tag{{"k", "v"}}, ACL: []byte("acl"), Initiator: "user:alice"}
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
		{"huge count", []byte{objectVersion, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}},
		{"negative size", []byte{objectVersion, 0, 0, 1}},
		{"v1 truncated", appendObjectV1(nil, &Object{Inline: []byte("hello")})[:10]},
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
	f.Add(appendObject(nil, ptr(withFields(fullObject()))))
	f.Add(appendObjectOld(nil, ptr(fullObject()), objectV2))
	f.Add(appendObjectV1(nil, &Object{Inline: []byte("x")}))
	f.Add(append(appendDataHeader(nil, "v"), "data"...))
	f.Add(appendUpload(nil, &Upload{Meta: fullObject().Meta}))
	f.Add(appendPart(nil, &Part{Blocks: []Block{{Key: "k", Size: 1}}}))
	f.Add(appendBucket(nil, &Bucket{Region: "r", Created: testTime}))
	f.Add(appendGarbage(nil, &Garbage{VersionID: "v", Size: 1}))
	f.Fuzz(func(t *testing.T, b []byte) {
		if o, err := decodeObject(b, objectFull); err == nil {
			o.Inline = nil // a version 1 record's data is written elsewhere now
			again, err := decodeObject(appendObject(nil, &o), objectFull)
			if err != nil {
				t.Fatalf("re-decode object: %v", err)
			}
			if diff := cmp.Diff(o, again, cmpopts.EquateEmpty(), cmp.AllowUnexported(Object{})); diff != "" {
				t.Fatalf("object re-encode mismatch:\n%s", diff)
			}
		}
		_, _ = decodeObject(b, objectSummary)
		if lo, err := decodeObject(b, objectLayout); err == nil {
			// The lifecycle's tagged decode agrees with the layout.
			tg, err := decodeObject(b, objectTagged)
			if err != nil {
				t.Fatalf("tagged decode of a record the layout decodes: %v", err)
			}
			if !cmp.Equal(lo.Tags, tg.Tags, cmpopts.EquateEmpty()) || lo.VersionID != tg.VersionID || lo.Modified != tg.Modified {
				t.Fatalf("tagged decode %+v disagrees with the layout %+v", tg, lo)
			}
			// So do the listings' decodes of the ACL.
			for _, detail := range []objectDetail{objectSummaryACL, objectVersionSummaryACL} {
				sa, err := decodeObject(b, detail)
				if err != nil {
					t.Fatalf("ACL decode (%d) of a record the layout decodes: %v", detail, err)
				}
				if !bytes.Equal(lo.ACL, sa.ACL) || lo.ETag != sa.ETag || detail == objectVersionSummaryACL && lo.VersionID != sa.VersionID {
					t.Fatalf("ACL decode (%d) %+v disagrees with the layout %+v", detail, sa, lo)
				}
			}
		}
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
		if id, data, err := decodeData(b); err == nil {
			id2, data2, err := decodeData(append(appendDataHeader(nil, string(id)), data...))
			if err != nil || !bytes.Equal(id2, id) || !bytes.Equal(data2, data) {
				t.Fatalf("data re-encode mismatch: %q, %q, %v; want %q, %q", id2, data2, err, id, data)
			}
		}
		_, _ = decodeBucket("b", b)
		_, _ = decodeGarbage(testTime, "k", b)
	})
}

// TestObjectUnknownField checks that a field of a newer Coffer is skipped,
// and that a field whose payload does not decode is corruption.
func TestObjectUnknownField(t *testing.T) {
	o := fullObject()
	enc := func(tag uint64, payload []byte) []byte {
		b := appendObjectOld(nil, &Object{}, objectVersion)[:0]
		b = append(b, objectVersion)
		b = binary.AppendUvarint(b, objectFlags(&o))
		b = appendString(b, o.VersionID)
		b = binary.AppendVarint(b, o.Size)
		b = appendString(b, o.ETag)
		b = appendTime(b, o.Modified)
		b = appendChecksum(b, &o.Checksum)
		b = appendMetadata(b, &o.Meta)
		b = binary.AppendUvarint(b, 1)
		b = binary.AppendUvarint(b, tag)
		b = appendBytes(b, payload)
		b = binary.AppendUvarint(b, uint64(len(o.PartSizes)))
		for _, s := range o.PartSizes {
			b = binary.AppendVarint(b, s)
		}
		return appendBlocks(b, o.Blocks)
	}
	got, err := decodeObject(enc(99, []byte("from the future")), objectFull)
	if err != nil {
		t.Fatalf("decodeObject with an unknown field: %v", err)
	}
	if diff := cmp.Diff(o, got, cmpopts.EquateEmpty(), cmp.AllowUnexported(Object{})); diff != "" {
		t.Errorf("unknown field changed the record (-want +got):\n%s", diff)
	}
	if _, err := decodeObject(enc(fieldTags, []byte{5, 1}), objectFull); !errors.Is(err, errCorrupt) {
		t.Errorf("decodeObject with a truncated tags field = %v, want errCorrupt", err)
	}
}
