package sigv4

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// This file builds the canonical request of
// https://docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html
// as S3 defines it: the URI path is not encoded twice, and empty query
// values keep their '='.

const upperHex = "0123456789ABCDEF"

// appendURIEncoded appends c encoded with AWS's UriEncode: the unreserved
// characters A-Z a-z 0-9 - . _ ~ stay, every other byte becomes %XX.
func appendURIEncoded(dst []byte, c byte) []byte {
	if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
		return append(dst, c)
	}
	return append(dst, '%', upperHex[c>>4], upperHex[c&15])
}

// percentByte decodes a %XX escape at s[i], if there is a valid one.
func percentByte(s string, i int) (byte, bool) {
	if s[i] != '%' || i+2 >= len(s) {
		return 0, false
	}
	hi, ok1 := unhex(s[i+1])
	lo, ok2 := unhex(s[i+2])
	return hi<<4 | lo, ok1 && ok2
}

// appendCanonicalURI appends the canonical form of an escaped request path:
// every %XX escape is decoded and every byte re-encoded with UriEncode,
// keeping '/'. A path that is already in canonical form (which is what SDKs
// send) is unchanged; "a+b", "a%2bb" and "a%2Bb" all become "a%2Bb".
func appendCanonicalURI(dst []byte, path string) []byte {
	if path == "" {
		return append(dst, '/')
	}
	for i := 0; i < len(path); i++ {
		c := path[i]
		if b, ok := percentByte(path, i); ok {
			c = b
			i += 2
		}
		if c == '/' {
			dst = append(dst, '/')
		} else {
			dst = appendURIEncoded(dst, c)
		}
	}
	return dst
}

// rawPath returns the escaped path exactly as the client sent it.
func rawPath(r *http.Request) string {
	if u := r.RequestURI; u != "" {
		if u[0] != '/' {
			// Absolute form: scheme://authority/path?query.
			i := strings.Index(u, "://")
			if i < 0 {
				return uriPath(r)
			}
			j := strings.IndexByte(u[i+3:], '/')
			if j < 0 {
				return "/"
			}
			u = u[i+3+j:]
		}
		if i := strings.IndexByte(u, '?'); i >= 0 {
			u = u[:i]
		}
		return u
	}
	return uriPath(r)
}

// uriPath returns the escaped path of a client-side request, honouring
// URL.Opaque ("//host/path") as aws-sdk-go-v2 does.
func uriPath(r *http.Request) string {
	if o := r.URL.Opaque; o != "" {
		o, _, _ = strings.Cut(o, "?")
		o = strings.TrimPrefix(o, "//")
		if i := strings.IndexByte(o, '/'); i >= 0 {
			return o[i:]
		}
		return "/"
	}
	return r.URL.EscapedPath()
}

// canonQuery holds the query parameters of a request, each name and value
// already in canonical (UriEncode) form, in one arena to avoid allocations.
type canonQuery struct {
	arena  []byte
	params []queryParam
}

// queryParam locates one parameter: name arena[k0:k1], value arena[k1:v1].
type queryParam struct{ k0, k1, v1 int }

func (q *canonQuery) reset() {
	q.arena = q.arena[:0]
	q.params = q.params[:0]
}

// parse adds every parameter of a raw query string. Empty pairs are skipped;
// a pair without '=' has an empty value.
func (q *canonQuery) parse(raw string) {
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		k0 := len(q.arena)
		q.arena = appendQueryComponent(q.arena, k)
		k1 := len(q.arena)
		q.arena = appendQueryComponent(q.arena, v)
		q.params = append(q.params, queryParam{k0, k1, len(q.arena)})
	}
}

func (q *canonQuery) key(p queryParam) []byte   { return q.arena[p.k0:p.k1] }
func (q *canonQuery) value(p queryParam) []byte { return q.arena[p.k1:p.v1] }

// appendCanonical appends the canonical query string: parameters sorted by
// encoded name, then encoded value, joined by '&', each as name=value.
// skipSignature leaves out X-Amz-Signature, for presigned requests.
func (q *canonQuery) appendCanonical(dst []byte, skipSignature bool) []byte {
	slices.SortFunc(q.params, func(a, b queryParam) int {
		if c := bytes.Compare(q.key(a), q.key(b)); c != 0 {
			return c
		}
		return bytes.Compare(q.value(a), q.value(b))
	})
	first := true
	for _, p := range q.params {
		k := q.key(p)
		if skipSignature && string(k) == "X-Amz-Signature" {
			continue
		}
		if !first {
			dst = append(dst, '&')
		}
		first = false
		dst = append(dst, k...)
		dst = append(dst, '=')
		dst = append(dst, q.value(p)...)
	}
	return dst
}

// appendQueryComponent appends the canonical form of a raw query name or
// value: decoded as a URL query component ('+' is a space), then UriEncoded.
func appendQueryComponent(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch b, ok := percentByte(s, i); {
		case ok:
			c = b
			i += 2
		case c == '+':
			c = ' '
		}
		dst = appendURIEncoded(dst, c)
	}
	return dst
}

// decodeCanonical decodes a canonical (UriEncoded) component.
func decodeCanonical(b []byte) string {
	if bytes.IndexByte(b, '%') < 0 {
		return string(b)
	}
	out := make([]byte, 0, len(b))
	s := string(b)
	for i := 0; i < len(s); i++ {
		if c, ok := percentByte(s, i); ok {
			out = append(out, c)
			i += 2
			continue
		}
		out = append(out, s[i])
	}
	return string(out)
}

// appendCanonicalRequest appends the canonical request of r.
func appendCanonicalRequest(dst []byte, r *http.Request, uri, query []byte, signedHeaders, payload string) []byte {
	dst = append(dst, r.Method...)
	dst = append(dst, '\n')
	dst = append(dst, uri...)
	dst = append(dst, '\n')
	dst = append(dst, query...)
	dst = append(dst, '\n')
	for list := signedHeaders; list != ""; {
		var name string
		name, list, _ = strings.Cut(list, ";")
		dst = append(dst, name...)
		dst = append(dst, ':')
		dst = appendHeaderValues(dst, r, name)
		dst = append(dst, '\n')
	}
	dst = append(dst, '\n')
	dst = append(dst, signedHeaders...)
	dst = append(dst, '\n')
	return append(dst, payload...)
}

// appendHeaderValues appends the canonical value of the lowercase header
// name: every value trimmed, inner runs of spaces collapsed, joined by ','.
// net/http moves Host, Content-Length and Transfer-Encoding out of Header,
// so they are read from the request fields when absent.
func appendHeaderValues(dst []byte, r *http.Request, name string) []byte {
	switch name {
	case "host":
		host := r.Host
		if host == "" {
			host = r.URL.Host
		}
		return appendTrimmed(dst, host)
	case "content-length":
		if _, ok := r.Header["Content-Length"]; !ok && r.ContentLength >= 0 {
			return strconv.AppendInt(dst, r.ContentLength, 10)
		}
	case "transfer-encoding":
		if _, ok := r.Header["Transfer-Encoding"]; !ok {
			return append(dst, strings.Join(r.TransferEncoding, ",")...)
		}
	}
	var buf [64]byte
	var values []string
	if len(name) <= len(buf) {
		values = r.Header[string(canonicalKey(buf[:0], name))]
	}
	if values == nil {
		// A key net/http could not canonicalize is stored as sent.
		for k, v := range r.Header {
			if strings.EqualFold(k, name) {
				values = append(values, v...)
			}
		}
	}
	for i, v := range values {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendTrimmed(dst, v)
	}
	return dst
}

// canonicalKey appends the MIME canonical form of a lowercase header name.
func canonicalKey(dst []byte, name string) []byte {
	upper := true
	for i := 0; i < len(name); i++ {
		c := name[i]
		if upper && c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		dst = append(dst, c)
		upper = c == '-'
	}
	return dst
}

// appendTrimmed appends v without leading and trailing whitespace and with
// each inner run of spaces collapsed to one, as SigV4's Trimall requires.
func appendTrimmed(dst []byte, v string) []byte {
	if v == "" || !isSpace(v[0]) && !isSpace(v[len(v)-1]) && !strings.Contains(v, "  ") {
		return append(dst, v...)
	}
	i, j := 0, len(v)
	for i < j && isSpace(v[i]) {
		i++
	}
	for j > i && isSpace(v[j-1]) {
		j--
	}
	for k := i; k < j; k++ {
		if k > i && v[k] == ' ' && v[k-1] == ' ' {
			continue
		}
		dst = append(dst, v[k])
	}
	return dst
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// appendStringToSign appends the SigV4 string to sign for a canonical request.
func appendStringToSign(dst []byte, amzDate, scope string, creq []byte) []byte {
	sum := sha256.Sum256(creq)
	dst = append(dst, algorithm+"\n"...)
	dst = append(dst, amzDate...)
	dst = append(dst, '\n')
	dst = append(dst, scope...)
	dst = append(dst, '\n')
	return hex.AppendEncode(dst, sum[:])
}
