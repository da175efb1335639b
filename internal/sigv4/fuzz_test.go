package sigv4

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/coffer-s3/coffer/internal/s3err"
)

// maxFuzzInput bounds fuzz inputs, as Prometheus's maxInputSize does: the
// parsers are linear, and larger inputs only slow the fuzzer down.
const maxFuzzInput = 1 << 14

func FuzzParseAuthorization(f *testing.F) {
	for _, tc := range authorizationCases {
		f.Add(tc.in)
	}
	f.Add(lines(f, "presigned_get.url")[0])
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > maxFuzzInput {
			return
		}
		a, err := parseAuthorization(s)
		if err != nil {
			var e *s3err.Error
			if !errors.As(err, &e) || !slices.Contains([]s3err.Code{s3err.AuthorizationHeaderMalformed, s3err.InvalidArgument, s3err.InvalidRequest}, e.Code) {
				t.Fatalf("parseAuthorization(%q) error = %v", s, err)
			}
			return
		}
		if !validSignedHeaders(a.signedHeaders) || a.cred.accessKeyID == "" || a.cred.scope != a.cred.date+"/"+a.cred.region+"/"+a.cred.service+"/"+a.cred.terminator {
			t.Fatalf("parseAuthorization(%q) = inconsistent %+v", s, a)
		}
		// Formatting what was parsed and parsing it again is the identity.
		again := fmt.Sprintf("%s Credential=%s/%s, SignedHeaders=%s, Signature=%x", algorithm, a.cred.accessKeyID, a.cred.scope, a.signedHeaders, a.signature)
		b, err := parseAuthorization(again)
		if err != nil || b != a {
			t.Fatalf("round trip of %q: %+v, %v; want %+v", s, b, err, a)
		}
	})
}

func FuzzParsePresignedQuery(f *testing.F) {
	u, err := url.Parse(lines(f, "presigned_get.url")[0])
	if err != nil {
		f.Fatal(err)
	}
	f.Add(u.RawQuery)
	for _, q := range sdkQueries {
		f.Add(q)
	}
	f.Add("X-Amz-Expires=0&X-Amz-Date=x&X-Amz-Date=y")
	f.Add("a/b=c/d&a-b=c&%zz=%41")
	v := newTestVerifier(exampleTime, exampleCred)
	f.Fuzz(func(t *testing.T, raw string) {
		if len(raw) > maxFuzzInput {
			return
		}
		var q canonQuery
		if _, err := parsePresigned(raw, &q); err != nil && s3err.CodeOf(err) != s3err.AuthorizationQueryParametersError {
			t.Fatalf("parsePresigned(%q) error = %v", raw, err)
		}
		canon := string(q.appendCanonical(nil, false))

		// Canonicalization is idempotent.
		var q2 canonQuery
		q2.parse(canon)
		if again := string(q2.appendCanonical(nil, false)); again != canon {
			t.Fatalf("canonical query of %q is %q, but of that %q", raw, canon, again)
		}
		// It agrees with what aws-sdk-go-v2 signs: url.ParseQuery, then
		// every name and value query-escaped with %20 for space, sorted.
		if vals, err := url.ParseQuery(raw); err == nil {
			var pairs [][2]string
			for k, vs := range vals {
				for _, v := range vs {
					pairs = append(pairs, [2]string{sdkQueryEscape(k), sdkQueryEscape(v)})
				}
			}
			slices.SortFunc(pairs, func(a, b [2]string) int {
				if c := strings.Compare(a[0], b[0]); c != 0 {
					return c
				}
				return strings.Compare(a[1], b[1])
			})
			var want strings.Builder
			for i, p := range pairs {
				if i > 0 {
					want.WriteByte('&')
				}
				want.WriteString(p[0] + "=" + p[1])
			}
			if want.String() != canon {
				t.Fatalf("canonical query of %q = %q, SDK signs %q", raw, canon, want.String())
			}
		}
		// Verify never panics and only returns S3 errors.
		r := &http.Request{Method: http.MethodGet, Host: "examplebucket.s3.amazonaws.com", URL: &url.URL{Path: "/test.txt", RawQuery: raw}, Header: http.Header{}}
		if _, err := v.Verify(r); err != nil {
			var e *s3err.Error
			if !errors.As(err, &e) {
				t.Fatalf("Verify with query %q: non-S3 error %v", raw, err)
			}
		}
	})
}

// sdkQueryEscape escapes as aws-sdk-go-v2's v4.EncodeQuery does.
func sdkQueryEscape(s string) string {
	return strings.ReplaceAll(url.QueryEscape(s), "+", "%20")
}

func FuzzChunkedReader(f *testing.F) {
	f.Add([]byte("hello world"), uint8(0), uint16(4), uint32(7), []byte("5\r\nhello\r\n0\r\n\r\n"))
	f.Add([]byte{}, uint8(1), uint16(0), uint32(0), []byte("0\r\n\r\n"))
	f.Add(bytes.Repeat([]byte("ab"), 300), uint8(2), uint16(99), uint32(1<<20+3), []byte("0;chunk-signature="+emptySHA256+"\r\n\r\n"))
	f.Add([]byte("x"), uint8(1), uint16(1), uint32(0xffffffff), []byte("1\r\nx\r\n0\r\n"+crcName+":abc\r\n\r\n"))
	f.Fuzz(func(t *testing.T, payload []byte, modeSel uint8, chunk uint16, flip uint32, body []byte) {
		if len(payload) > maxFuzzInput/4 || len(body) > maxFuzzInput/4 {
			return
		}
		mode := streamingModes[int(modeSel)%len(streamingModes)]
		size := max(int(chunk)+1, len(payload)/64+1) // at most ~64 chunks
		r, encoded := chunkedUpload(t, payload, mode, size)
		res, err := smallChunkVerifier().Verify(r)
		if err != nil {
			t.Fatal(err)
		}
		decode := func(b []byte) ([]byte, *Body, error) {
			var rd io.Reader = bytes.NewReader(b)
			if flip&3 == 3 {
				rd = iotest.OneByteReader(rd)
			}
			body, err := res.Body(io.NopCloser(rd))
			if err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(body)
			return data, body, err
		}

		// What SignChunked encodes, the decoder accepts.
		data, b, err := decode(encoded)
		if err != nil || !bytes.Equal(data, payload) {
			t.Fatalf("decode of signed stream: %d bytes, %v", len(data), err)
		}
		wantTrailer := ""
		if mode != PayloadStreamingSigned {
			wantTrailer = crc32c(payload)
		}
		if b.Trailer(crcName) != wantTrailer {
			t.Fatalf("trailer %q, want %q", b.Trailer(crcName), wantTrailer)
		}

		// One changed byte: a signed stream decodes to the original or fails.
		mutated := bytes.Clone(encoded)
		i := int(flip>>1) % len(mutated)
		mutated[i] ^= byte(flip>>8) | 1
		data, b, err = decode(mutated)
		checkDecodeError(t, err)
		if err == nil {
			if len(data) != len(payload) {
				t.Fatalf("mutated stream decoded to %d bytes, declared %d", len(data), len(payload))
			}
			if mode != PayloadStreamingUnsignedTrailer && (!bytes.Equal(data, payload) || b.Trailer(crcName) != wantTrailer) {
				t.Fatalf("byte %d changed: forged data or trailer accepted", i)
			}
		}

		// Arbitrary input under the same headers never panics.
		data, _, err = decode(body)
		checkDecodeError(t, err)
		if err == nil && len(data) != len(payload) {
			t.Fatalf("arbitrary body decoded to %d bytes, declared %d", len(data), len(payload))
		}
	})
}

// checkDecodeError fails unless err is nil or an S3 error: the decoder reads
// from memory, so there are no I/O errors to pass through.
func checkDecodeError(t *testing.T, err error) {
	t.Helper()
	var e *s3err.Error
	if err != nil && !errors.As(err, &e) {
		t.Fatalf("decode error %v is not an *s3err.Error", err)
	}
}
