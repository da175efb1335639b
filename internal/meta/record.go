package meta

import "time"

// Bucket is a bucket record.
type Bucket struct {
	Name       string
	Region     string
	Created    time.Time
	Versioning Versioning
	// Owner is the canonical ID of the principal that created the bucket;
	// "" for buckets created before owners were recorded (root's).
	Owner string
}

// Versioning is a bucket's versioning state. A bucket starts Unversioned;
// once versioning is enabled it can be suspended but never turned off, as in
// S3. See https://docs.aws.amazon.com/AmazonS3/latest/userguide/Versioning.html
type Versioning uint8

const (
	// Unversioned: every write replaces the key's only version, the null
	// version, and a delete removes it.
	Unversioned Versioning = iota
	// VersioningEnabled: every write adds a version with its own ID; a
	// delete without a version ID adds a delete marker.
	VersioningEnabled
	// VersioningSuspended: writes replace the null version (a delete
	// makes it a delete marker); versions with IDs are kept.
	VersioningSuspended
)

// String returns the state as GetBucketVersioning spells it ("" when
// unversioned, which has no Status element).
func (v Versioning) String() string {
	switch v {
	case VersioningEnabled:
		return "Enabled"
	case VersioningSuspended:
		return "Suspended"
	}
	return ""
}

// Metadata is what a client stores with an object besides its bytes. It
// mirrors objects.Metadata; meta keeps its own type so that it does not
// import the layer above it.
type Metadata struct {
	ContentType        string
	ContentEncoding    string
	ContentDisposition string
	ContentLanguage    string
	CacheControl       string
	Expires            string
	User               map[string]string
}

// Checksum is a flexible checksum: algorithm name, base64 value and type
// ("FULL_OBJECT" or "COMPOSITE"); all empty if none.
type Checksum struct {
	Algorithm string
	Value     string
	Type      string
}

// Block is one blob of an object's or part's data, in order.
type Block struct {
	Key  string // blob key in the block store
	Size int64
}

// Object is an object record. An object's data is either inline (stored
// under its data key, beside the record) or the concatenation of Blocks; an
// empty object has neither.
type Object struct {
	// VersionID identifies this write of the object; meta assigns a new
	// one on every write (NewVersionID: it sorts newest first). Garbage
	// entries carry it so that GC can tell whether a reader still streams
	// the blocks. It is the version's S3 version ID only when Versioning
	// is VersioningEnabled (see S3VersionID).
	VersionID string
	// Versioning is the bucket's versioning state when the version was
	// written: Enabled gives it an ID of its own; otherwise it is the null
	// version. meta sets it on every write.
	Versioning Versioning
	// DeleteMarker marks a delete marker: a version without data that
	// hides the versions below it from GET and ListObjects.
	DeleteMarker bool
	Size         int64
	ETag         string
	Modified     time.Time
	Checksum     Checksum
	Meta         Metadata
	PartSizes    []int64 // sizes of the parts of a multipart object; nil otherwise
	// PartChecksums are the checksums of the parts of a multipart object
	// with a checksum, in order (base64); nil otherwise.
	PartChecksums []string
	// UploadID is the multipart upload the object was completed from; ""
	// for other objects.
	UploadID string
	// Tags are the object's tags (S3 object tagging), in the order given.
	Tags []Tag
	// ACL is the object's access control list, opaque to meta; nil for
	// the default (private).
	ACL    []byte
	Blocks []Block
	// Inline is the data of an inline object when writing it. Reads of the
	// record leave it nil: ObjectData reads the data.
	Inline []byte

	// orderedID records that VersionID came from NewVersionID, so that it
	// sorts the record among the key's versions. Records written before
	// versioning have random IDs; historyID derives their place from
	// Modified.
	orderedID bool
}

// NullVersionID is the S3 version ID of the null version.
const NullVersionID = "null"

// S3VersionID returns the version ID S3 clients see: VersionID for a
// version written with versioning enabled, NullVersionID otherwise.
func (o *Object) S3VersionID() string {
	if o.Versioning == VersioningEnabled {
		return o.VersionID
	}
	return NullVersionID
}

// Tag is one object tag.
type Tag struct {
	Key, Value string
}

// Upload is a multipart upload in progress.
type Upload struct {
	Bucket, Key       string
	ID                string // UploadIDLen bytes
	Initiated         time.Time
	Meta              Metadata
	ChecksumAlgorithm string
	ChecksumType      string
	Tags              []Tag  // the tags the object will have
	ACL               []byte // the ACL the object will have, opaque to meta
	// Initiator names who started the upload, opaque to meta; "" in
	// records written before it was kept.
	Initiator string
}

// Part is one uploaded part of a multipart upload. Parts are always stored
// as blocks.
type Part struct {
	Number   int
	Size     int64
	ETag     string // hex MD5
	Modified time.Time
	Checksum Checksum
	Blocks   []Block
}

// Garbage is an entry of the garbage queue: a blob no record references any
// more, to be deleted from the block store once the grace period has passed
// and no reader streams VersionID.
type Garbage struct {
	Time      time.Time // when the blob became garbage
	BlobKey   string
	VersionID string // version of the object the blob belonged to; "" for parts
	Size      int64
}
