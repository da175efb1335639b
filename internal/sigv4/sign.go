package sigv4

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Credentials are an access key pair.
type Credentials struct {
	AccessKeyID string
	SecretKey   string
}

// unsignedHeaders are never signed by SignRequest, like aws-sdk-go-v2:
// proxies and transports may change them.
var unsignedHeaders = []string{"authorization", "expect", "transfer-encoding", "user-agent", "x-amzn-trace-id"}

// SignRequest signs r for S3 in region at time t, in place: it sets
// X-Amz-Date, X-Amz-Content-Sha256 (to payloadHash: a hex SHA-256,
// UNSIGNED-PAYLOAD or a STREAMING-* keyword) and Authorization. It signs
// host, content-length when r.ContentLength > 0, and every header in r.Header
// except Authorization, Expect, Transfer-Encoding, User-Agent and
// X-Amzn-Trace-Id. Headers added after signing are not covered.
func SignRequest(r *http.Request, cred Credentials, region string, t time.Time, payloadHash string) {
	sign(r, cred, region, t, payloadHash)
}

// sign implements SignRequest and returns what chunk signing chains from.
func sign(r *http.Request, cred Credentials, region string, t time.Time, payloadHash string) *chunkSigner {
	amzDate := t.UTC().Format(iso8601Basic)
	if r.Header == nil {
		r.Header = make(http.Header)
	}
	r.Header.Set("X-Amz-Date", amzDate)
	r.Header.Set("X-Amz-Content-Sha256", payloadHash)
	r.Header.Del("Authorization")

	names := []string{"host"}
	if r.ContentLength > 0 {
		names = append(names, "content-length")
	}
	for k := range r.Header {
		k = strings.ToLower(k)
		if !slices.Contains(unsignedHeaders, k) && !slices.Contains(names, k) {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	signed := strings.Join(names, ";")

	scope := amzDate[:8] + "/" + region + "/s3/" + scopeTerminator
	var q canonQuery
	q.parse(r.URL.RawQuery)
	uri := appendCanonicalURI(nil, rawPath(r))
	creq := appendCanonicalRequest(nil, r, uri, q.appendCanonical(nil, false), signed, payloadHash)
	cs := newChunkSigner(cred.SecretKey, amzDate, scope, region)
	cs.prev = cs.mac.sum(cs.key, appendStringToSign(nil, amzDate, scope, creq))
	r.Header.Set("Authorization", fmt.Sprintf("%s Credential=%s/%s, SignedHeaders=%s, Signature=%x",
		algorithm, cred.AccessKeyID, scope, signed, cs.prev))
	return cs
}

// Presign returns rawURL presigned for method in region at time t, valid for
// expires (a whole number of seconds, at most 7 days). Only the host header
// is signed and the payload is UNSIGNED-PAYLOAD. The returned URL has the
// canonical path and query that were signed.
func Presign(method, rawURL string, cred Credentials, region string, t time.Time, expires time.Duration) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", fmt.Errorf("presign: %w", err)
	}
	if u.Scheme == "" || u.Host == "" {
		return "", fmt.Errorf("presign %q: url must be absolute", rawURL)
	}
	if expires < time.Second || expires > maxExpires || expires%time.Second != 0 {
		return "", fmt.Errorf("presign: expiry %v is not a whole number of seconds between 1s and %v", expires, maxExpires)
	}
	var q canonQuery
	q.parse(u.RawQuery)
	for _, p := range q.params {
		if slices.Contains(presignParams[:], string(q.key(p))) {
			return "", fmt.Errorf("presign %q: url already has %s", rawURL, q.key(p))
		}
	}
	amzDate := t.UTC().Format(iso8601Basic)
	scope := amzDate[:8] + "/" + region + "/s3/" + scopeTerminator
	q.parse("X-Amz-Algorithm=" + algorithm +
		"&X-Amz-Credential=" + url.QueryEscape(cred.AccessKeyID+"/"+scope) +
		"&X-Amz-Date=" + amzDate +
		"&X-Amz-Expires=" + strconv.FormatInt(int64(expires/time.Second), 10) +
		"&X-Amz-SignedHeaders=host")
	query := q.appendCanonical(nil, false)
	uri := appendCanonicalURI(nil, u.EscapedPath())
	r := &http.Request{Method: method, URL: u, Host: u.Host, Header: http.Header{}}
	creq := appendCanonicalRequest(nil, r, uri, query, "host", unsignedPayload)
	key := newSigningKey(deriveKey(cred.SecretKey, amzDate[:8], region, "s3"))
	m := newHMACer()
	sig := m.sum(key, appendStringToSign(nil, amzDate, scope, creq))
	return fmt.Sprintf("%s://%s%s?%s&X-Amz-Signature=%x", u.Scheme, u.Host, uri, query, sig), nil
}

// ChunkedOptions configures SignChunked.
type ChunkedOptions struct {
	// Mode is PayloadStreamingSigned (the default),
	// PayloadStreamingSignedTrailer or PayloadStreamingUnsignedTrailer.
	Mode PayloadMode
	// ChunkSize is the number of payload bytes per chunk. Default 64 KiB.
	ChunkSize int
	// Trailers are sent after the final chunk and declared in x-amz-trailer.
	// They need a trailer mode. Names are lowercased.
	Trailers []Trailer
}

// SignChunked turns r into a signed aws-chunked upload of payload, as S3
// clients send streaming uploads: it sets Content-Encoding,
// X-Amz-Decoded-Content-Length, X-Amz-Trailer and ContentLength, signs the
// headers (the seed signature), and sets r.Body to the encoded chunks, each
// signed in chain unless the mode is unsigned.
func SignChunked(r *http.Request, cred Credentials, region string, t time.Time, payload []byte, opts ChunkedOptions) error {
	c, err := prepareChunked(r, len(payload), opts.Mode, opts.ChunkSize, opts.Trailers)
	if err != nil {
		return fmt.Errorf("sign chunked: %w", err)
	}
	var probe chunkSigner // computes the length; signatures are all zero
	r.ContentLength = int64(len(appendChunked(nil, payload, c.size, c.trailers, c.mode, &probe, c.signed)))
	cs := sign(r, cred, region, t, c.mode.String())
	body := appendChunked(make([]byte, 0, r.ContentLength), payload, c.size, c.trailers, c.mode, cs, c.signed)
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return nil
}

// chunked is an aws-chunked upload's encoding, as prepareChunked checked it.
type chunked struct {
	mode     PayloadMode
	size     int       // payload bytes per chunk
	trailers []Trailer // names lowercased
	signed   bool      // chunks carry signatures
}

// prepareChunked checks the options of an aws-chunked upload of n payload
// bytes (SignChunked, Signer.SignStreaming) and sets r's Content-Encoding,
// X-Amz-Decoded-Content-Length and X-Amz-Trailer.
func prepareChunked(r *http.Request, n int, mode PayloadMode, size int, trs []Trailer) (chunked, error) {
	if mode == PayloadUnsigned {
		mode = PayloadStreamingSigned
	}
	if !mode.Streaming() {
		return chunked{}, fmt.Errorf("mode %v is not a streaming mode", mode)
	}
	if size == 0 {
		size = 64 << 10
	}
	if size < 1 {
		return chunked{}, fmt.Errorf("chunk size %d is not positive", size)
	}
	trailers := make([]Trailer, len(trs))
	names := make([]string, len(trs))
	for i, tr := range trs {
		trailers[i] = Trailer{Name: strings.ToLower(tr.Name), Value: tr.Value}
		names[i] = trailers[i].Name
	}
	if len(trailers) > 0 && mode == PayloadStreamingSigned {
		return chunked{}, errors.New("trailers need a trailer mode")
	}
	if _, err := parseTrailerHeader(names); err != nil {
		return chunked{}, err
	}
	if r == nil || r.URL == nil {
		return chunked{}, errors.New("request has no URL")
	}
	if r.Header == nil {
		r.Header = make(http.Header)
	}
	ce := "aws-chunked"
	if v := r.Header.Get("Content-Encoding"); v != "" && v != ce {
		ce += "," + v
	}
	r.Header.Set("Content-Encoding", ce)
	r.Header.Set("X-Amz-Decoded-Content-Length", strconv.Itoa(n))
	if len(names) > 0 {
		r.Header.Set("X-Amz-Trailer", strings.Join(names, ","))
	}
	return chunked{mode: mode, size: size, trailers: trailers, signed: mode != PayloadStreamingUnsignedTrailer}, nil
}

// chunkSigner signs chunks in chain from a seed signature.
type chunkSigner struct {
	key            *signingKey // nil: produce zero signatures (length probe)
	mac            hmacer
	amzDate, scope string
	prev           [32]byte
	sts            []byte
}

func newChunkSigner(secret, amzDate, scope, region string) *chunkSigner {
	return &chunkSigner{
		key:     newSigningKey(deriveKey(secret, amzDate[:8], region, "s3")),
		mac:     newHMACer(),
		amzDate: amzDate,
		scope:   scope,
	}
}

// next returns the signature of data (alg chunkAlgorithm) or of a trailer
// block (trailerAlgorithm), chaining from the previous signature.
func (s *chunkSigner) next(alg string, data []byte) [32]byte {
	if s.key == nil {
		return [32]byte{}
	}
	sum := sha256.Sum256(data)
	s.sts = appendChunkStringToSign(s.sts[:0], alg, s.amzDate, s.scope, &s.prev, &sum)
	s.prev = s.mac.sum(s.key, s.sts)
	return s.prev
}

// appendChunked appends the aws-chunked encoding of payload.
func appendChunked(dst, payload []byte, size int, trailers []Trailer, mode PayloadMode, s *chunkSigner, signed bool) []byte {
	header := func(data []byte) {
		dst = strconv.AppendInt(dst, int64(len(data)), 16)
		if signed {
			sig := s.next(chunkAlgorithm, data)
			dst = append(dst, chunkSigExt...)
			dst = hex.AppendEncode(dst, sig[:])
		}
		dst = append(dst, "\r\n"...)
	}
	for len(payload) > 0 {
		n := min(size, len(payload))
		header(payload[:n])
		dst = append(dst, payload[:n]...)
		dst = append(dst, "\r\n"...)
		payload = payload[n:]
	}
	header(nil)
	if mode != PayloadStreamingSigned {
		var block []byte
		for _, t := range trailers {
			block = append(block, t.Name+":"+t.Value+"\n"...)
			dst = append(dst, t.Name+":"+t.Value+"\r\n"...)
		}
		if mode == PayloadStreamingSignedTrailer {
			sig := s.next(trailerAlgorithm, block)
			dst = append(dst, trailerSignatureName+":"...)
			dst = hex.AppendEncode(dst, sig[:])
			dst = append(dst, "\r\n"...)
		}
	}
	return append(dst, "\r\n"...)
}
