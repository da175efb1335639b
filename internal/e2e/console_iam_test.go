package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/chromedp/chromedp"
)

// TestConsoleIAMBrowser drives the Users, Policies and Simulator pages in
// Chromium as root: create a user (its secret shown once, and working
// through S3), a policy (a mistake shown inline first), attach it, make a
// scoped key, and ask the simulator, which answers allowed for the user
// and denied for the key, naming the statements that decide.
func TestConsoleIAMBrowser(t *testing.T) {
	t.Parallel()
	bctx := newBrowser(t)
	ts := startServer(t)
	ctx := t.Context()
	b := &consoleBrowser{t: t, ctx: bctx, base: "http://" + ts.console}
	bucket := mkBucket(t, ts.client(t), "console-iam")
	if _, err := ts.client(t).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("a.jpg"), Body: strings.NewReader("jpeg")}); err != nil {
		t.Fatal(err)
	}
	b.signIn(testAccessKey, testSecretKey)

	// Create a user: the secret is shown on this page only.
	b.do("create a user",
		chromedp.Navigate(b.base+"/users"),
		chromedp.SetValue(chromedp.CSS("#user-name"), "carol"),
		chromedp.Click(chromedp.CSS("#create")),
		chromedp.WaitVisible(chromedp.CSS("#secret-key")),
	)
	ak, sk := b.text("#access-key"), b.text("#secret-key")
	if ak == "" || sk == "" || b.text("#new-key-user") != "carol" {
		t.Fatalf("new user page: key %q, secret shown %v", ak, sk != "")
	}
	carol := ts.clientAs(t, ak, sk)
	if _, err := carol.ListBuckets(ctx, &s3.ListBucketsInput{}); err != nil {
		t.Errorf("ListBuckets with the key shown: %v", err)
	}
	b.do("open carol's page", chromedp.Click(chromedp.CSS("#done")), chromedp.WaitVisible(chromedp.CSS("#create-key")))
	if html := b.html(); strings.Contains(html, sk) {
		t.Error("the user's page shows the secret again")
	}

	// A policy with a mistake is refused beside the editor; then a good one.
	good := fmt.Sprintf(`{"Version":"2012-10-17","Statement":[{"Sid":"ReadBucket","Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::%s/*"}]}`, bucket)
	b.do("create a bad policy",
		chromedp.Navigate(b.base+"/policies"),
		chromedp.SetValue(chromedp.CSS("#policy-name"), "bucket-read"),
		chromedp.SetValue(chromedp.CSS("#policy-document"), strings.Replace(good, "s3:GetObject", "s3:GetObjekt", 1)),
		chromedp.Click(chromedp.CSS("#create")),
		chromedp.WaitVisible(chromedp.CSS("#policy-error")),
	)
	if msg := b.text("#policy-error"); !strings.Contains(msg, `Statement 1 ("ReadBucket"):`) || !strings.Contains(msg, "s3:GetObjekt") {
		t.Errorf("policy error shown = %q", msg)
	}
	b.do("create the policy",
		chromedp.SetValue(chromedp.CSS("#policy-document"), good),
		chromedp.Click(chromedp.CSS("#create")),
		chromedp.WaitVisible(chromedp.CSS("#flash")),
	)
	b.do("attach it to carol",
		chromedp.Navigate(b.base+"/users/carol"),
		chromedp.SetValue(chromedp.CSS("#attach"), "bucket-read"),
		chromedp.Submit(chromedp.CSS("#attach-policy")),
		chromedp.WaitVisible(chromedp.CSS("#user-policies")),
	)
	if got := b.text("#flash"); got != "Attached policy bucket-read." {
		t.Errorf("flash after attach = %q", got)
	}

	// A key scoped to thumbnails only: shown once, narrower than carol.
	b.do("create a scoped key",
		chromedp.SetValue(chromedp.CSS("#key-description"), "thumbnailer"),
		chromedp.SetValue(chromedp.CSS("#key-policy"), fmt.Sprintf(
			`{"Version":"2012-10-17","Statement":[{"Sid":"Thumbs","Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::%s/thumbs/*"}]}`, bucket)),
		chromedp.Click(chromedp.CSS("#create-key-button")),
		chromedp.WaitVisible(chromedp.CSS("#secret-key")),
	)
	scoped, scopedSecret := b.text("#access-key"), b.text("#secret-key")
	if _, err := ts.clientAs(t, scoped, scopedSecret).GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("a.jpg")}); err == nil {
		t.Error("the scoped key read outside its scope")
	}
	if got := readAll(t, carol, bucket, "a.jpg"); got != "jpeg" {
		t.Errorf("carol reads %q", got)
	}

	// The simulator agrees: carol may read, her scoped key may not.
	b.do("simulate carol",
		chromedp.Navigate(b.base+"/simulator"),
		chromedp.Click(chromedp.CSS("#as-user")),
		chromedp.SetValue(chromedp.CSS("#sim-user"), "carol"),
		chromedp.SetValue(chromedp.CSS("#sim-action"), "s3:GetObject"),
		chromedp.SetValue(chromedp.CSS("#sim-bucket"), bucket),
		chromedp.SetValue(chromedp.CSS("#sim-object"), "a.jpg"),
		chromedp.Click(chromedp.CSS("#simulate-button")),
		chromedp.WaitVisible(chromedp.CSS("#verdict")),
	)
	if v, msg, dec := b.text("#verdict-title"), b.text("#verdict-message"), b.text("#deciding"); v != "Allowed" ||
		!strings.Contains(msg, `statement "ReadBucket" of policy "bucket-read"`) || !strings.Contains(dec, `statement "ReadBucket"`) {
		t.Errorf("simulate carol: %q, %q, deciding %q", v, msg, dec)
	}
	b.do("simulate the scoped key",
		chromedp.Click(chromedp.CSS("#as-key")),
		chromedp.SetValue(chromedp.CSS("#sim-key"), scoped),
		chromedp.Click(chromedp.CSS("#simulate-button")),
		chromedp.WaitVisible(chromedp.CSS("#verdict.denied")),
	)
	if v, msg := b.text("#verdict-title"), b.text("#verdict-message"); v != "Denied" ||
		!strings.Contains(msg, "but the scope of access key "+scoped+" is narrower") {
		t.Errorf("simulate the scoped key: %q, %q", v, msg)
	}
	if dec := b.text("#deciding"); !strings.Contains(dec, `statement "ReadBucket"`) || !strings.Contains(dec, "the scope of access key "+scoped) {
		t.Errorf("deciding statements for the scoped key: %q", dec)
	}
}

// html returns the page's markup.
func (b *consoleBrowser) html() string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.documentElement.outerHTML`))
	if err != nil {
		b.t.Fatal(err)
	}
	return s
}
