package s3api

import (
	"mime"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/coffer-s3/coffer/internal/checksum"
	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/s3err"
)

// header builds an http.Header from name, value pairs, canonicalizing names
// as net/http's server does.
func header(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

// Checksum values for the test body "hello".
const (
	helloCRC32  = "NhCmhg=="
	helloCRC32C = "mnG7TA=="
	helloSHA256 = "LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ="
	helloMD5    = "XUFAKrxLKna5cZ2REBfFkg=="
	helloSHA512 = "m3HSJL1i83hdltRq0+o9czGb+8KJDKra4t/3JRlnPKcjI8PZm6XBHXx6zG4UuMXaDEZjR1wuXDre9G9zvN7AQw=="
)

func TestParsePutObject(t *testing.T) {
	for _, tc := range []struct {
		name    string
		h       http.Header
		want    objects.PutInput
		wantErr s3err.Code
	}{
		{name: "bare", h: header()},
		{
			name: "standard headers and metadata",
			h: header(
				"Content-Type", "text/plain", "Content-Encoding", "gzip", "Content-Disposition", `attachment; filename="a.txt"`,
				"Content-Language", "en", "Cache-Control", "no-cache", "Expires", "Thu, 01 Dec 1994 16:00:00 GMT",
				"X-Amz-Meta-Color", "blue", "x-amz-meta-Multi", "a", "X-Amz-Meta-Multi", "b",
				"Content-MD5", helloMD5, "If-None-Match", "*",
			),
			want: objects.PutInput{
				ContentMD5: helloMD5,
				Meta: objects.Metadata{
					ContentType: "text/plain", ContentEncoding: "gzip", ContentDisposition: `attachment; filename="a.txt"`,
					ContentLanguage: "en", CacheControl: "no-cache", Expires: "Thu, 01 Dec 1994 16:00:00 GMT",
					User: map[string]string{"color": "blue", "multi": "a,b"},
				},
				Cond: objects.WriteConditions{IfNoneMatch: "*"},
			},
		},
		{name: "checksum header", h: header("X-Amz-Checksum-Crc32", helloCRC32, "X-Amz-Sdk-Checksum-Algorithm", "crc32"),
			want: objects.PutInput{Checksum: objects.ChecksumInput{Algorithm: checksum.CRC32, Value: helloCRC32}}},
		{name: "checksum trailer", h: header("X-Amz-Trailer", "x-amz-checksum-crc32c", "X-Amz-Sdk-Checksum-Algorithm", "CRC32C"),
			want: objects.PutInput{Checksum: objects.ChecksumInput{Algorithm: checksum.CRC32C}}},
		{name: "checksum trailer among others", h: header("X-Amz-Trailer", "x-amz-meta-foo, x-amz-checksum-sha256"),
			want: objects.PutInput{Checksum: objects.ChecksumInput{Algorithm: checksum.SHA256}}},
		{name: "two checksums", h: header("X-Amz-Checksum-Crc32", helloCRC32, "X-Amz-Checksum-Crc32c", helloCRC32C), wantErr: s3err.InvalidRequest},
		{name: "checksum and trailer", h: header("X-Amz-Checksum-Crc32", helloCRC32, "X-Amz-Trailer", "x-amz-checksum-crc32"), wantErr: s3err.InvalidRequest},
		{name: "malformed checksum", h: header("X-Amz-Checksum-Sha256", "abc"), wantErr: s3err.InvalidRequest},
		{name: "unpadded sha256 of 33 bytes", h: header("X-Amz-Checksum-Sha256", strings.Repeat("A", 44)), wantErr: s3err.InvalidRequest},
		{name: "sdk algorithm without value", h: header("X-Amz-Sdk-Checksum-Algorithm", "CRC32"), wantErr: s3err.InvalidRequest},
		{name: "sdk algorithm mismatch", h: header("X-Amz-Sdk-Checksum-Algorithm", "SHA256", "X-Amz-Checksum-Crc32", helloCRC32), wantErr: s3err.InvalidRequest},
		{name: "sdk algorithm unknown", h: header("X-Amz-Sdk-Checksum-Algorithm", "BLAKE3", "X-Amz-Checksum-Crc32", helloCRC32), wantErr: s3err.InvalidRequest},
		{name: "sha512 header", h: header("X-Amz-Checksum-Sha512", helloSHA512, "X-Amz-Sdk-Checksum-Algorithm", "SHA512"),
			want: objects.PutInput{Checksum: objects.ChecksumInput{Algorithm: checksum.SHA512, Value: helloSHA512}}},
		{name: "md5 checksum and Content-MD5", h: header("X-Amz-Checksum-Md5", helloMD5, "Content-MD5", helloMD5),
			want: objects.PutInput{ContentMD5: helloMD5, Checksum: objects.ChecksumInput{Algorithm: checksum.MD5, Value: helloMD5}}},
		{name: "xxhash3 trailer", h: header("X-Amz-Trailer", "x-amz-checksum-xxhash3", "X-Amz-Sdk-Checksum-Algorithm", "XXHASH3"),
			want: objects.PutInput{Checksum: objects.ChecksumInput{Algorithm: checksum.XXHASH3}}},
		{name: "xxhash128 trailer upper case", h: header("X-Amz-Trailer", "X-Amz-Checksum-XXHASH128"),
			want: objects.PutInput{Checksum: objects.ChecksumInput{Algorithm: checksum.XXHASH128}}},
		{name: "xxhash64 of the wrong size", h: header("X-Amz-Checksum-Xxhash64", helloCRC32), wantErr: s3err.InvalidRequest},
		{name: "xxhash64 and xxhash3", h: header("X-Amz-Checksum-Xxhash64", "jLhB20DmroM=", "X-Amz-Checksum-Xxhash3", "ctyxi2ehff8="), wantErr: s3err.InvalidRequest},
		{name: "sdk algorithm xxhash64 for an md5 trailer", h: header("X-Amz-Trailer", "x-amz-checksum-md5", "X-Amz-Sdk-Checksum-Algorithm", "XXHASH64"), wantErr: s3err.InvalidRequest},
		{name: "bad md5", h: header("Content-MD5", "not base64"), wantErr: s3err.InvalidDigest},
		{name: "short md5", h: header("Content-MD5", "AAAA"), wantErr: s3err.InvalidDigest},
		{name: "empty md5", h: header("Content-MD5", ""), wantErr: s3err.InvalidDigest},
		{name: "conditional etag", h: header("If-None-Match", `"x"`), want: objects.PutInput{Cond: objects.WriteConditions{IfNoneMatch: `"x"`}}},
		{name: "sse", h: header("X-Amz-Server-Side-Encryption", "AES256"), wantErr: s3err.NotImplemented},
		{name: "tagging", h: header("X-Amz-Tagging", "a=b"), want: objects.PutInput{Tags: []objects.Tag{{Key: "a", Value: "b"}}}},
		{name: "tagging duplicate", h: header("X-Amz-Tagging", "a=b&a=c"), wantErr: s3err.InvalidArgument},
		{name: "object lock", h: header("X-Amz-Object-Lock-Mode", "GOVERNANCE"), wantErr: s3err.NotImplemented},

		{name: "acl private", h: header("X-Amz-Acl", "private")},
		{name: "acl bucket-owner-full-control", h: header("X-Amz-Acl", "bucket-owner-full-control")},

		{name: "storage class standard", h: header("X-Amz-Storage-Class", "STANDARD")},
		{name: "storage class glacier", h: header("X-Amz-Storage-Class", "GLACIER"), wantErr: s3err.NotImplemented},
		{name: "storage class unknown", h: header("X-Amz-Storage-Class", "COLD"), wantErr: s3err.InvalidStorageClass},
		{name: "metadata at limit", h: header("X-Amz-Meta-K", strings.Repeat("v", maxUserMetadata-1)),
			want: objects.PutInput{Meta: objects.Metadata{User: map[string]string{"k": strings.Repeat("v", maxUserMetadata-1)}}}},
		{name: "metadata too large", h: header("X-Amz-Meta-K", strings.Repeat("v", maxUserMetadata)), wantErr: s3err.MetadataTooLarge},
		{name: "metadata empty name", h: header("X-Amz-Meta-", "v"), wantErr: s3err.InvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parsePutObject(tc.h, url.Values{})
			if code := s3err.CodeOf(err); code != tc.wantErr {
				t.Fatalf("parsePutObject(%v) error = %v, want code %q", tc.h, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b func() string) bool { return (a == nil) == (b == nil) })); diff != "" {
				t.Errorf("parsePutObject(%v) mismatch (-want +got):\n%s", tc.h, diff)
			}
		})
	}
}

func TestParseGetObject(t *testing.T) {
	for _, tc := range []struct {
		name    string
		h       http.Header
		q       string
		want    objects.GetOptions
		wantErr s3err.Code
	}{
		{name: "plain"},
		{name: "range", h: header("Range", "bytes=1-2"), want: objects.GetOptions{Range: &objects.Range{Start: 1, End: 2}}},
		{name: "part", q: "partNumber=3", want: objects.GetOptions{PartNumber: 3}},
		{name: "part and range", h: header("Range", "bytes=1-2"), q: "partNumber=1", wantErr: s3err.InvalidRequest},
		{name: "part zero", q: "partNumber=0", wantErr: s3err.InvalidArgument},
		{name: "part too big", q: "partNumber=10001", wantErr: s3err.InvalidArgument},
		{name: "part junk", q: "partNumber=x", wantErr: s3err.InvalidArgument},
		{name: "part empty", q: "partNumber", wantErr: s3err.InvalidArgument},
		{name: "null version", q: "versionId=null", want: objects.GetOptions{VersionID: "null"}},
		{name: "other version", q: "versionId=3HL4kqtJlcpXroDTDmJ", want: objects.GetOptions{VersionID: "3HL4kqtJlcpXroDTDmJ"}},
		{name: "empty version", q: "versionId=", wantErr: s3err.InvalidArgument},
		{name: "conditions", h: header("If-Match", "x"), want: objects.GetOptions{Cond: objects.ReadConditions{IfMatch: "x"}}},
		{name: "suffix zero (416 once the size is known)", h: header("Range", "bytes=-0"), want: objects.GetOptions{Range: &objects.Range{Start: -1, End: -1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, _ := url.ParseQuery(tc.q)
			if tc.h == nil {
				tc.h = header()
			}
			got, err := parseGetObject(tc.h, q)
			if code := s3err.CodeOf(err); code != tc.wantErr {
				t.Fatalf("parseGetObject(%v, %q) error = %v, want code %q", tc.h, tc.q, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("parseGetObject(%v, %q) mismatch (-want +got):\n%s", tc.h, tc.q, diff)
			}
		})
	}
}

func TestParseResponseOverrides(t *testing.T) {
	q := url.Values{
		"response-content-type":        {"text/html"},
		"response-content-language":    {"mi, en"},
		"response-expires":             {"Thu, 01 Dec 1994 16:00:00 GMT"},
		"response-cache-control":       {"No-cache"},
		"response-content-disposition": {"attachment; filename=testing.txt"},
		"response-content-encoding":    {"identity"},
		"x-id":                         {"GetObject"},
	}
	got, err := parseResponseOverrides(q, false)
	if err != nil {
		t.Fatalf("parseResponseOverrides: %v", err)
	}
	want := []headerOverride{
		{"Cache-Control", "No-cache"},
		{"Content-Disposition", "attachment; filename=testing.txt"},
		{"Content-Encoding", "identity"},
		{"Content-Language", "mi, en"},
		{"Content-Type", "text/html"},
		{"Expires", "Thu, 01 Dec 1994 16:00:00 GMT"},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(headerOverride{})); diff != "" {
		t.Errorf("parseResponseOverrides mismatch (-want +got):\n%s", diff)
	}
	if _, err := parseResponseOverrides(q, true); s3err.CodeOf(err) != s3err.InvalidRequest {
		t.Errorf("anonymous parseResponseOverrides error = %v, want InvalidRequest", err)
	}
	if got, err := parseResponseOverrides(url.Values{"x-id": {"GetObject"}}, true); err != nil || got != nil {
		t.Errorf("anonymous parseResponseOverrides without overrides = %v, %v", got, err)
	}
}

func TestParsePartNumber(t *testing.T) {
	for _, tc := range []struct {
		s       string
		want    int
		wantErr bool
	}{
		{"1", 1, false}, {"10000", 10000, false}, {"0", 0, true}, {"10001", 0, true},
		{"-1", 0, true}, {"", 0, true}, {"1.5", 0, true}, {"99999999999999999999", 0, true},
	} {
		got, err := parsePartNumber(tc.s)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("parsePartNumber(%q) = %d, %v; want %d, error %v", tc.s, got, err, tc.want, tc.wantErr)
		}
		if err != nil && s3err.CodeOf(err) != s3err.InvalidArgument {
			t.Errorf("parsePartNumber(%q) error code %q, want InvalidArgument", tc.s, s3err.CodeOf(err))
		}
	}
}

// TestNonASCIIMetadata: user metadata values are stored in UTF-8 whether a
// client sends them as UTF-8, ISO-8859-1 bytes or RFC 2047 encoded-words,
// and come back RFC 2047 encoded, as S3 sends them; ASCII is untouched.
func TestNonASCIIMetadata(t *testing.T) {
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	for _, tc := range []struct {
		name, sent, want string // want: the decoded value
		wire             string // the exact header returned, if not ""
	}{
		{"utf-8", "Hello Worldé", "Hello Worldé", "=?UTF-8?B?SGVsbG8gV29ybGTDqQ==?="},
		{"latin-1 bytes", "Hello World\xe9", "Hello Worldé", "=?UTF-8?B?SGVsbG8gV29ybGTDqQ==?="},
		{"rfc 2047", "=?UTF-8?Q?caf=C3=A9?=", "café", ""},
		{"ascii", "plain, with =? inside", "plain, with =? inside", "plain, with =? inside"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs.put("bkt", "k", []byte("x"), "X-Amz-Meta-Greeting", tc.sent).mustStatus(t, http.StatusOK)
			rp := hs.do(call{method: http.MethodHead, path: "/bkt/k"}).mustStatus(t, http.StatusOK)
			got := rp.header.Get("X-Amz-Meta-Greeting")
			if tc.wire != "" && got != tc.wire {
				t.Errorf("header %q, want %q", got, tc.wire)
			}
			dec, err := new(mime.WordDecoder).DecodeHeader(got)
			if err != nil || dec != tc.want {
				t.Errorf("header %q decodes to %q (%v), want %q", got, dec, err, tc.want)
			}
		})
	}
}
