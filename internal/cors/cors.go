// Package cors is S3's cross-origin resource sharing model: a bucket's
// configuration (up to 100 rules of allowed origins, methods and headers),
// the checks PutBucketCors makes on it, the matching of a browser's request
// against its rules, the response headers a matching rule gives, and the
// compact encoding the configuration is stored in.
//
// It follows Amazon S3, not the Fetch standard's generic server behaviour:
// https://docs.aws.amazon.com/AmazonS3/latest/userguide/cors.html and
// https://docs.aws.amazon.com/AmazonS3/latest/API/RESTOPTIONSobject.html.
// The first rule that matches answers; origins match case-sensitively and
// allowed headers ignoring the case of ASCII letters, each with at most one
// "*" standing for any run of characters.
//
// The package has no I/O and no state: the HTTP layer parses requests,
// reads the stored document and writes the headers this package computes.
package cors

import (
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/coffer-s3/coffer/internal/s3err"
)

// Limits of a configuration, as S3 has them.
const (
	// MaxRules is the most rules a configuration may have.
	MaxRules = 100
	// MaxIDLength is the longest rule ID, in bytes.
	MaxIDLength = 255
)

// Methods are the HTTP methods a rule may allow, in S3's spelling; they
// are case-sensitive.
var Methods = [...]string{http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete, http.MethodHead}

// Vary is the Vary header S3 sends with every response a rule allowed: the
// answer depends on these request headers, so a cache must not reuse it
// for another origin.
const Vary = "Origin, Access-Control-Request-Headers, Access-Control-Request-Method"

// Config is a bucket's CORS configuration. The zero value has no rules,
// which PutBucketCors refuses (Validate).
type Config struct {
	Rules []Rule
}

// Rule is one CORSRule. Lists keep the order they were put in, which is
// the order GetBucketCors returns and Access-Control-Allow-Methods and
// -Expose-Headers list them in.
type Rule struct {
	ID             string
	AllowedMethods []string
	AllowedOrigins []string
	AllowedHeaders []string
	ExposeHeaders  []string
	// MaxAgeSeconds is how long a browser may cache a preflight answer;
	// nil when the rule does not say (no Access-Control-Max-Age).
	MaxAgeSeconds *int
}

// Validate checks c as PutBucketCors does and returns S3's error for the
// first problem: MalformedXML for a document of no rule or more than
// MaxRules, a rule without AllowedMethod or AllowedOrigin, an ID longer
// than MaxIDLength or a MaxAgeSeconds that is negative or beyond 32 bits
// (every rule's structure is checked before any rule's values); then
// InvalidRequest, with S3's message, for a method S3 does not allow, an
// AllowedOrigin or AllowedHeader with more than one "*", and an
// ExposeHeader with any; and, Coffer's own check, for a control character
// in an AllowedOrigin and a character no header name may hold (RFC 9110
// token) in an AllowedHeader or an ExposeHeader: such a value could never
// match a request, or would be sent back as a broken header.
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutBucketCors.html
func (c *Config) Validate() error {
	if n := len(c.Rules); n == 0 || n > MaxRules {
		return s3err.New(s3err.MalformedXML, "")
	}
	for i := range c.Rules {
		r := &c.Rules[i]
		switch {
		case len(r.AllowedMethods) == 0, len(r.AllowedOrigins) == 0, len(r.ID) > MaxIDLength,
			r.MaxAgeSeconds != nil && (*r.MaxAgeSeconds < 0 || *r.MaxAgeSeconds > math.MaxInt32):
			return s3err.New(s3err.MalformedXML, "")
		}
	}
	for i := range c.Rules {
		if err := c.Rules[i].validateValues(); err != nil {
			return err
		}
	}
	return nil
}

// validateValues checks what Validate checks of one rule's values.
func (r *Rule) validateValues() error {
	for _, m := range r.AllowedMethods {
		if !IsMethod(m) {
			return s3err.Newf(s3err.InvalidRequest, "", "Found unsupported HTTP method in CORS config. Unsupported method is "+m)
		}
	}
	for _, o := range r.AllowedOrigins {
		if strings.Count(o, "*") > 1 {
			return s3err.Newf(s3err.InvalidRequest, "", `AllowedOrigin "`+o+`" can not have more than one wildcard.`)
		}
		if strings.ContainsFunc(o, isControl) {
			return invalidCharacter("AllowedOrigin", o)
		}
	}
	for _, h := range r.AllowedHeaders {
		if strings.Count(h, "*") > 1 {
			return s3err.Newf(s3err.InvalidRequest, "", `AllowedHeader "`+h+`" can not have more than one wildcard.`)
		}
		if !tokenChars(h) {
			return invalidCharacter("AllowedHeader", h)
		}
	}
	for _, h := range r.ExposeHeaders {
		if strings.Contains(h, "*") {
			return s3err.Newf(s3err.InvalidRequest, "", `ExposeHeader "`+h+`" contains wildcard. We currently do not support wildcard for ExposeHeader.`)
		}
		if !tokenChars(h) {
			return invalidCharacter("ExposeHeader", h)
		}
	}
	return nil
}

// invalidCharacter is Validate's refusal of a value with a character it
// may not hold, in the words S3 uses for such a request header.
func invalidCharacter(element, value string) error {
	return s3err.Newf(s3err.InvalidRequest, "", element+` "`+value+`" contains invalid character.`)
}

// isControl reports whether r is an ASCII control character, which no
// header value may hold (CR and LF would end it).
func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// tokenChars reports whether every byte of s may stand in an RFC 9110
// token (a header name): "*", a token character, keeps its place as the
// wildcard of an AllowedHeader. The empty string has none that may not.
func tokenChars(s string) bool {
	return s == "" || IsToken(s)
}

// IsMethod reports whether m is one of Methods.
func IsMethod(m string) bool {
	for _, x := range Methods {
		if m == x {
			return true
		}
	}
	return false
}

// Match returns the first rule that allows a request from origin with
// method (for a preflight, its Access-Control-Request-Method) and, for a
// preflight, the header names of its Access-Control-Request-Headers, as
// ParseRequestHeaders returns them. Actual requests pass the headers they
// name in Access-Control-Request-Headers, usually none (ActualHeaders). It
// returns nil if no rule allows the request.
func (c *Config) Match(origin, method string, headers []string) *Rule {
	for i := range c.Rules {
		if r := &c.Rules[i]; r.allows(origin, method, headers) {
			return r
		}
	}
	return nil
}

// allows reports whether r allows the request.
func (r *Rule) allows(origin, method string, headers []string) bool {
	found := false
	for _, m := range r.AllowedMethods {
		if m == method {
			found = true
			break
		}
	}
	if !found {
		return false
	}
	found = false
	for _, o := range r.AllowedOrigins {
		if wildcardMatch(o, origin, false) {
			found = true
			break
		}
	}
	return found && r.allowsHeaders(headers)
}

// allowsHeaders reports whether r allows every one of headers.
func (r *Rule) allowsHeaders(headers []string) bool {
	for _, h := range headers {
		if !r.allowsHeader(h) {
			return false
		}
	}
	return true
}

// allowsHeader reports whether one of r's AllowedHeaders matches name.
func (r *Rule) allowsHeader(name string) bool {
	for _, p := range r.AllowedHeaders {
		if wildcardMatch(p, name, true) {
			return true
		}
	}
	return false
}

// wildcardMatch reports whether s matches pattern, in which at most the
// first "*" is a wildcard for any run of characters, the empty one
// included. fold ignores the case of ASCII letters, as header names are
// compared (RFC 9110 tokens are ASCII); Unicode folding would let a pattern
// with the Kelvin sign (U+212A) match a "k".
func wildcardMatch(pattern, s string, fold bool) bool {
	eq := func(a, b string) bool { return a == b }
	if fold {
		eq = equalFoldASCII
	}
	star := strings.IndexByte(pattern, '*')
	if star < 0 {
		return eq(pattern, s)
	}
	prefix, suffix := pattern[:star], pattern[star+1:]
	return len(s) >= len(prefix)+len(suffix) &&
		eq(s[:len(prefix)], prefix) && eq(s[len(s)-len(suffix):], suffix)
}

// equalFoldASCII reports whether a and b are equal when ASCII letters are
// compared without case; other bytes must be equal.
func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if lowerASCII(a[i]) != lowerASCII(b[i]) {
			return false
		}
	}
	return true
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// allowsAnyOrigin reports whether r allows every origin with a "*" of its
// own, in which case S3 answers Access-Control-Allow-Origin: * and no
// Access-Control-Allow-Credentials.
func (r *Rule) allowsAnyOrigin() bool {
	for _, o := range r.AllowedOrigins {
		if o == "*" {
			return true
		}
	}
	return false
}

// SetHeaders sets on h the response headers S3 sends for a request from
// origin that r allows: Access-Control-Allow-Origin (the origin, or "*"
// when the rule allows any), Access-Control-Allow-Credentials: true (not
// with "*"), Access-Control-Allow-Methods (the rule's), for a preflight
// Access-Control-Allow-Headers (the requested headers, lower case, as
// ParseRequestHeaders returns them), Access-Control-Expose-Headers and
// Access-Control-Max-Age when the rule has them, and Vary.
func (r *Rule) SetHeaders(h http.Header, origin string, requested []string) {
	if r.allowsAnyOrigin() {
		h.Set("Access-Control-Allow-Origin", "*")
	} else {
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Allow-Credentials", "true")
	}
	h.Set("Access-Control-Allow-Methods", strings.Join(r.AllowedMethods, ", "))
	if len(requested) > 0 {
		h.Set("Access-Control-Allow-Headers", strings.Join(requested, ", "))
	}
	if len(r.ExposeHeaders) > 0 {
		h.Set("Access-Control-Expose-Headers", strings.Join(r.ExposeHeaders, ", "))
	}
	if r.MaxAgeSeconds != nil {
		h.Set("Access-Control-Max-Age", strconv.Itoa(*r.MaxAgeSeconds))
	}
	h.Set("Vary", Vary)
}

// ResponseHeaders lists the headers SetHeaders may set: those an error
// response must keep so that a browser can read the error. A read-only
// lookup table.
var ResponseHeaders = [...]string{
	"Access-Control-Allow-Origin", "Access-Control-Allow-Credentials", "Access-Control-Allow-Methods",
	"Access-Control-Allow-Headers", "Access-Control-Expose-Headers", "Access-Control-Max-Age", "Vary",
}
