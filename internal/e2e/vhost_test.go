package e2e

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/coffer-s3/coffer/internal/sigv4"
)

const vhostDomain = "s3.test"

// vhostHTTPClient returns a client that connects every host under
// vhostDomain (and vhostDomain itself) to the server's real address.
func vhostHTTPClient(addr string) *http.Client {
	_, port, _ := net.SplitHostPort(addr)
	d := &net.Dialer{Timeout: 5 * time.Second}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = func(ctx context.Context, network, a string) (net.Conn, error) {
		host, p, err := net.SplitHostPort(a)
		if err == nil && p == port && (host == vhostDomain || strings.HasSuffix(host, "."+vhostDomain)) {
			a = addr
		}
		return d.DialContext(ctx, network, a)
	}
	return &http.Client{Transport: tr, Timeout: time.Minute}
}

func TestVirtualHostedStyle(t *testing.T) {
	t.Parallel()
	ts := startServer(t, "--domain", vhostDomain)
	_, port, _ := net.SplitHostPort(ts.addr)
	base := "http://" + vhostDomain + ":" + port
	hc := vhostHTTPClient(ts.addr)
	vc := newClient(t, base, func(o *s3.Options) {
		o.UsePathStyle = false
		o.HTTPClient = hc
	})
	pc := ts.client(t) // path style on 127.0.0.1
	ctx := t.Context()

	b := newBucketName("vhost")
	if _, err := vc.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
		t.Fatalf("CreateBucket (virtual-hosted): %v", err)
	}
	body := randBytes(2*mib + 3)
	for _, key := range []string{"k", "dir/sub key+ü", "a//b"} {
		put(t, vc, b, key, body)
		checkBody(t, "GetObject virtual-hosted "+key, get(t, vc, b, key), body)
		checkBody(t, "GetObject path-style "+key, get(t, pc, b, key), body)
	}
	out, err := vc.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b)})
	if err != nil || aws.ToInt32(out.KeyCount) != 3 {
		t.Errorf("ListObjectsV2 virtual-hosted: %v, KeyCount %d; want 3", err, aws.ToInt32(out.KeyCount))
	}
	if _, err := vc.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(b)}); err != nil {
		t.Errorf("HeadBucket virtual-hosted: %v", err)
	}
	_, err = vc.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("no-such-vhost-bucket"), Key: aws.String("k")})
	wantErr(t, "GetObject of a missing bucket, virtual-hosted", err, "NoSuchBucket", 404)

	// Path style on the domain itself still works.
	dc := newClient(t, base, func(o *s3.Options) { o.HTTPClient = hc })
	checkBody(t, "GetObject path-style on the domain", get(t, dc, b, "k"), body)

	// A presigned virtual-hosted URL.
	u, err := sigv4.Presign("GET", "http://"+b+"."+vhostDomain+":"+port+"/k", testCreds, testRegion, time.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	resp, got := do(t, hc, mustRequest(t, "GET", u))
	if resp.StatusCode != 200 {
		t.Errorf("presigned virtual-hosted GET: %d %.300s", resp.StatusCode, got)
	} else {
		checkBody(t, "presigned virtual-hosted GET", got, body)
	}

	// Raw: the error resource of a virtual-hosted request names the key.
	r := rawReq{method: "GET", target: "/absent", host: b + "." + vhostDomain + ":" + port}.build(t, "http://"+b+"."+vhostDomain+":"+port)
	resp, rb := do(t, hc, r)
	checkError(t, "virtual-hosted NoSuchKey", resp, rb, "NoSuchKey", 404, "-")

	for _, key := range []string{"k", "dir/sub key+ü", "a//b"} {
		if _, err := vc.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String(key)}); err != nil {
			t.Errorf("DeleteObject virtual-hosted %q: %v", key, err)
		}
	}
	if _, err := vc.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(b)}); err != nil {
		t.Errorf("DeleteBucket virtual-hosted: %v", err)
	}
	if _, err := pc.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(b)}); err == nil {
		t.Errorf("bucket still exists after virtual-hosted DeleteBucket")
	}
}

func mustRequest(t *testing.T, method, u string) *http.Request {
	t.Helper()
	r, err := http.NewRequest(method, u, bytes.NewReader(nil))
	if err != nil {
		t.Fatal(err)
	}
	return r
}
