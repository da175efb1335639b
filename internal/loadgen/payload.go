package loadgen

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coffer-s3/coffer/internal/sigv4"
)

// Payload is how the generator signs the bodies of object uploads (PUT
// and UploadPart): what S3 clients send, since the server's cost per byte
// depends on it.
type Payload string

// The payload signing modes of `coffer bench --payload`.
const (
	// PayloadSigned sends the body's SHA-256 in x-amz-content-sha256, as
	// aws-sdk-go-v2 does over plain HTTP.
	PayloadSigned Payload = "signed"
	// PayloadUnsigned sends UNSIGNED-PAYLOAD.
	PayloadUnsigned Payload = "unsigned"
	// PayloadStreaming sends aws-chunked bodies with a signature per 64
	// KiB chunk (STREAMING-AWS4-HMAC-SHA256-PAYLOAD), as minio-go, mc and
	// warp do over plain HTTP.
	PayloadStreaming Payload = "streaming"
	// PayloadStreamingTrailer sends unsigned aws-chunked bodies with an
	// x-amz-checksum-crc32 trailer (STREAMING-UNSIGNED-PAYLOAD-TRAILER), as
	// boto3 ≥ 1.36 and the AWS SDK for Go do over HTTPS.
	PayloadStreamingTrailer Payload = "streaming-trailer"
)

// DefaultPayload is the mode of every workload unless set: what warp sends,
// so that figures compare with warp's.
const DefaultPayload = PayloadStreaming

// Payloads returns the names of the payload modes.
func Payloads() []string {
	return []string{string(PayloadSigned), string(PayloadUnsigned), string(PayloadStreaming), string(PayloadStreamingTrailer)}
}

// ParsePayload parses a payload mode name.
func ParsePayload(s string) (Payload, error) {
	for _, p := range Payloads() {
		if s == p {
			return Payload(s), nil
		}
	}
	return "", fmt.Errorf("unknown payload %q (payloads: %s)", s, strings.Join(Payloads(), ", "))
}

// streamChunk is the chunk size of aws-chunked bodies, as minio-go and the
// AWS SDKs send them.
const streamChunk = 64 << 10

// payloadSums holds what signing a run's payload needs, computed once per
// run so that the generator does not hash every body it sends: every
// upload body is a prefix of the one payload (whole for PUT, part-sized for
// multipart parts), so its SHA-256 and CRC32 are cached by length, and the
// SHA-256 of each 64 KiB chunk serves every streaming upload (only the
// HMAC chain, which starts at each request's own signature, is computed per
// request). The server still hashes every byte it receives.
type payloadSums struct {
	mode   Payload
	data   []byte
	chunks [][32]byte // SHA-256 of each whole chunk, for PayloadStreaming

	mu  sync.Mutex     // guards sha, crc
	sha map[int]string // hex SHA-256 of data[:n]
	crc map[int]string // base64 CRC32 of data[:n]
}

func newPayloadSums(mode Payload, data []byte) *payloadSums {
	p := &payloadSums{mode: mode, data: data, sha: map[int]string{}, crc: map[int]string{}}
	if mode == PayloadStreaming {
		p.chunks = sigv4.ChunkSums(data, streamChunk)
	}
	return p
}

// prefix returns the cached digest of data[:n] in m, computing it with f.
func (p *payloadSums) prefix(m map[int]string, n int, f func([]byte) string) string {
	p.mu.Lock()
	v, ok := m[n]
	p.mu.Unlock()
	if ok {
		return v
	}
	v = f(p.data[:n])
	p.mu.Lock()
	m[n] = v
	p.mu.Unlock()
	return v
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func crc32Base64(b []byte) string {
	return base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint32(nil, crc32.ChecksumIEEE(b)))
}

// signUpload signs req, whose body is body (a prefix of the payload),
// under the payload mode, setting the body itself for the streaming modes.
func (c *client) signUpload(req *http.Request, body []byte) error {
	p := c.sums
	if p == nil || len(body) > len(p.data) || (len(body) > 0 && &body[0] != &p.data[0]) {
		// Not a prefix of the payload: hash it here.
		p = newPayloadSums(c.payload, body)
	}
	now := time.Now()
	switch p.mode {
	case PayloadSigned:
		return c.signer.Sign(req, p.prefix(p.sha, len(body), sha256Hex), now)
	case PayloadStreaming:
		return c.signer.SignStreaming(req, body, now, sigv4.StreamingOptions{
			Mode: sigv4.PayloadStreamingSigned, ChunkSize: streamChunk, ChunkSums: p.chunks,
		})
	case PayloadStreamingTrailer:
		return c.signer.SignStreaming(req, body, now, sigv4.StreamingOptions{
			Mode: sigv4.PayloadStreamingUnsignedTrailer, ChunkSize: streamChunk,
			Trailers: []sigv4.Trailer{{Name: "x-amz-checksum-crc32", Value: p.prefix(p.crc, len(body), crc32Base64)}},
		})
	}
	return c.signer.Sign(req, unsignedPayload, now)
}

// bodyHash is x-amz-content-sha256 for a request that is not an object
// upload (no body, or a small XML document): UNSIGNED-PAYLOAD in the
// unsigned mode, else its SHA-256, as SDKs send.
func (c *client) bodyHash(body []byte) string {
	if c.payload == PayloadUnsigned {
		return unsignedPayload
	}
	if len(body) == 0 {
		return emptySHA256
	}
	return sha256Hex(body)
}

// emptySHA256 is the SHA-256 of no bytes.
const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// payloadNote says what a payload mode sends, for reports.
func payloadNote(p Payload) string {
	switch p {
	case PayloadSigned:
		return "SHA-256 of the body in x-amz-content-sha256, as aws-sdk-go-v2 over HTTP"
	case PayloadUnsigned:
		return "UNSIGNED-PAYLOAD"
	case PayloadStreaming:
		return "aws-chunked, 64 KiB chunks each signed, as minio-go, mc and warp over HTTP"
	case PayloadStreamingTrailer:
		return "aws-chunked, unsigned 64 KiB chunks and a CRC32 trailer, as boto3 and the Go SDK over HTTPS"
	}
	return "unknown"
}
