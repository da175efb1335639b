package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/chromedp/chromedp"
)

// postFields sends a form upload of fields and a file (named name) to
// url, as a browser does, and returns the response and its body.
func postFields(t *testing.T, hc *http.Client, url string, fields map[string]string, name string, file []byte) (*http.Response, []byte) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		if err := mw.WriteField(k, fields[k]); err != nil {
			t.Fatal(err)
		}
	}
	fw, err := mw.CreateFormFile("file", name)
	if err != nil {
		t.Fatal(err)
	}
	fw.Write(file)
	mw.Close()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, &buf)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	return do(t, hc, req)
}

// TestPostObjectSDK: a form upload presigned by aws-sdk-go-v2
// (PresignPostObject, SigV4), with a size range and a key prefix, stores
// the file; one outside the policy stores nothing.
func TestPostObjectSDK(t *testing.T) {
	t.Parallel()
	testPostObjectSDK(t, startServer(t))
}

func testPostObjectSDK(t *testing.T, ts s3Target) {
	c := ts.client(t)
	ctx := t.Context()
	bucket := mkBucket(t, c, "post")
	presign := s3.NewPresignClient(c)
	_, hc := ts.rawEndpoint() // the URL is the client's endpoint
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

	req, err := presign.PresignPostObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("uploads/${filename}")},
		func(o *s3.PresignPostOptions) {
			o.Expires = 10 * time.Minute
			o.Conditions = []any{
				[]any{"starts-with", "$key", "uploads/"},
				[]any{"content-length-range", 1, 64 << 10},
				[]any{"starts-with", "$Content-Type", "image/"},
				map[string]string{"success_action_status": "201"},
			}
		})
	if err != nil {
		t.Fatalf("PresignPostObject: %v", err)
	}
	fields := maps.Clone(req.Values)
	fields["Content-Type"] = "image/png"
	fields["success_action_status"] = "201"
	img := bytes.Repeat([]byte{0x89, 'P', 'N', 'G'}, 1000)
	resp, body := postFields(t, hc, req.URL, fields, "cat.png", img)
	if resp.StatusCode != http.StatusCreated || !strings.Contains(string(body), "<Key>uploads/cat.png</Key>") ||
		resp.Header.Get("ETag") != quoted(md5Hex(img)) {
		t.Fatalf("form upload: %d %v\n%s", resp.StatusCode, resp.Header, body)
	}
	out, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: aws.String("uploads/cat.png")})
	if err != nil || aws.ToString(out.ContentType) != "image/png" || aws.ToInt64(out.ContentLength) != int64(len(img)) {
		t.Fatalf("HeadObject of the upload: %+v, %v", out, err)
	}
	if got := get(t, c, bucket, "uploads/cat.png"); !bytes.Equal(got, img) {
		t.Errorf("GetObject of the upload: %d bytes, not the file", len(got))
	}

	// Too large for the policy: EntityTooLarge, nothing stored.
	resp, body = postFields(t, hc, req.URL, fields, "huge.png", bytes.Repeat([]byte("x"), 65<<10))
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "<Code>EntityTooLarge</Code>") {
		t.Errorf("oversize form upload: %d\n%s", resp.StatusCode, body)
	}
	_, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: aws.String("uploads/huge.png")})
	wantErr(t, "HeadObject of a refused upload", err, "NotFound", http.StatusNotFound)

	// A field the policy does not name: AccessDenied.
	fields["x-amz-meta-sneaky"] = "1"
	resp, body = postFields(t, hc, req.URL, fields, "cat2.png", img)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "Extra input fields: x-amz-meta-sneaky") {
		t.Errorf("form upload with an extra field: %d\n%s", resp.StatusCode, body)
	}
}

// TestPostObjectVersioned: a form upload to a versioned bucket makes a
// new version and reports its ID.
func TestPostObjectVersioned(t *testing.T) {
	t.Parallel()
	testPostObjectVersioned(t, startServer(t))
}

func testPostObjectVersioned(t *testing.T, ts s3Target) {
	c := ts.client(t)
	ctx := t.Context()
	bucket := mkBucket(t, c, "postver")
	if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: &bucket,
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	put(t, c, bucket, "doc", []byte("v1"))
	req, err := s3.NewPresignClient(c).PresignPostObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("doc")})
	if err != nil {
		t.Fatal(err)
	}
	_, hc := ts.rawEndpoint() // the URL is the client's endpoint
	resp, body := postFields(t, hc, req.URL, req.Values, "doc", []byte("v2"))
	vid := resp.Header.Get("x-amz-version-id")
	if resp.StatusCode != http.StatusNoContent || vid == "" {
		t.Fatalf("form upload to a versioned bucket: %d %v\n%s", resp.StatusCode, resp.Header, body)
	}
	vs, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: &bucket})
	if err != nil || len(vs.Versions) != 2 || aws.ToString(vs.Versions[0].VersionId) != vid || !aws.ToBool(vs.Versions[0].IsLatest) {
		t.Fatalf("ListObjectVersions after a form upload: %+v, %v", vs, err)
	}
}

// TestPostObjectBrowser: headless Chromium uploads through a page of
// another origin, twice: an HTML form submitted as a person would (file
// chosen in a file input; S3 redirects the browser to the page's
// success_action_redirect), and fetch() with FormData, which needs the
// bucket's CORS rules and reads the PostResponse document.
func TestPostObjectBrowser(t *testing.T) {
	t.Parallel()
	bctx := newBrowser(t)
	ts := startServer(t)
	c := ts.client(t)
	ctx := t.Context()
	bucket := mkBucket(t, c, "postbrowser")

	var page atomic.Pointer[[]byte] // the upload page of the running case
	var landed atomic.Pointer[url.Values]
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if r.URL.Path == "/done" {
			q := r.URL.Query()
			landed.Store(&q)
			_, _ = w.Write([]byte(`<!doctype html><title>done</title><p id="done">uploaded</p>`))
			return
		}
		_, _ = w.Write(*page.Load())
	}))
	t.Cleanup(site.Close)
	origin := site.URL

	file := filepath.Join(t.TempDir(), "holiday photo.jpg")
	photo := bytes.Repeat([]byte("jpeg!"), 40<<10) // 200 KiB: stored in blocks
	if err := os.WriteFile(file, photo, 0o600); err != nil {
		t.Fatal(err)
	}
	presign := s3.NewPresignClient(c)
	sign := func(key string, conds ...any) *s3.PresignedPostRequest {
		t.Helper()
		req, err := presign.PresignPostObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String(key)},
			func(o *s3.PresignPostOptions) { o.Expires = 10 * time.Minute; o.Conditions = conds })
		if err != nil {
			t.Fatalf("PresignPostObject: %v", err)
		}
		return req
	}

	t.Run("form", func(t *testing.T) {
		req := sign("photos/${filename}",
			[]any{"starts-with", "$key", "photos/"},
			[]any{"starts-with", "$success_action_redirect", origin + "/"},
			[]any{"starts-with", "$Content-Type", "image/"},
			[]any{"content-length-range", 1, 1 << 20})
		fields := maps.Clone(req.Values)
		fields["success_action_redirect"] = origin + "/done"
		fields["Content-Type"] = "image/jpeg"
		var inputs strings.Builder
		for _, k := range slices.Sorted(maps.Keys(fields)) {
			fmt.Fprintf(&inputs, "<input type=hidden name=%q value=%q>\n", k, fields[k])
		}
		html := fmt.Appendf(nil, `<!doctype html><html><head><meta charset="utf-8"><title>upload</title></head><body>
<form id="f" action="%s" method="post" enctype="multipart/form-data">
%s<input id="file" type="file" name="file"><button id="go" type="submit">Upload</button></form></body></html>`, req.URL, inputs.String())
		page.Store(&html)
		err := chromedp.Do(bctx,
			chromedp.Navigate(origin+"/upload"),
			chromedp.SetUploadFiles(chromedp.CSS("#file"), []string{file}),
			chromedp.Click(chromedp.CSS("#go")),
			chromedp.WaitVisible(chromedp.CSS("#done")),
		)
		if err != nil {
			t.Fatalf("submit the form: %v", err)
		}
		q := landed.Load()
		if q == nil || q.Get("bucket") != bucket || q.Get("key") != "photos/holiday photo.jpg" || q.Get("etag") != quoted(md5Hex(photo)) {
			t.Fatalf("redirected with %v", q)
		}
		if got := get(t, c, bucket, "photos/holiday photo.jpg"); !bytes.Equal(got, photo) {
			t.Errorf("GetObject of the browser's upload: %d bytes, not the file", len(got))
		}
	})

	t.Run("fetch", func(t *testing.T) {
		if _, err := c.PutBucketCors(ctx, &s3.PutBucketCorsInput{Bucket: &bucket, CORSConfiguration: &types.CORSConfiguration{CORSRules: []types.CORSRule{{
			AllowedOrigins: []string{origin}, AllowedMethods: []string{"POST"}, AllowedHeaders: []string{"*"}, ExposeHeaders: []string{"ETag"},
		}}}}); err != nil {
			t.Fatalf("PutBucketCors: %v", err)
		}
		req := sign("notes/from-fetch.txt", map[string]string{"success_action_status": "201"})
		fields := maps.Clone(req.Values)
		fields["success_action_status"] = "201"
		args, _ := json.Marshal(map[string]any{"url": req.URL, "fields": fields})
		html := fmt.Appendf(nil, `<!doctype html><html><head><meta charset="utf-8"><title>fetch</title></head><body><script>
const args = %s;
async function run() {
  const fd = new FormData();
  for (const [k, v] of Object.entries(args.fields)) fd.append(k, v);
  fd.append("file", new Blob(["typed in the browser"], {type: "text/plain"}), "note.txt");
  try {
    const r = await fetch(args.url, {method: "POST", body: fd});
    return JSON.stringify({status: r.status, etag: r.headers.get("ETag") || "", body: await r.text()});
  } catch (e) { return JSON.stringify({error: String(e)}); }
}
</script></body></html>`, args)
		page.Store(&html)
		if err := chromedp.Do(bctx, chromedp.Navigate(origin+"/fetch")); err != nil {
			t.Fatal(err)
		}
		raw, err := chromedp.Run(bctx, chromedp.Evaluate[string](`run()`, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Status int    `json:"status"`
			ETag   string `json:"etag"`
			Body   string `json:"body"`
			Error  string `json:"error"`
		}
		if err := json.Unmarshal([]byte(raw), &got); err != nil {
			t.Fatalf("page result %q: %v", raw, err)
		}
		want := []byte("typed in the browser")
		if got.Status != http.StatusCreated || got.ETag != quoted(md5Hex(want)) || !strings.Contains(got.Body, "<Key>notes/from-fetch.txt</Key>") {
			t.Fatalf("fetch upload: %+v", got)
		}
		if b := get(t, c, bucket, "notes/from-fetch.txt"); !bytes.Equal(b, want) {
			t.Errorf("GetObject of the fetch upload: %q", b)
		}
	})
}
