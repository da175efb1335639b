package s3api

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/s3err"
)

func TestParseObjectAttributes(t *testing.T) {
	all := map[string]bool{"ETag": true, "Checksum": true, "ObjectParts": true, "StorageClass": true, "ObjectSize": true}
	for _, tc := range []struct {
		name    string
		h       http.Header
		q       string
		want    attributesQuery
		wantErr s3err.Code
	}{
		{name: "all in one line", h: header("X-Amz-Object-Attributes", "ETag,Checksum, ObjectParts,StorageClass,ObjectSize"),
			want: attributesQuery{attrs: all}},
		{name: "several lines", h: http.Header{"X-Amz-Object-Attributes": {"ETag", "ObjectSize"}},
			want: attributesQuery{attrs: map[string]bool{"ETag": true, "ObjectSize": true}}},
		{name: "paging and version", h: header("X-Amz-Object-Attributes", "ObjectParts", "X-Amz-Max-Parts", "2", "X-Amz-Part-Number-Marker", "3"), q: "versionId=null",
			want: attributesQuery{attrs: map[string]bool{"ObjectParts": true}, in: objects.AttributesInput{VersionID: "null", MaxParts: 2, PartNumberMarker: 3}}},
		{name: "missing", h: http.Header{}, wantErr: s3err.InvalidArgument},
		{name: "empty", h: header("X-Amz-Object-Attributes", " , "), wantErr: s3err.InvalidArgument},
		{name: "unknown attribute", h: header("X-Amz-Object-Attributes", "ETag,Owner"), wantErr: s3err.InvalidArgument},
		{name: "case matters", h: header("X-Amz-Object-Attributes", "etag"), wantErr: s3err.InvalidArgument},
		{name: "bad max parts", h: header("X-Amz-Object-Attributes", "ETag", "X-Amz-Max-Parts", "-1"), wantErr: s3err.InvalidArgument},
		{name: "bad marker", h: header("X-Amz-Object-Attributes", "ETag", "X-Amz-Part-Number-Marker", "x"), wantErr: s3err.InvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, _ := url.ParseQuery(tc.q)
			got, err := parseObjectAttributes(tc.h, q)
			if code := s3err.CodeOf(err); code != tc.wantErr {
				t.Fatalf("parseObjectAttributes error = %v, want code %q", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(attributesQuery{})); diff != "" {
				t.Errorf("parseObjectAttributes mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGetObjectAttributes checks the response of a single-part object
// (no ObjectParts), a missing key and a delete marker.
func TestGetObjectAttributes(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	hs.put("bkt", "k", []byte("hello"))
	attrs := header("X-Amz-Object-Attributes", "ETag,Checksum,ObjectParts,StorageClass,ObjectSize")
	rp := hs.do(call{method: "GET", path: "/bkt/k?attributes", header: attrs}).mustStatus(t, http.StatusOK)
	golden(t, "GetObjectAttributes", rp.body)
	if rp.header.Get("Last-Modified") == "" || rp.header.Get("x-amz-version-id") != "" {
		t.Errorf("headers: Last-Modified %q, x-amz-version-id %q; want a date and none", rp.header.Get("Last-Modified"), rp.header.Get("x-amz-version-id"))
	}
	hs.do(call{method: "GET", path: "/bkt/k?attributes"}).want(t, http.StatusBadRequest, s3err.InvalidArgument)
	hs.do(call{method: "GET", path: "/bkt/nope?attributes", header: attrs}).want(t, http.StatusNotFound, s3err.NoSuchKey)
	hs.do(call{method: "GET", path: "/bkt/k?attributes&versionId=bad", header: attrs}).want(t, http.StatusBadRequest, s3err.InvalidArgument)
}
