package console

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/coffer-s3/coffer/internal/audit"
	"github.com/coffer-s3/coffer/internal/httprec"
	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/s3err"
)

// The console records in the audit log (Source "console") every sign-in
// attempt, every sign-out and every state-changing request (each POST),
// whatever its outcome: who (the signed-in principal, or for a sign-in
// the name tried), what (the S3 operation or admin API endpoint the
// request stands for, with its bucket, key or target), from where (the
// client's address) and the outcome (status and code). Passwords,
// secrets, CSRF tokens, session IDs and share links are never recorded.
//
// Requests strangers can send at will — failed sign-ins, posts without a
// session, and refused posts — go through the audit log's bounds
// (RecordBounded), as refused S3 and admin requests do, so a sign-in
// storm cannot fill the disk; the actions of signed-in principals are
// recorded one by one.

// AuditRecorder is where the console records its actions. *audit.Log
// implements it; Record and RecordBounded never block.
type AuditRecorder interface {
	Record(e audit.Event) bool
	RecordBounded(e audit.Event) bool
}

var _ AuditRecorder = (*audit.Log)(nil)

// Ops of the console's own actions; its other actions are recorded with
// the name of the S3 operation or admin API endpoint they stand for.
const (
	opSignIn  = "SignIn"
	opSignOut = "SignOut"
	opShare   = "ShareObject"
)

// Codes of the console's refusals, in the audit log.
const (
	codeSignInFailed = "SignInFailed"   // wrong name or password, or a disabled user
	codeLockedOut    = "LockedOut"      // too many failed sign-ins (429)
	codeBusy         = "Busy"           // the password checks were saturated (503)
	codeOrigin       = "OriginMismatch" // the Origin check failed
	codeCSRF         = "InvalidCSRFToken"
	codeNoSession    = "NoSession" // a post without a live session
	codeBadForm      = "MalformedForm"
)

// hiddenName stands for a sign-in name that names no principal: it may
// be a password typed into the wrong field, so it is not recorded.
const hiddenName = "(not a user name; not recorded)"

// An action is the audit record of one state-changing request, filled
// in while it is served and recorded when it is answered.
type action struct {
	start time.Time
	op    string
	// target is what a handler adds to what the route's actionSpec
	// reads from the request: what only it knows (the access key it
	// created).
	target string
	code   string // set by the guard's refusals and by failed; else from the handler's error
	// authorized says an authorization of the request was granted (see
	// session.allowed). A request without one (it failed before any, or
	// every one was denied, as in a delete of keys the user may not
	// delete, answered 303 with the refusal shown) is recorded within the
	// audit log's bounds for strangers: a signed-in user with no
	// permissions could otherwise fill the log with events of its own.
	authorized bool
}

// allowed marks the action of s authorized when err, an authorization's
// answer, is nil, and returns err.
func (s *session) allowed(err error) error {
	if err == nil && s != nil && s.act != nil {
		s.act.authorized = true
	}
	return err
}

// refused sets the audit code of a request the console refused before
// its handler ran, and returns a.
func (a *action) refused(code string) *action {
	if a != nil {
		a.code = code
	}
	return a
}

// failed records the S3 error code of err, for a handler that shows
// its error inline rather than returning it.
func (a *action) failed(err error) {
	if se, ok := errors.AsType[*s3err.Error](err); ok && a != nil && a.code == "" {
		a.code = string(se.Code)
	}
}

// note adds detail to the target of the request's audit record.
func (a *action) note(detail string) {
	if a == nil {
		return
	}
	if a.target != "" {
		a.target += " "
	}
	a.target += detail
}

// An actionSpec says how a state-changing route is recorded: its op and
// what it acts on, read from the path values, the query and the parsed
// form (empty when the form was not read: a refused origin, or a stream
// route). change, if set, says whether the request changes anything at
// all when it succeeds (a delete's confirmation step does not).
type actionSpec struct {
	op     string
	what   func(r *http.Request, form url.Values) (bucket, key, target string)
	change func(form url.Values) bool
}

// actions is the audit record of every state-changing route, by its
// ServeMux pattern. TestEveryChangeAudited checks that each has one.
var actions = map[string]actionSpec{
	"POST /logout":                            {op: opSignOut},
	"POST /buckets":                           {op: "CreateBucket", what: formBucket("name")},
	"POST /buckets/{name}/delete":             {op: "DeleteBucket", what: pathBucket("name")},
	"POST /objects/{bucket}/delete":           {op: "DeleteObjects", what: deletedKeys, change: confirmedDelete},
	"POST /objects/{bucket}/share":            {op: opShare, what: sharedObject},
	"POST /objects/{bucket}/upload":           {op: "PutObject", what: uploadedObject},
	"POST /objects/{bucket}/uploads":          {op: "CreateMultipartUpload", what: uploadedObject},
	"POST /objects/{bucket}/uploads/part":     {op: "UploadPart", what: uploadedObject},
	"POST /objects/{bucket}/uploads/complete": {op: "CompleteMultipartUpload", what: uploadedObject},
	"POST /objects/{bucket}/uploads/abort":    {op: "AbortMultipartUpload", what: uploadedObject},
	"POST /users":                             {op: "CreateUser", what: formTarget("users/", "name")},
	"POST /users/{name}/disable":              {op: "DisableUser", what: pathTarget("users/", "name")},
	"POST /users/{name}/enable":               {op: "EnableUser", what: pathTarget("users/", "name")},
	"POST /users/{name}/delete":               {op: "DeleteUser", what: pathTarget("users/", "name")},
	"POST /users/{name}/password":             {op: "SetUserPassword", what: pathTarget("users/", "name")},
	"POST /users/{name}/attach":               {op: "AttachPolicy", what: attachTarget("users/")},
	"POST /users/{name}/detach":               {op: "DetachPolicy", what: attachTarget("users/")},
	"POST /users/{name}/keys":                 {op: "CreateAccessKey", what: pathTarget("users/", "name")},
	"POST /keys/{key}/rotate":                 {op: "RotateAccessKey", what: pathTarget("keys/", "key")},
	"POST /keys/{key}/disable":                {op: "DisableAccessKey", what: pathTarget("keys/", "key")},
	"POST /keys/{key}/enable":                 {op: "EnableAccessKey", what: pathTarget("keys/", "key")},
	"POST /keys/{key}/delete":                 {op: "DeleteAccessKey", what: pathTarget("keys/", "key")},
	"POST /groups":                            {op: "CreateGroup", what: formTarget("groups/", "name")},
	"POST /groups/{name}/members":             {op: "UpdateGroupMembers", what: groupMembers},
	"POST /groups/{name}/attach":              {op: "AttachPolicy", what: attachTarget("groups/")},
	"POST /groups/{name}/detach":              {op: "DetachPolicy", what: attachTarget("groups/")},
	"POST /groups/{name}/delete":              {op: "DeleteGroup", what: pathTarget("groups/", "name")},
	"POST /policies":                          {op: "PutPolicy", what: formTarget("policies/", "name")},
	"POST /policies/{name}":                   {op: "PutPolicy", what: pathTarget("policies/", "name")},
	"POST /policies/{name}/attach":            {op: "AttachPolicy", what: policyAttach},
	"POST /policies/{name}/delete":            {op: "DeletePolicy", what: pathTarget("policies/", "name")},
}

func formBucket(field string) func(*http.Request, url.Values) (string, string, string) {
	return func(_ *http.Request, f url.Values) (string, string, string) {
		return strings.TrimSpace(f.Get(field)), "", ""
	}
}

func pathBucket(name string) func(*http.Request, url.Values) (string, string, string) {
	return func(r *http.Request, _ url.Values) (string, string, string) { return r.PathValue(name), "", "" }
}

func formTarget(prefix, field string) func(*http.Request, url.Values) (string, string, string) {
	return func(_ *http.Request, f url.Values) (string, string, string) {
		return "", "", prefix + strings.TrimSpace(f.Get(field))
	}
}

func pathTarget(prefix, name string) func(*http.Request, url.Values) (string, string, string) {
	return func(r *http.Request, _ url.Values) (string, string, string) {
		return "", "", prefix + r.PathValue(name)
	}
}

// attachTarget records an attach or detach on the page of a user or
// group: "users/alice policy readonly".
func attachTarget(prefix string) func(*http.Request, url.Values) (string, string, string) {
	return func(r *http.Request, f url.Values) (string, string, string) {
		return "", "", prefix + r.PathValue("name") + " policy " + f.Get("policy")
	}
}

// policyAttach records an attach on a policy's page: "policies/p to users/alice".
func policyAttach(r *http.Request, f url.Values) (string, string, string) {
	t := iam.Target{User: f.Get("user"), Group: f.Get("group")}
	return "", "", "policies/" + r.PathValue("name") + " to " + t.String()
}

func groupMembers(r *http.Request, f url.Values) (string, string, string) {
	t := "groups/" + r.PathValue("name")
	if u := strings.TrimSpace(f.Get("add")); u != "" {
		t += " add " + u
	}
	if u := strings.TrimSpace(f.Get("remove")); u != "" {
		t += " remove " + u
	}
	return "", "", t
}

// maxTargetKeys is how many keys of a deleted selection the audit event
// names; the rest are counted.
const maxTargetKeys = 20

// deletedKeys records a delete of a selection: the one key, or the keys
// in the target.
func deletedKeys(r *http.Request, f url.Values) (string, string, string) {
	bucket, keys := r.PathValue("bucket"), f["key"]
	if len(keys) == 1 {
		return bucket, keys[0], ""
	}
	shown := keys[:min(len(keys), maxTargetKeys)]
	t := strconv.Itoa(len(keys)) + " keys: " + strings.Join(shown, ", ")
	if len(keys) > len(shown) {
		t += ", … and " + strconv.Itoa(len(keys)-len(shown)) + " more"
	}
	return bucket, "", t
}

// confirmedDelete reports whether a delete post is the confirmed one;
// the first post only shows the confirmation page.
func confirmedDelete(f url.Values) bool { return f.Get("confirm") == "1" && len(f["key"]) > 0 }

// sharedObject records a share link by its object and lifetime, never
// the link.
func sharedObject(r *http.Request, f url.Values) (string, string, string) {
	t := "expires in " + f.Get("expires") + f.Get("unit")
	if v := f.Get("versionId"); v != "" {
		t = "version " + v + " " + t
	}
	return r.PathValue("bucket"), f.Get("key"), t
}

// uploadedObject records an upload request by its object (and upload
// and part).
func uploadedObject(r *http.Request, _ url.Values) (string, string, string) {
	q := r.URL.Query()
	var t string
	if id := q.Get("uploadId"); id != "" {
		t = "upload " + id
		if n := q.Get("partNumber"); n != "" {
			t += " part " + n
		}
	}
	return r.PathValue("bucket"), q.Get("key"), t
}

// beginAction starts the audit record of a state-changing request, or
// returns nil without an audit log.
func (h *Handler) beginAction(r *http.Request) *action {
	if h.events == nil {
		return nil
	}
	a := &action{start: h.clock(), op: r.Method + " " + r.URL.Path}
	if spec, ok := actions[r.Pattern]; ok {
		a.op = spec.op
	}
	return a
}

// endAction records a's request, answered with status (err is the
// handler's error, if any); s is the session, nil without one. A request
// that changed nothing by design (a confirmation step) is not recorded.
func (h *Handler) endAction(r *http.Request, a *action, s *session, sw *httprec.Writer, err error) {
	if a == nil {
		return
	}
	form := r.PostForm
	if form == nil {
		form = url.Values{}
	}
	if sw.Status == 0 {
		sw.Status = http.StatusOK
	}
	spec, ok := actions[r.Pattern]
	if ok && spec.change != nil && sw.Status < 400 && !spec.change(form) {
		return
	}
	e := audit.Event{Time: a.start, Source: audit.SourceConsole, Op: a.op, Status: sw.Status, Code: a.code,
		SourceIP: clientAddr(r).String(), BytesOut: sw.Written, Duration: h.clock().Sub(a.start)}
	if r.ContentLength > 0 {
		e.BytesIn = r.ContentLength
	}
	if ok && spec.what != nil {
		e.Bucket, e.Key, e.Target = spec.what(r, form)
	}
	if a.target != "" {
		e.Target = strings.TrimSpace(e.Target + " " + a.target)
	}
	if e.Code == "" && e.Status >= 400 {
		e.Code = errorCode(err, e.Status)
	}
	if s == nil {
		h.events.RecordBounded(e)
		return
	}
	e.User, e.AccessKey = displayName(s.principal), s.principal.AccessKeyID
	if e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden || !a.authorized {
		h.events.RecordBounded(e)
		return
	}
	h.events.Record(e)
}

// errorCode names the error of a failed request for the audit log: the
// S3 error code, or the status's for a refusal the console made itself.
func errorCode(err error, status int) string {
	if se, ok := errors.AsType[*s3err.Error](err); ok {
		return string(se.Code)
	}
	if status == http.StatusServiceUnavailable {
		return string(s3err.ServiceUnavailable)
	}
	return strings.ReplaceAll(http.StatusText(status), " ", "")
}

// recordSignIn records a sign-in attempt under name: p is the principal
// signed in (status 303), else code says why not. A name that names no
// principal is not recorded (see hiddenName).
func (h *Handler) recordSignIn(r *http.Request, start time.Time, name string, p iam.Principal, status int, code string) {
	if h.events == nil {
		return
	}
	e := audit.Event{Time: start, Source: audit.SourceConsole, Op: opSignIn, Status: status, Code: code,
		SourceIP: clientAddr(r).String(), Duration: h.clock().Sub(start)}
	if status < 400 {
		e.User, e.AccessKey = displayName(p), p.AccessKeyID
		h.events.Record(e)
		return
	}
	switch known, ok := h.iam.SignInName(name); {
	case name == "":
	case !ok:
		e.Target = hiddenName
	default:
		e.User, e.AccessKey = displayName(known), known.AccessKeyID
	}
	h.events.RecordBounded(e)
}

// loggedName returns what a log line says of a sign-in name: the
// principal's name if it names one, else hiddenName, as the audit log
// records it (a password typed into the wrong field must not be logged).
func (h *Handler) loggedName(name string) string {
	if known, ok := h.iam.SignInName(name); ok {
		return displayName(known)
	}
	return hiddenName
}

// unwrap returns the connection's own writer under guard's httprec.Writer, for
// http.MaxBytesReader: only that one can close the connection after a
// body over the limit.
func unwrap(w http.ResponseWriter) http.ResponseWriter {
	if sw, ok := w.(*httprec.Writer); ok {
		return sw.ResponseWriter
	}
	return w
}
