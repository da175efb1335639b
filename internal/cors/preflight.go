package cors

import (
	"net/http"
	"strings"

	"github.com/coffer-s3/coffer/internal/s3err"
)

// MaxRequestHeaders is the most header names a preflight's
// Access-Control-Request-Headers may list. Browsers list only the headers
// a script set that are not CORS-safelisted, a handful; the bound keeps an
// unauthenticated preflight from making the server compare a megabyte of
// names against every rule.
const MaxRequestHeaders = 256

// Resource types of a preflight, as S3 names them in its error document.
const (
	ResourceBucket = "BUCKET"
	ResourceObject = "OBJECT"
)

// Preflight is a parsed CORS preflight request (OPTIONS).
type Preflight struct {
	Origin string
	// Method is the Access-Control-Request-Method: one of Methods.
	Method string
	// Headers are the names of Access-Control-Request-Headers, in lower
	// case, in the order sent; nil when there are none.
	Headers []string
}

// S3 answers a preflight in this order: a missing Origin is BadRequest
// (PreflightOrigin), then a missing bucket (BucketNotFound) and a bucket
// without a configuration (NotEnabled) are AccessForbidden, and only then
// are the method and the request headers read (ParsePreflight) and the
// rules matched (Answer). The HTTP layer reads the bucket's configuration
// between the first step and the others.

// PreflightOrigin returns a preflight's Origin, or S3's BadRequest
// "Insufficient information. Origin request header needed." when it has
// none: the first thing S3 checks, before it looks for the bucket.
func PreflightOrigin(h http.Header) (string, error) {
	origin := h.Get("Origin")
	if origin == "" {
		return "", s3err.Newf(s3err.BadRequest, "", "Insufficient information. Origin request header needed.")
	}
	return origin, nil
}

// BucketNotFound is S3's answer to a preflight with an Origin for a bucket
// that does not exist: AccessForbidden "CORSResponse: Bucket not found",
// naming the requested method (the Access-Control-Request-Method as sent,
// or when there is none the preflight's own, method) and the bucket as
// the resource, also for an object's URL. A stranger learns only what a
// preflight to an existing bucket would tell.
func BucketNotFound(h http.Header, method string) error {
	return s3err.Newf(s3err.AccessForbidden, "", "CORSResponse: Bucket not found").
		With("Method", requestedMethod(h, method)).With("ResourceType", ResourceBucket)
}

// NotEnabled is S3's answer to a preflight with an Origin for a bucket
// without a CORS configuration: AccessForbidden "CORSResponse: CORS is
// not enabled for this bucket.", naming the requested method as
// BucketNotFound does and the bucket as the resource, also for an
// object's URL.
func NotEnabled(h http.Header, method string) error {
	return notEnabled(requestedMethod(h, method))
}

func notEnabled(method string) error {
	return s3err.Newf(s3err.AccessForbidden, "", "CORSResponse: CORS is not enabled for this bucket.").
		With("Method", method).With("ResourceType", ResourceBucket)
}

// requestedMethod is the method a preflight's refusal names: its
// Access-Control-Request-Method as sent, else method.
func requestedMethod(h http.Header, method string) string {
	if vs, ok := h["Access-Control-Request-Method"]; ok {
		return strings.Join(vs, ",")
	}
	return method
}

// ParsePreflight reads a preflight's headers. Like S3 it answers
// BadRequest for a missing Origin, for a missing
// Access-Control-Request-Method or one that is not one of Methods (S3
// writes "null" for a missing one), and for an
// Access-Control-Request-Headers that is not a list of header names. It
// does no I/O.
func ParsePreflight(h http.Header) (Preflight, error) {
	origin, err := PreflightOrigin(h)
	if err != nil {
		return Preflight{}, err
	}
	vs, ok := h["Access-Control-Request-Method"]
	if !ok {
		return Preflight{}, s3err.Newf(s3err.BadRequest, "", "Invalid Access-Control-Request-Method: null")
	}
	method := strings.Join(vs, ",")
	if !IsMethod(method) {
		return Preflight{}, s3err.Newf(s3err.BadRequest, "", "Invalid Access-Control-Request-Method: "+method)
	}
	headers, err := ParseRequestHeaders(strings.Join(h["Access-Control-Request-Headers"], ","))
	if err != nil {
		return Preflight{}, err
	}
	return Preflight{Origin: origin, Method: method, Headers: headers}, nil
}

// ParseRequestHeaders splits an Access-Control-Request-Headers value into
// header names in lower case, as S3 echoes them in
// Access-Control-Allow-Headers. Whitespace around names is dropped and
// empty or whitespace-only values list none; a name that is empty or not
// an RFC 9110 token is BadRequest with S3's message, and so is a list of
// more than MaxRequestHeaders names. The names are counted before any is
// kept, so a long list costs no memory: the value comes from anyone.
func ParseRequestHeaders(v string) ([]string, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	n := strings.Count(v, ",") + 1
	if n > MaxRequestHeaders {
		return nil, s3err.Newf(s3err.BadRequest, "", "Access-Control-Request-Headers names more than 256 headers.")
	}
	names := make([]string, 0, n)
	for rest, more := v, true; more; {
		var raw string
		raw, rest, more = strings.Cut(rest, ",")
		name := strings.Trim(raw, " \t")
		if !IsToken(name) {
			return nil, s3err.Newf(s3err.BadRequest, "", `Access-Control-Request-Headers "`+raw+`" contains invalid character.`)
		}
		names = append(names, strings.ToLower(name))
	}
	return names, nil
}

// IsToken reports whether s is a non-empty RFC 9110 token, what a header
// name must be.
func IsToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// Answer returns the rule of c that allows p, or S3's refusal:
// AccessForbidden with S3's "not allowed" message, naming p's method and
// resourceType (ResourceBucket or ResourceObject) in the error document,
// as S3 does. A nil c (no configuration) is NotEnabled's refusal, which
// S3 gives before it reads the method.
func (p Preflight) Answer(c *Config, resourceType string) (*Rule, error) {
	if c == nil {
		return nil, notEnabled(p.Method)
	}
	if r := c.Match(p.Origin, p.Method, p.Headers); r != nil {
		return r, nil
	}
	return nil, s3err.New(s3err.AccessForbidden, "").With("Method", p.Method).With("ResourceType", resourceType)
}

// ActualMethod returns the method an actual (not preflight) request with
// headers h and HTTP method method is matched with: its
// Access-Control-Request-Method if it sends one, as S3 does (browsers send
// it only in preflights), else method. It returns "" when the request
// names a method no rule can allow, which matches nothing.
func ActualMethod(h http.Header, method string) string {
	if vs, ok := h["Access-Control-Request-Method"]; ok {
		method = strings.Join(vs, ",")
	}
	if !IsMethod(method) {
		return ""
	}
	return method
}

// ActualHeaders returns the header names an actual (not preflight)
// request with headers h is matched with: those of its
// Access-Control-Request-Headers, as ParseRequestHeaders reads them,
// usually none (browsers send the header only in preflights). S3 treats an
// actual request that sends one like a preflight in this: a rule that does
// not allow every name gives it no CORS headers. ok is false when the
// header is not a list of at most MaxRequestHeaders names, which no rule
// allows.
func ActualHeaders(h http.Header) (names []string, ok bool) {
	vs, present := h["Access-Control-Request-Headers"]
	if !present {
		return nil, true
	}
	names, err := ParseRequestHeaders(strings.Join(vs, ","))
	return names, err == nil
}
