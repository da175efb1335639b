package meta

import "time"

// Bucket is a bucket record.
type Bucket struct {
	Name    string
	Region  string
	Created time.Time
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
	// VersionID identifies this write of the object; it is new on every
	// write. Garbage entries carry it so that GC can tell whether a reader
	// still streams the blocks.
	VersionID string
	Size      int64
	ETag      string
	Modified  time.Time
	Checksum  Checksum
	Meta      Metadata
	PartSizes []int64 // sizes of the parts of a multipart object; nil otherwise
	Blocks    []Block
	// Inline is the data of an inline object when writing it. Reads of the
	// record leave it nil: ObjectData reads the data.
	Inline []byte
}

// Upload is a multipart upload in progress.
type Upload struct {
	Bucket, Key       string
	ID                string // UploadIDLen bytes
	Initiated         time.Time
	Meta              Metadata
	ChecksumAlgorithm string
	ChecksumType      string
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
