package sigv4

import (
	"bytes"
	"io"
	"net/http"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

// TestSignStreamingMatchesSignChunked checks that SignStreaming sends
// exactly what SignChunked encodes, with and without precomputed chunk
// sums, and that the Verifier accepts and decodes it.
func TestSignStreamingMatchesSignChunked(t *testing.T) {
	t.Parallel()
	payload := make([]byte, 100<<10+17)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	s := NewSigner(testCred, "us-east-1", "s3")
	for _, tc := range []struct {
		name    string
		mode    PayloadMode
		size    int // payload bytes
		chunk   int
		sums    bool
		trailer bool
	}{
		{name: "signed", mode: PayloadStreamingSigned, size: len(payload), chunk: 8 << 10},
		{name: "signed with sums", mode: PayloadStreamingSigned, size: len(payload), chunk: 8 << 10, sums: true},
		{name: "signed, whole chunks, sums", mode: PayloadStreamingSigned, size: 64 << 10, chunk: 16 << 10, sums: true},
		{name: "signed, default chunk", mode: PayloadStreamingSigned, size: len(payload)},
		{name: "signed, empty", mode: PayloadStreamingSigned, size: 0, chunk: 8 << 10},
		{name: "signed trailer", mode: PayloadStreamingSignedTrailer, size: len(payload), chunk: 8 << 10, sums: true, trailer: true},
		{name: "unsigned trailer", mode: PayloadStreamingUnsignedTrailer, size: len(payload), chunk: 8 << 10, trailer: true},
		{name: "unsigned, no trailer", mode: PayloadStreamingUnsignedTrailer, size: 1000, chunk: 8 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := payload[:tc.size]
			copts := ChunkedOptions{Mode: tc.mode, ChunkSize: tc.chunk}
			if tc.trailer {
				copts.Trailers = []Trailer{{Name: crcName, Value: crc32c(data)}}
			}
			want := newRequest(t, http.MethodPut, "http://localhost:6789/bucket/object", nil)
			if err := SignChunked(want, testCred, "us-east-1", testTime, data, copts); err != nil {
				t.Fatal(err)
			}
			wantBody, err := io.ReadAll(want.Body)
			if err != nil {
				t.Fatal(err)
			}
			sopts := StreamingOptions{Mode: tc.mode, ChunkSize: tc.chunk, Trailers: copts.Trailers}
			if tc.sums {
				// Sums of the whole payload: only whole chunks use them.
				sopts.ChunkSums = ChunkSums(payload, tc.chunk)
			}
			got := newRequest(t, http.MethodPut, "http://localhost:6789/bucket/object", nil)
			if err := s.SignStreaming(got, data, testTime, sopts); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want.Header, got.Header); diff != "" {
				t.Errorf("headers differ (-SignChunked +SignStreaming):\n%s", diff)
			}
			if got.ContentLength != want.ContentLength {
				t.Errorf("ContentLength = %d, want %d", got.ContentLength, want.ContentLength)
			}
			gotBody, err := io.ReadAll(iotest.OneByteReader(got.Body))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(gotBody, wantBody) {
				t.Fatalf("body differs from SignChunked's (%d vs %d bytes)", len(gotBody), len(wantBody))
			}
			if int64(len(gotBody)) != got.ContentLength {
				t.Errorf("body has %d bytes, ContentLength %d", len(gotBody), got.ContentLength)
			}
			again, err := got.GetBody()
			if err != nil {
				t.Fatal(err)
			}
			if b, err := io.ReadAll(again); err != nil || !bytes.Equal(b, wantBody) {
				t.Fatalf("GetBody's body differs from the first (err %v)", err)
			}
			got.Body = io.NopCloser(bytes.NewReader(gotBody))
			decoded, _, err := decodeChunked(t, serverSide(t, got), bytes.NewReader(gotBody))
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !bytes.Equal(decoded, data) {
				t.Errorf("decoded %d bytes, want the %d of the payload", len(decoded), len(data))
			}
		})
	}
}

func TestSignStreamingBadInput(t *testing.T) {
	t.Parallel()
	s := NewSigner(testCred, "us-east-1", "s3")
	for _, tc := range []struct {
		name string
		opts StreamingOptions
	}{
		{name: "not streaming", opts: StreamingOptions{Mode: PayloadSigned}},
		{name: "negative chunk", opts: StreamingOptions{ChunkSize: -1}},
		{name: "trailer without trailer mode", opts: StreamingOptions{Trailers: []Trailer{{Name: crcName, Value: "x"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRequest(t, http.MethodPut, "http://h/b/k", nil)
			if err := s.SignStreaming(r, []byte("data"), testTime, tc.opts); err == nil {
				t.Error("SignStreaming succeeded, want an error")
			}
		})
	}
}
