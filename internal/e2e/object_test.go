package e2e

import (
	"bytes"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"hash/crc64"
	"maps"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/cespare/xxhash/v2"
	"github.com/zeebo/xxh3"
)

// crc64NVME is the CRC-64/NVME table (reflected polynomial), independent of
// the server's implementation. Read-only.
var crc64NVME = crc64.MakeTable(0x9a6c9329ac4bc9b5)

// checksumOf returns the base64 flexible checksum of b, computed with the
// standard library, and for the xxHashes with cespare/xxhash and
// zeebo/xxh3 called directly (the server wraps them; TestChecksumHelper
// pins this helper to the reference xxhsum's output).
func checksumOf(alg types.ChecksumAlgorithm, b []byte) string {
	var sum []byte
	switch alg {
	case types.ChecksumAlgorithmCrc32:
		sum = binary.BigEndian.AppendUint32(nil, crc32.ChecksumIEEE(b))
	case types.ChecksumAlgorithmCrc32c:
		sum = binary.BigEndian.AppendUint32(nil, crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
	case types.ChecksumAlgorithmCrc64nvme:
		sum = binary.BigEndian.AppendUint64(nil, crc64.Checksum(b, crc64NVME))
	case types.ChecksumAlgorithmSha1:
		s := sha1.Sum(b)
		sum = s[:]
	case types.ChecksumAlgorithmSha256:
		s := sha256.Sum256(b)
		sum = s[:]
	case types.ChecksumAlgorithmSha512:
		s := sha512.Sum512(b)
		sum = s[:]
	case types.ChecksumAlgorithmMd5:
		s := md5.Sum(b)
		sum = s[:]
	case types.ChecksumAlgorithmXxhash64:
		sum = binary.BigEndian.AppendUint64(nil, xxhash.Sum64(b))
	case types.ChecksumAlgorithmXxhash3:
		sum = binary.BigEndian.AppendUint64(nil, xxh3.Hash(b))
	case types.ChecksumAlgorithmXxhash128:
		s := xxh3.Hash128(b).Bytes()
		sum = s[:]
	default:
		panic("unknown algorithm " + alg)
	}
	return base64.StdEncoding.EncodeToString(sum)
}

// sdkComputes reports whether aws-sdk-go-v2 computes alg itself when asked
// with ChecksumAlgorithm. Its service/internal/checksum (v1.11) knows
// CRC32, CRC32C, CRC64NVME, SHA1, SHA256 and SHA512; for MD5 and the
// xxHashes it fails with "unknown checksum algorithm" unless the request
// already carries the value, which an application must then compute.
func sdkComputes(alg types.ChecksumAlgorithm) bool {
	switch alg {
	case types.ChecksumAlgorithmMd5, types.ChecksumAlgorithmXxhash64, types.ChecksumAlgorithmXxhash3, types.ChecksumAlgorithmXxhash128:
		return false
	}
	return true
}

// checksumField returns the field named Checksum<alg> of the SDK struct p
// points to (an input or output of PutObject, UploadPart, GetObject…, or a
// types.Part), as the SDK names them after S3's XML elements and headers.
func checksumField(p any, alg types.ChecksumAlgorithm) reflect.Value {
	f := reflect.ValueOf(p).Elem().FieldByName("Checksum" + string(alg))
	if !f.IsValid() || f.Type() != reflect.TypeFor[*string]() {
		panic(fmt.Sprintf("%T has no *string field Checksum%s", p, alg))
	}
	return f
}

// outputChecksum returns the alg checksum of an SDK output (or part) p.
func outputChecksum(alg types.ChecksumAlgorithm, p any) string {
	return aws.ToString(checksumField(p, alg).Interface().(*string))
}

// setChecksum sets the alg checksum of an SDK input (or completed part) p
// to v.
func setChecksum(p any, alg types.ChecksumAlgorithm, v string) {
	checksumField(p, alg).Set(reflect.ValueOf(aws.String(v)))
}

// clientChecksum sets in's ChecksumAlgorithm to alg and, when the SDK
// cannot compute alg (see sdkComputes), its Checksum<alg> to the checksum
// of body, as an application would send it.
func clientChecksum(in any, alg types.ChecksumAlgorithm, body []byte) {
	reflect.ValueOf(in).Elem().FieldByName("ChecksumAlgorithm").Set(reflect.ValueOf(alg))
	if !sdkComputes(alg) {
		setChecksum(in, alg, checksumOf(alg, body))
	}
}

// allAlgorithms are the flexible-checksum algorithms. Read-only.
var allAlgorithms = []types.ChecksumAlgorithm{
	types.ChecksumAlgorithmCrc32, types.ChecksumAlgorithmCrc32c, types.ChecksumAlgorithmCrc64nvme,
	types.ChecksumAlgorithmSha1, types.ChecksumAlgorithmSha256, types.ChecksumAlgorithmSha512,
	types.ChecksumAlgorithmMd5, types.ChecksumAlgorithmXxhash64, types.ChecksumAlgorithmXxhash3,
	types.ChecksumAlgorithmXxhash128,
}

func TestChecksumHelper(t *testing.T) {
	// Check values from the CRC catalogue, Python's hashlib and the
	// reference xxhsum 0.8.1 (-H1, -H3, -H2).
	check := []byte("123456789")
	for alg, want := range map[types.ChecksumAlgorithm]string{
		types.ChecksumAlgorithmCrc32:     "y/Q5Jg==",                 // 0xcbf43926
		types.ChecksumAlgorithmCrc32c:    "4waSgw==",                 // 0xe3069283
		types.ChecksumAlgorithmCrc64nvme: "rosUhgp5mIg=",             // 0xae8b14860a799888
		types.ChecksumAlgorithmMd5:       "JfnnlDI7RTiF9RgfG2JNCw==", // 25f9e794323b453885f5181f1b624d0b
		types.ChecksumAlgorithmSha512:    "2eZ2LdHI6vbWGzxhkvxAjU1tXxF20MKRabwk5xw/J0rSf81YEbMT1oH35V7ALXPUmclUVba1u1A6z1dPuo/+hQ==",
		types.ChecksumAlgorithmXxhash64:  "jLhB20DmroM=",             // 0x8cb841db40e6ae83
		types.ChecksumAlgorithmXxhash3:   "ctyxi2ehff8=",             // 0x72dcb18b67a17dff
		types.ChecksumAlgorithmXxhash128: "MxGUd+3l3NXpcWQnaB1YYA==", // 0x33119477ede5dcd5e9716427681d5860
	} {
		if got := checksumOf(alg, check); got != want {
			t.Errorf("checksumOf(%s, 123456789) = %s, want %s", alg, got, want)
		}
	}
}

func TestObjects(t *testing.T) {
	t.Parallel()
	testObjects(t, startServer(t))
}

// testObjects is TestObjects's body, which TestCluster runs against three nodes.
func testObjects(t *testing.T, ts s3Target) {
	c := ts.client(t)
	cw := ts.client(t, whenRequired)
	ctx := t.Context()
	b := mkBucket(t, c, "obj")

	t.Run("MetadataAndHeaders", func(t *testing.T) {
		expires := time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC)
		meta := map[string]string{"color": "blue", "multi-word-key": "Value With  Spaces"}
		in := &s3.PutObjectInput{
			Bucket: aws.String(b), Key: aws.String("meta"), Body: strings.NewReader("hello"),
			ContentType:        aws.String("text/plain; charset=utf-8"),
			ContentEncoding:    aws.String("gzip"),
			ContentDisposition: aws.String(`attachment; filename="a b.txt"`),
			ContentLanguage:    aws.String("de-DE"),
			CacheControl:       aws.String("max-age=60, private"),
			Expires:            aws.Time(expires),
			Metadata:           map[string]string{"Color": "blue", "Multi-Word-Key": "Value With  Spaces"},
		}
		pout, err := c.PutObject(ctx, in)
		if err != nil {
			t.Fatalf("PutObject: %v", err)
		}
		if aws.ToString(pout.ETag) != quoted(md5Hex([]byte("hello"))) {
			t.Errorf("PutObject ETag %s, want %s", aws.ToString(pout.ETag), quoted(md5Hex([]byte("hello"))))
		}
		type hdrs struct {
			ct, ce, cd, cl, cc, exp, etag string
			meta                          map[string]string
			size                          int64
			lm                            *time.Time
		}
		want := hdrs{"text/plain; charset=utf-8", "gzip", `attachment; filename="a b.txt"`, "de-DE", "max-age=60, private",
			expires.Format(http.TimeFormat), quoted(md5Hex([]byte("hello"))), meta, 5, nil}
		check := func(op string, got hdrs) {
			t.Helper()
			if got.lm == nil || time.Since(*got.lm) > time.Minute || time.Until(*got.lm) > 2*time.Second {
				t.Errorf("%s: Last-Modified %v, want about now", op, got.lm)
			}
			got.lm = nil
			if !maps.Equal(got.meta, want.meta) {
				t.Errorf("%s: metadata %q, want %q", op, got.meta, want.meta)
			}
			got.meta = want.meta
			if got.ct != want.ct || got.ce != want.ce || got.cd != want.cd || got.cl != want.cl || got.cc != want.cc ||
				got.exp != want.exp || got.etag != want.etag || got.size != want.size {
				t.Errorf("%s: headers\n%+v\nwant\n%+v", op, got, want)
			}
		}
		h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String("meta")})
		if err != nil {
			t.Fatalf("HeadObject: %v", err)
		}
		check("HeadObject", hdrs{aws.ToString(h.ContentType), aws.ToString(h.ContentEncoding), aws.ToString(h.ContentDisposition),
			aws.ToString(h.ContentLanguage), aws.ToString(h.CacheControl), aws.ToString(h.ExpiresString), aws.ToString(h.ETag),
			h.Metadata, aws.ToInt64(h.ContentLength), h.LastModified})
		if aws.ToString(h.AcceptRanges) != "bytes" {
			t.Errorf("HeadObject Accept-Ranges %q, want bytes", aws.ToString(h.AcceptRanges))
		}
		g, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String("meta")})
		if err != nil {
			t.Fatalf("GetObject: %v", err)
		}
		g.Body.Close()
		check("GetObject", hdrs{aws.ToString(g.ContentType), aws.ToString(g.ContentEncoding), aws.ToString(g.ContentDisposition),
			aws.ToString(g.ContentLanguage), aws.ToString(g.CacheControl), aws.ToString(g.ExpiresString), aws.ToString(g.ETag),
			g.Metadata, aws.ToInt64(g.ContentLength), g.LastModified})
	})

	t.Run("MetadataTooLarge", func(t *testing.T) {
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("bigmeta"), Body: strings.NewReader("x"),
			Metadata: map[string]string{"big": strings.Repeat("v", 2100)}})
		wantErr(t, "PutObject with 2 KiB of user metadata", err, "MetadataTooLarge", 400)
	})

	t.Run("ContentMD5", func(t *testing.T) {
		body := []byte("content md5 body")
		sum := md5.Sum(body)
		good := base64.StdEncoding.EncodeToString(sum[:])
		for _, cl := range []*s3.Client{c, cw} {
			if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("md5"), Body: bytes.NewReader(body), ContentMD5: aws.String(good)}); err != nil {
				t.Errorf("PutObject with the right Content-MD5: %v", err)
			}
			other := md5.Sum([]byte("something else"))
			_, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("md5-bad"), Body: bytes.NewReader(body),
				ContentMD5: aws.String(base64.StdEncoding.EncodeToString(other[:]))})
			wantErr(t, "PutObject with a wrong Content-MD5", err, "BadDigest", 400)
			_, err = cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("md5-bad"), Body: bytes.NewReader(body),
				ContentMD5: aws.String("not base64!")})
			wantErr(t, "PutObject with a malformed Content-MD5", err, "InvalidDigest", 400)
		}
		_, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String("md5-bad")})
		wantErr(t, "HeadObject after rejected PUTs", err, "NotFound", 404)
	})

	t.Run("Checksums", func(t *testing.T) {
		for _, size := range []int{0, 1000, 300 * kib, 3*mib + 17} {
			body := randBytes(size)
			for _, alg := range allAlgorithms {
				key := "ck-" + string(alg)
				in := &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(key), Body: bytes.NewReader(body)}
				clientChecksum(in, alg, body)
				out, err := cw.PutObject(ctx, in)
				if err != nil {
					t.Errorf("PutObject %d bytes with %s: %v", size, alg, err)
					continue
				}
				want := checksumOf(alg, body)
				if got := outputChecksum(alg, out); got != want || out.ChecksumType != types.ChecksumTypeFullObject {
					t.Errorf("PutObject %d bytes %s: response checksum %q type %q, want %q FULL_OBJECT", size, alg, got, out.ChecksumType, want)
				}
				h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String(key), ChecksumMode: types.ChecksumModeEnabled})
				if err != nil {
					t.Fatalf("HeadObject: %v", err)
				}
				if got := outputChecksum(alg, h); got != want {
					t.Errorf("HeadObject %d bytes %s ChecksumMode=ENABLED: checksum %q, want %q", size, alg, got, want)
				}
				if h.ChecksumType != types.ChecksumTypeFullObject {
					t.Errorf("HeadObject %s: ChecksumType %q, want FULL_OBJECT", alg, h.ChecksumType)
				}
				g, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String(key), ChecksumMode: types.ChecksumModeEnabled})
				if err != nil {
					t.Fatalf("GetObject: %v", err)
				}
				var buf bytes.Buffer
				_, err = buf.ReadFrom(g.Body) // the SDK validates the checksums it computes while reading
				g.Body.Close()
				if err != nil {
					t.Errorf("GetObject %d bytes %s: read: %v", size, alg, err)
				}
				checkBody(t, "GetObject "+string(alg), buf.Bytes(), body)
				if got := outputChecksum(alg, g); got != want || g.ChecksumType != types.ChecksumTypeFullObject {
					t.Errorf("GetObject %d bytes %s ChecksumMode=ENABLED: checksum %q type %q, want %q FULL_OBJECT", size, alg, got, g.ChecksumType, want)
				}
				// Without ChecksumMode the checksum is not sent.
				h, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String(key)})
				if err == nil && outputChecksum(alg, h) != "" {
					t.Errorf("HeadObject %s without ChecksumMode returned a checksum", alg)
				}
			}
		}
	})

	t.Run("ChecksumMismatch", func(t *testing.T) {
		body := []byte("checksum mismatch body")
		other := []byte("another body")
		for _, alg := range allAlgorithms {
			in := &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("ck-bad"), Body: bytes.NewReader(body)}
			setChecksum(in, alg, checksumOf(alg, other))
			_, err := cw.PutObject(ctx, in)
			wantErr(t, "PutObject with a wrong x-amz-checksum-"+strings.ToLower(string(alg)), err, "BadDigest", 400)
		}
		_, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String("ck-bad")})
		wantErr(t, "HeadObject after rejected PUTs", err, "NotFound", 404)
	})

	t.Run("Sizes", func(t *testing.T) {
		for _, size := range []int{0, 1, 128 * kib, 128*kib + 1, mib, mib + 1, 20 * mib} {
			for name, cl := range map[string]*s3.Client{"default": c, "whenRequired": cw} {
				body := randBytes(size)
				key := "size/" + name
				out := put(t, cl, b, key, body)
				if aws.ToString(out.ETag) != quoted(md5Hex(body)) {
					t.Errorf("%s PutObject %d bytes: ETag %s, want %s", name, size, aws.ToString(out.ETag), quoted(md5Hex(body)))
				}
				checkBody(t, name+" GetObject", get(t, c, b, key), body)
				h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String(key)})
				if err != nil {
					t.Fatalf("HeadObject: %v", err)
				}
				if aws.ToInt64(h.ContentLength) != int64(size) || aws.ToString(h.ETag) != quoted(md5Hex(body)) {
					t.Errorf("HeadObject %d bytes: Content-Length %d ETag %s", size, aws.ToInt64(h.ContentLength), aws.ToString(h.ETag))
				}
			}
		}
	})

	t.Run("Overwrite", func(t *testing.T) {
		// Overwrite across the inline/block boundary both ways.
		for _, size := range []int{10, 3 * mib, 100, 2*mib + 5, 0} {
			body := randBytes(size)
			put(t, c, b, "overwrite", body)
			checkBody(t, "GetObject after overwrite", get(t, c, b, "overwrite"), body)
		}
	})

	t.Run("Keys", func(t *testing.T) {
		for _, k := range []string{"a//b", "/leading-slash", "dir/", "sp ace", "pct%2F", "ü", "dot/./seg", "x/../y", strings.Repeat("k", 1024)} {
			put(t, c, b, k, []byte(k))
			if got := get(t, c, b, k); string(got) != k {
				t.Errorf("GetObject(%.40q) = %.40q", k, got)
			}
		}
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(strings.Repeat("k", 1025)), Body: strings.NewReader("x")})
		wantErr(t, "PutObject with a 1025-byte key", err, "KeyTooLongError", 400)
	})

	t.Run("Delete", func(t *testing.T) {
		for _, size := range []int{10, 2 * mib} {
			put(t, c, b, "del", randBytes(size))
			if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String("del")}); err != nil {
				t.Fatalf("DeleteObject: %v", err)
			}
			_, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String("del")})
			wantErr(t, "GetObject after delete", err, "NoSuchKey", 404)
			_, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String("del")})
			wantErr(t, "HeadObject after delete", err, "NotFound", 404)
			if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String("del")}); err != nil {
				t.Errorf("DeleteObject of an absent key: %v", err)
			}
		}
	})
}
