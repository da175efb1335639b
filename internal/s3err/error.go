// Package s3err defines S3 error codes, the one table that maps them to HTTP
// status and message, and the *Error type that every layer above storage
// returns. It is a leaf package: it imports nothing of Coffer's.
package s3err

import (
	"errors"
	"net/http"
)

// Error is an S3 error: a code from the table, an optional message that
// overrides the table's, the resource it concerns and an optional cause.
type Error struct {
	Code     Code
	Message  string // empty means the table's message
	Resource string // bucket, bucket/key or upload ID; written as <Resource>
	Err      error  // underlying cause, for logs only; never sent to clients

	// Extra XML elements some codes carry, e.g. ArgumentName for
	// InvalidArgument or BucketName for NoSuchBucket. Written in order.
	Extra []Field

	// Header holds response headers the error carries, e.g.
	// x-amz-delete-marker and x-amz-version-id on the 404 for a key whose
	// latest version is a delete marker.
	Header []Field
}

// Field is one extra element of an error document.
type Field struct {
	Name, Value string
}

// New returns an *Error with the table's message for code.
func New(code Code, resource string) *Error {
	return &Error{Code: code, Resource: resource}
}

// Newf returns an *Error with a specific message.
func Newf(code Code, resource, message string) *Error {
	return &Error{Code: code, Resource: resource, Message: message}
}

// Wrap returns an *Error for code whose cause is err.
func Wrap(code Code, resource string, err error) *Error {
	return &Error{Code: code, Resource: resource, Err: err}
}

// With returns e with an extra element appended. It modifies e.
func (e *Error) With(name, value string) *Error {
	e.Extra = append(e.Extra, Field{name, value})
	return e
}

// WithHeader returns e with a response header added. It modifies e.
func (e *Error) WithHeader(name, value string) *Error {
	e.Header = append(e.Header, Field{name, value})
	return e
}

// Error implements error.
func (e *Error) Error() string {
	s := string(e.Code) + ": " + e.Msg()
	if e.Resource != "" {
		s += " (" + e.Resource + ")"
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Msg returns the message sent to clients: e.Message or the table's.
func (e *Error) Msg() string {
	if e.Message != "" {
		return e.Message
	}
	return table[e.Code].Message
}

// Status returns the HTTP status for e's code.
func (e *Error) Status() int { return StatusOf(e.Code) }

// StatusOf returns the HTTP status for code, or 500 for an unknown code.
func StatusOf(code Code) int {
	if in, ok := table[code]; ok {
		return in.Status
	}
	return http.StatusInternalServerError
}

// MessageOf returns the table's message for code.
func MessageOf(code Code) string { return table[code].Message }

// Known reports whether code has a row in the table.
func Known(code Code) bool {
	_, ok := table[code]
	return ok
}

// CodeOf returns the code of the first *Error in err's chain, "" for nil,
// and InternalError for any other error.
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return InternalError
}

// Is reports whether err carries code.
func Is(err error, code Code) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}
