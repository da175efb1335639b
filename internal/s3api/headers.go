package s3api

import (
	"encoding/base64"
	"errors"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/coffer-s3/coffer/internal/checksum"
	"github.com/coffer-s3/coffer/internal/cors"
	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/s3err"
)

// maxUserMetadata is the largest total size of x-amz-meta-* names and
// values S3 accepts: "the user-defined metadata is limited to 2 KB".
// https://docs.aws.amazon.com/AmazonS3/latest/userguide/UsingMetadata.html
const maxUserMetadata = 2 << 10

// parsePutObject turns the headers of a PutObject into its input: standard
// headers and x-amz-meta-*, Content-MD5, the flexible checksum and the
// conditional-write headers. Size and, for a trailing checksum, the
// Trailer callback come from the body and are set by the handler; a
// returned input with a checksum Algorithm but no Value expects one in the
// trailer. Headers asking for features Coffer lacks (server-side
// encryption, tagging, object lock, storage classes, ACL grants) are
// NotImplemented rather than silently ignored.
func parsePutObject(h http.Header, _ url.Values) (objects.PutInput, error) {
	if err := checkUnsupported(h); err != nil {
		return objects.PutInput{}, err
	}
	meta, err := parseMetadata(h)
	if err != nil {
		return objects.PutInput{}, err
	}
	md5, err := parseContentMD5(h)
	if err != nil {
		return objects.PutInput{}, err
	}
	sum, err := parseChecksum(h)
	if err != nil {
		return objects.PutInput{}, err
	}
	cond, err := parseWriteConditions(h)
	if err != nil {
		return objects.PutInput{}, err
	}
	tags, err := parseTaggingHeader(h)
	if err != nil {
		return objects.PutInput{}, err
	}
	return objects.PutInput{ContentMD5: md5, Checksum: sum, Meta: meta, Tags: tags, Cond: cond}, nil
}

// parsePart turns the headers of an UploadPart into its input, less Size
// and Trailer, which the handler sets.
func parsePart(h http.Header) (objects.PartInput, error) {
	md5, err := parseContentMD5(h)
	if err != nil {
		return objects.PartInput{}, err
	}
	sum, err := parseChecksum(h)
	if err != nil {
		return objects.PartInput{}, err
	}
	return objects.PartInput{ContentMD5: md5, Checksum: sum}, nil
}

// storedContentEncoding returns the Content-Encoding to store: the header's
// codings without "aws-chunked", which only describes the transfer framing
// of a streaming upload (S3 drops it the same way).
func storedContentEncoding(values []string) string {
	var out []string
	for _, v := range values {
		for c := range strings.SplitSeq(v, ",") {
			c = strings.TrimSpace(c)
			if c != "" && !strings.EqualFold(c, "aws-chunked") {
				out = append(out, c)
			}
		}
	}
	return strings.Join(out, ", ")
}

// parseMetadata returns the standard headers S3 stores with an object and
// the x-amz-meta-* pairs, names lower-cased and values of a repeated header
// joined with ",". The user metadata may total at most 2 KiB
// (MetadataTooLarge).
func parseMetadata(h http.Header) (objects.Metadata, error) {
	m := objects.Metadata{
		ContentType:        h.Get("Content-Type"),
		ContentEncoding:    storedContentEncoding(h.Values("Content-Encoding")),
		ContentDisposition: h.Get("Content-Disposition"),
		ContentLanguage:    h.Get("Content-Language"),
		CacheControl:       h.Get("Cache-Control"),
		Expires:            h.Get("Expires"),
	}
	size := 0
	for k, vs := range h {
		name, ok := cutPrefixFold(k, "x-amz-meta-")
		if !ok {
			continue
		}
		if name == "" {
			return objects.Metadata{}, invalidArgument(k, "", "User metadata names must not be empty.")
		}
		if !cors.IsToken(name) {
			// Only a form upload's field names can be anything; a
			// header's name is a token, and so must a stored one be, or
			// it could never be sent back.
			return objects.Metadata{}, invalidArgument(k, "", "User metadata names must be HTTP header names.")
		}
		name = strings.ToLower(name)
		v := decodeMetaValue(strings.Join(vs, ","))
		size += len(name) + len(v)
		if m.User == nil {
			m.User = make(map[string]string)
		}
		m.User[name] = v
	}
	if size > maxUserMetadata {
		return objects.Metadata{}, s3err.New(s3err.MetadataTooLarge, "").
			With("Size", strconv.Itoa(size)).With("MaxSizeAllowed", strconv.Itoa(maxUserMetadata))
	}
	return m, nil
}

// decodeMetaValue returns a user metadata value as S3 stores it, in
// UTF-8: RFC 2047 encoded-words ("=?UTF-8?B?...?=") decoded, and bytes that
// are not UTF-8 read as ISO-8859-1, the charset of HTTP header bytes. See
// https://docs.aws.amazon.com/AmazonS3/latest/userguide/UsingMetadata.html
func decodeMetaValue(v string) string {
	if strings.Contains(v, "=?") {
		if d, err := new(mime.WordDecoder).DecodeHeader(v); err == nil {
			v = d
		}
	}
	if utf8.ValidString(v) {
		return v
	}
	b := make([]rune, 0, len(v))
	for i := 0; i < len(v); i++ {
		b = append(b, rune(v[i]))
	}
	return string(b)
}

// encodeMetaValue returns a stored user metadata value as S3 sends it: as
// is when it is printable ASCII, else RFC 2047 encoded ("=?UTF-8?B?...?="),
// so that a header carries only ASCII; mime.WordDecoder (Go),
// email.header.decode_header (Python) and their kin decode it.
func encodeMetaValue(v string) string {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 && c != '\t' || c >= 0x7f {
			// Go writes the encoding in lower case; S3 in upper.
			return strings.ReplaceAll(mime.BEncoding.Encode("UTF-8", v), "=?UTF-8?b?", "=?UTF-8?B?")
		}
	}
	return v
}

// cutPrefixFold is strings.CutPrefix ignoring ASCII case.
func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) < len(prefix) || !strings.EqualFold(s[:len(prefix)], prefix) {
		return s, false
	}
	return s[len(prefix):], true
}

// parseContentMD5 returns the Content-MD5 header as sent, after checking
// that it is the base64 of 16 bytes (else InvalidDigest).
func parseContentMD5(h http.Header) (string, error) {
	v, ok := h["Content-Md5"]
	if !ok {
		return "", nil
	}
	s := ""
	if len(v) > 0 {
		s = v[0]
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		return "", s3err.New(s3err.InvalidDigest, "")
	}
	return s, nil
}

// parseChecksum returns the flexible checksum a write asks for: a value in
// one x-amz-checksum-<algorithm> header, or an algorithm whose value comes
// in the trailer named by x-amz-trailer (Value ""). x-amz-sdk-checksum-algorithm
// must agree with either. Errors are InvalidRequest, with S3's messages.
// https://docs.aws.amazon.com/AmazonS3/latest/userguide/checking-object-integrity.html
func parseChecksum(h http.Header) (objects.ChecksumInput, error) {
	alg, val, err := checksumHeader(h)
	if err != nil {
		return objects.ChecksumInput{}, err
	}
	in := objects.ChecksumInput{Algorithm: alg, Value: val}
	for _, t := range h.Values("X-Amz-Trailer") {
		for _, name := range strings.Split(t, ",") {
			a, ok := checksum.ForHeader(strings.TrimSpace(name))
			if !ok {
				continue // another trailer; sigv4 decides whether it is allowed
			}
			if in.Algorithm != "" {
				return objects.ChecksumInput{}, s3err.Newf(s3err.InvalidRequest, "", "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.")
			}
			in.Algorithm = a
		}
	}
	if s := h.Get("X-Amz-Sdk-Checksum-Algorithm"); s != "" {
		a, err := checksum.Parse(s)
		if err != nil {
			return objects.ChecksumInput{}, unsupportedChecksumAlgorithm()
		}
		if in.Algorithm == "" {
			return objects.ChecksumInput{}, s3err.Newf(s3err.InvalidRequest, "", "x-amz-sdk-checksum-algorithm specified, but no corresponding x-amz-checksum-* or x-amz-trailer headers were found.")
		}
		if a != in.Algorithm {
			return objects.ChecksumInput{}, s3err.Newf(s3err.InvalidRequest, "", "Value for x-amz-sdk-checksum-algorithm header is invalid.")
		}
	}
	return in, nil
}

// checksumHeader returns the one x-amz-checksum-<algorithm> header of a
// request and its value, if any. More than one, or a malformed value, is
// InvalidRequest with S3's message.
func checksumHeader(h http.Header) (checksum.Algorithm, string, error) {
	return checksumHeaderOf(h, false)
}

// checksumHeaderOf is checksumHeader that, if composite is set, also takes
// a composite value: a checksum followed by "-" and a part count, as
// GetObject returns the checksum of a COMPOSITE multipart object.
func checksumHeaderOf(h http.Header, composite bool) (checksum.Algorithm, string, error) {
	alg, val, err := checksum.FromHeaders(h)
	switch {
	case errors.Is(err, checksum.ErrMultiple):
		return "", "", s3err.Newf(s3err.InvalidRequest, "", "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.")
	case err != nil && composite && isCompositeValue(alg, h.Get(alg.Header())):
		return alg, h.Get(alg.Header()), nil
	case err != nil:
		return "", "", s3err.Newf(s3err.InvalidRequest, "", "Value for "+alg.Header()+" header is invalid.")
	}
	return alg, val, nil
}

// isCompositeValue reports whether v is a checksum of algorithm a followed
// by "-" and a part count (1 to 10,000).
func isCompositeValue(a checksum.Algorithm, v string) bool {
	i := strings.LastIndexByte(v, '-')
	if i < 0 {
		return false
	}
	n, err := strconv.Atoi(v[i+1:])
	return err == nil && n >= 1 && n <= 10000 && v[i+1] != '+' && a.Validate(v[:i]) == nil
}

// unsupportedChecksumAlgorithm is S3's answer to an algorithm name it does
// not know, listing those it does.
func unsupportedChecksumAlgorithm() error {
	return s3err.Newf(s3err.InvalidRequest, "", "Checksum algorithm provided is unsupported. Please try again with any of the valid types: ["+checksum.Names()+"]")
}

// parseChecksumAlgorithm parses x-amz-checksum-algorithm ("" if absent).
func parseChecksumAlgorithm(h http.Header) (checksum.Algorithm, error) {
	s := h.Get("X-Amz-Checksum-Algorithm")
	if s == "" {
		return "", nil
	}
	a, err := checksum.Parse(s)
	if err != nil {
		return "", unsupportedChecksumAlgorithm()
	}
	return a, nil
}

// storageClasses lists the storage classes S3 knows. Coffer has one,
// STANDARD; asking for another is NotImplemented, and an unknown name is
// InvalidStorageClass. A read-only lookup table.
var storageClasses = map[string]bool{
	"STANDARD": true, "REDUCED_REDUNDANCY": true, "STANDARD_IA": true, "ONEZONE_IA": true,
	"INTELLIGENT_TIERING": true, "GLACIER": true, "DEEP_ARCHIVE": true, "OUTPOSTS": true,
	"GLACIER_IR": true, "SNOW": true, "EXPRESS_ONEZONE": true, "FSX_OPENZFS": true,
}

// unsupportedHeaders are request headers that ask for features Coffer does
// not have. Accepting them would be a false success. A read-only lookup
// table.
var unsupportedHeaders = [...]string{
	"X-Amz-Server-Side-Encryption",
	"X-Amz-Server-Side-Encryption-Aws-Kms-Key-Id",
	"X-Amz-Server-Side-Encryption-Context",
	"X-Amz-Server-Side-Encryption-Bucket-Key-Enabled",
	"X-Amz-Server-Side-Encryption-Customer-Algorithm",
	"X-Amz-Server-Side-Encryption-Customer-Key",
	"X-Amz-Website-Redirect-Location",
	"X-Amz-Object-Lock-Mode",
	"X-Amz-Object-Lock-Retain-Until-Date",
	"X-Amz-Object-Lock-Legal-Hold",
}

// checkUnsupported returns NotImplemented if h asks an object write for a
// feature Coffer lacks, InvalidStorageClass or InvalidArgument for values S3
// itself rejects.
func checkUnsupported(h http.Header) error {
	for _, k := range unsupportedHeaders {
		if _, ok := h[k]; ok {
			return notImplementedHeader(k)
		}
	}
	if sc := h.Get("X-Amz-Storage-Class"); sc != "" && sc != "STANDARD" {
		if storageClasses[sc] {
			return notImplementedHeader("x-amz-storage-class")
		}
		return s3err.New(s3err.InvalidStorageClass, "").With("StorageClassRequested", sc)
	}
	return nil
}

// notImplementedHeader is S3's NotImplemented for a request header that
// implies a missing feature.
func notImplementedHeader(name string) error {
	return s3err.New(s3err.NotImplemented, "").With("Header", strings.ToLower(name))
}

// invalidArgument is InvalidArgument naming the argument and its value, as
// S3 writes it. An empty message takes the table's.
func invalidArgument(name, value, message string) *s3err.Error {
	e := s3err.Newf(s3err.InvalidArgument, "", message)
	return e.With("ArgumentName", name).With("ArgumentValue", value)
}

// responseOverrides maps the GetObject query parameters that override
// response headers to those headers. A read-only lookup table.
var responseOverrides = [...]struct{ param, header string }{
	{"response-cache-control", "Cache-Control"},
	{"response-content-disposition", "Content-Disposition"},
	{"response-content-encoding", "Content-Encoding"},
	{"response-content-language", "Content-Language"},
	{"response-content-type", "Content-Type"},
	{"response-expires", "Expires"},
}

// headerOverride is one response header a GetObject asked for.
type headerOverride struct{ header, value string }

// parseResponseOverrides returns the response-* overrides of a GetObject or
// HeadObject. S3 allows them only on signed requests; an anonymous request
// carrying one is InvalidRequest.
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html#API_GetObject_RequestSyntax
func parseResponseOverrides(q url.Values, anonymous bool) ([]headerOverride, error) {
	var out []headerOverride
	for _, o := range responseOverrides {
		if _, ok := q[o.param]; !ok {
			continue
		}
		if anonymous {
			return nil, s3err.Newf(s3err.InvalidRequest, "", "Request specific response headers cannot be used for anonymous GET requests.")
		}
		out = append(out, headerOverride{o.header, q.Get(o.param)})
	}
	return out, nil
}

// parseVersionID returns the versionId query parameter of an object
// request, "" when there is none. An empty one is InvalidArgument, as in
// S3; the service checks the rest ("null", or an ID Coffer could have
// made).
func parseVersionID(q url.Values) (string, error) {
	v, ok := q["versionId"]
	if !ok {
		return "", nil
	}
	id := strings.Join(v, "")
	if id == "" {
		return "", invalidArgument("versionId", "", "Version id cannot be the empty string")
	}
	return id, nil
}

// parseGetObject returns the options of a GetObject or HeadObject: Range,
// partNumber and the read preconditions. S3 forbids Range together with
// partNumber (InvalidRequest).
func parseGetObject(h http.Header, q url.Values) (objects.GetOptions, error) {
	vid, err := parseVersionID(q)
	if err != nil {
		return objects.GetOptions{}, err
	}
	opt := objects.GetOptions{VersionID: vid, Range: parseRange(h.Get("Range")), Cond: parseReadConditions(h)}
	if s, ok := q["partNumber"]; ok {
		v := ""
		if len(s) > 0 {
			v = s[0]
		}
		if opt.PartNumber, err = parsePartNumber(v); err != nil {
			return objects.GetOptions{}, err
		}
		if h.Get("Range") != "" {
			return objects.GetOptions{}, s3err.Newf(s3err.InvalidRequest, "", "Cannot specify both Range header and partNumber query parameter")
		}
	}
	return opt, nil
}

// parsePartNumber parses a part number, 1 to 10000 inclusive.
func parsePartNumber(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 10000 {
		return 0, invalidArgument("partNumber", s, "Part number must be an integer between 1 and 10000, inclusive")
	}
	return n, nil
}
