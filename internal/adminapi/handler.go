package adminapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coffer-s3/coffer/internal/httprec"
	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/lifecycle"
	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/s3err"
	"github.com/coffer-s3/coffer/internal/sigv4"
)

// Backend is what the Handler needs of iam: authentication results turned
// into principals, authorization, and the management API. *iam.IAM
// implements it; every method must be safe for concurrent use.
type Backend interface {
	Principal(accessKeyID string) iam.Principal
	Authorize(ctx context.Context, rq iam.Request) error
	// CanSeeBucket reports whether bucket belongs in p's bucket listings,
	// as for S3's ListBuckets.
	CanSeeBucket(p iam.Principal, bucket string) bool

	CreateUser(ctx context.Context, name string) (iam.NewKey, error)
	Users(ctx context.Context) ([]iam.UserInfo, error)
	User(ctx context.Context, name string) (iam.UserInfo, error)
	DeleteUser(ctx context.Context, name string) error
	SetUserDisabled(ctx context.Context, name string, disabled bool) error
	SetPassword(ctx context.Context, name, password string) error

	CreateKey(ctx context.Context, user string, opt iam.KeyOptions) (iam.NewKey, error)
	Keys(ctx context.Context, user string) ([]iam.KeyInfo, error)
	Key(ctx context.Context, accessKey string) (iam.KeyInfo, error)
	DeleteKey(ctx context.Context, accessKey string) error
	SetKeyDisabled(ctx context.Context, accessKey string, disabled bool) error
	RotateKey(ctx context.Context, accessKey string) (iam.NewKey, error)

	CreateGroup(ctx context.Context, name string) error
	Groups(ctx context.Context) ([]iam.GroupInfo, error)
	Group(ctx context.Context, name string) (iam.GroupInfo, error)
	DeleteGroup(ctx context.Context, name string) error
	UpdateGroupMembers(ctx context.Context, group string, add, remove []string) error

	PutPolicy(ctx context.Context, name string, doc []byte) error
	Policies(ctx context.Context) ([]iam.PolicyInfo, error)
	Policy(ctx context.Context, name string) (iam.PolicyInfo, error)
	DeletePolicy(ctx context.Context, name string) error
	AttachPolicy(ctx context.Context, policy string, t iam.Target) error
	DetachPolicy(ctx context.Context, policy string, t iam.Target) error

	Simulate(ctx context.Context, in iam.SimulateInput) (iam.Simulation, error)
}

var _ Backend = (*iam.IAM)(nil)

// Deps are the Handler's collaborators.
type Deps struct {
	// IAM authorizes requests and holds users, keys, groups and policies.
	// Required.
	IAM Backend
	// Verifier authenticates requests. Required. Its Keyring must be the
	// same IAM's, so that the key it verifies is the principal IAM knows.
	Verifier *sigv4.Verifier
	// GC runs one garbage-collection pass keeping blobs younger than
	// grace, as objects.Service.GC does. Nil makes POST /gc answer 501.
	GC func(ctx context.Context, grace time.Duration) (objects.GCStats, error)
	// GCGrace is the grace of a POST /gc that names none: the server's
	// gc-grace setting, which its own passes use. Zero means
	// DefaultGCGrace; negative is an error.
	GCGrace time.Duration
	// Lifecycle runs one lifecycle pass over bucket ("" for every bucket
	// with a lifecycle configuration), as lifecycle.Worker.RunPass does.
	// Nil makes POST /lifecycle/run answer 501.
	Lifecycle func(ctx context.Context, bucket string) (lifecycle.PassResult, error)
	// Buckets answers the bucket and usage endpoints. Nil makes them
	// answer 501.
	Buckets Buckets
	// Audit answers the audit endpoints. Nil makes them answer 501.
	Audit AuditLog
	// Observer, if not nil, is told about every request (the audit log
	// records the changes and the refusals).
	Observer Observer
	// Logger receives failures (Error, for 500s) and request detail
	// (Debug). Required.
	Logger *slog.Logger
	// NewRequestID returns a fresh request ID. Nil means a built-in
	// generator of 16 hex digits, like S3's.
	NewRequestID func() string
	// Unavailable, if not nil, says why the server can take no changes
	// (objects.Service.Err: the metadata store failed), nil while it can.
	// Its error, an s3err ServiceUnavailable, then answers every change
	// before its body is read, and every request that fails unexpectedly:
	// 503, which clients retry, rather than 500.
	Unavailable func() error
}

// Handler serves the admin API. It is an http.Handler for every request
// whose path starts with PathPrefix, and is safe for concurrent use.
type Handler struct {
	iam      Backend
	verifier *sigv4.Verifier
	gc       func(ctx context.Context, grace time.Duration) (objects.GCStats, error)
	gcGrace  time.Duration // default grace of POST /gc
	runLC    func(ctx context.Context, bucket string) (lifecycle.PassResult, error)
	buckets  Buckets
	audit    AuditLog
	observer Observer
	log      *slog.Logger
	newID    func() string
	down     func() error
	routes   []route
}

// route is an endpoint with its path split into segments.
type route struct {
	*endpoint
	segs []string // literal segments, or "{}" for a variable
}

// New returns a Handler over d.
func New(d Deps) (*Handler, error) {
	switch {
	case d.IAM == nil:
		return nil, errors.New("adminapi: no iam")
	case d.Verifier == nil:
		return nil, errors.New("adminapi: no signature verifier")
	case d.Logger == nil:
		return nil, errors.New("adminapi: no logger")
	case d.GCGrace < 0:
		return nil, fmt.Errorf("adminapi: negative GC grace %v", d.GCGrace)
	}
	h := &Handler{iam: d.IAM, verifier: d.Verifier, gc: d.GC, runLC: d.Lifecycle, buckets: d.Buckets, audit: d.Audit, observer: d.Observer,
		log: d.Logger, newID: d.NewRequestID, down: d.Unavailable, gcGrace: d.GCGrace}
	if h.gcGrace == 0 {
		h.gcGrace = DefaultGCGrace
	}
	if h.newID == nil {
		h.newID = newRequestIDs()
	}
	for i := range endpoints {
		h.routes = append(h.routes, route{endpoint: &endpoints[i], segs: strings.Split(endpoints[i].path, "/")})
	}
	return h, nil
}

// newRequestIDs returns a generator of S3-style request IDs: 16 upper-case
// hex digits, a random base plus a counter, unique within the process.
func newRequestIDs() func() string {
	var seed [8]byte
	_, _ = rand.Read(seed[:]) // crypto/rand.Read never fails
	base := binary.BigEndian.Uint64(seed[:])
	var seq atomic.Uint64
	return func() string {
		return fmt.Sprintf("%016X", base+seq.Add(1))
	}
}

// request is the state of one admin request as the pipeline builds it.
type request struct {
	id        string
	r         *http.Request
	ep        *endpoint
	vars      []string // the path's variable segments, decoded
	auth      *sigv4.Result
	principal iam.Principal
	body      []byte // the verified body, once read

	code       string // the error code answered, for the Observer
	claimedKey string // the access key of a request that failed authentication
	authFailed bool   // authentication failed, whatever the status
}

// apiError is an error response the handler decides itself.
type apiError struct {
	status  int
	code    string
	message string
	allow   string // Allow header of 405 responses
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

func errorf(status int, code, format string, a ...any) *apiError {
	return &apiError{status: status, code: code, message: fmt.Sprintf(format, a...)}
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rq := &request{id: h.newID(), r: r}
	w.Header().Set("x-amz-request-id", rq.id)
	if h.observer != nil {
		ow := &httprec.Writer{ResponseWriter: w}
		w = ow
		// Deferred first, so it runs last: after a panic was answered.
		defer h.observe(ow, rq, start)
	}
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		if v == http.ErrAbortHandler {
			panic(v)
		}
		h.log.ErrorContext(r.Context(), "admin api panic", "request_id", rq.id, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
		h.writeError(w, rq, errors.New("panic"))
	}()
	resp, err := h.serve(rq)
	if err != nil {
		h.writeError(w, rq, err)
		return
	}
	if r.Method != http.MethodGet {
		// Changes are rare and matter to operators; reads are not logged.
		h.log.InfoContext(r.Context(), "admin change", "request_id", rq.id, "op", rq.ep.name,
			"target", strings.Join(rq.vars, "/"), "access_key", rq.principal.AccessKeyID, "user", rq.principal.User)
	}
	h.writeResponse(w, rq, resp)
}

// serve runs the pipeline: route, authenticate, authorize, read the body,
// handle. It returns the response value (nil for 204 No Content).
func (h *Handler) serve(rq *request) (any, error) {
	r := rq.r
	if err := h.route(rq); err != nil {
		return nil, err
	}
	res, err := h.verifier.Verify(r)
	if err != nil {
		rq.claimedKey, rq.authFailed = claimedAccessKey(err), true
		return nil, err
	}
	rq.auth = res
	switch {
	case res.Anonymous:
		return nil, errorf(http.StatusForbidden, CodeAccessDenied, "the admin API needs a request signed with an access key")
	case res.Payload != sigv4.PayloadSigned:
		return nil, errorf(http.StatusBadRequest, CodeInvalidRequest,
			"the admin API needs a signed payload: x-amz-content-sha256 must be the hex SHA-256 of the body, not %s", res.Payload)
	}
	rq.principal = h.iam.Principal(res.AccessKeyID)
	if rq.ep.action != "" {
		for _, action := range append([]iam.Action{rq.ep.action}, alsoNeeds[rq.ep.name]...) {
			err := h.iam.Authorize(r.Context(), iam.Request{Principal: rq.principal, Action: action, Cond: conditions(r, res)})
			if s3err.Is(err, s3err.AccessDenied) {
				return nil, errorf(http.StatusForbidden, CodeAccessDenied, "%s is not allowed to perform %s", who(rq.principal), action)
			}
			if err != nil {
				return nil, err
			}
		}
	}
	if r.Method != http.MethodGet && h.down != nil {
		if err := h.down(); err != nil {
			return nil, err
		}
	}
	if err := h.readBody(rq); err != nil {
		return nil, err
	}
	if rq.ep.body == bodyNone && len(rq.body) > 0 {
		return nil, errorf(http.StatusBadRequest, CodeUnexpectedContent, "%s %s takes no request body", r.Method, rq.ep.path)
	}
	return rq.ep.handle(h, r.Context(), rq)
}

// route finds the endpoint of the request's method and path.
func (h *Handler) route(rq *request) error {
	p := rq.r.URL.EscapedPath()
	rest, ok := strings.CutPrefix(p, BasePath+"/")
	if !ok {
		return errorf(http.StatusNotFound, CodeNoSuchRoute, "no admin API endpoint at %s; version 1 is under %s/", p, BasePath)
	}
	segs := strings.Split(rest, "/")
	for i, s := range segs {
		d, err := url.PathUnescape(s)
		if err != nil {
			return errorf(http.StatusBadRequest, CodeInvalidInput, "malformed path segment %q", s)
		}
		segs[i] = d
	}
	var allow []string
	for i := range h.routes {
		rt := &h.routes[i]
		vars, ok := rt.match(segs)
		if !ok {
			continue
		}
		if rt.method == rq.r.Method {
			rq.ep, rq.vars = rt.endpoint, vars
			return nil
		}
		if !slices.Contains(allow, rt.method) {
			allow = append(allow, rt.method)
		}
	}
	if len(allow) == 0 {
		return errorf(http.StatusNotFound, CodeNoSuchRoute, "no admin API endpoint at %s", p)
	}
	slices.Sort(allow)
	e := errorf(http.StatusMethodNotAllowed, CodeMethodNotAllowed, "%s is not allowed on %s; use %s", rq.r.Method, p, strings.Join(allow, " or "))
	e.allow = strings.Join(allow, ", ")
	return e
}

// match reports whether segs (decoded) match the route, and returns the
// variable segments.
func (rt *route) match(segs []string) ([]string, bool) {
	if len(segs) != len(rt.segs) {
		return nil, false
	}
	var vars []string
	for i, s := range rt.segs {
		switch {
		case s == "{}" && segs[i] != "":
			vars = append(vars, segs[i])
		case s != segs[i]:
			return nil, false
		}
	}
	return vars, true
}

// conditions returns the policy condition keys of an authenticated admin
// request, as s3api computes them, so that identity policies may restrict
// administration by source address or transport.
func conditions(r *http.Request, res *sigv4.Result) iam.Conditions {
	c := iam.Conditions{
		SecureTransport:  r.TLS != nil,
		UserAgent:        r.UserAgent(),
		Referer:          r.Referer(),
		SignatureVersion: "AWS4-HMAC-SHA256",
		AuthType:         "REST-HEADER",
		ContentSHA256:    res.ContentSHA256, // the admin API takes signed payloads only
	}
	if res.Presigned {
		c.AuthType = "REST-QUERY-STRING"
	}
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		c.SourceIP = ap.Addr().Unmap()
	}
	return c
}

// readBody reads and verifies the whole body into rq.body: at most
// MaxBodySize bytes, refused from Content-Length before reading when it
// says more.
func (h *Handler) readBody(rq *request) error {
	r := rq.r
	if r.ContentLength > MaxBodySize {
		return tooLarge(r.ContentLength)
	}
	b, err := rq.auth.Body(r.Body)
	if err != nil {
		return err
	}
	data, err := io.ReadAll(io.LimitReader(b, MaxBodySize+1))
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		// The client stopped sending: its doing, not the server's.
		return errorf(http.StatusBadRequest, CodeRequestTimeout, "the request body sent nothing for too long")
	}
	if err != nil {
		return err
	}
	if len(data) > MaxBodySize {
		return tooLarge(-1)
	}
	rq.body = data
	return nil
}

func tooLarge(size int64) *apiError {
	if size >= 0 {
		return errorf(http.StatusRequestEntityTooLarge, CodeEntityTooLarge, "the request body of %d bytes is larger than the limit of %d bytes", size, MaxBodySize)
	}
	return errorf(http.StatusRequestEntityTooLarge, CodeEntityTooLarge, "the request body is larger than the limit of %d bytes", MaxBodySize)
}

// decodeJSON decodes body, a JSON object, into v strictly: no unknown
// fields, nothing after the object.
func decodeJSON(body []byte, v any) error {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 {
		return errorf(http.StatusBadRequest, CodeMalformedJSON, "the request body is empty; want a JSON object")
	}
	if trimmed[0] != '{' {
		return errorf(http.StatusBadRequest, CodeMalformedJSON, "the request body must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errorf(http.StatusBadRequest, CodeMalformedJSON, "the request body is not the expected JSON object: %s", jsonMessage(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return errorf(http.StatusBadRequest, CodeMalformedJSON, "the request body has data after the JSON object")
	}
	return nil
}

// jsonMessage describes a decoding error without Go type names.
func jsonMessage(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field != "" {
			return fmt.Sprintf("field %q must not be a JSON %s", te.Field, te.Value)
		}
		return fmt.Sprintf("unexpected JSON %s", te.Value)
	}
	var pe *time.ParseError
	if errors.As(err, &pe) {
		return fmt.Sprintf("time %s is not in RFC 3339 format", pe.Value)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "the JSON object is incomplete"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// writeResponse writes v as JSON with status 200, or 204 if v is nil.
func (h *Handler) writeResponse(w http.ResponseWriter, rq *request, v any) {
	if v == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if s, ok := v.(stream); ok {
		h.writeStream(w, rq, s)
		return
	}
	data, err := json.Marshal(v)
	if err != nil {
		h.writeError(w, rq, fmt.Errorf("encode response: %w", err))
		return
	}
	data = append(data, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(data); err != nil {
		h.log.DebugContext(rq.r.Context(), "admin response not sent", "request_id", rq.id, "err", err)
	}
}

// writeError maps err to an error response and writes it.
func (h *Handler) writeError(w http.ResponseWriter, rq *request, err error) {
	r := rq.r
	ctx := r.Context()
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		h.log.DebugContext(ctx, "admin client went away", "request_id", rq.id, "err", err)
		return
	}
	status, code, msg := classify(err)
	if status == http.StatusInternalServerError && h.down != nil {
		if derr := h.down(); derr != nil {
			status, code, msg = classify(derr)
		}
	}
	rq.code = code
	e, isAPI := err.(*apiError)
	switch {
	case status >= 500 && !isAPI:
		h.log.ErrorContext(ctx, "admin request failed", "request_id", rq.id, "method", r.Method, "path", r.URL.Path,
			"access_key", rq.principal.AccessKeyID, "err", err)
	default:
		h.log.DebugContext(ctx, "admin request refused", "request_id", rq.id, "method", r.Method, "path", r.URL.Path,
			"access_key", rq.principal.AccessKeyID, "code", code, "err", err)
	}
	data, merr := json.Marshal(ErrorResponse{Code: code, Message: msg, RequestID: rq.id})
	if merr != nil { // cannot happen: three strings
		data = []byte(`{"code":"InternalError"}`)
	}
	data = append(data, '\n')
	if isAPI && e.allow != "" {
		w.Header().Set("Allow", e.allow)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(status)
	if _, err := w.Write(data); err != nil {
		h.log.DebugContext(ctx, "admin error response not sent", "request_id", rq.id, "err", err)
	}
}

// iamErrors maps iam's sentinel errors to the API's codes. Order matters
// for an error that wraps several: the most specific comes first.
var iamErrors = []struct {
	err    error
	status int
	code   string
}{
	{iam.ErrNotFound, http.StatusNotFound, CodeNoSuchEntity},
	{iam.ErrExists, http.StatusConflict, CodeEntityAlreadyExists},
	{iam.ErrInUse, http.StatusConflict, CodeDeleteConflict},
	{iam.ErrPolicy, http.StatusBadRequest, CodeMalformedPolicyDocument},
	{iam.ErrInvalid, http.StatusBadRequest, CodeInvalidInput},
}

// internalMessage is all a client learns of an unexpected failure.
const internalMessage = "We encountered an internal error. Please try again."

// classify returns the status, code and message of the response for err.
func classify(err error) (status int, code, message string) {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.status, ae.code, ae.message
	}
	for _, m := range iamErrors {
		if errors.Is(err, m.err) {
			return m.status, m.code, iamMessage(err, m.err)
		}
	}
	var se *s3err.Error
	if errors.As(err, &se) && se.Code != s3err.InternalError && s3err.Known(se.Code) {
		return se.Status(), string(se.Code), se.Msg()
	}
	if errors.Is(err, objects.ErrUnavailable) { // a shared metadata store (PostgreSQL) out of reach, for now
		return http.StatusServiceUnavailable, string(s3err.ServiceUnavailable), "The metadata store is unavailable; please retry."
	}
	return http.StatusInternalServerError, CodeInternalError, internalMessage
}

// iamMessage returns the message of an iam error without the sentinel's
// text, which the code already says: "user name must be 1 to 64
// characters" rather than "iam: invalid input: user name …".
func iamMessage(err, sentinel error) string {
	s := err.Error()
	if t, ok := strings.CutPrefix(s, sentinel.Error()+": "); ok && t != "" {
		return t
	}
	return strings.TrimPrefix(s, "iam: ")
}

// claimedAccessKey returns the access key an authentication error names
// (sigv4 adds it as AWSAccessKeyId to InvalidAccessKeyId and
// SignatureDoesNotMatch), or "".
func claimedAccessKey(err error) string {
	var e *s3err.Error
	if !errors.As(err, &e) {
		return ""
	}
	for _, f := range e.Extra {
		if f.Name == "AWSAccessKeyId" {
			return f.Value
		}
	}
	return ""
}
