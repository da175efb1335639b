package e2e

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// upstreamTimeout is the gateway's blob.s3.timeout in TestUpstreamDown.
const upstreamTimeout = 2 * time.Second

// upstreamBound is how long a request that needs an unreachable upstream
// may take to answer 503: three attempts of upstreamTimeout, s3blob's
// backoff between them (below 1s, then 2s), and slack for a loaded
// machine under -race.
const upstreamBound = 3*upstreamTimeout + 3*time.Second + 3*time.Second

// TestUpstreamDown runs a gateway (blob.kind s3) over an upstream Coffer
// that is stopped (SIGSTOP: it accepts connections but never answers) and
// then killed (connections refused) and restarted on the same port and
// data: requests that need a block answer 503 ServiceUnavailable with
// Retry-After within upstreamBound and commit nothing, inline objects,
// HEAD and listings keep working, readiness says degraded, and the
// gateway works again by itself once the upstream is back, with every
// acknowledged object intact.
func TestUpstreamDown(t *testing.T) {
	t.Parallel()
	up := startChild(t, t.TempDir())
	upc := newClient(t, up.endpoint)
	blocks := mkBucket(t, upc, "blocks")
	ops := freeAddr(t)
	gw := startChildEnv(t, t.TempDir(), []string{"COFFER_BLOB_S3_SECRET_KEY=" + testSecretKey},
		"--blob.kind", "s3", "--blob.s3.endpoint", up.endpoint, "--blob.s3.bucket", blocks, "--blob.s3.prefix", "gw/",
		"--blob.s3.access-key", testAccessKey, "--blob.s3.timeout", upstreamTimeout.String(),
		"--block-size", "1MiB", "--console-address", ops)
	gwts := &testServer{endpoint: gw.endpoint}
	c := newClient(t, gw.endpoint)
	b := mkBucket(t, c, "gw")

	acked := map[string][]byte{}
	store := func(key string, data []byte) {
		t.Helper()
		put(t, c, b, key, data)
		acked[key] = data
	}
	small, big := randBytes(1000), randBytes(3*mib+5)
	store("small", small)
	store("big", big)
	wantReady(t, ops, "ok", "")

	outage := func(t *testing.T, kind string) {
		// A PUT of a new version whose blocks cannot be stored: 503,
		// and the old version stays.
		start := time.Now()
		resp, body := raw(t, gwts, rawReq{method: http.MethodPut, target: "/" + b + "/big", body: randBytes(3 * mib)})
		took := time.Since(start)
		checkError(t, "PUT of a block object", resp, body, "ServiceUnavailable", http.StatusServiceUnavailable, "/"+b+"/big")
		wantRetryAfter(t, "PUT of a block object", resp.Header)
		t.Logf("%s: PUT answered %d in %v", kind, resp.StatusCode, took.Round(time.Millisecond))
		if took > upstreamBound {
			t.Errorf("PUT with the upstream %s took %v, more than %v", kind, took, upstreamBound)
		}

		start = time.Now()
		resp, body = raw(t, gwts, rawReq{method: http.MethodGet, target: "/" + b + "/big"})
		took = time.Since(start)
		checkError(t, "GET of a block object", resp, body, "ServiceUnavailable", http.StatusServiceUnavailable, "/"+b+"/big")
		wantRetryAfter(t, "GET of a block object", resp.Header)
		t.Logf("%s: GET answered %d in %v", kind, resp.StatusCode, took.Round(time.Millisecond))
		if took > upstreamBound {
			t.Errorf("GET with the upstream %s took %v, more than %v", kind, took, upstreamBound)
		}

		// What needs no block works.
		checkBody(t, "GET of an inline object", get(t, c, b, "small"), small)
		head, err := c.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String("big")})
		if err != nil || aws.ToInt64(head.ContentLength) != int64(len(big)) || aws.ToString(head.ETag) != quoted(md5Hex(big)) {
			t.Errorf("HEAD big while the upstream is %s = %v; want the acknowledged version (%d bytes)", kind, err, len(big))
		}
		list, err := c.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String(b)})
		if err != nil || len(list.Contents) != len(acked) {
			t.Errorf("ListObjectsV2 while the upstream is %s = %v, %d keys; want the %d acknowledged", kind, err, len(list.Contents), len(acked))
		}
		store("small-"+kind, randBytes(2000))

		if kind == "refused" {
			// Multipart parts and copies of block objects need the upstream too.
			u := createUpload(t, c, b, "mp")
			_, err = c.UploadPart(t.Context(), &s3.UploadPartInput{Bucket: aws.String(b), Key: aws.String("mp"), UploadId: aws.String(u.id),
				PartNumber: aws.Int32(1), Body: strings.NewReader(string(randBytes(mib)))})
			wantUnavailable(t, "UploadPart", err)
			_, err = c.CopyObject(t.Context(), &s3.CopyObjectInput{Bucket: aws.String(b), Key: aws.String("copy"), CopySource: aws.String(b + "/big")})
			wantUnavailable(t, "CopyObject of a block object", err)
		}
		wantReady(t, ops, "degraded", "unavailable ("+map[string]string{"stopped": "timeout", "refused": "connect"}[kind]+")")
	}

	t.Run("stopped", func(t *testing.T) {
		if err := syscall.Kill(up.cmd.Process.Pid, syscall.SIGSTOP); err != nil {
			t.Fatalf("SIGSTOP %d: %v", up.cmd.Process.Pid, err)
		}
		resumed := false
		resume := func() {
			if !resumed {
				resumed = true
				if err := syscall.Kill(up.cmd.Process.Pid, syscall.SIGCONT); err != nil {
					t.Errorf("SIGCONT %d: %v", up.cmd.Process.Pid, err)
				}
			}
		}
		defer resume()
		outage(t, "stopped")
		resume()
		waitReady(t, ops)
		checkBody(t, "GET big after the upstream resumed", get(t, c, b, "big"), big)
	})

	t.Run("refused", func(t *testing.T) {
		up.kill()
		outage(t, "refused")
		up = up.restart()
		waitReady(t, ops)
		checkBody(t, "GET big after the upstream restarted", get(t, c, b, "big"), big)
		store("big", randBytes(2*mib+1))
	})

	for key, data := range acked {
		checkBody(t, "GET "+key+" at the end", get(t, c, b, key), data)
	}
	errs := map[string]float64{}
	for _, s := range scrapeMetrics(t, ops) {
		if s.name == "coffer_upstream_errors_total" {
			errs[s.labels["kind"]] = s.value
		}
	}
	t.Logf("coffer_upstream_errors_total: %v", errs)
	for _, kind := range []string{"timeout", "connect"} {
		if errs[kind] < 1 {
			t.Errorf("coffer_upstream_errors_total{kind=%q} = %v, want at least 1", kind, errs[kind])
		}
	}
	if l := gw.out.String(); !strings.Contains(l, "upstream block store unavailable") || !strings.Contains(l, "upstream block store reachable again") {
		t.Errorf("the gateway's log does not report the outages and their ends")
	}
}

// wantRetryAfter fails unless h has a Retry-After of whole seconds.
func wantRetryAfter(t *testing.T, what string, h http.Header) {
	t.Helper()
	if n, err := strconv.Atoi(h.Get("Retry-After")); err != nil || n < 1 {
		t.Errorf("%s: Retry-After %q, want a number of seconds", what, h.Get("Retry-After"))
	}
}

// wantUnavailable fails unless err is a 503 ServiceUnavailable with
// Retry-After.
func wantUnavailable(t *testing.T, what string, err error) {
	t.Helper()
	wantErr(t, what, err, "ServiceUnavailable", http.StatusServiceUnavailable)
	if re, ok := errors.AsType[*smithyhttp.ResponseError](err); ok && re.Response != nil {
		wantRetryAfter(t, what, re.Response.Header)
	}
}

// wantReady fails unless /readyz answers 200 with status and blocks
// within a few seconds (a round's result is cached for a second).
func wantReady(t *testing.T, ops, status, blocks string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, d, err := getReady("http://" + ops + "/readyz")
		if err == nil && code == http.StatusOK && d.Status == status && d.Blocks == blocks {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("/readyz = %d %+v (%v), want 200 with status %q, blocks %q", code, d, err, status, blocks)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitReady waits until /readyz says ok again, and reports how long that
// took.
func waitReady(t *testing.T, ops string) {
	t.Helper()
	start := time.Now()
	wantReady(t, ops, "ok", "")
	t.Logf("ready again %v after the upstream returned", time.Since(start).Round(time.Millisecond))
}
