package s3api

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/s3err"
)

// taggingHeaderCases is shared by TestParseTaggingHeader and
// FuzzParseTaggingHeader's seeds.
var taggingHeaderCases = []struct {
	name, hdr string
	want      []objects.Tag
	wantErr   s3err.Code
}{
	{name: "absent", hdr: ""},
	{name: "one", hdr: "a=1", want: []objects.Tag{{Key: "a", Value: "1"}}},
	{name: "order kept", hdr: "z=1&a=2", want: []objects.Tag{{Key: "z", Value: "1"}, {Key: "a", Value: "2"}}},
	{name: "no value", hdr: "foo=bar&bar", want: []objects.Tag{{Key: "foo", Value: "bar"}, {Key: "bar"}}},
	{name: "empty value", hdr: "a=", want: []objects.Tag{{Key: "a"}}},
	{name: "escaped", hdr: "caf%C3%A9=a+b%26c", want: []objects.Tag{{Key: "café", Value: "a b&c"}}},
	{name: "empty parts skipped", hdr: "a=1&&b=2&", want: []objects.Tag{{Key: "a", Value: "1"}, {Key: "b", Value: "2"}}},
	{name: "equals in value", hdr: "a=b=c", want: []objects.Tag{{Key: "a", Value: "b=c"}}},
	{name: "duplicate key", hdr: "a=1&a=2", wantErr: s3err.InvalidArgument},
	{name: "bad escape", hdr: "a=%zz", wantErr: s3err.InvalidArgument},
}

func TestParseTaggingHeader(t *testing.T) {
	for _, tc := range taggingHeaderCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseTaggingHeader(header("X-Amz-Tagging", tc.hdr))
			if code := s3err.CodeOf(err); code != tc.wantErr {
				t.Fatalf("parseTaggingHeader(%q) error = %v, want code %q", tc.hdr, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("parseTaggingHeader(%q) mismatch (-want +got):\n%s", tc.hdr, diff)
			}
		})
	}
}

// FuzzParseTaggingHeader checks that the parser never panics, answers only
// InvalidArgument, and that what it parses round-trips through the
// encoding clients use (url.QueryEscape of key and value).
func FuzzParseTaggingHeader(f *testing.F) {
	for _, tc := range taggingHeaderCases {
		f.Add(tc.hdr)
	}
	f.Fuzz(func(t *testing.T, hdr string) {
		if len(hdr) > 8<<10 {
			return
		}
		tags, err := parseTaggingHeader(header("X-Amz-Tagging", hdr))
		if err != nil {
			if s3err.CodeOf(err) != s3err.InvalidArgument {
				t.Fatalf("parseTaggingHeader(%q) = %v, want InvalidArgument", hdr, err)
			}
			return
		}
		var parts []string
		for _, tg := range tags {
			parts = append(parts, url.QueryEscape(tg.Key)+"="+url.QueryEscape(tg.Value))
		}
		again, err := parseTaggingHeader(header("X-Amz-Tagging", strings.Join(parts, "&")))
		if err != nil {
			// Only a tag with an empty key can fail to round-trip:
			// two of them are duplicates.
			if !slicesHasEmptyKey(tags) {
				t.Fatalf("re-parse of %q: %v", hdr, err)
			}
			return
		}
		if diff := cmp.Diff(tags, again, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("round trip of %q (-first +again):\n%s", hdr, diff)
		}
	})
}

func slicesHasEmptyKey(ts []objects.Tag) bool {
	for _, t := range ts {
		if t.Key == "" {
			return true
		}
	}
	return false
}

// TestTagging drives object and bucket tagging through the handler:
// x-amz-tagging on PUT, the tagging count on GET and HEAD, Put/Get/Delete
// of object and bucket tags, and S3's errors.
func TestTagging(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	hs.put("bkt", "k", []byte("data"), "X-Amz-Tagging", "a=1&b")
	rp := hs.do(call{method: "HEAD", path: "/bkt/k"}).mustStatus(t, http.StatusOK)
	if got := rp.header.Get("x-amz-tagging-count"); got != "2" {
		t.Errorf("HEAD x-amz-tagging-count = %q, want 2", got)
	}
	rp = hs.do(call{method: "GET", path: "/bkt/k?tagging"}).mustStatus(t, http.StatusOK)
	golden(t, "GetObjectTagging", rp.body)

	doc := []byte(`<Tagging><TagSet><Tag><Key>project</Key><Value>blue</Value></Tag></TagSet></Tagging>`)
	hs.do(call{method: "PUT", path: "/bkt/k?tagging", body: doc}).mustStatus(t, http.StatusOK)
	rp = hs.do(call{method: "GET", path: "/bkt/k"}).mustStatus(t, http.StatusOK)
	if got := rp.header.Get("x-amz-tagging-count"); got != "1" {
		t.Errorf("GET x-amz-tagging-count after PutObjectTagging = %q, want 1", got)
	}
	hs.do(call{method: "DELETE", path: "/bkt/k?tagging"}).mustStatus(t, http.StatusNoContent)
	rp = hs.do(call{method: "GET", path: "/bkt/k?tagging"}).mustStatus(t, http.StatusOK)
	golden(t, "GetObjectTagging_empty", rp.body)
	if rp := hs.do(call{method: "HEAD", path: "/bkt/k"}); rp.header.Get("x-amz-tagging-count") != "" {
		t.Errorf("HEAD of an untagged object has x-amz-tagging-count %q", rp.header.Get("x-amz-tagging-count"))
	}

	var eleven strings.Builder
	eleven.WriteString("<Tagging><TagSet>")
	for i := range 11 {
		eleven.WriteString("<Tag><Key>k" + strconv.Itoa(i) + "</Key><Value>v</Value></Tag>")
	}
	eleven.WriteString("</TagSet></Tagging>")
	goldenError(t, hs.do(call{method: "PUT", path: "/bkt/k?tagging", body: []byte(eleven.String())}),
		"PutObjectTagging_InvalidTag", http.StatusBadRequest, s3err.InvalidTag)
	hs.do(call{method: "PUT", path: "/bkt/k?tagging", body: []byte(`<Tagging><TagSet><Tag><Value>v</Value></Tag></TagSet></Tagging>`)}).
		want(t, http.StatusBadRequest, s3err.MalformedXML)
	hs.do(call{method: "PUT", path: "/bkt/nope?tagging", body: doc}).want(t, http.StatusNotFound, s3err.NoSuchKey)
	hs.do(call{method: "GET", path: "/bkt/nope?tagging"}).want(t, http.StatusNotFound, s3err.NoSuchKey)
	hs.do(call{method: "PUT", path: "/bkt/k2", body: []byte("x"), header: header("X-Amz-Tagging", "aws:x=1")}).
		want(t, http.StatusBadRequest, s3err.InvalidTag)
	hs.do(call{method: "HEAD", path: "/bkt/k2"}).want(t, http.StatusNotFound, "")

	// Bucket tags.
	goldenError(t, hs.do(call{method: "GET", path: "/bkt?tagging"}), "GetBucketTagging_NoSuchTagSet", http.StatusNotFound, s3err.NoSuchTagSet)
	hs.do(call{method: "PUT", path: "/bkt?tagging", body: doc}).mustStatus(t, http.StatusNoContent)
	rp = hs.do(call{method: "GET", path: "/bkt?tagging"}).mustStatus(t, http.StatusOK)
	golden(t, "GetBucketTagging", rp.body)
	hs.do(call{method: "DELETE", path: "/bkt?tagging"}).mustStatus(t, http.StatusNoContent)
	hs.do(call{method: "GET", path: "/bkt?tagging"}).want(t, http.StatusNotFound, s3err.NoSuchTagSet)
	hs.do(call{method: "PUT", path: "/nope?tagging", body: doc}).want(t, http.StatusNotFound, s3err.NoSuchBucket)
}

// TestTagConditions checks that bucket policies see an object's tags
// (s3:ExistingObjectTag/<key>) and a write's tags (s3:RequestObjectTag/<key>,
// from x-amz-tagging or a PutObjectTagging body), as the ceph/s3-tests
// tagging policy tests use them.
func TestTagConditions(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	bob := hs.user("bob") // no identity policy: only the bucket policy speaks for him
	policy := `{"Version":"2012-10-17","Statement":[
	 {"Effect":"Allow","Principal":{"AWS":["*"]},"Action":["s3:GetObject","s3:GetObjectTagging"],"Resource":"arn:aws:s3:::bkt/*",
	  "Condition":{"StringEquals":{"s3:ExistingObjectTag/security":"public"}}},
	 {"Effect":"Allow","Principal":{"AWS":["*"]},"Action":["s3:PutObject","s3:PutObjectTagging"],"Resource":"arn:aws:s3:::bkt/*",
	  "Condition":{"StringEquals":{"s3:RequestObjectTag/security":"public"}}}]}`
	hs.do(call{method: "PUT", path: "/bkt?policy", body: []byte(policy)}).mustStatus(t, http.StatusNoContent)
	hs.put("bkt", "public", []byte("p"), "X-Amz-Tagging", "security=public")
	hs.put("bkt", "private", []byte("q"), "X-Amz-Tagging", "security=private")
	hs.put("bkt", "untagged", []byte("u"))

	hs.do(call{method: "GET", path: "/bkt/public", cred: bob}).mustStatus(t, http.StatusOK)
	hs.do(call{method: "GET", path: "/bkt/public?tagging", cred: bob}).mustStatus(t, http.StatusOK)
	hs.do(call{method: "GET", path: "/bkt/private", cred: bob}).want(t, http.StatusForbidden, s3err.AccessDenied)
	hs.do(call{method: "GET", path: "/bkt/untagged", cred: bob}).want(t, http.StatusForbidden, s3err.AccessDenied)
	hs.do(call{method: "GET", path: "/bkt/absent", cred: bob}).want(t, http.StatusForbidden, s3err.AccessDenied)

	hs.do(call{method: "PUT", path: "/bkt/new", body: []byte("n"), cred: bob}).want(t, http.StatusForbidden, s3err.AccessDenied)
	hs.do(call{method: "PUT", path: "/bkt/new", body: []byte("n"), cred: bob, header: header("X-Amz-Tagging", "security=public")}).mustStatus(t, http.StatusOK)
	pub := []byte(`<Tagging><TagSet><Tag><Key>security</Key><Value>public</Value></Tag></TagSet></Tagging>`)
	priv := []byte(`<Tagging><TagSet><Tag><Key>security</Key><Value>private</Value></Tag></TagSet></Tagging>`)
	hs.do(call{method: "PUT", path: "/bkt/untagged?tagging", body: priv, cred: bob}).want(t, http.StatusForbidden, s3err.AccessDenied)
	hs.do(call{method: "PUT", path: "/bkt/untagged?tagging", body: pub, cred: bob}).mustStatus(t, http.StatusOK)
	hs.do(call{method: "GET", path: "/bkt/untagged", cred: bob}).mustStatus(t, http.StatusOK)
}
