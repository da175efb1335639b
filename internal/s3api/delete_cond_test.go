package s3api

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/google/go-cmp/cmp"

	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/s3err"
)

func TestParseDeleteConditions(t *testing.T) {
	size := int64(42)
	zero := int64(0)
	for _, tc := range []struct {
		name    string
		h       http.Header
		want    objects.DeleteConditions
		wantErr s3err.Code
	}{
		{name: "none", h: header()},
		{name: "etag", h: header("If-Match", ` "abc" `), want: objects.DeleteConditions{IfMatch: `"abc"`}},
		{name: "HTTP date", h: header("X-Amz-If-Match-Last-Modified-Time", "Sun, 06 Nov 1994 08:49:37 GMT"),
			want: objects.DeleteConditions{IfMatchLastModified: &sunday}},
		{name: "ISO 8601", h: header("X-Amz-If-Match-Last-Modified-Time", "1994-11-06T08:49:37Z"),
			want: objects.DeleteConditions{IfMatchLastModified: &sunday}},
		{name: "size", h: header("X-Amz-If-Match-Size", "42"), want: objects.DeleteConditions{IfMatchSize: &size}},
		{name: "size 0", h: header("X-Amz-If-Match-Size", "0"), want: objects.DeleteConditions{IfMatchSize: &zero}},
		{name: "bad date", h: header("X-Amz-If-Match-Last-Modified-Time", "yesterday"), wantErr: s3err.InvalidArgument},
		{name: "bad size", h: header("X-Amz-If-Match-Size", "4k"), wantErr: s3err.InvalidArgument},
		{name: "negative size", h: header("X-Amz-If-Match-Size", "-1"), wantErr: s3err.InvalidArgument},
		{name: "signed size", h: header("X-Amz-If-Match-Size", "+5"), wantErr: s3err.InvalidArgument},
		// Go's zero time is a time like any other: no object was written
		// then, so the delete fails rather than going through unconditionally.
		{name: "year 1", h: header("X-Amz-If-Match-Last-Modified-Time", "Mon, 01 Jan 0001 00:00:00 GMT"),
			want: objects.DeleteConditions{IfMatchLastModified: &time.Time{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseDeleteConditions(tc.h)
			if code := s3err.CodeOf(err); code != tc.wantErr {
				t.Fatalf("parseDeleteConditions(%v) error = %v, want code %q", tc.h, err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("parseDeleteConditions(%v) mismatch (-want +got):\n%s", tc.h, diff)
			}
		})
	}
}

// TestConditionalDelete drives conditional DeleteObject and DeleteObjects
// over HTTP: the status codes and error bodies, and the read permission
// a condition on the ETag, time or size needs besides s3:DeleteObject.
func TestConditionalDelete(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	body := []byte("conditional")
	etag := etagOf(body)
	hs.put("bkt", "k", body)

	hs.do(call{method: "DELETE", path: "/bkt/k", header: header("If-Match", `"0000"`)}).want(t, http.StatusPreconditionFailed, s3err.PreconditionFailed)
	hs.do(call{method: "DELETE", path: "/bkt/k", header: header("X-Amz-If-Match-Size", "1")}).want(t, http.StatusPreconditionFailed, s3err.PreconditionFailed)
	hs.do(call{method: "DELETE", path: "/bkt/k", header: header("X-Amz-If-Match-Size", "x")}).want(t, http.StatusBadRequest, s3err.InvalidArgument)
	hs.do(call{method: "DELETE", path: "/bkt/k", header: header("X-Amz-If-Match-Last-Modified-Time", "Thu, 01 Jan 2015 00:00:00 GMT")}).
		want(t, http.StatusPreconditionFailed, s3err.PreconditionFailed)
	hs.do(call{method: "HEAD", path: "/bkt/k"}).mustStatus(t, http.StatusOK)

	// A caller that may delete but not read learns nothing from an ETag,
	// time or size: AccessDenied before anything is compared. If-Match: *
	// only asks whether the object exists, which s3:DeleteObject allows.
	delOnly := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:DeleteObject","Resource":"arn:aws:s3:::bkt/*"}]}`
	if err := hs.iam.PutPolicy(t.Context(), "delete-only", []byte(delOnly)); err != nil {
		t.Fatal(err)
	}
	deleter := hs.user("deleter", "delete-only")
	for _, h := range []http.Header{
		header("If-Match", etag), header("If-Match", `"0000"`),
		header("X-Amz-If-Match-Size", "11"), header("X-Amz-If-Match-Last-Modified-Time", "Thu, 01 Jan 2015 00:00:00 GMT"),
	} {
		hs.do(call{method: "DELETE", path: "/bkt/k", header: h, cred: deleter}).want(t, http.StatusForbidden, s3err.AccessDenied)
	}
	cond := xmlBody(`<Delete><Object><Key>k</Key><ETag>` + etag + `</ETag></Object></Delete>`)
	rp := hs.do(call{method: "POST", path: "/bkt?delete", body: cond, header: header("Content-MD5", contentMD5(cond)), cred: deleter}).mustStatus(t, http.StatusOK)
	if !strings.Contains(string(rp.body), "<Code>AccessDenied</Code>") {
		t.Fatalf("DeleteObjects with an ETag by a caller who may not read: %s", rp.body)
	}
	hs.do(call{method: "HEAD", path: "/bkt/k"}).mustStatus(t, http.StatusOK)
	hs.do(call{method: "DELETE", path: "/bkt/k", header: header("If-Match", "*"), cred: deleter}).mustStatus(t, http.StatusNoContent)
	hs.do(call{method: "HEAD", path: "/bkt/k"}).want(t, http.StatusNotFound, "")

	// DeleteObjects: each entry's conditions decide for it alone.
	hs.put("bkt", "a", body)
	hs.put("bkt", "b", body)
	doc := xmlBody(`<Delete>
  <Object><Key>a</Key><ETag>` + etag + `</ETag><Size>11</Size></Object>
  <Object><Key>b</Key><ETag>"0000"</ETag></Object>
  <Object><Key>b</Key><Size>12</Size></Object>
  <Object><Key>b</Key><LastModifiedTime>2015-01-01T00:00:00Z</LastModifiedTime></Object>
</Delete>`)
	rp = hs.do(call{method: "POST", path: "/bkt?delete", body: doc, header: header("Content-MD5", contentMD5(doc))}).mustStatus(t, http.StatusOK)
	if got := strings.Count(string(rp.body), "<Code>PreconditionFailed</Code>"); got != 3 || !strings.Contains(string(rp.body), "<Deleted><Key>a</Key>") {
		t.Fatalf("DeleteObjects: %d PreconditionFailed, want 3, and a deleted:\n%s", got, rp.body)
	}
	hs.do(call{method: "HEAD", path: "/bkt/a"}).want(t, http.StatusNotFound, "")
	hs.do(call{method: "HEAD", path: "/bkt/b"}).mustStatus(t, http.StatusOK)
	for _, entry := range []string{`<LastModifiedTime>yesterday</LastModifiedTime>`, `<Size>-1</Size>`} {
		bad := xmlBody(`<Delete><Object><Key>b</Key>` + entry + `</Object></Delete>`)
		hs.do(call{method: "POST", path: "/bkt?delete", body: bad, header: header("Content-MD5", contentMD5(bad))}).want(t, http.StatusBadRequest, s3err.MalformedXML)
	}
	hs.do(call{method: "HEAD", path: "/bkt/b"}).mustStatus(t, http.StatusOK)
}

// TestConditionalDeleteSDK: aws-sdk-go-v2's IfMatch, IfMatchSize and
// IfMatchLastModifiedTime, in DeleteObject's headers and DeleteObjects'
// entries, as the SDK serializes them.
func TestConditionalDeleteSDK(t *testing.T) {
	t.Parallel()
	hs := newHarnessAt(t, Config{}, time.Now)
	c := sdkClient(hs)
	ctx := t.Context()
	bucket := aws.String("cond")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: bucket}); err != nil {
		t.Fatal(err)
	}
	put := func(key string) *s3.HeadObjectOutput {
		t.Helper()
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: aws.String(key), Body: strings.NewReader("twelve bytes")}); err != nil {
			t.Fatal(err)
		}
		h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: bucket, Key: aws.String(key)})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	wantPrecondition := func(what string, err error) {
		t.Helper()
		var ae smithy.APIError
		if !errors.As(err, &ae) || ae.ErrorCode() != "PreconditionFailed" {
			t.Fatalf("%s: %v, want PreconditionFailed", what, err)
		}
	}
	h := put("k")
	old := time.Date(2015, 1, 1, 0, 0, 0, 0, time.UTC)
	_, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: bucket, Key: aws.String("k"), IfMatch: aws.String(`"0000"`)})
	wantPrecondition("IfMatch", err)
	_, err = c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: bucket, Key: aws.String("k"), IfMatchSize: aws.Int64(11)})
	wantPrecondition("IfMatchSize", err)
	_, err = c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: bucket, Key: aws.String("k"), IfMatchLastModifiedTime: &old})
	wantPrecondition("IfMatchLastModifiedTime", err)
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: bucket, Key: aws.String("k"),
		IfMatch: h.ETag, IfMatchSize: aws.Int64(12), IfMatchLastModifiedTime: h.LastModified}); err != nil {
		t.Fatalf("DeleteObject whose conditions hold: %v", err)
	}
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: bucket, Key: aws.String("k")}); err == nil {
		t.Fatal("object still there after the conditional delete")
	}

	a := put("a")
	put("b")
	out, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: bucket, Delete: &types.Delete{Objects: []types.ObjectIdentifier{
		{Key: aws.String("a"), ETag: a.ETag, Size: aws.Int64(12), LastModifiedTime: a.LastModified},
		{Key: aws.String("b"), LastModifiedTime: &old},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Deleted) != 1 || aws.ToString(out.Deleted[0].Key) != "a" ||
		len(out.Errors) != 1 || aws.ToString(out.Errors[0].Key) != "b" || aws.ToString(out.Errors[0].Code) != "PreconditionFailed" {
		t.Fatalf("DeleteObjects: deleted %+v, errors %+v", out.Deleted, out.Errors)
	}
}

func FuzzParseDeleteConditions(f *testing.F) {
	f.Add(`"abc"`, "Sun, 06 Nov 1994 08:49:37 GMT", "42")
	f.Add("*", "1994-11-06T08:49:37Z", "0")
	f.Add("", "yesterday", "-1")
	f.Add(" x ", "", "4k")
	f.Fuzz(func(t *testing.T, ifMatch, lastModified, size string) {
		h := http.Header{
			"If-Match":                          {ifMatch},
			"X-Amz-If-Match-Last-Modified-Time": {lastModified},
			"X-Amz-If-Match-Size":               {size},
		}
		c, err := parseDeleteConditions(h)
		if err != nil {
			if code := s3err.CodeOf(err); code != s3err.InvalidArgument {
				t.Fatalf("parseDeleteConditions error %v, want InvalidArgument", err)
			}
			return
		}
		if c.IfMatch != strings.TrimSpace(ifMatch) {
			t.Fatalf("If-Match %q became %q", ifMatch, c.IfMatch)
		}
		if v := strings.TrimSpace(lastModified); v == "" {
			if c.IfMatchLastModified != nil {
				t.Fatalf("no time became %v", *c.IfMatchLastModified)
			}
		} else if want, ok := parseTimestamp(v); !ok || c.IfMatchLastModified == nil || !c.IfMatchLastModified.Equal(want) {
			t.Fatalf("time %q became %v, want %v (%v)", lastModified, c.IfMatchLastModified, want, ok)
		}
		if v := strings.TrimSpace(size); v == "" {
			if c.IfMatchSize != nil {
				t.Fatalf("no size became %d", *c.IfMatchSize)
			}
		} else if n, err := strconv.ParseInt(v, 10, 64); err != nil || n < 0 || c.IfMatchSize == nil || *c.IfMatchSize != n {
			t.Fatalf("size %q became %v", size, c.IfMatchSize)
		}
	})
}

// TestConditionalDeletePolicy: a policy that allows deletes only with
// If-Match (s3:if-match not null, as AWS's guide to enforcing conditional
// deletes writes it) holds for DeleteObjects entry by entry: the entry's
// ETag is its s3:if-match, and an If-Match header on the DeleteObjects
// request itself stands for nothing.
func TestConditionalDeletePolicy(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	body := []byte("guarded")
	etag := etagOf(body)
	const guarded = `{"Version":"2012-10-17","Statement":[
  {"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"},
  {"Effect":"Allow","Action":"s3:DeleteObject","Resource":"arn:aws:s3:::bkt/*","Condition":{"Null":{"s3:if-match":"false"}}}]}`
	if err := hs.iam.PutPolicy(t.Context(), "guarded-delete", []byte(guarded)); err != nil {
		t.Fatal(err)
	}
	u := hs.user("careful", "guarded-delete")
	hs.put("bkt", "k", body)
	hs.do(call{method: "DELETE", path: "/bkt/k", cred: u}).want(t, http.StatusForbidden, s3err.AccessDenied)

	bare := xmlBody(`<Delete><Object><Key>k</Key></Object></Delete>`)
	rp := hs.do(call{method: "POST", path: "/bkt?delete", body: bare, cred: u,
		header: header("Content-MD5", contentMD5(bare), "If-Match", etag)}).mustStatus(t, http.StatusOK)
	if !strings.Contains(string(rp.body), "<Code>AccessDenied</Code>") {
		t.Fatalf("DeleteObjects entry without an ETag, If-Match on the request: %s", rp.body)
	}
	hs.do(call{method: "HEAD", path: "/bkt/k"}).mustStatus(t, http.StatusOK)

	withETag := xmlBody(`<Delete><Object><Key>k</Key><ETag>` + etag + `</ETag></Object></Delete>`)
	rp = hs.do(call{method: "POST", path: "/bkt?delete", body: withETag, cred: u,
		header: header("Content-MD5", contentMD5(withETag))}).mustStatus(t, http.StatusOK)
	if !strings.Contains(string(rp.body), "<Deleted><Key>k</Key>") {
		t.Fatalf("DeleteObjects entry with its ETag: %s", rp.body)
	}
	hs.do(call{method: "HEAD", path: "/bkt/k"}).want(t, http.StatusNotFound, "")
}

// TestDeleteObjectsVersionTags: policies on a DeleteObjects entry that
// names a version test that version's tags (s3:ExistingObjectTag), not
// the current version's.
func TestDeleteObjectsVersionTags(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	hs.do(call{method: "PUT", path: "/bkt?versioning", body: []byte("<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>")}).mustStatus(t, http.StatusOK)
	secret := hs.put("bkt", "k", []byte("old"), "X-Amz-Tagging", "secret=true").mustStatus(t, http.StatusOK).header.Get("x-amz-version-id")
	hs.put("bkt", "k", []byte("new")).mustStatus(t, http.StatusOK)
	const pol = `{"Version":"2012-10-17","Statement":[
  {"Effect":"Allow","Action":"s3:*","Resource":["arn:aws:s3:::bkt","arn:aws:s3:::bkt/*"]},
  {"Effect":"Deny","Action":"s3:GetObjectVersion","Resource":"arn:aws:s3:::bkt/*","Condition":{"StringEquals":{"s3:ExistingObjectTag/secret":"true"}}}]}`
	if err := hs.iam.PutPolicy(t.Context(), "no-secret-versions", []byte(pol)); err != nil {
		t.Fatal(err)
	}
	u := hs.user("prober", "no-secret-versions")
	doc := xmlBody(`<Delete><Object><Key>k</Key><VersionId>` + secret + `</VersionId><Size>3</Size></Object></Delete>`)
	rp := hs.do(call{method: "POST", path: "/bkt?delete", body: doc, cred: u, header: header("Content-MD5", contentMD5(doc))}).mustStatus(t, http.StatusOK)
	if !strings.Contains(string(rp.body), "<Code>AccessDenied</Code>") {
		t.Fatalf("DeleteObjects of a secret version with its size: %s", rp.body)
	}
	hs.do(call{method: "HEAD", path: "/bkt/k?versionId=" + secret}).mustStatus(t, http.StatusOK)
}
