package console

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coffer-s3/coffer/internal/acl"
	"github.com/coffer-s3/coffer/internal/audit"
	"github.com/coffer-s3/coffer/internal/blob"
	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/s3err"
	"github.com/coffer-s3/coffer/internal/sigv4"
)

// put stores an object directly through the service.
func (f *fixture) put(t *testing.T, bucket, key, data string) {
	t.Helper()
	if _, err := f.objects.PutObject(t.Context(), bucket, key, objects.PutInput{Size: int64(len(data)),
		Meta: objects.Metadata{ContentType: "text/plain", User: map[string]string{"owner": "test"}}}, strings.NewReader(data)); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) bucket(t *testing.T, name string) {
	t.Helper()
	if err := f.objects.CreateBucket(t.Context(), name, objects.CreateBucketInput{}); err != nil {
		t.Fatal(err)
	}
}

// exists reports whether bucket/key exists.
func (f *fixture) exists(t *testing.T, bucket, key string) bool {
	t.Helper()
	_, err := f.objects.HeadObject(t.Context(), bucket, key, objects.GetOptions{})
	return err == nil
}

// raw sends a request with a raw body to one of the upload endpoints, the
// way browser.js does: the CSRF token in the header (csrf "" for none).
func (f *fixture) raw(t *testing.T, path, cookie, csrf string, body []byte, header map[string]string) *http.Response {
	t.Helper()
	r := httptest.NewRequest("POST", testOrigin+path, bytes.NewReader(body))
	r.Header.Set("Origin", testOrigin)
	r.RemoteAddr = "192.0.2.10:4711"
	r.AddCookie(&http.Cookie{Name: sessionCookie, Value: cookie})
	if csrf != "" {
		r.Header.Set(csrfHeader, csrf)
	}
	for k, v := range header {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, r)
	return w.Result()
}

// answer decodes a JSON answer of an upload endpoint.
func answer(t *testing.T, resp *http.Response) map[string]string {
	t.Helper()
	var m map[string]string
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatalf("status %d, answer not JSON: %v", resp.StatusCode, err)
	}
	return m
}

// attr returns the value of attribute attr of the element with id.
func attr(page, id, attr string) (string, bool) {
	m := regexp.MustCompile(`id="` + regexp.QuoteMeta(id) + `"[^>]*` + attr + `="([^"]*)"|` + attr + `="([^"]*)"[^>]*id="` + regexp.QuoteMeta(id) + `"`).FindStringSubmatch(page)
	if m == nil {
		return "", false
	}
	return html.UnescapeString(m[1] + m[2]), true
}

func TestObjectListPagingAndFolders(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, 1)
	f.bucket(t, "data")
	const many = 2*listPageSize + 37
	want := map[string]bool{}
	for i := range many {
		k := fmt.Sprintf("many/k%05d", i)
		f.put(t, "data", k, "x")
		want[k] = true
	}
	for _, k := range []string{"top.txt", "docs/one.txt", "docs/two.txt", "docs/sub/three.txt", "docs/sub/deeper/four.txt"} {
		f.put(t, "data", k, "y")
	}
	id, _ := f.signIn(t, testRootKey, testRootSecret)
	get := func(path string) string {
		t.Helper()
		resp := f.do(t, request{method: "GET", path: path, cookie: id})
		b := body(t, resp)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d\n%s", path, resp.StatusCode, b)
		}
		return b
	}

	// The top level: folders and the object, no paging.
	b := get("/objects/data")
	for _, s := range []string{`data-prefix="docs/"`, `data-prefix="many/"`, `data-key="top.txt"`} {
		if !strings.Contains(b, s) {
			t.Errorf("top level lacks %s", s)
		}
	}
	if strings.Contains(b, "docs/one.txt") || strings.Contains(b, `id="next-page"`) {
		t.Errorf("top level shows a nested key or a next page")
	}

	// Breadcrumbs of a nested folder, each linking to its prefix.
	b = get("/objects/data?prefix=" + url.QueryEscape("docs/sub/"))
	for _, s := range []string{`href="/objects/data?prefix=docs%2f"`, `href="/objects/data?prefix=docs%2fsub%2f"`, `data-prefix="docs/sub/deeper/"`, `data-key="docs/sub/three.txt"`} {
		if !strings.Contains(b, s) {
			t.Errorf("docs/sub/ lacks %s\n%s", s, b)
		}
	}

	// Search by prefix within a folder.
	b = get("/objects/data?prefix=" + url.QueryEscape("docs/t"))
	if !strings.Contains(b, `data-key="docs/two.txt"`) || strings.Contains(b, "docs/one.txt") || !strings.Contains(b, `id="search-note"`) {
		t.Errorf("search docs/t:\n%s", b)
	}

	// Paging: follow the next-page links; every key shows exactly once,
	// in order, pageSize at a time.
	var got []string
	next, pages := "/objects/data?prefix=many%2f", 0
	for next != "" {
		b := get(next)
		pages++
		keys := regexp.MustCompile(`<tr data-key="([^"]+)"`).FindAllStringSubmatch(b, -1)
		if len(keys) > listPageSize {
			t.Fatalf("page %d has %d rows", pages, len(keys))
		}
		for _, k := range keys {
			got = append(got, k[1])
		}
		if pages > 1 && !strings.Contains(b, `id="first-page"`) {
			t.Errorf("page %d has no link to the first page", pages)
		}
		next, _ = attr(b, "next-page", "href")
	}
	if pages != 3 || len(got) != many {
		t.Fatalf("%d pages, %d keys; want 3 pages of %d keys", pages, len(got), many)
	}
	for i, k := range got {
		if !want[k] || i > 0 && got[i-1] >= k {
			t.Fatalf("key %d %q: unknown or out of order", i, k)
		}
	}

	// Details: size, ETag, content type, user metadata.
	b = get("/objects/data/object?key=" + url.QueryEscape("docs/one.txt"))
	for _, s := range []string{`id="prop-size">1 (1 bytes)`, "415290769594460e2e485922904f345d", "text/plain", "x-amz-meta-owner", `id="download"`} {
		if !strings.Contains(b, s) {
			t.Errorf("details lack %q\n%s", s, b)
		}
	}
	if resp := f.do(t, request{method: "GET", path: "/objects/data/object?key=nope", cookie: id}); resp.StatusCode != http.StatusNotFound {
		t.Errorf("details of a missing key: %d, want 404", resp.StatusCode)
	}

	// Download: the bytes, as an attachment that is never rendered.
	resp := f.do(t, request{method: "GET", path: "/objects/data/download?key=" + url.QueryEscape("docs/sub/three.txt"), cookie: id})
	if b := body(t, resp); resp.StatusCode != 200 || b != "y" {
		t.Errorf("download: %d %q", resp.StatusCode, b)
	}
	if cd, ct := resp.Header.Get("Content-Disposition"), resp.Header.Get("Content-Type"); cd != `attachment; filename=three.txt` || ct != "application/octet-stream" ||
		!strings.Contains(resp.Header.Get("Content-Security-Policy"), "sandbox") {
		t.Errorf("download headers: Content-Disposition %q, Content-Type %q, CSP %q", cd, ct, resp.Header.Get("Content-Security-Policy"))
	}
}

// browsePolicy lets alice list the bucket shared under alice/ only, and
// read, write and delete the objects there.
const browsePolicy = `{"Version":"2012-10-17","Statement":[
 {"Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::shared","Condition":{"StringLike":{"s3:prefix":"alice/*"}}},
 {"Effect":"Allow","Action":["s3:GetObject","s3:PutObject","s3:DeleteObject","s3:AbortMultipartUpload"],"Resource":"arn:aws:s3:::shared/alice/*"}]}`

func TestObjectBrowserFollowsPolicies(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, 1)
	ctx := t.Context()
	f.bucket(t, "shared")
	f.bucket(t, "private")
	f.put(t, "shared", "alice/a.txt", "alice's")
	f.put(t, "shared", "alice/b.txt", "alice's too")
	f.put(t, "shared", "bob/secret.txt", "bob's")
	f.put(t, "private", "p.txt", "private")
	if err := f.iam.PutPolicy(ctx, "browse", []byte(browsePolicy)); err != nil {
		t.Fatal(err)
	}
	f.user(t, "alice", "alice-password", "browse")
	id, csrf := f.signIn(t, "alice", "alice-password")

	for _, tc := range []struct {
		path   string
		status int
	}{
		{"/objects/shared?prefix=alice%2F", http.StatusOK},
		{"/objects/shared", http.StatusForbidden}, // s3:prefix "" is not alice/*
		{"/objects/shared?prefix=bob%2F", http.StatusForbidden},
		{"/objects/private", http.StatusForbidden},
		{"/objects/missing", http.StatusForbidden}, // denied before existence is checked, as in S3
		{"/objects/shared/object?key=alice%2Fa.txt", http.StatusOK},
		{"/objects/shared/object?key=bob%2Fsecret.txt", http.StatusForbidden},
		{"/objects/shared/download?key=alice%2Fa.txt", http.StatusOK},
		{"/objects/shared/download?key=bob%2Fsecret.txt", http.StatusForbidden},
		{"/objects/private/download?key=p.txt", http.StatusForbidden},
	} {
		resp := f.do(t, request{method: "GET", path: tc.path, cookie: id})
		b := body(t, resp)
		if resp.StatusCode != tc.status {
			t.Errorf("GET %s: %d, want %d", tc.path, resp.StatusCode, tc.status)
		}
		if tc.status == http.StatusForbidden && (strings.Contains(b, "secret.txt\"") || strings.Contains(b, "p.txt\"") || strings.Contains(b, "bob's")) {
			t.Errorf("GET %s shows a foreign object:\n%s", tc.path, b)
		}
	}
	if b := body(t, f.do(t, request{method: "GET", path: "/objects", cookie: id})); strings.Contains(b, "private") || !strings.Contains(b, `data-bucket="shared"`) {
		t.Errorf("alice's bucket chooser:\n%s", b)
	}

	// A selection with a key alice may delete and one she may not: the
	// first goes, the second stays and is named.
	resp := f.do(t, request{method: "POST", path: "/objects/shared/delete", cookie: id,
		form: url.Values{"csrf": {csrf}, "key": {"alice/a.txt", "bob/secret.txt"}, "prefix": {"alice/"}}})
	if b := body(t, resp); resp.StatusCode != 200 || !strings.Contains(b, `id="confirm"`) || !f.exists(t, "shared", "alice/a.txt") {
		t.Fatalf("delete without confirm=1: %d, want the confirmation page and no change\n%s", resp.StatusCode, b)
	}
	resp = f.do(t, request{method: "POST", path: "/objects/shared/delete", cookie: id,
		form: url.Values{"csrf": {csrf}, "key": {"alice/a.txt", "bob/secret.txt"}, "prefix": {"alice/"}, "confirm": {"1"}}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/objects/shared?prefix=alice%2F" {
		t.Fatalf("delete: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if f.exists(t, "shared", "alice/a.txt") || !f.exists(t, "shared", "bob/secret.txt") {
		t.Errorf("after the delete: alice/a.txt exists %v, bob/secret.txt exists %v; want false, true",
			f.exists(t, "shared", "alice/a.txt"), f.exists(t, "shared", "bob/secret.txt"))
	}
	b := body(t, f.do(t, request{method: "GET", path: "/objects/shared?prefix=alice%2F", cookie: id}))
	if !strings.Contains(b, "Deleted 1 object. Your policies do not allow deleting bob/secret.txt.") {
		t.Errorf("the list after the delete does not say what happened:\n%s", b)
	}

	// Uploads: alice/ yes, bob/ no, another bucket no.
	for _, tc := range []struct {
		path   string
		status int
	}{
		{"/objects/shared/upload?key=alice%2Fnew.txt", http.StatusOK},
		{"/objects/shared/upload?key=bob%2Fnew.txt", http.StatusForbidden},
		{"/objects/private/upload?key=new.txt", http.StatusForbidden},
		{"/objects/shared/uploads?key=bob%2Fbig.bin", http.StatusForbidden},
	} {
		resp := f.raw(t, tc.path, id, csrf, []byte("new"), map[string]string{"Content-Type": "text/plain"})
		if a := answer(t, resp); resp.StatusCode != tc.status || tc.status != 200 && a["error"] != "Your policies do not allow this." {
			t.Errorf("POST %s: %d %v, want %d", tc.path, resp.StatusCode, a, tc.status)
		}
	}
	o, err := f.objects.HeadObject(ctx, "shared", "alice/new.txt", objects.GetOptions{})
	if err != nil || o.Info.Meta.ContentType != "text/plain" || o.Info.Size != 3 {
		t.Fatalf("the uploaded object: %+v, %v", o, err)
	}
	// As through S3, the object a user writes is the user's (its ACL
	// names alice as the owner), not the bucket owner's.
	doc, _, _, err := f.objects.ObjectACL(ctx, "shared", "alice/new.txt", "")
	if err != nil || !strings.Contains(string(doc), f.canonicalID(t, "alice")) {
		t.Errorf("ACL of alice's upload = %s, %v; want alice as owner", doc, err)
	}
}

// TestObjectBrowserChangesNeedCSRF posts to every state-changing route of
// the object browser without the CSRF token, with a wrong one and from
// another origin: each is refused and changes nothing.
func TestObjectBrowserChangesNeedCSRF(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, 1)
	f.bucket(t, "bkt")
	f.put(t, "bkt", "k", "data")
	id, csrf := f.signIn(t, testRootKey, testRootSecret)
	u, err := f.objects.CreateMultipartUpload(t.Context(), "bkt", "mp", objects.CreateUploadInput{})
	if err != nil {
		t.Fatal(err)
	}
	forms := []struct {
		path string
		form url.Values
	}{
		{"/objects/bkt/delete", url.Values{"key": {"k"}, "confirm": {"1"}}},
		{"/objects/bkt/share", url.Values{"key": {"k"}, "expires": {"1"}, "unit": {"h"}}},
	}
	streams := []string{
		"/objects/bkt/upload?key=new",
		"/objects/bkt/uploads?key=new",
		"/objects/bkt/uploads/part?key=mp&partNumber=1&uploadId=" + u.UploadID,
		"/objects/bkt/uploads/complete?key=mp&uploadId=" + u.UploadID,
		"/objects/bkt/uploads/abort?key=mp&uploadId=" + u.UploadID,
	}
	for _, fm := range forms {
		for name, rq := range map[string]request{
			"no token":     {form: fm.form},
			"wrong token":  {form: withCSRF(fm.form, strings.Repeat("A", 43))},
			"other origin": {form: withCSRF(fm.form, csrf), origin: "http://evil.test"},
		} {
			rq.method, rq.path, rq.cookie = "POST", fm.path, id
			if resp := f.do(t, rq); resp.StatusCode != http.StatusForbidden {
				t.Errorf("%s %s: %d, want 403", name, fm.path, resp.StatusCode)
			}
		}
	}
	for _, p := range streams {
		for name, hdr := range map[string]map[string]string{
			"no token":     nil,
			"wrong token":  {csrfHeader: strings.Repeat("A", 43)},
			"other origin": {csrfHeader: csrf, "Origin": "http://evil.test"},
			// A form field does not count for an upload: its body is data.
			"token in a form": {"Content-Type": "application/x-www-form-urlencoded"},
		} {
			data := []byte(`{"parts":[]}`)
			if name == "token in a form" {
				data = []byte("csrf=" + url.QueryEscape(csrf))
			}
			if resp := f.raw(t, p, id, "", data, hdr); resp.StatusCode != http.StatusForbidden {
				t.Errorf("%s %s: %d, want 403", name, p, resp.StatusCode)
			}
		}
	}
	if !f.exists(t, "bkt", "k") || f.exists(t, "bkt", "new") {
		t.Errorf("a refused request changed objects")
	}
	res, err := f.objects.ListParts(t.Context(), "bkt", "mp", u.UploadID, objects.ListPartsInput{MaxParts: 10})
	if err != nil || len(res.Parts) != 0 {
		t.Errorf("the upload after refused requests: %v parts, %v; want it open with none", len(res.Parts), err)
	}
}

func withCSRF(v url.Values, token string) url.Values {
	out := url.Values{"csrf": {token}}
	for k, vs := range v {
		out[k] = vs
	}
	return out
}

func TestMultipartUploadEndpoints(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, 1)
	f.bucket(t, "bkt")
	id, csrf := f.signIn(t, testRootKey, testRootSecret)
	post := func(path string, body []byte) (*http.Response, map[string]string) {
		t.Helper()
		resp := f.raw(t, path, id, csrf, body, nil)
		if resp.StatusCode == http.StatusNoContent {
			return resp, nil
		}
		return resp, answer(t, resp)
	}

	// Create, three parts (sent out of order, as parallel uploads finish),
	// complete: the object is the parts in order.
	resp, a := post("/objects/bkt/uploads?key=big.bin&contentType=application%2Fx-test", nil)
	uid := a["uploadId"]
	if resp.StatusCode != 200 || uid == "" {
		t.Fatalf("create: %d %v", resp.StatusCode, a)
	}
	// The upload records who started it, for ListMultipartUploads.
	if res, err := f.objects.ListParts(t.Context(), "bkt", "big.bin", uid, objects.ListPartsInput{MaxParts: 1}); err != nil || res.Upload.Initiator != "root" {
		t.Errorf("upload started in the console: initiator %q, %v; want root", res.Upload.Initiator, err)
	}
	const partSize = 5 << 20
	parts := [][]byte{bytes.Repeat([]byte("a"), partSize), bytes.Repeat([]byte("b"), partSize), []byte("tail")}
	etags := make([]string, len(parts))
	for _, i := range []int{2, 0, 1} {
		resp, a := post(fmt.Sprintf("/objects/bkt/uploads/part?key=big.bin&uploadId=%s&partNumber=%d", url.QueryEscape(uid), i+1), parts[i])
		if resp.StatusCode != 200 || a["etag"] == "" {
			t.Fatalf("part %d: %d %v", i+1, resp.StatusCode, a)
		}
		etags[i] = a["etag"]
	}
	complete := fmt.Sprintf(`{"parts":[{"partNumber":1,"etag":%q},{"partNumber":2,"etag":%q},{"partNumber":3,"etag":%q}]}`, etags[0], etags[1], etags[2])
	resp, a = post("/objects/bkt/uploads/complete?key=big.bin&uploadId="+url.QueryEscape(uid), []byte(complete))
	if resp.StatusCode != 200 || !strings.HasSuffix(a["etag"], "-3") {
		t.Fatalf("complete: %d %v", resp.StatusCode, a)
	}
	dl := f.do(t, request{method: "GET", path: "/objects/bkt/download?key=big.bin", cookie: id})
	if got := body(t, dl); got != string(bytes.Join(parts, nil)) {
		t.Errorf("downloaded %d bytes, not the parts in order", len(got))
	}
	if o, err := f.objects.HeadObject(t.Context(), "bkt", "big.bin", objects.GetOptions{}); err != nil || o.Info.Meta.ContentType != "application/x-test" {
		t.Errorf("content type of the upload: %+v, %v", o, err)
	}

	// Errors keep S3's status: a part too small to be anything but the
	// last, an unknown upload, a bad body.
	_, a = post("/objects/bkt/uploads?key=small.bin", nil)
	uid2 := a["uploadId"]
	for i := 1; i <= 2; i++ {
		post(fmt.Sprintf("/objects/bkt/uploads/part?key=small.bin&uploadId=%s&partNumber=%d", url.QueryEscape(uid2), i), []byte("tiny"))
	}
	resp, a = post("/objects/bkt/uploads/complete?key=small.bin&uploadId="+url.QueryEscape(uid2), []byte(`{"parts":[{"partNumber":1,"etag":"x"},{"partNumber":2,"etag":"y"}]}`))
	if resp.StatusCode != http.StatusBadRequest || a["error"] == "" {
		t.Errorf("complete with wrong ETags: %d %v, want 400", resp.StatusCode, a)
	}
	if resp, _ := post("/objects/bkt/uploads/complete?key=small.bin&uploadId="+url.QueryEscape(uid2), []byte(`not json`)); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("complete with a bad body: %d, want 400", resp.StatusCode)
	}
	if resp, _ := post("/objects/bkt/uploads/part?key=small.bin&uploadId=nope&partNumber=1", []byte("x")); resp.StatusCode != http.StatusNotFound {
		t.Errorf("part of an unknown upload: %d, want 404", resp.StatusCode)
	}
	if resp, _ := post("/objects/bkt/uploads/part?key=small.bin&partNumber=x&uploadId="+url.QueryEscape(uid2), []byte("x")); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a part number that is not a number: %d, want 400", resp.StatusCode)
	}

	// Abort discards the upload: its parts are gone and it takes no more.
	resp, _ = post("/objects/bkt/uploads/abort?key=small.bin&uploadId="+url.QueryEscape(uid2), nil)
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("abort: %d", resp.StatusCode)
	}
	if resp, _ := post("/objects/bkt/uploads/part?key=small.bin&partNumber=3&uploadId="+url.QueryEscape(uid2), []byte("x")); resp.StatusCode != http.StatusNotFound {
		t.Errorf("a part after the abort: %d, want 404", resp.StatusCode)
	}
	ups, err := f.objects.ListMultipartUploads(t.Context(), "bkt", objects.ListUploadsInput{MaxUploads: 10})
	if err != nil || len(ups.Uploads) != 0 {
		t.Errorf("uploads left: %+v, %v", ups.Uploads, err)
	}
	if f.exists(t, "bkt", "small.bin") {
		t.Errorf("the aborted upload made an object")
	}
}

func TestShareLinks(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, 1)
	ctx := t.Context()
	f.bucket(t, "bkt")
	f.put(t, "bkt", "dir/a file+é.txt", "shared bytes")
	f.put(t, "bkt", "other.txt", "not for alice's key")
	if err := f.iam.PutPolicy(ctx, "read-dir", []byte(`{"Version":"2012-10-17","Statement":[
 {"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"}]}`)); err != nil {
		t.Fatal(err)
	}
	f.user(t, "alice", "alice-password", "read-dir")
	verifier := sigv4.NewVerifier(sigv4.Config{Region: testRegion, Clock: f.clock.now}, f.iam)
	const key = "dir/a file+é.txt"

	share := func(id, csrf, key, n, unit string) (int, string, string) {
		t.Helper()
		resp := f.do(t, request{method: "POST", path: "/objects/bkt/share", cookie: id,
			form: url.Values{"csrf": {csrf}, "key": {key}, "expires": {n}, "unit": {unit}}})
		b := body(t, resp)
		link, _ := attr(b, "share-url", "value")
		msg := ""
		if m := regexp.MustCompile(`id="error">([^<]*)<`).FindStringSubmatch(b); m != nil {
			msg = html.UnescapeString(m[1])
		}
		return resp.StatusCode, link, msg
	}
	// check verifies a link as S3 would: its signature, its key and its
	// lifetime, for a GET of the object.
	check := func(who, link, wantKey string, wantExpires string) {
		t.Helper()
		u, err := url.Parse(link)
		if err != nil || u.Scheme+"://"+u.Host != testS3URL {
			t.Fatalf("%s's link %q does not point at %s", who, link, testS3URL)
		}
		if p, _ := url.PathUnescape(u.EscapedPath()); p != "/bkt/"+key {
			t.Errorf("%s's link is for %q, want /bkt/%s", who, p, key)
		}
		if got := u.Query().Get("X-Amz-Expires"); got != wantExpires {
			t.Errorf("%s's link expires in %s s, want %s", who, got, wantExpires)
		}
		r := httptest.NewRequest("GET", link, nil)
		res, err := verifier.Verify(r)
		if err != nil || res.AccessKeyID != wantKey {
			t.Errorf("%s's link: verified %+v, %v; want signed by %s", who, res, err, wantKey)
		}
	}

	rid, rcsrf := f.signIn(t, testRootKey, testRootSecret)
	st, link, msg := share(rid, rcsrf, key, "7", "d")
	if st != 200 || link == "" {
		t.Fatalf("root's share: %d %q", st, msg)
	}
	check("root", link, testRootKey, "604800")
	for _, tc := range []struct{ n, unit string }{{"8", "d"}, {"0", "h"}, {"x", "h"}, {"1", "y"}} {
		if st, _, msg := share(rid, rcsrf, key, tc.n, tc.unit); st != http.StatusBadRequest || !strings.Contains(msg, "at most 7 days") {
			t.Errorf("expiry %s%s: %d %q, want 400", tc.n, tc.unit, st, msg)
		}
	}

	// alice has no access key (the one made with her is deleted): no
	// link, and she is told why.
	keys, err := f.iam.Keys(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if err := f.iam.DeleteKey(ctx, k.AccessKey); err != nil {
			t.Fatal(err)
		}
	}
	aid, acsrf := f.signIn(t, "alice", "alice-password")
	if st, link, msg := share(aid, acsrf, key, "1", "h"); st != http.StatusConflict || link != "" || !strings.Contains(msg, "access key") {
		t.Errorf("alice without a key: %d %q %q", st, link, msg)
	}
	// A key scoped to other.txt cannot read the object; an expiring
	// one does not last long enough for a day; the third does.
	if _, err := f.iam.CreateKey(ctx, "alice", iam.KeyOptions{Policy: []byte(`{"Version":"2012-10-17","Statement":[
 {"Effect":"Allow","Action":"s3:*","Resource":"arn:aws:s3:::bkt/other.txt"}]}`)}); err != nil {
		t.Fatal(err)
	}
	if st, _, _ := share(aid, acsrf, key, "1", "h"); st != http.StatusConflict {
		t.Errorf("alice with only a key scoped elsewhere: %d, want 409", st)
	}
	if _, err := f.iam.CreateKey(ctx, "alice", iam.KeyOptions{Expires: f.clock.now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if st, _, _ := share(aid, acsrf, key, "1", "d"); st != http.StatusConflict {
		t.Errorf("alice with a key expiring before the link: %d, want 409", st)
	}
	good, err := f.iam.CreateKey(ctx, "alice", iam.KeyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st, link, msg = share(aid, acsrf, key, "1", "d")
	if st != 200 {
		t.Fatalf("alice's share: %d %q", st, msg)
	}
	check("alice", link, good.AccessKey, "86400")
	if st, link, _ := share(aid, acsrf, "other.txt", "30", "m"); st != 200 || link == "" {
		t.Errorf("alice's share of other.txt, which both her keys may read: %d %q", st, link)
	}
}

func TestObjectDetailsOfVersion(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, 1)
	f.bucket(t, "vers")
	if err := f.objects.PutBucketVersioning(t.Context(), "vers", "Enabled", ""); err != nil {
		t.Fatal(err)
	}
	f.put(t, "vers", "k", "one")
	f.put(t, "vers", "k", "two")
	id, csrf := f.signIn(t, testRootKey, testRootSecret)
	o, err := f.objects.HeadObject(t.Context(), "vers", "k", objects.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b := body(t, f.do(t, request{method: "GET", path: "/objects/vers/object?key=k", cookie: id}))
	if !strings.Contains(b, `id="prop-version"><code>`+o.Info.VersionID+`</code>`) || !strings.Contains(b, "versionId="+o.Info.VersionID) {
		t.Errorf("details of a versioned object lack its version ID %s\n%s", o.Info.VersionID, b)
	}
	resp := f.do(t, request{method: "POST", path: "/objects/vers/share", cookie: id,
		form: url.Values{"csrf": {csrf}, "key": {"k"}, "versionId": {o.Info.VersionID}, "expires": {"1"}, "unit": {"h"}}})
	if link, _ := attr(body(t, resp), "share-url", "value"); !strings.Contains(link, "versionId="+o.Info.VersionID) {
		t.Errorf("share link of a version: %q", link)
	}
}

// TestObjectBrowserOff: without an object service the browser's pages
// are 404, and the rest of the console works.
func TestObjectBrowserOff(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, 1)
	f.h.browser.Objects = nil
	id, _ := f.signIn(t, testRootKey, testRootSecret)
	if resp := f.do(t, request{method: "GET", path: "/objects/b", cookie: id}); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /objects/b without an object service: %d, want 404", resp.StatusCode)
	}
	if resp := f.do(t, request{method: "GET", path: "/objects", cookie: id}); resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		t.Errorf("GET /objects: %d", resp.StatusCode)
	}
}

// BenchmarkObjectListPage renders a page of the object list of a bucket
// of 100,000 keys at its start and at its end: the same cost, as a page
// is one bounded listing from the marker, whatever lies before it.
func BenchmarkObjectListPage(b *testing.B) {
	const keys = 100_000
	f := newFixture(b, Config{}, 1)
	ctx := b.Context()
	if err := f.objects.CreateBucket(ctx, "big", objects.CreateBucketInput{}); err != nil {
		b.Fatal(err)
	}
	for i := range keys {
		k := fmt.Sprintf("dir/k%07d", i)
		if _, err := f.objects.PutObject(ctx, "big", k, objects.PutInput{Size: 1}, strings.NewReader("x")); err != nil {
			b.Fatal(err)
		}
	}
	id, _ := f.signIn(b, testRootKey, testRootSecret)
	for _, bc := range []struct{ name, path string }{
		{"first", "/objects/big?prefix=dir%2F"},
		{"last", "/objects/big?prefix=dir%2F&after=" + url.QueryEscape(fmt.Sprintf("dir/k%07d", keys-listPageSize-1))},
		{"top", "/objects/big"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				resp := f.do(b, request{method: "GET", path: bc.path, cookie: id})
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("GET %s: %d", bc.path, resp.StatusCode)
				}
			}
		})
	}
}

// TestObjectBrowserIgnorePublicAcls: a bucket ACL granting every
// authenticated user READ lets a user without policies browse the bucket
// through the console, as through S3, until Block Public Access's
// IgnorePublicAcls makes public grants count for nothing.
func TestObjectBrowserIgnorePublicAcls(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, 1)
	ctx := t.Context()
	f.bucket(t, "open")
	f.put(t, "open", "k.txt", "readable by every user")
	root := iam.RootCanonicalID()
	a, err := acl.Expand(acl.CannedAuthenticatedRead, root, root)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.objects.PutBucketACL(ctx, "open", acl.Encode(a)); err != nil {
		t.Fatal(err)
	}
	f.user(t, "bob", "bob-password")
	id, _ := f.signIn(t, "bob", "bob-password")
	if resp := f.do(t, request{method: "GET", path: "/objects/open", cookie: id}); resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /objects/open through an authenticated-read ACL: %d, want 200", resp.StatusCode)
	}
	if err := f.objects.PutPublicAccessBlock(ctx, "open", &objects.PublicAccessBlock{IgnorePublicAcls: true}); err != nil {
		t.Fatal(err)
	}
	if resp := f.do(t, request{method: "GET", path: "/objects/open", cookie: id}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("GET /objects/open with IgnorePublicAcls: %d, want 403", resp.StatusCode)
	}
}

// failingBody yields n zero bytes, then err: an upload whose client
// stalled (a read deadline) or went away.
type failingBody struct {
	n   int
	err error
	ctx context.CancelFunc // called with the error, as net/http cancels a request whose body failed
}

func (b *failingBody) Read(p []byte) (int, error) {
	if b.n == 0 {
		if b.ctx != nil {
			b.ctx()
		}
		return 0, b.err
	}
	n := min(len(p), b.n)
	clear(p[:n])
	b.n -= n
	return n, nil
}

// TestUploadCutShort: an upload whose body stalls is answered 400
// RequestTimeout, one whose client went away 400 IncompleteBody, and
// neither is stored or recorded as a success. (Both were answered with
// nothing, which net/http sends as an empty 200: the page showed the
// upload done and the audit log recorded it stored.)
func TestUploadCutShort(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, 1)
	log := withAudit(t, f, nil)
	f.h.events = log
	f.bucket(t, "bkt")
	id, csrf := f.signIn(t, testRootKey, testRootSecret)
	stalled := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	for _, tc := range []struct {
		key, code string
		err       error
		cancel    bool
	}{
		{"stalled", "RequestTimeout", stalled, true},
		{"gone", "IncompleteBody", io.ErrUnexpectedEOF, true},
	} {
		ctx, cancel := context.WithCancel(t.Context())
		body := &failingBody{n: 100 << 10, err: tc.err}
		if tc.cancel {
			body.ctx = cancel
		}
		r := httptest.NewRequestWithContext(ctx, "POST", testOrigin+"/objects/bkt/upload?key="+tc.key, body)
		r.ContentLength = 1 << 20
		r.Header.Set("Origin", testOrigin)
		r.Header.Set(csrfHeader, csrf)
		r.RemoteAddr = "192.0.2.10:4711"
		r.AddCookie(&http.Cookie{Name: sessionCookie, Value: id})
		w := httptest.NewRecorder()
		f.h.ServeHTTP(w, r)
		cancel()
		resp := w.Result()
		if m := answer(t, resp); resp.StatusCode != http.StatusBadRequest || m["error"] == "" || m["etag"] != "" {
			t.Errorf("upload %s: %d %v, want 400 with an error", tc.key, resp.StatusCode, m)
		}
		if _, err := f.objects.HeadObject(t.Context(), "bkt", tc.key, objects.GetOptions{}); !s3err.Is(err, s3err.NoSuchKey) {
			t.Errorf("upload %s: HeadObject = %v, want NoSuchKey", tc.key, err)
		}
	}
	if err := log.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	pg, err := log.Query(t.Context(), audit.Filter{Source: audit.SourceConsole, Op: "PutObject", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range pg.Events {
		got[e.Key] = fmt.Sprintf("%d %s", e.Status, e.Code)
	}
	if want := map[string]string{"stalled": "400 RequestTimeout", "gone": "400 IncompleteBody"}; !maps.Equal(got, want) {
		t.Errorf("audit events %v, want %v", got, want)
	}
}

// TestUploadStorageErrorNotBlamedOnClient: in gateway mode an upstream
// that times out (or resets) fails the upload with 503
// ServiceUnavailable, whose chain holds a timeout (or io.ErrUnexpectedEOF)
// too: only errors of the request's own body are the browser's stall or
// cut, answered 400.
func TestUploadStorageErrorNotBlamedOnClient(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, 1)
	for _, cause := range []error{os.ErrDeadlineExceeded, io.ErrUnexpectedEOF} {
		upstream := &url.Error{Op: "Put", URL: "http://upstream/bkt/blk", Err: cause}
		err := &s3err.Error{Code: s3err.ServiceUnavailable, Message: "The block store cannot be reached; please retry.",
			Err: &blob.UnavailableError{Kind: "timeout", Err: upstream}}
		w := httptest.NewRecorder()
		r := httptest.NewRequest("POST", testOrigin+"/objects/b/upload?key=k", nil)
		r.Body = &clientBody{rc: io.NopCloser(strings.NewReader(""))}
		a := &action{}
		_ = f.h.jsonErrors(w, r, &session{act: a}, err)
		if w.Code != http.StatusServiceUnavailable || a.code != string(s3err.ServiceUnavailable) {
			t.Errorf("upstream %v: answered %d, audit code %q; want 503 ServiceUnavailable", cause, w.Code, a.code)
		}
	}
}
