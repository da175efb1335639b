package s3api

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/coffer-s3/coffer/internal/checksum"
	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/s3err"
	"github.com/coffer-s3/coffer/internal/s3xml"
	"github.com/coffer-s3/coffer/internal/sigv4"
)

func TestParseCreateUpload(t *testing.T) {
	for _, tc := range []struct {
		name    string
		h       http.Header
		want    objects.CreateUploadInput
		wantErr s3err.Code
	}{
		{name: "plain"},
		{name: "metadata", h: header("Content-Type", "video/mp2t", "X-Amz-Meta-Take", "2"),
			want: objects.CreateUploadInput{Meta: objects.Metadata{ContentType: "video/mp2t", User: map[string]string{"take": "2"}}}},
		// The type is defaulted by objects, by algorithm.
		{name: "algorithm without type", h: header("X-Amz-Checksum-Algorithm", "CRC32C"),
			want: objects.CreateUploadInput{ChecksumAlgorithm: checksum.CRC32C}},
		{name: "crc64nvme without type", h: header("X-Amz-Checksum-Algorithm", "CRC64NVME"),
			want: objects.CreateUploadInput{ChecksumAlgorithm: checksum.CRC64NVME}},
		{name: "composite lower case", h: header("X-Amz-Checksum-Algorithm", "SHA256", "X-Amz-Checksum-Type", "composite"),
			want: objects.CreateUploadInput{ChecksumAlgorithm: checksum.SHA256, ChecksumType: "COMPOSITE"}},
		{name: "full object", h: header("X-Amz-Checksum-Algorithm", "crc64nvme", "X-Amz-Checksum-Type", "FULL_OBJECT"),
			want: objects.CreateUploadInput{ChecksumAlgorithm: checksum.CRC64NVME, ChecksumType: "FULL_OBJECT"}},
		{name: "type without algorithm", h: header("X-Amz-Checksum-Type", "FULL_OBJECT"), wantErr: s3err.InvalidRequest},
		{name: "bad type", h: header("X-Amz-Checksum-Algorithm", "CRC32", "X-Amz-Checksum-Type", "PARTIAL"), wantErr: s3err.InvalidRequest},
		{name: "bad algorithm", h: header("X-Amz-Checksum-Algorithm", "XXH3"), wantErr: s3err.InvalidRequest},
		{name: "xxhash3", h: header("X-Amz-Checksum-Algorithm", "XXHASH3"),
			want: objects.CreateUploadInput{ChecksumAlgorithm: checksum.XXHASH3}},
		{name: "sha512 composite", h: header("X-Amz-Checksum-Algorithm", "sha512", "X-Amz-Checksum-Type", "COMPOSITE"),
			want: objects.CreateUploadInput{ChecksumAlgorithm: checksum.SHA512, ChecksumType: "COMPOSITE"}},
		{name: "sse", h: header("X-Amz-Server-Side-Encryption", "AES256"), wantErr: s3err.NotImplemented},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.h == nil {
				tc.h = header()
			}
			got, err := parseCreateUpload(tc.h)
			if code := s3err.CodeOf(err); code != tc.wantErr {
				t.Fatalf("parseCreateUpload(%v) error = %v, want code %q", tc.h, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("parseCreateUpload(%v) mismatch (-want +got):\n%s", tc.h, diff)
			}
		})
	}
}

func TestParsePartTarget(t *testing.T) {
	for _, tc := range []struct {
		q       string
		id      string
		n       int
		wantErr s3err.Code
	}{
		{q: "partNumber=1&uploadId=abc", id: "abc", n: 1},
		{q: "partNumber=10000&uploadId=abc", id: "abc", n: 10000},
		{q: "partNumber=0&uploadId=abc", wantErr: s3err.InvalidArgument},
		{q: "uploadId=abc", wantErr: s3err.InvalidArgument},
		{q: "partNumber=1&uploadId=", wantErr: s3err.NoSuchUpload},
	} {
		q, _ := url.ParseQuery(tc.q)
		id, n, err := parsePartTarget(q)
		if code := s3err.CodeOf(err); code != tc.wantErr || id != tc.id || n != tc.n {
			t.Errorf("parsePartTarget(%q) = %q, %d, %v; want %q, %d, code %q", tc.q, id, n, err, tc.id, tc.n, tc.wantErr)
		}
	}
}

func TestParseListParts(t *testing.T) {
	for _, tc := range []struct {
		q       string
		want    objects.ListPartsInput
		wantErr s3err.Code
	}{
		{q: "uploadId=u", want: objects.ListPartsInput{MaxParts: 1000}},
		{q: "uploadId=u&max-parts=2&part-number-marker=1", want: objects.ListPartsInput{MaxParts: 2, PartNumberMarker: 1}},
		{q: "uploadId=u&max-parts=2000", want: objects.ListPartsInput{MaxParts: 1000}},
		{q: "uploadId=u&max-parts=0", want: objects.ListPartsInput{MaxParts: 0}},
		{q: "uploadId=u&max-parts=007", want: objects.ListPartsInput{MaxParts: 7}},
		{q: "uploadId=u&max-parts=-2", wantErr: s3err.InvalidArgument},
		{q: "uploadId=u&max-parts=2147483648", wantErr: s3err.InvalidArgument},
		{q: "uploadId=u&part-number-marker=x", wantErr: s3err.InvalidArgument},
		{q: "uploadId=u&part-number-marker=-1", wantErr: s3err.InvalidArgument},
		{q: "uploadId=u&part-number-marker=2147483648", wantErr: s3err.InvalidArgument},
		{q: "uploadId=u&part-number-marker=2147483647", want: objects.ListPartsInput{MaxParts: 1000, PartNumberMarker: 2147483647}},
		{q: "uploadId=", wantErr: s3err.NoSuchUpload},
	} {
		q, _ := url.ParseQuery(tc.q)
		_, got, err := parseListParts(q, 1000)
		if code := s3err.CodeOf(err); code != tc.wantErr {
			t.Errorf("parseListParts(%q) error = %v, want code %q", tc.q, err, tc.wantErr)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("parseListParts(%q) mismatch (-want +got):\n%s", tc.q, diff)
		}
	}
}

func TestParseComplete(t *testing.T) {
	doc := s3xml.CompleteMultipartUpload{Parts: []s3xml.CompletedPart{
		{PartNumber: 1, ETag: `"a54357aff0632cce46d942af68356b38"`},
		{PartNumber: 2, ETag: "0c78aef83f66abc1fa1e8477f296d394", Checksums: s3xml.Checksums{ChecksumCRC32: helloCRC32}},
		{PartNumber: 3, ETag: "0c78aef83f66abc1fa1e8477f296d394", Checksums: s3xml.Checksums{ChecksumXXHASH128: "MxGUd+3l3NXpcWQnaB1YYA=="}},
	}}
	got, err := parseComplete(header("If-None-Match", "*", "X-Amz-Checksum-Crc32", helloCRC32, "X-Amz-Checksum-Type", "full_object"), doc)
	if err != nil {
		t.Fatalf("parseComplete: %v", err)
	}
	want := objects.CompleteInput{
		Parts: []objects.CompletePart{
			{Number: 1, ETag: `"a54357aff0632cce46d942af68356b38"`},
			{Number: 2, ETag: "0c78aef83f66abc1fa1e8477f296d394", Checksum: helloCRC32},
			{Number: 3, ETag: "0c78aef83f66abc1fa1e8477f296d394", Checksum: "MxGUd+3l3NXpcWQnaB1YYA=="},
		},
		Cond:         objects.WriteConditions{IfNoneMatch: "*"},
		Checksum:     objects.ChecksumInput{Algorithm: checksum.CRC32, Value: helloCRC32},
		ChecksumType: "FULL_OBJECT",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parseComplete mismatch (-want +got):\n%s", diff)
	}
	if got, err := parseComplete(header("If-None-Match", "etag"), doc); err != nil || got.Cond.IfNoneMatch != "etag" {
		t.Errorf("parseComplete with If-None-Match etag: %+v, %v", got.Cond, err)
	}
	if _, err := parseComplete(header("X-Amz-Checksum-Crc32", "bad"), doc); s3err.CodeOf(err) != s3err.InvalidRequest {
		t.Errorf("parseComplete with a bad checksum: error %v, want InvalidRequest", err)
	}
	if _, err := parseComplete(header("X-Amz-Checksum-Type", "PARTIAL"), doc); s3err.CodeOf(err) != s3err.InvalidRequest {
		t.Errorf("parseComplete with a bad checksum type: error %v, want InvalidRequest", err)
	}
	got, err = parseComplete(header("X-Amz-Checksum-Sha512", "2eZ2LdHI6vbWGzxhkvxAjU1tXxF20MKRabwk5xw/J0rSf81YEbMT1oH35V7ALXPUmclUVba1u1A6z1dPuo/+hQ=="), doc)
	if err != nil || got.Checksum.Algorithm != checksum.SHA512 || got.ChecksumType != "" {
		t.Errorf("parseComplete with x-amz-checksum-sha512: %+v, type %q, %v", got.Checksum, got.ChecksumType, err)
	}
	// A composite value, with its part count, as GetObject returns it.
	composite := "uWBwpe1dxI4Vw8Gf0X9ynOdw/SS6VBzfWm9giiv1sf4=-3"
	if got, err := parseComplete(header("X-Amz-Checksum-Sha256", composite), doc); err != nil || got.Checksum.Value != composite {
		t.Errorf("parseComplete with a composite x-amz-checksum-sha256: %+v, %v", got.Checksum, err)
	}
	for _, v := range []string{"uWBwpe1dxI4Vw8Gf0X9ynOdw/SS6VBzfWm9giiv1sf4=-0", "uWBwpe1dxI4Vw8Gf0X9ynOdw/SS6VBzfWm9giiv1sf4=-10001",
		"uWBwpe1dxI4Vw8Gf0X9ynOdw/SS6VBzfWm9giiv1sf4=-+3", "uWBwpe1dxI4Vw8Gf0X9ynOdw/SS6VBzfWm9giiv1sf4=-", "uWBwpe1dxI4Vw8Gf0X9ynOdw=-3"} {
		if _, err := parseComplete(header("X-Amz-Checksum-Sha256", v), doc); s3err.CodeOf(err) != s3err.InvalidRequest {
			t.Errorf("parseComplete with x-amz-checksum-sha256 %q: error %v, want InvalidRequest", v, err)
		}
	}
	// Elsewhere a part count is not a checksum.
	if _, err := parseChecksum(header("X-Amz-Checksum-Sha256", composite)); s3err.CodeOf(err) != s3err.InvalidRequest {
		t.Errorf("parseChecksum with a composite value: error %v, want InvalidRequest", err)
	}
}

// completeDoc renders a CompleteMultipartUpload body.
func completeDoc(parts ...string) []byte {
	var b strings.Builder
	b.WriteString(`<CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/">`)
	for i := 0; i+1 < len(parts); i += 2 {
		b.WriteString("<Part><PartNumber>" + parts[i] + "</PartNumber><ETag>" + parts[i+1] + "</ETag></Part>")
	}
	b.WriteString("</CompleteMultipartUpload>")
	return []byte(b.String())
}

var uploadIDRE = regexp.MustCompile(`<UploadId>([^<]+)</UploadId>`)

// createUpload starts a multipart upload of bucket/key and returns its ID.
func (hs *harness) createUpload(bucket, key string, kv ...string) string {
	hs.t.Helper()
	rp := hs.do(call{method: "POST", path: "/" + bucket + "/" + key + "?uploads", header: header(kv...)}).mustStatus(hs.t, http.StatusOK)
	m := uploadIDRE.FindSubmatch(rp.body)
	if m == nil {
		hs.t.Fatalf("CreateMultipartUpload reply without UploadId:\n%s", rp.body)
	}
	return string(m[1])
}

// uploadPart uploads part n and returns its ETag.
func (hs *harness) uploadPart(bucket, key, id string, n int, body []byte) string {
	hs.t.Helper()
	rp := hs.do(call{method: "PUT", path: fmt.Sprintf("/%s/%s?partNumber=%d&uploadId=%s", bucket, key, n, url.QueryEscape(id)), body: body}).
		mustStatus(hs.t, http.StatusOK)
	if got := rp.header.Get("ETag"); got != etagOf(body) {
		hs.t.Fatalf("UploadPart %d ETag %q, want %q", n, got, etagOf(body))
	}
	return rp.header.Get("ETag")
}

func TestMultipartUpload(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	part1 := bytes.Repeat([]byte("a"), testMinPart)
	part2 := bytes.Repeat([]byte("b"), testMinPart)
	part3 := []byte("ccc")

	rp := hs.do(call{method: "POST", path: "/bkt/big?uploads", header: header("Content-Type", "text/plain", "X-Amz-Meta-Run", "1")}).mustStatus(t, http.StatusOK)
	golden(t, "CreateMultipartUpload", rp.body)
	id := string(uploadIDRE.FindSubmatch(rp.body)[1])
	q := "uploadId=" + url.QueryEscape(id)

	e1 := hs.uploadPart("bkt", "big", id, 1, part1)
	e2 := hs.uploadPart("bkt", "big", id, 2, part2)
	e3 := hs.uploadPart("bkt", "big", id, 3, part3)

	rp = hs.do(call{method: "GET", path: "/bkt/big?" + q}).mustStatus(t, http.StatusOK)
	golden(t, "ListParts", rp.body)
	rp = hs.do(call{method: "GET", path: "/bkt/big?max-parts=2&" + q}).mustStatus(t, http.StatusOK)
	golden(t, "ListParts_truncated", rp.body)
	rp = hs.do(call{method: "GET", path: "/bkt?uploads"}).mustStatus(t, http.StatusOK)
	golden(t, "ListMultipartUploads", rp.body)

	hs.do(call{method: "PUT", path: "/bkt/big?partNumber=0&" + q, body: part3}).want(t, http.StatusBadRequest, s3err.InvalidArgument)
	hs.do(call{method: "PUT", path: "/bkt/big?partNumber=10001&" + q, body: part3}).want(t, http.StatusBadRequest, s3err.InvalidArgument)
	hs.do(call{method: "PUT", path: "/bkt/big?partNumber=4&" + q, body: part3, noLen: true, payload: "UNSIGNED-PAYLOAD"}).
		want(t, http.StatusLengthRequired, s3err.MissingContentLength)
	hs.do(call{method: "PUT", path: "/bkt/big?partNumber=4&" + q, body: part3, header: header("Content-MD5", contentMD5(part1))}).
		want(t, http.StatusBadRequest, s3err.BadDigest)

	goldenError(t, hs.do(call{method: "POST", path: "/bkt/big?" + q, body: completeDoc("2", e2, "1", e1)}),
		"CompleteMultipartUpload_InvalidPartOrder", http.StatusBadRequest, s3err.InvalidPartOrder)
	goldenError(t, hs.do(call{method: "POST", path: "/bkt/big?" + q, body: completeDoc("1", e1, "2", `"00000000000000000000000000000000"`)}),
		"CompleteMultipartUpload_InvalidPart", http.StatusBadRequest, s3err.InvalidPart)
	goldenError(t, hs.do(call{method: "POST", path: "/bkt/big?" + q, body: []byte("<CompleteMultipartUpload>")}),
		"CompleteMultipartUpload_MalformedXML", http.StatusBadRequest, s3err.MalformedXML)
	hs.do(call{method: "POST", path: "/bkt/big?" + q, body: completeDoc("1", e1, "2", e2, "3", e3), header: header("If-Match", `"x"`)}).
		want(t, http.StatusNotFound, s3err.NoSuchKey)

	rp = hs.do(call{method: "POST", path: "/bkt/big?" + q, host: testDomain, body: completeDoc("1", e1, "2", e2, "3", e3)}).mustStatus(t, http.StatusOK)
	golden(t, "CompleteMultipartUpload", rp.body)

	rp = hs.do(call{method: "GET", path: "/bkt/big"}).mustStatus(t, http.StatusOK)
	if want := append(append(append([]byte{}, part1...), part2...), part3...); !bytes.Equal(rp.body, want) {
		t.Errorf("multipart object: %d bytes, want %d", len(rp.body), len(want))
	}
	if got := rp.header.Get("ETag"); !strings.HasSuffix(got, `-3"`) {
		t.Errorf("multipart ETag %q, want a -3 suffix", got)
	}
	if got := rp.header.Get("X-Amz-Meta-Run"); got != "1" {
		t.Errorf("multipart object x-amz-meta-run = %q", got)
	}
	rp = hs.do(call{method: "GET", path: "/bkt/big?partNumber=2"}).mustStatus(t, http.StatusPartialContent)
	if !bytes.Equal(rp.body, part2) || rp.header.Get("x-amz-mp-parts-count") != "3" {
		t.Errorf("GET partNumber=2: %d bytes, parts count %q", len(rp.body), rp.header.Get("x-amz-mp-parts-count"))
	}
	if got, want := rp.header.Get("Content-Range"), fmt.Sprintf("bytes %d-%d/%d", testMinPart, 2*testMinPart-1, 2*testMinPart+3); got != want {
		t.Errorf("GET partNumber=2 Content-Range %q, want %q", got, want)
	}
	hs.do(call{method: "HEAD", path: "/bkt/big?partNumber=4"}).want(t, http.StatusRequestedRangeNotSatisfiable, "")

	goldenError(t, hs.do(call{method: "PUT", path: "/bkt/big?partNumber=1&" + q, body: part3}),
		"UploadPart_NoSuchUpload", http.StatusNotFound, s3err.NoSuchUpload, id)
	hs.do(call{method: "GET", path: "/bkt/big?" + q}).want(t, http.StatusNotFound, s3err.NoSuchUpload)
	hs.do(call{method: "POST", path: "/bkt/big?uploadId=", body: completeDoc("1", e1)}).want(t, http.StatusNotFound, s3err.NoSuchUpload)
}

// TestMultipartListLimits checks max-parts and max-uploads at their edges:
// 0 is an empty, final page (as max-keys=0 is); a negative value is
// refused with S3's own message for it, as is one that is no integer or
// past 2^31-1 (InvalidArgument, 400, either way).
func TestMultipartListLimits(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	id := hs.createUpload("bkt", "big")
	hs.uploadPart("bkt", "big", id, 1, []byte("one"))
	hs.uploadPart("bkt", "big", id, 2, []byte("two"))
	q := "uploadId=" + url.QueryEscape(id)
	rp := hs.do(call{method: "GET", path: "/bkt/big?max-parts=0&" + q}).mustStatus(t, http.StatusOK)
	golden(t, "ListParts_max_parts_0", rp.body)
	rp = hs.do(call{method: "GET", path: "/bkt?uploads&max-uploads=0"}).mustStatus(t, http.StatusOK)
	golden(t, "ListMultipartUploads_max_uploads_0", rp.body)
	goldenError(t, hs.do(call{method: "GET", path: "/bkt/big?max-parts=-1&" + q}), "ListParts_negative_max_parts", http.StatusBadRequest, s3err.InvalidArgument)
	goldenError(t, hs.do(call{method: "GET", path: "/bkt/big?part-number-marker=-1&" + q}), "ListParts_negative_part_number_marker", http.StatusBadRequest, s3err.InvalidArgument)
	goldenError(t, hs.do(call{method: "GET", path: "/bkt/big?max-parts=2147483648&" + q}), "ListParts_max_parts_out_of_range", http.StatusBadRequest, s3err.InvalidArgument)
	goldenError(t, hs.do(call{method: "GET", path: "/bkt?uploads&max-uploads=-1"}), "ListMultipartUploads_negative_max_uploads", http.StatusBadRequest, s3err.InvalidArgument)
	goldenError(t, hs.do(call{method: "GET", path: "/bkt?uploads&max-uploads=x"}), "ListMultipartUploads_bad_max_uploads", http.StatusBadRequest, s3err.InvalidArgument)
	hs.do(call{method: "GET", path: "/bkt/big?max-parts=0&uploadId=nope"}).want(t, http.StatusNotFound, s3err.NoSuchUpload)
	hs.do(call{method: "GET", path: "/nope?uploads&max-uploads=0"}).want(t, http.StatusNotFound, s3err.NoSuchBucket)
}

func TestMultipartErrors(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	hs.put("bkt", "exists", []byte("x"))

	id := hs.createUpload("bkt", "small")
	e1 := hs.uploadPart("bkt", "small", id, 1, []byte("tiny"))
	e2 := hs.uploadPart("bkt", "small", id, 2, []byte("tiny too"))
	goldenError(t, hs.do(call{method: "POST", path: "/bkt/small?uploadId=" + url.QueryEscape(id), body: completeDoc("1", e1, "2", e2)}),
		"CompleteMultipartUpload_EntityTooSmall", http.StatusBadRequest, s3err.EntityTooSmall)
	// A single small part is fine: the last part may be any size.
	hs.do(call{method: "POST", path: "/bkt/small?uploadId=" + url.QueryEscape(id), body: completeDoc("1", e1)}).mustStatus(t, http.StatusOK)

	id = hs.createUpload("bkt", "exists")
	e1 = hs.uploadPart("bkt", "exists", id, 1, []byte("new"))
	hs.do(call{method: "POST", path: "/bkt/exists?uploadId=" + url.QueryEscape(id), body: completeDoc("1", e1), header: header("If-None-Match", "*")}).
		want(t, http.StatusPreconditionFailed, s3err.PreconditionFailed)
	hs.do(call{method: "DELETE", path: "/bkt/exists?uploadId=" + url.QueryEscape(id)}).mustStatus(t, http.StatusNoContent)
	goldenError(t, hs.do(call{method: "DELETE", path: "/bkt/exists?uploadId=" + url.QueryEscape(id)}),
		"AbortMultipartUpload_NoSuchUpload", http.StatusNotFound, s3err.NoSuchUpload, id)
	hs.do(call{method: "POST", path: "/nope/k?uploads"}).want(t, http.StatusNotFound, s3err.NoSuchBucket)
	hs.do(call{method: "POST", path: "/bkt/k?uploads", header: header("X-Amz-Checksum-Type", "FULL_OBJECT")}).
		want(t, http.StatusBadRequest, s3err.InvalidRequest)

	rp := hs.do(call{method: "GET", path: "/bkt?uploads"}).mustStatus(t, http.StatusOK)
	golden(t, "ListMultipartUploads_empty", rp.body)
	hs.do(call{method: "GET", path: "/bkt?uploads&max-uploads=x"}).want(t, http.StatusBadRequest, s3err.InvalidArgument)
}

func TestUploadPartCopy(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	src := bytes.Repeat([]byte("0123456789"), testMinPart/10+1)
	hs.put("bkt", "src", src)

	id := hs.createUpload("bkt", "dst")
	q := "uploadId=" + url.QueryEscape(id)
	rp := hs.do(call{method: "PUT", path: "/bkt/dst?partNumber=1&" + q, header: header("X-Amz-Copy-Source", "/bkt/src", "X-Amz-Copy-Source-Range", fmt.Sprintf("bytes=0-%d", testMinPart-1))}).
		mustStatus(t, http.StatusOK)
	golden(t, "UploadPartCopy", rp.body)
	e1 := etagOf(src[:testMinPart])
	rp = hs.do(call{method: "PUT", path: "/bkt/dst?partNumber=2&" + q, header: header("X-Amz-Copy-Source", "bkt/src")}).mustStatus(t, http.StatusOK)
	e2 := etagOf(src)
	if !bytes.Contains(rp.body, []byte(strings.Trim(e2, `"`))) {
		t.Errorf("UploadPartCopy of the whole source: %s, want ETag %s", rp.body, e2)
	}
	hs.do(call{method: "PUT", path: "/bkt/dst?partNumber=3&" + q, header: header("X-Amz-Copy-Source", "/bkt/src", "X-Amz-Copy-Source-Range", "bytes=5-")}).
		want(t, http.StatusBadRequest, s3err.InvalidArgument)
	hs.do(call{method: "PUT", path: "/bkt/dst?partNumber=3&" + q, header: header("X-Amz-Copy-Source", "/bkt/src", "X-Amz-Copy-Source-Range", fmt.Sprintf("bytes=0-%d", len(src)))}).
		want(t, http.StatusBadRequest, s3err.InvalidArgument)
	hs.do(call{method: "PUT", path: "/bkt/dst?partNumber=3&" + q, header: header("X-Amz-Copy-Source", "/bkt/missing")}).
		want(t, http.StatusNotFound, s3err.NoSuchKey)
	hs.do(call{method: "PUT", path: "/bkt/dst?partNumber=3&" + q, header: header("X-Amz-Copy-Source", "/bkt/src", "X-Amz-Copy-Source-If-Match", `"0"`)}).
		want(t, http.StatusPreconditionFailed, s3err.PreconditionFailed)

	hs.do(call{method: "POST", path: "/bkt/dst?" + q, body: completeDoc("1", e1, "2", e2)}).mustStatus(t, http.StatusOK)
	rp = hs.do(call{method: "GET", path: "/bkt/dst"}).mustStatus(t, http.StatusOK)
	if want := append(append([]byte{}, src[:testMinPart]...), src...); !bytes.Equal(rp.body, want) {
		t.Errorf("object from copied parts: %d bytes, want %d", len(rp.body), len(want))
	}
}

// FuzzCompositeChecksumHeader: CompleteMultipartUpload's checksum header
// takes a plain checksum or one followed by "-N" (1 ≤ N ≤ 10000); every
// other header takes a plain one only. Whatever is accepted is returned
// as sent, and its checksum part is valid base64 of the algorithm's size.
func FuzzCompositeChecksumHeader(f *testing.F) {
	f.Add(helloSHA256)
	f.Add(helloSHA256 + "-3")
	f.Add(helloSHA256 + "-0")
	f.Add(helloSHA256 + "-+3")
	f.Add(helloSHA256 + "--3")
	f.Add("bad-1")
	f.Fuzz(func(t *testing.T, v string) {
		h := http.Header{"X-Amz-Checksum-Sha256": {v}}
		alg, got, err := checksumHeaderOf(h, true)
		plainAlg, plain, plainErr := checksumHeaderOf(h, false)
		if plainErr == nil && (err != nil || got != plain || alg != plainAlg) {
			t.Fatalf("%q: plain value accepted (%q) but composite parse gave %q, %v", v, plain, got, err)
		}
		if err != nil {
			if s3err.CodeOf(err) != s3err.InvalidRequest {
				t.Fatalf("%q: error %v, want InvalidRequest", v, err)
			}
			return
		}
		if alg != checksum.SHA256 || got != v {
			t.Fatalf("%q: got %s %q", v, alg, got)
		}
		if plainErr == nil {
			return
		}
		i := strings.LastIndexByte(v, '-')
		n, convErr := strconv.Atoi(v[i+1:])
		if i < 0 || convErr != nil || n < 1 || n > 10000 || checksum.SHA256.Validate(v[:i]) != nil {
			t.Fatalf("%q accepted as composite", v)
		}
	})
}

// TestMultipartInitiator checks Initiator and Owner in ListMultipartUploads
// and ListParts: who started the upload, whoever lists it, and who will own
// the object. For an IAM user S3 gives the user's ARN and name as
// Initiator; for the account, the same as Owner. Owner is the object's
// owner-to-be: the writer (a user has a canonical ID of its own in
// Coffer), or the bucket's owner when the writer hands it over
// (bucket-owner-full-control under BucketOwnerPreferred). See
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_Initiator.html and
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListParts.html
func TestMultipartInitiator(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	hs.do(call{method: "PUT", path: "/bkt?ownershipControls", body: xmlBody(`
<OwnershipControls><Rule><ObjectOwnership>BucketOwnerPreferred</ObjectOwnership></Rule></OwnershipControls>`)}).mustStatus(t, http.StatusOK)
	alice := hs.user("alice", "readwrite")
	ids := map[string]string{} // key → upload ID
	for _, c := range []struct {
		key  string
		cred *sigv4.Credentials
		kv   []string
	}{
		{"by-root", nil, nil},
		{"by-alice", alice, nil},
		{"by-alice-for-owner", alice, []string{"X-Amz-Acl", "bucket-owner-full-control"}},
	} {
		rp := hs.do(call{method: "POST", path: "/bkt/" + c.key + "?uploads", cred: c.cred, header: header(c.kv...)}).mustStatus(t, http.StatusOK)
		ids[c.key] = string(uploadIDRE.FindSubmatch(rp.body)[1])
	}
	root := s3xml.Owner{ID: iam.RootCanonicalID(), DisplayName: "root"}
	aliceOwner := s3xml.Owner{ID: hs.canonicalID("alice"), DisplayName: "alice"}
	aliceARN := s3xml.Owner{ID: "arn:aws:iam::" + iam.AccountID + ":user/alice", DisplayName: "alice"}
	want := map[string][2]s3xml.Owner{ // key → Initiator, Owner
		"by-root":            {root, root},
		"by-alice":           {aliceARN, aliceOwner},
		"by-alice-for-owner": {aliceARN, root},
	}
	for _, lister := range []struct {
		name string
		cred *sigv4.Credentials
	}{{"root", nil}, {"alice", alice}} {
		rp := hs.do(call{method: "GET", path: "/bkt?uploads", cred: lister.cred}).mustStatus(t, http.StatusOK)
		var lu s3xml.ListMultipartUploadsResult
		if err := xml.Unmarshal(rp.body, &lu); err != nil {
			t.Fatal(err)
		}
		if len(lu.Uploads) != len(want) {
			t.Fatalf("ListMultipartUploads by %s: %d uploads, want %d", lister.name, len(lu.Uploads), len(want))
		}
		for _, u := range lu.Uploads {
			if got := [2]s3xml.Owner{u.Initiator, u.Owner}; got != want[string(u.Key)] {
				t.Errorf("ListMultipartUploads by %s: %s: Initiator, Owner = %+v, want %+v", lister.name, u.Key, got, want[string(u.Key)])
			}
		}
		for key, id := range ids {
			rp := hs.do(call{method: "GET", path: "/bkt/" + key + "?uploadId=" + url.QueryEscape(id), cred: lister.cred}).mustStatus(t, http.StatusOK)
			var lp s3xml.ListPartsResult
			if err := xml.Unmarshal(rp.body, &lp); err != nil {
				t.Fatal(err)
			}
			if got := [2]s3xml.Owner{lp.Initiator, lp.Owner}; got != want[key] {
				t.Errorf("ListParts by %s: %s: Initiator, Owner = %+v, want %+v", lister.name, key, got, want[key])
			}
		}
	}
}
