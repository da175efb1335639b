package s3err

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
)

// golden is every code of the table with the status and the exact message
// S3 sends (see the comment on table for the sources). It is written out
// here, not derived, so that a changed wording fails TestTableGolden and the
// change shows up in review.
var golden = []struct {
	code    Code
	status  int
	message string
}{
	{"AccessControlListNotSupported", http.StatusBadRequest, "The bucket does not allow ACLs"},
	{"AccessDenied", http.StatusForbidden, "Access Denied"},
	{"AccessForbidden", http.StatusForbidden, "CORSResponse: This CORS request is not allowed. This is usually because the evalution of Origin, request method / Access-Control-Request-Method or Access-Control-Request-Headers are not whitelisted by the resource's CORS spec."},
	{"AuthorizationHeaderMalformed", http.StatusBadRequest, "The authorization header that you provided is not valid."},
	{"AuthorizationQueryParametersError", http.StatusBadRequest, "The authorization query parameters that you provided are not valid."},
	{"BadDigest", http.StatusBadRequest, "The Content-MD5 you specified did not match what we received."},
	{"BadRequest", http.StatusBadRequest, "Bad Request"},
	{"BucketAlreadyExists", http.StatusConflict, "The requested bucket name is not available. The bucket namespace is shared by all users of the system. Please select a different name and try again."},
	{"BucketAlreadyOwnedByYou", http.StatusConflict, "Your previous request to create the named bucket succeeded and you already own it."},
	{"BucketNotEmpty", http.StatusConflict, "The bucket you tried to delete is not empty"},
	{"ConditionalRequestConflict", http.StatusConflict, "A conflicting operation occurred. If using PutObject you can retry the request. If using multipart upload you should initiate another CreateMultipartUpload request and re-upload each part."},
	{"EntityTooLarge", http.StatusBadRequest, "Your proposed upload exceeds the maximum allowed size"},
	{"EntityTooSmall", http.StatusBadRequest, "Your proposed upload is smaller than the minimum allowed size"},
	{"ExpiredToken", http.StatusBadRequest, "The provided token has expired."},
	{"IllegalLocationConstraintException", http.StatusBadRequest, "The unspecified location constraint is incompatible for the region specific endpoint this request was sent to."},
	{"IncompleteBody", http.StatusBadRequest, "You did not provide the number of bytes specified by the Content-Length HTTP header"},
	{"IncorrectNumberOfFilesInPostRequest", http.StatusBadRequest, "POST requires exactly one file upload per request."},
	{"InternalError", http.StatusInternalServerError, "We encountered an internal error. Please try again."},
	{"InvalidAccessKeyId", http.StatusForbidden, "The AWS Access Key Id you provided does not exist in our records."},
	{"InvalidArgument", http.StatusBadRequest, "Invalid Argument"},
	{"InvalidBucketAclWithObjectOwnership", http.StatusBadRequest, "Bucket cannot have ACLs set with ObjectOwnership's BucketOwnerEnforced setting"},
	{"InvalidBucketName", http.StatusBadRequest, "The specified bucket is not valid."},
	{"InvalidChunkSizeError", http.StatusForbidden, "Only the last chunk is allowed to have a size less than 8192 bytes"},
	{"InvalidDigest", http.StatusBadRequest, "The Content-MD5 you specified was invalid."},
	{"InvalidLocationConstraint", http.StatusBadRequest, "The specified location-constraint is not valid"},
	{"InvalidObjectState", http.StatusForbidden, "The operation is not valid for the current state of the object."},
	{"InvalidPart", http.StatusBadRequest, "One or more of the specified parts could not be found.  The part may not have been uploaded, or the specified entity tag may not match the part's entity tag."},
	{"InvalidPartNumber", http.StatusRequestedRangeNotSatisfiable, "The requested partnumber is not satisfiable"},
	{"InvalidPartOrder", http.StatusBadRequest, "The list of parts was not in ascending order. Parts must be ordered by part number."},
	{"InvalidPolicyDocument", http.StatusBadRequest, "The content of the form does not meet the conditions specified in the policy document."},
	{"InvalidRange", http.StatusRequestedRangeNotSatisfiable, "The requested range is not satisfiable"},
	{"InvalidRequest", http.StatusBadRequest, "Invalid Request"},
	{"InvalidStorageClass", http.StatusBadRequest, "The storage class you specified is not valid"},
	{"InvalidTag", http.StatusBadRequest, "The tag provided was not a valid tag. This error can occur if the tag did not pass input validation."},
	{"KeyTooLongError", http.StatusBadRequest, "Your key is too long"},
	{"MalformedACLError", http.StatusBadRequest, "The XML you provided was not well-formed or did not validate against our published schema"},
	{"MalformedPOSTRequest", http.StatusBadRequest, "The body of your POST request is not well-formed multipart/form-data."},
	{"MalformedPolicy", http.StatusBadRequest, "This policy contains invalid Json"},
	{"MalformedXML", http.StatusBadRequest, "The XML you provided was not well-formed or did not validate against our published schema"},
	{"MaxMessageLengthExceeded", http.StatusBadRequest, "Your request was too big."},
	{"MaxPostPreDataLengthExceededError", http.StatusBadRequest, "Your POST request fields preceding the upload file were too large."},
	{"MetadataTooLarge", http.StatusBadRequest, "Your metadata headers exceed the maximum allowed metadata size."},
	{"MethodNotAllowed", http.StatusMethodNotAllowed, "The specified method is not allowed against this resource."},
	{"MissingContentLength", http.StatusLengthRequired, "You must provide the Content-Length HTTP header."},
	{"MissingRequestBodyError", http.StatusBadRequest, "Request Body is empty"},
	{"MissingSecurityHeader", http.StatusBadRequest, "Your request was missing a required header."},
	{"NoSuchBucket", http.StatusNotFound, "The specified bucket does not exist"},
	{"NoSuchBucketPolicy", http.StatusNotFound, "The bucket policy does not exist"},
	{"NoSuchCORSConfiguration", http.StatusNotFound, "The CORS configuration does not exist"},
	{"NoSuchKey", http.StatusNotFound, "The specified key does not exist."},
	{"NoSuchLifecycleConfiguration", http.StatusNotFound, "The lifecycle configuration does not exist"},
	{"NoSuchPublicAccessBlockConfiguration", http.StatusNotFound, "The public access block configuration was not found"},
	{"NoSuchTagSet", http.StatusNotFound, "The TagSet does not exist"},
	{"NoSuchUpload", http.StatusNotFound, "The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed."},
	{"NoSuchVersion", http.StatusNotFound, "The specified version does not exist."},
	{"NotImplemented", http.StatusNotImplemented, "A header you provided implies functionality that is not implemented"},
	{"NotModified", http.StatusNotModified, "Not Modified"},
	{"OwnershipControlsNotFoundError", http.StatusNotFound, "The bucket ownership controls were not found"},
	{"PreconditionFailed", http.StatusPreconditionFailed, "At least one of the pre-conditions you specified did not hold"},
	{"RequestHeaderSectionTooLarge", http.StatusBadRequest, "Your request header section exceeds the maximum allowed size."},
	{"RequestTimeTooSkewed", http.StatusForbidden, "The difference between the request time and the current time is too large."},
	{"RequestTimeout", http.StatusBadRequest, "Your socket connection to the server was not read from or written to within the timeout period."},
	{"ServiceUnavailable", http.StatusServiceUnavailable, "Please reduce your request rate."},
	{"SignatureDoesNotMatch", http.StatusForbidden, "The request signature we calculated does not match the signature you provided. Check your key and signing method."},
	{"SlowDown", http.StatusServiceUnavailable, "Please reduce your request rate."},
	{"StorageFull", http.StatusInsufficientStorage, "The server's disk is full: new data is refused while free space is below its reserve. Delete objects to free space; reads and deletes still work."},
	{"UnexpectedContent", http.StatusBadRequest, "This request does not support content"},
	{"UnresolvableGrantByEmailAddress", http.StatusBadRequest, "The email address you provided does not match any account on record."},
	{"XAmzContentSHA256Mismatch", http.StatusBadRequest, "The provided 'x-amz-content-sha256' header does not match what was computed."},
}

func TestTableGolden(t *testing.T) {
	seen := make(map[Code]bool, len(golden))
	for _, g := range golden {
		if seen[g.code] {
			t.Errorf("%s: listed twice in golden", g.code)
		}
		seen[g.code] = true
		in, ok := table[g.code]
		if !ok {
			t.Errorf("%s: in golden but not in the table", g.code)
			continue
		}
		if in.Status != g.status {
			t.Errorf("%s: status = %d, want %d", g.code, in.Status, g.status)
		}
		if in.Message != g.message {
			t.Errorf("%s: message\n got %q\nwant %q", g.code, in.Message, g.message)
		}
	}
	for code := range table {
		if !seen[code] {
			t.Errorf("%s: in the table but not in golden", code)
		}
	}
}

func TestTable(t *testing.T) {
	for code, in := range table {
		if in.Status < 300 || in.Status > 599 {
			t.Errorf("%s: status %d is not 3xx/4xx/5xx", code, in.Status)
		}
		if in.Message == "" {
			t.Errorf("%s: empty message", code)
		}
	}
}

func TestCodeOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want Code
	}{
		{"nil", nil, ""},
		{"plain", errors.New("disk on fire"), InternalError},
		{"direct", New(NoSuchKey, "b/k"), NoSuchKey},
		{"wrapped", fmt.Errorf("get: %w", New(NoSuchBucket, "b")), NoSuchBucket},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := CodeOf(tc.err); got != tc.want {
				t.Errorf("CodeOf(%v) = %q, want %q", tc.err, got, tc.want)
			}
		})
	}
	if StatusOf(NoSuchKey) != 404 || StatusOf("Bogus") != 500 {
		t.Error("StatusOf mismatch")
	}
	e := New(InvalidArgument, "x").With("ArgumentName", "max-keys")
	if e.Msg() != MessageOf(InvalidArgument) || len(e.Extra) != 1 {
		t.Errorf("unexpected %+v", e)
	}
}
