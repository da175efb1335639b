package s3blob

import (
	"errors"
	"net/http"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// statusOf returns the HTTP status of the upstream's answer that err
// reports, or 0 if the upstream did not answer (a connection error, a
// context that ended, a body that failed).
func statusOf(err error) int {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// codeOf returns the S3 error code in err ("NoSuchKey", "AccessDenied"),
// or "" if there is none. Answers to HEAD requests have no body and so no
// code; the SDK reports those by status ("NotFound", "Forbidden").
func codeOf(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// isNotFound reports whether err says the object is absent. A 404 about
// the bucket (NoSuchBucket) is not: that is a broken configuration, not a
// missing blob.
func isNotFound(err error) bool {
	if statusOf(err) != http.StatusNotFound {
		return false
	}
	switch codeOf(err) {
	case "NoSuchKey", "NotFound", "":
		return true
	}
	return false
}

// isInvalidRange reports whether err is S3's answer to a range that starts
// at or past the end of the object.
func isInvalidRange(err error) bool {
	return statusOf(err) == http.StatusRequestedRangeNotSatisfiable || codeOf(err) == "InvalidRange"
}
