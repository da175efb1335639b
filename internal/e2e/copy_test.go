package e2e

import (
	"bytes"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// s3Escape percent-encodes s as botocore does for x-amz-copy-source:
// everything but unreserved characters and '/'.
func s3Escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if 'a' <= ch && ch <= 'z' || 'A' <= ch && ch <= 'Z' || '0' <= ch && ch <= '9' || strings.IndexByte("-_.~/", ch) >= 0 {
			b.WriteByte(ch)
		} else {
			fmt.Fprintf(&b, "%%%02X", ch)
		}
	}
	return b.String()
}

// copySource returns the x-amz-copy-source value of bucket/key.
func copySource(bucket, key string) *string { return aws.String(bucket + "/" + s3Escape(key)) }

func TestCopyObject(t *testing.T) {
	t.Parallel()
	testCopyObject(t, startServer(t))
}

// testCopyObject is TestCopyObject's body, which TestCluster runs against three nodes.
func testCopyObject(t *testing.T, ts s3Target) {
	c := ts.client(t)
	ctx := t.Context()
	b := mkBucket(t, c, "copy")
	b2 := mkBucket(t, c, "copy-dst")

	srcBody := []byte("copy source body")
	srcMeta := map[string]string{"origin": "source", "n": "1"}
	_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("src"), Body: bytes.NewReader(srcBody),
		ContentType: aws.String("text/x-source"), CacheControl: aws.String("max-age=1"), Metadata: srcMeta})
	if err != nil {
		t.Fatalf("PutObject: %v", err)
	}
	src, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String("src")})
	if err != nil {
		t.Fatalf("HeadObject: %v", err)
	}
	etag, lm := aws.ToString(src.ETag), *src.LastModified

	head := func(t *testing.T, bucket, key string) *s3.HeadObjectOutput {
		t.Helper()
		h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if err != nil {
			t.Fatalf("HeadObject(%s/%s): %v", bucket, key, err)
		}
		return h
	}

	t.Run("COPY", func(t *testing.T) {
		out, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(b2), Key: aws.String("dst"), CopySource: copySource(b, "src")})
		if err != nil {
			t.Fatalf("CopyObject: %v", err)
		}
		if out.CopyObjectResult == nil || aws.ToString(out.CopyObjectResult.ETag) != etag || out.CopyObjectResult.LastModified == nil {
			t.Errorf("CopyObjectResult %+v, want ETag %s and a LastModified", out.CopyObjectResult, etag)
		}
		h := head(t, b2, "dst")
		if aws.ToString(h.ContentType) != "text/x-source" || aws.ToString(h.CacheControl) != "max-age=1" || !maps.Equal(h.Metadata, srcMeta) {
			t.Errorf("copy: Content-Type %q Cache-Control %q metadata %q; want the source's", aws.ToString(h.ContentType), aws.ToString(h.CacheControl), h.Metadata)
		}
		if aws.ToString(h.ETag) != etag {
			t.Errorf("copy ETag %s, want the source's %s", aws.ToString(h.ETag), etag)
		}
		checkBody(t, "copy", get(t, c, b2, "dst"), srcBody)
	})

	t.Run("REPLACE", func(t *testing.T) {
		_, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(b), Key: aws.String("replaced"), CopySource: copySource(b, "src"),
			MetadataDirective: types.MetadataDirectiveReplace, ContentType: aws.String("application/x-new"), Metadata: map[string]string{"fresh": "yes"}})
		if err != nil {
			t.Fatalf("CopyObject REPLACE: %v", err)
		}
		h := head(t, b, "replaced")
		if aws.ToString(h.ContentType) != "application/x-new" || !maps.Equal(h.Metadata, map[string]string{"fresh": "yes"}) || aws.ToString(h.CacheControl) != "" {
			t.Errorf("REPLACE: Content-Type %q metadata %q Cache-Control %q; want application/x-new, {fresh: yes}, none",
				aws.ToString(h.ContentType), h.Metadata, aws.ToString(h.CacheControl))
		}
		checkBody(t, "copy", get(t, c, b, "replaced"), srcBody)
	})

	t.Run("ontoItself", func(t *testing.T) {
		put(t, c, b, "self", []byte("self body"))
		_, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(b), Key: aws.String("self"), CopySource: copySource(b, "self")})
		wantErr(t, "CopyObject onto itself without REPLACE", err, "InvalidRequest", 400)
		_, err = c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(b), Key: aws.String("self"), CopySource: copySource(b, "self"),
			MetadataDirective: types.MetadataDirectiveReplace, Metadata: map[string]string{"v": "2"}})
		if err != nil {
			t.Fatalf("CopyObject onto itself with REPLACE: %v", err)
		}
		if h := head(t, b, "self"); !maps.Equal(h.Metadata, map[string]string{"v": "2"}) {
			t.Errorf("metadata after self-copy %q, want {v: 2}", h.Metadata)
		}
		checkBody(t, "self copy", get(t, c, b, "self"), []byte("self body"))
	})

	t.Run("conditions", func(t *testing.T) {
		early, late := lm.Add(-time.Hour), lm.Add(time.Hour)
		cases := []struct {
			name string
			in   s3.CopyObjectInput
			ok   bool
		}{
			{"if-match", s3.CopyObjectInput{CopySourceIfMatch: aws.String(etag)}, true},
			{"if-match wrong", s3.CopyObjectInput{CopySourceIfMatch: aws.String(`"00"`)}, false},
			{"if-none-match etag", s3.CopyObjectInput{CopySourceIfNoneMatch: aws.String(etag)}, false},
			{"if-none-match other", s3.CopyObjectInput{CopySourceIfNoneMatch: aws.String(`"00"`)}, true},
			{"if-modified-since earlier", s3.CopyObjectInput{CopySourceIfModifiedSince: &early}, true},
			{"if-modified-since later", s3.CopyObjectInput{CopySourceIfModifiedSince: &late}, false},
			{"if-unmodified-since earlier", s3.CopyObjectInput{CopySourceIfUnmodifiedSince: &early}, false},
			{"if-unmodified-since later", s3.CopyObjectInput{CopySourceIfUnmodifiedSince: &late}, true},
			{"if-match true + if-unmodified-since false", s3.CopyObjectInput{CopySourceIfMatch: aws.String(etag), CopySourceIfUnmodifiedSince: &early}, true},
			{"if-none-match false + if-modified-since true", s3.CopyObjectInput{CopySourceIfNoneMatch: aws.String(etag), CopySourceIfModifiedSince: &early}, false},
		}
		for i, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				in := tc.in
				dst := fmt.Sprintf("cond-%d", i)
				in.Bucket, in.Key, in.CopySource = aws.String(b), aws.String(dst), copySource(b, "src")
				_, err := c.CopyObject(ctx, &in)
				if tc.ok {
					if err != nil {
						t.Fatalf("CopyObject: %v", err)
					}
					checkBody(t, "copy", get(t, c, b, dst), srcBody)
					return
				}
				wantErr(t, "CopyObject", err, "PreconditionFailed", 412)
				_, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String(dst)})
				wantErr(t, "HeadObject of the refused copy", err, "NotFound", 404)
			})
		}
	})

	t.Run("largeAndSpecialKey", func(t *testing.T) {
		big := randBytes(20*mib + 3)
		const key = "dir/with space+plus ü%.bin"
		put(t, c, b, key, big)
		out, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(b2), Key: aws.String("big copy"), CopySource: copySource(b, key)})
		if err != nil {
			t.Fatalf("CopyObject of 20 MiB: %v", err)
		}
		if out.CopyObjectResult == nil || aws.ToString(out.CopyObjectResult.ETag) != quoted(md5Hex(big)) {
			t.Errorf("CopyObjectResult %+v, want ETag %s", out.CopyObjectResult, quoted(md5Hex(big)))
		}
		checkBody(t, "large copy", get(t, c, b2, "big copy"), big)
		// The source stays, and overwriting it does not change the copy.
		put(t, c, b, key, []byte("new"))
		checkBody(t, "copy after source overwrite", get(t, c, b2, "big copy"), big)
	})

	t.Run("checksumAlgorithm", func(t *testing.T) {
		for _, alg := range allAlgorithms {
			out, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(b), Key: aws.String("ck"), CopySource: copySource(b, "src"),
				ChecksumAlgorithm: alg})
			if err != nil {
				t.Fatalf("CopyObject with x-amz-checksum-algorithm %s: %v", alg, err)
			}
			want := checksumOf(alg, srcBody)
			if r := out.CopyObjectResult; r == nil || outputChecksum(alg, r) != want || r.ChecksumType != types.ChecksumTypeFullObject {
				t.Errorf("CopyObject with %s: result %+v, want Checksum%s %q FULL_OBJECT", alg, r, alg, want)
			}
			h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String("ck"), ChecksumMode: types.ChecksumModeEnabled})
			if err != nil {
				t.Fatalf("HeadObject: %v", err)
			}
			if got := outputChecksum(alg, h); got != want {
				t.Errorf("copy Checksum%s %q, want %q", alg, got, want)
			}
		}
	})

	t.Run("missingSource", func(t *testing.T) {
		_, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(b), Key: aws.String("x"), CopySource: copySource(b, "absent")})
		wantErr(t, "CopyObject of an absent key", err, "NoSuchKey", 404)
		_, err = c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(b), Key: aws.String("x"), CopySource: copySource("no-such-bucket-x", "k")})
		wantErr(t, "CopyObject from an absent bucket", err, "NoSuchBucket", 404)
		_, err = c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("no-such-bucket-y"), Key: aws.String("x"), CopySource: copySource(b, "src")})
		wantErr(t, "CopyObject into an absent bucket", err, "NoSuchBucket", 404)
	})
}
