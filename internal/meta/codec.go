package meta

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// Records are encoded compactly: one version byte, then fields in a fixed
// order, integers as (u)varints, strings and byte slices prefixed with their
// uvarint length. Decoding never trusts a length: every count is bounded by
// the bytes left, so arbitrary input can neither panic nor make a huge
// allocation.
const recordVersion = 1

// Object records have versions of their own. Version 1 ended with the inline
// data; version 2, written since the data moved to its own key (the d
// table, see dataKey), ends after the blocks. Version 1 records are still
// read, so a data directory written before the change keeps working; they
// become version 2 when the object is next written.
//
// Version 3 adds, after the metadata, a list of optional fields, each a
// uvarint tag and a length-prefixed payload (tags, the upload a multipart
// object was completed from, its parts' checksums, its ACL): a record
// carries only the fields it has, and a decoder skips tags it does not
// know, so new fields need no new version.
const (
	objectV1      = 1
	objectV2      = 2
	objectVersion = 3
)

// Tags of the optional fields of a version 3 object record.
const (
	fieldTags          = 1 // uvarint count, then key and value strings
	fieldUploadID      = 2 // string
	fieldPartChecksums = 3 // uvarint count, then strings
	fieldACL           = 4 // bytes, opaque to meta
	fieldInitiator     = 5 // string, opaque to meta (upload records)
)

// dataVersion is the version byte of an inline data value.
const dataVersion = 1

// errCorrupt is wrapped by every decoding error.
var errCorrupt = errors.New("meta: corrupt record")

// objectDetail selects how much of an object record decodeObject reads.
type objectDetail int

const (
	// objectSummary stops after the checksum and skips the version ID:
	// what a listing needs.
	objectSummary objectDetail = iota
	// objectVersionSummary is objectSummary with the version ID: what a
	// listing of versions needs.
	objectVersionSummary
	// objectSummaryACL is objectSummary with the ACL (aliasing the input),
	// skipping the metadata and every other field: what a listing that
	// reports owners needs.
	objectSummaryACL
	// objectVersionSummaryACL is objectVersionSummary with the ACL,
	// likewise: what a listing of versions that reports owners needs.
	objectVersionSummaryACL
	// objectTagged is objectVersionSummary with the tags, skipping the
	// metadata and every other field: what the lifecycle worker needs
	// when a rule filters on tags.
	objectTagged
	// objectLayout reads everything but the inline data of a version 1
	// record: what GC and a replacing write need.
	objectLayout
	// objectFull reads everything; for a version 1 record Inline aliases
	// the input.
	objectFull
)

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendBytes(b, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendTime encodes t as unix nanoseconds; the zero time encodes as 0.
func appendTime(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return binary.AppendVarint(b, 0)
	}
	return binary.AppendVarint(b, t.UnixNano())
}

func appendMetadata(b []byte, m *Metadata) []byte {
	b = appendString(b, m.ContentType)
	b = appendString(b, m.ContentEncoding)
	b = appendString(b, m.ContentDisposition)
	b = appendString(b, m.ContentLanguage)
	b = appendString(b, m.CacheControl)
	b = appendString(b, m.Expires)
	b = binary.AppendUvarint(b, uint64(len(m.User)))
	for k, v := range m.User {
		b = appendString(b, k)
		b = appendString(b, v)
	}
	return b
}

func appendChecksum(b []byte, c *Checksum) []byte {
	b = appendString(b, c.Algorithm)
	b = appendString(b, c.Value)
	return appendString(b, c.Type)
}

func appendBlocks(b []byte, bs []Block) []byte {
	b = binary.AppendUvarint(b, uint64(len(bs)))
	for _, x := range bs {
		b = appendString(b, x.Key)
		b = binary.AppendVarint(b, x.Size)
	}
	return b
}

// Object record flags. Records written before versioning have none: an
// unversioned null version with a random version ID.
const (
	flagVersioning   = 0b0011 // the Versioning state the record was written under
	flagDeleteMarker = 0b0100
	flagOrderedID    = 0b1000 // VersionID sorts the record (NewVersionID)
	knownFlags       = flagVersioning | flagDeleteMarker | flagOrderedID
)

func objectFlags(o *Object) uint64 {
	f := uint64(o.Versioning) & flagVersioning
	if o.DeleteMarker {
		f |= flagDeleteMarker
	}
	if o.orderedID {
		f |= flagOrderedID
	}
	return f
}

// appendObject appends the encoding of o to b. o.Inline is not part of the
// record: it is stored under the data key (appendData).
func appendObject(b []byte, o *Object) []byte {
	b = append(b, objectVersion)
	b = binary.AppendUvarint(b, objectFlags(o))
	b = appendString(b, o.VersionID)
	b = binary.AppendVarint(b, o.Size)
	b = appendString(b, o.ETag)
	b = appendTime(b, o.Modified)
	b = appendChecksum(b, &o.Checksum)
	// The summary ends here; listings stop decoding at this point.
	b = appendMetadata(b, &o.Meta)
	b = appendFields(b, o)
	b = binary.AppendUvarint(b, uint64(len(o.PartSizes)))
	for _, s := range o.PartSizes {
		b = binary.AppendVarint(b, s)
	}
	return appendBlocks(b, o.Blocks)
}

// appendFields appends the optional fields of o that it has.
func appendFields(b []byte, o *Object) []byte {
	var fw fieldWriter
	fw.tags(o.Tags)
	if o.UploadID != "" {
		fw.add(fieldUploadID, []byte(o.UploadID))
	}
	if len(o.PartChecksums) > 0 {
		p := binary.AppendUvarint(nil, uint64(len(o.PartChecksums)))
		for _, c := range o.PartChecksums {
			p = appendString(p, c)
		}
		fw.add(fieldPartChecksums, p)
	}
	fw.acl(o.ACL)
	return fw.append(b)
}

// fields decodes the optional fields of an object record into o.
func (d *decoder) fields(o *Object) {
	d.eachField(func(tag uint64, f *decoder) bool {
		switch tag {
		case fieldTags:
			o.Tags = f.tags()
		case fieldUploadID:
			o.UploadID = string(f.rest())
		case fieldPartChecksums:
			o.PartChecksums = make([]string, f.count())
			for i := range o.PartChecksums {
				o.PartChecksums[i] = f.string()
			}
		case fieldACL:
			o.ACL = f.rest()
		default:
			return false
		}
		return true
	})
}

// fieldWriter collects optional fields: a uvarint count, then each as a
// uvarint tag and a length-prefixed payload.
type fieldWriter struct {
	n   int
	buf []byte
}

func (fw *fieldWriter) add(tag uint64, payload []byte) {
	fw.n++
	fw.buf = binary.AppendUvarint(fw.buf, tag)
	fw.buf = appendBytes(fw.buf, payload)
}

func (fw *fieldWriter) tags(ts []Tag) {
	if len(ts) == 0 {
		return
	}
	p := binary.AppendUvarint(nil, uint64(len(ts)))
	for _, t := range ts {
		p = appendString(p, t.Key)
		p = appendString(p, t.Value)
	}
	fw.add(fieldTags, p)
}

func (fw *fieldWriter) acl(acl []byte) {
	if len(acl) > 0 {
		fw.add(fieldACL, acl)
	}
}

func (fw *fieldWriter) append(b []byte) []byte {
	b = binary.AppendUvarint(b, uint64(fw.n))
	return append(b, fw.buf...)
}

// eachField calls fn with each optional field's tag and a decoder over its
// payload. fn reports whether it knows the tag; a known field's payload must
// be consumed whole, an unknown one (written by a newer Coffer) is skipped.
func (d *decoder) eachField(fn func(tag uint64, f *decoder) bool) {
	n := d.count()
	for range n {
		tag := d.uvarint()
		f := decoder{b: d.bytes()}
		if d.err != nil {
			return
		}
		if fn(tag, &f) {
			_ = f.end()
		}
		if f.err != nil {
			d.fail("field %d: %v", tag, f.err)
			return
		}
	}
}

// tags reads a count and that many key-value pairs.
func (d *decoder) tags() []Tag {
	ts := make([]Tag, d.count())
	for i := range ts {
		ts[i].Key = d.string()
		ts[i].Value = d.string()
	}
	return ts
}

// rest returns a copy of the bytes left.
func (d *decoder) rest() []byte {
	r := append([]byte(nil), d.b...)
	d.b = nil
	return r
}

// decodeObject decodes an object record up to detail. With objectFull and
// a version 1 record, Inline aliases b; with objectSummaryACL and
// objectVersionSummaryACL, ACL does.
func decodeObject(b []byte, detail objectDetail) (Object, error) {
	o, _, err := decodeObjectVersion(b, detail)
	return o, err
}

// decodeObjectVersion is decodeObject that also returns the record's
// version.
func decodeObjectVersion(b []byte, detail objectDetail) (Object, byte, error) {
	var o Object
	d := decoder{b: b}
	v := d.version(objectV1, objectV2, objectVersion)
	if f := d.uvarint(); f&^knownFlags != 0 || Versioning(f&flagVersioning) > VersioningSuspended {
		d.fail("unknown flags %#x", f)
	} else {
		o.Versioning = Versioning(f & flagVersioning)
		o.DeleteMarker = f&flagDeleteMarker != 0
		o.orderedID = f&flagOrderedID != 0
	}
	if detail == objectSummary || detail == objectSummaryACL {
		d.bytes() // listings do not need the version ID: skip the copy
	} else {
		o.VersionID = d.string()
	}
	o.Size = d.size()
	o.ETag = d.string()
	o.Modified = d.time()
	d.checksum(&o.Checksum)
	if detail <= objectVersionSummary {
		return o, v, d.err
	}
	if detail < objectLayout {
		// One field, the tags or the ACL; the others are skipped, as
		// unknown fields are.
		want := uint64(fieldACL)
		if detail == objectTagged {
			want = fieldTags
		}
		d.skipMetadata()
		if v >= objectVersion {
			d.eachField(func(tag uint64, f *decoder) bool {
				switch {
				case tag != want:
					return false
				case tag == fieldTags:
					o.Tags = f.tags()
				default:
					o.ACL, f.b = f.b, nil
				}
				return true
			})
		}
		return o, v, d.err
	}
	d.metadata(&o.Meta)
	if v >= objectVersion {
		d.fields(&o)
	}
	if n := d.count(); n > 0 {
		o.PartSizes = make([]int64, n)
		for i := range o.PartSizes {
			o.PartSizes[i] = d.size()
		}
	}
	o.Blocks = d.blocks()
	if detail == objectLayout {
		return o, v, d.err
	}
	if v == objectV1 {
		if in := d.bytes(); len(in) > 0 {
			o.Inline = in
		}
	}
	return o, v, d.end()
}

// appendDataHeader appends the head of the value stored under an object's
// data key; the data bytes follow it. The head holds the version ID of the
// record the data belongs to, which lets a reader that fetched the record
// and then its data (two reads, not one snapshot) check that both are of
// the same write.
func appendDataHeader(b []byte, versionID string) []byte {
	b = append(b, dataVersion)
	return appendString(b, versionID)
}

// decodeData splits a data value into its version ID and the bytes, both
// aliasing v.
func decodeData(v []byte) (versionID, data []byte, err error) {
	d := decoder{b: v}
	d.version(dataVersion)
	id := d.bytes()
	if d.err != nil {
		return nil, nil, d.err
	}
	return id, d.b, nil
}

// Bucket records: version 1 held the region and creation time; version 2
// adds the versioning state, version 3 the owner. Older records are still
// read (unversioned, owner unknown).
const bucketVersion = 3

func appendBucket(b []byte, x *Bucket) []byte {
	b = append(b, bucketVersion)
	b = appendString(b, x.Region)
	b = appendTime(b, x.Created)
	b = binary.AppendUvarint(b, uint64(x.Versioning))
	return appendString(b, x.Owner)
}

func decodeBucket(name string, b []byte) (Bucket, error) {
	x := Bucket{Name: name}
	d := decoder{b: b}
	v := d.version(recordVersion, 2, bucketVersion)
	x.Region = d.string()
	x.Created = d.time()
	if v >= 2 {
		if s := d.uvarint(); s > uint64(VersioningSuspended) {
			d.fail("unknown versioning state %d", s)
		} else {
			x.Versioning = Versioning(s)
		}
	}
	if v >= 3 {
		x.Owner = d.string()
	}
	return x, d.end()
}

// Upload records: version 2 adds optional fields (the tags and ACL the
// object will have) after the checksum type, as object records have them.
const uploadVersion = 2

func appendUpload(b []byte, u *Upload) []byte {
	b = append(b, uploadVersion)
	b = appendTime(b, u.Initiated)
	b = appendMetadata(b, &u.Meta)
	b = appendString(b, u.ChecksumAlgorithm)
	b = appendString(b, u.ChecksumType)
	var fw fieldWriter
	fw.tags(u.Tags)
	fw.acl(u.ACL)
	if u.Initiator != "" {
		fw.add(fieldInitiator, []byte(u.Initiator))
	}
	return fw.append(b)
}

// decodeUpload decodes an upload record; the names come from its key.
func decodeUpload(bucket, key, id string, b []byte) (Upload, error) {
	u := Upload{Bucket: bucket, Key: key, ID: id}
	d := decoder{b: b}
	v := d.version(recordVersion, uploadVersion)
	u.Initiated = d.time()
	d.metadata(&u.Meta)
	u.ChecksumAlgorithm = d.string()
	u.ChecksumType = d.string()
	if v >= uploadVersion {
		d.eachField(func(tag uint64, f *decoder) bool {
			switch tag {
			case fieldTags:
				u.Tags = f.tags()
			case fieldACL:
				u.ACL = f.rest()
			case fieldInitiator:
				u.Initiator = string(f.rest())
			default:
				return false
			}
			return true
		})
	}
	return u, d.end()
}

func appendPart(b []byte, p *Part) []byte {
	b = append(b, recordVersion)
	b = binary.AppendVarint(b, p.Size)
	b = appendString(b, p.ETag)
	b = appendTime(b, p.Modified)
	b = appendChecksum(b, &p.Checksum)
	return appendBlocks(b, p.Blocks)
}

func decodePart(n int, b []byte) (Part, error) {
	p := Part{Number: n}
	d := decoder{b: b}
	d.version()
	p.Size = d.size()
	p.ETag = d.string()
	p.Modified = d.time()
	d.checksum(&p.Checksum)
	p.Blocks = d.blocks()
	return p, d.end()
}

func appendGarbage(b []byte, g *Garbage) []byte {
	b = append(b, recordVersion)
	b = appendString(b, g.VersionID)
	return binary.AppendVarint(b, g.Size)
}

// decodeGarbage decodes a garbage record; time and blob key come from its key.
func decodeGarbage(t time.Time, blobKey string, b []byte) (Garbage, error) {
	g := Garbage{Time: t, BlobKey: blobKey}
	d := decoder{b: b}
	d.version()
	g.VersionID = d.string()
	g.Size = d.size()
	return g, d.end()
}

// decoder reads fields in order. The first error sticks; later reads return
// zero values, so decoding functions check d.err once at the end.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: "+format, append([]any{errCorrupt}, args...)...)
	}
	d.b = nil
}

// version reads the version byte, which must be one of known (default
// recordVersion), and returns it.
func (d *decoder) version(known ...byte) byte {
	if len(d.b) == 0 {
		d.fail("empty")
		return 0
	}
	if len(known) == 0 {
		known = []byte{recordVersion}
	}
	v := d.b[0]
	if bytes.IndexByte(known, v) < 0 {
		d.fail("unknown version %d", v)
		return 0
	}
	d.b = d.b[1:]
	return v
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad uvarint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// size reads a non-negative integer.
func (d *decoder) size() int64 {
	v := d.varint()
	if v < 0 {
		d.fail("negative size %d", v)
		return 0
	}
	return v
}

// count reads a number of items, each of which takes at least one byte.
func (d *decoder) count() int {
	v := d.uvarint()
	if v > uint64(len(d.b)) {
		d.fail("count %d exceeds %d bytes left", v, len(d.b))
		return 0
	}
	return int(v)
}

// bytes reads a length-prefixed byte slice, aliasing the input.
func (d *decoder) bytes() []byte {
	n := d.count()
	if d.err != nil {
		return nil
	}
	s := d.b[:n:n]
	d.b = d.b[n:]
	return s
}

func (d *decoder) string() string {
	s := d.bytes()
	if len(s) == 0 {
		return ""
	}
	return string(s)
}

func (d *decoder) time() time.Time {
	v := d.varint()
	if v == 0 {
		return time.Time{}
	}
	return time.Unix(0, v).UTC()
}

func (d *decoder) metadata(m *Metadata) {
	m.ContentType = d.string()
	m.ContentEncoding = d.string()
	m.ContentDisposition = d.string()
	m.ContentLanguage = d.string()
	m.CacheControl = d.string()
	m.Expires = d.string()
	if n := d.count(); n > 0 {
		m.User = make(map[string]string, n)
		for range n {
			k := d.string()
			m.User[k] = d.string()
		}
	}
}

// skipMetadata steps over what metadata reads, without copying it.
func (d *decoder) skipMetadata() {
	for range 6 {
		d.bytes()
	}
	for range d.count() {
		d.bytes()
		d.bytes()
	}
}

func (d *decoder) checksum(c *Checksum) {
	c.Algorithm = d.string()
	c.Value = d.string()
	c.Type = d.string()
}

func (d *decoder) blocks() []Block {
	n := d.count()
	if n == 0 {
		return nil
	}
	bs := make([]Block, n)
	for i := range bs {
		bs[i].Key = d.string()
		bs[i].Size = d.size()
	}
	if d.err != nil {
		return nil
	}
	return bs
}

// end reports the sticky error, or an error if bytes are left over.
func (d *decoder) end() error {
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d trailing bytes", len(d.b))
	}
	return d.err
}
