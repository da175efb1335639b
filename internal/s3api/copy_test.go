package s3api

import (
	"encoding/xml"
	"net/http"
	"net/url"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/coffer-s3/coffer/internal/checksum"
	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/s3err"
	"github.com/coffer-s3/coffer/internal/s3xml"
)

func TestParseCopySource(t *testing.T) {
	for _, tc := range []struct {
		name, hdr string
		want      copySource
		wantErr   s3err.Code
	}{
		{name: "leading slash", hdr: "/bucket/my-image.jpg", want: copySource{bucket: "bucket", key: "my-image.jpg"}},
		{name: "no leading slash", hdr: "bucket/my-image.jpg", want: copySource{bucket: "bucket", key: "my-image.jpg"}},
		{name: "nested key", hdr: "b/a/b/c", want: copySource{bucket: "b", key: "a/b/c"}},
		{name: "encoded", hdr: "b/caf%C3%A9%20%2B%3F", want: copySource{bucket: "b", key: "café +?"}},
		{name: "plus kept", hdr: "b/a+b", want: copySource{bucket: "b", key: "a+b"}},
		{name: "encoded slash", hdr: "b%2Fk", want: copySource{bucket: "b", key: "k"}},
		{name: "double slash key", hdr: "b//k", want: copySource{bucket: "b", key: "/k"}},
		{name: "null version", hdr: "b/k?versionId=null", want: copySource{bucket: "b", key: "k", versionID: "null"}},
		{name: "other version", hdr: "b/k?versionId=abc", want: copySource{bucket: "b", key: "k", versionID: "abc"}},
		{name: "empty version", hdr: "b/k?versionId=", wantErr: s3err.InvalidArgument},
		{name: "no key", hdr: "bucket", wantErr: s3err.InvalidArgument},
		{name: "empty key", hdr: "bucket/", wantErr: s3err.InvalidArgument},
		{name: "empty bucket", hdr: "//k", wantErr: s3err.InvalidArgument},
		{name: "empty", hdr: "", wantErr: s3err.InvalidArgument},
		{name: "bad escape", hdr: "b/%zz", wantErr: s3err.InvalidArgument},
		{name: "bad query", hdr: "b/k?versionId=%zz", wantErr: s3err.InvalidArgument},
		// A '?' left unencoded is the key's, unless what follows the last
		// one names versionId.
		{name: "unencoded ? in key", hdr: "b/k?x.txt", want: copySource{bucket: "b", key: "k?x.txt"}},
		{name: "unencoded ? and a version", hdr: "b/k?x.txt?versionId=abc", want: copySource{bucket: "b", key: "k?x.txt", versionID: "abc"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseCopySource(tc.hdr)
			if code := s3err.CodeOf(err); code != tc.wantErr {
				t.Fatalf("parseCopySource(%q) error = %v, want code %q", tc.hdr, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(copySource{})); diff != "" {
				t.Errorf("parseCopySource(%q) mismatch (-want +got):\n%s", tc.hdr, diff)
			}
		})
	}
}

func TestParseCopyObject(t *testing.T) {
	for _, tc := range []struct {
		name    string
		h       http.Header
		want    objects.CopyInput
		wantErr s3err.Code
	}{
		{name: "copy metadata", h: header("X-Amz-Copy-Source", "/src/k", "Content-Type", "ignored/when-copying"),
			want: objects.CopyInput{SrcBucket: "src", SrcKey: "k"}},
		{name: "explicit COPY", h: header("X-Amz-Copy-Source", "src/k", "X-Amz-Metadata-Directive", "COPY"),
			want: objects.CopyInput{SrcBucket: "src", SrcKey: "k"}},
		{name: "replace metadata", h: header("X-Amz-Copy-Source", "src/k", "X-Amz-Metadata-Directive", "REPLACE", "Content-Type", "text/plain", "X-Amz-Meta-A", "1"),
			want: objects.CopyInput{SrcBucket: "src", SrcKey: "k", ReplaceMeta: true, Meta: objects.Metadata{ContentType: "text/plain", User: map[string]string{"a": "1"}}}},
		{name: "source conditions", h: header("X-Amz-Copy-Source", "src/k", "X-Amz-Copy-Source-If-Match", `"e"`, "X-Amz-Copy-Source-If-Unmodified-Since", "Sun, 06 Nov 1994 08:49:37 GMT"),
			want: objects.CopyInput{SrcBucket: "src", SrcKey: "k", SrcCond: objects.ReadConditions{IfMatch: `"e"`, IfUnmodifiedSince: sunday}}},
		{name: "write conditions", h: header("X-Amz-Copy-Source", "src/k", "If-None-Match", "*"),
			want: objects.CopyInput{SrcBucket: "src", SrcKey: "k", Cond: objects.WriteConditions{IfNoneMatch: "*"}}},
		{name: "checksum algorithm", h: header("X-Amz-Copy-Source", "src/k", "X-Amz-Checksum-Algorithm", "sha256"),
			want: objects.CopyInput{SrcBucket: "src", SrcKey: "k", ChecksumAlgorithm: checksum.SHA256}},
		{name: "xxhash64 checksum algorithm", h: header("X-Amz-Copy-Source", "src/k", "X-Amz-Checksum-Algorithm", "xxhash64"),
			want: objects.CopyInput{SrcBucket: "src", SrcKey: "k", ChecksumAlgorithm: checksum.XXHASH64}},
		{name: "bad checksum algorithm", h: header("X-Amz-Copy-Source", "src/k", "X-Amz-Checksum-Algorithm", "blake3"), wantErr: s3err.InvalidRequest},
		{name: "bad directive", h: header("X-Amz-Copy-Source", "src/k", "X-Amz-Metadata-Directive", "MERGE"), wantErr: s3err.InvalidArgument},
		{name: "tagging replace", h: header("X-Amz-Copy-Source", "src/k", "X-Amz-Tagging-Directive", "REPLACE", "X-Amz-Tagging", "a=1&b"),
			want: objects.CopyInput{SrcBucket: "src", SrcKey: "k", ReplaceTags: true, Tags: []objects.Tag{{Key: "a", Value: "1"}, {Key: "b"}}}},
		{name: "tagging replace with none", h: header("X-Amz-Copy-Source", "src/k", "X-Amz-Tagging-Directive", "REPLACE"),
			want: objects.CopyInput{SrcBucket: "src", SrcKey: "k", ReplaceTags: true}},
		{name: "tagging copy ignores tags", h: header("X-Amz-Copy-Source", "src/k", "X-Amz-Tagging-Directive", "COPY", "X-Amz-Tagging", "a=1"),
			want: objects.CopyInput{SrcBucket: "src", SrcKey: "k"}},
		{name: "tagging directive unknown", h: header("X-Amz-Copy-Source", "src/k", "X-Amz-Tagging-Directive", "MERGE"), wantErr: s3err.InvalidArgument},
		{name: "sse", h: header("X-Amz-Copy-Source", "src/k", "X-Amz-Server-Side-Encryption", "aws:kms"), wantErr: s3err.NotImplemented},
		{name: "bad source", h: header("X-Amz-Copy-Source", "src"), wantErr: s3err.InvalidArgument},
		{name: "metadata too large", h: header("X-Amz-Copy-Source", "src/k", "X-Amz-Metadata-Directive", "REPLACE", "X-Amz-Meta-A", string(make([]byte, 3000))), wantErr: s3err.MetadataTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseCopyObject(tc.h)
			if code := s3err.CodeOf(err); code != tc.wantErr {
				t.Fatalf("parseCopyObject(%v) error = %v, want code %q", tc.h, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("parseCopyObject(%v) mismatch (-want +got):\n%s", tc.h, diff)
			}
		})
	}
}

func TestXMLChecksums(t *testing.T) {
	// Every algorithm has its own element, named Checksum<algorithm> as in
	// the S3 API, and s3xml.Checksums has no element without an algorithm.
	algs := checksum.Algorithms()
	if n := reflect.TypeFor[s3xml.Checksums]().NumField(); n != len(algs) {
		t.Errorf("s3xml.Checksums has %d fields for %d algorithms", n, len(algs))
	}
	for _, a := range algs {
		x := xmlChecksums(objects.ChecksumValue{Algorithm: a, Value: "v"})
		b, err := xml.Marshal(struct {
			XMLName xml.Name `xml:"R"`
			s3xml.Checksums
		}{Checksums: x})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := string(b), "<R><Checksum"+string(a)+">v</Checksum"+string(a)+"></R>"; got != want {
			t.Errorf("xmlChecksums(%s) marshals to %s, want %s", a, got, want)
		}
		if got := firstChecksum(x); got != "v" {
			t.Errorf("firstChecksum(xmlChecksums(%s)) = %q, want %q", a, got, "v")
		}
	}
	if got := xmlChecksums(objects.ChecksumValue{Algorithm: "BLAKE3", Value: "v"}); got != (s3xml.Checksums{}) {
		t.Errorf("xmlChecksums of an unknown algorithm = %+v, want none", got)
	}
}

// FuzzParseCopySource: any header parses to a source naming a bucket and a
// key, or to InvalidArgument; a key escaped as clients escape it comes
// back whole, with its version.
func FuzzParseCopySource(f *testing.F) {
	for _, s := range []string{"b/k", "/b/k?versionId=abc", "b/k?x.txt", "b/caf%C3%A9", "b/k?versionId=%zz", "//k", "b/k??versionId=null"} {
		f.Add(s, "k?x")
	}
	f.Fuzz(func(t *testing.T, hdr, key string) {
		src, err := parseCopySource(hdr)
		switch {
		case err != nil && s3err.CodeOf(err) != s3err.InvalidArgument:
			t.Fatalf("parseCopySource(%q) = %v, want InvalidArgument", hdr, err)
		case err == nil && (src.bucket == "" || src.key == ""):
			t.Fatalf("parseCopySource(%q) = %+v: no bucket or key", hdr, src)
		}
		if key == "" {
			return
		}
		esc := "bkt/" + url.PathEscape(key) + "?versionId=null"
		src, err = parseCopySource(esc)
		if err != nil || src.bucket != "bkt" || src.key != key || src.versionID != "null" {
			t.Fatalf("parseCopySource(%q) = %+v, %v; want key %q, version null", esc, src, err, key)
		}
	})
}
