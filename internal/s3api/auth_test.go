package s3api

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/coffer-s3/coffer/internal/s3err"
	"github.com/coffer-s3/coffer/internal/sigv4"
)

// eofCheckReader stands for a verifying body: it returns err instead of
// io.EOF at its end.
type eofCheckReader struct {
	r   io.Reader
	err error
}

func (e *eofCheckReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err == io.EOF && e.err != nil {
		return 0, e.err
	}
	return n, err
}

func TestExactReader(t *testing.T) {
	mismatch := s3err.New(s3err.XAmzContentSHA256Mismatch, "")
	for _, tc := range []struct {
		name    string
		r       io.Reader
		n       int64
		want    string
		wantErr s3err.Code // "" means a clean EOF
	}{
		{name: "exact", r: strings.NewReader("hello"), n: 5, want: "hello"},
		{name: "exact one byte at a time", r: iotest.OneByteReader(strings.NewReader("hello")), n: 5, want: "hello"},
		{name: "data with EOF", r: iotest.DataErrReader(strings.NewReader("hello")), n: 5, want: "hello"},
		{name: "empty", r: strings.NewReader(""), n: 0, want: ""},
		{name: "unknown length", r: strings.NewReader("hello"), n: -1, want: "hello"},
		{name: "short", r: strings.NewReader("hell"), n: 5, want: "hell", wantErr: s3err.IncompleteBody},
		{name: "short in pieces", r: iotest.OneByteReader(strings.NewReader("hell")), n: 5, want: "hell", wantErr: s3err.IncompleteBody},
		{name: "pieces then data with EOF", r: io.MultiReader(strings.NewReader("he"), iotest.DataErrReader(strings.NewReader("llo"))), n: 5, want: "hello"},
		{name: "client gone midway", r: io.MultiReader(strings.NewReader("he"), iotest.ErrReader(io.ErrUnexpectedEOF)), n: 5, want: "he", wantErr: s3err.IncompleteBody},
		{name: "verification fails after pieces", r: &eofCheckReader{iotest.HalfReader(strings.NewReader("hello")), mismatch}, n: 5, wantErr: s3err.XAmzContentSHA256Mismatch},
		{name: "long", r: strings.NewReader("hello!"), n: 5, wantErr: s3err.IncompleteBody},
		{name: "verification fails at EOF", r: &eofCheckReader{strings.NewReader("hello"), mismatch}, n: 5, wantErr: s3err.XAmzContentSHA256Mismatch},
		{name: "verification fails on empty body", r: &eofCheckReader{strings.NewReader(""), mismatch}, n: 0, wantErr: s3err.XAmzContentSHA256Mismatch},
		{name: "client gone", r: iotest.ErrReader(io.ErrUnexpectedEOF), n: 5, wantErr: s3err.IncompleteBody},
		{name: "s3 error passes", r: iotest.ErrReader(s3err.New(s3err.SignatureDoesNotMatch, "")), n: 5, wantErr: s3err.SignatureDoesNotMatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := io.ReadAll(&exactReader{r: tc.r, n: tc.n})
			if code := s3err.CodeOf(err); code != tc.wantErr {
				t.Fatalf("read error = %v, want code %q", err, tc.wantErr)
			}
			if string(got) != tc.want {
				t.Errorf("read %q, want %q", got, tc.want)
			}
		})
	}
}

// TestExactReaderVouches checks the property the pipeline relies on: a
// consumer that reads exactly the declared length and stops never gets
// all of it from a body that fails verification.
func TestExactReaderVouches(t *testing.T) {
	bad := &eofCheckReader{strings.NewReader("hello"), s3err.New(s3err.BadDigest, "")}
	buf := make([]byte, 5)
	n, err := io.ReadFull(&exactReader{r: bad, n: 5}, buf)
	if err == nil || n == 5 {
		t.Fatalf("ReadFull = %d, %v; want an error before the last byte", n, err)
	}
	good := strings.NewReader("hello")
	if n, err := io.ReadFull(&exactReader{r: good, n: 5}, buf); err != nil || n != 5 {
		t.Fatalf("ReadFull of a good body = %d, %v", n, err)
	}
}

func TestBodyError(t *testing.T) {
	timeout := &timeoutError{}
	for _, tc := range []struct {
		err  error
		want s3err.Code
	}{
		{s3err.New(s3err.BadDigest, ""), s3err.BadDigest},
		{timeout, s3err.RequestTimeout},
		{errors.New("connection reset"), s3err.IncompleteBody},
	} {
		if got := s3err.CodeOf(bodyError(tc.err)); got != tc.want {
			t.Errorf("bodyError(%v) code %q, want %q", tc.err, got, tc.want)
		}
	}
}

type timeoutError struct{}

func (*timeoutError) Error() string   { return "i/o timeout" }
func (*timeoutError) Timeout() bool   { return true }
func (*timeoutError) Temporary() bool { return true }

func TestHasContentLength(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want bool
	}{
		{"PUT /b/k HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello", true},
		{"PUT /b/k HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n", true},
		{"PUT /b/k HTTP/1.1\r\nHost: h\r\n\r\n", false},
		{"PUT /b/k HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", false},
	} {
		r := readRequest(t, tc.raw)
		if got := hasContentLength(r); got != tc.want {
			t.Errorf("hasContentLength(%q) = %v, want %v", tc.raw, got, tc.want)
		}
	}
}

// TestSigV2OnlyWhereItSigns: SigV2 signs only the sub-resources of its
// era, so a SigV2-signed request for an operation selected by a newer
// one (?publicAccessBlock, ?attributes, …) is refused: the parameter could
// have been added to a request signed for DeleteBucket or GetObject. The
// operations SigV2 does sign keep working, and policies see its version.
func TestSigV2OnlyWhereItSigns(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	hs.put("bkt", "k", []byte("x"))
	v2 := func(r *http.Request) {
		r.Header.Del("Authorization")
		r.Header.Del("X-Amz-Content-Sha256")
		r.Header.Del("X-Amz-Date")
		sigv4.SignV2Request(r, rootCred(), testNow())
	}
	for _, c := range []call{
		{method: "DELETE", path: "/bkt?publicAccessBlock"},
		{method: "GET", path: "/bkt/k?attributes", header: header("X-Amz-Object-Attributes", "ETag")},
		{method: "GET", path: "/bkt?policyStatus"},
		{method: "PUT", path: "/bkt?ownershipControls"},
	} {
		c.prepare = v2
		hs.do(c).want(t, http.StatusBadRequest, s3err.InvalidRequest)
	}
	hs.do(call{method: "GET", path: "/bkt/k", prepare: v2}).mustStatus(t, http.StatusOK)
	hs.do(call{method: "GET", path: "/bkt?acl", prepare: v2}).mustStatus(t, http.StatusOK)
	hs.do(call{method: "GET", path: "/bkt?list-type=2", prepare: v2}).mustStatus(t, http.StatusOK)
}
