package sigv4

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/coffer-s3/coffer/internal/s3err"
)

// The aws-chunked encoding
// (https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-streaming.html,
// .../sigv4-streaming-trailers.html):
//
//	hex-size[;chunk-signature=sig]\r\n data \r\n     (repeated)
//	0[;chunk-signature=sig]\r\n
//	[name:value\r\n ... [x-amz-trailer-signature:sig\r\n]]
//	\r\n
//
// Each chunk signature chains from the previous one, starting at the
// request's seed signature.

const (
	maxChunkLine = 4096 // bytes in a chunk-header or trailer line, CRLF included
	// chunkLineBuf is the line buffer's first size: a signed chunk's
	// header with the CRLF before it is 90 bytes. It grows, up to
	// maxChunkLine, only for longer lines (trailers, padded extensions).
	chunkLineBuf         = 256
	chunkSigExt          = ";chunk-signature="
	trailerSignatureName = "x-amz-trailer-signature"
	chunkAlgorithm       = "AWS4-HMAC-SHA256-PAYLOAD"
	trailerAlgorithm     = "AWS4-HMAC-SHA256-TRAILER"
)

const (
	stHeader = iota // next comes a chunk header line
	stData          // inside chunk data
)

// chunkedReader decodes and verifies an aws-chunked body. It reads chunk data
// straight into the caller's buffer and allocates nothing per chunk.
type chunkedReader struct {
	r      io.Reader
	buf    []byte // buffered input is buf[rp:wp]; holds at most one line; chunkLineBuf to maxChunkLine bytes
	rp, wp int
	eof    bool  // r returned io.EOF
	rerr   error // r returned another error (after some bytes)
	err    error // sticky result; io.EOF once the body has been verified

	mode      PayloadMode
	declared  []string // trailer names from x-amz-trailer
	decoded   int64    // x-amz-decoded-content-length
	remaining int64    // decoded bytes not yet announced by chunk headers
	left      int64    // data bytes left in the current chunk
	minChunk  int64    // least size of a data chunk followed by another
	short     bool     // the previous data chunk was below minChunk
	prevSize  int64    // size of the previous data chunk
	chunks    int      // data chunk headers read so far
	state     int
	trailers  []Trailer

	// Signature chain, signed modes only.
	signed  bool
	key     *signingKey
	mac     hmacer
	amzDate string
	scope   string
	prev    [32]byte // signature of the previous chunk (or the seed)
	want    [32]byte // signature announced for the current chunk
	sum     [32]byte
	sts     []byte
	h       hash.Hash // SHA-256 of the current chunk or trailer block; nil unsigned
	newline [1]byte   // "\n", written after each trailer line without allocating
}

func (cr *chunkedReader) init(r io.Reader, res *Result) {
	*cr = chunkedReader{
		r:         r,
		buf:       make([]byte, chunkLineBuf),
		mode:      res.Payload,
		declared:  res.Trailers,
		decoded:   res.DecodedLength,
		remaining: res.DecodedLength,
		minChunk:  int64(res.minChunk),
		signed:    res.Payload != PayloadStreamingUnsignedTrailer,
		key:       res.key,
		amzDate:   res.amzDate,
		scope:     res.scope,
		prev:      res.seed,
		newline:   [1]byte{'\n'},
	}
	if cr.signed {
		// Unsigned chunks are not hashed: nothing would check the sum
		// (their integrity is the trailer's checksum, verified above us).
		cr.h = sha256.New()
		cr.mac = newHMACer()
		cr.sts = make([]byte, 0, len(trailerAlgorithm)+len(cr.amzDate)+len(cr.scope)+3*64+8)
	}
}

// Read implements io.Reader. It fills p as far as the body goes, across
// chunk boundaries, rather than returning what one read of the underlying
// reader brought: a consumer that writes each Read to a file (fsblob does)
// then makes one write per buffer instead of two or more per chunk (the
// part of the chunk that came in with its header line, then the rest as
// the socket delivers it). It blocks only for bytes the client must send
// anyway. An error after some bytes were delivered in this call is
// returned by the next call.
func (cr *chunkedReader) Read(p []byte) (int, error) {
	n := 0
	for cr.err == nil {
		if cr.state == stHeader {
			cr.err = cr.readHeader()
			continue
		}
		if n == len(p) {
			return n, nil
		}
		m, err := cr.readData(p[n:])
		if err != nil && err != io.EOF {
			cr.err = err
			break // withhold bytes that failed verification
		}
		n += m
		if err == io.EOF {
			return n, io.EOF
		}
	}
	if n > 0 {
		return n, nil
	}
	return 0, cr.err
}

// readData reads from the current chunk into p. When the chunk ends it checks
// the chunk's signature, and when the declared length is reached it reads and
// verifies the rest of the body, so that no error can surface after the last
// byte has been delivered.
func (cr *chunkedReader) readData(p []byte) (int, error) {
	if int64(len(p)) > cr.left {
		p = p[:cr.left]
	}
	var n int
	if cr.rp < cr.wp {
		n = copy(p, cr.buf[cr.rp:cr.wp])
		cr.rp += n
	} else {
		var err error
		if n, err = cr.rawRead(p); n == 0 {
			return 0, err
		}
	}
	if cr.signed {
		cr.h.Write(p[:n])
	}
	cr.left -= int64(n)
	if cr.left > 0 {
		return n, nil
	}
	if err := cr.endChunk(); err != nil {
		return 0, err
	}
	if cr.remaining > 0 {
		return n, nil
	}
	if err := cr.readHeader(); err != io.EOF {
		if err == nil { // unreachable: parseHeader refuses a chunk past the declared length
			err = cr.errLength(cr.decoded + cr.left)
		}
		return 0, err
	}
	cr.err = io.EOF
	return n, io.EOF
}

// rawRead reads from the underlying body, turning io.EOF into IncompleteBody
// (the encoding says when the body ends) and remembering any error that
// came with bytes.
func (cr *chunkedReader) rawRead(p []byte) (int, error) {
	for range 100 {
		if cr.eof {
			return 0, errTruncated()
		}
		if cr.rerr != nil {
			return 0, cr.rerr
		}
		n, err := cr.r.Read(p)
		if err == io.EOF {
			cr.eof = true
		} else if err != nil {
			cr.rerr = err
		}
		if n > 0 {
			return n, nil
		}
	}
	return 0, io.ErrNoProgress
}

// fill reads more input into buf, keeping the unread part, and grows buf
// (up to maxChunkLine, which readLine enforces) when a line fills it.
func (cr *chunkedReader) fill() error {
	if cr.rp > 0 {
		cr.wp = copy(cr.buf, cr.buf[cr.rp:cr.wp])
		cr.rp = 0
	}
	if cr.wp == len(cr.buf) && len(cr.buf) < maxChunkLine {
		b := make([]byte, min(2*len(cr.buf), maxChunkLine))
		cr.wp = copy(b, cr.buf[:cr.wp])
		cr.buf = b
	}
	n, err := cr.rawRead(cr.buf[cr.wp:])
	cr.wp += n
	return err
}

// readLine returns the next CRLF-terminated line without its CRLF. The line
// aliases buf and is valid until the next read. A bare LF is an error, except
// inside trailer lines when allowLF is set (minio-go ends each trailer with
// LF before the CRLF).
func (cr *chunkedReader) readLine(allowLF bool) ([]byte, error) {
	from := 0
	for {
		i := bytes.IndexByte(cr.buf[cr.rp+from:cr.wp], '\n')
		if i >= 0 {
			end := cr.rp + from + i
			if end > cr.rp && cr.buf[end-1] == '\r' {
				line := cr.buf[cr.rp : end-1]
				cr.rp = end + 1
				return line, nil
			}
			if !allowLF {
				return nil, errMalformed("a line ends with a bare LF")
			}
			from += i + 1
			continue
		}
		from = cr.wp - cr.rp
		if from >= maxChunkLine {
			return nil, errMalformed("a chunk header or trailer line exceeds 4096 bytes")
		}
		if err := cr.fill(); err != nil {
			return nil, err
		}
	}
}

// readHeader reads a chunk header. After the final (empty) chunk it reads
// the trailers and the end of the body, and returns io.EOF if all is well.
func (cr *chunkedReader) readHeader() error {
	line, err := cr.readLine(false)
	if err != nil {
		return err
	}
	size, err := cr.parseHeader(line)
	if err != nil {
		return err
	}
	if cr.signed {
		cr.h.Reset()
	}
	if size == 0 {
		if cr.remaining > 0 {
			return cr.errLength(cr.decoded - cr.remaining)
		}
		if err := cr.verifyChunk(); err != nil {
			return err
		}
		return cr.finish()
	}
	cr.chunks++
	if cr.short {
		// S3 notices a short chunk when the next one begins, and names that
		// one: Chunk is its 1-based number, BadChunkSize the short size.
		return s3err.New(s3err.InvalidChunkSizeError, "").
			With("Chunk", strconv.Itoa(cr.chunks)).
			With("BadChunkSize", strconv.FormatInt(cr.prevSize, 10))
	}
	cr.short = size < cr.minChunk
	cr.prevSize = size
	cr.left = size
	cr.remaining -= size
	cr.state = stData
	return nil
}

// parseHeader parses hex-size[;chunk-signature=sig] and records the
// announced signature.
func (cr *chunkedReader) parseHeader(line []byte) (int64, error) {
	i := bytes.IndexByte(line, ';')
	if i < 0 {
		i = len(line)
	}
	digits, ext := line[:i], line[i:]
	if len(digits) == 0 || len(digits) > 16 {
		return 0, errMalformed("a chunk size is not a hexadecimal number")
	}
	var size uint64
	for _, c := range digits {
		d, ok := unhex(c)
		if !ok {
			return 0, errMalformed("a chunk size is not a hexadecimal number")
		}
		size = size<<4 | uint64(d)
	}
	if size > uint64(cr.remaining) {
		return 0, cr.errLength(cr.decoded - cr.remaining + int64(min(size, math.MaxInt64/2)))
	}
	if cr.signed {
		sig, ok := bytes.CutPrefix(ext, []byte(chunkSigExt))
		if !ok || !parseSignature(&cr.want, sig) {
			return 0, errMalformed("a chunk header lacks a valid chunk-signature")
		}
	}
	return int64(size), nil
}

// endChunk consumes the CRLF after chunk data and verifies the chunk.
func (cr *chunkedReader) endChunk() error {
	for cr.wp-cr.rp < 2 {
		if err := cr.fill(); err != nil {
			return err
		}
	}
	if cr.buf[cr.rp] != '\r' || cr.buf[cr.rp+1] != '\n' {
		return errMalformed("chunk data is not followed by CRLF")
	}
	cr.rp += 2
	cr.state = stHeader
	return cr.verifyChunk()
}

// verifyChunk checks the announced signature of the chunk hashed so far.
func (cr *chunkedReader) verifyChunk() error {
	if !cr.signed {
		return nil
	}
	cr.h.Sum(cr.sum[:0])
	cr.sts = appendChunkStringToSign(cr.sts[:0], chunkAlgorithm, cr.amzDate, cr.scope, &cr.prev, &cr.sum)
	got := cr.mac.sum(cr.key, cr.sts)
	if !hmac.Equal(got[:], cr.want[:]) {
		return s3err.New(s3err.SignatureDoesNotMatch, "")
	}
	cr.prev = cr.want
	return nil
}

// appendChunkStringToSign appends the string to sign of a chunk (with
// algorithm AWS4-HMAC-SHA256-PAYLOAD) or of the trailers
// (AWS4-HMAC-SHA256-TRAILER, which has no empty-hash line).
func appendChunkStringToSign(dst []byte, alg, amzDate, scope string, prev, sum *[32]byte) []byte {
	dst = append(dst, alg...)
	dst = append(dst, '\n')
	dst = append(dst, amzDate...)
	dst = append(dst, '\n')
	dst = append(dst, scope...)
	dst = append(dst, '\n')
	dst = hex.AppendEncode(dst, prev[:])
	dst = append(dst, '\n')
	if alg == chunkAlgorithm {
		dst = append(dst, emptySHA256+"\n"...)
	}
	return hex.AppendEncode(dst, sum[:])
}

// finish reads what follows the final chunk: the trailers, if the mode has
// them, and the closing CRLF. Nothing may follow.
func (cr *chunkedReader) finish() error {
	if cr.mode == PayloadStreamingSigned {
		line, err := cr.readLine(false)
		if err != nil {
			return err
		}
		if len(line) != 0 {
			return errMalformed("data follows the final chunk")
		}
	} else if err := cr.readTrailers(); err != nil {
		return err
	}
	if cr.rp < cr.wp {
		return errMalformed("data follows the end of the body")
	}
	if n, err := cr.rawRead(cr.buf); n > 0 {
		return errMalformed("data follows the end of the body")
	} else if !cr.eof {
		return err
	}
	return io.EOF
}

// readTrailers reads trailer lines up to the empty line, accepting only the
// declared names, each once, and checks the trailer signature in the
// signed-trailer mode. Values are kept only once verified.
func (cr *chunkedReader) readTrailers() error {
	if cr.signed {
		cr.h.Reset()
	}
	var trailers []Trailer
	var sigSeen bool
	for lines := 0; ; lines++ {
		if lines > len(cr.declared)+1 {
			return errMalformed("too many trailer lines")
		}
		rec, err := cr.readLine(true)
		if err != nil {
			return err
		}
		if len(rec) == 0 {
			break
		}
		for len(rec) > 0 {
			var line []byte
			line, rec, _ = bytes.Cut(rec, []byte{'\n'})
			if len(line) == 0 {
				continue
			}
			if sigSeen {
				return errMalformed("a trailer follows " + trailerSignatureName)
			}
			if trailers, sigSeen, err = cr.trailerLine(line, trailers); err != nil {
				return err
			}
		}
	}
	if cr.mode == PayloadStreamingSignedTrailer {
		if !sigSeen {
			return errMalformed("the trailers lack " + trailerSignatureName)
		}
		cr.h.Sum(cr.sum[:0])
		cr.sts = appendChunkStringToSign(cr.sts[:0], trailerAlgorithm, cr.amzDate, cr.scope, &cr.prev, &cr.sum)
		got := cr.mac.sum(cr.key, cr.sts)
		if !hmac.Equal(got[:], cr.want[:]) {
			return s3err.New(s3err.SignatureDoesNotMatch, "")
		}
	}
	if len(trailers) != len(cr.declared) {
		return errMalformed("a trailer declared in x-amz-trailer is missing")
	}
	cr.trailers = trailers
	return nil
}

// trailerLine handles one name:value trailer line: either the trailer
// signature (reported as sig) or a declared trailer, added to trailers and to
// the hash the trailer signature covers (each line followed by LF).
func (cr *chunkedReader) trailerLine(line []byte, trailers []Trailer) (_ []Trailer, sig bool, err error) {
	name, value, ok := bytes.Cut(line, []byte{':'})
	if !ok {
		return nil, false, errMalformed("a trailer line has no colon")
	}
	if cr.mode == PayloadStreamingSignedTrailer && strings.EqualFold(string(name), trailerSignatureName) {
		if !parseSignature(&cr.want, bytes.TrimSpace(value)) {
			return nil, false, errMalformed("the trailer signature is not 64 hexadecimal digits")
		}
		return trailers, true, nil
	}
	i := 0
	for i < len(cr.declared) && !strings.EqualFold(string(name), cr.declared[i]) {
		i++
	}
	if i == len(cr.declared) {
		return nil, false, errMalformed("trailer " + quoteShort(name) + " was not declared in x-amz-trailer")
	}
	for _, t := range trailers {
		if t.Name == cr.declared[i] {
			return nil, false, errMalformed("trailer " + t.Name + " is repeated")
		}
	}
	if cr.signed {
		cr.h.Write(line)
		cr.h.Write(cr.newline[:])
	}
	return append(trailers, Trailer{Name: cr.declared[i], Value: string(bytes.TrimSpace(value))}), false, nil
}

// quoteShort quotes client input for an error message, at most 64 bytes of it.
func quoteShort(b []byte) string {
	if len(b) > 64 {
		return strconv.Quote(string(b[:64])) + "..."
	}
	return strconv.Quote(string(b))
}

// msgTerminated is S3's IncompleteBody message for an aws-chunked body that
// ends early or breaks the encoding in any way: S3 gives every framing error
// this one answer.
const msgTerminated = "The request body terminated unexpectedly"

func errTruncated() *s3err.Error {
	return s3err.Newf(s3err.IncompleteBody, "", msgTerminated)
}

// errMalformed is S3's answer to a body that breaks the aws-chunked framing.
// detail is for the server's log only.
func errMalformed(detail string) *s3err.Error {
	e := s3err.Newf(s3err.IncompleteBody, "", msgTerminated)
	e.Err = errors.New("malformed aws-chunked body: " + detail)
	return e
}

// errLength is S3's answer to chunks that add up to other than
// x-amz-decoded-content-length: IncompleteBody with its standard (Content-
// Length) message and the two counts. provided counts the bytes the chunk
// headers announced up to the point the mismatch showed.
func (cr *chunkedReader) errLength(provided int64) *s3err.Error {
	return s3err.New(s3err.IncompleteBody, "").
		With("NumberBytesExpected", strconv.FormatInt(cr.decoded, 10)).
		With("NumberBytesProvided", strconv.FormatInt(provided, 10))
}
