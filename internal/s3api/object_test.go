package s3api

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/s3err"
)

func TestPutGetObject(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	body := []byte("hello, world")

	rp := hs.put("bkt", "dir/hello.txt", body,
		"Content-Type", "text/plain", "Content-Language", "en", "Cache-Control", "max-age=60",
		"Content-Disposition", "inline", "Expires", "Thu, 01 Dec 1994 16:00:00 GMT",
		"X-Amz-Meta-Color", "blue", "Content-MD5", contentMD5(body))
	if got := rp.header.Get("ETag"); got != etagOf(body) {
		t.Errorf("PutObject ETag = %q, want %q", got, etagOf(body))
	}

	t.Run("get", func(t *testing.T) {
		rp := hs.do(call{method: "GET", path: "/bkt/dir/hello.txt"}).mustStatus(t, http.StatusOK)
		if !bytes.Equal(rp.body, body) {
			t.Errorf("GetObject body %q, want %q", rp.body, body)
		}
		for k, want := range map[string]string{
			"ETag":                etagOf(body),
			"Content-Length":      "12",
			"Content-Type":        "text/plain",
			"Content-Language":    "en",
			"Cache-Control":       "max-age=60",
			"Content-Disposition": "inline",
			"Expires":             "Thu, 01 Dec 1994 16:00:00 GMT",
			"X-Amz-Meta-Color":    "blue",
			"Accept-Ranges":       "bytes",
			"Last-Modified":       "Wed, 01 May 2024 12:00:00 GMT",
			"Server":              "Coffer",
			"Content-Range":       "",
		} {
			if got := rp.header.Get(k); got != want {
				t.Errorf("GetObject %s = %q, want %q", k, got, want)
			}
		}
	})
	t.Run("head", func(t *testing.T) {
		rp := hs.do(call{method: "HEAD", path: "/bkt/dir/hello.txt"}).mustStatus(t, http.StatusOK)
		if len(rp.body) != 0 || rp.header.Get("Content-Length") != "12" || rp.header.Get("ETag") != etagOf(body) {
			t.Errorf("HeadObject = %q, headers %v", rp.body, rp.header)
		}
	})
	t.Run("default content type", func(t *testing.T) {
		hs.put("bkt", "untyped", []byte("x"))
		rp := hs.do(call{method: "HEAD", path: "/bkt/untyped"}).mustStatus(t, http.StatusOK)
		if got := rp.header.Get("Content-Type"); got != "binary/octet-stream" {
			t.Errorf("Content-Type = %q, want binary/octet-stream", got)
		}
	})
	t.Run("range", func(t *testing.T) {
		for _, tc := range []struct {
			rng, body, contentRange string
			status                  int
		}{
			{"bytes=0-4", "hello", "bytes 0-4/12", http.StatusPartialContent},
			{"bytes=7-", "world", "bytes 7-11/12", http.StatusPartialContent},
			{"bytes=-5", "world", "bytes 7-11/12", http.StatusPartialContent},
			{"bytes=7-100", "world", "bytes 7-11/12", http.StatusPartialContent},
			{"bytes=0-1,3-4", "hello, world", "", http.StatusOK},
			{"bytes=5-2", "hello, world", "", http.StatusOK},
			{"pages=1-2", "hello, world", "", http.StatusOK},
		} {
			rp := hs.do(call{method: "GET", path: "/bkt/dir/hello.txt", header: header("Range", tc.rng)}).mustStatus(t, tc.status)
			if string(rp.body) != tc.body || rp.header.Get("Content-Range") != tc.contentRange {
				t.Errorf("Range %s: body %q, Content-Range %q; want %q, %q", tc.rng, rp.body, rp.header.Get("Content-Range"), tc.body, tc.contentRange)
			}
		}
		goldenError(t, hs.do(call{method: "GET", path: "/bkt/dir/hello.txt", header: header("Range", "bytes=12-")}),
			"GetObject_InvalidRange", http.StatusRequestedRangeNotSatisfiable, s3err.InvalidRange)
		rp := hs.do(call{method: "GET", path: "/bkt/dir/hello.txt", header: header("Range", "bytes=-0")})
		rp.want(t, http.StatusRequestedRangeNotSatisfiable, s3err.InvalidRange)
		if cr := rp.header.Get("Content-Range"); cr != "bytes */12" || !strings.Contains(string(rp.body), "<ActualObjectSize>12</ActualObjectSize>") {
			t.Errorf("bytes=-0: Content-Range %q, body %s; want bytes */12 and the object's size", cr, rp.body)
		}
	})
	t.Run("conditions", func(t *testing.T) {
		rp := hs.do(call{method: "GET", path: "/bkt/dir/hello.txt", header: header("If-None-Match", etagOf(body))})
		rp.want(t, http.StatusNotModified, "")
		if len(rp.body) != 0 || rp.header.Get("ETag") != etagOf(body) || rp.header.Get("Last-Modified") == "" {
			t.Errorf("304: body %q, headers %v", rp.body, rp.header)
		}
		hs.do(call{method: "HEAD", path: "/bkt/dir/hello.txt", header: header("If-Modified-Since", "Thu, 02 May 2024 00:00:00 GMT")}).
			want(t, http.StatusNotModified, "")
		goldenError(t, hs.do(call{method: "GET", path: "/bkt/dir/hello.txt", header: header("If-Match", `"0000"`)}),
			"GetObject_PreconditionFailed", http.StatusPreconditionFailed, s3err.PreconditionFailed)
		hs.do(call{method: "GET", path: "/bkt/dir/hello.txt", header: header("If-Unmodified-Since", "Tue, 30 Apr 2024 00:00:00 GMT")}).
			want(t, http.StatusPreconditionFailed, s3err.PreconditionFailed)
		// Invalid dates are ignored.
		hs.do(call{method: "GET", path: "/bkt/dir/hello.txt", header: header("If-Unmodified-Since", "last tuesday")}).
			mustStatus(t, http.StatusOK)
	})
	t.Run("overrides", func(t *testing.T) {
		rp := hs.do(call{method: "GET", path: "/bkt/dir/hello.txt?response-content-type=application/json&response-content-disposition=attachment%3B%20filename%3Dx.json&response-cache-control=no-store"}).
			mustStatus(t, http.StatusOK)
		for k, want := range map[string]string{"Content-Type": "application/json", "Content-Disposition": "attachment; filename=x.json", "Cache-Control": "no-store"} {
			if got := rp.header.Get(k); got != want {
				t.Errorf("override %s = %q, want %q", k, got, want)
			}
		}
	})
	t.Run("versions", func(t *testing.T) {
		hs.do(call{method: "GET", path: "/bkt/dir/hello.txt?versionId=null"}).mustStatus(t, http.StatusOK)
		goldenError(t, hs.do(call{method: "GET", path: "/bkt/dir/hello.txt?versionId=3HL4kqtJlcpXroDTDmJ"}),
			"GetObject_InvalidVersionId", http.StatusBadRequest, s3err.InvalidArgument)
		goldenError(t, hs.do(call{method: "GET", path: "/bkt/dir/hello.txt?versionId=" + strings.Repeat("0", 32)}),
			"GetObject_NoSuchVersion", http.StatusNotFound, s3err.NoSuchVersion)
	})
	t.Run("missing", func(t *testing.T) {
		goldenError(t, hs.do(call{method: "GET", path: "/bkt/nope"}), "GetObject_NoSuchKey", http.StatusNotFound, s3err.NoSuchKey)
		goldenError(t, hs.do(call{method: "GET", path: "/nope/k"}), "GetObject_NoSuchBucket", http.StatusNotFound, s3err.NoSuchBucket)
		rp := hs.do(call{method: "HEAD", path: "/bkt/nope"})
		rp.want(t, http.StatusNotFound, "")
		if len(rp.body) != 0 {
			t.Errorf("HEAD 404 body %q", rp.body)
		}
	})
}

func TestPutObjectErrors(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	body := []byte("hello")

	goldenError(t, hs.do(call{method: "PUT", path: "/bkt/k", body: body, header: header("Content-MD5", contentMD5([]byte("other")))}),
		"PutObject_BadDigest", http.StatusBadRequest, s3err.BadDigest)
	hs.do(call{method: "PUT", path: "/bkt/k", body: body, header: header("Content-MD5", "bad")}).
		want(t, http.StatusBadRequest, s3err.InvalidDigest)
	goldenError(t, hs.do(call{method: "PUT", path: "/bkt/k", body: body, payload: strings.Repeat("0", 64)}),
		"PutObject_XAmzContentSHA256Mismatch", http.StatusBadRequest, s3err.XAmzContentSHA256Mismatch)
	goldenError(t, hs.do(call{method: "PUT", path: "/bkt/k", body: body, noLen: true, payload: "UNSIGNED-PAYLOAD"}),
		"PutObject_MissingContentLength", http.StatusLengthRequired, s3err.MissingContentLength)
	goldenError(t, hs.do(call{method: "PUT", path: "/bkt/" + strings.Repeat("k", 1025), body: body}),
		"PutObject_KeyTooLongError", http.StatusBadRequest, s3err.KeyTooLongError)
	goldenError(t, hs.do(call{method: "PUT", path: "/nope/k", body: body}), "PutObject_NoSuchBucket", http.StatusNotFound, s3err.NoSuchBucket)
	goldenError(t, hs.do(call{method: "PUT", path: "/bkt/k", body: body, header: header("X-Amz-Checksum-Crc32", helloCRC32C)}),
		"PutObject_BadDigest_checksum", http.StatusBadRequest, s3err.BadDigest)
	hs.do(call{method: "PUT", path: "/bkt/k", body: body, header: header("X-Amz-Website-Redirect-Location", "/a")}).
		want(t, http.StatusNotImplemented, s3err.NotImplemented)
	// A 6 GiB body is refused from its headers, before a byte is read.
	r := hs.request(call{method: "PUT", path: "/bkt/k", payload: "UNSIGNED-PAYLOAD", prepare: func(r *http.Request) {
		r.ContentLength = 6 << 30
		r.Header.Set("Content-Length", "6442450944")
	}})
	goldenError(t, hs.serve(r), "PutObject_EntityTooLarge", http.StatusBadRequest, s3err.EntityTooLarge)
	// Nothing above stored anything.
	hs.do(call{method: "HEAD", path: "/bkt/k"}).want(t, http.StatusNotFound, "")

	// Conditional writes.
	hs.do(call{method: "PUT", path: "/bkt/k", body: body, header: header("If-None-Match", "*")}).mustStatus(t, http.StatusOK)
	goldenError(t, hs.do(call{method: "PUT", path: "/bkt/k", body: body, header: header("If-None-Match", "*")}),
		"PutObject_PreconditionFailed", http.StatusPreconditionFailed, s3err.PreconditionFailed)
	hs.do(call{method: "PUT", path: "/bkt/k", body: body, header: header("If-Match", etagOf(body))}).mustStatus(t, http.StatusOK)
	hs.do(call{method: "PUT", path: "/bkt/k", body: body, header: header("If-Match", `"00"`)}).want(t, http.StatusPreconditionFailed, s3err.PreconditionFailed)

	// Checksums.
	rp := hs.do(call{method: "PUT", path: "/bkt/sum", body: body, header: header("X-Amz-Checksum-Crc32", helloCRC32)}).mustStatus(t, http.StatusOK)
	if got := rp.header.Get("x-amz-checksum-crc32"); got != helloCRC32 {
		t.Errorf("PutObject x-amz-checksum-crc32 = %q, want %q", got, helloCRC32)
	}
	rp = hs.do(call{method: "GET", path: "/bkt/sum"}).mustStatus(t, http.StatusOK)
	if got := rp.header.Get("x-amz-checksum-crc32"); got != "" {
		t.Errorf("GetObject without checksum mode sent x-amz-checksum-crc32 %q", got)
	}
	rp = hs.do(call{method: "GET", path: "/bkt/sum", header: header("X-Amz-Checksum-Mode", "ENABLED")}).mustStatus(t, http.StatusOK)
	if got := rp.header.Get("x-amz-checksum-crc32"); got != helloCRC32 {
		t.Errorf("GetObject with checksum mode: x-amz-checksum-crc32 = %q, want %q", got, helloCRC32)
	}
	rp = hs.do(call{method: "GET", path: "/bkt/sum", header: header("X-Amz-Checksum-Mode", "ENABLED", "Range", "bytes=0-1")}).mustStatus(t, http.StatusPartialContent)
	if got := rp.header.Get("x-amz-checksum-crc32"); got != "" {
		t.Errorf("ranged GetObject sent x-amz-checksum-crc32 %q", got)
	}
	// An empty object, with Content-Length: 0.
	rp = hs.do(call{method: "PUT", path: "/bkt/empty"}).mustStatus(t, http.StatusOK)
	if got := rp.header.Get("ETag"); got != etagOf(nil) {
		t.Errorf("empty PutObject ETag %q, want %q", got, etagOf(nil))
	}
}

func TestDeleteObjects(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	for _, k := range []string{"a", "b", "c"} {
		hs.put("bkt", k, []byte(k))
	}
	hs.do(call{method: "DELETE", path: "/bkt/a"}).mustStatus(t, http.StatusNoContent)
	hs.do(call{method: "DELETE", path: "/bkt/a"}).mustStatus(t, http.StatusNoContent) // absent: still 204
	hs.do(call{method: "DELETE", path: "/bkt/a?versionId=v1"}).want(t, http.StatusBadRequest, s3err.InvalidArgument)
	hs.do(call{method: "DELETE", path: "/bkt/a?versionId=" + strings.Repeat("0", 32)}).mustStatus(t, http.StatusNoContent)
	hs.do(call{method: "DELETE", path: "/nope/a"}).want(t, http.StatusNotFound, s3err.NoSuchBucket)

	doc := xmlBody(`
<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Object><Key>b</Key></Object>
  <Object><Key>missing</Key></Object>
  <Object><Key>c</Key><VersionId>null</VersionId></Object>
  <Object><Key>c</Key><VersionId>3HL4kqtJlcpXroDTDmJ</VersionId></Object>
</Delete>`)
	rp := hs.do(call{method: "POST", path: "/bkt?delete", body: doc, header: header("Content-MD5", contentMD5(doc))}).mustStatus(t, http.StatusOK)
	golden(t, "DeleteObjects", rp.body)
	hs.do(call{method: "HEAD", path: "/bkt/b"}).want(t, http.StatusNotFound, "")
	hs.do(call{method: "HEAD", path: "/bkt/c"}).want(t, http.StatusNotFound, "")

	quiet := xmlBody(`<Delete><Quiet>true</Quiet><Object><Key>x</Key></Object><Object><Key>y</Key><VersionId>v</VersionId></Object></Delete>`)
	rp = hs.do(call{method: "POST", path: "/bkt?delete", body: quiet, header: header("X-Amz-Checksum-Crc32", crc32Of(quiet))}).mustStatus(t, http.StatusOK)
	golden(t, "DeleteObjects_quiet", rp.body)

	goldenError(t, hs.do(call{method: "POST", path: "/bkt?delete", body: doc}), "DeleteObjects_InvalidRequest", http.StatusBadRequest, s3err.InvalidRequest)
	goldenError(t, hs.do(call{method: "POST", path: "/bkt?delete", body: doc, header: header("Content-MD5", contentMD5(quiet))}),
		"DeleteObjects_BadDigest", http.StatusBadRequest, s3err.BadDigest)
	hs.do(call{method: "POST", path: "/bkt?delete", body: doc, header: header("X-Amz-Checksum-Crc32", crc32Of(quiet))}).
		want(t, http.StatusBadRequest, s3err.BadDigest)
	bad := []byte("<Delete><Object><Key>x</Key></Object>")
	goldenError(t, hs.do(call{method: "POST", path: "/bkt?delete", body: bad, header: header("Content-MD5", contentMD5(bad))}),
		"DeleteObjects_MalformedXML", http.StatusBadRequest, s3err.MalformedXML)
	hs.do(call{method: "POST", path: "/nope?delete", body: quiet, header: header("Content-MD5", contentMD5(quiet))}).
		want(t, http.StatusNotFound, s3err.NoSuchBucket)
}

func TestCopyObject(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, Config{})
	hs.mkBucket("src")
	hs.mkBucket("dst")
	body := []byte("copy me")
	hs.put("src", "a b+c", body, "Content-Type", "text/plain", "X-Amz-Meta-K", "v")

	rp := hs.do(call{method: "PUT", path: "/dst/copy", header: header("X-Amz-Copy-Source", "/src/a%20b%2Bc")}).mustStatus(t, http.StatusOK)
	golden(t, "CopyObject", rp.body)
	rp = hs.do(call{method: "GET", path: "/dst/copy"}).mustStatus(t, http.StatusOK)
	if string(rp.body) != string(body) || rp.header.Get("Content-Type") != "text/plain" || rp.header.Get("X-Amz-Meta-K") != "v" {
		t.Errorf("copied object: %q, headers %v", rp.body, rp.header)
	}
	hs.do(call{method: "PUT", path: "/dst/replaced", header: header("X-Amz-Copy-Source", "src/a%20b%2Bc?versionId=null",
		"X-Amz-Metadata-Directive", "REPLACE", "Content-Type", "application/x-new")}).mustStatus(t, http.StatusOK)
	rp = hs.do(call{method: "HEAD", path: "/dst/replaced"}).mustStatus(t, http.StatusOK)
	if rp.header.Get("Content-Type") != "application/x-new" || rp.header.Get("X-Amz-Meta-K") != "" {
		t.Errorf("REPLACE copy headers %v", rp.header)
	}

	goldenError(t, hs.do(call{method: "PUT", path: "/dst/x", header: header("X-Amz-Copy-Source", "/src/missing")}),
		"CopyObject_NoSuchKey", http.StatusNotFound, s3err.NoSuchKey)
	goldenError(t, hs.do(call{method: "PUT", path: "/dst/x", header: header("X-Amz-Copy-Source", "nokey")}),
		"CopyObject_InvalidArgument", http.StatusBadRequest, s3err.InvalidArgument)
	hs.do(call{method: "PUT", path: "/dst/x", header: header("X-Amz-Copy-Source", "/src/a%20b%2Bc", "X-Amz-Copy-Source-If-None-Match", etagOf(body))}).
		want(t, http.StatusPreconditionFailed, s3err.PreconditionFailed)
	hs.do(call{method: "PUT", path: "/dst/x", header: header("X-Amz-Copy-Source", "/src/a%20b%2Bc", "X-Amz-Copy-Source-If-Match", `"nope"`)}).
		want(t, http.StatusPreconditionFailed, s3err.PreconditionFailed)
	hs.do(call{method: "PUT", path: "/src/a%20b%2Bc", header: header("X-Amz-Copy-Source", "/src/a%20b%2Bc")}).
		want(t, http.StatusBadRequest, s3err.InvalidRequest)
}

func TestACL(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	hs.put("bkt", "k", []byte("x"))
	owner := iam.RootCanonicalID()

	rp := hs.do(call{method: "GET", path: "/bkt?acl"}).mustStatus(t, http.StatusOK)
	golden(t, "GetBucketAcl", rp.body)
	rp = hs.do(call{method: "GET", path: "/bkt/k?acl"}).mustStatus(t, http.StatusOK)
	golden(t, "GetObjectAcl", rp.body)
	hs.do(call{method: "GET", path: "/bkt/nope?acl"}).want(t, http.StatusNotFound, s3err.NoSuchKey)
	hs.do(call{method: "GET", path: "/nope?acl"}).want(t, http.StatusNotFound, s3err.NoSuchBucket)

	hs.do(call{method: "PUT", path: "/bkt?acl", header: header("X-Amz-Acl", "private")}).mustStatus(t, http.StatusOK)
	hs.do(call{method: "PUT", path: "/bkt/k?acl", header: header("X-Amz-Acl", "bucket-owner-full-control")}).mustStatus(t, http.StatusOK)
	private := xmlBody(`
<AccessControlPolicy xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Owner><ID>` + owner + `</ID></Owner>
  <AccessControlList><Grant>
    <Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="CanonicalUser"><ID>` + owner + `</ID></Grantee>
    <Permission>FULL_CONTROL</Permission>
  </Grant></AccessControlList>
</AccessControlPolicy>`)
	hs.do(call{method: "PUT", path: "/bkt/k?acl", body: private}).mustStatus(t, http.StatusOK)
	hs.do(call{method: "PUT", path: "/bkt?acl", body: private}).mustStatus(t, http.StatusOK)
	hs.do(call{method: "PUT", path: "/bkt?acl", body: []byte("<AccessControlPolicy>")}).want(t, http.StatusBadRequest, s3err.MalformedACLError)
	hs.do(call{method: "PUT", path: "/bkt?acl", body: private, header: header("X-Amz-Acl", "private")}).want(t, http.StatusBadRequest, s3err.UnexpectedContent)
	hs.do(call{method: "PUT", path: "/bkt?acl"}).want(t, http.StatusBadRequest, s3err.MissingSecurityHeader)
	goldenError(t, hs.do(call{method: "PUT", path: "/bkt?acl", body: bytes.Repeat([]byte(" "), maxConfigBody+1)}),
		"PutBucketAcl_MaxMessageLengthExceeded", http.StatusBadRequest, s3err.MaxMessageLengthExceeded)
	goldenError(t, hs.do(call{method: "PUT", path: "/bkt?acl", header: header("X-Amz-Grant-Read", "id=x")}),
		"PutBucketAcl_InvalidArgument", http.StatusBadRequest, s3err.InvalidArgument)
	hs.do(call{method: "PUT", path: "/bkt?acl", header: header("X-Amz-Grant-Read", `emailAddress="a@example.com"`)}).
		want(t, http.StatusBadRequest, s3err.UnresolvableGrantByEmailAddress)
	hs.do(call{method: "PUT", path: "/bkt?acl", header: header("X-Amz-Acl", "public-read", "X-Amz-Grant-Read", "uri=http://acs.amazonaws.com/groups/global/AllUsers")}).
		want(t, http.StatusBadRequest, s3err.InvalidRequest)
	hs.do(call{method: "PUT", path: "/bkt?acl", header: header("X-Amz-Acl", "everyone")}).want(t, http.StatusBadRequest, s3err.InvalidArgument)
	hs.do(call{method: "PUT", path: "/bkt/nope?acl", header: header("X-Amz-Acl", "private")}).want(t, http.StatusNotFound, s3err.NoSuchKey)

	// public-read opens GET of the object to anonymous callers; the
	// bucket's ACL stays private, so listing does not open.
	hs.do(call{method: "GET", path: "/bkt/k", anon: true}).want(t, http.StatusForbidden, s3err.AccessDenied)
	hs.do(call{method: "PUT", path: "/bkt/k?acl", header: header("X-Amz-Acl", "public-read")}).mustStatus(t, http.StatusOK)
	rp = hs.do(call{method: "GET", path: "/bkt/k?acl"}).mustStatus(t, http.StatusOK)
	golden(t, "GetObjectAcl_public-read", rp.body)
	hs.do(call{method: "GET", path: "/bkt/k", anon: true}).mustStatus(t, http.StatusOK)
	hs.do(call{method: "GET", path: "/bkt", anon: true}).want(t, http.StatusForbidden, s3err.AccessDenied)
	hs.do(call{method: "PUT", path: "/bkt/anon", body: []byte("x"), anon: true}).want(t, http.StatusForbidden, s3err.AccessDenied)
	// A bucket ACL granting AllUsers WRITE and READ opens writes and lists.
	hs.do(call{method: "PUT", path: "/bkt?acl", header: header("X-Amz-Acl", "public-read-write")}).mustStatus(t, http.StatusOK)
	hs.do(call{method: "GET", path: "/bkt", anon: true}).mustStatus(t, http.StatusOK)
	hs.do(call{method: "PUT", path: "/bkt/anon", body: []byte("x"), anon: true}).mustStatus(t, http.StatusOK)
	// An object written anonymously belongs to the bucket's owner.
	hs.do(call{method: "GET", path: "/bkt/anon", anon: true}).want(t, http.StatusForbidden, s3err.AccessDenied)
	hs.do(call{method: "GET", path: "/bkt/anon"}).mustStatus(t, http.StatusOK)

	// Object Ownership BucketOwnerEnforced turns ACLs off.
	oc := []byte(`<OwnershipControls><Rule><ObjectOwnership>BucketOwnerEnforced</ObjectOwnership></Rule></OwnershipControls>`)
	goldenError(t, hs.do(call{method: "GET", path: "/bkt?ownershipControls"}), "GetBucketOwnershipControls_NotFound",
		http.StatusNotFound, s3err.OwnershipControlsNotFoundError)
	hs.do(call{method: "PUT", path: "/bkt?ownershipControls", body: oc}).mustStatus(t, http.StatusOK)
	rp = hs.do(call{method: "GET", path: "/bkt?ownershipControls"}).mustStatus(t, http.StatusOK)
	golden(t, "GetBucketOwnershipControls", rp.body)
	hs.do(call{method: "GET", path: "/bkt/k", anon: true}).want(t, http.StatusForbidden, s3err.AccessDenied)
	hs.do(call{method: "PUT", path: "/bkt/k?acl", header: header("X-Amz-Acl", "public-read")}).
		want(t, http.StatusBadRequest, s3err.AccessControlListNotSupported)
	hs.do(call{method: "PUT", path: "/bkt/k2", body: []byte("x"), header: header("X-Amz-Acl", "public-read")}).
		want(t, http.StatusBadRequest, s3err.AccessControlListNotSupported)
	hs.do(call{method: "PUT", path: "/bkt?ownershipControls", body: []byte(`<OwnershipControls><Rule><ObjectOwnership>Nobody</ObjectOwnership></Rule></OwnershipControls>`)}).
		want(t, http.StatusBadRequest, s3err.MalformedXML)
	hs.do(call{method: "DELETE", path: "/bkt?ownershipControls"}).mustStatus(t, http.StatusNoContent)
	hs.do(call{method: "GET", path: "/bkt/k", anon: true}).mustStatus(t, http.StatusOK)

	// CreateBucket with an ACL, and the conflict with BucketOwnerEnforced.
	hs.do(call{method: "PUT", path: "/pub", header: header("X-Amz-Acl", "public-read")}).mustStatus(t, http.StatusOK)
	hs.do(call{method: "GET", path: "/pub", anon: true}).mustStatus(t, http.StatusOK)
	hs.do(call{method: "PUT", path: "/enforced", header: header("X-Amz-Acl", "public-read", "X-Amz-Object-Ownership", "BucketOwnerEnforced")}).
		want(t, http.StatusBadRequest, s3err.InvalidBucketAclWithObjectOwnership)
	hs.do(call{method: "HEAD", path: "/enforced"}).want(t, http.StatusNotFound, "")
}

func TestVerifyBodyDigest(t *testing.T) {
	body := []byte("hello")
	trailer := func(v string) func(string) string {
		return func(name string) string {
			if name == "x-amz-checksum-crc32" {
				return v
			}
			return ""
		}
	}
	for _, tc := range []struct {
		name    string
		h       http.Header
		trailer func(string) string
		want    s3err.Code
	}{
		{name: "md5", h: header("Content-MD5", helloMD5)},
		{name: "crc32", h: header("X-Amz-Checksum-Crc32", helloCRC32)},
		{name: "sha256", h: header("X-Amz-Checksum-Sha256", helloSHA256)},
		{name: "both", h: header("Content-MD5", helloMD5, "X-Amz-Checksum-Crc32", helloCRC32)},
		{name: "trailer", h: header("X-Amz-Trailer", "x-amz-checksum-crc32"), trailer: trailer(helloCRC32)},
		{name: "none", h: header(), want: s3err.InvalidRequest},
		{name: "trailer without stream", h: header("X-Amz-Trailer", "x-amz-checksum-crc32"), want: s3err.InvalidRequest},
		{name: "trailer missing", h: header("X-Amz-Trailer", "x-amz-checksum-crc32"), trailer: trailer(""), want: s3err.InvalidRequest},
		{name: "trailer wrong", h: header("X-Amz-Trailer", "x-amz-checksum-crc32"), trailer: trailer(helloCRC32C), want: s3err.BadDigest},
		{name: "md5 wrong", h: header("Content-MD5", contentMD5([]byte("x"))), want: s3err.BadDigest},
		{name: "md5 right checksum wrong", h: header("Content-MD5", helloMD5, "X-Amz-Checksum-Crc32", helloCRC32C), want: s3err.BadDigest},
		{name: "md5 malformed", h: header("Content-MD5", "x"), want: s3err.InvalidDigest},
		{name: "two checksums", h: header("X-Amz-Checksum-Crc32", helloCRC32, "X-Amz-Checksum-Crc32c", helloCRC32C), want: s3err.InvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := s3err.CodeOf(verifyBodyDigest(tc.h, body, tc.trailer)); got != tc.want {
				t.Errorf("verifyBodyDigest(%v) code %q, want %q", tc.h, got, tc.want)
			}
		})
	}
}

// TestKeyTooLong: every operation on a key longer than 1024 bytes is
// 400 KeyTooLongError, reads included (not 404).
func TestKeyTooLong(t *testing.T) {
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	long := "/bkt/" + strings.Repeat("k", 1025)
	for _, method := range []string{http.MethodGet, http.MethodHead, http.MethodDelete} {
		hs.do(call{method: method, path: long}).want(t, http.StatusBadRequest, s3err.KeyTooLongError)
	}
	hs.do(call{method: http.MethodPut, path: long, body: []byte("x")}).want(t, http.StatusBadRequest, s3err.KeyTooLongError)
	hs.do(call{method: http.MethodGet, path: long + "?tagging"}).want(t, http.StatusBadRequest, s3err.KeyTooLongError)
	// 1024 bytes is a key.
	hs.put("bkt", strings.Repeat("k", 1024), []byte("x")).mustStatus(t, http.StatusOK)
}

// TestMissingKeyWithoutListBucket: a caller that may read a bucket's
// objects but not list it learns nothing from a missing key: 403, as S3
// answers; with s3:ListBucket it gets 404 NoSuchKey.
func TestMissingKeyWithoutListBucket(t *testing.T) {
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	hs.put("bkt", "there", []byte("x"))
	getOnly := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"}]}`
	if err := hs.iam.PutPolicy(t.Context(), "get-only", []byte(getOnly)); err != nil {
		t.Fatal(err)
	}
	reader := hs.user("getter", "get-only")
	lister := hs.user("lister", "readonly")
	hs.do(call{method: http.MethodGet, path: "/bkt/there", cred: reader}).mustStatus(t, http.StatusOK)
	hs.do(call{method: http.MethodGet, path: "/bkt/missing", cred: reader}).want(t, http.StatusForbidden, s3err.AccessDenied)
	hs.do(call{method: http.MethodHead, path: "/bkt/missing", cred: reader}).want(t, http.StatusForbidden, "")
	hs.do(call{method: http.MethodGet, path: "/bkt/missing", cred: lister}).want(t, http.StatusNotFound, s3err.NoSuchKey)
	hs.do(call{method: http.MethodGet, path: "/bkt/missing"}).want(t, http.StatusNotFound, s3err.NoSuchKey)
}

// TestDeniedOrMissing: a denied request on what does not exist gets S3's
// answer for that: NoSuchBucket for a missing bucket, whoever asks (but
// CreateBucket, denied as it was); NoSuchKey for a read of a missing
// object by a caller who may list the bucket (here through a public-read
// bucket ACL); AccessDenied otherwise.
func TestDeniedOrMissing(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, Config{})
	hs.mkBucket("priv")
	hs.mkBucket("pub")
	hs.do(call{method: "PUT", path: "/pub?acl", header: header("X-Amz-Acl", "public-read")}).mustStatus(t, http.StatusOK)
	hs.put("pub", "private-object", []byte("x"))
	for _, c := range []call{
		{method: "GET", path: "/gone/k"}, {method: "DELETE", path: "/gone/k"},
		{method: "GET", path: "/gone"}, {method: "PUT", path: "/gone/k", body: []byte("x")},
	} {
		c.anon = true
		hs.do(c).want(t, http.StatusNotFound, s3err.NoSuchBucket)
	}
	hs.do(call{method: "HEAD", path: "/gone/k", anon: true}).want(t, http.StatusNotFound, "") // no body
	hs.do(call{method: "PUT", path: "/gone", anon: true}).want(t, http.StatusForbidden, s3err.AccessDenied)
	hs.do(call{method: "GET", path: "/pub/missing", anon: true}).want(t, http.StatusNotFound, s3err.NoSuchKey)
	hs.do(call{method: "GET", path: "/pub/private-object", anon: true}).want(t, http.StatusForbidden, s3err.AccessDenied)
	hs.do(call{method: "GET", path: "/priv/missing", anon: true}).want(t, http.StatusForbidden, s3err.AccessDenied)
	hs.do(call{method: "DELETE", path: "/pub/missing", anon: true}).want(t, http.StatusForbidden, s3err.AccessDenied)

	// A key hidden by a delete marker is missing to such a caller too,
	// but the marker's headers are not theirs to see.
	hs.do(call{method: "PUT", path: "/pub?versioning", body: []byte("<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>")}).mustStatus(t, http.StatusOK)
	hs.put("pub", "deleted", []byte("x"))
	hs.do(call{method: "DELETE", path: "/pub/deleted"}).mustStatus(t, http.StatusNoContent)
	rp := hs.do(call{method: "GET", path: "/pub/deleted"})
	rp.want(t, http.StatusNotFound, s3err.NoSuchKey)
	if rp.header.Get("x-amz-delete-marker") != "true" {
		t.Fatalf("the owner's 404 lacks x-amz-delete-marker: %v", rp.header)
	}
	rp = hs.do(call{method: "GET", path: "/pub/deleted", anon: true})
	rp.want(t, http.StatusNotFound, s3err.NoSuchKey)
	if v, m := rp.header.Get("x-amz-version-id"), rp.header.Get("x-amz-delete-marker"); v != "" || m != "" {
		t.Errorf("a caller who may only list got x-amz-version-id %q, x-amz-delete-marker %q", v, m)
	}
}
