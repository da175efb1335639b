package e2e

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coffer-s3/coffer/internal/sigv4"
)

// testCreds are the root credentials as sigv4 takes them. Read-only.
var testCreds = sigv4.Credentials{AccessKeyID: testAccessKey, SecretKey: testSecretKey}

// rawReq is a hand-made S3 request, signed with sigv4.SignRequest unless
// anon is set.
type rawReq struct {
	method string
	target string // escaped path and query, e.g. "/b/k?uploads"
	body   []byte
	header map[string]string
	cred   *sigv4.Credentials // nil: testCreds
	anon   bool
	at     time.Time // signing time; zero: now
	hash   string    // x-amz-content-sha256; "": hex SHA-256 of body
	region string    // "": testRegion
	host   string    // Host header; "": the server address
	chunk  bool      // send the body with Transfer-Encoding: chunked (no Content-Length)
}

// build returns the signed *http.Request for rq against endpoint.
func (rq rawReq) build(t *testing.T, endpoint string) *http.Request {
	t.Helper()
	var body io.Reader = bytes.NewReader(rq.body)
	if rq.chunk {
		body = io.MultiReader(bytes.NewReader(rq.body)) // hides the length: net/http sends chunked
	}
	r, err := http.NewRequest(rq.method, endpoint+rq.target, body)
	if err != nil {
		t.Fatalf("NewRequest %s %s: %v", rq.method, rq.target, err)
	}
	if rq.chunk {
		r.ContentLength = -1
	}
	if rq.host != "" {
		r.Host = rq.host
	}
	for k, v := range rq.header {
		r.Header.Set(k, v)
	}
	if rq.anon {
		return r
	}
	cred := testCreds
	if rq.cred != nil {
		cred = *rq.cred
	}
	at := rq.at
	if at.IsZero() {
		at = time.Now()
	}
	hash := rq.hash
	if hash == "" {
		hash = sha256Hex(rq.body)
	}
	region := rq.region
	if region == "" {
		region = testRegion
	}
	sigv4.SignRequest(r, cred, region, at, hash)
	return r
}

// do sends r and returns the response with its body read.
func do(t *testing.T, hc *http.Client, r *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := hc.Do(r)
	if err != nil {
		t.Fatalf("%s %s: %v", r.Method, r.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", r.Method, r.URL, err)
	}
	return resp, body
}

// errorDoc is S3's XML error document.
type errorDoc struct {
	XMLName    xml.Name `xml:"Error"`
	Code       string
	Message    string
	Resource   string
	RequestID  string `xml:"RequestId"`
	HostID     string `xml:"HostId"`
	BucketName string
	Key        string
}

// checkError checks that resp is the S3 error code with status, that its
// XML document is well-formed with a message, the resource (unless
// resource is "-") and a RequestId equal to the x-amz-request-id header.
func checkError(t *testing.T, what string, resp *http.Response, body []byte, code string, status int, resource string) errorDoc {
	t.Helper()
	var doc errorDoc
	if resp.StatusCode != status {
		t.Errorf("%s: status %d, want %d; body: %.500s", what, resp.StatusCode, status, body)
	}
	if err := xml.Unmarshal(body, &doc); err != nil {
		t.Errorf("%s: error body is not an S3 error document: %v\n%.500s", what, err, body)
		return doc
	}
	if !bytes.HasPrefix(body, []byte("<?xml")) {
		t.Errorf("%s: error document does not start with an XML declaration: %.80s", what, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/xml" {
		t.Errorf("%s: Content-Type %q, want application/xml", what, ct)
	}
	if doc.Code != code {
		t.Errorf("%s: Code %q, want %q (message %q)", what, doc.Code, code, doc.Message)
	}
	if doc.Message == "" {
		t.Errorf("%s: empty Message", what)
	}
	if resource != "-" && doc.Resource != resource {
		t.Errorf("%s: Resource %q, want %q", what, doc.Resource, resource)
	}
	id := resp.Header.Get("X-Amz-Request-Id")
	if doc.RequestID == "" || doc.RequestID != id {
		t.Errorf("%s: RequestId %q, x-amz-request-id header %q; want equal and non-empty", what, doc.RequestID, id)
	}
	return doc
}

// sendPartial writes the head of r and the first n bytes of body on a
// fresh connection, half-closes it and returns the response if the server
// sent one before closing.
func sendPartial(t *testing.T, addr string, r *http.Request, body []byte, n int) (*http.Response, []byte, bool) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer conn.Close()
	var head strings.Builder
	fmt.Fprintf(&head, "%s %s HTTP/1.1\r\nHost: %s\r\n", r.Method, r.URL.RequestURI(), r.Host)
	for k, vs := range r.Header {
		for _, v := range vs {
			fmt.Fprintf(&head, "%s: %s\r\n", k, v)
		}
	}
	fmt.Fprintf(&head, "Content-Length: %d\r\n\r\n", len(body))
	if _, err := io.WriteString(conn, head.String()); err != nil {
		t.Fatalf("write head: %v", err)
	}
	if _, err := conn.Write(body[:n]); err != nil {
		t.Fatalf("write body: %v", err)
	}
	conn.(*net.TCPConn).CloseWrite()
	conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), r)
	if err != nil {
		return nil, nil, false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b, true
}
