package sigv4

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/coffer-s3/coffer/internal/s3err"
)

// Wire constants of SigV4 for S3.
const (
	algorithm                = "AWS4-HMAC-SHA256"
	scopeTerminator          = "aws4_request"
	iso8601Basic             = "20060102T150405Z"
	unsignedPayload          = "UNSIGNED-PAYLOAD"
	streamingSigned          = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
	streamingSignedTrailer   = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
	streamingUnsignedTrailer = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
	emptySHA256              = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

	maxExpires  = 7 * 24 * time.Hour // presigned URLs live at most a week
	maxTrailers = 16                 // names accepted in x-amz-trailer
)

// credential is a parsed Credential value: AKID/date/region/service/aws4_request.
type credential struct {
	accessKeyID string
	date        string // yyyyMMdd
	region      string
	service     string
	terminator  string
	scope       string // date/region/service/terminator, as sent
}

// authorization is a parsed Authorization header (or its presigned equivalent).
type authorization struct {
	cred          credential
	signedHeaders string // lowercase, ';'-separated, strictly ascending
	signature     [32]byte
}

// parseAuthorization parses an AWS4-HMAC-SHA256 Authorization header value.
// Components may be separated by commas, spaces or both, in any order.
func parseAuthorization(s string) (authorization, error) {
	var a authorization
	rest, ok := strings.CutPrefix(s, algorithm)
	if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
		if strings.HasPrefix(s, "AWS ") {
			return a, errUnsupportedMechanism()
		}
		return a, s3err.Newf(s3err.InvalidArgument, "", "Unsupported Authorization Type").
			With("ArgumentName", "Authorization").With("ArgumentValue", s)
	}
	var cred, signed, sig string
	var seen [3]bool
	for rest != "" {
		var tok string
		tok, rest = nextToken(rest)
		if tok == "" {
			continue
		}
		name, value, ok := strings.Cut(tok, "=")
		i := -1
		switch name {
		case "Credential":
			i = 0
		case "SignedHeaders":
			i = 1
		case "Signature":
			i = 2
		}
		if !ok || i < 0 || seen[i] {
			return a, errHeaderMalformed("the authorization component \"" + tok + "\" is malformed.")
		}
		seen[i] = true
		switch i {
		case 0:
			cred = value
		case 1:
			signed = value
		case 2:
			sig = value
		}
	}
	if !seen[0] || !seen[1] || !seen[2] {
		return a, errHeaderMalformed("the authorization header requires three components: Credential, SignedHeaders, and Signature.")
	}
	var err error
	if a.cred, err = parseCredential(cred, errHeaderMalformed); err != nil {
		return a, err
	}
	if !validSignedHeaders(signed) {
		return a, errHeaderMalformed("the SignedHeaders component \"" + signed + "\" must be a ';'-separated, sorted list of lowercase header names.")
	}
	a.signedHeaders = signed
	if !parseSignature(&a.signature, sig) {
		return a, errHeaderMalformed("the Signature component must be 64 hexadecimal digits.")
	}
	return a, nil
}

// nextToken returns the first token of s delimited by commas, spaces or
// tabs, and what follows it.
func nextToken(s string) (tok, rest string) {
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] == ',' || s[i] == '\t') {
		i++
	}
	j := i
	for j < len(s) && s[j] != ' ' && s[j] != ',' && s[j] != '\t' {
		j++
	}
	return s[i:j], s[j:]
}

// parseCredential parses AKID/yyyyMMdd/region/service/aws4_request. It checks
// the shape only; Verifier.checkScope checks the values.
func parseCredential(s string, malformed func(string) *s3err.Error) (credential, error) {
	var c credential
	parts := [5]string{}
	rest := s
	for i := range 4 {
		var ok bool
		parts[i], rest, ok = strings.Cut(rest, "/")
		if !ok || parts[i] == "" {
			return c, malformed(`the Credential is mal-formed; expecting "<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request".`)
		}
	}
	parts[4] = rest
	if rest == "" || strings.IndexByte(rest, '/') >= 0 {
		return c, malformed(`the Credential is mal-formed; expecting "<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request".`)
	}
	if !allDigits(parts[1], 8) {
		return c, malformed(`incorrect date format "` + parts[1] + `". This date in the credential must be in the format "yyyyMMdd".`)
	}
	c = credential{
		accessKeyID: parts[0],
		date:        parts[1],
		region:      parts[2],
		service:     parts[3],
		terminator:  parts[4],
		scope:       s[len(parts[0])+1:],
	}
	return c, nil
}

// validSignedHeaders reports whether s is a non-empty, strictly ascending,
// ';'-separated list of lowercase header names. Requiring the canonical order
// rejects duplicates in one pass.
func validSignedHeaders(s string) bool {
	prev := ""
	for s != "" {
		name, rest, more := strings.Cut(s, ";")
		if name == "" || (more && rest == "") || name <= prev {
			return false
		}
		for i := 0; i < len(name); i++ {
			c := name[i]
			if c >= 'A' && c <= 'Z' || !isTokenChar(c) {
				return false
			}
		}
		prev, s = name, rest
	}
	return prev != ""
}

// signedHeader reports whether the ';'-separated list contains name,
// compared case-insensitively.
func signedHeader(list, name string) bool {
	for list != "" {
		var h string
		h, list, _ = strings.Cut(list, ";")
		if strings.EqualFold(h, name) {
			return true
		}
	}
	return false
}

// parseSignature decodes 64 hex digits (either case) into dst.
func parseSignature[S ~string | ~[]byte](dst *[32]byte, s S) bool {
	if len(s) != 64 {
		return false
	}
	for i := range dst {
		hi, ok1 := unhex(s[2*i])
		lo, ok2 := unhex(s[2*i+1])
		if !ok1 || !ok2 {
			return false
		}
		dst[i] = hi<<4 | lo
	}
	return true
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// requestTime returns the request time from x-amz-date, or else Date, both
// as the ISO 8601 basic string used in the string to sign and as a time.
func requestTime(h http.Header) (string, time.Time, error) {
	if s := headerValue(h, "X-Amz-Date"); s != "" {
		if t, ok := parseAmzDate(s); ok {
			return s, t, nil
		}
		return "", time.Time{}, errDate()
	}
	s := headerValue(h, "Date")
	if t, ok := parseAmzDate(s); ok {
		return s, t, nil
	}
	t, err := http.ParseTime(s)
	if err != nil {
		return "", time.Time{}, errDate()
	}
	t = t.UTC()
	return t.Format(iso8601Basic), t, nil
}

// parseAmzDate parses yyyyMMddTHHmmssZ without allocating.
func parseAmzDate(s string) (time.Time, bool) {
	if len(s) != 16 || s[8] != 'T' || s[15] != 'Z' || !allDigits(s[:8], 8) || !allDigits(s[9:15], 6) {
		return time.Time{}, false
	}
	n := func(i, j int) int {
		v := 0
		for _, c := range []byte(s[i:j]) {
			v = v*10 + int(c-'0')
		}
		return v
	}
	y, mo, d, hh, mm, ss := n(0, 4), n(4, 6), n(6, 8), n(9, 11), n(11, 13), n(13, 15)
	t := time.Date(y, time.Month(mo), d, hh, mm, ss, 0, time.UTC)
	if t.Year() != y || int(t.Month()) != mo || t.Day() != d || t.Hour() != hh || t.Minute() != mm || t.Second() != ss {
		return time.Time{}, false
	}
	return t, true
}

func allDigits(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// headerValue returns the first value of the canonical header key, or "".
func headerValue(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// checkUnsigned rejects a request with x-amz-* headers (or host) missing
// from the signed headers, as S3 does: an unsigned x-amz-copy-source or
// x-amz-tagging would otherwise change what an authentic request does.
// x-amz-content-sha256 is exempt; it is covered by the payload hash line.
func checkUnsigned(h http.Header, signed string) error {
	var missing []string
	if !signedHeader(signed, "host") {
		missing = append(missing, "host")
	}
	for k := range h {
		if len(k) > 6 && strings.EqualFold(k[:6], "x-amz-") &&
			!strings.EqualFold(k, "x-amz-content-sha256") && !signedHeader(signed, k) {
			missing = append(missing, strings.ToLower(k))
		}
	}
	if missing == nil {
		return nil
	}
	slices.Sort(missing)
	return s3err.Newf(s3err.AccessDenied, "", "There were headers present in the request which were not signed").
		With("HeadersNotSigned", strings.Join(missing, ", "))
}

// setPayload records the payload mode selected by x-amz-content-sha256 and
// the headers that streaming modes depend on.
func (rs *Result) setPayload(r *http.Request, v string) error {
	switch v {
	case unsignedPayload:
		rs.Payload = PayloadUnsigned
	case streamingSigned:
		rs.Payload = PayloadStreamingSigned
	case streamingSignedTrailer:
		rs.Payload = PayloadStreamingSignedTrailer
	case streamingUnsignedTrailer:
		rs.Payload = PayloadStreamingUnsignedTrailer
	default:
		var sum [32]byte
		if !parseSignature(&sum, v) {
			return errContentSHA256(v)
		}
		rs.Payload = PayloadSigned
		rs.ContentSHA256 = strings.ToLower(v)
	}
	names, err := parseTrailerHeader(r.Header["X-Amz-Trailer"])
	if err != nil {
		return err
	}
	if names != nil && rs.Payload != PayloadStreamingSignedTrailer && rs.Payload != PayloadStreamingUnsignedTrailer {
		return s3err.Newf(s3err.InvalidArgument, "", "x-amz-trailer requires x-amz-content-sha256 "+streamingSignedTrailer+" or "+streamingUnsignedTrailer+".").
			With("ArgumentName", "x-amz-trailer")
	}
	rs.Trailers = names
	if !rs.Payload.Streaming() {
		return nil
	}
	dl := headerValue(r.Header, "X-Amz-Decoded-Content-Length")
	if dl == "" {
		return s3err.Newf(s3err.MissingContentLength, "", "You must provide the x-amz-decoded-content-length header for a streaming upload.")
	}
	n, err := strconv.ParseInt(dl, 10, 64)
	if err != nil || n < 0 {
		return s3err.Newf(s3err.InvalidArgument, "", "x-amz-decoded-content-length must be a non-negative integer.").
			With("ArgumentName", "x-amz-decoded-content-length").With("ArgumentValue", dl)
	}
	rs.DecodedLength = n
	return nil
}

// parseTrailerHeader returns the lowercase trailer names declared in
// x-amz-trailer values, which may be repeated or comma-separated.
func parseTrailerHeader(values []string) ([]string, error) {
	var names []string
	for _, v := range values {
		for v != "" {
			var name string
			name, v, _ = strings.Cut(v, ",")
			name = strings.ToLower(strings.TrimSpace(name))
			valid := name != "" && name != trailerSignatureName && !slices.Contains(names, name) && len(names) < maxTrailers
			for i := 0; valid && i < len(name); i++ {
				valid = isTokenChar(name[i])
			}
			if !valid {
				return nil, s3err.Newf(s3err.InvalidArgument, "", "x-amz-trailer must list distinct header names.").
					With("ArgumentName", "x-amz-trailer").With("ArgumentValue", strings.Join(values, ","))
			}
			names = append(names, name)
		}
	}
	return names, nil
}

// isTokenChar reports whether c may appear in an HTTP field name (RFC 9110 tchar).
func isTokenChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

func errHeaderMalformed(detail string) *s3err.Error {
	return s3err.Newf(s3err.AuthorizationHeaderMalformed, "", "The authorization header is malformed; "+detail)
}

func errCredentialMalformed(detail string) *s3err.Error {
	return s3err.Newf(s3err.AuthorizationQueryParametersError, "", "Error parsing the X-Amz-Credential parameter; "+detail)
}

func errQuery(msg string) *s3err.Error {
	return s3err.Newf(s3err.AuthorizationQueryParametersError, "", msg)
}

func errUnsupportedMechanism() *s3err.Error {
	return s3err.Newf(s3err.InvalidRequest, "", "The authorization mechanism you have provided is not supported. Please use AWS4-HMAC-SHA256.")
}

func errDate() *s3err.Error {
	return s3err.Newf(s3err.AccessDenied, "", "AWS authentication requires a valid Date or x-amz-date header")
}

func errContentSHA256(v string) *s3err.Error {
	return s3err.Newf(s3err.InvalidArgument, "", "x-amz-content-sha256 must be "+unsignedPayload+", "+streamingUnsignedTrailer+", "+
		streamingSigned+", "+streamingSignedTrailer+" or a valid sha256 value.").
		With("ArgumentName", "x-amz-content-sha256").With("ArgumentValue", v)
}
