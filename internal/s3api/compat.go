package s3api

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// RenderCompatibility writes docs/s3-compatibility.md: the operations
// Coffer serves, rendered from the op table, and what it answers for
// everything else. A golden test keeps the committed file current.
func RenderCompatibility(w io.Writer) error {
	var b strings.Builder
	b.WriteString(`# S3 compatibility

<!-- Generated from internal/s3api/ops.go by RenderCompatibility.
     Do not edit: run go test ./internal/s3api -run TestCompatibilityDoc -update. -->

Coffer serves the S3 operations below, path-style (` + "`/bucket/key`" + `) and,
when a domain is configured, virtual-hosted-style (` + "`Host: bucket.domain`" + `).
Every request but a CORS preflight is authenticated with AWS Signature
Version 4 (header or presigned URL; Version 2 for legacy clients) and
authorized for the IAM action listed before any storage is touched. Anonymous requests are allowed only
what a bucket policy grants to ` + "`\"Principal\": \"*\"`" + `. A request for anything else is answered ` + "`501 NotImplemented`" + `,
never with a false success.

## Operations

| Operation | Request | IAM action |
| --- | --- | --- |
`)
	for _, o := range ops {
		action := "`" + string(o.action) + "`"
		if o.public {
			action = "none: not authenticated"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", o.name, requestLine(&o), action)
	}

	var missing []string
	for k := range subresources {
		if !servedSubresource(k) {
			missing = append(missing, k)
		}
	}
	slices.Sort(missing)
	for i, k := range missing {
		missing[i] = "`?" + k + "`"
	}
	b.WriteString(`
## Not implemented

These sub-resources are recognised and answered ` + "`NotImplemented`" + ` for every
method, as are the served sub-resources with a method not listed above (for
example ` + "`PUT ?location`" + `) and any method S3 does not have:

`)
	b.WriteString(strings.Join(missing, ", "))
	b.WriteString(".\n\nThese request headers ask for features Coffer does not have and are answered\n`NotImplemented` on object writes:\n\n")
	var hdrs []string
	for _, h := range unsupportedHeaders {
		hdrs = append(hdrs, "`"+strings.ToLower(h)+"`")
	}
	b.WriteString(strings.Join(hdrs, ", "))
	b.WriteString(", `x-amz-storage-class` other than `STANDARD`,\nand `x-amz-acl: aws-exec-read`")
	b.WriteString(`.

## Behaviour

- Versioning: PutBucketVersioning (Enabled or Suspended; MFA delete is
  ` + "`NotImplemented`" + `) and GetBucketVersioning. With versioning enabled every
  write adds a version with its own ID (32 hex digits, later versions sorting
  first); suspended, writes replace the ` + "`null`" + ` version. A delete without a
  version ID writes a delete marker; with one it removes that version, and
  the version below becomes current again. GET/HEAD of a key whose latest
  version is a delete marker is ` + "`404 NoSuchKey`" + ` with ` + "`x-amz-delete-marker: true`" + `;
  GET of a delete marker by ID is ` + "`405 MethodNotAllowed`" + `, a copy source naming one by
  ID ` + "`400 InvalidRequest`" + `. A malformed version
  ID is ` + "`400 InvalidArgument`" + `, an unknown one ` + "`404 NoSuchVersion`" + `.
  ListObjectVersions works on every bucket (objects of a never-versioned
  bucket are their ` + "`null`" + ` versions); a page resumes at the place its
  version-id-marker names, so versions deleted between pages (a client
  emptying a bucket page by page) hide none of the others (design 0005).
  A bucket that never had versioning
  configured sends no ` + "`x-amz-version-id`" + ` (except to a request for the ` + "`null`" + `
  version by ID); once it has, reads of an object written before, or while
  suspended, report ` + "`x-amz-version-id: null`" + `, and writes while suspended
  (PutObject, CopyObject, CompleteMultipartUpload, POST) send none, as S3 does.
- Tagging: Put/Get/DeleteObjectTagging (of any version, in place: no
  new version), Put/Get/DeleteBucketTagging, ` + "`x-amz-tagging`" + ` on PutObject,
  CreateMultipartUpload and CopyObject (with ` + "`x-amz-tagging-directive: REPLACE`" + `;
  ` + "`COPY`" + `, the default, copies the source's tags), ` + "`x-amz-tagging-count`" + ` on
  GET and HEAD. S3's limits: 10 tags an object (50 a bucket), keys of 1 to
  128 characters and values of up to 256, of letters, digits, spaces (not
  tabs or newlines) and ` + "`+ - = . _ : / @`" + `, keys unique and not starting with
  ` + "`aws:`" + ` (` + "`InvalidTag`" + `). A Tagging body is checked against S3's schema: one
  TagSet (required: an empty one removes the tags), one Key and Value a Tag
  (` + "`MalformedXML`" + `). A change of the tags or the ACL of a version applies only to what its authorization read (the version, its ACL
  grants, its tags in policy conditions): if the key was overwritten, or
  that version's ACL or tags changed, while the request was read, it is
  ` + "`409 ConditionalRequestConflict`" + ` and changes nothing.
  A write with ` + "`x-amz-tagging`" + ` needs ` + "`s3:PutObjectTagging`" + ` too, and one
  with ` + "`x-amz-acl`" + ` or ` + "`x-amz-grant-*`" + ` (PutObject, CopyObject,
  CreateMultipartUpload, a form's ` + "`acl`" + `) ` + "`s3:PutObjectAcl`" + `, unless a
  bucket ACL's WRITE grant let the writer in.
- GetObjectAttributes returns ETag (unquoted), Checksum, ObjectParts
  (paged with ` + "`x-amz-max-parts`" + ` and ` + "`x-amz-part-number-marker`" + `; each part's
  size and, for objects uploaded with a checksum, its checksum),
  StorageClass and ObjectSize, of any version; the caller needs
  ` + "`s3:GetObject`" + ` (or ` + "`s3:GetObjectVersion`" + `) besides ` + "`s3:GetObjectAttributes`" + `.
- ACLs: every bucket and object has an owner, the principal that created it
  (its canonical ID is derived from the user, so all its keys share it, and
  a user deleted and created again gets another; root has its own), and an access control list: private unless ` + "`x-amz-acl`" + `
  (every canned ACL but ` + "`aws-exec-read`" + `), ` + "`x-amz-grant-*`" + ` headers or an
  AccessControlPolicy body say otherwise, on CreateBucket, PutObject,
  CopyObject (S3 never copies an ACL), CreateMultipartUpload, PutBucketAcl and
  PutObjectAcl (any version). Grants name Coffer principals by canonical ID
  (an unknown one is ` + "`InvalidArgument`" + `; e-mail grantees are
  ` + "`UnresolvableGrantByEmailAddress`" + `) or the AllUsers, AuthenticatedUsers and
  LogDelivery groups. ACLs are enforced: a grant allows what no policy allows
  (` + "`public-read`" + ` opens GET to anonymous callers), never against an explicit
  Deny or outside an access key's scope. Object Ownership
  (Put/Get/DeleteBucketOwnershipControls, ` + "`x-amz-object-ownership`" + ` on
  CreateBucket) is ObjectWriter by default; BucketOwnerEnforced turns ACLs
  off as in S3 (` + "`AccessControlListNotSupported`" + `). A root write without ACL
  headers belongs to the bucket's owner. ListMultipartUploads and ListParts
  report, whoever lists, an upload's Owner as the object's owner-to-be and
  its Initiator as who started it: root as its canonical ID (as Owner), a
  user as S3 names an IAM user, ` + "`arn:aws:iam::000000000000:user/NAME`" + ` with
  its name (Coffer's one account has no number; any 12-digit ID names it in
  a policy). An upload started before Coffer kept its initiator reports its
  Owner. ListObjects, ListObjectsV2 with ` + "`fetch-owner=true`" + ` and
  ListObjectVersions report, whoever lists, each object's owner as its
  Owner, the one GetObjectAcl reports (the bucket's owner where ACLs are
  off), and a delete marker's as the bucket's owner (Coffer records no
  deleter).
- Block Public Access: Put/Get/DeletePublicAccessBlock (the PUT needs
  ` + "`Content-MD5`" + ` or an ` + "`x-amz-checksum-*`" + ` header; GET without settings is
  ` + "`404 NoSuchPublicAccessBlockConfiguration`" + `), enforced as S3 does:
  BlockPublicAcls refuses (` + "`403 AccessDenied`" + `, nothing stored) any request
  that would set an ACL granting to AllUsers or AuthenticatedUsers
  (PutBucketAcl, PutObjectAcl, and ` + "`x-amz-acl`" + `/` + "`x-amz-grant-*`" + ` on
  PutObject, CopyObject, CreateMultipartUpload and PostObject,
  and a re-creation of one's bucket with such an ACL);
  IgnorePublicAcls makes such grants allow nothing, through S3 and the
  console; BlockPublicPolicy
  refuses a public bucket policy (one allowing ` + "`*`" + ` without an
  ` + "`aws:SourceIp`" + ` limit to less than half of the IPv4 and IPv6 addresses,
  as GetBucketPolicyStatus judges); RestrictPublicBuckets
  lets no anonymous request through a public bucket policy (Coffer has one
  account: its users and root are the account). The settings are
  per bucket only (no account-level ones), and, unlike S3 since April
  2023 but as in MinIO and Ceph, a new bucket has none.
- Lifecycle: Put/Get/DeleteBucketLifecycleConfiguration, up to 1000 rules
  (the PUT needs ` + "`Content-MD5`" + ` or an ` + "`x-amz-checksum-*`" + ` header; rules without an
  ID get one). Actions: Expiration (Days, Date at midnight UTC, or
  ExpiredObjectDeleteMarker), NoncurrentVersionExpiration (NoncurrentDays,
  NewerNoncurrentVersions) and AbortIncompleteMultipartUpload; filters: the
  rule-level Prefix or a Filter of one Prefix, Tag, ObjectSizeGreaterThan,
  ObjectSizeLessThan or And. Configurations are checked as S3 checks them
  (` + "`MalformedXML`" + `, ` + "`InvalidArgument`" + `, ` + "`InvalidRequest`" + ` with S3's messages);
  Transition and NoncurrentVersionTransition are checked, then answered
  ` + "`NotImplemented`" + `: Coffer has one storage class. Days count from an object's
  Last-Modified (a noncurrent version's from that of the version that
  replaced it) and round up to the next midnight UTC. A background worker
  applies the rules (hourly, and on ` + "`coffer admin lifecycle run`" + `): it deletes
  expired current versions of unversioned buckets and writes delete markers
  over them in versioned ones (` + "`null`" + ` markers when suspended), removes noncurrent
  versions (keeping the NewerNoncurrentVersions newest), delete markers left
  alone (ExpiredObjectDeleteMarker, or Days/Date once the marker is that old)
  and expired multipart uploads; a version changed since the worker looked
  at it is left alone. GET and HEAD of the current version, PutObject,
  CopyObject and CompleteMultipartUpload answer ` + "`x-amz-expiration`" + ` when a rule
  will expire the object; CreateMultipartUpload and ListParts answer
  ` + "`x-amz-abort-date`" + ` and ` + "`x-amz-abort-rule-id`" + `.
  ` + "`x-amz-transition-default-minimum-object-size`" + ` is kept and returned, and has
  no effect.
- GetObject serves one byte range. A Range header with several ranges, or
  one that does not parse, is ignored and the whole object is returned with
  200, as S3 does. ` + "`partNumber`" + ` selects a part and sets
  ` + "`x-amz-mp-parts-count`" + `. Checksums are returned with
  ` + "`x-amz-checksum-mode: ENABLED`" + `: the object's for a whole-object
  read, the part's (with the object's ` + "`x-amz-checksum-type`" + `) for a
  ` + "`partNumber`" + ` read of an object uploaded in parts with a checksum, none
  for a byte range. With ` + "`If-Range`" + ` (RFC 9110), the range is served only
  if the validator is the object's ETag (compared strongly), and the whole
  object otherwise, so a resumed download of an object overwritten
  meanwhile starts over; a date is never taken (an object overwritten
  within the same second has the same Last-Modified). A 304 carries the
  ETag, Last-Modified, version ID, Cache-Control and Expires a 200 would
  (the last two as ` + "`response-*`" + ` parameters override them).
- ` + "`response-*`" + ` query parameters override response headers on signed requests only.
- PutObject and UploadPart require Content-Length (or
  ` + "`x-amz-decoded-content-length`" + ` with aws-chunked) and accept at most 5 GiB.
  CopyObject copies at most what PutObject accepts, and UploadPartCopy at
  most 5 GiB, of a whole source or of an ` + "`x-amz-copy-source-range`" + `: more is
  ` + "`400 InvalidRequest`" + ` ("The specified copy source is larger than the maximum
  allowable size for a copy source"), as S3 answers.
  ` + "`Content-MD5`" + ` and one flexible checksum (CRC32, CRC32C, CRC64NVME, SHA1,
  SHA256, SHA512, MD5, XXHASH64, XXHASH3 or XXHASH128; in a header or an
  aws-chunked trailer) are verified, stored and returned as
  ` + "`x-amz-checksum-<algorithm>`" + ` (base64 of the big-endian digest; XXHASH3 is
  XXH3-64 and XXHASH128 XXH3-128, seed 0) with ` + "`x-amz-checksum-type: FULL_OBJECT`" + `.
- Multipart checksums: CreateMultipartUpload's ` + "`x-amz-checksum-algorithm`" + ` makes
  every part carry that checksum. ` + "`x-amz-checksum-type`" + ` COMPOSITE (the checksum
  of the parts' checksums, then ` + "`-N`" + `) is the default and works with every
  algorithm; FULL_OBJECT (the checksum of the whole object) is the default
  for CRC64NVME and allowed for the CRCs only: SHA1, SHA256, SHA512, MD5 and
  the xxHashes cannot be combined from the parts' and answer ` + "`InvalidRequest`" + `,
  as does COMPOSITE with CRC64NVME. CompleteMultipartUpload checks an
  asserted ` + "`x-amz-checksum-<algorithm>`" + ` (a COMPOSITE one with or without its
  ` + "`-N`" + `) and ` + "`x-amz-checksum-type`" + ` (` + "`BadDigest`" + ` if they differ) and returns
  both, as do HEAD, GET (the whole object's; with ` + "`partNumber`" + ` the
  part's), GetObjectAttributes, ListParts and CopyObject.
- Error responses carry S3's codes, statuses and messages to the letter
  (the table and its sources are in ` + "`internal/s3err/codes.go`" + `; where the
  error-code documentation and what S3 sends differ, Coffer sends what S3
  sends, e.g. ` + "`The specified bucket does not exist`" + ` without a period).
  Request details go in extra elements (` + "`BucketName`" + `, ` + "`Key`" + `, ` + "`UploadId`" + `,
  ` + "`ArgumentName`" + `/` + "`ArgumentValue`" + `, ` + "`NumberBytesExpected`" + `…), not in the
  message. An aws-chunked body with broken framing is ` + "`IncompleteBody`" + `
  ("The request body terminated unexpectedly"), chunks that do not add up to
  ` + "`x-amz-decoded-content-length`" + ` are ` + "`IncompleteBody`" + ` with both counts, and
  a short signed chunk that is not the last is ` + "`403 InvalidChunkSizeError`" + `,
  as on S3. A request denied on a bucket that does not exist is
  ` + "`404 NoSuchBucket`" + `, whoever sends it (but CreateBucket), and a denied GET or
  HEAD of a missing object is ` + "`404 NoSuchKey`" + ` for a caller who may list the
  bucket, as on S3. Deliberate differences: messages for what S3 has and Coffer
  does not (NotImplemented for lifecycle transitions and MFA delete,
  which say what is missing),
  ` + "`StorageFull`" + ` and the ` + "`ServiceUnavailable`" + ` (with Retry-After) of a failed or unreachable metadata store
  or upstream block store (gateway mode)
  (Coffer's own), and x-amz-content-sha256 and X-Amz-Algorithm messages that
  leave out the ECDSA (SigV4a) values Coffer does not accept.
- A request body that sends nothing for 20 seconds fails with
  ` + "`400 RequestTimeout`" + `, as S3's does; nothing of it is stored. The body of a
  refused request is read for at most 2 seconds (and 256 KiB unless the caller
  authenticated) before the answer, so clients that never send one cannot
  hold the server. An anonymous or unauthenticated request with
  ` + "`Expect: 100-continue`" + ` that is refused before its body is read is answered
  at once without ` + "`100 Continue`" + `, as S3 answers, so the client never sends
  the body; the connection closes after the answer. (An authenticated
  client's refused body is still drained, which asks for it: clients that
  send Expect without waiting are sending it already.)
- A full disk: below the free-space reserve (` + "`disk.reserve`" + `, 256 MiB or 3 % of
  the filesystem, whichever is smaller, but at least the 64 MiB the metadata
  engine needs) every write of object data (PutObject, UploadPart, CopyObject,
  UploadPartCopy, PostObject) is refused with ` + "`507 StorageFull`" + ` and a message
  saying why. S3 never fills, so the code is Coffer's own; 507 is a server
  error that SDKs retry with backoff, as they do MinIO's ` + "`XMinioStorageFull`" + `.
  Reads, deletes and metadata changes go on; the blocks of deleted objects are
  freed within about a second, and writes are accepted again as soon as free
  space is back above the reserve.
- User metadata (` + "`x-amz-meta-*`" + `) is stored in UTF-8: values sent as UTF-8, as
  ISO-8859-1 bytes or as RFC 2047 encoded-words are decoded, and values that
  are not printable ASCII are returned RFC 2047-encoded (` + "`=?UTF-8?B?…?=`" + `), as S3
  returns them.
- GetBucketPolicyStatus of a bucket without a policy answers ` + "`IsPublic`" + ` false
  (as MinIO and Ceph do; AWS answers ` + "`NoSuchBucketPolicy`" + `). A bucket policy's
  resources must be able to name the bucket or its objects; wildcards such
  as ` + "`arn:aws:s3:::*`" + ` qualify, and apply to that bucket only. A user a
  bucket policy names must exist (` + "`MalformedPolicy`" + `, "Invalid principal in
  policy", as on AWS), and the policy applies to that user only, not to one
  deleted and created again under the name. GetBucketPolicy returns the
  document as it was put, or, once a user it names was deleted, with that
  user shown by the canonical ID it had (as AWS shows a deleted principal by
  its ID), which PutBucketPolicy refuses back. A Deny naming the account
  (any 12-digit ID: Coffer has one) applies to all its users.
- Conditional writes: ` + "`If-None-Match`" + ` (` + "`*`" + ` or ETags) and ` + "`If-Match`" + ` on PutObject,
  CopyObject and CompleteMultipartUpload, checked atomically with the commit
  against the current version (a key under a delete marker has none). A
  CompleteMultipartUpload retried after it succeeded (same upload, same parts)
  gets the same answer.
- ` + "`x-amz-expected-bucket-owner`" + ` (and ` + "`x-amz-source-expected-bucket-owner`" + ` on
  CopyObject and UploadPartCopy) is checked on every request that sends it:
  it must name the bucket's owner, by its canonical ID (as ListBuckets and
  GetBucketAcl report it) or by the account (Coffer has one: any 12-digit
  account ID, as in policies); anything else is ` + "`403 AccessDenied`" + ` and
  nothing happens.
- Conditional deletes: ` + "`If-Match`" + ` (` + "`*`" + ` or ETags),
  ` + "`x-amz-if-match-last-modified-time`" + ` and ` + "`x-amz-if-match-size`" + ` on DeleteObject,
  and ` + "`ETag`" + `, ` + "`LastModifiedTime`" + ` and ` + "`Size`" + ` in a DeleteObjects entry,
  checked atomically with the delete against the version it acts on: the
  version named, or the latest version, which may be a delete marker (no
  ETag, so only ` + "`*`" + ` matches it; size 0). A condition that does not
  hold is ` + "`412 PreconditionFailed`" + ` (a ` + "`PreconditionFailed`" + ` entry in
  DeleteObjects) and nothing changes; with no such version there is nothing
  to compare, and the delete succeeds without writing a delete marker. A
  condition on the ETag, time or size also needs ` + "`s3:GetObject`" + `
  (` + "`s3:GetObjectVersion`" + ` with a version ID), as S3 requires for
  ` + "`If-Match`" + ` with an ETag; ` + "`If-Match: *`" + ` needs only the delete
  permission. AWS takes the time and size conditions in directory buckets
  only; Coffer takes them in every bucket, as Ceph does. A time or size that
  does not parse is ` + "`400 InvalidArgument`" + ` (` + "`MalformedXML`" + ` in
  DeleteObjects), never ignored. Where Coffer and AWS differ, Coffer answers
  as the Ceph conformance suite expects: AWS (probed by others in 2026)
  answers a conditional delete of an absent key, or of a key whose latest
  version is a delete marker, ` + "`404 NoSuchKey`" + ` where Coffer answers ` + "`204`" + `
  (nothing to delete, so done), and refuses a version ID with ` + "`If-Match`" + `
  (` + "`501`" + `) where Coffer checks the named version. In DeleteObjects each entry
  is authorized as the DeleteObject it stands for: its ` + "`ETag`" + ` is its
  ` + "`s3:if-match`" + ` (an ` + "`If-Match`" + ` header on the DeleteObjects request stands
  for nothing), and with a version ID that version's tags are the ones
  ` + "`s3:ExistingObjectTag`" + ` tests.
- PostObject (browser form uploads, ` + "`POST /{bucket}`" + ` with a multipart/form-data
  body) is authenticated by its fields: a policy signed with SigV4
  (` + "`x-amz-algorithm`" + `, ` + "`x-amz-credential`" + `, ` + "`x-amz-date`" + `, ` + "`x-amz-signature`" + `) or SigV2
  (` + "`AWSAccessKeyId`" + `, ` + "`signature`" + `); a form without a policy is anonymous and
  needs a bucket policy or ACL that lets anyone write. The policy's expiration
  and every condition (exact, ` + "`eq`" + `, ` + "`starts-with`" + `, ` + "`content-length-range`" + `;
  operators and field names in any case) are checked, and every field but
  ` + "`policy`" + `, the signature, ` + "`AWSAccessKeyId`" + ` and ` + "`x-ignore-*`" + ` must be named by a
  condition (` + "`403 AccessDenied`" + `, "Invalid according to Policy: …"); a policy
  that does not parse is ` + "`400 InvalidPolicyDocument`" + `. The fields before the file
  may take 64 KiB (` + "`MaxPostPreDataLengthExceededError`" + `) and 10 seconds; fields
  after it are ignored. Since nothing about the sender is known until they
  are in, they are read in a pool of their own (an eighth of
  ` + "`--limits.requests`" + `, at least 8 or all of them if fewer, and a queue an eighth of
  ` + "`--limits.queue`" + `;
  past it a form is answered
  ` + "`503 SlowDown`" + `), not holding a request slot: strangers opening forms cannot
  keep other requests out. A field standing for a header may not hold a
  control character other than tab (` + "`400 InvalidArgument`" + `). ` + "`key`" + ` (with ` + "`${filename}`" + `), ` + "`acl`" + `, ` + "`x-amz-grant-*`" + `, ` + "`tagging`" + ` (a
  Tagging document), ` + "`Content-Type`" + ` and the other standard headers,
  ` + "`x-amz-meta-*`" + ` and ` + "`x-amz-checksum-*`" + ` are stored as PutObject stores the same
  headers. The file streams to storage as it arrives, its length checked
  against the policy's range as it goes (` + "`EntityTooLarge`" + `, ` + "`EntityTooSmall`" + `).
  The answer is ` + "`303`" + ` to ` + "`success_action_redirect`" + ` with the bucket, key and ETag
  in its query, or ` + "`success_action_status`" + ` 200, 201 (a PostResponse document)
  or, by default, 204.
- DeleteObjects requires ` + "`Content-MD5`" + ` or an ` + "`x-amz-checksum-*`" + ` header and
  verifies it; each key is authorized on its own (` + "`s3:DeleteObject`" + `, or
  ` + "`s3:DeleteObjectVersion`" + ` with a version ID) and fails alone: a caller,
  anonymous or not, allowed to delete none of them gets ` + "`200`" + ` with an
  ` + "`AccessDenied`" + ` entry per key, as S3 answers.
- CORS: PutBucketCors (up to 100 rules; ` + "`Content-MD5`" + ` or an
  ` + "`x-amz-checksum-*`" + ` header is required and verified), GetBucketCors
  (` + "`404 NoSuchCORSConfiguration`" + ` without one) and DeleteBucketCors, which S3
  authorizes with ` + "`s3:PutBucketCORS`" + `. A configuration is checked as S3 checks it
  (against the schema: an unknown element such as ` + "`<AllowedHeaders>`" + `, an ID or
  MaxAgeSeconds given twice or an empty MaxAgeSeconds is ` + "`MalformedXML`" + `;
  methods GET, PUT, POST, DELETE, HEAD; at most one ` + "`*`" + ` in an AllowedOrigin
  or AllowedHeader, none in an ExposeHeader) and refused with S3's
  ` + "`MalformedXML`" + ` and ` + "`InvalidRequest`" + ` messages. Coffer also refuses, with
  ` + "`InvalidRequest`" + `, a control character in an AllowedOrigin and a character no
  header name may hold in an AllowedHeader or ExposeHeader (S3's answer to
  these is not known). Preflights (` + "`OPTIONS`" + ` on a
  bucket or object, with any query) are not authenticated: the first rule
  matching the Origin, Access-Control-Request-Method and
  Access-Control-Request-Headers answers 200 with the Access-Control-* headers
  and ` + "`Vary`" + `. As in S3 a missing Origin is ` + "`400 BadRequest`" + `, then a missing
  bucket (` + "`CORSResponse: Bucket not found`" + `, not ` + "`404 NoSuchBucket`" + `) and a bucket
  without CORS are ` + "`403 AccessForbidden`" + ` (ResourceType BUCKET, whatever the URL)
  before the method is read, then an invalid method or header list is
  ` + "`400 BadRequest`" + ` and a request no rule allows ` + "`403 AccessForbidden`" + `.
  Every other request with an Origin header that a rule allows (by its
  method, or its Access-Control-Request-Method if it sends one, and the
  names of its Access-Control-Request-Headers if it sends one) gets
  Access-Control-Allow-Origin (the origin, or ` + "`*`" + ` for a rule allowing any),
  -Allow-Credentials (not with ` + "`*`" + `), -Allow-Methods, -Expose-Headers,
  -Max-Age and ` + "`Vary`" + `, on error responses too.
- The request line and headers may take 64 KiB (net/http allows a few KiB
  more). A larger header section is answered
  ` + "`400 RequestHeaderSectionTooLarge`" + ` with S3's XML error document (and
  ` + "`MaxSizeAllowed`" + `), then the connection is closed: net/http refuses such a
  request before any handler runs, and the S3 listener replaces its
  plain-text ` + "`431`" + ` with S3's answer on the wire (` + "`s3api.Listener`" + `; over
  TLS, where that answer is encrypted below it, the plain 431 remains). S3's
  own limit is 8 KiB for a PUT's headers; Coffer's is larger for long
  presigned URLs.
- Bucket policies use the AWS IAM policy language (see
  docs/design/0003-iam.md for the supported elements, condition operators
  and keys); a policy Coffer cannot enforce exactly is refused with
  ` + "`MalformedPolicy`" + `, never half-applied. ListBuckets shows a user only
  the buckets it may list or read something in.
- Listings cap ` + "`max-keys`" + `, ` + "`max-uploads`" + ` and ` + "`max-parts`" + ` at 1000;
  0 is an empty, final page (` + "`IsTruncated`" + ` false). A negative ` + "`max-uploads`" + `,
  ` + "`max-parts`" + ` or ` + "`part-number-marker`" + ` is ` + "`400 InvalidArgument`" + ` ("Argument …
  must be an integer between 0 and 2147483647"), and so is one that is not
  digits or is past 2147483647 ("Provided … not an integer or within
  integer range"), with S3's messages.
  ` + "`encoding-type=url`" + ` encodes keys, prefixes, delimiters and markers; the
  continuation token is opaque. A key may hold characters XML 1.0 cannot
  carry (C0 controls other than tab, newline and carriage return; U+FFFE,
  U+FFFF). Without ` + "`encoding-type=url`" + `, listings (ListObjects, V2,
  ListObjectVersions, ListMultipartUploads, ListParts) and the multipart
  responses write them as character references (` + "`&#x1;`" + `), as S3 does: the
  document names the key exactly, and strict XML 1.0 parsers, the AWS SDKs
  among them, refuse it. boto3 and the aws CLI always ask for
  ` + "`encoding-type=url`" + `; other clients should for such keys (see S3's
  [XML-related object key constraints](https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-keys.html#object-key-xml-related-constraints)).
  Coffer never substitutes U+FFFD, which would name a key that does not exist;
  so a listing's prefix, delimiter and markers must be valid UTF-8, as keys
  are (` + "`400 InvalidArgument`" + `): a delimiter that is not could end a common
  prefix inside a character.
`)
	_, err := io.WriteString(w, b.String())
	return err
}

// requestLine renders how a request for o looks.
func requestLine(o *op) string {
	path := "/"
	switch o.scope {
	case scopeBucket:
		path = "/{bucket}"
	case scopeObject:
		path = "/{bucket}/{key}"
	}
	switch o.query {
	case "":
	case "uploadId":
		if o.method == "PUT" {
			path += "?partNumber={n}&uploadId={id}"
		} else {
			path += "?uploadId={id}"
		}
	default:
		path += "?" + o.query
	}
	s := "`" + o.method + " " + path + "`"
	if o.header != "" {
		s += " with `" + o.header + "`"
	}
	return s
}

// servedSubresource reports whether some op claims sub-resource k.
func servedSubresource(k string) bool {
	for _, o := range ops {
		name, _, _ := strings.Cut(o.query, "=")
		if name == k {
			return true
		}
	}
	return false
}
