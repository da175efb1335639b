package objects

import (
	"time"

	"github.com/coffer-s3/coffer/internal/checksum"
	"github.com/coffer-s3/coffer/internal/meta"
)

// Bucket describes one bucket.
type Bucket struct {
	Name       string
	Region     string // LocationConstraint given at creation; "" for the default region
	Created    time.Time
	Versioning string // "", "Enabled" or "Suspended", as GetBucketVersioning reports it
	Owner      string // canonical ID of the creator; "" for a bucket from before owners were recorded
}

// Metadata is what a client stores with an object besides its bytes: the
// standard headers S3 round-trips and the user's x-amz-meta-* pairs.
type Metadata struct {
	ContentType        string
	ContentEncoding    string
	ContentDisposition string
	ContentLanguage    string
	CacheControl       string
	Expires            string            // kept verbatim, as S3 does
	User               map[string]string // keys lower-case, without the x-amz-meta- prefix
}

// ChecksumValue is a flexible checksum stored with an object or part.
type ChecksumValue struct {
	Algorithm checksum.Algorithm // "" if none
	Value     string             // base64, as S3 returns it; composite values end in "-N"
	Type      string             // "FULL_OBJECT" or "COMPOSITE"; "" if none
}

// ObjectInfo describes a stored object.
type ObjectInfo struct {
	Bucket       string
	Key          string
	Size         int64
	ETag         string // without quotes: hex MD5, or hex MD5-of-MD5s + "-N" for multipart
	LastModified time.Time
	Meta         Metadata
	Checksum     ChecksumValue
	PartSizes    []int64 // sizes of the parts of a multipart object, in order; nil otherwise
	TagCount     int     // number of tags (x-amz-tagging-count)
	Tags         []Tag   // the tags, in the order given; nil in listings
	// VersionID is the S3 version ID to report in x-amz-version-id: the
	// version's own ID, "null" for a null version of a bucket that has
	// versioning configured (written before it was, or while suspended),
	// "" in a bucket that never had it (S3 reports no version then) and
	// on a write that made a null version.
	VersionID string
}

// PartCount returns the number of parts (0 for an object not made by
// multipart upload).
func (o ObjectInfo) PartCount() int { return len(o.PartSizes) }

// ReadConditions are the If-* preconditions of GET, HEAD and a copy source.
// Zero fields are absent. See
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html
type ReadConditions struct {
	IfMatch           string // ETag, quotes optional, "*" allowed
	IfNoneMatch       string
	IfModifiedSince   time.Time
	IfUnmodifiedSince time.Time
	// IfRange is If-Range, nil for none: GetOptions.Range is served only
	// if it names the object as it is, else the whole object is.
	IfRange *RangeValidator
}

// RangeValidator is the validator of an If-Range (RFC 9110 section
// 13.1.5): an entity tag, unquoted. A validator that can never hold — a
// weak entity tag, an HTTP date, anything else — is the zero value.
//
// A date is never honoured: Last-Modified has whole seconds, and an
// object overwritten within the second of the one a client holds has the
// same one, so the date would join the old object's head to the new
// one's tail — what If-Range is for preventing (RFC 9110 section 8.8.2.2
// calls such a date weak). The client gets the whole object instead.
type RangeValidator struct {
	ETag string
}

// holds reports whether v names an object with the given ETag (strong
// comparison). A client resuming a download sends the validator of what
// it has; if the object changed since, it must get the whole new object.
func (v *RangeValidator) holds(etag string) bool {
	return v.ETag != "" && v.ETag == etag
}

// WriteConditions are the conditional-write preconditions of PutObject,
// CopyObject and CompleteMultipartUpload: If-None-Match (* to create only,
// or ETags the current object must not have) and If-Match (* or ETags it
// must have). Checked atomically with the commit.
type WriteConditions struct {
	IfMatch     string
	IfNoneMatch string
}

// Range is a parsed, unresolved HTTP byte range: bytes=Start-End,
// bytes=Start- (End < 0) or bytes=-Suffix (Start < 0; Suffix 0 is never
// satisfiable).
type Range struct {
	Start, End int64 // End inclusive; End < 0 means open-ended
	Suffix     int64 // > 0 for a suffix range
}

// GetOptions selects what GetObject and HeadObject return.
type GetOptions struct {
	VersionID  string // "" for the current version; "null" or a version ID
	Range      *Range // nil for the whole object
	PartNumber int    // > 0 selects one part (whole object part 1 for a non-multipart object)
	Cond       ReadConditions
}

// Object is an open object: its description, the byte range being served
// and a stream of exactly Length bytes. The caller must close Body.
type Object struct {
	Info    ObjectInfo
	Start   int64 // first byte served
	Length  int64 // bytes served
	Partial bool  // a Range or PartNumber selected less than the whole (206)
	// PartChecksum is, for a read with a PartNumber, the checksum of the
	// part served, of the object's algorithm and type (the object's own
	// checksum for an object not made of parts); zero if it has none.
	PartChecksum ChecksumValue
	Body         interface {
		Read(p []byte) (int, error)
		Close() error
	}

	tags []meta.Tag // the version's tags, for CopyObject
}

// ChecksumInput asks a write to compute and verify a flexible checksum.
type ChecksumInput struct {
	Algorithm checksum.Algorithm // "" for none
	// Value is the expected base64 value from a header. If empty and Trailer
	// is set, Trailer is called after the body reached EOF to get it, and
	// an empty value it returns (the trailer did not come) is refused.
	Value   string
	Trailer func() string
}

// PutInput describes a PutObject body and its headers.
type PutInput struct {
	// Size is the exact body length (Content-Length or
	// x-amz-decoded-content-length), or SizeUnknown for a body read to its
	// end: the file of a browser form upload.
	Size       int64
	ContentMD5 string // base64 as sent; "" if absent. Mismatch is BadDigest.
	Checksum   ChecksumInput
	Meta       Metadata
	Tags       []Tag  // x-amz-tagging
	ACL        []byte // the object's ACL in stored form (package acl); nil: private to the bucket's owner
	Cond       WriteConditions
}

// SizeUnknown is PutInput.Size for a body whose length is known only at
// its end. The body is read to its end, at most Config.MaxObjectSize bytes
// (else EntityTooLarge); a caller with a tighter limit enforces it in the
// reader.
const SizeUnknown = -1

// CopyInput describes a CopyObject.
type CopyInput struct {
	SrcBucket, SrcKey string
	SrcVersionID      string // "" for the current version
	SrcCond           ReadConditions
	ReplaceMeta       bool     // x-amz-metadata-directive: REPLACE
	Meta              Metadata // used when ReplaceMeta
	ReplaceTags       bool     // x-amz-tagging-directive: REPLACE
	Tags              []Tag    // used when ReplaceTags
	ACL               []byte   // the copy's ACL, as PutInput.ACL (S3 never copies an ACL)
	Cond              WriteConditions
	ChecksumAlgorithm checksum.Algorithm // x-amz-checksum-algorithm for the new object; "" keeps the source's
	// StorageClass reports an x-amz-storage-class header (STANDARD, the
	// one class): S3 takes it as a change that makes a copy of an object
	// onto itself legal, as it does a new checksum algorithm.
	StorageClass bool
}

// CreateUploadInput describes a CreateMultipartUpload.
type CreateUploadInput struct {
	Meta              Metadata
	Tags              []Tag  // the object's tags (x-amz-tagging)
	ACL               []byte // the object's ACL, as PutInput.ACL
	ChecksumAlgorithm checksum.Algorithm
	ChecksumType      string // "COMPOSITE" (default when an algorithm is set) or "FULL_OBJECT"
	Initiator         string // who starts the upload, opaque to objects: ListMultipartUploads and ListParts report it
}

// Upload describes an in-progress multipart upload.
type Upload struct {
	Bucket, Key       string
	UploadID          string
	Initiated         time.Time
	Meta              Metadata
	ChecksumAlgorithm checksum.Algorithm
	ChecksumType      string
	ACL               []byte // the ACL the object will have (CreateUploadInput.ACL)
	Initiator         string // CreateUploadInput.Initiator; "" for an upload from before it was kept
}

// PartInput describes an UploadPart body.
type PartInput struct {
	Size       int64
	ContentMD5 string
	Checksum   ChecksumInput
}

// PartCopyInput describes an UploadPartCopy.
type PartCopyInput struct {
	SrcBucket, SrcKey string
	SrcVersionID      string // "" for the current version
	SrcRange          *Range // bytes=first-last, both required by S3 when present
	SrcCond           ReadConditions
}

// Part describes one uploaded part.
type Part struct {
	Number       int
	Size         int64
	ETag         string // hex MD5, no quotes
	LastModified time.Time
	Checksum     ChecksumValue
}

// CompletePart is one <Part> of a CompleteMultipartUpload request.
type CompletePart struct {
	Number   int
	ETag     string // as sent, quotes optional
	Checksum string // base64 checksum of the part, if the client sent one
}

// CompleteInput describes a CompleteMultipartUpload.
type CompleteInput struct {
	Parts    []CompletePart
	Cond     WriteConditions
	Checksum ChecksumInput // full-object checksum the client asserts, if any
	// ChecksumType is the checksum type the client asserts
	// (x-amz-checksum-type: COMPOSITE or FULL_OBJECT), if any. For an
	// upload with a checksum algorithm, another type than the upload's is
	// BadDigest.
	ChecksumType string
}

// ListInput is a ListObjects (v1 or v2) query.
type ListInput struct {
	Prefix     string
	Delimiter  string
	StartAfter string // exclusive: marker, start-after or decoded continuation token
	MaxKeys    int    // 0 returns nothing but IsTruncated; callers clamp to 1000
	// Owners asks for each object's owner (ListResult.Owners), which
	// costs decoding more of each record.
	Owners bool
}

// ListResult is one page of a listing, objects and common prefixes merged in
// key order.
type ListResult struct {
	Objects []ObjectInfo
	// Owners are, when ListInput.Owners asks for them, the canonical IDs
	// of the owners in the ACLs of Objects, in order; "" for an object
	// stored without an ACL, which is the bucket owner's (so is every
	// object where ACLs are off: the caller knows the bucket's
	// settings). They are apart from ObjectInfo, which listings that do
	// not ask would carry at a cost.
	Owners         []string
	CommonPrefixes []string
	IsTruncated    bool
	// NextMarker is the last key or common prefix returned when truncated:
	// the StartAfter of the next page.
	NextMarker string
}

// ListUploadsInput is a ListMultipartUploads query.
type ListUploadsInput struct {
	Prefix, Delimiter string
	KeyMarker         string
	UploadIDMarker    string
	MaxUploads        int
}

// ListUploadsResult is one page of ListMultipartUploads.
type ListUploadsResult struct {
	Uploads            []Upload
	CommonPrefixes     []string
	IsTruncated        bool
	NextKeyMarker      string
	NextUploadIDMarker string
}

// ListPartsInput is a ListParts query.
type ListPartsInput struct {
	PartNumberMarker int
	MaxParts         int
}

// ListPartsResult is one page of ListParts.
type ListPartsResult struct {
	Upload               Upload
	Parts                []Part
	IsTruncated          bool
	NextPartNumberMarker int
}

// ObjectRef names an object version for DeleteObject and DeleteObjects:
// VersionID "" is the latest version (a delete marker is written in a
// versioned bucket). If makes the delete conditional.
type ObjectRef struct {
	Key, VersionID string
	If             DeleteConditions
}

// DeleteConditions are a conditional delete's preconditions (If-Match,
// x-amz-if-match-last-modified-time and x-amz-if-match-size, or the ETag,
// LastModifiedTime and Size of a DeleteObjects entry). Zero fields are
// absent. They are checked, atomically with the delete, against the
// version it acts on: the version named, or the latest version (which may
// be a delete marker: no ETag, so only "*" matches it, and size 0). A
// delete whose target does not exist does nothing and succeeds, as for an
// unconditional delete of an absent key, but writes no delete marker. See
// https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-deletes.html
type DeleteConditions struct {
	IfMatch             string     // "*" or ETags, quotes optional
	IfMatchLastModified *time.Time // whole seconds are compared; nil: no condition
	IfMatchSize         *int64
}

// DeleteResult is the outcome of one delete: of DeleteObject, or of one
// ObjectRef of DeleteObjects.
type DeleteResult struct {
	Key       string
	VersionID string // the version deleted, as requested ("" for the latest)
	// DeleteMarker reports that a delete marker was written, or that the
	// version deleted was one; DeleteMarkerVersionID is its version ID.
	DeleteMarker          bool
	DeleteMarkerVersionID string
	Err                   error // nil on success (deleting an absent key or version succeeds)
}

// ListVersionsInput is a ListObjectVersions query.
type ListVersionsInput struct {
	Prefix, Delimiter string
	KeyMarker         string
	VersionIDMarker   string // only with KeyMarker
	MaxKeys           int    // 0 returns nothing; callers clamp to 1000
	Owners            bool   // return each version's owner (ObjectVersion.Owner), as ListInput.Owners
}

// ObjectVersion is one entry of ListObjectVersions: an object version or a
// delete marker.
type ObjectVersion struct {
	Key          string
	VersionID    string // "null" for the null version
	IsLatest     bool
	DeleteMarker bool
	Size         int64
	ETag         string
	LastModified time.Time
	Checksum     ChecksumValue
	// Owner is the canonical ID of the owner in the version's ACL, when
	// ListVersionsInput.Owners asks for it, as ListResult.Owners; "" for
	// a delete marker, the bucket owner's.
	Owner string
}

// ListVersionsResult is one page of ListObjectVersions: versions (objects
// and delete markers) in key order, each key's newest first, and common
// prefixes.
type ListVersionsResult struct {
	Versions            []ObjectVersion
	CommonPrefixes      []string
	IsTruncated         bool
	NextKeyMarker       string
	NextVersionIDMarker string
}

// GCStats reports one garbage-collection pass.
type GCStats struct {
	Grace          time.Duration // the pass's grace: as asked, or on a shared store at least GCGrace
	Scanned        int           // blobs listed
	Deleted        int           // blobs removed
	DeletedBytes   int64         // when known
	Busy           int           // queued blobs kept because a reader still streams their version
	ExpiredUploads int           // abandoned multipart uploads aborted (none yet: uploads never expire by default)
	// Elsewhere is set when the pass did nothing because another node of
	// a shared store holds the GC lease (its pass covers this node's
	// garbage too).
	Elsewhere bool
}
