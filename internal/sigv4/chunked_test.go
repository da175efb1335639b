package sigv4

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/coffer-s3/coffer/internal/s3err"
)

const crcName = "x-amz-checksum-crc32c"

func crc32c(b []byte) string {
	sum := crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli))
	return base64.StdEncoding.EncodeToString([]byte{byte(sum >> 24), byte(sum >> 16), byte(sum >> 8), byte(sum)})
}

// chunkedUpload signs an aws-chunked upload of payload and returns the
// request as a server reads it, and its encoded body.
func chunkedUpload(t testing.TB, payload []byte, mode PayloadMode, chunkSize int) (*http.Request, []byte) {
	t.Helper()
	c := newRequest(t, http.MethodPut, "http://localhost:6789/bucket/object", nil)
	opts := ChunkedOptions{Mode: mode, ChunkSize: chunkSize}
	if mode != PayloadStreamingSigned {
		opts.Trailers = []Trailer{{Name: crcName, Value: crc32c(payload)}}
	}
	if err := SignChunked(c, testCred, "us-east-1", testTime, payload, opts); err != nil {
		t.Fatal(err)
	}
	encoded, err := io.ReadAll(c.Body)
	if err != nil {
		t.Fatal(err)
	}
	c.Body = io.NopCloser(bytes.NewReader(encoded))
	return serverSide(t, c), encoded
}

// decodeChunked verifies r and decodes body with it.
func decodeChunked(t testing.TB, r *http.Request, body io.Reader) ([]byte, *Body, error) {
	t.Helper()
	res, err := smallChunkVerifier().Verify(r)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	b, err := res.Body(io.NopCloser(body))
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(b)
	return data, b, err
}

// smallChunkVerifier accepts signed chunks of any size, which keeps tests
// that decode at every offset fast. TestChunkedMinimumSize covers the limit.
func smallChunkVerifier() *Verifier {
	v := newTestVerifier(testTime, testCred)
	v.minChunk = 1
	return v
}

var streamingModes = []PayloadMode{PayloadStreamingSigned, PayloadStreamingSignedTrailer, PayloadStreamingUnsignedTrailer}

func TestChunkedRoundTrip(t *testing.T) {
	readers := []struct {
		name string
		wrap func(io.Reader) io.Reader
	}{
		{"plain", func(r io.Reader) io.Reader { return r }},
		{"one byte", iotest.OneByteReader},
		{"half", iotest.HalfReader},
		{"data+EOF", iotest.DataErrReader},
	}
	for _, mode := range streamingModes {
		for _, size := range []int{0, 1, 100, 8192, 65537} {
			for _, chunk := range []int{7, 8192, 65536} {
				if size/chunk > 2000 {
					continue
				}
				payload := bytes.Repeat([]byte("0123456789abcdef"), size/16+1)[:size]
				r, encoded := chunkedUpload(t, payload, mode, chunk)
				for _, rd := range readers {
					t.Run(fmt.Sprintf("%v/size=%d/chunk=%d/%s", mode, size, chunk, rd.name), func(t *testing.T) {
						got, b, err := decodeChunked(t, r, &strictReader{t: t, r: rd.wrap(bytes.NewReader(encoded))})
						if err != nil {
							t.Fatalf("decode: %v", err)
						}
						if !bytes.Equal(got, payload) {
							t.Fatalf("decoded %d bytes, want %d", len(got), len(payload))
						}
						wantCRC := ""
						if mode != PayloadStreamingSigned {
							wantCRC = crc32c(payload)
						}
						if got := b.Trailer(strings.ToUpper(crcName)); got != wantCRC {
							t.Errorf("trailer = %q, want %q", got, wantCRC)
						}
					})
				}
			}
		}
	}
}

// strictReader fails the test if it is read after returning io.EOF: the
// decoder must not read past the end of the body.
type strictReader struct {
	t   testing.TB
	r   io.Reader
	eof bool
}

func (s *strictReader) Read(p []byte) (int, error) {
	if s.eof {
		s.t.Error("read after io.EOF")
	}
	n, err := s.r.Read(p)
	s.eof = err == io.EOF
	return n, err
}

func TestChunkedTruncated(t *testing.T) {
	payload := bytes.Repeat([]byte("xyz"), 100)
	for _, mode := range streamingModes {
		r, encoded := chunkedUpload(t, payload, mode, 100)
		t.Run(mode.String(), func(t *testing.T) {
			for i := range len(encoded) {
				for _, one := range []bool{false, true} {
					var body io.Reader = bytes.NewReader(encoded[:i])
					if one {
						body = iotest.OneByteReader(body)
					}
					_, _, err := decodeChunked(t, r, body)
					if s3err.CodeOf(err) != s3err.IncompleteBody {
						t.Fatalf("truncated at %d of %d (one byte %v): error = %v, want IncompleteBody", i, len(encoded), one, err)
					}
				}
			}
		})
	}
}

// rawChunked returns a request that declares an unsigned-trailer stream of
// decoded bytes with the given trailers.
func rawChunked(t testing.TB, decoded int, trailers ...string) *http.Request {
	c := newRequest(t, http.MethodPut, "http://localhost/b/k", nil)
	c.Header.Set("X-Amz-Decoded-Content-Length", fmt.Sprint(decoded))
	if len(trailers) > 0 {
		c.Header.Set("X-Amz-Trailer", strings.Join(trailers, ","))
	}
	SignRequest(c, testCred, "us-east-1", testTime, streamingUnsignedTrailer)
	return serverSide(t, c)
}

func TestChunkedMalformed(t *testing.T) {
	long := strings.Repeat("x", maxChunkLine)
	// S3 answers every framing error with IncompleteBody and this message;
	// chunks that add up wrong get the standard message and both counts.
	const term = "The request body terminated unexpectedly"
	for _, tc := range []struct {
		name     string
		decoded  int
		trailers []string
		body     string
		want     s3err.Code
		msg      string   // "" for the table's message
		extras   []string // name, value pairs of extra elements
	}{
		{name: "ok", decoded: 5, body: "5\r\nhello\r\n0\r\n\r\n"},
		{name: "ok uppercase hex and zeros", decoded: 10, body: "00A\r\nhelloworld\r\n0\r\n\r\n"},
		{name: "ok longest line", decoded: 5, body: "5;" + long[:maxChunkLine-4] + "\r\nhello\r\n0\r\n\r\n"},
		{name: "ok trailer", decoded: 5, trailers: []string{crcName}, body: "5\r\nhello\r\n0\r\n" + crcName + ":abc\r\n\r\n"},
		{name: "ok sha512 and xxhash128 trailers", decoded: 5, trailers: []string{"x-amz-checksum-sha512", "x-amz-checksum-xxhash128"},
			body: "5\r\nhello\r\n0\r\nx-amz-checksum-sha512:m3HSJL1i83hdltRq0+o9czGb+8KJDKra4t/3JRlnPKcjI8PZm6XBHXx6zG4UuMXaDEZjR1wuXDre9G9zvN7AQw==\r\n" +
				"x-amz-checksum-xxhash128:MxGUd+3l3NXpcWQnaB1YYA==\r\n\r\n"},
		{name: "line too long", decoded: 5, body: "5;" + long[:maxChunkLine-3] + "\r\nhello\r\n0\r\n\r\n", want: s3err.IncompleteBody, msg: term},
		{name: "bare LF header", decoded: 5, body: "5\nhello\r\n0\r\n\r\n", want: s3err.IncompleteBody, msg: term},
		{name: "bare LF final", decoded: 5, body: "5\r\nhello\r\n0\n\r\n", want: s3err.IncompleteBody, msg: term},
		// Trailer lines may contain LF (see readLine), so the body ends inside one.
		{name: "bare LF end", decoded: 5, body: "5\r\nhello\r\n0\r\n\n", want: s3err.IncompleteBody, msg: term},
		{name: "LF after data", decoded: 5, body: "5\r\nhello\n0\r\n\r\n", want: s3err.IncompleteBody, msg: term},
		{name: "data too long", decoded: 5, body: "5\r\nhelloX\r\n0\r\n\r\n", want: s3err.IncompleteBody, msg: term},
		{name: "not hex", decoded: 5, body: "g\r\nhello\r\n0\r\n\r\n", want: s3err.IncompleteBody, msg: term},
		{name: "empty size", decoded: 5, body: "\r\nhello\r\n0\r\n\r\n", want: s3err.IncompleteBody, msg: term},
		{name: "space in size", decoded: 5, body: "5 \r\nhello\r\n0\r\n\r\n", want: s3err.IncompleteBody, msg: term},
		{name: "negative size", decoded: 5, body: "-5\r\nhello\r\n0\r\n\r\n", want: s3err.IncompleteBody, msg: term},
		{name: "17 digits", decoded: 5, body: "00000000000000005\r\nhello\r\n0\r\n\r\n", want: s3err.IncompleteBody, msg: term},
		{name: "overflow", decoded: 5, body: "ffffffffffffffff\r\nhello\r\n0\r\n\r\n", want: s3err.IncompleteBody,
			extras: []string{"NumberBytesExpected", "5", "NumberBytesProvided", "4611686018427387903"}},
		{name: "beyond declared", decoded: 5, body: "6\r\nhello!\r\n0\r\n\r\n", want: s3err.IncompleteBody,
			extras: []string{"NumberBytesExpected", "5", "NumberBytesProvided", "6"}},
		{name: "extra chunk", decoded: 5, body: "5\r\nhello\r\n1\r\n!\r\n0\r\n\r\n", want: s3err.IncompleteBody,
			extras: []string{"NumberBytesExpected", "5", "NumberBytesProvided", "6"}},
		{name: "short of declared", decoded: 6, body: "5\r\nhello\r\n0\r\n\r\n", want: s3err.IncompleteBody,
			extras: []string{"NumberBytesExpected", "6", "NumberBytesProvided", "5"}},
		{name: "no final chunk", decoded: 5, body: "5\r\nhello\r\n", want: s3err.IncompleteBody, msg: term},
		{name: "no final CRLF", decoded: 5, body: "5\r\nhello\r\n0\r\n", want: s3err.IncompleteBody, msg: term},
		{name: "trailing garbage", decoded: 5, body: "5\r\nhello\r\n0\r\n\r\nX", want: s3err.IncompleteBody, msg: term},
		{name: "trailing CRLF", decoded: 5, body: "5\r\nhello\r\n0\r\n\r\n\r\n", want: s3err.IncompleteBody, msg: term},
		{name: "undeclared trailer", decoded: 5, body: "5\r\nhello\r\n0\r\nx-amz-meta-a:1\r\n\r\n", want: s3err.IncompleteBody, msg: term},
		{name: "other undeclared trailer", decoded: 5, trailers: []string{crcName}, body: "5\r\nhello\r\n0\r\nx-amz-meta-a:1\r\n\r\n", want: s3err.IncompleteBody, msg: term},
		{name: "missing trailer", decoded: 5, trailers: []string{crcName}, body: "5\r\nhello\r\n0\r\n\r\n", want: s3err.IncompleteBody, msg: term},
		{name: "repeated trailer", decoded: 5, trailers: []string{crcName}, body: "5\r\nhello\r\n0\r\n" + crcName + ":a\r\n" + crcName + ":a\r\n\r\n", want: s3err.IncompleteBody, msg: term},
		{name: "trailer without colon", decoded: 5, trailers: []string{crcName}, body: "5\r\nhello\r\n0\r\n" + crcName + "\r\n\r\n", want: s3err.IncompleteBody, msg: term},
		{name: "signature in unsigned", decoded: 5, body: "5\r\nhello\r\n0\r\n" + trailerSignatureName + ":" + emptySHA256 + "\r\n\r\n", want: s3err.IncompleteBody, msg: term},
		{name: "endless trailers", decoded: 0, trailers: []string{crcName}, body: "0\r\n" + strings.Repeat("a:b\r\n", 100), want: s3err.IncompleteBody, msg: term},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rawChunked(t, tc.decoded, tc.trailers...)
			for _, one := range []bool{false, true} {
				var body io.Reader = strings.NewReader(tc.body)
				if one {
					body = iotest.OneByteReader(body)
				}
				data, _, err := decodeChunked(t, r, body)
				if tc.want == "" {
					wantCode(t, err, "")
				} else {
					wantError(t, err, tc.want, tc.msg, tc.extras...)
				}
				if err == nil && len(data) != tc.decoded {
					t.Errorf("decoded %d bytes, want %d", len(data), tc.decoded)
				}
			}
		})
	}
}

func TestChunkedSignatures(t *testing.T) {
	payload := []byte(strings.Repeat("A", 100) + strings.Repeat("B", 100) + strings.Repeat("C", 50))
	sig := func(encoded []byte, n int) int { // offset of the n-th chunk signature
		off := 0
		for range n + 1 {
			off += bytes.Index(encoded[off:], []byte(chunkSigExt)) + len(chunkSigExt)
		}
		return off
	}
	flip := func(b []byte, i int) []byte { return flipByte(b, i) }
	for _, tc := range []struct {
		name string
		mode PayloadMode
		edit func([]byte) []byte
		want s3err.Code
		max  int // most bytes that may be delivered before the error
	}{
		{name: "intact", mode: PayloadStreamingSignedTrailer, max: 250},
		{name: "first chunk signature", mode: PayloadStreamingSigned, edit: func(b []byte) []byte { return flip(b, sig(b, 0)) }, want: s3err.SignatureDoesNotMatch},
		{name: "middle chunk signature", mode: PayloadStreamingSigned, edit: func(b []byte) []byte { return flip(b, sig(b, 1)+63) }, want: s3err.SignatureDoesNotMatch, max: 100},
		{name: "middle chunk data", mode: PayloadStreamingSigned, edit: func(b []byte) []byte { return flip(b, bytes.IndexByte(b, 'B')+50) }, want: s3err.SignatureDoesNotMatch, max: 100},
		{name: "final chunk signature", mode: PayloadStreamingSigned, edit: func(b []byte) []byte { return flip(b, sig(b, 3)) }, want: s3err.SignatureDoesNotMatch, max: 200},
		{name: "chunks swapped", mode: PayloadStreamingSigned, edit: swapChunks, want: s3err.SignatureDoesNotMatch},
		{name: "trailer signature", mode: PayloadStreamingSignedTrailer, edit: func(b []byte) []byte { return flip(b, len(b)-10) }, want: s3err.SignatureDoesNotMatch, max: 200},
		{
			name: "trailer value", mode: PayloadStreamingSignedTrailer, want: s3err.SignatureDoesNotMatch, max: 200,
			edit: func(b []byte) []byte { return flip(b, bytes.Index(b, []byte(crcName))+len(crcName)+1) },
		},
		{
			name: "trailer signature missing", mode: PayloadStreamingSignedTrailer, want: s3err.IncompleteBody, max: 200,
			edit: func(b []byte) []byte { return append(b[:bytes.Index(b, []byte(trailerSignatureName))], "\r\n"...) },
		},
		{
			name: "trailer signature short", mode: PayloadStreamingSignedTrailer, want: s3err.IncompleteBody, max: 200,
			edit: func(b []byte) []byte { return append(b[:len(b)-5], "\r\n\r\n"...) },
		},
		{
			name: "minio-go trailer layout", mode: PayloadStreamingSignedTrailer, max: 250,
			edit: func(b []byte) []byte {
				return bytes.Replace(b, []byte("\r\n"+trailerSignatureName), []byte("\n\r\n"+trailerSignatureName), 1)
			},
		},
		{
			name: "no chunk signature", mode: PayloadStreamingSigned, want: s3err.IncompleteBody,
			edit: func(b []byte) []byte {
				return bytes.Replace(b, []byte(";chunk-signature="), []byte(";chunk-signaturX="), 1)
			},
		},
		{
			name: "short chunk signature", mode: PayloadStreamingSigned, want: s3err.IncompleteBody,
			edit: func(b []byte) []byte { i := sig(b, 0); return append(b[:i:i], b[i+1:]...) },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, encoded := chunkedUpload(t, payload, tc.mode, 100)
			if tc.edit != nil {
				encoded = tc.edit(bytes.Clone(encoded))
			}
			data, b, err := decodeChunked(t, r, bytes.NewReader(encoded))
			switch tc.want {
			case "":
				wantCode(t, err, "")
			case s3err.IncompleteBody: // framing broken
				wantError(t, err, tc.want, msgTerminated)
			default:
				wantError(t, err, tc.want, "")
			}
			if len(data) > tc.max {
				t.Errorf("%d bytes delivered before the error, want at most %d", len(data), tc.max)
			}
			if err == nil && (!bytes.Equal(data, payload) || b.Trailer(crcName) != crc32c(payload)) {
				t.Errorf("decoded %q with trailer %q", data, b.Trailer(crcName))
			}
			// io.ReadFull stops at the declared length; errors in the
			// final chunk or trailers must still reach it.
			res, _ := smallChunkVerifier().Verify(r)
			b, _ = res.Body(io.NopCloser(bytes.NewReader(encoded)))
			_, err = io.ReadFull(b, make([]byte, len(payload)))
			if (err == nil) != (tc.want == "") {
				t.Errorf("io.ReadFull error = %v, want code %q", err, tc.want)
			}
		})
	}
}

// swapChunks exchanges the first two 100-byte chunks with their signatures.
func swapChunks(b []byte) []byte {
	n := bytes.Index(b, []byte("\r\n"))*1 + 2 + 100 + 2
	return append(append(append([]byte{}, b[n:2*n]...), b[:n]...), b[2*n:]...)
}

func TestChunkedReadError(t *testing.T) {
	r, encoded := chunkedUpload(t, bytes.Repeat([]byte("q"), 1000), PayloadStreamingSignedTrailer, 100)
	boom := errors.New("connection reset")
	for _, cut := range []int{0, 10, 150, len(encoded) - 3} {
		body := io.MultiReader(bytes.NewReader(encoded[:cut]), iotest.ErrReader(boom))
		_, _, err := decodeChunked(t, r, body)
		if !errors.Is(err, boom) {
			t.Errorf("cut at %d: error = %v, want %v", cut, err, boom)
		}
	}
}

func TestChunkedAllocs(t *testing.T) {
	for _, mode := range streamingModes {
		allocs := make(map[int]float64)
		for _, chunks := range []int{1, 64} {
			r, encoded := chunkedUpload(t, bytes.Repeat([]byte("z"), chunks*1024), mode, 1024)
			res, err := smallChunkVerifier().Verify(r)
			if err != nil {
				t.Fatal(err)
			}
			rd := bytes.NewReader(encoded)
			buf := make([]byte, 32<<10)
			allocs[chunks] = testing.AllocsPerRun(20, func() {
				rd.Reset(encoded)
				b, err := res.Body(io.NopCloser(rd))
				if err != nil {
					t.Fatal(err)
				}
				for err == nil {
					_, err = b.Read(buf)
				}
				if err != io.EOF {
					t.Fatal(err)
				}
			})
		}
		// Setting up a Body allocates its buffers; decoding must not.
		if allocs[64] != allocs[1] || allocs[1] > 12 {
			t.Errorf("%v: allocations per body: %v for 1 chunk, %v for 64 chunks", mode, allocs[1], allocs[64])
		}
	}
}

func TestChunkedMinimumSize(t *testing.T) {
	payload := bytes.Repeat([]byte("m"), 20000)
	for _, tc := range []struct {
		mode  PayloadMode
		chunk int
		want  s3err.Code
	}{
		{PayloadStreamingSigned, 8192, ""},
		// S3 sees the short first chunk when the second begins, and
		// answers 403 with <Chunk>2</Chunk><BadChunkSize>4096</BadChunkSize>.
		{PayloadStreamingSigned, 4096, s3err.InvalidChunkSizeError},
		{PayloadStreamingSignedTrailer, 8191, s3err.InvalidChunkSizeError},
		{PayloadStreamingSigned, 19999, ""},
		// Unsigned chunks cost no HMAC, and some clients send stream-sized ones.
		{PayloadStreamingUnsignedTrailer, 100, ""},
	} {
		t.Run(fmt.Sprintf("%v/chunk=%d", tc.mode, tc.chunk), func(t *testing.T) {
			r, encoded := chunkedUpload(t, payload, tc.mode, tc.chunk)
			_, data, _, err := readBody(newTestVerifier(testTime, testCred), withBody(r, encoded))
			if tc.want == "" {
				wantCode(t, err, "")
			} else {
				wantError(t, err, tc.want, "", "Chunk", "2", "BadChunkSize", fmt.Sprint(tc.chunk))
			}
			if err == nil && !bytes.Equal(data, payload) {
				t.Errorf("decoded %d bytes", len(data))
			}
		})
	}
}

func withBody(r *http.Request, body []byte) *http.Request {
	r.Body = io.NopCloser(bytes.NewReader(body))
	return r
}
