package s3err

import "net/http"

// Code is an S3 error code as it appears in the <Code> element of an error
// document, for example "NoSuchKey".
type Code string

// The S3 error codes Coffer emits. See
// https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html#ErrorCodeList
const (
	AccessDenied                        Code = "AccessDenied"
	AccessForbidden                     Code = "AccessForbidden"
	AuthorizationHeaderMalformed        Code = "AuthorizationHeaderMalformed"
	AuthorizationQueryParametersError   Code = "AuthorizationQueryParametersError"
	BadDigest                           Code = "BadDigest"
	BadRequest                          Code = "BadRequest"
	AccessControlListNotSupported       Code = "AccessControlListNotSupported"
	InvalidBucketAclWithObjectOwnership Code = "InvalidBucketAclWithObjectOwnership"
	OwnershipControlsNotFoundError      Code = "OwnershipControlsNotFoundError"
	UnresolvableGrantByEmailAddress     Code = "UnresolvableGrantByEmailAddress"
	BucketAlreadyExists                 Code = "BucketAlreadyExists"
	BucketAlreadyOwnedByYou             Code = "BucketAlreadyOwnedByYou"
	BucketNotEmpty                      Code = "BucketNotEmpty"
	EntityTooLarge                      Code = "EntityTooLarge"
	EntityTooSmall                      Code = "EntityTooSmall"
	ExpiredToken                        Code = "ExpiredToken"
	IllegalLocationConstraintExc        Code = "IllegalLocationConstraintException"
	IncompleteBody                      Code = "IncompleteBody"
	InternalError                       Code = "InternalError"
	InvalidAccessKeyID                  Code = "InvalidAccessKeyId"
	InvalidArgument                     Code = "InvalidArgument"
	InvalidBucketName                   Code = "InvalidBucketName"
	InvalidDigest                       Code = "InvalidDigest"
	InvalidLocationConstraint           Code = "InvalidLocationConstraint"
	InvalidObjectState                  Code = "InvalidObjectState"
	InvalidPart                         Code = "InvalidPart"
	InvalidPartOrder                    Code = "InvalidPartOrder"
	InvalidPartNumber                   Code = "InvalidPartNumber"
	InvalidRange                        Code = "InvalidRange"
	InvalidRequest                      Code = "InvalidRequest"
	InvalidStorageClass                 Code = "InvalidStorageClass"
	KeyTooLongError                     Code = "KeyTooLongError"
	MalformedACLError                   Code = "MalformedACLError"
	MalformedPolicy                     Code = "MalformedPolicy"
	MalformedXML                        Code = "MalformedXML"
	MaxMessageLengthExceeded            Code = "MaxMessageLengthExceeded"
	MetadataTooLarge                    Code = "MetadataTooLarge"
	MethodNotAllowed                    Code = "MethodNotAllowed"
	MissingContentLength                Code = "MissingContentLength"
	MissingRequestBodyError             Code = "MissingRequestBodyError"
	MissingSecurityHeader               Code = "MissingSecurityHeader"
	NoSuchBucket                        Code = "NoSuchBucket"
	NoSuchBucketPolicy                  Code = "NoSuchBucketPolicy"
	NoSuchCORSConfiguration             Code = "NoSuchCORSConfiguration"
	NoSuchKey                           Code = "NoSuchKey"
	NoSuchLifecycleConfiguration        Code = "NoSuchLifecycleConfiguration"
	NoSuchTagSet                        Code = "NoSuchTagSet"
	NoSuchUpload                        Code = "NoSuchUpload"
	NoSuchVersion                       Code = "NoSuchVersion"
	NotImplemented                      Code = "NotImplemented"
	NotModified                         Code = "NotModified"
	PreconditionFailed                  Code = "PreconditionFailed"
	RequestHeaderSectionTooLarge        Code = "RequestHeaderSectionTooLarge"
	RequestTimeTooSkewed                Code = "RequestTimeTooSkewed"
	RequestTimeout                      Code = "RequestTimeout"
	ServiceUnavailable                  Code = "ServiceUnavailable"
	SignatureDoesNotMatch               Code = "SignatureDoesNotMatch"
	SlowDown                            Code = "SlowDown"
	ConditionalRequestConflict          Code = "ConditionalRequestConflict"
	XAmzContentSHA256Mismatch           Code = "XAmzContentSHA256Mismatch"
	InvalidChunkSizeError               Code = "InvalidChunkSizeError"
	UnexpectedContent                   Code = "UnexpectedContent"
	InvalidTag                          Code = "InvalidTag"
	InvalidPolicyDocument               Code = "InvalidPolicyDocument"
	MalformedPOSTRequest                Code = "MalformedPOSTRequest"
	IncorrectNumberOfFilesInPostRequest Code = "IncorrectNumberOfFilesInPostRequest"
	MaxPostPreDataLengthExceededError   Code = "MaxPostPreDataLengthExceededError"
	// StorageFull is Coffer's own: S3 never fills up. 507, so that SDKs
	// retry it with backoff, as MinIO answers its XMinioStorageFull.
	StorageFull Code = "StorageFull"
)

// info is one row of the error table.
type info struct {
	Status  int
	Message string
}

// msgCORSNotAllowed is S3's answer to a CORS preflight that no rule allows,
// "evalution" included.
const msgCORSNotAllowed = "CORSResponse: This CORS request is not allowed. This is usually because the evalution of Origin, " +
	"request method / Access-Control-Request-Method or Access-Control-Request-Headers are not whitelisted by the resource's CORS spec."

// table is the only place that maps an S3 error code to its HTTP status and
// default message. Messages follow the wording S3 itself uses.
var table = map[Code]info{
	AccessDenied:                        {http.StatusForbidden, "Access Denied."},
	AccessForbidden:                     {http.StatusForbidden, msgCORSNotAllowed},
	AuthorizationHeaderMalformed:        {http.StatusBadRequest, "The authorization header is malformed."},
	AuthorizationQueryParametersError:   {http.StatusBadRequest, "Error parsing the X-Amz-Credential parameter."},
	BadDigest:                           {http.StatusBadRequest, "The Content-MD5 you specified did not match what we received."},
	BadRequest:                          {http.StatusBadRequest, "Bad Request."},
	AccessControlListNotSupported:       {http.StatusBadRequest, "The bucket does not allow ACLs"},
	InvalidBucketAclWithObjectOwnership: {http.StatusBadRequest, "Bucket cannot have ACLs set with ObjectOwnership's BucketOwnerEnforced setting"},
	OwnershipControlsNotFoundError:      {http.StatusNotFound, "The bucket ownership controls were not found"},
	UnresolvableGrantByEmailAddress:     {http.StatusBadRequest, "The email address you provided does not match any account on record."},
	BucketAlreadyExists:                 {http.StatusConflict, "The requested bucket name is not available. The bucket namespace is shared by all users of the system. Please select a different name and try again."},
	BucketAlreadyOwnedByYou:             {http.StatusConflict, "Your previous request to create the named bucket succeeded and you already own it."},
	BucketNotEmpty:                      {http.StatusConflict, "The bucket you tried to delete is not empty."},
	ConditionalRequestConflict:          {http.StatusConflict, "A conflicting operation occurred. If using PutObject you can retry the request. If using multipart upload you should initiate another CreateMultipartUpload request and re-upload each part."},
	EntityTooLarge:                      {http.StatusBadRequest, "Your proposed upload exceeds the maximum allowed object size."},
	EntityTooSmall:                      {http.StatusBadRequest, "Your proposed upload is smaller than the minimum allowed object size."},
	ExpiredToken:                        {http.StatusBadRequest, "The provided token has expired."},
	IllegalLocationConstraintExc:        {http.StatusBadRequest, "The unspecified location constraint is incompatible for the region specific endpoint this request was sent to."},
	IncompleteBody:                      {http.StatusBadRequest, "You did not provide the number of bytes specified by the Content-Length HTTP header."},
	InternalError:                       {http.StatusInternalServerError, "We encountered an internal error. Please try again."},
	InvalidAccessKeyID:                  {http.StatusForbidden, "The AWS access key ID you provided does not exist in our records."},
	InvalidArgument:                     {http.StatusBadRequest, "Invalid Argument."},
	InvalidBucketName:                   {http.StatusBadRequest, "The specified bucket is not valid."},
	InvalidChunkSizeError:               {http.StatusBadRequest, "Only the last chunk is allowed to have a size less than 8192 bytes."},
	InvalidDigest:                       {http.StatusBadRequest, "The Content-MD5 you specified is not valid."},
	InvalidLocationConstraint:           {http.StatusBadRequest, "The specified location constraint is not valid."},
	InvalidObjectState:                  {http.StatusForbidden, "The operation is not valid for the current state of the object."},
	InvalidPart:                         {http.StatusBadRequest, "One or more of the specified parts could not be found. The part might not have been uploaded, or the specified entity tag might not have matched the part's entity tag."},
	InvalidPartOrder:                    {http.StatusBadRequest, "The list of parts was not in ascending order. The parts list must be specified in order by part number."},
	InvalidPartNumber:                   {http.StatusRequestedRangeNotSatisfiable, "The requested partnumber is not satisfiable"},
	InvalidRange:                        {http.StatusRequestedRangeNotSatisfiable, "The requested range is not satisfiable."},
	InvalidRequest:                      {http.StatusBadRequest, "Invalid Request."},
	InvalidStorageClass:                 {http.StatusBadRequest, "The storage class you specified is not valid."},
	InvalidTag:                          {http.StatusBadRequest, "The tag provided was not a valid tag."},
	InvalidPolicyDocument:               {http.StatusBadRequest, "The content of the form does not meet the conditions specified in the policy document."},
	MalformedPOSTRequest:                {http.StatusBadRequest, "The body of your POST request is not well-formed multipart/form-data."},
	IncorrectNumberOfFilesInPostRequest: {http.StatusBadRequest, "POST requires exactly one file upload per request."},
	MaxPostPreDataLengthExceededError:   {http.StatusBadRequest, "Your POST request fields preceding the upload file were too large."},
	StorageFull: {http.StatusInsufficientStorage, "The server's disk is full: new data is refused while free space is below its reserve. " +
		"Delete objects to free space; reads and deletes still work."},
	KeyTooLongError:              {http.StatusBadRequest, "Your key is too long."},
	MalformedACLError:            {http.StatusBadRequest, "The XML you provided was not well-formed or did not validate against our published schema."},
	MalformedPolicy:              {http.StatusBadRequest, "This policy contains invalid Json."},
	MalformedXML:                 {http.StatusBadRequest, "The XML you provided was not well-formed or did not validate against our published schema."},
	MaxMessageLengthExceeded:     {http.StatusBadRequest, "Your request was too big."},
	MetadataTooLarge:             {http.StatusBadRequest, "Your metadata headers exceed the maximum allowed metadata size."},
	MethodNotAllowed:             {http.StatusMethodNotAllowed, "The specified method is not allowed against this resource."},
	MissingContentLength:         {http.StatusLengthRequired, "You must provide the Content-Length HTTP header."},
	MissingRequestBodyError:      {http.StatusBadRequest, "Request Body is empty."},
	MissingSecurityHeader:        {http.StatusBadRequest, "Your request was missing a required header."},
	NoSuchBucket:                 {http.StatusNotFound, "The specified bucket does not exist."},
	NoSuchBucketPolicy:           {http.StatusNotFound, "The bucket policy does not exist."},
	NoSuchCORSConfiguration:      {http.StatusNotFound, "The CORS configuration does not exist"},
	NoSuchKey:                    {http.StatusNotFound, "The specified key does not exist."},
	NoSuchLifecycleConfiguration: {http.StatusNotFound, "The lifecycle configuration does not exist."},
	NoSuchTagSet:                 {http.StatusNotFound, "The TagSet does not exist."},
	NoSuchUpload:                 {http.StatusNotFound, "The specified multipart upload does not exist. The upload ID might be invalid, or the multipart upload might have been aborted or completed."},
	NoSuchVersion:                {http.StatusNotFound, "The specified version does not exist."},
	NotImplemented:               {http.StatusNotImplemented, "A header or query you provided requested a function that is not implemented."},
	NotModified:                  {http.StatusNotModified, "Not Modified."},
	PreconditionFailed:           {http.StatusPreconditionFailed, "At least one of the pre-conditions you specified did not hold."},
	RequestHeaderSectionTooLarge: {http.StatusBadRequest, "Your request header section exceeds the maximum allowed size."},
	RequestTimeTooSkewed:         {http.StatusForbidden, "The difference between the request time and the server's time is too large."},
	RequestTimeout:               {http.StatusBadRequest, "Your socket connection to the server was not read from or written to within the timeout period."},
	ServiceUnavailable:           {http.StatusServiceUnavailable, "Please reduce your request rate."},
	SignatureDoesNotMatch:        {http.StatusForbidden, "The request signature we calculated does not match the signature you provided. Check your key and signing method."},
	SlowDown:                     {http.StatusServiceUnavailable, "Please reduce your request rate."},
	UnexpectedContent:            {http.StatusBadRequest, "This request does not support content."},
	XAmzContentSHA256Mismatch:    {http.StatusBadRequest, "The provided 'x-amz-content-sha256' header does not match what was computed."},
}
