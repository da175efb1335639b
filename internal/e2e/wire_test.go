package e2e

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// xmlTime matches the timestamps of S3's XML documents. Read-only.
var xmlTime = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

const s3NS = "http://s3.amazonaws.com/doc/2006-03-01/"

// TestWire checks details of the HTTP exchange that real clients rely on
// and that SDKs tend to paper over.
func TestWire(t *testing.T) {
	t.Parallel()
	testWire(t, startServer(t))
}

func testWire(t *testing.T, ts s3Target) {
	c := ts.client(t)
	b := mkBucket(t, c, "wire")
	endpoint, _ := ts.rawEndpoint() // hand-written on connections to ts.dialAddr()
	body := []byte("wire body")

	send := func(t *testing.T, rq rawReq) (*http.Response, []byte) {
		t.Helper()
		resp, rb := raw(t, ts, rq)
		if resp.Header.Get("X-Amz-Request-Id") == "" || resp.Header.Get("X-Amz-Id-2") == "" {
			t.Errorf("%s %s → %d: x-amz-request-id %q x-amz-id-2 %q; want both on every response", rq.method, rq.target, resp.StatusCode,
				resp.Header.Get("X-Amz-Request-Id"), resp.Header.Get("X-Amz-Id-2"))
		}
		if _, err := http.ParseTime(resp.Header.Get("Date")); err != nil {
			t.Errorf("%s %s: Date header %q: %v", rq.method, rq.target, resp.Header.Get("Date"), err)
		}
		return resp, rb
	}
	wantStatusCode := func(t *testing.T, what string, resp *http.Response, rb []byte, status int) {
		t.Helper()
		if resp.StatusCode != status {
			t.Errorf("%s: status %d, want %d; body %.300s", what, resp.StatusCode, status, rb)
		}
	}
	checkLastModified := func(t *testing.T, what string, resp *http.Response) {
		t.Helper()
		lm := resp.Header.Get("Last-Modified")
		if _, err := time.Parse(http.TimeFormat, lm); err != nil {
			t.Errorf("%s: Last-Modified %q is not an RFC 1123 GMT date: %v", what, lm, err)
		}
	}

	t.Run("CreateBucket", func(t *testing.T) {
		name := newBucketName("wire-new")
		resp, rb := send(t, rawReq{method: "PUT", target: "/" + name})
		wantStatusCode(t, "CreateBucket", resp, rb, 200)
		if loc := resp.Header.Get("Location"); loc != "/"+name {
			t.Errorf("CreateBucket Location %q, want /%s", loc, name)
		}
		resp, rb = send(t, rawReq{method: "HEAD", target: "/" + name})
		wantStatusCode(t, "HeadBucket", resp, rb, 200)
		if r := resp.Header.Get("X-Amz-Bucket-Region"); r != testRegion {
			t.Errorf("HeadBucket x-amz-bucket-region %q, want %s", r, testRegion)
		}
	})

	t.Run("PutGetHead", func(t *testing.T) {
		resp, rb := send(t, rawReq{method: "PUT", target: "/" + b + "/k", body: body})
		wantStatusCode(t, "PUT", resp, rb, 200)
		if et := resp.Header.Get("ETag"); et != quoted(md5Hex(body)) {
			t.Errorf("PUT ETag header %q, want %s (quoted)", et, quoted(md5Hex(body)))
		}
		if len(rb) != 0 {
			t.Errorf("PUT response body %q, want none", rb)
		}
		resp, rb = send(t, rawReq{method: "GET", target: "/" + b + "/k"})
		wantStatusCode(t, "GET", resp, rb, 200)
		if string(rb) != string(body) || resp.ContentLength != int64(len(body)) {
			t.Errorf("GET: %q, Content-Length %d", rb, resp.ContentLength)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "binary/octet-stream" {
			t.Errorf("GET of an object stored without Content-Type: Content-Type %q, want binary/octet-stream", ct)
		}
		if et := resp.Header.Get("ETag"); et != quoted(md5Hex(body)) {
			t.Errorf("GET ETag header %q, want %s", et, quoted(md5Hex(body)))
		}
		if ar := resp.Header.Get("Accept-Ranges"); ar != "bytes" {
			t.Errorf("GET Accept-Ranges %q, want bytes", ar)
		}
		checkLastModified(t, "GET", resp)
		resp, rb = send(t, rawReq{method: "HEAD", target: "/" + b + "/k"})
		wantStatusCode(t, "HEAD", resp, rb, 200)
		if resp.ContentLength != int64(len(body)) || resp.Header.Get("ETag") != quoted(md5Hex(body)) {
			t.Errorf("HEAD: Content-Length %d ETag %q", resp.ContentLength, resp.Header.Get("ETag"))
		}
		checkLastModified(t, "HEAD", resp)

		resp, rb = send(t, rawReq{method: "GET", target: "/" + b + "/k", header: map[string]string{"Range": "bytes=1-3"}})
		wantStatusCode(t, "GET Range", resp, rb, 206)
		if cr := resp.Header.Get("Content-Range"); cr != fmt.Sprintf("bytes 1-3/%d", len(body)) || string(rb) != string(body[1:4]) {
			t.Errorf("GET Range: Content-Range %q body %q", cr, rb)
		}

		resp, rb = send(t, rawReq{method: "GET", target: "/" + b + "/k", header: map[string]string{"If-None-Match": quoted(md5Hex(body))}})
		wantStatusCode(t, "GET If-None-Match", resp, rb, 304)
		if len(rb) != 0 || resp.Header.Get("ETag") != quoted(md5Hex(body)) {
			t.Errorf("304: body %q, ETag %q; want no body and the ETag", rb, resp.Header.Get("ETag"))
		}
		resp, rb = send(t, rawReq{method: "GET", target: "/" + b + "/k", header: map[string]string{"If-Match": `"00"`}})
		checkError(t, "GET If-Match wrong", resp, rb, "PreconditionFailed", 412, "/"+b+"/k")
	})

	t.Run("HeadMissingHasNoBody", func(t *testing.T) {
		put(t, c, b, "present", body)
		// Pipeline HEAD of a missing key and GET of a present one on one
		// connection: a body after the 404 would corrupt the second
		// response.
		conn, err := net.Dial("tcp", ts.dialAddr())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		head := rawReq{method: "HEAD", target: "/" + b + "/missing"}.build(t, endpoint)
		getr := rawReq{method: "GET", target: "/" + b + "/present"}.build(t, endpoint)
		for _, r := range []*http.Request{head, getr} {
			if err := r.Write(conn); err != nil {
				t.Fatal(err)
			}
		}
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, head)
		if err != nil {
			t.Fatalf("read HEAD response: %v", err)
		}
		if resp.StatusCode != 404 || resp.Header.Get("X-Amz-Request-Id") == "" {
			t.Errorf("HEAD of a missing key: %d, x-amz-request-id %q; want 404 with a request ID", resp.StatusCode, resp.Header.Get("X-Amz-Request-Id"))
		}
		resp, err = http.ReadResponse(br, getr)
		if err != nil {
			t.Fatalf("the response after HEAD 404 is garbled (did HEAD send a body?): %v", err)
		}
		got, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || string(got) != string(body) {
			t.Errorf("GET after HEAD 404: %d %q; HEAD must not send a body", resp.StatusCode, got)
		}
	})

	t.Run("ExpectContinueEmptyBody", func(t *testing.T) {
		// botocore sends Expect: 100-continue with every PutObject, empty
		// files included. If the final response comes without a 100
		// Continue, botocore keeps that status line for the connection's
		// next Expect request and misparses its response (aws s3 sync of
		// a tree with an empty file and a multipart file hangs 60 s, then
		// fails with 'ETag'). So the server must send 100 Continue first,
		// or close the connection after the response.
		conn, err := net.Dial("tcp", ts.dialAddr())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		r := rawReq{method: "PUT", target: "/" + b + "/empty", header: map[string]string{"Expect": "100-continue"}}.build(t, endpoint)
		if err := r.Write(conn); err != nil {
			t.Fatal(err)
		}
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, r)
		if err != nil {
			t.Fatalf("read response: %v", err)
		}
		if resp.StatusCode == http.StatusContinue {
			resp, err = http.ReadResponse(br, r)
			if err != nil {
				t.Fatalf("read the response after 100 Continue: %v", err)
			}
		} else if !resp.Close {
			t.Errorf("PUT with Expect: 100-continue and an empty body: final response %d without a 100 Continue before it, and the connection stays open", resp.StatusCode)
		}
		if resp.StatusCode != 200 {
			t.Errorf("PUT of an empty object: %d", resp.StatusCode)
		}
	})

	t.Run("Delete", func(t *testing.T) {
		put(t, c, b, "del", body)
		for _, key := range []string{"del", "del", "never-existed"} {
			resp, rb := send(t, rawReq{method: "DELETE", target: "/" + b + "/" + key})
			wantStatusCode(t, "DELETE "+key, resp, rb, 204)
			if len(rb) != 0 {
				t.Errorf("DELETE body %q, want none", rb)
			}
		}
	})

	t.Run("ListXML", func(t *testing.T) {
		lb := mkBucket(t, c, "wire-list")
		put(t, c, lb, "a/1", body)
		put(t, c, lb, "a/2", body)
		put(t, c, lb, "b", body)
		resp, rb := send(t, rawReq{method: "GET", target: "/" + lb + "?list-type=2&delimiter=%2F"})
		wantStatusCode(t, "ListObjectsV2", resp, rb, 200)
		var v2 struct {
			XMLName  xml.Name
			KeyCount int
			Contents []struct {
				Key, ETag, LastModified, StorageClass string
				Size                                  int64
			}
			CommonPrefixes []struct{ Prefix string }
		}
		if err := xml.Unmarshal(rb, &v2); err != nil {
			t.Fatalf("ListObjectsV2 XML: %v\n%s", err, rb)
		}
		if v2.XMLName.Local != "ListBucketResult" || v2.XMLName.Space != s3NS {
			t.Errorf("root element %v, want ListBucketResult in %s", v2.XMLName, s3NS)
		}
		if v2.KeyCount != 2 || len(v2.Contents) != 1 || len(v2.CommonPrefixes) != 1 {
			t.Errorf("KeyCount %d, %d keys, %d prefixes; want 2, 1, 1", v2.KeyCount, len(v2.Contents), len(v2.CommonPrefixes))
		}
		for _, o := range v2.Contents {
			if o.ETag != quoted(md5Hex(body)) {
				t.Errorf("listed ETag %q, want %s (quoted in XML)", o.ETag, quoted(md5Hex(body)))
			}
			if !xmlTime.MatchString(o.LastModified) {
				t.Errorf("listed LastModified %q, want like 2006-01-02T15:04:05.000Z", o.LastModified)
			}
		}
		if !strings.HasPrefix(string(rb), `<?xml version="1.0" encoding="UTF-8"?>`) {
			t.Errorf("ListObjectsV2 body does not start with the XML declaration: %.60s", rb)
		}

		resp, rb = send(t, rawReq{method: "GET", target: "/"})
		wantStatusCode(t, "ListBuckets", resp, rb, 200)
		var lbr struct {
			XMLName xml.Name
			Owner   struct{ ID, DisplayName string }
			Buckets []struct {
				Name, CreationDate string
			} `xml:"Buckets>Bucket"`
		}
		if err := xml.Unmarshal(rb, &lbr); err != nil {
			t.Fatalf("ListBuckets XML: %v", err)
		}
		if lbr.XMLName.Local != "ListAllMyBucketsResult" || lbr.XMLName.Space != s3NS || lbr.Owner.ID == "" || len(lbr.Buckets) == 0 {
			t.Errorf("ListBuckets: %+v", lbr)
		}
		for _, bk := range lbr.Buckets {
			if !xmlTime.MatchString(bk.CreationDate) {
				t.Errorf("bucket %s CreationDate %q, want like 2006-01-02T15:04:05.000Z", bk.Name, bk.CreationDate)
			}
		}
	})

	t.Run("MultipartAndCopyXML", func(t *testing.T) {
		u := createUpload(t, c, b, "mpx")
		cp := u.part(1, body)
		resp, rb := send(t, rawReq{method: "GET", target: "/" + b + "/mpx?uploadId=" + u.id})
		wantStatusCode(t, "ListParts", resp, rb, 200)
		var lp struct {
			Part []struct{ ETag, LastModified string }
		}
		if err := xml.Unmarshal(rb, &lp); err != nil || len(lp.Part) != 1 || lp.Part[0].ETag != quoted(md5Hex(body)) || !xmlTime.MatchString(lp.Part[0].LastModified) {
			t.Errorf("ListParts XML (%v): %s", err, rb)
		}
		complete := fmt.Sprintf("<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>%s</ETag></Part></CompleteMultipartUpload>", aws.ToString(cp.ETag))
		resp, rb = send(t, rawReq{method: "POST", target: "/" + b + "/mpx?uploadId=" + u.id, body: []byte(complete)})
		wantStatusCode(t, "Complete", resp, rb, 200)
		var cr struct{ ETag, Bucket, Key, Location string }
		if err := xml.Unmarshal(rb, &cr); err != nil || cr.ETag != quoted(multipartETag(body)) || cr.Bucket != b || cr.Key != "mpx" {
			t.Errorf("CompleteMultipartUploadResult (%v): %s", err, rb)
		}
		resp, rb = send(t, rawReq{method: "PUT", target: "/" + b + "/copied", header: map[string]string{"X-Amz-Copy-Source": "/" + b + "/mpx"}})
		wantStatusCode(t, "CopyObject", resp, rb, 200)
		var co struct{ ETag, LastModified string }
		if err := xml.Unmarshal(rb, &co); err != nil || !strings.HasPrefix(co.ETag, `"`) || !strings.HasSuffix(co.ETag, `"`) || !xmlTime.MatchString(co.LastModified) {
			t.Errorf("CopyObjectResult (%v): %s", err, rb)
		}
	})

	t.Run("RequestIDsUnique", func(t *testing.T) {
		seen := map[string]bool{}
		for i := 0; i < 20; i++ {
			resp, _ := send(t, rawReq{method: "HEAD", target: "/" + b})
			id := resp.Header.Get("X-Amz-Request-Id")
			if seen[id] {
				t.Fatalf("request ID %q repeated", id)
			}
			seen[id] = true
		}
		resp, rb := send(t, rawReq{method: "GET", target: "/" + b + "?website"})
		wantStatusCode(t, "NotImplemented", resp, rb, 501)
		resp, _ = send(t, rawReq{method: "GET", target: "/", anon: true})
		wantStatusCode(t, "anonymous", resp, nil, 403)
	})
}
