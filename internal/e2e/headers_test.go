package e2e

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestHeaderSectionTooLarge checks that a request whose header section is
// over the server's limit (64 KiB) gets S3's XML error, 400
// RequestHeaderSectionTooLarge, whatever its size and on a kept-alive
// connection too, and that an object whose content is net/http's own
// plain-text 431 answer (which the S3 listener rewrites) reads back intact.
func TestHeaderSectionTooLarge(t *testing.T) {
	t.Parallel()
	testHeaderSectionTooLarge(t, startServer(t))
}

func testHeaderSectionTooLarge(t *testing.T, ts s3Target) {
	c := ts.client(t)
	b := mkBucket(t, c, "hdr")

	const net431 = "HTTP/1.1 431 Request Header Fields Too Large\r\n" +
		"Content-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n" +
		"431 Request Header Fields Too Large"
	put(t, c, b, "431", []byte(net431))
	checkBody(t, "object holding net/http's 431 answer", get(t, c, b, "431"), []byte(net431))

	endpoint, hc := ts.rawEndpoint()
	for _, size := range []int{100 << 10, 300 << 10, 1 << 20} {
		// A request on a kept-alive connection first, then the large one.
		if resp, _ := do(t, hc, rawReq{method: "GET", target: "/" + b + "/431"}.build(t, endpoint)); resp.StatusCode != http.StatusOK {
			t.Fatalf("GET: status %d", resp.StatusCode)
		}
		r := rawReq{method: "GET", target: "/" + b + "/431", header: map[string]string{"X-Junk": strings.Repeat("j", size)}}.build(t, endpoint)
		resp, body := do(t, hc, r)
		doc := checkError(t, "oversized header section", resp, body, "RequestHeaderSectionTooLarge", http.StatusBadRequest, "-")
		if doc.Message != "Your request header section exceeds the maximum allowed size." {
			t.Errorf("Message %q", doc.Message)
		}
		if !bytes.Contains(body, []byte("<MaxSizeAllowed>65536</MaxSizeAllowed>")) {
			t.Errorf("no MaxSizeAllowed in %s", body)
		}
	}

	// An SDK gets the code as a typed API error.
	_, err := c.PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: aws.String(b), Key: aws.String("big-meta"), Body: strings.NewReader("x"),
		Metadata: map[string]string{"big": strings.Repeat("m", 100<<10)},
	})
	wantErr(t, "PutObject with 100 KiB of metadata", err, "RequestHeaderSectionTooLarge", http.StatusBadRequest)
}
