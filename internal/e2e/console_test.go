package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/chromedp/chromedp"

	"github.com/coffer-s3/coffer/internal/adminapi"
)

// consoleBrowser drives the web console in a real Chromium.
type consoleBrowser struct {
	t    *testing.T
	ctx  context.Context
	base string // http://console-address
}

// status returns the HTTP status of the page shown (the last response of
// its navigation, after redirects).
func (b *consoleBrowser) status() int {
	b.t.Helper()
	st, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](`performance.getEntriesByType("navigation")[0].responseStatus`))
	if err != nil {
		b.t.Fatalf("read the page's status: %v", err)
	}
	return st
}

// text returns the text of the element sel.
func (b *consoleBrowser) text(sel string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("read %s: %v", sel, err)
	}
	return s
}

// location returns the URL shown.
func (b *consoleBrowser) location() string {
	b.t.Helper()
	u, err := chromedp.Run(b.ctx, chromedp.Location())
	if err != nil {
		b.t.Fatal(err)
	}
	return u
}

// has reports whether an element matches the CSS selector sel.
func (b *consoleBrowser) has(sel string) bool {
	b.t.Helper()
	ok, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](fmt.Sprintf(`document.querySelector(%q) !== null`, sel)))
	if err != nil {
		b.t.Fatal(err)
	}
	return ok
}

// do runs steps, failing the test with what on error.
func (b *consoleBrowser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// signIn submits the sign-in form and waits for the next page: the
// console's (#user) or the form again with an error (#error).
func (b *consoleBrowser) signIn(user, password string) {
	b.t.Helper()
	b.do("sign in as "+user,
		chromedp.Navigate(b.base+"/login"),
		chromedp.SetValue(chromedp.CSS("#username"), user),
		chromedp.SetValue(chromedp.CSS("#password"), password),
		chromedp.Click(chromedp.CSS("#signin")),
		chromedp.WaitVisible(chromedp.CSS("#user, #error")),
	)
}

// TestConsoleBrowser signs in to the console in Chromium, fails with a
// wrong password, creates and deletes a bucket, is refused a forged POST
// from another origin, shows a user without rights no bucket, and locks
// a client out after 10 failed sign-ins.
func TestConsoleBrowser(t *testing.T) {
	t.Parallel()
	bctx := newBrowser(t)
	ts := startServer(t)
	c := ts.client(t)
	ctx := t.Context()
	b := &consoleBrowser{t: t, ctx: bctx, base: "http://" + ts.console}

	private := mkBucket(t, c, "console-private")
	ac, err := adminapi.NewClient(ts.endpoint, testAccessKey, testSecretKey, testRegion, newHTTPClient())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ac.CreateUser(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if err := ac.SetPassword(ctx, "alice", "alice-password"); err != nil {
		t.Fatal(err)
	}

	// A page of the console without a session leads to the sign-in form;
	// a wrong password answers 401 with the form and a message.
	b.do("open the console", chromedp.Navigate(b.base+"/buckets"), chromedp.WaitVisible(chromedp.CSS("#login")))
	b.signIn(testAccessKey, "not-the-secret")
	if st, msg := b.status(), b.text("#error"); st != http.StatusUnauthorized || msg != "Wrong user name or password." {
		t.Errorf("wrong password: status %d, message %q", st, msg)
	}
	failures := 1

	// Root signs in with its keys and lands on the bucket list.
	b.signIn(testAccessKey, testSecretKey)
	if u := b.location(); u != b.base+"/buckets" || b.text("#user") != "root" {
		t.Fatalf("after sign-in at %s as %q, want %s/buckets as root", u, b.text("#user"), b.base)
	}
	if !b.has(fmt.Sprintf(`tr[data-bucket=%q]`, private)) {
		t.Errorf("root does not see bucket %s", private)
	}

	// Create a bucket, then delete it through the confirmation step.
	const made = "console-made-in-browser"
	b.do("create a bucket",
		chromedp.SetValue(chromedp.CSS("#bucket-name"), made),
		chromedp.Click(chromedp.CSS("#create")),
		chromedp.WaitVisible(chromedp.CSS("#flash")),
	)
	if msg := b.text("#flash"); msg != "Created bucket "+made+"." || !b.has(fmt.Sprintf(`tr[data-bucket=%q]`, made)) {
		t.Errorf("after creating: flash %q, row shown %v", msg, b.has(fmt.Sprintf(`tr[data-bucket=%q]`, made)))
	}
	if _, err := c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(made)}); err != nil {
		t.Errorf("HeadBucket of the bucket made in the console: %v", err)
	}
	b.do("delete the bucket",
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`tr[data-bucket=%q] a.danger`, made))),
		chromedp.WaitVisible(chromedp.CSS("#confirm")),
		chromedp.Click(chromedp.CSS("#confirm")),
		chromedp.WaitVisible(chromedp.CSS("#flash")),
	)
	if msg := b.text("#flash"); msg != "Deleted bucket "+made+"." || b.has(fmt.Sprintf(`tr[data-bucket=%q]`, made)) {
		t.Errorf("after deleting: flash %q", msg)
	}
	_, err = c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(made)})
	wantErr(t, "HeadBucket after the console deleted it", err, "NotFound", http.StatusNotFound)

	// Another origin's page posts a form to the console without the CSRF
	// token. The browser sends the session cookie (127.0.0.1 on another
	// port is the same site), so only the Origin and CSRF checks stand
	// between it and a new bucket.
	const forged = "forged-from-elsewhere"
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html><body><form id="f" method="post" action="%s/buckets">
<input type="hidden" name="name" value="%s"><button id="go" type="submit">win a prize</button></form></body></html>`, b.base, forged)
	}))
	t.Cleanup(evil.Close)
	b.do("submit the forged form",
		chromedp.Navigate(evil.URL+"/"),
		chromedp.Click(chromedp.CSS("#go")),
		chromedp.WaitVisible(chromedp.CSS("#error")),
	)
	if st, msg := b.status(), b.text("#error"); st != http.StatusForbidden || !strings.Contains(msg, "Origin check failed") {
		t.Errorf("forged POST: status %d, message %q; want 403 from the origin check", st, msg)
	}
	_, err = c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(forged)})
	wantErr(t, "HeadBucket of the forged bucket", err, "NotFound", http.StatusNotFound)

	// Sign out; the session is gone.
	b.do("sign out",
		chromedp.Navigate(b.base+"/buckets"),
		chromedp.Click(chromedp.CSS("#logout")),
		chromedp.WaitVisible(chromedp.CSS("#login")),
	)
	b.do("open the console signed out", chromedp.Navigate(b.base+"/buckets"), chromedp.WaitVisible(chromedp.CSS("#login")))

	// A user without policies sees no bucket, not even by name.
	b.signIn("alice", "alice-password")
	if b.text("#user") != "alice" || !b.has("#no-buckets") || b.has(fmt.Sprintf(`tr[data-bucket=%q]`, private)) {
		t.Errorf("alice's bucket page shows buckets, or is not alice's")
	}
	b.do("alice signs out", chromedp.Click(chromedp.CSS("#logout")), chromedp.WaitVisible(chromedp.CSS("#login")))

	// Strangers (a client without the browser's cookies) fail as alice
	// from this address until the address and the name are locked: the
	// browser, which signed in as alice before and shows its device
	// cookie, still signs in.
	for ; failures < 10; failures++ {
		form := url.Values{"username": {"alice"}, "password": {fmt.Sprintf("guess-%d", failures)}}
		rq, err := http.NewRequestWithContext(ctx, http.MethodPost, b.base+"/login", strings.NewReader(form.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		rq.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		rq.Header.Set("Origin", b.base)
		resp, err := newHTTPClient().Do(rq)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("stranger's failure %d: status %d, want 401", failures+1, resp.StatusCode)
		}
	}
	b.signIn("alice", "alice-password")
	if b.text("#user") != "alice" {
		t.Fatalf("alice's own browser was locked out by strangers' failures: status %d, %q", b.status(), b.text("#error"))
	}
	b.do("alice signs out again", chromedp.Click(chromedp.CSS("#logout")), chromedp.WaitVisible(chromedp.CSS("#login")))

	// Its own ten failures lock the browser's device too: then it counts
	// as a stranger, and the right password gets 429.
	for i := range 10 {
		b.signIn("alice", fmt.Sprintf("browser-guess-%d", i))
		if st := b.status(); st != http.StatusUnauthorized {
			t.Fatalf("the browser's failure %d: status %d, want 401", i+1, st)
		}
	}
	b.signIn("alice", "alice-password")
	if st, msg := b.status(), b.text("#error"); st != http.StatusTooManyRequests || !strings.HasPrefix(msg, "Too many failed sign-ins. Try again in ") {
		t.Errorf("right password after 10 failures: status %d, message %q; want 429", st, msg)
	}
	if b.has("#user") {
		t.Errorf("a locked-out client was signed in")
	}
}
