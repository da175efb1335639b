package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/coffer-s3/coffer/internal/adminapi"
)

// throttleUploads limits the browser's upload rate to bytesPerSecond (0:
// no limit), so that an upload lasts long enough to be cancelled.
func throttleUploads(bytesPerSecond float64) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		if _, err := cdp.Call(ctx, t, network.Enable, network.EnableParams{}); err != nil {
			return err
		}
		c := &network.Conditions{DownloadThroughput: -1, UploadThroughput: -1}
		if bytesPerSecond > 0 {
			c.UploadThroughput = bytesPerSecond
		}
		_, err := cdp.Call(ctx, t, network.EmulateNetworkConditionsByRule, network.EmulateNetworkConditionsByRuleParams{
			MatchedNetworkConditions: []*network.Conditions{c},
		})
		return err
	})
}

// waitJS waits until the JavaScript expression expr is true.
func waitJS(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Poll[bool](expr)(ctx, t)
		return err
	})
}

// TestConsoleBrowserObjects drives the object browser in Chromium:
// browse with breadcrumbs, upload a 20 MiB file (multipart, with
// progress), download it byte-exact, fetch a share link anonymously,
// cancel an upload (the multipart upload is aborted), delete a
// selection, and a user without rights sees no foreign bucket or object.
func TestConsoleBrowserObjects(t *testing.T) {
	t.Parallel()
	bctx := newBrowser(t)
	ts := startServer(t)
	c := ts.client(t)
	ctx := t.Context()
	b := &consoleBrowser{t: t, ctx: bctx, base: "http://" + ts.console}

	bucket := mkBucket(t, c, "console-objects")
	for _, k := range []string{"docs/a.txt", "docs/sub/b.txt", "top.txt"} {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(k), Body: strings.NewReader("text of " + k)}); err != nil {
			t.Fatal(err)
		}
	}
	b.signIn(testAccessKey, testSecretKey)

	// Browse: the bucket, a folder, a nested folder, back by a crumb.
	b.do("browse to docs/sub/",
		chromedp.Navigate(b.base+"/objects"),
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`a[data-bucket=%q]`, bucket))),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-prefix="docs/"] a`)),
		chromedp.Click(chromedp.CSS(`tr[data-prefix="docs/"] a`)),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-prefix="docs/sub/"] a`)),
		chromedp.Click(chromedp.CSS(`tr[data-prefix="docs/sub/"] a`)),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-key="docs/sub/b.txt"]`)),
	)
	if crumbs := b.text("#crumbs"); !strings.Contains(crumbs, bucket+" /") || !strings.Contains(crumbs, "docs /") || !strings.Contains(crumbs, "sub /") {
		t.Errorf("breadcrumbs at docs/sub/: %q", crumbs)
	}
	b.do("back to docs/ by its crumb",
		chromedp.Click(chromedp.CSS(`#crumbs a[data-prefix="docs/"]`)),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-key="docs/a.txt"]`)),
	)
	if u, err := url.Parse(b.location()); err != nil || u.Path != "/objects/"+bucket || u.Query().Get("prefix") != "docs/" {
		t.Errorf("after the crumb: %s", b.location())
	}

	// Upload 20 MiB into docs/: more than one part, so multipart with
	// parts in flight; the progress bar moves through values below 100 %.
	data := randBytes(20 << 20)
	sum := sha256.Sum256(data)
	const name = "big file.bin"
	const key = "docs/" + name
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	b.do("upload 20 MiB",
		chromedp.WaitVisible(chromedp.CSS("#files")),
		// Record every status the upload row shows.
		chromedp.Evaluate[chromedp.Void](`window.seen = []; new MutationObserver(() => {
			for (const s of document.querySelectorAll("#uploads .status")) window.seen.push(s.textContent);
		}).observe(document.getElementById("uploads"), {subtree: true, childList: true, characterData: true});`),
		chromedp.SetUploadFiles(chromedp.CSS("#files"), []string{path}),
		chromedp.WaitVisible(chromedp.CSS(`#uploads li.done, #uploads li.failed`)),
	)
	if st := b.text(fmt.Sprintf(`#uploads li[data-key=%q] .status`, key)); st != "done" {
		t.Fatalf("upload status %q", st)
	}
	seen, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`window.seen`))
	if err != nil {
		t.Fatal(err)
	}
	partial := 0
	for _, s := range seen {
		if strings.HasSuffix(s, " %") && s != "100 %" {
			partial++
		}
	}
	if partial == 0 {
		t.Errorf("the progress bar showed no partial progress: %q", seen)
	}
	full, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`(() => { const p = document.querySelector("#uploads li.done progress"); return p.value === p.max; })()`))
	if err != nil || !full {
		t.Errorf("the finished upload's progress bar is not full (%v)", err)
	}
	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("HeadObject of the upload: %v", err)
	}
	if etag := aws.ToString(head.ETag); aws.ToInt64(head.ContentLength) != int64(len(data)) || !strings.HasSuffix(etag, `-3"`) {
		t.Errorf("uploaded object: %d bytes, ETag %s; want %d bytes in 3 parts", aws.ToInt64(head.ContentLength), etag, len(data))
	}

	// Download through the console, in the browser, with its session:
	// the same bytes.
	b.do("reload the list", chromedp.Click(chromedp.CSS("#uploads-done a")), chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`tr[data-key=%q]`, key))))
	got, err := chromedp.Run(bctx, chromedp.Evaluate[string](fmt.Sprintf(`(async () => {
		const r = await fetch(document.querySelector('tr[data-key=%q] a.download').href);
		const d = await crypto.subtle.digest("SHA-256", await r.arrayBuffer());
		return r.status + " " + r.headers.get("Content-Disposition") + " " + Array.from(new Uint8Array(d)).map(b => b.toString(16).padStart(2, "0")).join("");
	})()`, key), chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if want := `200 attachment; filename="big file.bin" ` + hex.EncodeToString(sum[:]); got != want {
		t.Errorf("download: %q, want %q", got, want)
	}

	// Share for an hour; an anonymous plain HTTP client gets the bytes.
	b.do("make a share link",
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`tr[data-key=%q] td:nth-child(2) a`, key))),
		chromedp.WaitVisible(chromedp.CSS("#make-share")),
		chromedp.SetValue(chromedp.CSS("#expires"), "1"),
		chromedp.SetValue(chromedp.CSS("#unit"), "h"),
		chromedp.Click(chromedp.CSS("#make-share")),
		chromedp.WaitVisible(chromedp.CSS("#share-url")),
	)
	if v := b.text("#prop-size"); !strings.Contains(v, "20971520 bytes") {
		t.Errorf("details show size %q", v)
	}
	link, err := chromedp.Run(bctx, chromedp.Value(chromedp.CSS("#share-url")))
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(link)
	if err != nil || u.Host != strings.TrimPrefix(ts.endpoint, "http://") || u.Query().Get("X-Amz-Expires") != "3600" {
		t.Fatalf("share link %q: want the S3 endpoint %s, valid for an hour", link, ts.endpoint)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Get(link)
	if err != nil {
		t.Fatal(err)
	}
	shared, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || !bytes.Equal(shared, data) {
		t.Errorf("share link: status %d, %d bytes (%v); want 200 with the object", resp.StatusCode, len(shared), err)
	}

	// Cancel: a throttled upload is cancelled mid-way, and its multipart
	// upload is aborted.
	b.do("start and cancel a slow upload",
		chromedp.Navigate(b.base+"/objects/"+bucket+"?prefix=docs%2F"),
		chromedp.WaitVisible(chromedp.CSS("#files")),
		throttleUploads(1<<20),
		chromedp.SetUploadFiles(chromedp.CSS("#files"), []string{path}),
		waitJS(`(() => { const s = document.querySelector("#uploads .status"); return s && s.textContent.endsWith(" %"); })()`),
		chromedp.Click(chromedp.CSS("#uploads button.cancel")),
		waitJS(`document.querySelector("#uploads .status").textContent === "cancelled"`),
		throttleUploads(0),
	)
	deadline := time.Now().Add(10 * time.Second)
	for {
		ups, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket)})
		if err != nil {
			t.Fatal(err)
		}
		if len(ups.Uploads) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cancelled upload was not aborted: %d open", len(ups.Uploads))
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Delete a selection of two, through the confirmation page.
	b.do("delete a selection",
		chromedp.Navigate(b.base+"/objects/"+bucket+"?prefix=docs%2F"),
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`tr[data-key=%q] input[type=checkbox]`, key))),
		chromedp.Click(chromedp.CSS(`tr[data-key="docs/a.txt"] input[type=checkbox]`)),
		chromedp.Click(chromedp.CSS("#delete-selected")),
		chromedp.WaitVisible(chromedp.CSS("#confirm")),
		chromedp.Click(chromedp.CSS("#confirm")),
		chromedp.WaitVisible(chromedp.CSS("#flash")),
	)
	if msg := b.text("#flash"); msg != "Deleted 2 objects." || b.has(fmt.Sprintf(`tr[data-key=%q]`, key)) {
		t.Errorf("after the delete: %q", msg)
	}
	for _, k := range []string{key, "docs/a.txt"} {
		_, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(k)})
		wantErr(t, "HeadObject of "+k+" after the delete", err, "NotFound", http.StatusNotFound)
	}

	// A user without rights sees neither the bucket nor its objects.
	ac, err := adminapi.NewClient(ts.endpoint, testAccessKey, testSecretKey, testRegion, newHTTPClient())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ac.CreateUser(ctx, "carol"); err != nil {
		t.Fatal(err)
	}
	if err := ac.SetPassword(ctx, "carol", "carol-password"); err != nil {
		t.Fatal(err)
	}
	b.do("root signs out", chromedp.Click(chromedp.CSS("#logout")), chromedp.WaitVisible(chromedp.CSS("#login")))
	b.signIn("carol", "carol-password")
	b.do("carol opens the object browser", chromedp.Navigate(b.base+"/objects"), chromedp.WaitVisible(chromedp.CSS("#no-buckets")))
	b.do("carol opens the bucket by name", chromedp.Navigate(b.base+"/objects/"+bucket+"?prefix=docs%2F"), chromedp.WaitVisible(chromedp.CSS("#error")))
	if st := b.status(); st != http.StatusForbidden || b.has(`tr[data-key]`) {
		t.Errorf("carol's view of %s: status %d, objects shown %v", bucket, st, b.has(`tr[data-key]`))
	}
	b.do("carol opens an object by name", chromedp.Navigate(b.base+"/objects/"+bucket+"/download?key=top.txt"), chromedp.WaitVisible(chromedp.CSS("#error")))
	if st := b.status(); st != http.StatusForbidden {
		t.Errorf("carol's download of top.txt: status %d, want 403", st)
	}
}
