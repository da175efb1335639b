package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestCORSSDK drives Put/Get/DeleteBucketCors through aws-sdk-go-v2 (which
// sends the checksum PutBucketCors requires) and checks that the rules
// apply to a preflight and an actual request at once.
func TestCORSSDK(t *testing.T) {
	t.Parallel()
	testCORSSDK(t, startServer(t))
}

func testCORSSDK(t *testing.T, ts s3Target) {
	c := ts.client(t)
	ctx := t.Context()
	bucket := mkBucket(t, c, "cors")

	_, err := c.GetBucketCors(ctx, &s3.GetBucketCorsInput{Bucket: &bucket})
	wantErr(t, "GetBucketCors without a configuration", err, "NoSuchCORSConfiguration", http.StatusNotFound)

	rules := []types.CORSRule{
		{
			ID:             aws.String("uploads"),
			AllowedOrigins: []string{"https://app.example.com", "https://*.example.net"},
			AllowedMethods: []string{"PUT", "POST", "DELETE"},
			AllowedHeaders: []string{"*"},
			ExposeHeaders:  []string{"ETag", "x-amz-version-id"},
			MaxAgeSeconds:  aws.Int32(600),
		},
		{AllowedOrigins: []string{"*"}, AllowedMethods: []string{"GET", "HEAD"}},
	}
	if _, err := c.PutBucketCors(ctx, &s3.PutBucketCorsInput{Bucket: &bucket, CORSConfiguration: &types.CORSConfiguration{CORSRules: rules}}); err != nil {
		t.Fatalf("PutBucketCors: %v", err)
	}
	got, err := c.GetBucketCors(ctx, &s3.GetBucketCorsInput{Bucket: &bucket})
	if err != nil {
		t.Fatalf("GetBucketCors: %v", err)
	}
	if diff := cmp.Diff(rules, got.CORSRules, cmpopts.IgnoreUnexported(types.CORSRule{})); diff != "" {
		t.Errorf("GetBucketCors rules mismatch (-put +got):\n%s", diff)
	}

	// The rules answer a preflight and an actual request.
	endpoint, hc := ts.rawEndpoint()
	req, _ := http.NewRequestWithContext(ctx, http.MethodOptions, endpoint+"/"+bucket+"/photo.jpg", nil)
	req.Header.Set("Origin", "https://eu.example.net")
	req.Header.Set("Access-Control-Request-Method", "PUT")
	req.Header.Set("Access-Control-Request-Headers", "content-type,x-amz-date")
	resp, _ := do(t, hc, req)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != "https://eu.example.net" ||
		resp.Header.Get("Access-Control-Allow-Headers") != "content-type, x-amz-date" || resp.Header.Get("Access-Control-Max-Age") != "600" {
		t.Errorf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
	put(t, c, bucket, "photo.jpg", []byte("jpeg"))
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, endpoint+"/"+bucket+"/photo.jpg", nil)
	req.Header.Set("Origin", "https://anywhere.example.org")
	resp, _ = do(t, hc, req) // anonymous: AccessDenied, readable by the page
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "*" || resp.Header.Get("Vary") == "" {
		t.Errorf("anonymous GET with an Origin: %d %v", resp.StatusCode, resp.Header)
	}

	_, err = c.PutBucketCors(ctx, &s3.PutBucketCorsInput{Bucket: &bucket, CORSConfiguration: &types.CORSConfiguration{CORSRules: []types.CORSRule{
		{AllowedOrigins: []string{"*"}, AllowedMethods: []string{"PATCH"}},
	}}})
	wantErr(t, "PutBucketCors with PATCH", err, "InvalidRequest", http.StatusBadRequest)
	_, err = c.PutBucketCors(ctx, &s3.PutBucketCorsInput{Bucket: aws.String(bucket + "-none"), CORSConfiguration: &types.CORSConfiguration{CORSRules: rules}})
	wantErr(t, "PutBucketCors on a missing bucket", err, "NoSuchBucket", http.StatusNotFound)

	if _, err := c.DeleteBucketCors(ctx, &s3.DeleteBucketCorsInput{Bucket: &bucket}); err != nil {
		t.Fatalf("DeleteBucketCors: %v", err)
	}
	_, err = c.GetBucketCors(ctx, &s3.GetBucketCorsInput{Bucket: &bucket})
	wantErr(t, "GetBucketCors after DeleteBucketCors", err, "NoSuchCORSConfiguration", http.StatusNotFound)
	req, _ = http.NewRequestWithContext(ctx, http.MethodOptions, endpoint+"/"+bucket+"/photo.jpg", nil)
	req.Header.Set("Origin", "https://eu.example.net")
	req.Header.Set("Access-Control-Request-Method", "PUT")
	resp, body := do(t, hc, req)
	checkError(t, "preflight after DeleteBucketCors", resp, body, "AccessForbidden", http.StatusForbidden, "/"+bucket+"/photo.jpg")
}

// chromiumPath returns the Chromium binary, skipping the test (failing it
// on CI, whose .ci/run installs Debian's chromium) when there is none.
func chromiumPath(t *testing.T) string {
	t.Helper()
	requireTool(t, "chromium")
	p, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	return p
}

// newBrowser starts a headless Chromium for the test, with a fresh
// profile and the background traffic it would otherwise send turned off
// (the machine has no network beyond loopback).
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
	}
	ctx, cancel := context.WithTimeout(t.Context(), 45*time.Second)
	t.Cleanup(cancel)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return bctx
}

// corsPage is the page the browser loads from another origin: it uploads
// with fetch to a presigned PUT URL, reads the ETag the rules expose, reads
// the object back and reads an S3 error document, and reports what it saw.
const corsPage = `<!doctype html>
<html><head><meta charset="utf-8"><title>cors</title></head><body>
<script>
const urls = %s;
async function run() {
  const out = {};
  try {
    const put = await fetch(urls.put, {method: "PUT", body: "hello from the browser", headers: {"Content-Type": "text/plain"}});
    out.putStatus = put.status;
    out.etag = put.headers.get("ETag");
    const get = await fetch(urls.get);
    out.getStatus = get.status;
    out.body = await get.text();
    const missing = await fetch(urls.missing);
    out.missingStatus = missing.status;
    out.missingBody = await missing.text();
  } catch (e) {
    out.error = String(e);
  }
  return JSON.stringify(out);
}
</script></body></html>`

// pageResult is what corsPage reports.
type pageResult struct {
	PutStatus     int    `json:"putStatus"`
	ETag          string `json:"etag"`
	GetStatus     int    `json:"getStatus"`
	Body          string `json:"body"`
	MissingStatus int    `json:"missingStatus"`
	MissingBody   string `json:"missingBody"`
	Error         string `json:"error"`
}

// TestCORSBrowser loads a page from one origin (an httptest server) in a
// real headless Chromium and has it upload to Coffer, on another origin,
// with fetch: a preflighted PUT to a presigned URL, a GET of the object and
// a GET of a missing key whose error it must be able to read. With a rule
// for the page's origin everything works; with a rule for another origin
// the browser refuses, and nothing is stored.
func TestCORSBrowser(t *testing.T) {
	t.Parallel()
	bctx := newBrowser(t)
	ts := startServer(t)
	c := ts.client(t)
	ctx := t.Context()

	var page atomic.Pointer[[]byte] // the page of the running case
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(*page.Load())
	}))
	t.Cleanup(site.Close)
	origin := site.URL // http://127.0.0.1:port, another origin than ts.endpoint

	presign := s3.NewPresignClient(c)
	for _, tc := range []struct {
		name    string
		allowed string // the rule's origin
		want    pageResult
		stored  bool
	}{
		{name: "allowed", allowed: origin, stored: true, want: pageResult{
			PutStatus: 200, ETag: quoted(md5Hex([]byte("hello from the browser"))),
			GetStatus: 200, Body: "hello from the browser", MissingStatus: 404,
		}},
		{name: "other origin", allowed: "https://elsewhere.example.com", want: pageResult{Error: "TypeError: Failed to fetch"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bucket := mkBucket(t, c, "browser")
			_, err := c.PutBucketCors(ctx, &s3.PutBucketCorsInput{Bucket: &bucket, CORSConfiguration: &types.CORSConfiguration{CORSRules: []types.CORSRule{{
				AllowedOrigins: []string{tc.allowed},
				AllowedMethods: []string{"GET", "PUT"},
				AllowedHeaders: []string{"*"},
				ExposeHeaders:  []string{"ETag"},
			}}}})
			if err != nil {
				t.Fatalf("PutBucketCors: %v", err)
			}
			putURL, err := presign.PresignPutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("from-browser.txt")}, s3.WithPresignExpires(10*time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			getURL, err := presign.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: aws.String("from-browser.txt")}, s3.WithPresignExpires(10*time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			missingURL, err := presign.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: aws.String("missing.txt")}, s3.WithPresignExpires(10*time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			urls, _ := json.Marshal(map[string]string{"put": putURL.URL, "get": getURL.URL, "missing": missingURL.URL})
			html := fmt.Appendf(nil, corsPage, urls)
			page.Store(&html)

			if err := chromedp.Do(bctx, chromedp.Navigate(origin+"/"+tc.name)); err != nil {
				t.Fatalf("load the page: %v", err)
			}
			raw, err := chromedp.Run(bctx, chromedp.Evaluate[string](`run()`, chromedp.EvalAwaitPromise))
			if err != nil {
				t.Fatalf("run the page: %v", err)
			}
			var got pageResult
			if err := json.Unmarshal([]byte(raw), &got); err != nil {
				t.Fatalf("page result %q: %v", raw, err)
			}
			if tc.want.MissingStatus != 0 {
				// The page can read S3's error document.
				if !strings.Contains(got.MissingBody, "<Code>NoSuchKey</Code>") || !strings.Contains(got.MissingBody, "<RequestId>") {
					t.Errorf("the page read %q for a missing key, want S3's error document", got.MissingBody)
				}
				got.MissingBody = ""
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("page result mismatch (-want +got):\n%s", diff)
			}
			if tc.stored && !strings.Contains(ts.logs.String(), "op=OptionsObject bucket="+bucket) {
				t.Errorf("the browser sent no preflight for the upload")
			}
			_, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: aws.String("from-browser.txt")})
			if tc.stored && err != nil {
				t.Errorf("HeadObject after the page's upload: %v", err)
			}
			if !tc.stored {
				wantErr(t, "HeadObject after a refused upload", err, "NotFound", http.StatusNotFound)
			}
		})
	}
}
