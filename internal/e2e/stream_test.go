package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/coffer-s3/coffer/internal/sigv4"
)

// chunkedPut returns a PUT of payload to /bucket/key as a signed
// aws-chunked upload, and its encoded body.
func chunkedPut(t *testing.T, endpoint, bucket, key string, payload []byte, opts sigv4.ChunkedOptions) (*http.Request, []byte) {
	t.Helper()
	r, err := http.NewRequest("PUT", endpoint+"/"+bucket+"/"+s3Escape(key), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := sigv4.SignChunked(r, testCreds, testRegion, time.Now(), payload, opts); err != nil {
		t.Fatalf("SignChunked: %v", err)
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return r, body
}

// withBody returns r with its body replaced by b (same length).
func withBody(r *http.Request, b []byte) *http.Request {
	r2 := r.Clone(r.Context())
	r2.Body = io.NopCloser(bytes.NewReader(b))
	r2.GetBody = nil
	return r2
}

// unsignedChunks encodes chunks as an aws-chunked body without chunk
// signatures, followed by trailer lines.
func unsignedChunks(chunks [][]byte, trailer string) []byte {
	var b bytes.Buffer
	for _, c := range chunks {
		fmt.Fprintf(&b, "%x\r\n", len(c))
		b.Write(c)
		b.WriteString("\r\n")
	}
	b.WriteString("0\r\n")
	if trailer != "" {
		b.WriteString(trailer + "\r\n")
	}
	b.WriteString("\r\n")
	return b.Bytes()
}

// unsignedTrailerPut returns a signed PUT whose aws-chunked body (unsigned
// chunks, STREAMING-UNSIGNED-PAYLOAD-TRAILER) is exactly body, declaring
// decoded as the decoded length and a CRC32 trailer.
func unsignedTrailerPut(t *testing.T, endpoint, target string, body []byte, decoded int) *http.Request {
	t.Helper()
	r, err := http.NewRequest("PUT", endpoint+target, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Content-Encoding", "aws-chunked")
	r.Header.Set("X-Amz-Decoded-Content-Length", strconv.Itoa(decoded))
	r.Header.Set("X-Amz-Trailer", "x-amz-checksum-crc32")
	sigv4.SignRequest(r, testCreds, testRegion, time.Now(), "STREAMING-UNSIGNED-PAYLOAD-TRAILER")
	return r
}

// stillHolds checks, now and 200 ms later, that bucket/key holds want
// (nil: absent). A rejected write may still be winding down in the server
// when the client sees the error.
func stillHolds(t *testing.T, c *s3.Client, bucket, key string, want []byte) {
	t.Helper()
	for i := 0; i < 2; i++ {
		out, err := c.GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if want == nil {
			wantErr(t, "GetObject of a key whose write was rejected", err, "NoSuchKey", 404)
		} else if err != nil {
			t.Errorf("GetObject of %s after a rejected overwrite: %v", key, err)
		} else {
			got, _ := io.ReadAll(out.Body)
			checkBody(t, "object after a rejected overwrite", got, want)
		}
		if err == nil {
			out.Body.Close()
		}
		if i == 0 {
			time.Sleep(200 * time.Millisecond)
		}
	}
}

func TestStreamingUploads(t *testing.T) {
	t.Parallel()
	testStreamingUploads(t, startServer(t))
}

func testStreamingUploads(t *testing.T, ts s3Target) {
	c := ts.client(t)
	b := mkBucket(t, c, "stream")
	endpoint, hc := ts.rawEndpoint()
	old := randBytes(50 * kib)

	t.Run("signed", func(t *testing.T) {
		for _, size := range []int{0, 1, 64 * kib, 300*kib + 3, 3*mib + 1} {
			payload := randBytes(size)
			r, _ := chunkedPut(t, endpoint, b, "signed", payload, sigv4.ChunkedOptions{})
			resp, body := do(t, hc, r)
			if resp.StatusCode != 200 {
				t.Fatalf("signed aws-chunked PUT of %d bytes: %d %s", size, resp.StatusCode, body)
			}
			if resp.Header.Get("ETag") != quoted(md5Hex(payload)) {
				t.Errorf("ETag %q, want %s", resp.Header.Get("ETag"), quoted(md5Hex(payload)))
			}
			checkBody(t, "GetObject", get(t, c, b, "signed"), payload)
			checkContentEncoding(t, c, b, "signed", "")
		}
	})

	t.Run("halfClosedAfterFullBody", func(t *testing.T) {
		// A client that sends a whole request and then shuts down its
		// sending side (HTTP/1.0-style tools do) still gets the answer, and
		// a 200 means stored.
		for _, size := range []int{10 * kib, 3*mib + 7} {
			payload := randBytes(size)
			key := fmt.Sprintf("half-closed-%d", size)
			r := rawReq{method: "PUT", target: "/" + b + "/" + key, body: payload, hash: "UNSIGNED-PAYLOAD"}.build(t, endpoint)
			resp, body, ok := sendPartial(t, ts.dialAddr(), r, payload, len(payload))
			if !ok {
				t.Errorf("%d bytes: no response after a complete request and a half-close", size)
				continue
			}
			if resp.StatusCode != 200 || resp.Header.Get("ETag") != quoted(md5Hex(payload)) {
				t.Errorf("%d bytes: %d, ETag %q; want 200 with the ETag (body %.200s)", size, resp.StatusCode, resp.Header.Get("ETag"), body)
			}
			if resp.StatusCode == 200 {
				stillHolds(t, c, b, key, payload)
			}
		}
	})

	t.Run("contentEncoding", func(t *testing.T) {
		// Content-Encoding: aws-chunked,gzip stores gzip.
		payload := []byte("pretend gzip")
		r, err := http.NewRequest("PUT", endpoint+"/"+b+"/gz", nil)
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set("Content-Encoding", "gzip")
		if err := sigv4.SignChunked(r, testCreds, testRegion, time.Now(), payload, sigv4.ChunkedOptions{}); err != nil {
			t.Fatal(err)
		}
		if ce := r.Header.Get("Content-Encoding"); ce != "aws-chunked,gzip" {
			t.Fatalf("SignChunked set Content-Encoding %q", ce)
		}
		resp, body := do(t, hc, r)
		if resp.StatusCode != 200 {
			t.Fatalf("PUT: %d %s", resp.StatusCode, body)
		}
		checkBody(t, "GetObject", get(t, c, b, "gz"), payload)
		checkContentEncoding(t, c, b, "gz", "gzip")
	})

	t.Run("signedTrailer", func(t *testing.T) {
		payload := randBytes(200 * kib)
		for _, mode := range []sigv4.PayloadMode{sigv4.PayloadStreamingSignedTrailer, sigv4.PayloadStreamingUnsignedTrailer} {
			// Every algorithm, as SDKs that compute it send it.
			for _, alg := range allAlgorithms {
				name := "x-amz-checksum-" + strings.ToLower(string(alg))
				want := checksumOf(alg, payload)
				r, _ := chunkedPut(t, endpoint, b, "trailer", payload, sigv4.ChunkedOptions{Mode: mode,
					Trailers: []sigv4.Trailer{{Name: name, Value: want}}})
				resp, body := do(t, hc, r)
				if resp.StatusCode != 200 {
					t.Fatalf("%v PUT with trailer %s: %d %s", mode, name, resp.StatusCode, body)
				}
				if got := resp.Header.Get(name); got != want {
					t.Errorf("%v PUT with trailer %s: response %s %q, want %q", mode, name, name, got, want)
				}
				h, err := c.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String("trailer"), ChecksumMode: types.ChecksumModeEnabled})
				if err != nil {
					t.Fatalf("HeadObject: %v", err)
				}
				if got := outputChecksum(alg, h); got != want {
					t.Errorf("%v: stored %s %q, want %q", mode, alg, got, want)
				}
				checkBody(t, "GetObject", get(t, c, b, "trailer"), payload)

				r, _ = chunkedPut(t, endpoint, b, "trailer-bad", payload, sigv4.ChunkedOptions{Mode: mode,
					Trailers: []sigv4.Trailer{{Name: name, Value: checksumOf(alg, payload[1:])}}})
				resp, body = do(t, hc, r)
				if resp.StatusCode != 400 || !bytes.Contains(body, []byte("<Code>BadDigest</Code>")) {
					t.Errorf("%v PUT with a wrong trailer %s: %d %s, want 400 BadDigest", mode, name, resp.StatusCode, body)
				}
			}
		}
	})

	// Each case rejects an upload, first of a new key, then over an
	// existing object, which must stay whole.
	for _, size := range []int{20 * kib, 3*mib + 5} {
		payload := randBytes(size)
		cases := []struct {
			name   string
			send   func(t *testing.T, key string) (*http.Response, []byte, bool)
			code   string // wanted error code if the server answered; "-": any 4xx
			status int
		}{
			{"corrupt chunk signature", func(t *testing.T, key string) (*http.Response, []byte, bool) {
				r, body := chunkedPut(t, endpoint, b, key, payload, sigv4.ChunkedOptions{ChunkSize: 8 * kib})
				// Flip one hex digit of the last chunk's signature.
				i := bytes.LastIndex(body, []byte(";chunk-signature=")) + len(";chunk-signature=") + 5
				body = bytes.Clone(body)
				if body[i] == '0' {
					body[i] = '1'
				} else {
					body[i] = '0'
				}
				resp, rb := do(t, hc, withBody(r, body))
				return resp, rb, true
			}, "SignatureDoesNotMatch", 403},
			{"corrupt chunk data", func(t *testing.T, key string) (*http.Response, []byte, bool) {
				r, body := chunkedPut(t, endpoint, b, key, payload, sigv4.ChunkedOptions{ChunkSize: 8 * kib})
				body = bytes.Clone(body)
				body[len(body)-200] ^= 0xff
				resp, rb := do(t, hc, withBody(r, body))
				return resp, rb, true
			}, "SignatureDoesNotMatch", 403},
			{"chunked body cut short", func(t *testing.T, key string) (*http.Response, []byte, bool) {
				r, body := chunkedPut(t, endpoint, b, key, payload, sigv4.ChunkedOptions{})
				return sendPartial(t, ts.dialAddr(), r, body, len(body)/2)
			}, "IncompleteBody", 400},
			{"plain body cut short", func(t *testing.T, key string) (*http.Response, []byte, bool) {
				r := rawReq{method: "PUT", target: "/" + b + "/" + key, body: payload, hash: "UNSIGNED-PAYLOAD"}.build(t, endpoint)
				return sendPartial(t, ts.dialAddr(), r, payload, len(payload)-1)
			}, "IncompleteBody", 400},
			{"fewer bytes than the decoded length", func(t *testing.T, key string) (*http.Response, []byte, bool) {
				half := payload[:len(payload)/2]
				body := unsignedChunks([][]byte{half}, "x-amz-checksum-crc32:"+checksumOf(types.ChecksumAlgorithmCrc32, half))
				resp, rb := do(t, hc, unsignedTrailerPut(t, endpoint, "/"+b+"/"+key, body, len(payload)))
				return resp, rb, true
			}, "IncompleteBody", 400},
			{"more bytes than the decoded length", func(t *testing.T, key string) (*http.Response, []byte, bool) {
				body := unsignedChunks([][]byte{payload}, "x-amz-checksum-crc32:"+checksumOf(types.ChecksumAlgorithmCrc32, payload))
				resp, rb := do(t, hc, unsignedTrailerPut(t, endpoint, "/"+b+"/"+key, body, len(payload)-10))
				return resp, rb, true
			}, "-", 400},
			{"wrong trailing checksum", func(t *testing.T, key string) (*http.Response, []byte, bool) {
				body := unsignedChunks([][]byte{payload}, "x-amz-checksum-crc32:"+checksumOf(types.ChecksumAlgorithmCrc32, []byte("other")))
				resp, rb := do(t, hc, unsignedTrailerPut(t, endpoint, "/"+b+"/"+key, body, len(payload)))
				return resp, rb, true
			}, "BadDigest", 400},
			{"missing trailer", func(t *testing.T, key string) (*http.Response, []byte, bool) {
				body := unsignedChunks([][]byte{payload}, "")
				resp, rb := do(t, hc, unsignedTrailerPut(t, endpoint, "/"+b+"/"+key, body, len(payload)))
				return resp, rb, true
			}, "-", 400},
		}
		for _, tc := range cases {
			for _, overwrite := range []bool{false, true} {
				name := fmt.Sprintf("%s/%d/overwrite=%v", tc.name, size, overwrite)
				t.Run(name, func(t *testing.T) {
					key := fmt.Sprintf("rejected-%s-%d-%v", tc.name, size, overwrite)
					var want []byte
					if overwrite {
						want = old
						put(t, c, b, key, old)
					}
					resp, body, answered := tc.send(t, key)
					if answered {
						if resp.StatusCode < 400 {
							t.Errorf("status %d, want a 4xx rejection; body %.300s", resp.StatusCode, body)
						} else if tc.code != "-" {
							checkError(t, tc.name, resp, body, tc.code, tc.status, "-")
						}
					}
					stillHolds(t, c, b, key, want)
				})
			}
		}
	}
}
