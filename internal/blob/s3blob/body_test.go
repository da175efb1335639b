package s3blob

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/coffer-s3/coffer/internal/blob"
	"github.com/coffer-s3/coffer/internal/checksum"
)

// testData returns n bytes that differ from position to position.
func testData(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i*7 + i>>8)
	}
	return p
}

func TestBodyFraming(t *testing.T) {
	t.Parallel()
	for _, m := range []integrity{{alg: checksum.CRC32C}, {alg: checksum.CRC64NVME}, {alg: checksum.SHA256}, {md5: true}, {}} {
		for _, size := range []int{1, 100, 70000} {
			t.Run(fmt.Sprintf("%s/size=%d", m, size), func(t *testing.T) {
				t.Parallel()
				data := testData(size)
				b := newBody(t.Context(), iotest.HalfReader(bytes.NewReader(data)), int64(size), m)
				ab, err := b.attempt()
				if err != nil {
					t.Fatal(err)
				}
				if ab.Len() != int(b.encLen) {
					t.Errorf("Len() = %d before reading, want the framed length %d", ab.Len(), b.encLen)
				}
				got, err := io.ReadAll(ab)
				if err != nil {
					t.Fatalf("read body: %v", err)
				}
				if int64(len(got)) != b.encLen {
					t.Errorf("body has %d bytes, want the framed length %d announced as Content-Length", len(got), b.encLen)
				}
				want := data
				if m.alg != "" {
					h := m.alg.New()
					h.Write(data)
					sum := checksum.Encode(h.Sum(nil))
					want = fmt.Appendf(nil, "%x\r\n%s\r\n0\r\n%s:%s\r\n\r\n", size, data, m.alg.Header(), sum)
					if d := b.digest(m); d != sum {
						t.Errorf("digest = %s, want %s", d, sum)
					}
				}
				if m.md5 {
					sum := md5.Sum(data)
					if d := b.digest(m); d != hex.EncodeToString(sum[:]) {
						t.Errorf("digest = %s, want %x", d, sum)
					}
				}
				if !bytes.Equal(got, want) {
					t.Errorf("body differs from the expected framing:\n got %q…\nwant %q…", head(got), head(want))
				}
				if !b.delivered() {
					t.Error("delivered() = false after the whole body was read")
				}
			})
		}
	}
}

func head(p []byte) []byte { return p[:min(len(p), 40)] }

// chunkedReader yields src in reads of at most n bytes, so that the last
// bytes of a body come in a read of their own.
type chunkedReader struct {
	src io.Reader
	n   int
}

func (c chunkedReader) Read(p []byte) (int, error) { return c.src.Read(p[:min(len(p), c.n)]) }

func TestBodyHoldsBackLastBytes(t *testing.T) {
	t.Parallel()
	const size = 1000
	data := testData(size + 10)
	errBoom := errors.New("boom")
	for _, tc := range []struct {
		name string
		src  func() io.Reader
		want error
	}{
		{"long by one", func() io.Reader { return bytes.NewReader(data[:size+1]) }, blob.ErrSize},
		{"long by one, a byte a read", func() io.Reader { return iotest.OneByteReader(bytes.NewReader(data[:size+1])) }, blob.ErrSize},
		{"long, extra in a later reader", func() io.Reader {
			return io.MultiReader(bytes.NewReader(data[:size]), strings.NewReader("x"))
		}, blob.ErrSize},
		{"short by one", func() io.Reader { return bytes.NewReader(data[:size-1]) }, blob.ErrSize},
		{"error after all bytes", func() io.Reader {
			return io.MultiReader(bytes.NewReader(data[:size]), iotest.ErrReader(errBoom))
		}, errBoom},
		{"error midway", func() io.Reader {
			return io.MultiReader(bytes.NewReader(data[:size/2]), iotest.ErrReader(errBoom))
		}, errBoom},
		{"no progress after all bytes", func() io.Reader {
			return io.MultiReader(bytes.NewReader(data[:size]), zeroReader{})
		}, io.ErrNoProgress},
	} {
		for _, m := range []integrity{{alg: checksum.CRC32C}, {}} {
			t.Run(tc.name+"/"+m.String(), func(t *testing.T) {
				t.Parallel()
				src := chunkedReader{tc.src(), 100}
				b := newBody(t.Context(), src, size, m)
				ab, err := b.attempt()
				if err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(ab)
				if !errors.Is(err, tc.want) {
					t.Fatalf("reading the body = %v, want %v", err, tc.want)
				}
				if !errors.Is(b.failure(), tc.want) {
					t.Errorf("failure() = %v, want %v", b.failure(), tc.want)
				}
				// The upstream must be left short of the data: it cannot
				// store a body it did not receive whole.
				if data := int64(len(got)) - int64(len(b.head)); data >= size {
					t.Errorf("%d of %d data bytes handed out before the error; want fewer", data, size)
				}
				if b.delivered() {
					t.Error("delivered() = true for a failed body")
				}
				if _, err := b.attempt(); err == nil {
					t.Error("attempt() after a failed read = nil error, want one")
				}
			})
		}
	}
}

// zeroReader returns (0, nil) forever.
type zeroReader struct{}

func (zeroReader) Read([]byte) (int, error) { return 0, nil }

func TestBodyAttempts(t *testing.T) {
	t.Parallel()
	data := testData(1000)
	b := newBody(t.Context(), bytes.NewReader(data), int64(len(data)), integrity{alg: checksum.CRC32C})
	first, err := b.attempt()
	if err != nil {
		t.Fatal(err)
	}
	// The first attempt read only framing: src is untouched.
	p := make([]byte, 2)
	if _, err := first.Read(p); err != nil {
		t.Fatal(err)
	}
	second, err := b.attempt()
	if err != nil {
		t.Fatalf("attempt() with src untouched = %v, want a new attempt", err)
	}
	if _, err := first.Read(p); !errors.Is(err, errStaleRead) {
		t.Errorf("read by a superseded attempt = %v, want errStaleRead", err)
	}
	got, err := io.ReadAll(io.LimitReader(second, 500))
	if err != nil || len(got) != 500 {
		t.Fatalf("read of the new attempt = %d bytes, %v", len(got), err)
	}
	if !b.consumed() {
		t.Error("consumed() = false after src was read")
	}
	if _, err := b.attempt(); err == nil {
		t.Error("attempt() after src was read = nil error, want one: the bytes cannot be sent again")
	}
	b.close()
	if _, err := second.Read(p); !errors.Is(err, errBodyClosed) {
		t.Errorf("read after close = %v, want errBodyClosed", err)
	}
}

func TestBodyContext(t *testing.T) {
	t.Parallel()
	data := testData(1000)
	ctx, cancel := context.WithCancel(t.Context())
	// The source cancels the context while being read, as a client that
	// goes away does: the bytes of that read must not be handed out.
	src := io.MultiReader(bytes.NewReader(data[:500]), readerFunc(func([]byte) (int, error) {
		cancel()
		return 0, io.EOF
	}), bytes.NewReader(data[500:]))
	b := newBody(ctx, src, int64(len(data)), integrity{})
	ab, err := b.attempt()
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(ab)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("reading the body = %v, want context.Canceled", err)
	}
	if len(got) >= len(data) {
		t.Errorf("%d of %d bytes handed out after cancellation; want fewer", len(got), len(data))
	}

	// Canceled once everything was handed out: the upstream may have
	// stored the blob, so the body must not claim to have failed (which
	// would tell Put that nothing was stored).
	ctx, cancel = context.WithCancel(t.Context())
	b = newBody(ctx, bytes.NewReader(data), int64(len(data)), integrity{})
	if ab, err = b.attempt(); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(ab, make([]byte, len(data))); err != nil {
		t.Fatal(err)
	}
	cancel()
	if n, err := ab.Read(make([]byte, 10)); n != 0 || err != io.EOF {
		t.Errorf("read after the whole body and a cancel = %d, %v; want 0, io.EOF", n, err)
	}
	if err := b.failure(); err != nil || !b.delivered() {
		t.Errorf("failure() = %v, delivered() = %v; want nil, true", err, b.delivered())
	}
}

// readerFunc adapts a function to io.Reader.
type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

func TestBodyEmpty(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		src  io.Reader
		want error
	}{
		{"empty", strings.NewReader(""), nil},
		{"one byte", strings.NewReader("x"), blob.ErrSize},
		{"error", iotest.ErrReader(errors.New("boom")), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBody(t.Context(), tc.src, 0, integrity{alg: checksum.CRC32C})
			err := b.checkEmpty()
			switch {
			case tc.name == "error" && (err == nil || err.Error() != "read body: boom"):
				t.Errorf("checkEmpty() = %v, want the reader's error", err)
			case tc.name != "error" && !errors.Is(err, tc.want):
				t.Errorf("checkEmpty() = %v, want %v", err, tc.want)
			}
			if b.encLen != 0 {
				t.Errorf("framed length %d for an empty body, want 0 (sent without a body)", b.encLen)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	ok := Config{Endpoint: "https://s3.example.com", Bucket: "b", AccessKey: "a", SecretKey: "s"}
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want string // in the error; "" for none
	}{
		{"valid", func(*Config) {}, ""},
		{"valid with everything", func(c *Config) {
			c.Endpoint, c.Region, c.Prefix, c.Checksum, c.MaxAttempts = "http://127.0.0.1:9000/", "eu-west-1", "coffer/blocks/", "crc64nvme", 5
		}, ""},
		{"checksum md5", func(c *Config) { c.Checksum = "md5" }, ""},
		{"checksum none", func(c *Config) { c.Checksum = "NONE" }, ""},
		{"no endpoint", func(c *Config) { c.Endpoint = "" }, "endpoint not set"},
		{"endpoint without scheme", func(c *Config) { c.Endpoint = "s3.example.com" }, "scheme must be http or https"},
		{"endpoint ftp", func(c *Config) { c.Endpoint = "ftp://s3.example.com" }, "scheme must be http or https"},
		{"endpoint without host", func(c *Config) { c.Endpoint = "http:///x" }, "has no host"},
		{"endpoint with credentials", func(c *Config) { c.Endpoint = "https://user:hunter2@s3.example.com" }, `"https://***@s3.example.com" must not contain credentials`},
		{"endpoint with a token as user", func(c *Config) { c.Endpoint = "https://hunter2@s3.example.com" }, `"https://***@s3.example.com" must not contain credentials`},
		{"endpoint ftp with credentials", func(c *Config) { c.Endpoint = "ftp://hunter2@s3.example.com" }, `"ftp://***@s3.example.com": scheme must be http or https`},
		{"endpoint unparsable with credentials", func(c *Config) { c.Endpoint = "https://user:hunter2@s3.example.com/%zz" }, "does not parse as a URL"},
		{"endpoint with query", func(c *Config) { c.Endpoint = "https://s3.example.com/?a=b" }, "query or fragment"},
		{"no bucket", func(c *Config) { c.Bucket = "" }, "bucket not set"},
		{"bucket with slash", func(c *Config) { c.Bucket = "a/b" }, "contains a slash"},
		{"prefix without slash", func(c *Config) { c.Prefix = "coffer" }, "must end in a slash"},
		{"prefix with leading slash", func(c *Config) { c.Prefix = "/coffer/" }, "must not start with a slash"},
		{"prefix too long", func(c *Config) { c.Prefix = strings.Repeat("p", 824) + "/" }, "more than 824"},
		{"no access key", func(c *Config) { c.AccessKey = "" }, "access key and secret key are required"},
		{"no secret key", func(c *Config) { c.SecretKey = "" }, "access key and secret key are required"},
		{"unknown checksum", func(c *Config) { c.Checksum = "crc16" }, `checksum "crc16"`},
		{"negative attempts", func(c *Config) { c.MaxAttempts = -1 }, "negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.mod(&c)
			err := c.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Validate() = %v, want an error containing %q", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "hunter2") {
				t.Errorf("Validate() = %v reveals the password in the endpoint", err)
			}
		})
	}
}

func TestRangeHeader(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		off, n int64
		want   string
	}{
		{0, 1, "bytes=0-0"},
		{100, 200, "bytes=100-299"},
		{100, -1, "bytes=100-"},
		{0, 5 << 30, "bytes=0-5368709119"},
		{0, 5<<30 + 1, "bytes=0-"},
		{1, math.MaxInt64, "bytes=1-"},
		{math.MaxInt64 - 1, 2, "bytes=9223372036854775806-9223372036854775807"},
		{math.MaxInt64, 2, "bytes=9223372036854775807-"},
	} {
		if got := rangeHeader(tc.off, tc.n); got != tc.want {
			t.Errorf("rangeHeader(%d, %d) = %q, want %q", tc.off, tc.n, got, tc.want)
		}
	}
}

func TestContentRangeStart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"bytes 0-99/1000", 0, false},
		{"bytes 100-199/*", 100, false},
		{"bytes */1000", 0, true},
		{"items 0-1/2", 0, true},
		{"bytes x-1/2", 0, true},
	} {
		got, err := contentRangeStart(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("contentRangeStart(%q) = %d, %v; want %d, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestIsMD5Hex(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"d41d8cd98f00b204e9800998ecf8427e":   true,
		"D41D8CD98F00B204E9800998ECF8427E":   false,
		"d41d8cd98f00b204e9800998ecf8427e-2": false,
		"":                                   false,
		strconv.Itoa(12345):                  false,
	} {
		if got := isMD5Hex(s); got != want {
			t.Errorf("isMD5Hex(%q) = %v, want %v", s, got, want)
		}
	}
}
