package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/chromedp/chromedp"

	"github.com/coffer-s3/coffer/internal/adminapi"
	"github.com/coffer-s3/coffer/internal/iam"
)

// screenshotsEnv names the directory TestConsoleScreenshots writes its
// PNGs to; without it the test is skipped. scripts/console-screenshots.sh
// sets it to docs/console.
const screenshotsEnv = "COFFER_SCREENSHOTS"

// Screenshot size: a common laptop viewport.
const shotWidth, shotHeight = 1280, 800

// TestConsoleScreenshots fills a server with a few buckets, objects,
// users, policies and some traffic, and writes a PNG of every console
// page into $COFFER_SCREENSHOTS, for docs/console.md.
func TestConsoleScreenshots(t *testing.T) {
	dir := os.Getenv(screenshotsEnv)
	if dir == "" {
		t.Skip(screenshotsEnv + " is not set")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bctx := newBrowser(t)
	ts := startServer(t, "--console.metrics-interval", "250ms", "--audit.read-sample", "1")
	c := ts.client(t)
	ctx := t.Context()
	b := &consoleBrowser{t: t, ctx: bctx, base: "http://" + ts.console}

	// Buckets and objects.
	for _, name := range []string{"photos", "backups", "logs"} {
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
			t.Fatal(err)
		}
	}
	put := func(bucket, key string, size int, ct string) {
		t.Helper()
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key),
			Body: bytes.NewReader(bytes.Repeat([]byte("x"), size)), ContentType: aws.String(ct),
			Metadata: map[string]string{"camera": "x100v"}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 6 {
		put("photos", fmt.Sprintf("2025/holiday/img_%04d.jpg", 101+i), 180_000+i*3_100, "image/jpeg")
	}
	for _, k := range []string{"2024/cat.jpg", "2025/dog.jpg", "cover.png", "notes.txt"} {
		put("photos", k, 42_000, "image/jpeg")
	}
	put("backups", "db/2025-11-25.sql.gz", 2_400_000, "application/gzip")
	put("logs", "app/2025-11-25.log", 9_000, "text/plain")

	// Users, a group and policies.
	ac, err := adminapi.NewClient(ts.endpoint, testAccessKey, testSecretKey, testRegion, newHTTPClient())
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"alice", "bob", "ci-deploy"} {
		if _, err := ac.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	if err := ac.SetPassword(ctx, "alice", "alice-password"); err != nil {
		t.Fatal(err)
	}
	const photosRead = `{"Version":"2012-10-17","Statement":[{"Sid":"ReadPhotos","Effect":"Allow","Action":["s3:GetObject","s3:ListBucket"],"Resource":["arn:aws:s3:::photos","arn:aws:s3:::photos/*"]}]}`
	if err := ac.PutPolicy(ctx, "photos-read", []byte(photosRead)); err != nil {
		t.Fatal(err)
	}
	if err := ac.CreateGroup(ctx, "editors"); err != nil {
		t.Fatal(err)
	}
	if err := ac.UpdateGroupMembers(ctx, "editors", []string{"alice", "bob"}, nil); err != nil {
		t.Fatal(err)
	}
	for _, at := range []struct {
		policy string
		target iam.Target
	}{
		{"photos-read", iam.Target{User: "alice"}},
		{"readwrite", iam.Target{Group: "editors"}},
		{"writeonly", iam.Target{User: "ci-deploy"}},
	} {
		if err := ac.AttachPolicy(ctx, at.policy, at.target); err != nil {
			t.Fatal(err)
		}
	}
	b.signIn(testAccessKey, testSecretKey)

	// Traffic for the Metrics and Audit pages, until the shots are taken.
	trafficCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; trafficCtx.Err() == nil; i++ {
			key := fmt.Sprintf("2025/holiday/img_%04d.jpg", 101+i%6)
			out, err := c.GetObject(trafficCtx, &s3.GetObjectInput{Bucket: aws.String("photos"), Key: aws.String(key)})
			if err == nil {
				_, _ = io.Copy(io.Discard, out.Body)
				_ = out.Body.Close()
			}
			if i%3 == 0 {
				_, _ = c.PutObject(trafficCtx, &s3.PutObjectInput{Bucket: aws.String("logs"), Key: aws.String(fmt.Sprintf("app/%d.log", i%40)),
					Body: bytes.NewReader(bytes.Repeat([]byte("l"), 20_000+i%7*5_000))})
			}
			if i%7 == 0 {
				_, _ = c.HeadObject(trafficCtx, &s3.HeadObjectInput{Bucket: aws.String("photos"), Key: aws.String("missing.jpg")})
			}
			time.Sleep(time.Duration(8+i%5*6) * time.Millisecond)
		}
	})
	defer func() { stop(); wg.Wait() }()
	time.Sleep(12 * time.Second)

	shot := func(name, path, ready string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		all := append([]chromedp.Action[chromedp.Void]{
			chromedp.EmulateViewport(shotWidth, shotHeight),
			chromedp.Navigate(b.base + path),
			chromedp.WaitVisible(chromedp.CSS(ready)),
		}, steps...)
		b.do("open "+path, all...)
		png, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatalf("screenshot of %s: %v", path, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s.png: %s, %d KiB", name, path, len(png)>>10)
	}
	shot("buckets", "/buckets", "#user")
	shot("objects", "/objects/photos?prefix=2025/holiday/", "#user")
	shot("object", "/objects/photos/object?key=2025/holiday/img_0101.jpg", "#user")
	shot("users", "/users", "#users")
	shot("user", "/users/alice", "#create-key")
	shot("groups", "/groups", "#user")
	shot("policies", "/policies", "#user")
	shot("policy", "/policies/photos-read", "#user")
	shot("simulator", "/simulator?as=user&user=alice&action=s3:PutObject&bucket=photos&object=cat.jpg", "#verdict")
	shot("audit", "/audit?bucket=photos&outcome=success", "#events")
	shot("metrics", "/monitoring", "#charts",
		waitJS(`Number(document.querySelector("#charts").dataset.samples || 0) > 30`),
		waitJS(`document.querySelector("#ops tbody tr[data-op]") !== null`))
	b.do("sign out", chromedp.Click(chromedp.CSS("#logout")), chromedp.WaitVisible(chromedp.CSS("#login")))
	shot("login", "/login", "#login")
	if strings.Contains(ts.logs.String(), "level=ERROR") {
		t.Errorf("the server logged errors")
	}
}
