package s3api

import (
	"bufio"
	"net/http"
	"strings"
	"testing"

	"github.com/coffer-s3/coffer/internal/s3err"
)

// readRequest parses a raw HTTP/1.1 request head as net/http's server does.
func readRequest(t testing.TB, raw string) *http.Request {
	t.Helper()
	r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
	if err != nil {
		t.Fatalf("ReadRequest(%q): %v", raw, err)
	}
	return r
}

// TestParseOp routes request lines taken from the examples of the Amazon S3
// API Reference (https://docs.aws.amazon.com/AmazonS3/latest/API/), plus the
// odd cases around them, after garage's test_aws_doc_examples.
func TestParseOp(t *testing.T) {
	const domain = "s3.example.com"
	for _, tc := range []struct {
		name    string
		line    string // method and request-target
		host    string
		headers string // extra header lines, each ending in \r\n
		op      string
		bucket  string
		key     string
		wantErr s3err.Code
	}{
		// Service.
		{name: "ListBuckets", line: "GET /", host: "s3.example.com", op: "ListBuckets"},
		{name: "ListBuckets other host", line: "GET /", host: "localhost:6789", op: "ListBuckets"},
		{name: "ListBuckets paged", line: "GET /?max-buckets=10&prefix=a", host: "s3.example.com", op: "ListBuckets"},
		{name: "PUT on service", line: "PUT /", host: "s3.example.com", op: "NotImplemented"},

		// Buckets, virtual-hosted style as in the API Reference.
		{name: "CreateBucket", line: "PUT /", host: "examplebucket.s3.example.com", op: "CreateBucket", bucket: "examplebucket"},
		{name: "HeadBucket", line: "HEAD /", host: "bucket.s3.example.com", op: "HeadBucket", bucket: "bucket"},
		{name: "DeleteBucket", line: "DELETE /", host: "examplebucket.s3.example.com", op: "DeleteBucket", bucket: "examplebucket"},
		{name: "GetBucketLocation", line: "GET /?location", host: "mybucket.s3.example.com", op: "GetBucketLocation", bucket: "mybucket"},
		{name: "GetBucketVersioning", line: "GET /?versioning", host: "mybucket.s3.example.com", op: "GetBucketVersioning", bucket: "mybucket"},
		{name: "ListObjects", line: "GET /?prefix=N&marker=Ned&max-keys=40", host: "quotes.s3.example.com", op: "ListObjects", bucket: "quotes"},
		{name: "ListObjects list-type=1", line: "GET /?list-type=1", host: "quotes.s3.example.com", op: "ListObjects", bucket: "quotes"},
		{name: "ListObjectsV2", line: "GET /?list-type=2&max-keys=2&start-after=ExampleGuide.pdf", host: "bucket.s3.example.com", op: "ListObjectsV2", bucket: "bucket"},
		{name: "ListMultipartUploads", line: "GET /?uploads&max-uploads=3", host: "example-bucket.s3.example.com", op: "ListMultipartUploads", bucket: "example-bucket"},
		{name: "GetBucketAcl", line: "GET /?acl", host: "bucket.s3.example.com", op: "GetBucketAcl", bucket: "bucket"},
		{name: "PutBucketAcl", line: "PUT /?acl", host: "bucket.s3.example.com", op: "PutBucketAcl", bucket: "bucket"},
		{name: "DeleteObjects", line: "POST /?delete", host: "bucketname.s3.example.com", op: "DeleteObjects", bucket: "bucketname"},
		{name: "POST bucket (browser upload)", line: "POST /", host: "bucket.s3.example.com", op: "PostObject", bucket: "bucket"},
		{name: "POST object (not S3)", line: "POST /key", host: "bucket.s3.example.com", op: "NotImplemented", bucket: "bucket", key: "key"},

		// Buckets, path style.
		{name: "path CreateBucket", line: "PUT /examplebucket", host: "s3.example.com", op: "CreateBucket", bucket: "examplebucket"},
		{name: "path trailing slash", line: "GET /examplebucket/", host: "s3.example.com", op: "ListObjects", bucket: "examplebucket"},
		{name: "path ListObjectsV2", line: "GET /examplebucket?list-type=2&prefix=photos/", host: "localhost", op: "ListObjectsV2", bucket: "examplebucket"},
		{name: "vhost object sub-resource", line: "GET /b?location", host: "b.s3.example.com", op: "NotImplemented", bucket: "b", key: "b"},

		// Objects.
		{name: "PutObject", line: "PUT /my-image.jpg", host: "mybucket.s3.example.com", op: "PutObject", bucket: "mybucket", key: "my-image.jpg"},
		{name: "PutObject x-id", line: "PUT /b/k?x-id=PutObject", host: "localhost", op: "PutObject", bucket: "b", key: "k"},
		{name: "CopyObject", line: "PUT /my-second-image.jpg", host: "bucket.s3.example.com", headers: "x-amz-copy-source: /bucket/my-image.jpg\r\n", op: "CopyObject", bucket: "bucket", key: "my-second-image.jpg"},
		{name: "GetObject", line: "GET /my-image.jpg", host: "bucket.s3.example.com", op: "GetObject", bucket: "bucket", key: "my-image.jpg"},
		{name: "GetObject versionId", line: "GET /myObject?versionId=3/L4kqtJlcpXroDTDmpUMLUo", host: "bucket.s3.example.com", op: "GetObject", bucket: "bucket", key: "myObject"},
		{name: "GetObject partNumber", line: "GET /b/k?partNumber=2", host: "localhost", op: "GetObject", bucket: "b", key: "k"},
		{name: "GetObject response overrides", line: "GET /Junk3.txt?response-cache-control=No-cache&response-content-disposition=attachment%3B%20filename%3Dtesting.txt", host: "bucket.s3.example.com", op: "GetObject", bucket: "bucket", key: "Junk3.txt"},
		{name: "GetObject presigned", line: "GET /test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404", host: "examplebucket.s3.example.com", op: "GetObject", bucket: "examplebucket", key: "test.txt"},
		{name: "HeadObject", line: "HEAD /my-image.jpg", host: "bucket.s3.example.com", op: "HeadObject", bucket: "bucket", key: "my-image.jpg"},
		{name: "DeleteObject", line: "DELETE /my-second-image.jpg", host: "bucket.s3.example.com", op: "DeleteObject", bucket: "bucket", key: "my-second-image.jpg"},
		{name: "GetObjectAcl", line: "GET /my-image.jpg?acl", host: "bucket.s3.example.com", op: "GetObjectAcl", bucket: "bucket", key: "my-image.jpg"},
		{name: "PutObjectAcl", line: "PUT /my-image.jpg?acl", host: "bucket.s3.example.com", op: "PutObjectAcl", bucket: "bucket", key: "my-image.jpg"},
		{name: "CreateMultipartUpload", line: "POST /example-object?uploads", host: "example-bucket.s3.example.com", op: "CreateMultipartUpload", bucket: "example-bucket", key: "example-object"},
		{name: "UploadPart", line: "PUT /my-movie.m2ts?partNumber=1&uploadId=VCVsb2FkIElEIGZvciBlbZZpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZR", host: "example-bucket.s3.example.com", op: "UploadPart", bucket: "example-bucket", key: "my-movie.m2ts"},
		{name: "UploadPartCopy", line: "PUT /newobject?partNumber=2&uploadId=VXBsb2FkIElEIGZvciBlbHZpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA", host: "target-bucket.s3.example.com", headers: "x-amz-copy-source: /source-bucket/sourceobject\r\nx-amz-copy-source-range:bytes=500-6291456\r\n", op: "UploadPartCopy", bucket: "target-bucket", key: "newobject"},
		{name: "CompleteMultipartUpload", line: "POST /example-object?uploadId=AAAsb2FkIElEIGZvciBlbHZpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA", host: "example-bucket.s3.example.com", op: "CompleteMultipartUpload", bucket: "example-bucket", key: "example-object"},
		{name: "AbortMultipartUpload", line: "DELETE /example-object?uploadId=VXBsb2FkIElEIGZvciBlbHZpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZ", host: "example-bucket.s3.example.com", op: "AbortMultipartUpload", bucket: "example-bucket", key: "example-object"},
		{name: "ListParts", line: "GET /example-object?uploadId=XXBsb2FkIElEIGZvciBlbHZpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA&max-parts=2&part-number-marker=1", host: "example-bucket.s3.example.com", op: "ListParts", bucket: "example-bucket", key: "example-object"},

		// Operations Coffer does not serve must not fall through to one it does.
		{name: "GetBucketTagging", line: "GET /?tagging", host: "bucket.s3.example.com", op: "GetBucketTagging", bucket: "bucket"},
		{name: "DeleteBucketTagging", line: "DELETE /?tagging", host: "bucket.s3.example.com", op: "DeleteBucketTagging", bucket: "bucket"},
		{name: "PutObjectTagging", line: "PUT /k?tagging", host: "bucket.s3.example.com", op: "PutObjectTagging", bucket: "bucket", key: "k"},
		{name: "GetBucketWebsite", line: "GET /?website", host: "bucket.s3.example.com", op: "NotImplemented", bucket: "bucket"},
		{name: "PutObjectRetention", line: "PUT /k?retention", host: "bucket.s3.example.com", op: "NotImplemented", bucket: "bucket", key: "k"},
		{name: "ListObjectVersions", line: "GET /?versions", host: "bucket.s3.example.com", op: "ListObjectVersions", bucket: "bucket"},
		{name: "PutBucketVersioning", line: "PUT /?versioning", host: "bucket.s3.example.com", op: "PutBucketVersioning", bucket: "bucket"},
		{name: "GetBucketLifecycle", line: "GET /?lifecycle", host: "bucket.s3.example.com", op: "GetBucketLifecycleConfiguration", bucket: "bucket"},
		{name: "PutBucketLifecycle", line: "PUT /bucket?lifecycle", op: "PutBucketLifecycleConfiguration", bucket: "bucket"},
		{name: "DeleteBucketLifecycle", line: "DELETE /bucket?lifecycle", op: "DeleteBucketLifecycle", bucket: "bucket"},
		{name: "lifecycle of an object", line: "GET /bucket/key?lifecycle", op: "NotImplemented", bucket: "bucket", key: "key"},
		{name: "DeleteBucketCors", line: "DELETE /?cors", host: "bucket.s3.example.com", op: "DeleteBucketCors", bucket: "bucket"},
		{name: "GetBucketCors", line: "GET /?cors", host: "bucket.s3.example.com", op: "GetBucketCors", bucket: "bucket"},
		{name: "PutBucketCors", line: "PUT /?cors", host: "bucket.s3.example.com", op: "PutBucketCors", bucket: "bucket"},
		{name: "POST cors", line: "POST /?cors", host: "bucket.s3.example.com", op: "NotImplemented", bucket: "bucket"},
		{name: "PutBucketPolicy", line: "PUT /?policy", host: "bucket.s3.example.com", op: "PutBucketPolicy", bucket: "bucket"},
		{name: "RestoreObject", line: "POST /k?restore", host: "bucket.s3.example.com", op: "NotImplemented", bucket: "bucket", key: "k"},
		{name: "SelectObjectContent", line: "POST /k?select&select-type=2", host: "bucket.s3.example.com", op: "NotImplemented", bucket: "bucket", key: "k"},
		{name: "GetObjectAttributes", line: "GET /k?attributes", host: "bucket.s3.example.com", op: "GetObjectAttributes", bucket: "bucket", key: "k"},
		{name: "GetObjectRetention", line: "GET /k?retention", host: "bucket.s3.example.com", op: "NotImplemented", bucket: "bucket", key: "k"},
		{name: "DeleteObject acl", line: "DELETE /k?acl", host: "bucket.s3.example.com", op: "NotImplemented", bucket: "bucket", key: "k"},
		{name: "HEAD uploadId", line: "HEAD /k?uploadId=x", host: "bucket.s3.example.com", op: "NotImplemented", bucket: "bucket", key: "k"},
		{name: "POST object plain", line: "POST /k", host: "bucket.s3.example.com", op: "NotImplemented", bucket: "bucket", key: "k"},
		{name: "PATCH", line: "PATCH /b/k", host: "localhost", op: "NotImplemented", bucket: "b", key: "k"},

		// Preflights (RESTOPTIONSobject) route to the preflight whatever
		// sub-resources they carry, so they never reach another handler.
		{name: "OPTIONS object", line: "OPTIONS /b/k", host: "localhost", op: "OptionsObject", bucket: "b", key: "k"},
		{name: "OPTIONS bucket", line: "OPTIONS /b", host: "localhost", op: "OptionsBucket", bucket: "b"},
		{name: "OPTIONS vhost object", line: "OPTIONS /exampleobject", host: "examplebucket.s3.example.com", headers: "Origin: http://www.example.com\r\nAccess-Control-Request-Method: PUT\r\n", op: "OptionsObject", bucket: "examplebucket", key: "exampleobject"},
		{name: "OPTIONS uploads", line: "OPTIONS /b/k?uploads", host: "localhost", op: "OptionsObject", bucket: "b", key: "k"},
		{name: "OPTIONS tagging", line: "OPTIONS /b?tagging", host: "localhost", op: "OptionsBucket", bucket: "b"},
		{name: "OPTIONS presigned", line: "OPTIONS /b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=00", host: "localhost", op: "OptionsObject", bucket: "b", key: "k"},
		{name: "OPTIONS service", line: "OPTIONS /", host: "localhost", op: "NotImplemented"},

		// Keys with odd bytes.
		{name: "key space", line: "GET /b/a%20b", host: "localhost", op: "GetObject", bucket: "b", key: "a b"},
		{name: "key plus", line: "GET /b/a+b", host: "localhost", op: "GetObject", bucket: "b", key: "a+b"},
		{name: "key encoded slash", line: "GET /b/a%2Fb", host: "localhost", op: "GetObject", bucket: "b", key: "a/b"},
		{name: "key double slash", line: "GET /b//x//y", host: "localhost", op: "GetObject", bucket: "b", key: "/x//y"},
		{name: "key dot segments", line: "GET /b/a/../c/./d", host: "localhost", op: "GetObject", bucket: "b", key: "a/../c/./d"},
		{name: "key unicode", line: "PUT /b/%E2%9C%93%20caf%C3%A9", host: "localhost", op: "PutObject", bucket: "b", key: "✓ café"},
		{name: "key question mark", line: "GET /b/what%3F?acl", host: "localhost", op: "GetObjectAcl", bucket: "b", key: "what?"},
		{name: "key percent", line: "GET /b/100%25", host: "localhost", op: "GetObject", bucket: "b", key: "100%"},
		{name: "key trailing slash", line: "PUT /b/dir/", host: "localhost", op: "PutObject", bucket: "b", key: "dir/"},
		{name: "vhost key double slash", line: "GET //x", host: "b.s3.example.com", op: "GetObject", bucket: "b", key: "/x"},
		{name: "vhost port", line: "GET /k", host: "b.s3.example.com:6789", op: "GetObject", bucket: "b", key: "k"},
		{name: "vhost upper case", line: "GET /k", host: "B.S3.Example.COM", op: "GetObject", bucket: "b", key: "k"},
		{name: "vhost dotted bucket", line: "GET /k", host: "my.dotted.bucket.s3.example.com", op: "GetObject", bucket: "my.dotted.bucket", key: "k"},
		{name: "vhost trailing dot", line: "GET /", host: "b.s3.example.com.", op: "ListObjects", bucket: "b"},
		{name: "not a subdomain", line: "GET /b/k", host: "xs3.example.com", op: "GetObject", bucket: "b", key: "k"},
		{name: "domain itself with port", line: "GET /b/k", host: "s3.example.com:443", op: "GetObject", bucket: "b", key: "k"},

		// Malformed.
		{name: "object without bucket", line: "GET //k", host: "localhost", wantErr: s3err.InvalidBucketName},
		{name: "empty vhost label", line: "GET /k", host: ".s3.example.com", wantErr: s3err.InvalidBucketName},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := tc.line + " HTTP/1.1\r\nHost: " + tc.host + "\r\n" + tc.headers + "\r\n"
			r := readRequest(t, raw)
			got, err := parseOp(r, domain)
			if code := s3err.CodeOf(err); code != tc.wantErr {
				t.Fatalf("parseOp(%q) error = %v, want code %q", raw, err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if got.op.name != tc.op || got.bucket != tc.bucket || got.key != tc.key {
				t.Errorf("parseOp(%q) = (%s, %q, %q), want (%s, %q, %q)", raw, got.op.name, got.bucket, got.key, tc.op, tc.bucket, tc.key)
			}
		})
	}
}

// TestOpsOrder checks the invariant matchOp relies on: for each method and
// scope, rows with a query precede rows without, rows with a header precede
// the row without, and no two rows are indistinguishable.
func TestOpsOrder(t *testing.T) {
	type slot struct {
		method string
		sc     scope
	}
	plainSeen := map[slot]bool{}
	headerlessSeen := map[slot]bool{}
	seen := map[string]string{}
	for _, o := range ops {
		s := slot{o.method, o.scope}
		if o.query != "" && plainSeen[s] {
			t.Errorf("op %s: a row with query %q follows a row without one for %s %s", o.name, o.query, o.method, o.scope)
		}
		if o.query == "" {
			plainSeen[s] = true
			if o.header != "" && headerlessSeen[s] {
				t.Errorf("op %s: a row with header %q follows the plain row for %s %s", o.name, o.header, o.method, o.scope)
			}
			if o.header == "" {
				headerlessSeen[s] = true
			}
		}
		sig := o.method + " " + o.scope.String() + " ?" + o.query + " " + o.header
		if prev, ok := seen[sig]; ok {
			t.Errorf("ops %s and %s are indistinguishable (%s)", prev, o.name, sig)
		}
		seen[sig] = o.name
		if o.handle == nil || (o.action == "") != o.public || o.name == "" {
			t.Errorf("op %q is incomplete", o.name)
		}
		if o.public && (o.body != bodyNone || o.perKey) {
			t.Errorf("public op %s reads a body or authorizes per key", o.name)
		}
		if o.body == bodyXML && o.limit <= 0 {
			t.Errorf("op %s reads XML without a limit", o.name)
		}
	}
}

// TestSubresources checks that every query an op claims is a known
// sub-resource, so that the same sub-resource with another method is
// NotImplemented rather than the plain operation.
func TestSubresources(t *testing.T) {
	for _, o := range ops {
		if o.query == "" {
			continue
		}
		name, _, _ := strings.Cut(o.query, "=")
		if name == "list-type" {
			continue // list-type=1 is ListObjects, not a different operation
		}
		if !subresources[name] {
			t.Errorf("op %s: query %q is not in subresources", o.name, name)
		}
	}
}

func FuzzParseOp(f *testing.F) {
	for _, s := range []string{
		"GET / HTTP/1.1\r\nHost: s3.example.com\r\n\r\n",
		"PUT /b/k?partNumber=1&uploadId=x HTTP/1.1\r\nHost: localhost\r\nx-amz-copy-source: a/b\r\n\r\n",
		"GET /?list-type=2 HTTP/1.1\r\nHost: b.s3.example.com:80\r\n\r\n",
		"DELETE //x?tagging HTTP/1.1\r\nHost: b.s3.example.com\r\n\r\n",
		"POST /b?delete HTTP/1.1\r\nHost: [::1]:9000\r\n\r\n",
		"OPTIONS /b/k?uploads HTTP/1.1\r\nHost: localhost\r\nOrigin: https://a.example\r\nAccess-Control-Request-Method: POST\r\n\r\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if len(raw) > 4096 {
			return
		}
		r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
		if err != nil {
			return
		}
		rt, err := parseOp(r, "s3.example.com")
		if err != nil {
			if _, ok := err.(*s3err.Error); !ok {
				t.Fatalf("parseOp error %v is not an *s3err.Error", err)
			}
			return
		}
		if rt.op == nil {
			t.Fatal("parseOp returned no op")
		}
		if rt.key != "" && rt.bucket == "" {
			t.Fatalf("parseOp returned key %q without a bucket", rt.key)
		}
		if rt.op.scope == scopeObject && rt.key == "" && rt.op != &opNotImplemented {
			t.Fatalf("object op %s without a key", rt.op.name)
		}
		if (r.Method == http.MethodOptions) != rt.op.public && rt.op != &opNotImplemented {
			t.Fatalf("%s routed to %s", r.Method, rt.op.name)
		}
	})
}
