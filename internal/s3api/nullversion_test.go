package s3api

import (
	"net/http"
	"strings"
	"testing"
)

// TestNullVersionID checks x-amz-version-id for null versions, as S3 sends
// it: none in a bucket that never had versioning configured; "null" on
// reads (GET, HEAD, tagging, attributes, a copy's source) of an object
// written before versioning was enabled or while it was suspended; none on
// a write while suspended (the PutObject reference's "versioning suspended"
// example has none); "null" when asked for the null version by ID.
// See https://docs.aws.amazon.com/AmazonS3/latest/userguide/manage-objects-versioned-bucket.html
// and https://docs.aws.amazon.com/AmazonS3/latest/userguide/AddingObjectstoVersionSuspendedBuckets.html
func TestNullVersionID(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, Config{})
	hs.mkBucket("nullv")
	setVersioning := func(status string) {
		t.Helper()
		hs.do(call{method: "PUT", path: "/nullv?versioning",
			body: []byte("<VersioningConfiguration><Status>" + status + "</Status></VersioningConfiguration>")}).mustStatus(t, http.StatusOK)
	}
	attrs := header("X-Amz-Object-Attributes", "ETag")
	// reads are the requests that report the version they read.
	// vid, if set, asks for a version by ID.
	reads := func(key, vid string) []call {
		q := ""
		if vid != "" {
			q = "versionId=" + vid + "&"
		}
		return []call{
			{method: "GET", path: "/nullv/" + key + "?" + q},
			{method: "HEAD", path: "/nullv/" + key + "?" + q},
			{method: "GET", path: "/nullv/" + key + "?" + q + "tagging"},
			{method: "GET", path: "/nullv/" + key + "?" + q + "attributes", header: attrs},
		}
	}
	check := func(when string, cs []call, want string) {
		t.Helper()
		for _, c := range cs {
			rp := hs.do(c).mustStatus(t, http.StatusOK)
			if got, ok := rp.header["X-Amz-Version-Id"]; want == "" && ok || want != "" && (len(got) != 1 || got[0] != want) {
				t.Errorf("%s: %s %s: x-amz-version-id %q, want %q", when, c.method, c.path, got, want)
			}
		}
	}
	copyFrom := func(src, dst string) reply {
		t.Helper()
		return hs.do(call{method: "PUT", path: "/nullv/" + dst, header: header("X-Amz-Copy-Source", "/nullv/"+src)}).mustStatus(t, http.StatusOK)
	}

	// Never versioned: no version ID anywhere, but the object is the null
	// version to ListObjectVersions and to versionId=null.
	check("unversioned PutObject", []call{{method: "PUT", path: "/nullv/pre", body: []byte("pre")}}, "")
	check("unversioned", reads("pre", ""), "")
	check("unversioned, by ID", reads("pre", "null"), "null")
	if rp := copyFrom("pre", "c0"); rp.header.Get("x-amz-copy-source-version-id") != "" || rp.header.Get("x-amz-version-id") != "" {
		t.Errorf("unversioned CopyObject: headers %v, want no version IDs", rp.header)
	}
	if rp := hs.do(call{method: "GET", path: "/nullv?versions&prefix=pre"}).mustStatus(t, http.StatusOK); !strings.Contains(string(rp.body), "<VersionId>null</VersionId>") {
		t.Errorf("ListObjectVersions of an unversioned bucket:\n%s\nwant VersionId null", rp.body)
	}

	// Enabled: the object written before is the null version, and says so.
	setVersioning("Enabled")
	check("enabled, object written before", reads("pre", ""), "null")
	check("enabled, object written before, by ID", reads("pre", "null"), "null")
	rp := copyFrom("pre", "c1")
	if got := rp.header.Get("x-amz-copy-source-version-id"); got != "null" {
		t.Errorf("CopyObject of a null version: x-amz-copy-source-version-id %q, want null", got)
	}
	if got := rp.header.Get("x-amz-version-id"); got == "" || got == "null" {
		t.Errorf("CopyObject into an enabled bucket: x-amz-version-id %q, want a new ID", got)
	}

	// Suspended: writes make null versions, reported on reads, not on the
	// write.
	setVersioning("Suspended")
	check("suspended PutObject", []call{{method: "PUT", path: "/nullv/sus", body: []byte("sus")}}, "")
	check("suspended", reads("sus", ""), "null")
	check("suspended, object written before enabled", reads("pre", ""), "null")
	if rp := copyFrom("pre", "c2"); rp.header.Get("x-amz-copy-source-version-id") != "null" || rp.header.Get("x-amz-version-id") != "" {
		t.Errorf("suspended CopyObject of a null version: headers %v, want source version null and no x-amz-version-id", rp.header)
	}
	rp = hs.do(call{method: "DELETE", path: "/nullv/pre?versionId=null"}).mustStatus(t, http.StatusNoContent)
	if got := rp.header.Get("x-amz-version-id"); got != "null" {
		t.Errorf("DeleteObject?versionId=null: x-amz-version-id %q, want null", got)
	}
}
