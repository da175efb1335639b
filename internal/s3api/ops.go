package s3api

import (
	"net/http"
	"net/url"

	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/s3err"
	"github.com/coffer-s3/coffer/internal/s3xml"
)

// scope is the level of the resource a request addresses.
type scope int

const (
	scopeService scope = iota // "/": no bucket
	scopeBucket               // "/bucket"
	scopeObject               // "/bucket/key"
)

// String returns the scope as the compatibility document spells it.
func (s scope) String() string {
	switch s {
	case scopeService:
		return "service"
	case scopeBucket:
		return "bucket"
	case scopeObject:
		return "object"
	}
	return "unknown"
}

// bodyKind says what the pipeline does with a request body before the
// handler runs.
type bodyKind int

const (
	bodyNone   bodyKind = iota // ignored and never read
	bodyXML                    // a small document (XML, or a JSON bucket policy), read whole (up to op.limit bytes) and verified
	bodyStream                 // object data: Content-Length required, at most maxObjectSize, streamed
)

// maxObjectSize is the largest single PutObject or UploadPart, as in S3.
const maxObjectSize = 5 << 30

// maxKeyLen is the longest object key, in bytes, as in S3.
const maxKeyLen = 1024

// XML bodies are read whole, so each op that takes one has a limit, checked
// against Content-Length before reading and again while reading. The
// limits are s3xml's, sized for the largest legitimate body of each kind: a
// configuration document (64 KiB; a lifecycle configuration of 1000 rules,
// 2 MiB), a DeleteObjects of 1000 keys of 1024
// bytes with escaping (8 MiB), a CompleteMultipartUpload of 10000 parts
// with checksums (8 MiB; 1 MiB would refuse a valid upload of 10000 parts
// with SHA-256 checksums, about 1.6 MB).
const (
	maxConfigBody   = s3xml.MaxConfigBody
	maxDeleteBody   = s3xml.MaxDeleteBody
	maxCompleteBody = s3xml.MaxCompleteBody
	// maxLifecycleBody admits S3's 1000 rules.
	maxLifecycleBody = s3xml.MaxLifecycleBody
	// maxPolicyBody admits a bucket policy of S3's 20 KB limit with room
	// to spare; the policy parser enforces the limit itself, with S3's
	// MalformedPolicy message.
	maxPolicyBody = 64 << 10
)

// An op is one S3 operation: how to recognise it, who may call it, and what
// runs it. The table below is the readable spec of what Coffer serves, and
// docs/s3-compatibility.md is rendered from it.
type op struct {
	name   string     // AWS API name, e.g. "CreateMultipartUpload"
	method string     // http.MethodPost
	scope  scope      // scopeService | scopeBucket | scopeObject
	query  string     // distinguishing sub-resource, e.g. "uploads" or "list-type=2"; "" if none
	header string     // distinguishing header, e.g. "x-amz-copy-source"; "" if none
	action iam.Action // what the caller must be allowed, e.g. iam.PutObject
	// versionAction, if set, replaces action when the request names a
	// version (versionId), e.g. iam.GetObjectVersion for GetObject.
	versionAction iam.Action
	// perKey says the handler authorizes action itself, so the pipeline
	// only authenticates: on each key it touches (DeleteObjects), or once
	// it has read what the decision depends on (PutObjectTagging: the tags
	// of its body, for s3:RequestObjectTag conditions).
	perKey bool
	// public says the request is neither authenticated nor authorized,
	// and action is empty: a CORS preflight, which S3 answers from the
	// bucket's CORS rules alone, whatever credentials it carries.
	public bool
	// form says the request is authenticated by the fields of its body,
	// not its headers (a browser form upload): the handler authenticates
	// and authorizes once it has read them.
	form bool
	// anyQuery says the row matches whatever sub-resources the query
	// names: a preflight carries those of the request it precedes.
	anyQuery bool
	body     bodyKind // what the pipeline does with the body
	limit    int64    // for bodyXML: the largest body accepted
	handle   func(*Handler, http.ResponseWriter, *http.Request, *request) error
}

// ops lists every operation Coffer serves. For each (method, scope), rows
// with a query come before rows without, and rows with a header before rows
// without: parseOp takes the first row that matches (TestOpsOrder checks
// this). A read-only lookup table.
var ops = []op{
	// Service.
	{name: "ListBuckets", method: http.MethodGet, scope: scopeService, action: iam.ListAllMyBuckets, handle: (*Handler).listBuckets},

	// Buckets.
	{name: "GetBucketLocation", method: http.MethodGet, scope: scopeBucket, query: "location", action: iam.GetBucketLocation, handle: (*Handler).getBucketLocation},
	{name: "GetBucketVersioning", method: http.MethodGet, scope: scopeBucket, query: "versioning", action: iam.GetBucketVersioning, handle: (*Handler).getBucketVersioning},
	{name: "ListObjectVersions", method: http.MethodGet, scope: scopeBucket, query: "versions", action: iam.ListBucketVersions, handle: (*Handler).listObjectVersions},
	{name: "GetBucketAcl", method: http.MethodGet, scope: scopeBucket, query: "acl", action: iam.GetBucketAcl, handle: (*Handler).getBucketACL},
	{name: "GetBucketPolicy", method: http.MethodGet, scope: scopeBucket, query: "policy", action: iam.GetBucketPolicy, handle: (*Handler).getBucketPolicy},
	{name: "GetPublicAccessBlock", method: http.MethodGet, scope: scopeBucket, query: "publicAccessBlock", action: iam.GetBucketPublicAccessBlock, handle: (*Handler).getPublicAccessBlock},
	{name: "GetBucketOwnershipControls", method: http.MethodGet, scope: scopeBucket, query: "ownershipControls", action: iam.GetBucketOwnership, handle: (*Handler).getBucketOwnership},
	{name: "GetBucketTagging", method: http.MethodGet, scope: scopeBucket, query: "tagging", action: iam.GetBucketTagging, handle: (*Handler).getBucketTagging},
	{name: "GetBucketLifecycleConfiguration", method: http.MethodGet, scope: scopeBucket, query: "lifecycle", action: iam.GetLifecycleConfiguration, handle: (*Handler).getBucketLifecycle},
	{name: "GetBucketPolicyStatus", method: http.MethodGet, scope: scopeBucket, query: "policyStatus", action: iam.GetBucketPolicyStatus, handle: (*Handler).getBucketPolicyStatus},
	{name: "GetBucketCors", method: http.MethodGet, scope: scopeBucket, query: "cors", action: iam.GetBucketCORS, handle: (*Handler).getBucketCORS},
	{name: "ListMultipartUploads", method: http.MethodGet, scope: scopeBucket, query: "uploads", action: iam.ListBucketMultipartUploads, handle: (*Handler).listMultipartUploads},
	{name: "ListObjectsV2", method: http.MethodGet, scope: scopeBucket, query: "list-type=2", action: iam.ListBucket, handle: (*Handler).listObjectsV2},
	{name: "ListObjects", method: http.MethodGet, scope: scopeBucket, action: iam.ListBucket, handle: (*Handler).listObjects},
	{name: "HeadBucket", method: http.MethodHead, scope: scopeBucket, action: iam.ListBucket, handle: (*Handler).headBucket},
	{name: "PutBucketAcl", method: http.MethodPut, scope: scopeBucket, query: "acl", action: iam.PutBucketAcl, body: bodyXML, limit: maxConfigBody, handle: (*Handler).putBucketACL},
	{name: "PutBucketPolicy", method: http.MethodPut, scope: scopeBucket, query: "policy", action: iam.PutBucketPolicy, body: bodyXML, limit: maxPolicyBody, handle: (*Handler).putBucketPolicy},
	{name: "PutPublicAccessBlock", method: http.MethodPut, scope: scopeBucket, query: "publicAccessBlock", action: iam.PutBucketPublicAccessBlock, body: bodyXML, limit: maxConfigBody, handle: (*Handler).putPublicAccessBlock},
	{name: "PutBucketOwnershipControls", method: http.MethodPut, scope: scopeBucket, query: "ownershipControls", action: iam.PutBucketOwnership, body: bodyXML, limit: maxConfigBody, handle: (*Handler).putBucketOwnership},
	{name: "PutBucketTagging", method: http.MethodPut, scope: scopeBucket, query: "tagging", action: iam.PutBucketTagging, body: bodyXML, limit: maxConfigBody, handle: (*Handler).putBucketTagging},
	{name: "PutBucketLifecycleConfiguration", method: http.MethodPut, scope: scopeBucket, query: "lifecycle", action: iam.PutLifecycleConfiguration, body: bodyXML, limit: maxLifecycleBody, handle: (*Handler).putBucketLifecycle},
	{name: "PutBucketVersioning", method: http.MethodPut, scope: scopeBucket, query: "versioning", action: iam.PutBucketVersioning, body: bodyXML, limit: maxConfigBody, handle: (*Handler).putBucketVersioning},
	{name: "PutBucketCors", method: http.MethodPut, scope: scopeBucket, query: "cors", action: iam.PutBucketCORS, body: bodyXML, limit: maxConfigBody, handle: (*Handler).putBucketCORS},
	{name: "CreateBucket", method: http.MethodPut, scope: scopeBucket, action: iam.CreateBucket, body: bodyXML, limit: maxConfigBody, handle: (*Handler).createBucket},
	{name: "DeleteObjects", method: http.MethodPost, scope: scopeBucket, query: "delete", action: iam.DeleteObject, perKey: true, body: bodyXML, limit: maxDeleteBody, handle: (*Handler).deleteObjects},
	{name: "PostObject", method: http.MethodPost, scope: scopeBucket, action: iam.PutObject, form: true, handle: (*Handler).postObject},
	{name: "DeletePublicAccessBlock", method: http.MethodDelete, scope: scopeBucket, query: "publicAccessBlock", action: iam.PutBucketPublicAccessBlock, handle: (*Handler).deletePublicAccessBlock},
	{name: "DeleteBucketOwnershipControls", method: http.MethodDelete, scope: scopeBucket, query: "ownershipControls", action: iam.PutBucketOwnership, handle: (*Handler).deleteBucketOwnership},
	{name: "DeleteBucketTagging", method: http.MethodDelete, scope: scopeBucket, query: "tagging", action: iam.PutBucketTagging, handle: (*Handler).deleteBucketTagging},
	{name: "DeleteBucketLifecycle", method: http.MethodDelete, scope: scopeBucket, query: "lifecycle", action: iam.PutLifecycleConfiguration, handle: (*Handler).deleteBucketLifecycle},
	{name: "DeleteBucketPolicy", method: http.MethodDelete, scope: scopeBucket, query: "policy", action: iam.DeleteBucketPolicy, handle: (*Handler).deleteBucketPolicy},
	// S3 authorizes DeleteBucketCors with s3:PutBucketCORS.
	{name: "DeleteBucketCors", method: http.MethodDelete, scope: scopeBucket, query: "cors", action: iam.PutBucketCORS, handle: (*Handler).deleteBucketCORS},
	{name: "DeleteBucket", method: http.MethodDelete, scope: scopeBucket, action: iam.DeleteBucket, handle: (*Handler).deleteBucket},
	{name: "OptionsBucket", method: http.MethodOptions, scope: scopeBucket, public: true, anyQuery: true, handle: (*Handler).preflight},

	// Objects.
	{name: "ListParts", method: http.MethodGet, scope: scopeObject, query: "uploadId", action: iam.ListMultipartUploadParts, handle: (*Handler).listParts},
	{name: "GetObjectAcl", method: http.MethodGet, scope: scopeObject, query: "acl", action: iam.GetObjectAcl, versionAction: iam.GetObjectVersionAcl, handle: (*Handler).getObjectACL},
	{name: "GetObjectAttributes", method: http.MethodGet, scope: scopeObject, query: "attributes", action: iam.GetObjectAttributes, versionAction: iam.GetObjectVersionAttributes, handle: (*Handler).getObjectAttributes},
	{name: "GetObjectTagging", method: http.MethodGet, scope: scopeObject, query: "tagging", action: iam.GetObjectTagging, versionAction: iam.GetObjectVersionTagging, handle: (*Handler).getObjectTagging},
	{name: "GetObject", method: http.MethodGet, scope: scopeObject, action: iam.GetObject, versionAction: iam.GetObjectVersion, handle: (*Handler).getObject},
	{name: "HeadObject", method: http.MethodHead, scope: scopeObject, action: iam.GetObject, versionAction: iam.GetObjectVersion, handle: (*Handler).headObject},
	{name: "UploadPartCopy", method: http.MethodPut, scope: scopeObject, query: "uploadId", header: "x-amz-copy-source", action: iam.PutObject, handle: (*Handler).uploadPartCopy},
	{name: "UploadPart", method: http.MethodPut, scope: scopeObject, query: "uploadId", action: iam.PutObject, body: bodyStream, handle: (*Handler).uploadPart},
	{name: "PutObjectTagging", method: http.MethodPut, scope: scopeObject, query: "tagging", action: iam.PutObjectTagging, versionAction: iam.PutObjectVersionTagging, perKey: true, body: bodyXML, limit: maxConfigBody, handle: (*Handler).putObjectTagging},
	{name: "PutObjectAcl", method: http.MethodPut, scope: scopeObject, query: "acl", action: iam.PutObjectAcl, versionAction: iam.PutObjectVersionAcl, body: bodyXML, limit: maxConfigBody, handle: (*Handler).putObjectACL},
	{name: "CopyObject", method: http.MethodPut, scope: scopeObject, header: "x-amz-copy-source", action: iam.PutObject, handle: (*Handler).copyObject},
	{name: "PutObject", method: http.MethodPut, scope: scopeObject, action: iam.PutObject, body: bodyStream, handle: (*Handler).putObject},
	{name: "CreateMultipartUpload", method: http.MethodPost, scope: scopeObject, query: "uploads", action: iam.PutObject, handle: (*Handler).createMultipartUpload},
	{name: "CompleteMultipartUpload", method: http.MethodPost, scope: scopeObject, query: "uploadId", action: iam.PutObject, body: bodyXML, limit: maxCompleteBody, handle: (*Handler).completeMultipartUpload},
	{name: "AbortMultipartUpload", method: http.MethodDelete, scope: scopeObject, query: "uploadId", action: iam.AbortMultipartUpload, handle: (*Handler).abortMultipartUpload},
	{name: "DeleteObjectTagging", method: http.MethodDelete, scope: scopeObject, query: "tagging", action: iam.DeleteObjectTagging, versionAction: iam.DeleteObjectVersionTagging, handle: (*Handler).deleteObjectTagging},
	{name: "DeleteObject", method: http.MethodDelete, scope: scopeObject, action: iam.DeleteObject, versionAction: iam.DeleteObjectVersion, handle: (*Handler).deleteObject},
	{name: "OptionsObject", method: http.MethodOptions, scope: scopeObject, public: true, anyQuery: true, handle: (*Handler).preflight},
}

// opNotImplemented answers every request no row of ops matches: an S3
// operation Coffer does not implement, or a method S3 does not have. It
// still goes through authentication and authorization, so that only a
// caller allowed everything ("s3:*") learns what is missing; others get
// AccessDenied as they would for any operation.
var opNotImplemented = op{
	name:   "NotImplemented",
	action: iam.NotImplementedAction,
	handle: (*Handler).notImplemented,
}

// subresources lists the query parameters S3 treats as sub-resources: their
// presence selects a different operation. A request carrying one that no op
// row claims for its method and scope is NotImplemented, never a false
// success (PUT ?tagging must not store an object, GET ?versions must not
// list objects). A read-only lookup table; TestSubresources checks that
// every op's query is here.
var subresources = map[string]bool{
	// Served (for some method and scope).
	"acl": true, "attributes": true, "cors": true, "delete": true, "lifecycle": true, "location": true, "ownershipControls": true,
	"policy": true, "policyStatus": true, "publicAccessBlock": true, "tagging": true, "uploadId": true, "uploads": true,
	"versioning": true, "versions": true,
	// Not served.
	"abac": true, "accelerate": true, "analytics": true,
	"encryption": true, "intelligent-tiering": true, "inventory": true, "legal-hold": true,
	"logging": true, "metadataConfiguration": true, "metadataTable": true,
	"metrics": true, "notification": true, "object-lock": true,
	"renameObject": true, "replication": true, "requestPayment": true, "restore": true, "retention": true,
	"select": true, "session": true, "torrent": true,
	"website": true,
}

// actionFor returns what the caller must be allowed for a request with
// query q: versionAction if the op has one and q names a version.
func (o *op) actionFor(q url.Values) iam.Action {
	if o.versionAction != "" {
		if _, ok := q["versionId"]; ok {
			return o.versionAction
		}
	}
	return o.action
}

// notImplemented is the handler of opNotImplemented.
func (h *Handler) notImplemented(_ http.ResponseWriter, _ *http.Request, _ *request) error {
	// S3's wording for a request it does not implement, as opposed to the
	// table's, which is about a header.
	return s3err.Newf(s3err.NotImplemented, "", "A header or query you provided requested a function that is not implemented.")
}
