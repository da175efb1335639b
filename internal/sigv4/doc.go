// Package sigv4 authenticates S3 requests signed with AWS Signature Version
// 4 and signs requests the same way, for tests, the admin CLI and the
// benchmark tool. It also verifies the legacy Signature Version 2 (see
// below). It is a leaf package: it imports only the standard library and
// internal/s3err.
//
// # Verification
//
// [Verifier.Verify] authenticates a request without reading its body. It
// accepts
//
//   - the Authorization header (AWS4-HMAC-SHA256 Credential=…,
//     SignedHeaders=…, Signature=…; components separated by commas and/or
//     spaces, in any order), with x-amz-date or Date and a mandatory
//     x-amz-content-sha256
//     (https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html);
//   - presigned URLs: X-Amz-Algorithm, -Credential, -Date, -Expires (1 s to
//     7 days), -SignedHeaders, -Signature, with UNSIGNED-PAYLOAD unless
//     X-Amz-Content-Sha256 says otherwise
//     (https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-query-string-auth.html);
//   - no authentication at all, which yields Result.Anonymous: whether that
//     is allowed is the caller's decision.
//
// The canonical request follows S3, which does not encode the path twice:
// the path as the client sent it is decoded and re-encoded with UriEncode,
// keeping '/'. Clients that sign a path they sent unencoded (a raw '+' or
// '=') are accepted too, by a second comparison with the path exactly as
// sent; both forms name the same object. The query is decoded as a form
// ('+' is a space), re-encoded and sorted by name, then value. Headers are
// taken in SignedHeaders order (which must be sorted lowercase names), their
// values trimmed with inner runs of spaces collapsed and repeated values
// joined by commas. host must be signed, and so must every x-amz-* header
// present but x-amz-content-sha256. The credential scope must name the
// configured region and service, aws4_request and the request's date.
// Signatures are compared in constant time.
//
// # Errors
//
// Verify returns *s3err.Error values with S3's codes and messages:
//
//   - AuthorizationHeaderMalformed: a malformed Authorization header or a
//     wrong scope ("the region 'x' is wrong; expecting 'y'", with a Region
//     element);
//   - AuthorizationQueryParametersError: the same for presigned URLs, and
//     X-Amz-Expires out of range;
//   - AccessDenied: "Request has expired", "Request is not valid yet",
//     "There were headers present in the request which were not signed"
//     (with HeadersNotSigned), or no valid Date/x-amz-date;
//   - RequestTimeTooSkewed: header authentication more than MaxSkew from
//     the server's clock, either way;
//   - InvalidAccessKeyId: the Keyring returned ErrUnknownKey;
//   - SignatureDoesNotMatch: with StringToSign and CanonicalRequest elements
//     to help client authors;
//   - InvalidRequest: missing x-amz-content-sha256;
//   - InvalidArgument: a bad x-amz-content-sha256 or x-amz-trailer, an
//     unknown authorization type, a malformed SigV2 header, or more than one
//     mechanism (header and query authentication, or SigV2 and SigV4 query
//     parameters together);
//   - MissingContentLength: a streaming upload without
//     x-amz-decoded-content-length.
//
// Any other error comes from the Keyring, wrapped, and is internal.
//
// # Bodies
//
// The caller reads the body through [Result.Body], which checks the payload
// mode chosen by x-amz-content-sha256: a hex SHA-256 is compared at the end
// of the body (XAmzContentSHA256Mismatch); UNSIGNED-PAYLOAD passes through;
// the three STREAMING-* modes are decoded from aws-chunked encoding with
// every chunk signature and the trailer signature checked in chain
// (SignatureDoesNotMatch). As S3 does, every framing error (a chunk size
// that is not hexadecimal, a missing CRLF or chunk signature, a body that
// ends early, an undeclared or missing trailer) is IncompleteBody "The
// request body terminated unexpectedly"; chunks that add up to more or less
// than x-amz-decoded-content-length are IncompleteBody with S3's standard
// message and NumberBytesExpected and NumberBytesProvided; signed chunks
// under 8 KiB that are not the last (S3's rule, which also bounds the HMACs
// a body costs) are InvalidChunkSizeError, 403, with Chunk and BadChunkSize. Only trailers named in x-amz-trailer
// are accepted; their values are available from [Body.Trailer] after
// io.EOF. The decoder reads chunk data straight into the caller's buffer,
// allocates nothing per chunk, and reports every error before releasing the
// bytes it concerns, no later than the read that delivers the last declared
// byte.
//
// # Signing-key cache
//
// Deriving a signing key costs four HMACs. The Verifier caches keys by access
// key, date, region, service and a SHA-256 fingerprint of the secret, so a
// rotated secret never meets a key derived from the old one. The cache holds
// at most Config.CacheSize keys and drops an arbitrary half when full; a key
// is cached only once a signature made with it matched, so requests with
// made-up dates or signatures cannot push real clients' keys out. Keys
// are stored as prepared HMAC states: a verification on a cache hit costs one
// SHA-256 of the secret (its fingerprint), one of the canonical request and
// one HMAC of the string to sign, about ten SHA-256 blocks in all.
//
// # Signature Version 2
//
// S3 deprecated SigV2, but clients still in use produce it: aws CLI v1's
// "aws s3 presign" and boto3's generate_presigned_url by default make SigV2
// query URLs (…?AWSAccessKeyId=…&Expires=…&Signature=…), and older s3cmd
// configurations sign headers with "Authorization: AWS AKID:signature".
// Rejecting them would break those users for no gain in a self-hosted store,
// so Verify accepts both forms
// (https://docs.aws.amazon.com/AmazonS3/latest/userguide/RESTAuthentication.html):
// the signature is Base64(HMAC-SHA1(secret, StringToSign)) with
//
//	StringToSign = Verb "\n" Content-MD5 "\n" Content-Type "\n" Date "\n"
//	               CanonicalizedAmzHeaders CanonicalizedResource
//
// Date is the Date header, empty when x-amz-date is present (it is signed
// among the x-amz-* headers), or the Expires value for query authentication.
// CanonicalizedAmzHeaders lists every x-amz-* header lowercased and sorted,
// as name:value\n, repeated values trimmed, unfolded and joined by commas.
// CanonicalizedResource is "/bucket" for a virtual-hosted-style request (the
// bucket is taken from Host when it ends in "."+Config.Domain; without
// Domain only path-style requests verify), then the path exactly as sent,
// still percent-encoded (if that fails the decoded path is tried, as for
// SigV4), then the sub-resources of the query (acl, cors, delete, lifecycle,
// location, logging, notification, partNumber, policy, requestPayment,
// restore, tagging, torrent, uploadId, uploads, versionId, versioning,
// versions, website and the six response-* overrides) sorted by name, values
// decoded, a name alone when its value is empty. Virtual hosts named by a
// CNAME of the bucket are not supported.
//
// SigV2 signs no payload: the Result has Payload PayloadUnsigned, and a
// Content-MD5 header, which is signed, is checked by the object layer. Its
// errors: InvalidArgument for a malformed "AWS AKID:signature" header or
// repeated query parameters; AccessDenied without a valid Date/x-amz-date,
// without all of AWSAccessKeyId, Signature and Expires, for an Expires that
// is not a number, in the past ("Request has expired") or more than 7 days
// ahead (the same bound as X-Amz-Expires; S3 itself does not cap SigV2
// Expires, but a URL that never expires is a credential); RequestTimeTooSkewed
// for header authentication more than MaxSkew off; InvalidAccessKeyId; and
// SignatureDoesNotMatch, compared in constant time, with the StringToSign.
// SigV2 derives no signing key, so the key cache is not involved: a
// verification costs one HMAC-SHA1 (two if the decoded path is tried).
//
// # Signing
//
// [SignRequest], [Presign] and [SignChunked] share the canonicalization code
// with Verify; SignChunked produces streaming uploads for tests, end-to-end
// tests and the benchmark tool. [SignV2Request] and [SignV2Query] produce
// path-style SigV2 requests and URLs for tests.
package sigv4
