package sigv4

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"hash"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/coffer-s3/coffer/internal/s3err"
)

// This file implements AWS Signature Version 2 for S3
// (https://docs.aws.amazon.com/AmazonS3/latest/userguide/RESTAuthentication.html):
//
//	Signature = Base64(HMAC-SHA1(secret, StringToSign))
//	StringToSign = Verb "\n" Content-MD5 "\n" Content-Type "\n" Date "\n"
//	               CanonicalizedAmzHeaders CanonicalizedResource

// v2Prefix starts a SigV2 Authorization header: "AWS AKID:signature".
const v2Prefix = "AWS "

// v2SubResources are the query parameters that belong to the
// CanonicalizedResource, sorted.
var v2SubResources = []string{
	"acl", "cors", "delete", "lifecycle", "location", "logging", "notification",
	"partNumber", "policy", "requestPayment",
	"response-cache-control", "response-content-disposition", "response-content-encoding",
	"response-content-language", "response-content-type", "response-expires",
	"restore", "tagging", "torrent", "uploadId", "uploads", "versionId", "versioning",
	"versions", "website",
}

// V2SignsSubResource reports whether SigV2 signs the query parameter name
// (it is in the CanonicalizedResource). A request that a parameter SigV2
// does not sign turns into another operation must not be taken with
// SigV2: the parameter could have been added to a signed request.
func V2SignsSubResource(name string) bool {
	_, ok := slices.BinarySearch(v2SubResources, name)
	return ok
}

// v2Auth is a parsed SigV2 Authorization header or query.
type v2Auth struct {
	accessKeyID string
	signature   string // base64, as sent
	expires     int64  // query authentication: unix seconds
}

// parseV2Authorization parses "AWS AKID:signature".
func parseV2Authorization(s string) (v2Auth, error) {
	rest, ok := strings.CutPrefix(s, v2Prefix)
	var a v2Auth
	if ok {
		a.accessKeyID, a.signature, ok = strings.Cut(strings.TrimSpace(rest), ":")
	}
	if !ok || a.accessKeyID == "" || a.signature == "" || strings.ContainsAny(a.accessKeyID, " \t") || strings.ContainsAny(a.signature, " \t:") {
		return v2Auth{}, s3err.Newf(s3err.InvalidArgument, "", "AWS authorization header is invalid.  Expected AwsAccessKeyId:signature").
			With("ArgumentName", "Authorization").With("ArgumentValue", s)
	}
	return a, nil
}

// parseV2Query extracts AWSAccessKeyId, Signature and Expires from a raw
// query. Each must appear exactly once.
func parseV2Query(raw string) (v2Auth, error) {
	var a v2Auth
	var vals [3]string
	var seen [3]bool
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		k, v, _ := strings.Cut(pair, "=")
		i := -1
		switch k {
		case "AWSAccessKeyId":
			i = 0
		case "Signature":
			i = 1
		case "Expires":
			i = 2
		}
		if i < 0 {
			continue
		}
		if seen[i] {
			return a, s3err.Newf(s3err.InvalidArgument, "", "Query-string authentication requires a single "+k+" parameter.").
				With("ArgumentName", k)
		}
		seen[i] = true
		d, err := url.QueryUnescape(v)
		if err != nil {
			return a, s3err.Newf(s3err.InvalidArgument, "", "Invalid escape in the "+k+" query parameter.").
				With("ArgumentName", k)
		}
		vals[i] = d
	}
	if !seen[0] || !seen[1] || !seen[2] || vals[0] == "" || vals[1] == "" {
		return a, s3err.Newf(s3err.AccessDenied, "", "Query-string authentication requires the Signature, Expires and AWSAccessKeyId parameters")
	}
	exp, err := strconv.ParseInt(vals[2], 10, 64)
	if err != nil || exp < 0 {
		return a, s3err.Newf(s3err.AccessDenied, "", "Invalid date (should be seconds since epoch): "+vals[2])
	}
	a.accessKeyID = vals[0]
	// A '+' sent unescaped arrives as a space; base64 has no spaces.
	a.signature = strings.ReplaceAll(vals[1], " ", "+")
	a.expires = exp
	return a, nil
}

// verifyV2Header authenticates a request with a SigV2 Authorization header.
func (v *Verifier) verifyV2Header(r *http.Request, authz string) (*Result, error) {
	a, err := parseV2Authorization(authz)
	if err != nil {
		return nil, err
	}
	date, t, err := v2RequestTime(r.Header)
	if err != nil {
		return nil, err
	}
	now := v.clock()
	if d := now.Sub(t); d > v.maxSkew || d < -v.maxSkew {
		return nil, s3err.New(s3err.RequestTimeTooSkewed, "").
			With("RequestTime", date).
			With("ServerTime", now.UTC().Format(http.TimeFormat)).
			With("MaxAllowedSkewMilliseconds", fmt.Sprint(v.maxSkew.Milliseconds()))
	}
	dateLine := headerValue(r.Header, "Date")
	if len(r.Header["X-Amz-Date"]) > 0 {
		dateLine = "" // x-amz-date is signed among the amz headers instead
	}
	if err := v.checkV2(r, a, dateLine); err != nil {
		return nil, err
	}
	return &Result{AccessKeyID: a.accessKeyID, V2: true, Payload: PayloadUnsigned, DecodedLength: -1, contentLength: r.ContentLength}, nil
}

// verifyV2Query authenticates a SigV2 presigned URL.
func (v *Verifier) verifyV2Query(r *http.Request) (*Result, error) {
	a, err := parseV2Query(r.URL.RawQuery)
	if err != nil {
		return nil, err
	}
	now := v.clock()
	expiry := time.Unix(a.expires, 0)
	if now.After(expiry) {
		return nil, s3err.Newf(s3err.AccessDenied, "", "Request has expired").
			With("Expires", expiry.UTC().Format(time.RFC3339)).
			With("ServerTime", now.UTC().Format(time.RFC3339))
	}
	if expiry.Sub(now) > maxExpires {
		return nil, s3err.Newf(s3err.AccessDenied, "", "Expires must be less than a week (604800 seconds) in the future").
			With("Expires", expiry.UTC().Format(time.RFC3339)).
			With("ServerTime", now.UTC().Format(time.RFC3339))
	}
	if err := v.checkV2(r, a, strconv.FormatInt(a.expires, 10)); err != nil {
		return nil, err
	}
	return &Result{AccessKeyID: a.accessKeyID, V2: true, Presigned: true, Payload: PayloadUnsigned, DecodedLength: -1, contentLength: r.ContentLength}, nil
}

// checkV2Values refuses a SigV2 request one of whose sub-resource values,
// as signed (decoded), holds an '&' followed by the name of a
// sub-resource SigV2 signs: SigV2 signs values decoded and joined by '&',
// so "?partNumber=1%26uploadId%3DU" (one parameter: a PutObject of the
// whole object) signs as "?partNumber=1&uploadId=U" (an UploadPart), and
// a URL presigned for one could be sent as the other. An '&' followed by
// anything else (a file name "Tom & Jerry.txt" in
// response-content-disposition) cannot be read as another parameter and
// passes. (The other way round, a value like that signed by a client and
// split by whoever holds the URL, is refused here when sent as signed,
// but the split form passes: S3's own SigV2 has the ambiguity; SigV4 does
// not.)
func checkV2Values(rawQuery string) error {
	for _, p := range v2SubResourcesOf(rawQuery) {
		for _, piece := range strings.Split(p.value, "&")[1:] {
			name, _, _ := strings.Cut(piece, "=")
			if V2SignsSubResource(name) {
				return s3err.Newf(s3err.InvalidRequest, "", "The value of the sub-resource "+p.name+" holds '&"+name+"', which a Signature Version 2 signature cannot tell apart from another parameter. Please use AWS4-HMAC-SHA256.")
			}
		}
	}
	return nil
}

// checkV2 refuses sub-resource values SigV2 cannot sign unambiguously
// (checkV2Values), then looks up the secret and compares signatures in
// constant time. The
// resource is the path as sent; if that does not match, the decoded path is
// tried too, for clients that sign the key before escaping it.
func (v *Verifier) checkV2(r *http.Request, a v2Auth, dateLine string) error {
	if err := checkV2Values(r.URL.RawQuery); err != nil {
		return err
	}
	secret, err := v.secret(r.Context(), a.accessKeyID)
	if err != nil {
		return err
	}
	mac := hmac.New(sha1.New, []byte(secret))
	bucket := v.hostBucket(r.Host)
	path := rawPath(r)
	sts := appendV2StringToSign(nil, r, dateLine, bucket, path)
	if v2Match(mac, sts, a.signature) {
		return nil
	}
	// Not a decoded "?": "/b/k%3FpartNumber=1" would then stand for the
	// resource "/b/k?partNumber=1" signed for another request.
	if dec, err := url.PathUnescape(path); err == nil && dec != path && !strings.ContainsRune(dec, '?') {
		if v2Match(mac, appendV2StringToSign(nil, r, dateLine, bucket, dec), a.signature) {
			return nil
		}
	}
	return s3err.New(s3err.SignatureDoesNotMatch, "").
		With("AWSAccessKeyId", a.accessKeyID).
		With("StringToSign", string(sts)).
		With("SignatureProvided", a.signature)
}

// v2Match reports whether sig is the base64 HMAC of sts, in constant time.
func v2Match(mac hash.Hash, sts []byte, sig string) bool {
	mac.Reset()
	mac.Write(sts)
	var sum [sha1.Size]byte
	var enc [28]byte // base64 of 20 bytes
	base64.StdEncoding.Encode(enc[:], mac.Sum(sum[:0]))
	return hmac.Equal(enc[:], []byte(sig))
}

// hostBucket returns the bucket named by a virtual-hosted-style Host
// (bucket.Domain), or "" for path style or when no Domain is configured.
func (v *Verifier) hostBucket(host string) string {
	if v.domain == "" {
		return ""
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	// As the router reads it (a fully qualified name's final dot is no
	// part of it), or a request signed for one bucket could be sent to
	// another.
	host = strings.TrimSuffix(host, ".")
	n := len(host) - len(v.domain)
	if n < 2 || host[n-1] != '.' || !strings.EqualFold(host[n:], v.domain) {
		return ""
	}
	return strings.ToLower(host[:n-1])
}

// v2RequestTime returns the request time from x-amz-date, or else Date, as
// sent and parsed. RFC 1123 with a numeric zone (the AWS examples' form),
// the HTTP formats and ISO 8601 basic are accepted.
func v2RequestTime(h http.Header) (string, time.Time, error) {
	s := headerValue(h, "X-Amz-Date")
	if s == "" && len(h["X-Amz-Date"]) > 0 {
		// An empty x-amz-date takes the Date line out of what is signed
		// (see verifyV2Header): the unsigned Date must not then say when
		// the request was made, or it could be replayed forever.
		return "", time.Time{}, errDate()
	}
	if s == "" {
		s = headerValue(h, "Date")
	}
	if s == "" {
		return "", time.Time{}, errDate()
	}
	if t, ok := parseAmzDate(s); ok {
		return s, t, nil
	}
	if t, err := time.Parse(time.RFC1123Z, s); err == nil {
		return s, t, nil
	}
	if t, err := http.ParseTime(s); err == nil {
		return s, t, nil
	}
	return "", time.Time{}, errDate()
}

// appendV2StringToSign appends the SigV2 string to sign of r. dateLine is
// the Date header, "" when x-amz-date is present, or Expires for query
// authentication; bucket is the virtual host's bucket or ""; path is the
// request path as signed.
func appendV2StringToSign(dst []byte, r *http.Request, dateLine, bucket, path string) []byte {
	dst = append(dst, r.Method...)
	dst = append(dst, '\n')
	dst = append(dst, headerValue(r.Header, "Content-Md5")...)
	dst = append(dst, '\n')
	dst = append(dst, headerValue(r.Header, "Content-Type")...)
	dst = append(dst, '\n')
	dst = append(dst, dateLine...)
	dst = append(dst, '\n')
	dst = appendV2AmzHeaders(dst, r.Header)
	return appendV2Resource(dst, bucket, path, r.URL.RawQuery)
}

// appendV2AmzHeaders appends the CanonicalizedAmzHeaders: every x-amz-*
// header, lowercased and sorted, as name:value\n with the values of repeated
// headers trimmed, unfolded and joined by commas.
func appendV2AmzHeaders(dst []byte, h http.Header) []byte {
	var names []string
	for k := range h {
		if len(k) > 6 && strings.EqualFold(k[:6], "x-amz-") {
			names = append(names, k)
		}
	}
	if names == nil {
		return dst
	}
	slices.SortFunc(names, func(a, b string) int {
		if c := strings.Compare(strings.ToLower(a), strings.ToLower(b)); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	for i, k := range names {
		lk := strings.ToLower(k)
		if i > 0 && strings.EqualFold(names[i-1], k) {
			dst = append(dst, ',') // the same name in another case: one header
		} else {
			if i > 0 {
				dst = append(dst, '\n')
			}
			dst = append(dst, lk...)
			dst = append(dst, ':')
		}
		for j, val := range h[k] {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = appendUnfolded(dst, val)
		}
	}
	return append(dst, '\n')
}

// appendUnfolded appends v trimmed, with each line break and the whitespace
// around it replaced by one space.
func appendUnfolded(dst []byte, v string) []byte {
	v = strings.TrimSpace(v)
	for v != "" {
		i := strings.IndexAny(v, "\r\n")
		if i < 0 {
			return append(dst, v...)
		}
		dst = append(dst, strings.TrimRight(v[:i], " \t")...)
		dst = append(dst, ' ')
		v = strings.TrimLeft(v[i:], " \t\r\n")
	}
	return dst
}

// v2Param is a sub-resource of the CanonicalizedResource.
type v2Param struct{ name, value string }

// appendV2Resource appends the CanonicalizedResource: "/" bucket for
// virtual-hosted style, the path, and the sub-resources of the raw query,
// sorted by name, values decoded, "name" alone when the value is empty.
func appendV2Resource(dst []byte, bucket, path, rawQuery string) []byte {
	if bucket != "" {
		dst = append(dst, '/')
		dst = append(dst, bucket...)
	}
	if path == "" {
		path = "/"
	}
	dst = append(dst, path...)
	for i, p := range v2SubResourcesOf(rawQuery) {
		if i == 0 {
			dst = append(dst, '?')
		} else {
			dst = append(dst, '&')
		}
		dst = append(dst, p.name...)
		if p.value != "" {
			dst = append(dst, '=')
			dst = append(dst, p.value...)
		}
	}
	return dst
}

// v2SubResourcesOf returns the sub-resources of a raw query, names and
// values decoded, sorted by name (stably: repeated names keep their order).
func v2SubResourcesOf(rawQuery string) []v2Param {
	var params []v2Param
	for rawQuery != "" {
		var pair string
		pair, rawQuery, _ = strings.Cut(rawQuery, "&")
		k, val, _ := strings.Cut(pair, "=")
		if strings.ContainsAny(k, "%+") {
			if d, err := url.QueryUnescape(k); err == nil {
				k = d
			}
		}
		if _, ok := slices.BinarySearch(v2SubResources, k); !ok {
			continue
		}
		if d, err := url.QueryUnescape(val); err == nil {
			val = d
		}
		params = append(params, v2Param{k, val})
	}
	slices.SortStableFunc(params, func(a, b v2Param) int { return strings.Compare(a.name, b.name) })
	return params
}

// v2Signature returns the base64 HMAC-SHA1 of sts under secret.
func v2Signature(secret string, sts []byte) string {
	m := hmac.New(sha1.New, []byte(secret))
	m.Write(sts)
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// SignV2Request signs r with SigV2 at time t, in place: it sets Date (in
// HTTP format) and Authorization: AWS AKID:signature over Content-MD5,
// Content-Type, Date, the x-amz-* headers and the path-style resource
// (r.URL's escaped path as sent, with its sub-resources). It is for tests
// and tools; servers verify with Verifier.Verify.
func SignV2Request(r *http.Request, cred Credentials, t time.Time) {
	if r.Header == nil {
		r.Header = make(http.Header)
	}
	r.Header.Del("Authorization")
	r.Header.Set("Date", t.UTC().Format(http.TimeFormat))
	dateLine := r.Header.Get("Date")
	if len(r.Header["X-Amz-Date"]) > 0 {
		dateLine = ""
	}
	sts := appendV2StringToSign(nil, r, dateLine, "", uriPath(r))
	r.Header.Set("Authorization", v2Prefix+cred.AccessKeyID+":"+v2Signature(cred.SecretKey, sts))
}

// SignV2Query returns rawURL (path style) presigned with SigV2 for method,
// valid until expires: its query gains AWSAccessKeyId, Expires (unix
// seconds) and Signature. No headers are signed.
func SignV2Query(method, rawURL string, cred Credentials, expires time.Time) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", fmt.Errorf("presign v2: %w", err)
	}
	if u.Scheme == "" || u.Host == "" {
		return "", fmt.Errorf("presign v2 %q: url must be absolute", rawURL)
	}
	for _, p := range []string{"AWSAccessKeyId", "Signature", "Expires"} {
		if u.Query().Has(p) {
			return "", fmt.Errorf("presign v2 %q: url already has %s", rawURL, p)
		}
	}
	exp := strconv.FormatInt(expires.Unix(), 10)
	r := &http.Request{Method: method, URL: u, Header: http.Header{}}
	path := u.EscapedPath()
	sts := appendV2StringToSign(nil, r, exp, "", path)
	q := u.RawQuery
	if q != "" {
		q += "&"
	}
	q += "AWSAccessKeyId=" + url.QueryEscape(cred.AccessKeyID) +
		"&Expires=" + exp +
		"&Signature=" + url.QueryEscape(v2Signature(cred.SecretKey, sts))
	return u.Scheme + "://" + u.Host + path + "?" + q, nil
}
