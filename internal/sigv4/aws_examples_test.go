package sigv4

import (
	"bytes"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The examples of https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html,
// .../sigv4-query-string-auth.html and .../sigv4-streaming.html, stored as
// raw requests in testdata.

func TestAWSHeaderExamples(t *testing.T) {
	for _, tc := range []struct {
		file    string
		payload PayloadMode
		body    string
	}{
		{file: "get_object.http", payload: PayloadSigned},
		{file: "put_object.http", payload: PayloadSigned, body: "Welcome to Amazon S3."},
		{file: "get_bucket_lifecycle.http", payload: PayloadSigned},
		{file: "list_objects.http", payload: PayloadSigned},
	} {
		t.Run(tc.file, func(t *testing.T) {
			r := readRequest(t, tc.file)
			v := newTestVerifier(exampleTime.Add(time.Minute), exampleCred)
			res, body, _, err := readBody(v, r)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if res.AccessKeyID != exampleCred.AccessKeyID || res.Payload != tc.payload || res.Anonymous || res.Presigned {
				t.Errorf("result = %+v", res)
			}
			if string(body) != tc.body {
				t.Errorf("body = %q, want %q", body, tc.body)
			}

			// SignRequest must produce the documented signature for the same
			// headers. (The PUT example does not sign Content-Length.)
			want, err := parseAuthorization(r.Header.Get("Authorization"))
			if err != nil {
				t.Fatal(err)
			}
			c := newRequest(t, r.Method, "http://"+r.Host+r.RequestURI, nil)
			for k, vs := range r.Header {
				if k != "Authorization" && k != "Content-Length" {
					c.Header[k] = vs
				}
			}
			SignRequest(c, exampleCred, "us-east-1", exampleTime, r.Header.Get("X-Amz-Content-Sha256"))
			got, err := parseAuthorization(c.Header.Get("Authorization"))
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("SignRequest Authorization = %q, want %q", c.Header.Get("Authorization"), r.Header.Get("Authorization"))
			}
		})
	}
}

func TestAWSPresignedExample(t *testing.T) {
	want := lines(t, "presigned_get.url")[0]
	got, err := Presign(http.MethodGet, "https://examplebucket.s3.amazonaws.com/test.txt", exampleCred, "us-east-1", exampleTime, 86400*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("Presign =\n%s\nwant\n%s", got, want)
	}
	r := serverSide(t, newRequest(t, http.MethodGet, want, nil))
	for _, tc := range []struct {
		name    string
		now     time.Time
		wantErr bool
	}{
		{"at signing", exampleTime, false},
		{"last second", exampleTime.Add(86400 * time.Second), false},
		{"expired", exampleTime.Add(86401 * time.Second), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := newTestVerifier(tc.now, exampleCred).Verify(r)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Verify error = %v, want error %v", err, tc.wantErr)
			}
			if err == nil && (!res.Presigned || res.Payload != PayloadUnsigned || res.AccessKeyID != exampleCred.AccessKeyID) {
				t.Errorf("result = %+v", res)
			}
		})
	}
}

var chunkSigRE = regexp.MustCompile(`chunk-signature=([0-9a-f]{64})`)

func TestAWSChunkedExample(t *testing.T) {
	payload := bytes.Repeat([]byte{'a'}, 66560)
	c := newRequest(t, http.MethodPut, "http://s3.amazonaws.com/examplebucket/chunkObject.txt", nil)
	c.Header.Set("X-Amz-Storage-Class", "REDUCED_REDUNDANCY")
	if err := SignChunked(c, exampleCred, "us-east-1", exampleTime, payload, ChunkedOptions{ChunkSize: 64 << 10}); err != nil {
		t.Fatal(err)
	}
	doc := readRequest(t, "chunked_put.http")
	want, err := parseAuthorization(doc.Header.Get("Authorization"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := parseAuthorization(c.Header.Get("Authorization"))
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("seed Authorization = %q\nwant %q", c.Header.Get("Authorization"), doc.Header.Get("Authorization"))
	}
	if c.ContentLength != doc.ContentLength {
		t.Errorf("ContentLength = %d, want %d", c.ContentLength, doc.ContentLength)
	}
	encoded, err := io.ReadAll(c.Body)
	if err != nil {
		t.Fatal(err)
	}
	var sigs []string
	for _, m := range chunkSigRE.FindAllStringSubmatch(string(encoded), -1) {
		sigs = append(sigs, m[1])
	}
	if diff := cmp.Diff(lines(t, "chunked_put_signatures.txt"), sigs); diff != "" {
		t.Errorf("chunk signatures mismatch (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(string(encoded), "10000;chunk-signature=") {
		t.Errorf("body starts %q", encoded[:30])
	}

	// The documented request, with the encoded body, verifies and decodes.
	doc.Body = io.NopCloser(bytes.NewReader(encoded))
	res, body, _, err := readBody(newTestVerifier(exampleTime, exampleCred), doc)
	if err != nil {
		t.Fatalf("verify and decode: %v", err)
	}
	if res.Payload != PayloadStreamingSigned || res.DecodedLength != 66560 {
		t.Errorf("result = %+v", res)
	}
	if !bytes.Equal(body, payload) {
		t.Errorf("decoded %d bytes, want %d bytes of 'a'", len(body), len(payload))
	}
}
