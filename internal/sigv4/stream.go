package sigv4

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// StreamingOptions configures Signer.SignStreaming.
type StreamingOptions struct {
	// Mode is PayloadStreamingSigned (the default),
	// PayloadStreamingSignedTrailer or PayloadStreamingUnsignedTrailer.
	Mode PayloadMode
	// ChunkSize is the number of payload bytes per chunk. Default 64 KiB,
	// as minio-go and the AWS SDKs send.
	ChunkSize int
	// ChunkSums, if set, are the SHA-256 sums of the payload's first
	// len(ChunkSums) chunks of ChunkSize bytes, which the body then does
	// not hash again; later chunks are hashed as they are sent. A client
	// that sends one payload many times computes them once: only the HMAC
	// chain, which starts at each request's own signature, is per request.
	// The caller vouches that they match the payload.
	ChunkSums [][32]byte
	// Trailers are sent after the final chunk and declared in x-amz-trailer.
	// They need a trailer mode. Names are lowercased.
	Trailers []Trailer
}

// SignStreaming turns r into an aws-chunked upload of payload signed at
// time t, as SignChunked does, but with the Signer's cached key and without
// building the encoded body: r.Body streams it, reading chunk data straight
// from payload (which must not change until the body is read) and signing
// each chunk when its header is read. The body is safe to read once;
// r.GetBody returns a fresh one.
func (s *Signer) SignStreaming(r *http.Request, payload []byte, t time.Time, opts StreamingOptions) error {
	c, err := prepareChunked(r, len(payload), opts.Mode, opts.ChunkSize, opts.Trailers)
	if err != nil {
		return fmt.Errorf("sigv4: sign streaming: %w", err)
	}
	r.ContentLength = chunkedLength(int64(len(payload)), c.size, c.trailers, c.mode, c.signed)
	seed, dk, amzDate, err := s.sign(r, c.mode.String(), t)
	if err != nil {
		return err
	}
	newBody := func() io.ReadCloser {
		cs := &chunkStream{payload: payload, size: c.size, sums: opts.ChunkSums, mode: c.mode, trailers: c.trailers, signed: c.signed}
		if c.signed {
			cs.cs = chunkSigner{key: dk.key, mac: newHMACer(), amzDate: amzDate, scope: dk.scope, prev: seed}
		}
		return cs
	}
	r.Body = newBody()
	r.GetBody = func() (io.ReadCloser, error) { return newBody(), nil }
	return nil
}

// chunkedLength is the length of appendChunked's encoding of n payload
// bytes, computed without encoding them.
func chunkedLength(n int64, size int, trailers []Trailer, mode PayloadMode, signed bool) int64 {
	sig := int64(0)
	if signed {
		sig = int64(len(chunkSigExt)) + 2*sha256.Size
	}
	chunk := func(k int64) int64 {
		return int64(len(strconv.FormatInt(k, 16))) + sig + 2 + k + 2
	}
	l := n / int64(size) * chunk(int64(size))
	if rest := n % int64(size); rest > 0 {
		l += chunk(rest)
	}
	l += 1 + sig + 2 // the final, empty chunk
	if mode != PayloadStreamingSigned {
		for _, t := range trailers {
			l += int64(len(t.Name) + 1 + len(t.Value) + 2)
		}
		if mode == PayloadStreamingSignedTrailer {
			l += int64(len(trailerSignatureName)+1) + 2*sha256.Size + 2
		}
	}
	return l + 2
}

// chunkStream is the body SignStreaming makes: the encoding appendChunked
// produces, generated as it is read.
type chunkStream struct {
	payload  []byte
	size     int
	sums     [][32]byte
	mode     PayloadMode
	trailers []Trailer
	signed   bool
	cs       chunkSigner

	off     int    // payload bytes handed to pending so far
	chunk   int    // index of the next chunk
	state   int    // what the next segment is: csHeader, csData, csEnd, csDone
	dataLen int    // length of the chunk whose header was produced last
	pending []byte // the rest of the current segment
	hdr     []byte // backing store of header and trailer segments
}

// The segments of a chunkStream, in order.
const (
	csHeader = iota // [CRLF after the previous data] chunk header line
	csData          // a chunk's data, straight from the payload
	csEnd           // trailers and the closing CRLF
	csDone
)

// Read implements io.Reader.
func (c *chunkStream) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(c.pending) == 0 && !c.next() {
			break
		}
		m := copy(p[n:], c.pending)
		c.pending = c.pending[m:]
		n += m
	}
	if n == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	return n, nil
}

// Close implements io.Closer.
func (c *chunkStream) Close() error { return nil }

// next makes the next segment pending and reports whether there was one.
func (c *chunkStream) next() bool {
	switch c.state {
	case csHeader:
		data := c.payload[c.off:min(c.off+c.size, len(c.payload))]
		c.hdr = c.hdr[:0]
		if c.off > 0 {
			c.hdr = append(c.hdr, "\r\n"...)
		}
		c.hdr = strconv.AppendInt(c.hdr, int64(len(data)), 16)
		if c.signed {
			var sum [32]byte
			if c.chunk < len(c.sums) && len(data) == c.size {
				sum = c.sums[c.chunk]
			} else {
				sum = sha256.Sum256(data)
			}
			c.cs.sts = appendChunkStringToSign(c.cs.sts[:0], chunkAlgorithm, c.cs.amzDate, c.cs.scope, &c.cs.prev, &sum)
			c.cs.prev = c.cs.mac.sum(c.cs.key, c.cs.sts)
			c.hdr = append(c.hdr, chunkSigExt...)
			c.hdr = hex.AppendEncode(c.hdr, c.cs.prev[:])
		}
		c.hdr = append(c.hdr, "\r\n"...)
		c.pending = c.hdr
		c.dataLen = len(data)
		c.state = csData
		if len(data) == 0 {
			c.state = csEnd
		}
	case csData:
		c.pending = c.payload[c.off : c.off+c.dataLen]
		c.off += c.dataLen
		c.chunk++
		c.state = csHeader
	case csEnd:
		c.hdr = c.hdr[:0]
		if c.mode != PayloadStreamingSigned {
			var block []byte
			for _, t := range c.trailers {
				block = append(block, t.Name+":"+t.Value+"\n"...)
				c.hdr = append(c.hdr, t.Name+":"+t.Value+"\r\n"...)
			}
			if c.mode == PayloadStreamingSignedTrailer {
				sig := c.cs.next(trailerAlgorithm, block)
				c.hdr = append(c.hdr, trailerSignatureName+":"...)
				c.hdr = hex.AppendEncode(c.hdr, sig[:])
				c.hdr = append(c.hdr, "\r\n"...)
			}
		}
		c.hdr = append(c.hdr, "\r\n"...)
		c.pending = c.hdr
		c.state = csDone
	default:
		return false
	}
	return true
}

// ChunkSums returns the SHA-256 sums of payload's whole chunks of size
// bytes, for StreamingOptions.ChunkSums.
func ChunkSums(payload []byte, size int) [][32]byte {
	if size < 1 {
		return nil
	}
	sums := make([][32]byte, 0, len(payload)/size)
	for len(payload) >= size {
		sums = append(sums, sha256.Sum256(payload[:size]))
		payload = payload[size:]
	}
	return sums
}
