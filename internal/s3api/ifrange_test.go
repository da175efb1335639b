package s3api

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

// TestIfRange: a Range with If-Range is served (206) only while the
// validator names the object as it is — its ETag, strongly compared —
// and otherwise the whole object is (200), so that a resumed download of
// an object overwritten meanwhile never joins the old head to the new
// tail. A date is never honoured: an object overwritten within the same
// second has the same Last-Modified. Without a Range, If-Range is
// ignored.
func TestIfRange(t *testing.T) {
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	old := hs.put("bkt", "k", []byte("AAAAAAAAAA"))
	oldETag := old.header.Get("ETag")
	head := hs.do(call{method: "HEAD", path: "/bkt/k"}).mustStatus(t, http.StatusOK)
	lastMod := head.header.Get("Last-Modified")
	lm, err := http.ParseTime(lastMod)
	if err != nil {
		t.Fatal(err)
	}

	get := func(method, ifRange string, ranged bool) reply {
		kv := []string{}
		if ranged {
			kv = append(kv, "Range", "bytes=5-")
		}
		if ifRange != "" {
			kv = append(kv, "If-Range", ifRange)
		}
		return hs.do(call{method: method, path: "/bkt/k", header: header(kv...)})
	}
	for _, tc := range []struct {
		name, ifRange string
		ranged        bool
		status        int
		body          string
	}{
		{"ETag of the object", oldETag, true, http.StatusPartialContent, "AAAAA"},
		{"its Last-Modified (a date: weak)", lastMod, true, http.StatusOK, "AAAAAAAAAA"},
		{"weak ETag", "W/" + oldETag, true, http.StatusOK, "AAAAAAAAAA"},
		{"another ETag", `"0123456789abcdef0123456789abcdef"`, true, http.StatusOK, "AAAAAAAAAA"},
		{"a date before", lm.Add(-time.Second).Format(http.TimeFormat), true, http.StatusOK, "AAAAAAAAAA"},
		{"a date after", lm.Add(time.Second).Format(http.TimeFormat), true, http.StatusOK, "AAAAAAAAAA"},
		{"neither", "yesterday", true, http.StatusOK, "AAAAAAAAAA"},
		{"no Range", `"nothing"`, false, http.StatusOK, "AAAAAAAAAA"},
	} {
		rp := get("GET", tc.ifRange, tc.ranged)
		if rp.status != tc.status || string(rp.body) != tc.body {
			t.Errorf("%s: GET %d %q, want %d %q", tc.name, rp.status, rp.body, tc.status, tc.body)
		}
		if h := get("HEAD", tc.ifRange, tc.ranged); h.status != tc.status || h.header.Get("Content-Length") != strconv.Itoa(len(tc.body)) {
			t.Errorf("%s: HEAD %d, Content-Length %s; want %d, %d", tc.name, h.status, h.header.Get("Content-Length"), tc.status, len(tc.body))
		}
	}

	// Overwritten since: the old validators now get the whole new object.
	hs.put("bkt", "k", []byte("BBBBBBBBBBBBBBBBBBBB"))
	for _, v := range []string{oldETag} {
		rp := get("GET", v, true)
		if rp.status != http.StatusOK || string(rp.body) != "BBBBBBBBBBBBBBBBBBBB" {
			t.Errorf("If-Range %s of the overwritten object: %d %q, want 200 and the whole new object", v, rp.status, rp.body)
		}
	}
	// An unsatisfiable Range with a validator that does not hold is not
	// an error: the whole object.
	rp := hs.do(call{method: "GET", path: "/bkt/k", header: header("Range", "bytes=100-", "If-Range", oldETag)})
	if rp.status != http.StatusOK || len(rp.body) != 20 {
		t.Errorf("unsatisfiable Range, stale If-Range: %d, %d bytes; want 200 and 20", rp.status, len(rp.body))
	}
}

// TestNotModifiedKeepsCaching: a 304 carries the Cache-Control and Expires
// a 200 would have (RFC 9110 section 15.4.5), so that a cache in front of
// a public bucket can refresh its copy's freshness, besides the
// validators.
func TestNotModifiedKeepsCaching(t *testing.T) {
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	const expires = "Wed, 21 Oct 2037 07:28:00 GMT"
	etag := hs.put("bkt", "k", []byte("cached"), "Cache-Control", "max-age=60", "Expires", expires).header.Get("ETag")
	for _, method := range []string{"GET", "HEAD"} {
		rp := hs.do(call{method: method, path: "/bkt/k", header: header("If-None-Match", etag)})
		rp.want(t, http.StatusNotModified, "")
		for k, want := range map[string]string{"Cache-Control": "max-age=60", "Expires": expires, "ETag": etag} {
			if got := rp.header.Get(k); got != want {
				t.Errorf("%s 304: %s = %q, want %q", method, k, got, want)
			}
		}
	}
	// As a 200 would, with the request's overrides of them: a URL made to
	// revalidate every time must not turn cacheable for a year on a 304.
	rp := hs.do(call{method: "GET", path: "/bkt/k?response-cache-control=no-cache&response-expires=0", header: header("If-None-Match", etag)})
	rp.want(t, http.StatusNotModified, "")
	if cc, ex := rp.header.Get("Cache-Control"), rp.header.Get("Expires"); cc != "no-cache" || ex != "0" {
		t.Errorf("304 with response-cache-control and response-expires: Cache-Control %q, Expires %q; want no-cache, 0", cc, ex)
	}
}
