package objects

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"

	"github.com/coffer-s3/coffer/internal/checksum"
	"github.com/coffer-s3/coffer/internal/s3err"
)

func TestPutGetRoundTrip(t *testing.T) {
	e := newEnv(t)
	m := Metadata{ContentType: "text/plain", CacheControl: "no-cache", Expires: "Thu, 01 Dec 1994 16:00:00 GMT",
		ContentEncoding: "gzip", ContentDisposition: "inline", ContentLanguage: "en",
		User: map[string]string{"color": "blue"}}
	for _, tc := range []struct {
		name   string
		size   int
		blocks int
	}{
		{"empty", 0, 0},
		{"one byte", 1, 0},
		{"inline threshold", testInline, 0},
		{"just above inline", testInline + 1, 1},
		{"one block", testBlock, 1},
		{"exact blocks", 3 * testBlock, 3},
		{"blocks and tail", 3*testBlock + 17, 4},
	} {
		for _, unknown := range []bool{false, true} {
			name := tc.name
			size := int64(tc.size)
			if unknown {
				// A form upload's file: the length is known at its end.
				name, size = tc.name+" size unknown", SizeUnknown
			}
			t.Run(name, func(t *testing.T) {
				ctx := context.Background()
				data := randBytes(tc.size, uint64(tc.size))
				key := "obj/" + name
				info, err := e.s.PutObject(ctx, "bkt", key, PutInput{Size: size, ContentMD5: md5B64(data), Meta: m},
					iotest.HalfReader(bytes.NewReader(data)))
				if err != nil {
					t.Fatal(err)
				}
				want := ObjectInfo{Bucket: "bkt", Key: key, Size: int64(tc.size), ETag: md5Hex(data), LastModified: info.LastModified, Meta: m}
				if diff := cmp.Diff(want, info); diff != "" {
					t.Errorf("PutObject info mismatch (-want +got):\n%s", diff)
				}
				obj, got := e.get(t, key, GetOptions{})
				if !bytes.Equal(got, data) {
					t.Errorf("GetObject returned %d bytes that differ from the %d written", len(got), len(data))
				}
				if diff := cmp.Diff(want, obj.Info); diff != "" || obj.Partial || obj.Start != 0 {
					t.Errorf("GetObject info mismatch (partial %v, start %d) (-want +got):\n%s", obj.Partial, obj.Start, diff)
				}
				rec, err := e.db.Object(ctx, "bkt", key)
				if err != nil {
					t.Fatal(err)
				}
				if len(rec.Blocks) != tc.blocks {
					t.Errorf("stored as %d blocks, want %d", len(rec.Blocks), tc.blocks)
				}
				head, err := e.s.HeadObject(ctx, "bkt", key, GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if n, _ := head.Body.Read(make([]byte, 1)); n != 0 || head.Length != int64(tc.size) {
					t.Errorf("HeadObject body gave %d bytes, Length %d", n, head.Length)
				}
			})
		}
	}
	if len(e.s.inflight.snapshot()) != 0 {
		t.Errorf("in-flight set not empty after writes: %v", e.s.inflight.snapshot())
	}
}

// TestPutUnknownSizeInlineIsBlock: with InlineThreshold equal to
// BlockSize a body of unknown length is read InlineThreshold+1 bytes ahead,
// one more than the first block takes; that byte is the second block's
// first and must come from the head buffer before it goes back to the pool
// (a released buffer is scribbled over here: the byte read after release
// was another request's).
func TestPutUnknownSizeInlineIsBlock(t *testing.T) {
	e := newEnvConfig(t, Config{InlineThreshold: testBlock, BlockSize: testBlock, MinPartSize: 2 * testBlock})
	e.s.scribble = true
	for _, size := range []int{testBlock, testBlock + 1, testBlock + 100, 2*testBlock + 5, 3 * testBlock} {
		data := randBytes(size, uint64(size))
		key := fmt.Sprintf("k%d", size)
		info, err := e.s.PutObject(context.Background(), "bkt", key, PutInput{Size: SizeUnknown}, iotest.HalfReader(bytes.NewReader(data)))
		if err != nil {
			t.Fatalf("PutObject of %d bytes: %v", size, err)
		}
		if _, got := e.get(t, key, GetOptions{}); !bytes.Equal(got, data) || info.ETag != md5Hex(data) {
			i := 0
			for i < min(len(got), len(data)) && got[i] == data[i] {
				i++
			}
			t.Errorf("%d bytes of unknown size stored wrong: first difference at %d of %d (ETag %s, MD5 of the data %s)",
				size, i, len(got), info.ETag, md5Hex(data))
		}
	}
}

// errBody is a body whose Read fails after n bytes, as the signature layer
// does on a bad chunk signature.
type errBody struct {
	r   io.Reader
	n   int
	err error
}

func (b *errBody) Read(p []byte) (int, error) {
	if b.n <= 0 {
		return 0, b.err
	}
	p = p[:min(len(p), b.n)]
	n, err := b.r.Read(p)
	b.n -= n
	return n, err
}

// TestPutSizeUnknownErrors: a body of unknown size that runs past
// MaxObjectSize is EntityTooLarge, one that fails midway fails the write,
// and neither leaves an object or a block behind.
func TestPutSizeUnknownErrors(t *testing.T) {
	const max = 3*testBlock + 5
	e := newEnvConfig(t, Config{InlineThreshold: testInline, BlockSize: testBlock, MinPartSize: 2 * testBlock, MaxObjectSize: max})
	errBoom := errors.New("boom")
	for _, tc := range []struct {
		name string
		body io.Reader
		want func(error) bool
	}{
		{"one byte too large", bytes.NewReader(randBytes(max+1, 1)), func(err error) bool { return s3err.Is(err, s3err.EntityTooLarge) }},
		{"much too large", bytes.NewReader(randBytes(10*testBlock, 2)), func(err error) bool { return s3err.Is(err, s3err.EntityTooLarge) }},
		{"fails inline", &errBody{r: bytes.NewReader(randBytes(testInline, 3)), n: 10, err: errBoom}, func(err error) bool { return errors.Is(err, errBoom) }},
		{"fails in the second block", &errBody{r: bytes.NewReader(randBytes(max, 4)), n: testBlock + 10, err: errBoom}, func(err error) bool { return errors.Is(err, errBoom) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.s.PutObject(context.Background(), "bkt", "k", PutInput{Size: SizeUnknown}, tc.body)
			if !tc.want(err) {
				t.Fatalf("PutObject = %v", err)
			}
			if _, err := e.s.HeadObject(context.Background(), "bkt", "k", GetOptions{}); !s3err.Is(err, s3err.NoSuchKey) {
				t.Errorf("HeadObject after a failed write = %v, want NoSuchKey", err)
			}
			if b := e.blobs(t); len(b) != 0 {
				t.Errorf("blocks left behind: %v", b)
			}
		})
	}
	data := randBytes(max, 5)
	info, err := e.s.PutObject(context.Background(), "bkt", "k", PutInput{Size: SizeUnknown}, bytes.NewReader(data))
	if err != nil || info.Size != max || info.ETag != md5Hex(data) {
		t.Fatalf("PutObject of exactly MaxObjectSize = %+v, %v", info, err)
	}
}

func TestPutObjectErrors(t *testing.T) {
	small := []byte("hello")
	big := randBytes(2*testBlock+5, 1)
	sigErr := s3err.New(s3err.XAmzContentSHA256Mismatch, "")
	crc := func(b []byte) string {
		h := checksum.CRC32.New()
		h.Write(b)
		return checksum.Encode(h.Sum(nil))
	}
	for _, tc := range []struct {
		name    string
		bucket  string
		key     string
		in      PutInput
		body    io.Reader
		want    s3err.Code
		wantErr error  // if set, errors.Is must hold (passthrough)
		wantMsg string // if set, the message
	}{
		{name: "no bucket", bucket: "nope", in: PutInput{Size: 5}, want: s3err.NoSuchBucket},
		{name: "no bucket blocks", bucket: "nope", body: bytes.NewReader(big), in: PutInput{Size: int64(len(big))}, want: s3err.NoSuchBucket},
		{name: "no bucket before bad digest", bucket: "nope", in: PutInput{Size: 5, ContentMD5: md5B64([]byte("other"))}, want: s3err.NoSuchBucket},
		{name: "no bucket before short body", bucket: "nope", in: PutInput{Size: 6}, want: s3err.NoSuchBucket},
		{name: "no bucket before body error", bucket: "nope", body: &errBody{bytes.NewReader(small), 2, sigErr}, in: PutInput{Size: 5}, want: s3err.NoSuchBucket},
		{name: "no bucket conditional", bucket: "nope", in: PutInput{Size: 5, Cond: WriteConditions{IfNoneMatch: "*"}}, want: s3err.NoSuchBucket},
		{name: "key too long", key: strings.Repeat("k", 1025), in: PutInput{Size: 5}, want: s3err.KeyTooLongError},
		{name: "empty key", key: "", in: PutInput{Size: 5}, want: s3err.InvalidArgument},
		{name: "invalid utf-8 key", key: "a\xffb", in: PutInput{Size: 5}, want: s3err.InvalidArgument},
		{name: "metadata too large", in: PutInput{Size: 5, Meta: Metadata{User: map[string]string{"k": strings.Repeat("v", 2048)}}}, want: s3err.MetadataTooLarge},
		{name: "too large", in: PutInput{Size: DefaultMaxObjectSize + 1}, want: s3err.EntityTooLarge},
		{name: "negative size", in: PutInput{Size: -2}, want: s3err.MissingContentLength},
		{name: "malformed md5", in: PutInput{Size: 5, ContentMD5: "nope"}, want: s3err.InvalidDigest},
		{name: "short md5", in: PutInput{Size: 5, ContentMD5: "AAAA"}, want: s3err.InvalidDigest},
		{name: "md5 mismatch", in: PutInput{Size: 5, ContentMD5: md5B64([]byte("other"))}, want: s3err.BadDigest},
		{name: "md5 mismatch blocks", body: bytes.NewReader(big), in: PutInput{Size: int64(len(big)), ContentMD5: md5B64(small)}, want: s3err.BadDigest},
		{name: "checksum mismatch", in: PutInput{Size: 5, Checksum: ChecksumInput{Algorithm: checksum.CRC32, Value: crc([]byte("x"))}},
			want: s3err.BadDigest, wantMsg: "The CRC32 you specified did not match the calculated checksum."},
		{name: "trailer mismatch", body: bytes.NewReader(big), in: PutInput{Size: int64(len(big)),
			Checksum: ChecksumInput{Algorithm: checksum.CRC32, Trailer: func() string { return crc(small) }}}, want: s3err.BadDigest},
		{name: "trailer malformed", in: PutInput{Size: 5, Checksum: ChecksumInput{Algorithm: checksum.CRC32, Trailer: func() string { return "!" }}}, want: s3err.InvalidRequest},
		{name: "trailer empty or missing", in: PutInput{Size: 5, Checksum: ChecksumInput{Algorithm: checksum.CRC32, Trailer: func() string { return "" }}}, want: s3err.InvalidRequest},
		{name: "checksum malformed", in: PutInput{Size: 5, Checksum: ChecksumInput{Algorithm: checksum.SHA256, Value: "AAAA"}}, want: s3err.InvalidRequest},
		{name: "unknown algorithm", in: PutInput{Size: 5, Checksum: ChecksumInput{Algorithm: "MD4"}}, want: s3err.InvalidRequest},
		{name: "short body inline", in: PutInput{Size: 6}, want: s3err.IncompleteBody},
		{name: "short body blocks", body: bytes.NewReader(big), in: PutInput{Size: int64(len(big)) + 1}, want: s3err.IncompleteBody},
		{name: "long body inline", in: PutInput{Size: 4}, want: s3err.IncompleteBody},
		{name: "long body blocks", body: bytes.NewReader(big), in: PutInput{Size: int64(len(big)) - 1}, want: s3err.IncompleteBody},
		{name: "body error inline", body: &errBody{bytes.NewReader(small), 2, sigErr}, in: PutInput{Size: 5}, want: s3err.XAmzContentSHA256Mismatch, wantErr: sigErr},
		{name: "body error blocks", body: &errBody{bytes.NewReader(big), testBlock + 3, sigErr}, in: PutInput{Size: int64(len(big))}, want: s3err.XAmzContentSHA256Mismatch, wantErr: sigErr},
		{name: "body error at eof", body: &errBody{bytes.NewReader(small), 5, sigErr}, in: PutInput{Size: 5}, want: s3err.XAmzContentSHA256Mismatch, wantErr: sigErr},
		{name: "plain body error", body: &errBody{bytes.NewReader(big), 10, io.ErrClosedPipe}, in: PutInput{Size: int64(len(big))}, want: s3err.InternalError, wantErr: io.ErrClosedPipe},
		{name: "if-match absent", in: PutInput{Size: 5, Cond: WriteConditions{IfMatch: `"abc"`}}, want: s3err.NoSuchKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			if tc.bucket == "" {
				tc.bucket = "bkt"
			}
			if tc.key == "" && !strings.HasPrefix(tc.name, "empty key") {
				tc.key = "k"
			}
			if tc.body == nil {
				tc.body = bytes.NewReader(small)
			}
			_, err := e.s.PutObject(context.Background(), tc.bucket, tc.key, tc.in, tc.body)
			wantCode(t, "PutObject", err, tc.want)
			if tc.wantErr != nil && err != tc.wantErr && !errors.Is(err, tc.wantErr) {
				t.Errorf("error %v is not the body's error %v", err, tc.wantErr)
			}
			if tc.wantErr != nil && s3err.Is(tc.wantErr, tc.want) && err != tc.wantErr {
				t.Errorf("error %#v was not passed through unchanged", err)
			}
			var se *s3err.Error
			if tc.wantMsg != "" && (!errors.As(err, &se) || se.Msg() != tc.wantMsg) {
				t.Errorf("message = %q, want %q", se.Msg(), tc.wantMsg)
			}
			if _, err := e.s.HeadObject(context.Background(), "bkt", "k", GetOptions{}); !s3err.Is(err, s3err.NoSuchKey) {
				t.Errorf("after failed PUT, HeadObject = %v, want NoSuchKey", err)
			}
			if b := e.blobs(t); len(b) != 0 {
				t.Errorf("failed PUT left blobs %v", b)
			}
			if f := e.s.inflight.snapshot(); len(f) != 0 {
				t.Errorf("failed PUT left in-flight keys %v", f)
			}
		})
	}
}

func TestPutChecksums(t *testing.T) {
	data := randBytes(testBlock+100, 7)
	for _, alg := range checksum.Algorithms() {
		for _, size := range []int{10, len(data)} {
			h := alg.New()
			h.Write(data[:size])
			want := checksum.Encode(h.Sum(nil))
			for _, mode := range []string{"header", "trailer", "compute"} {
				t.Run(string(alg)+"/"+mode, func(t *testing.T) {
					e := newEnv(t)
					ck := ChecksumInput{Algorithm: alg}
					switch mode {
					case "header":
						ck.Value = want
					case "trailer":
						ck.Trailer = func() string { return want }
					}
					info, err := e.s.PutObject(context.Background(), "bkt", "k", PutInput{Size: int64(size), Checksum: ck}, bytes.NewReader(data[:size]))
					if err != nil {
						t.Fatal(err)
					}
					wantCk := ChecksumValue{Algorithm: alg, Value: want, Type: "FULL_OBJECT"}
					if info.Checksum != wantCk {
						t.Errorf("PutObject checksum = %+v, want %+v", info.Checksum, wantCk)
					}
					if o, _ := e.get(t, "k", GetOptions{}); o.Info.Checksum != wantCk {
						t.Errorf("GetObject checksum = %+v, want %+v", o.Info.Checksum, wantCk)
					}
				})
			}
		}
	}
}

func TestWriteConditions(t *testing.T) {
	for _, tc := range []struct {
		name   string
		exists bool
		cond   WriteConditions
		want   s3err.Code
	}{
		{"create if absent", false, WriteConditions{IfNoneMatch: "*"}, ""},
		{"create if present", true, WriteConditions{IfNoneMatch: "*"}, s3err.PreconditionFailed},
		{"if-match absent", false, WriteConditions{IfMatch: "x"}, s3err.NoSuchKey},
		{"if-match wrong", true, WriteConditions{IfMatch: `"0123"`}, s3err.PreconditionFailed},
		{"if-match right", true, WriteConditions{IfMatch: `"` + md5Hex([]byte("old")) + `"`}, ""},
		{"if-match unquoted", true, WriteConditions{IfMatch: md5Hex([]byte("old"))}, ""},
		{"if-match list", true, WriteConditions{IfMatch: `"x", "` + md5Hex([]byte("old")) + `"`}, ""},
		{"if-match star", true, WriteConditions{IfMatch: "*"}, ""},
		{"if-match star absent", false, WriteConditions{IfMatch: "*"}, s3err.NoSuchKey},
		{"if-none-match etag matches", true, WriteConditions{IfNoneMatch: `"` + md5Hex([]byte("old")) + `"`}, s3err.PreconditionFailed},
		{"if-none-match etag differs", true, WriteConditions{IfNoneMatch: `"0123"`}, ""},
		{"if-none-match etag absent", false, WriteConditions{IfNoneMatch: `"0123"`}, ""},
	} {
		for _, size := range []int{3, 2 * testBlock} {
			t.Run(tc.name, func(t *testing.T) {
				e := newEnv(t)
				if tc.exists {
					e.put(t, "k", []byte("old"))
				}
				data := randBytes(size, 3)
				_, err := e.s.PutObject(context.Background(), "bkt", "k", PutInput{Size: int64(size), Cond: tc.cond}, bytes.NewReader(data))
				wantCode(t, "PutObject", err, tc.want)
				_, got := func() (*Object, []byte) {
					if !tc.exists && tc.want != "" {
						return nil, nil
					}
					return e.get(t, "k", GetOptions{})
				}()
				switch {
				case tc.want == "" && !bytes.Equal(got, data):
					t.Error("successful conditional PUT did not store the new body")
				case tc.want != "" && tc.exists && string(got) != "old":
					t.Errorf("failed conditional PUT changed the object to %d bytes", len(got))
				}
				if live, all := e.liveBlocks(t), e.blobs(t); len(all) != len(live) {
					t.Errorf("store holds %d blobs, %d referenced", len(all), len(live))
				}
			})
		}
	}
}

func TestNewValidatesConfig(t *testing.T) {
	e := newEnv(t)
	for _, cfg := range []Config{{BlockSize: -1}, {InlineThreshold: 1 << 30}, {GCGrace: -1}, {MinPartSize: -5}} {
		if _, err := New(cfg, e.db, e.store, nil); err == nil {
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
	if _, err := New(Config{}, nil, e.store, nil); err == nil {
		t.Error("New with nil db succeeded")
	}
	s, err := New(Config{}, e.db, e.store, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Config{InlineThreshold: 32 << 10, BlockSize: 8 << 20, MaxObjectSize: 5 << 30, MinPartSize: 5 << 20,
		GCInterval: DefaultGCInterval, GCGrace: DefaultGCGrace, SharedFreeDelay: DefaultSharedFreeDelay}
	got := s.cfg
	got.Clock = nil
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults mismatch (-want +got):\n%s", diff)
	}
}
