package sigv4

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coffer-s3/coffer/internal/s3err"
)

// The credentials and time of the AWS documentation examples.
var (
	exampleCred = Credentials{AccessKeyID: "AKIAIOSFODNN7EXAMPLE", SecretKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}
	exampleTime = time.Date(2013, 5, 24, 0, 0, 0, 0, time.UTC)
)

// keyring is an in-memory Keyring whose secrets can be rotated.
type keyring struct {
	mu   sync.Mutex // guards keys
	keys map[string]string
	err  error // returned for every lookup if set
}

func newKeyring(creds ...Credentials) *keyring {
	k := &keyring{keys: map[string]string{}}
	for _, c := range creds {
		k.keys[c.AccessKeyID] = c.SecretKey
	}
	return k
}

func (k *keyring) SecretKey(_ context.Context, id string) (string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.err != nil {
		return "", k.err
	}
	s, ok := k.keys[id]
	if !ok {
		return "", ErrUnknownKey
	}
	return s, nil
}

func (k *keyring) set(id, secret string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.keys[id] = secret
}

// newTestVerifier returns a us-east-1 Verifier whose clock reads now.
func newTestVerifier(now time.Time, creds ...Credentials) *Verifier {
	return NewVerifier(Config{Region: "us-east-1", Clock: func() time.Time { return now }}, newKeyring(creds...))
}

// readRequest parses a raw HTTP request from testdata, as a server would.
func readRequest(t testing.TB, name string) *http.Request {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n"))
	return parseWire(t, b)
}

func parseWire(t testing.TB, b []byte) *http.Request {
	t.Helper()
	r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(b)))
	if err != nil {
		t.Fatalf("read request: %v", err)
	}
	return r
}

// serverSide sends a client request over an in-memory "wire" and returns
// the request a net/http server would see.
func serverSide(t testing.TB, r *http.Request) *http.Request {
	t.Helper()
	var buf bytes.Buffer
	if err := r.Write(&buf); err != nil {
		t.Fatalf("write request: %v", err)
	}
	return parseWire(t, buf.Bytes())
}

// newRequest returns a client request with an in-memory body.
func newRequest(t testing.TB, method, url string, body []byte) *http.Request {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	r, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// readBody verifies r and reads its body through Result.Body.
func readBody(v *Verifier, r *http.Request) (*Result, []byte, *Body, error) {
	res, err := v.Verify(r)
	if err != nil {
		return nil, nil, nil, err
	}
	b, err := res.Body(r.Body)
	if err != nil {
		return res, nil, nil, err
	}
	data, err := io.ReadAll(b)
	return res, data, b, err
}

// wantCode fails unless err carries code ("" means no error).
func wantCode(t testing.TB, err error, code s3err.Code) {
	t.Helper()
	if got := s3err.CodeOf(err); got != code {
		t.Fatalf("error = %v, want code %q", err, code)
	}
}

// wantError checks that err is an *s3err.Error with code, the HTTP status
// of code, the message S3 sends (msg, or the table's when msg is "") and
// the extra elements named in extras, as name, value pairs.
func wantError(t testing.TB, err error, code s3err.Code, msg string, extras ...string) {
	t.Helper()
	var e *s3err.Error
	if !errors.As(err, &e) {
		t.Fatalf("error = %v, want an *s3err.Error with code %q", err, code)
	}
	if msg == "" {
		msg = s3err.MessageOf(code)
	}
	if e.Code != code || e.Status() != s3err.StatusOf(code) || e.Msg() != msg {
		t.Fatalf("error = %s %d %q\nwant     %s %d %q", e.Code, e.Status(), e.Msg(), code, s3err.StatusOf(code), msg)
	}
	for i := 0; i+1 < len(extras); i += 2 {
		if got := extra(e, extras[i]); got != extras[i+1] {
			t.Errorf("%s = %q, want %q (%+v)", extras[i], got, extras[i+1], e.Extra)
		}
	}
}

// extra returns the value of an extra element of an *s3err.Error.
func extra(err error, name string) string {
	e, ok := err.(*s3err.Error)
	if !ok {
		return ""
	}
	for _, f := range e.Extra {
		if f.Name == name {
			return f.Value
		}
	}
	return ""
}

// lines returns the non-comment lines of a testdata file.
func lines(t testing.TB, name string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}
