package e2e

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/chromedp/chromedp"
)

// TestConsoleBrowserAuditMetrics drives the Audit and Metrics pages in
// Chromium: the audit filter narrows the log to one bucket's failed
// requests and its export (fetched with the session) holds exactly
// those; the Metrics page draws its charts from the sampler and keeps
// them live, and shows readiness and version.
func TestConsoleBrowserAuditMetrics(t *testing.T) {
	t.Parallel()
	bctx := newBrowser(t)
	ts := startServer(t, "--console.metrics-interval", "200ms", "--audit.read-sample", "1") // reads too, so the 404s are kept
	c := ts.client(t)
	ctx := t.Context()
	b := &consoleBrowser{t: t, ctx: bctx, base: "http://" + ts.console}

	bucket := mkBucket(t, c, "console-audit")
	other := mkBucket(t, c, "console-other")
	for i := range 3 {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(fmt.Sprintf("logs/%d.txt", i)), Body: strings.NewReader("hello")}); err != nil {
			t.Fatal(err)
		}
	}
	for _, bk := range []string{bucket, bucket, other} { // two failures in bucket, one elsewhere
		_, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bk), Key: aws.String("missing")})
		wantErr(t, "GetObject of a missing key", err, "NoSuchKey", http.StatusNotFound)
	}

	b.signIn(testAccessKey, testSecretKey)
	b.do("filter the audit log",
		chromedp.Navigate(b.base+"/audit"),
		chromedp.WaitVisible(chromedp.CSS("#audit-filter")),
		chromedp.SetValue(chromedp.CSS("#f-bucket"), bucket),
		chromedp.SetValue(chromedp.CSS("#f-outcome"), "failed"),
		chromedp.Click(chromedp.CSS("#filter")),
		// The unfiltered page has #events too: wait for the filtered one.
		chromedp.WaitVisible(chromedp.CSS("#filtered")),
	)
	if u := b.location(); !strings.Contains(u, "bucket="+bucket) || !strings.Contains(u, "outcome=failed") {
		t.Errorf("the filter's address %s lacks its fields", u)
	}
	rows, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#events tbody tr")).map(tr => tr.dataset.op + " " + tr.className + " " + tr.querySelector("td.resource").textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"GetObject failed " + bucket + "/missing", "GetObject failed " + bucket + "/missing"}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("filtered rows:\n%s\nwant:\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
	export, err := chromedp.Run(bctx, chromedp.Evaluate[string](`(async () => {
		const r = await fetch(document.querySelector("#export").href);
		return r.status + " " + r.headers.get("Content-Type") + "\n" + await r.text();
	})()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	head, lines, _ := strings.Cut(strings.TrimSpace(export), "\n")
	if head != "200 application/x-ndjson" || strings.Count(lines, "\n") != 1 || strings.Count(lines, `"code":"NoSuchKey"`) != 2 || strings.Contains(lines, other) {
		t.Errorf("export of the filtered set:\n%s", export)
	}

	// Metrics: the charts fill in from the sampler (every 200 ms here)
	// and keep refreshing.
	b.do("open the metrics page",
		chromedp.Navigate(b.base+"/monitoring"),
		chromedp.WaitVisible(chromedp.CSS("#charts")),
		waitJS(`Number(document.querySelector("#charts").dataset.samples || 0) >= 2`),
	)
	if v, h := b.text("#version"), b.text("#health"); v == "" || h != "ready" {
		t.Errorf("version %q, health %q; want a version and ready", v, h)
	}
	charts, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#charts figure.chart")).map(f => f.dataset.chart + ":" + f.querySelectorAll("svg path.series").length)`))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(charts, " "); got != "requests:1 errors:2 latency:2 bytes:2 objects:1 stored:1" {
		t.Errorf("charts drawn: %s", got)
	}
	first, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.querySelector("#charts").dataset.samples`))
	if err != nil {
		t.Fatal(err)
	}
	// New requests show up: the request line gets points and PutObject
	// appears in the operation picker and the table.
	for i := range 5 {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(fmt.Sprintf("more/%d", i)), Body: strings.NewReader("x")}); err != nil {
			t.Fatal(err)
		}
	}
	n, _ := strconv.Atoi(first)
	b.do("wait for the charts to refresh",
		waitJS(fmt.Sprintf(`Number(document.querySelector("#charts").dataset.samples) > %d`, n)),
		waitJS(`document.querySelector('#ops tr[data-op="PutObject"]') !== null`),
		waitJS(`/L/.test(document.querySelector('#charts figure[data-chart="requests"] path.series').getAttribute("d"))`),
	)
	b.do("chart one operation",
		chromedp.SetValue(chromedp.CSS("#op"), "PutObject"),
		chromedp.Evaluate[chromedp.Void](`document.querySelector("#op").dispatchEvent(new Event("change"))`),
		waitJS(`document.querySelector('#charts figure[data-chart="requests"] path.series').dataset.name === "PutObject"`),
	)
}
