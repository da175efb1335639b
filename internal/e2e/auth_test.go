package e2e

import (
	"bytes"
	"crypto/md5"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/coffer-s3/coffer/internal/sigv4"
)

// contentMD5 returns the Content-MD5 header value of b.
func contentMD5(b []byte) string {
	s := md5.Sum(b)
	return base64.StdEncoding.EncodeToString(s[:])
}

// TestErrorResponses provokes, with raw signed requests, the errors an SDK
// cannot produce, and checks each error document.
func TestErrorResponses(t *testing.T) {
	t.Parallel()
	testErrorResponses(t, startServer(t))
}

func testErrorResponses(t *testing.T, ts s3Target) {
	c := ts.client(t)
	ctx := t.Context()
	b := mkBucket(t, c, "errs")
	put(t, c, b, "exists", []byte("existing object"))
	mp, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(b), Key: aws.String("mp")})
	if err != nil {
		t.Fatalf("CreateMultipartUpload: %v", err)
	}
	wrongSecret := &sigv4.Credentials{AccessKeyID: testAccessKey, SecretKey: "not-the-secret"}
	unknownKey := &sigv4.Credentials{AccessKeyID: "AKIDUNKNOWN000000000", SecretKey: testSecretKey}
	longKey := strings.Repeat("k", 1025)

	cases := []struct {
		name     string
		rq       rawReq
		code     string
		status   int
		resource string // "-": not checked
		absent   string // a key that must not exist afterwards
	}{
		{name: "wrong secret", rq: rawReq{method: "GET", target: "/", cred: wrongSecret}, code: "SignatureDoesNotMatch", status: 403, resource: "-"},
		{name: "wrong secret PUT", rq: rawReq{method: "PUT", target: "/" + b + "/sig", body: []byte("x"), cred: wrongSecret},
			code: "SignatureDoesNotMatch", status: 403, resource: "-", absent: "sig"},
		{name: "unknown access key", rq: rawReq{method: "GET", target: "/" + b, cred: unknownKey}, code: "InvalidAccessKeyId", status: 403, resource: "-"},
		{name: "clock 20 min behind", rq: rawReq{method: "GET", target: "/", at: time.Now().Add(-20 * time.Minute)}, code: "RequestTimeTooSkewed", status: 403, resource: "-"},
		{name: "clock 20 min ahead", rq: rawReq{method: "PUT", target: "/" + b + "/skew", body: []byte("x"), at: time.Now().Add(20 * time.Minute)},
			code: "RequestTimeTooSkewed", status: 403, resource: "-", absent: "skew"},
		{name: "wrong region", rq: rawReq{method: "GET", target: "/", region: "eu-central-1"}, code: "AuthorizationHeaderMalformed", status: 400, resource: "-"},
		{name: "content sha256 mismatch", rq: rawReq{method: "PUT", target: "/" + b + "/sha", body: []byte("the body"), hash: sha256Hex([]byte("another body"))},
			code: "XAmzContentSHA256Mismatch", status: 400, resource: "/" + b + "/sha", absent: "sha"},
		{name: "content sha256 not hex", rq: rawReq{method: "PUT", target: "/" + b + "/sha2", body: []byte("x"), hash: "nothex"},
			code: "InvalidArgument", status: 400, resource: "-", absent: "sha2"},
		{name: "malformed Complete body", rq: rawReq{method: "POST", target: "/" + b + "/mp?uploadId=" + url.QueryEscape(aws.ToString(mp.UploadId)),
			body: []byte("<CompleteMultipartUpload><Part><PartNumber>1</Part>")}, code: "MalformedXML", status: 400, resource: "/" + b + "/mp", absent: "mp"},
		{name: "malformed DeleteObjects body", rq: rawReq{method: "POST", target: "/" + b + "?delete", body: []byte("not xml"),
			header: map[string]string{"Content-MD5": contentMD5([]byte("not xml"))}}, code: "MalformedXML", status: 400, resource: "/" + b},
		{name: "bucket tagging", rq: rawReq{method: "GET", target: "/" + b + "?tagging"}, code: "NoSuchTagSet", status: 404, resource: "/" + b},
		{name: "bucket website", rq: rawReq{method: "GET", target: "/" + b + "?website"}, code: "NotImplemented", status: 501, resource: "/" + b},
		{name: "put bucket replication", rq: rawReq{method: "PUT", target: "/" + b + "?replication", body: []byte("<ReplicationConfiguration/>")}, code: "NotImplemented", status: 501, resource: "/" + b},
		{name: "malformed bucket policy", rq: rawReq{method: "PUT", target: "/" + b + "?policy", body: []byte("{}")}, code: "MalformedPolicy", status: 400, resource: "/" + b},
		{name: "object retention", rq: rawReq{method: "GET", target: "/" + b + "/exists?retention"}, code: "NotImplemented", status: 501, resource: "/" + b + "/exists"},
		{name: "missing content length", rq: rawReq{method: "PUT", target: "/" + b + "/nolen", body: []byte("streamed without a length"), hash: "UNSIGNED-PAYLOAD", chunk: true},
			code: "MissingContentLength", status: 411, resource: "-", absent: "nolen"},
		{name: "anonymous GET object", rq: rawReq{method: "GET", target: "/" + b + "/exists", anon: true}, code: "AccessDenied", status: 403, resource: "-"},
		{name: "anonymous list buckets", rq: rawReq{method: "GET", target: "/", anon: true}, code: "AccessDenied", status: 403, resource: "-"},
		{name: "anonymous PUT", rq: rawReq{method: "PUT", target: "/" + b + "/anon", body: []byte("x"), anon: true}, code: "AccessDenied", status: 403, resource: "-", absent: "anon"},
		{name: "malformed authorization", rq: rawReq{method: "GET", target: "/", anon: true, header: map[string]string{"Authorization": "AWS4-HMAC-SHA256 garbage", "X-Amz-Date": time.Now().UTC().Format("20060102T150405Z"), "X-Amz-Content-Sha256": sha256Hex(nil)}},
			code: "AuthorizationHeaderMalformed", status: 400, resource: "-"},
		{name: "key too long", rq: rawReq{method: "PUT", target: "/" + b + "/" + longKey, body: []byte("x")}, code: "KeyTooLongError", status: 400, resource: "/" + b + "/" + longKey},
		{name: "no such key", rq: rawReq{method: "GET", target: "/" + b + "/absent%20key"}, code: "NoSuchKey", status: 404, resource: "/" + b + "/absent key"},
		{name: "no such bucket", rq: rawReq{method: "GET", target: "/no-such-bucket-raw?list-type=2"}, code: "NoSuchBucket", status: 404, resource: "/no-such-bucket-raw"},
		{name: "no such upload", rq: rawReq{method: "GET", target: "/" + b + "/mp?uploadId=0123456789abcdef0123456789abcdef"}, code: "NoSuchUpload", status: 404, resource: "-"},
		{name: "invalid max-keys", rq: rawReq{method: "GET", target: "/" + b + "?list-type=2&max-keys=-1"}, code: "InvalidArgument", status: 400, resource: "-"},
		{name: "invalid bucket name", rq: rawReq{method: "PUT", target: "/Bad_Bucket"}, code: "InvalidBucketName", status: 400, resource: "/Bad_Bucket"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := raw(t, ts, tc.rq)
			doc := checkError(t, tc.name, resp, body, tc.code, tc.status, tc.resource)
			switch tc.code {
			case "NoSuchBucket":
				if doc.BucketName != "no-such-bucket-raw" {
					t.Errorf("NoSuchBucket: BucketName %q, want no-such-bucket-raw", doc.BucketName)
				}
			case "NoSuchKey":
				if doc.Key != "absent key" {
					t.Errorf("NoSuchKey: Key %q, want %q", doc.Key, "absent key")
				}
			}
			if tc.absent != "" {
				_, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String(tc.absent)})
				wantErr(t, "HeadObject of the rejected write's key", err, "NotFound", 404)
			}
		})
	}

	t.Run("unsigned payload accepted", func(t *testing.T) {
		resp, body := raw(t, ts, rawReq{method: "PUT", target: "/" + b + "/unsigned", body: []byte("unsigned body"), hash: "UNSIGNED-PAYLOAD"})
		if resp.StatusCode != 200 {
			t.Fatalf("PUT with UNSIGNED-PAYLOAD: %d %s", resp.StatusCode, body)
		}
		checkBody(t, "GetObject", get(t, c, b, "unsigned"), []byte("unsigned body"))
	})
}

func TestPresigned(t *testing.T) {
	t.Parallel()
	testPresigned(t, startServer(t))
}

func testPresigned(t *testing.T, ts s3Target) {
	c := ts.client(t)
	b := mkBucket(t, c, "presign")
	body := randBytes(200 * kib)
	put(t, c, b, "obj key+ü", body)
	endpoint, hc := ts.rawEndpoint()
	objURL := endpoint + "/" + b + "/" + s3Escape("obj key+ü")

	presign := func(t *testing.T, method, rawURL string, at time.Time, expires time.Duration) string {
		t.Helper()
		u, err := sigv4.Presign(method, rawURL, testCreds, testRegion, at, expires)
		if err != nil {
			t.Fatalf("Presign: %v", err)
		}
		return u
	}
	request := func(t *testing.T, method, u string, body []byte) (*http.Response, []byte) {
		t.Helper()
		r, err := http.NewRequest(method, u, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		return do(t, hc, r)
	}

	t.Run("GET", func(t *testing.T) {
		resp, got := request(t, "GET", presign(t, "GET", objURL, time.Now(), 5*time.Minute), nil)
		if resp.StatusCode != 200 {
			t.Fatalf("presigned GET: %d %s", resp.StatusCode, got)
		}
		checkBody(t, "presigned GET", got, body)
		// With response overrides in the signed query.
		u := presign(t, "GET", objURL+"?response-content-type=text%2Fx-presigned", time.Now(), time.Minute)
		resp, _ = request(t, "GET", u, nil)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/x-presigned" {
			t.Errorf("presigned GET with response-content-type: %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	})

	t.Run("PUT HEAD DELETE", func(t *testing.T) {
		u := endpoint + "/" + b + "/uploaded"
		newBody := randBytes(3 * mib)
		resp, got := request(t, "PUT", presign(t, "PUT", u, time.Now(), time.Minute), newBody)
		if resp.StatusCode != 200 {
			t.Fatalf("presigned PUT: %d %s", resp.StatusCode, got)
		}
		if resp.Header.Get("ETag") != quoted(md5Hex(newBody)) {
			t.Errorf("presigned PUT ETag %q, want %s", resp.Header.Get("ETag"), quoted(md5Hex(newBody)))
		}
		checkBody(t, "object uploaded by presigned PUT", get(t, c, b, "uploaded"), newBody)
		resp, got = request(t, "HEAD", presign(t, "HEAD", u, time.Now(), time.Minute), nil)
		if resp.StatusCode != 200 || resp.ContentLength != int64(len(newBody)) || len(got) != 0 {
			t.Errorf("presigned HEAD: %d, Content-Length %d, %d body bytes", resp.StatusCode, resp.ContentLength, len(got))
		}
		resp, _ = request(t, "DELETE", presign(t, "DELETE", u, time.Now(), time.Minute), nil)
		if resp.StatusCode != 204 {
			t.Errorf("presigned DELETE: %d, want 204", resp.StatusCode)
		}
		_, err := c.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String("uploaded")})
		wantErr(t, "HeadObject after presigned DELETE", err, "NotFound", 404)
	})

	t.Run("expired", func(t *testing.T) {
		resp, got := request(t, "GET", presign(t, "GET", objURL, time.Now().Add(-2*time.Hour), time.Hour), nil)
		checkError(t, "expired presigned GET", resp, got, "AccessDenied", 403, "-")
		u := endpoint + "/" + b + "/expired-put"
		resp, got = request(t, "PUT", presign(t, "PUT", u, time.Now().Add(-10*time.Minute), time.Minute), []byte("x"))
		checkError(t, "expired presigned PUT", resp, got, "AccessDenied", 403, "-")
		_, err := c.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String("expired-put")})
		wantErr(t, "HeadObject after an expired presigned PUT", err, "NotFound", 404)
	})

	t.Run("tampered", func(t *testing.T) {
		u := presign(t, "GET", objURL, time.Now(), time.Minute)
		resp, got := request(t, "GET", strings.Replace(u, "/"+b+"/", "/"+b+"/x", 1), nil)
		checkError(t, "presigned GET of another key", resp, got, "SignatureDoesNotMatch", 403, "-")
		resp, got = request(t, "PUT", u, []byte("x")) // signed for GET
		checkError(t, "presigned GET URL used for PUT", resp, got, "SignatureDoesNotMatch", 403, "-")
		resp, got = request(t, "GET", strings.Replace(u, "X-Amz-Expires=60", "X-Amz-Expires=61", 1), nil)
		checkError(t, "presigned URL with another expiry", resp, got, "SignatureDoesNotMatch", 403, "-")
		resp, got = request(t, "GET", strings.Replace(u, "X-Amz-Expires=60", "X-Amz-Expires=604801", 1), nil)
		checkError(t, "presigned URL valid for more than 7 days", resp, got, "AuthorizationQueryParametersError", 400, "-")
		wrong, err := sigv4.Presign("GET", objURL, sigv4.Credentials{AccessKeyID: testAccessKey, SecretKey: "wrong"}, testRegion, time.Now(), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		resp, got = request(t, "GET", wrong, nil)
		checkError(t, "presigned with the wrong secret", resp, got, "SignatureDoesNotMatch", 403, "-")
	})
}
