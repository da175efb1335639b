package loadgen

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/coffer-s3/coffer/internal/sigv4"
)

// Target is an S3 endpoint to benchmark.
type Target struct {
	Name      string // label in reports
	URL       string // endpoint, e.g. http://127.0.0.1:9000
	AccessKey string
	SecretKey string
	Region    string // signing region; "" means us-east-1

	// ConsoleURL is the target's web console (Coffer's ops listener,
	// http://127.0.0.1:6790), and ConsoleUser and ConsolePassword a
	// console sign-in, for the console cases; "" for a target without one
	// (MinIO, Garage), whose console cases are skipped.
	ConsoleURL, ConsoleUser, ConsolePassword string
}

// ParseTarget parses NAME=URL.
func ParseTarget(s string) (Target, error) {
	// Errors name the target, never its URL, which may hold a password.
	name, raw, ok := strings.Cut(s, "=")
	if !ok || name == "" || raw == "" {
		return Target{}, errors.New("target: want NAME=URL, e.g. coffer=http://127.0.0.1:6789")
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return Target{}, fmt.Errorf("target %q: URL must be http(s)://host[:port], without credentials", name)
	}
	return Target{Name: name, URL: strings.TrimSuffix(raw, "/")}, nil
}

// unsignedPayload is x-amz-content-sha256 for PayloadUnsigned.
const unsignedPayload = "UNSIGNED-PAYLOAD"

// client sends signed path-style requests to one target over a transport
// of its own.
type client struct {
	t      Target
	signer *sigv4.Signer // caches the signing key per date
	// badSigner signs with a wrong secret, for the bad-signature
	// operation.
	badSigner *sigv4.Signer
	hc        *http.Client
	consoleHC *http.Client // the same transport, not following redirects
	tr        *http.Transport
	payload   Payload      // how uploads are signed
	sums      *payloadSums // of the run's payload; nil if none
}

// newClient returns a client for t that keeps up to conns idle
// connections and signs uploads as sums.mode says (PayloadUnsigned if sums
// is nil).
func newClient(t Target, conns int, sums *payloadSums) *client {
	if t.Region == "" {
		t.Region = "us-east-1"
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 0
	tr.MaxIdleConnsPerHost = conns + 4
	tr.DisableCompression = true
	tr.ResponseHeaderTimeout = 2 * time.Minute
	cred := sigv4.Credentials{AccessKeyID: t.AccessKey, SecretKey: t.SecretKey}
	bad := cred
	bad.SecretKey += "-wrong"
	c := &client{
		t:         t,
		signer:    sigv4.NewSigner(cred, t.Region, "s3"),
		badSigner: sigv4.NewSigner(bad, t.Region, "s3"),
		hc:        &http.Client{Transport: tr},
		consoleHC: &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		tr:        tr,
		payload:   PayloadUnsigned,
		sums:      sums,
	}
	if sums != nil {
		c.payload = sums.mode
	}
	return c
}

func (c *client) close() { c.tr.CloseIdleConnections() }

// opError is a failed request: an S3 error code, or a transport error.
type opError struct {
	Code    string // S3 code, NotFound for a bodiless 404, or ConnectionError
	Status  int
	Message string
}

func (e *opError) Error() string {
	if e.Status == 0 {
		return e.Code + ": " + e.Message
	}
	if e.Message == "" {
		return fmt.Sprintf("%s (HTTP %d)", e.Code, e.Status)
	}
	return fmt.Sprintf("%s (HTTP %d): %s", e.Code, e.Status, e.Message)
}

// errCode returns the S3 error code of err, for counting.
func errCode(err error) string {
	if oe, ok := errors.AsType[*opError](err); ok {
		return oe.Code
	}
	return "ClientError"
}

// s3ErrorBody is the part of an S3 error document we report.
type s3ErrorBody struct {
	Code    string `xml:"Code"`
	Message string `xml:"Message"`
}

// do sends one request and drains the response into buf. path is
// "/bucket" or "/bucket/key" (already safe for a URL path), query a raw
// query string. It returns the number of body bytes read.
func (c *client) do(ctx context.Context, method, path, query string, body []byte, buf []byte) (int64, error) {
	return c.doAs(ctx, c.signer, method, path, query, body, buf)
}

// doAs is do signing with s.
func (c *client) doAs(ctx context.Context, s *sigv4.Signer, method, path, query string, body []byte, buf []byte) (int64, error) {
	u := c.t.URL + path
	if query != "" {
		u += "?" + query
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, err
	}
	if err := s.Sign(req, c.bodyHash(body), time.Now()); err != nil {
		return 0, err
	}
	return c.send(ctx, req, buf)
}

// presignedGet GETs path through a URL presigned for 15 minutes.
func (c *client) presignedGet(ctx context.Context, path string, buf []byte) (int64, error) {
	u, err := c.signer.Presign(http.MethodGet, c.t.URL+path, time.Now(), 15*time.Minute)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	return c.send(ctx, req, buf)
}

// send sends req and drains the response into buf.
func (c *client) send(ctx context.Context, req *http.Request, buf []byte) (int64, error) {
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		return 0, &opError{Code: "ConnectionError", Message: connMessage(err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return 0, readError(resp)
	}
	var n int64
	for {
		m, err := resp.Body.Read(buf)
		n += int64(m)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return n, ctx.Err()
			}
			return n, &opError{Code: "ConnectionError", Message: connMessage(err)}
		}
	}
}

// connMessage shortens transport errors to their cause.
func connMessage(err error) string {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		err = ue.Err
	}
	if oe, ok := errors.AsType[*net.OpError](err); ok && oe.Op == "dial" {
		return "cannot connect: " + oe.Err.Error()
	}
	return err.Error()
}

// readError turns an error response into an *opError, with the code from
// the XML body, or one derived from the status for bodiless responses.
func readError(resp *http.Response) error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<10))
	var b s3ErrorBody
	if xml.Unmarshal(data, &b) == nil && b.Code != "" {
		return &opError{Code: b.Code, Status: resp.StatusCode, Message: b.Message}
	}
	code := strings.ReplaceAll(http.StatusText(resp.StatusCode), " ", "")
	if code == "" {
		code = "HTTP" + strconv.Itoa(resp.StatusCode)
	}
	return &opError{Code: code, Status: resp.StatusCode}
}

// listPage is the part of a ListObjectsV2 response cleanup needs.
type listPage struct {
	Keys      []string `xml:"Contents>Key"`
	Truncated bool     `xml:"IsTruncated"`
	Next      string   `xml:"NextContinuationToken"`
}

// list returns one page of keys in bucket.
func (c *client) list(ctx context.Context, bucket, token string) (listPage, error) {
	q := "list-type=2"
	if token != "" {
		q += "&continuation-token=" + url.QueryEscape(token)
	}
	u := c.t.URL + "/" + bucket + "?" + q
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return listPage{}, err
	}
	if err := c.signer.Sign(req, c.bodyHash(nil), time.Now()); err != nil {
		return listPage{}, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return listPage{}, &opError{Code: "ConnectionError", Message: connMessage(err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return listPage{}, readError(resp)
	}
	var p listPage
	if err := xml.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&p); err != nil {
		return listPage{}, fmt.Errorf("decode listing: %w", err)
	}
	return p, nil
}

// partSize is the part size of a multipart upload of size bytes: 16 MiB,
// or half the object for smaller ones, but at least S3's minimum of 5 MiB.
func partSize(size int64) int64 {
	return min(16<<20, max(5<<20, size/2))
}

// multipart uploads size bytes to path in parts of len(part) bytes (the
// last one shorter), sending part's bytes for every part.
func (c *client) multipart(ctx context.Context, path string, size int64, part []byte, buf []byte) error {
	var created struct {
		UploadID string `xml:"UploadId"`
	}
	if err := c.doXML(ctx, http.MethodPost, path, "uploads", nil, &created); err != nil {
		return err
	}
	if created.UploadID == "" {
		return &opError{Code: "ClientError", Message: "CreateMultipartUpload returned no UploadId"}
	}
	uid := url.QueryEscape(created.UploadID)
	var complete strings.Builder
	complete.WriteString("<CompleteMultipartUpload>")
	for num, off := 1, int64(0); off < size || num == 1; num++ {
		n := min(int64(len(part)), size-off)
		q := "partNumber=" + strconv.Itoa(num) + "&uploadId=" + uid
		etag, err := c.upload(ctx, path, q, part[:n], buf)
		if err != nil {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			_, _ = c.do(cctx, http.MethodDelete, path, "uploadId="+uid, nil, buf) // abort
			cancel()
			return err
		}
		fmt.Fprintf(&complete, "<Part><PartNumber>%d</PartNumber><ETag>%s</ETag></Part>", num, html.EscapeString(etag))
		off += n
	}
	complete.WriteString("</CompleteMultipartUpload>")
	var done struct {
		XMLName xml.Name
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	}
	if err := c.doXML(ctx, http.MethodPost, path, "uploadId="+uid, []byte(complete.String()), &done); err != nil {
		return err
	}
	// CompleteMultipartUpload may fail after a 200 status, in the body.
	if done.XMLName.Local == "Error" {
		return &opError{Code: done.Code, Status: http.StatusOK, Message: done.Message}
	}
	return nil
}

// upload PUTs body (an object, or a part with query set) to path, signed
// as the client's payload mode says, and returns its ETag.
func (c *client) upload(ctx context.Context, path, query string, body, buf []byte) (string, error) {
	u := c.t.URL + path
	if query != "" {
		u += "?" + query
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, u, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	if err := c.signUpload(req, body); err != nil {
		return "", err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", &opError{Code: "ConnectionError", Message: connMessage(err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return "", readError(resp)
	}
	for {
		if _, err := resp.Body.Read(buf); err != nil {
			break
		}
	}
	return resp.Header.Get("ETag"), nil
}

// doXML sends a signed request and decodes the XML response into v.
func (c *client) doXML(ctx context.Context, method, path, query string, body []byte, v any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.t.URL+path+"?"+query, rd)
	if err != nil {
		return err
	}
	if err := c.signer.Sign(req, c.bodyHash(body), time.Now()); err != nil {
		return err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &opError{Code: "ConnectionError", Message: connMessage(err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return readError(resp)
	}
	if err := xml.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v); err != nil {
		return &opError{Code: "ClientError", Status: resp.StatusCode, Message: "decode response: " + err.Error()}
	}
	return nil
}
