package s3blob_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/google/go-cmp/cmp"

	"github.com/coffer-s3/coffer/internal/blob"
	"github.com/coffer-s3/coffer/internal/blob/blobtest"
	"github.com/coffer-s3/coffer/internal/blob/s3blob"
)

// checksumModes are the Config.Checksum values the conformance suite runs
// with: "" is the default, CRC32C.
var checksumModes = []string{"", "CRC64NVME", "MD5", "none"}

// modeName names a checksum mode in a subtest.
func modeName(mode string) string {
	if mode == "" {
		return "checksum=default"
	}
	return "checksum=" + mode
}

func TestConformance(t *testing.T) {
	t.Parallel()
	u := startUpstream(t)
	bucket := u.newBucket(t)
	for _, mode := range checksumModes {
		t.Run(modeName(mode), func(t *testing.T) {
			t.Parallel()
			blobtest.Run(t, func(t *testing.T) blob.Store {
				cfg := u.config(bucket, u.prefix())
				cfg.Checksum = mode
				return newStore(t, cfg)
			})
		})
	}
}

func BenchmarkStore(b *testing.B) {
	u := startUpstream(b)
	bucket := u.newBucket(b)
	for _, mode := range []string{"CRC32C", "none"} {
		b.Run("checksum="+mode, func(b *testing.B) {
			blobtest.Bench(b, func(b *testing.B) blob.Store {
				cfg := u.config(bucket, u.prefix())
				cfg.Checksum = mode
				return newStore(b, cfg)
			})
		})
	}
}

// closedEndpoint returns the URL of a port nothing listens on.
func closedEndpoint(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return "http://" + addr
}

func TestNewFails(t *testing.T) {
	t.Parallel()
	u := startUpstream(t)
	bucket := u.newBucket(t)
	unreachable := closedEndpoint(t)
	for _, tc := range []struct {
		name string
		mod  func(c *s3blob.Config)
		want []string // in the error message
	}{
		{
			name: "missing bucket",
			mod:  func(c *s3blob.Config) { c.Bucket = "no-such-bucket" },
			want: []string{`bucket "no-such-bucket"`, u.endpoint, "does not exist"},
		},
		{
			name: "wrong secret key",
			mod:  func(c *s3blob.Config) { c.SecretKey = "not-the-secret-key-0123456789" },
			want: []string{`bucket "` + bucket + `"`, u.endpoint, upstreamAccessKey, "SignatureDoesNotMatch"},
		},
		{
			name: "unknown access key",
			mod:  func(c *s3blob.Config) { c.AccessKey = "NOSUCHACCESSKEY00000" },
			want: []string{`bucket "` + bucket + `"`, u.endpoint, "NOSUCHACCESSKEY00000", "InvalidAccessKeyId"},
		},
		{
			name: "unreachable endpoint",
			mod:  func(c *s3blob.Config) { c.Endpoint, c.MaxAttempts = unreachable, 1 },
			want: []string{"cannot reach", `bucket "` + bucket + `"`, unreachable, "connection refused"},
		},
		{
			name: "invalid config",
			mod:  func(c *s3blob.Config) { c.Prefix = "no-slash" },
			want: []string{`prefix "no-slash" must end in a slash`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := u.config(bucket, u.prefix())
			tc.mod(&cfg)
			s, err := s3blob.New(t.Context(), cfg)
			if err == nil {
				s.Close()
				t.Fatalf("New = nil error, want one mentioning %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("New error = %q\nwant it to contain %q", err, w)
				}
			}
			t.Logf("New error: %v", err)
			if strings.Contains(err.Error(), cfg.SecretKey) {
				t.Errorf("New error = %q contains the secret key", err)
			}
		})
	}
}

// TestNewLeavesNothing checks that New's test blob is gone afterwards, in
// every checksum mode and with an endpoint written with a final slash.
func TestNewLeavesNothing(t *testing.T) {
	t.Parallel()
	u := startUpstream(t)
	bucket := u.newBucket(t)
	prefix := u.prefix()
	for _, mode := range checksumModes {
		cfg := u.config(bucket, prefix)
		cfg.Checksum = mode
		newStore(t, cfg)
	}
	cfg := u.config(bucket, prefix)
	cfg.Endpoint += "/" // as operators write it
	s := newStore(t, cfg)
	if err := s.Put(t.Context(), "k", strings.NewReader("x"), 1); err != nil {
		t.Fatalf("Put through endpoint %s: %v", cfg.Endpoint, err)
	}
	if err := s.Delete(t.Context(), "k"); err != nil {
		t.Fatalf("Delete through endpoint %s: %v", cfg.Endpoint, err)
	}
	if keys := u.objectKeys(t, bucket, ""); len(keys) != 0 {
		t.Errorf("bucket holds %q after New; want nothing", keys)
	}
}

func TestPutWrongSizeLeavesNothing(t *testing.T) {
	t.Parallel()
	u := startUpstream(t)
	bucket := u.newBucket(t)
	const small, large = 100 << 10, 3 << 20 // large sends Expect: 100-continue
	data := pattern(0, large+1)
	for _, mode := range []string{"", "MD5", "none"} {
		t.Run(modeName(mode), func(t *testing.T) {
			t.Parallel()
			prefix := u.prefix()
			cfg := u.config(bucket, prefix)
			cfg.Checksum = mode
			s := newStore(t, cfg)
			for _, tc := range []struct {
				name string
				r    func() io.Reader
				size int64
			}{
				{"long by one", func() io.Reader { return bytes.NewReader(data[:small+1]) }, small},
				{"long, extra byte in a later read", func() io.Reader {
					return io.MultiReader(bytes.NewReader(data[:small]), bytes.NewReader(data[small:small+1]))
				}, small},
				{"long, large body", func() io.Reader { return bytes.NewReader(data[:large+1]) }, large},
				{"long, one byte for none", func() io.Reader { return bytes.NewReader(data[:1]) }, 0},
				{"short by one", func() io.Reader { return bytes.NewReader(data[:small-1]) }, small},
				{"short, large body", func() io.Reader { return bytes.NewReader(data[:large-1]) }, large},
				{"short, nothing for one", func() io.Reader { return bytes.NewReader(nil) }, 1},
			} {
				t.Run(tc.name, func(t *testing.T) {
					key := "size/" + strings.ReplaceAll(strings.ReplaceAll(tc.name, " ", "-"), ",", "")
					err := s.Put(t.Context(), key, tc.r(), tc.size)
					if !errors.Is(err, blob.ErrSize) {
						t.Fatalf("Put(%d-byte size) = %v, want ErrSize", tc.size, err)
					}
					u.wantAbsent(t, bucket, prefix+key)
				})
			}
			if keys := u.objectKeys(t, bucket, prefix); len(keys) != 0 {
				t.Errorf("upstream holds %q after failed Puts; want nothing", keys)
			}
		})
	}
}

func TestPrefixIsolation(t *testing.T) {
	t.Parallel()
	u := startUpstream(t)
	bucket := u.newBucket(t)
	a := newStore(t, u.config(bucket, "iso/a/"))
	b := newStore(t, u.config(bucket, "iso/b/"))
	ctx := t.Context()
	for _, p := range []struct {
		s         *s3blob.Store
		key, data string
	}{
		{a, "k/1", "from a"}, {b, "k/1", "from b"}, {a, "only-a", "a"}, {b, "k/2", "b2"},
	} {
		if err := p.s.Put(ctx, p.key, strings.NewReader(p.data), int64(len(p.data))); err != nil {
			t.Fatalf("Put(%s): %v", p.key, err)
		}
	}
	if got := readAll(t, a, "k/1", 0, -1); string(got) != "from a" {
		t.Errorf("a: Get(k/1) = %q, want %q", got, "from a")
	}
	if got := readAll(t, b, "k/1", 0, -1); string(got) != "from b" {
		t.Errorf("b: Get(k/1) = %q, want %q", got, "from b")
	}
	if _, err := b.Get(ctx, "only-a", 0, -1); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("b: Get(only-a) = %v, want ErrNotFound", err)
	}
	if diff := cmp.Diff([]string{"k/1", "only-a"}, listAll(t, a, "")); diff != "" {
		t.Errorf("a: List (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"k/1", "k/2"}, listAll(t, b, "")); diff != "" {
		t.Errorf("b: List (-want +got):\n%s", diff)
	}
	if err := a.Delete(ctx, "k/1"); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, b, "k/1", 0, -1); string(got) != "from b" {
		t.Errorf("b: Get(k/1) after a deleted its k/1 = %q, want %q", got, "from b")
	}
	want := []string{"iso/a/only-a", "iso/b/k/1", "iso/b/k/2"}
	if diff := cmp.Diff(want, u.objectKeys(t, bucket, "")); diff != "" {
		t.Errorf("upstream keys (-want +got):\n%s", diff)
	}
}

func TestKeys(t *testing.T) {
	t.Parallel()
	u := startUpstream(t)
	bucket := u.newBucket(t)
	prefix := u.prefix()
	s := newStore(t, u.config(bucket, prefix))
	ctx := t.Context()
	valid := []string{
		"abcdefghijklmnopqrstuvwxyz",
		"0123456789",
		"a-b_c.d/e",
		"-/_/.x",
		"x./y-/z_",
		".a/_b/-c/9.",
		strings.Repeat("z", 200),
		strings.Repeat("a/", 99) + "b",
	}
	for _, key := range valid {
		if err := s.Put(ctx, key, strings.NewReader(key), int64(len(key))); err != nil {
			t.Errorf("Put(%q) = %v", key, err)
			continue
		}
		if got := readAll(t, s, key, 0, -1); string(got) != key {
			t.Errorf("Get(%q) = %q, want the key itself", key, got)
		}
	}
	want := slices.Sorted(slices.Values(valid))
	if diff := cmp.Diff(want, listAll(t, s, "")); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	var upstreamWant []string
	for _, k := range want {
		upstreamWant = append(upstreamWant, prefix+k)
	}
	if diff := cmp.Diff(upstreamWant, u.objectKeys(t, bucket, prefix)); diff != "" {
		t.Errorf("upstream keys (-want +got):\n%s", diff)
	}
	for _, key := range valid {
		if err := s.Delete(ctx, key); err != nil {
			t.Errorf("Delete(%q) = %v", key, err)
		}
	}
	if keys := u.objectKeys(t, bucket, prefix); len(keys) != 0 {
		t.Errorf("upstream keys after deleting all: %q", keys)
	}

	for _, key := range []string{
		"", "A", "a b", "a+b", "a%2fb", "a/../b", "..", "/a", "a/", "a//b", "a/./b", "ü", strings.Repeat("z", 201),
	} {
		if err := s.Put(ctx, key, strings.NewReader("x"), 1); err == nil {
			t.Errorf("Put(%q) = nil, want an invalid-key error", key)
		}
		if _, err := s.Get(ctx, key, 0, -1); err == nil || errors.Is(err, blob.ErrNotFound) {
			t.Errorf("Get(%q) = %v, want an invalid-key error", key, err)
		}
		if err := s.Delete(ctx, key); err == nil {
			t.Errorf("Delete(%q) = nil, want an invalid-key error", key)
		}
	}
	if keys := u.objectKeys(t, bucket, prefix); len(keys) != 0 {
		t.Errorf("upstream keys after invalid Puts: %q", keys)
	}
}

// TestListSkipsForeignKeys checks that objects under Prefix that Put could
// not have written are invisible to List (and so to GC).
func TestListSkipsForeignKeys(t *testing.T) {
	t.Parallel()
	u := startUpstream(t)
	bucket := u.newBucket(t)
	prefix := u.prefix()
	s := newStore(t, u.config(bucket, prefix))
	for _, key := range []string{prefix + "README.md", prefix + "a b", prefix, prefix + "dir/"} {
		if _, err := u.admin.PutObject(t.Context(), &s3.PutObjectInput{
			Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader("x"),
		}); err != nil {
			t.Fatalf("PutObject(%q): %v", key, err)
		}
	}
	if err := s.Put(t.Context(), "mine", strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"mine"}, listAll(t, s, "")); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
}

func TestLargeBlob(t *testing.T) {
	t.Parallel()
	u := startUpstream(t)
	bucket := u.newBucket(t)
	s := newStore(t, u.config(bucket, u.prefix()))
	const size = 64 << 20
	ctx := t.Context()
	if err := s.Put(ctx, "big/x", &patternReader{n: size}, size); err != nil {
		t.Fatalf("Put(64 MiB) = %v", err)
	}
	rc, err := s.Get(ctx, "big/x", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	w := &patternChecker{}
	_, err = io.Copy(w, rc)
	rc.Close()
	if err != nil {
		t.Fatalf("read 64 MiB: %v", err)
	}
	if w.err != nil || w.pos != size {
		t.Fatalf("64 MiB read back: %d bytes, %v; want %d bytes of the pattern", w.pos, w.err, size)
	}

	for _, tc := range []struct {
		name   string
		off, n int64
		want   []byte
	}{
		{"first byte", 0, 1, pattern(0, 1)},
		{"last byte", size - 1, -1, pattern(size-1, 1)},
		{"last byte with length past end", size - 1, 10, pattern(size-1, 1)},
		{"middle across MiB", 1<<20 - 7, 3 << 20, pattern(1<<20-7, 3<<20)},
		{"prefix", 0, 100, pattern(0, 100)},
		{"huge length", size - 100, math.MaxInt64, pattern(size-100, 100)},
		{"at end", size, -1, nil},
		{"past end with length", size + 5, 1, nil},
		{"zero length", 12345, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := readAll(t, s, "big/x", tc.off, tc.n)
			if !bytes.Equal(got, tc.want) {
				t.Errorf("Get(off=%d, n=%d) = %d bytes, want %d (equal: %v)", tc.off, tc.n, len(got), len(tc.want), bytes.Equal(got, tc.want))
			}
		})
	}
}

// TestGetRangeIgnored checks Get against an upstream that answers a ranged
// GET with the whole object (200, no Content-Range), as a minimal S3
// implementation may.
func TestGetRangeIgnored(t *testing.T) {
	t.Parallel()
	u := startUpstream(t)
	p := startProxy(t, u)
	bucket := u.newBucket(t)
	prefix := u.prefix()
	cfg := u.config(bucket, prefix)
	cfg.Endpoint = p.endpoint
	s := newStore(t, cfg)
	data := pattern(0, 10000)
	if err := s.Put(t.Context(), "r/x", bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}
	var served atomic.Int32
	p.setHook(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/r/x") || r.Header.Get("Range") == "" {
			return false
		}
		served.Add(1)
		w.Header().Set("Content-Length", fmt.Sprint(len(data)))
		w.Write(data)
		return true
	})
	for _, tc := range []struct{ off, n int64 }{{100, 50}, {0, 10}, {9990, -1}, {9990, 100}, {20000, -1}} {
		want := data[min(tc.off, int64(len(data))):]
		if tc.n >= 0 && tc.n < int64(len(want)) {
			want = want[:tc.n]
		}
		if got := readAll(t, s, "r/x", tc.off, tc.n); !bytes.Equal(got, want) {
			t.Errorf("Get(off=%d, n=%d) = %d bytes, want %d", tc.off, tc.n, len(got), len(want))
		}
	}
	if served.Load() == 0 {
		t.Error("the proxy answered no ranged GET; the test tests nothing")
	}
}

func TestIntegrity(t *testing.T) {
	t.Parallel()
	u := startUpstream(t)
	bucket := u.newBucket(t)
	data := pattern(7, 200<<10)
	for _, mode := range []string{"", "CRC64NVME", "SHA256", "SHA512", "XXHASH64", "XXHASH3", "XXHASH128", "MD5"} {
		t.Run(modeName(mode), func(t *testing.T) {
			t.Parallel()
			p := startProxy(t, u)
			prefix := u.prefix()
			cfg := u.config(bucket, prefix)
			cfg.Endpoint, cfg.Checksum = p.endpoint, mode
			s := newStore(t, cfg)
			ctx := t.Context()

			// A bit flipped on the way up: the Put fails and nothing stays.
			p.setHook(func(w http.ResponseWriter, r *http.Request) bool {
				if isPut(r, "/corrupt/") {
					r.Body = &flipReader{r: r.Body, at: 5000}
				}
				return false
			})
			err := s.Put(ctx, "corrupt/x", bytes.NewReader(data), int64(len(data)))
			t.Logf("Put corrupted in transit: %v", err)
			if err == nil || errors.Is(err, blob.ErrSize) {
				t.Errorf("Put corrupted in transit = %v, want an integrity error", err)
			}
			if mode == "MD5" && !errors.Is(err, s3blob.ErrChecksum) {
				t.Errorf("Put corrupted in transit = %v, want ErrChecksum", err)
			}
			if mode != "MD5" && !strings.Contains(fmt.Sprint(err), "BadDigest") {
				t.Errorf("Put corrupted in transit = %v, want the upstream's BadDigest for the trailer", err)
			}
			u.wantAbsent(t, bucket, prefix+"corrupt/x")
			p.setHook(nil)

			// A bit flipped on the way down: the whole-blob reader fails
			// at the end.
			if err := s.Put(ctx, "good/x", bytes.NewReader(data), int64(len(data))); err != nil {
				t.Fatal(err)
			}
			p.setModify(func(r *http.Response) {
				if r.Request.Method == http.MethodGet && strings.HasSuffix(r.Request.URL.Path, "/good/x") {
					r.Body = &flipReader{r: r.Body, at: 100 << 10}
				}
			})
			rc, err := s.Get(ctx, "good/x", 0, -1)
			if err != nil {
				t.Fatal(err)
			}
			_, err = io.ReadAll(rc)
			rc.Close()
			if !errors.Is(err, s3blob.ErrChecksum) {
				t.Errorf("reading a blob corrupted in transit = %v, want ErrChecksum", err)
			}
			p.setModify(nil)
			if got := readAll(t, s, "good/x", 0, -1); !bytes.Equal(got, data) {
				t.Errorf("Get without corruption returned %d bytes that differ", len(got))
			}
		})
	}
}

func TestPutRetry(t *testing.T) {
	t.Parallel()
	u := startUpstream(t)
	p := startProxy(t, u)
	bucket := u.newBucket(t)
	prefix := u.prefix()
	cfg := u.config(bucket, prefix)
	cfg.Endpoint = p.endpoint
	// The store's own transport sends the body anyway if the upstream has
	// not answered Expect: 100-continue within 1s, which a loaded test
	// machine can take; this test is about what happens when it answers.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.ExpectContinueTimeout = time.Minute
	cfg.HTTPClient = &http.Client{Transport: tr}
	t.Cleanup(tr.CloseIdleConnections)
	s := newStore(t, cfg)
	ctx := t.Context()

	// Refused before the body was read (Expect: 100-continue): resent.
	var early atomic.Int32
	p.setHook(func(w http.ResponseWriter, r *http.Request) bool {
		if !isPut(r, "/retry/early") {
			return false
		}
		if early.Add(1) == 1 {
			writeS3Error(w, http.StatusServiceUnavailable, "SlowDown", "Please reduce your request rate.")
			return true
		}
		return false
	})
	big := pattern(3, 3<<20)
	if err := s.Put(ctx, "retry/early", bytes.NewReader(big), int64(len(big))); err != nil {
		t.Fatalf("Put refused once before its body = %v, want success on retry", err)
	}
	if n := early.Load(); n != 2 {
		t.Errorf("upstream saw %d attempts, want 2", n)
	}
	if got := readAll(t, s, "retry/early", 0, -1); !bytes.Equal(got, big) {
		t.Errorf("Get after retried Put returned %d bytes that differ from the %d put", len(got), len(big))
	}

	// Refused after the body was read: not resent, and the upstream's
	// error is reported.
	var late atomic.Int32
	p.setHook(func(w http.ResponseWriter, r *http.Request) bool {
		if !isPut(r, "/retry/late") {
			return false
		}
		late.Add(1)
		io.Copy(io.Discard, r.Body)
		writeS3Error(w, http.StatusServiceUnavailable, "SlowDown", "Please reduce your request rate.")
		return true
	})
	small := pattern(4, 64<<10)
	err := s.Put(ctx, "retry/late", bytes.NewReader(small), int64(len(small)))
	if err == nil || !strings.Contains(err.Error(), "SlowDown") || !strings.Contains(err.Error(), "503") {
		t.Errorf("Put refused after its body = %v, want the upstream's 503 SlowDown", err)
	}
	if n := late.Load(); n != 1 {
		t.Errorf("upstream saw %d attempts of a Put whose body was consumed, want 1", n)
	}
	u.wantAbsent(t, bucket, prefix+"retry/late")
}

// readAll returns what Get returns for key, failing the test on error.
func readAll(t *testing.T, s blob.Store, key string, off, n int64) []byte {
	t.Helper()
	rc, err := s.Get(t.Context(), key, off, n)
	if err != nil {
		t.Fatalf("Get(%q, %d, %d) = %v", key, off, n, err)
	}
	defer rc.Close()
	p, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read Get(%q, %d, %d): %v", key, off, n, err)
	}
	return p
}

// listAll returns the sorted keys List reports under prefix.
func listAll(t *testing.T, s blob.Store, prefix string) []string {
	t.Helper()
	var keys []string
	if err := s.List(t.Context(), prefix, func(k string) error {
		keys = append(keys, k)
		return nil
	}); err != nil {
		t.Fatalf("List(%q) = %v", prefix, err)
	}
	slices.Sort(keys)
	return keys
}

// patternByte returns byte i of the test pattern: a splitmix64 stream, so
// that a shifted or repeated range never matches.
func patternByte(i int64) byte {
	x := uint64(i>>3) + 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	x ^= x >> 31
	return byte(x >> (8 * (i & 7)))
}

// pattern returns n bytes of the pattern from offset off.
func pattern(off, n int64) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = patternByte(off + int64(i))
	}
	return p
}

// patternReader yields the first n bytes of the pattern without holding
// them.
type patternReader struct {
	pos, n int64
}

func (r *patternReader) Read(p []byte) (int, error) {
	if r.pos >= r.n {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), r.n-r.pos)]
	for i := range p {
		p[i] = patternByte(r.pos + int64(i))
	}
	r.pos += int64(len(p))
	return len(p), nil
}

// patternChecker checks that what is written to it is the pattern.
type patternChecker struct {
	pos int64
	err error
}

func (c *patternChecker) Write(p []byte) (int, error) {
	for i, b := range p {
		if c.err == nil && b != patternByte(c.pos+int64(i)) {
			c.err = fmt.Errorf("byte %d differs from the pattern", c.pos+int64(i))
		}
	}
	c.pos += int64(len(p))
	return len(p), nil
}
