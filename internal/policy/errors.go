package policy

import (
	"errors"
	"fmt"
)

// Error is what ParseIdentity and ParseBucket return for a document they
// reject. Its message says what to change, e.g.
//
//	policy: statement 2 ("AllowList"): unknown action "s3:GetObjekt"
type Error struct {
	// Statement is the 1-based position of the offending statement in the
	// document, or 0 if the problem is not in one statement.
	Statement int
	// Sid is the offending statement's Sid, if it has one.
	Sid string
	// Msg describes the problem.
	Msg string
}

// Error formats e as policy: statement N ("SID"): MSG.
func (e *Error) Error() string {
	switch {
	case e.Statement == 0:
		return "policy: " + e.Msg
	case e.Sid != "":
		return fmt.Sprintf("policy: statement %d (%q): %s", e.Statement, e.Sid, e.Msg)
	}
	return fmt.Sprintf("policy: statement %d: %s", e.Statement, e.Msg)
}

func errorf(format string, args ...any) *Error {
	return &Error{Msg: fmt.Sprintf(format, args...)}
}

// message returns the message of err without the "policy:" prefix.
func message(err error) string {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Msg
	}
	return err.Error()
}
