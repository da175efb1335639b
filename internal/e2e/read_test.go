package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// wantStatus fails unless err carries the HTTP status (for HEAD and 304
// responses, which have no body and so no reliable error code).
func wantStatus(t *testing.T, what string, err error, status int) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: succeeded, want HTTP %d", what, status)
		return
	}
	if got := errStatus(err); got != status {
		t.Errorf("%s: HTTP status %d, want %d (error: %v)", what, got, status, err)
	}
}

func TestRanges(t *testing.T) {
	t.Parallel()
	testRanges(t, startServer(t))
}

// testRanges is TestRanges's body, which TestCluster runs against three nodes.
func testRanges(t *testing.T, ts s3Target) {
	c := ts.client(t)
	ctx := t.Context()
	b := mkBucket(t, c, "range")
	const size = 20 * mib
	big := randBytes(size)
	put(t, c, b, "big", big)
	small := randBytes(1000)
	put(t, c, b, "small", small)
	put(t, c, b, "empty", nil)

	cases := []struct {
		key, rng   string
		first, end int64 // served bytes [first, end]; end < first for 416
		whole      bool  // the header is ignored: 200 and the whole object
	}{
		{key: "big", rng: "bytes=0-0", first: 0, end: 0},
		{key: "big", rng: "bytes=0-9", first: 0, end: 9},
		{key: "big", rng: "bytes=1048570-3145740", first: 1048570, end: 3145740},
		{key: "big", rng: "bytes=1048576-2097151", first: 1048576, end: 2097151},
		{key: "big", rng: "bytes=20971000-", first: 20971000, end: size - 1},
		{key: "big", rng: "bytes=-100", first: size - 100, end: size - 1},
		{key: "big", rng: "bytes=-30000000", first: 0, end: size - 1},
		{key: "big", rng: "bytes=20971000-99999999", first: 20971000, end: size - 1},
		{key: "big", rng: fmt.Sprintf("bytes=%d-", size), first: 1, end: 0},
		{key: "big", rng: "bytes=30000000-30000010", first: 1, end: 0},
		{key: "big", rng: "bytes=abc", whole: true},
		{key: "small", rng: "bytes=10-19", first: 10, end: 19},
		{key: "small", rng: "bytes=-1", first: 999, end: 999},
		{key: "small", rng: "bytes=999-", first: 999, end: 999},
		{key: "small", rng: "bytes=1000-", first: 1, end: 0},
		{key: "empty", rng: "bytes=0-0", first: 1, end: 0},
		{key: "empty", rng: "bytes=-5", first: 1, end: 0},
	}
	for _, tc := range cases {
		t.Run(tc.key+"/"+tc.rng, func(t *testing.T) {
			full := map[string][]byte{"big": big, "small": small, "empty": nil}[tc.key]
			out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String(tc.key), Range: aws.String(tc.rng)})
			if !tc.whole && tc.end < tc.first {
				wantErr(t, "GetObject", err, "InvalidRange", 416)
				if err == nil {
					out.Body.Close()
				}
				_, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String(tc.key), Range: aws.String(tc.rng)})
				wantStatus(t, "HeadObject", err, 416)
				return
			}
			if err != nil {
				t.Fatalf("GetObject: %v", err)
			}
			defer out.Body.Close()
			got, err := io.ReadAll(out.Body)
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			if tc.whole {
				checkBody(t, "body", got, full)
				if out.ContentRange != nil {
					t.Errorf("Content-Range %q for an ignored Range header", *out.ContentRange)
				}
				return
			}
			checkBody(t, "body", got, full[tc.first:tc.end+1])
			wantCR := fmt.Sprintf("bytes %d-%d/%d", tc.first, tc.end, len(full))
			if aws.ToString(out.ContentRange) != wantCR {
				t.Errorf("Content-Range %q, want %q", aws.ToString(out.ContentRange), wantCR)
			}
			if aws.ToInt64(out.ContentLength) != tc.end-tc.first+1 {
				t.Errorf("Content-Length %d, want %d", aws.ToInt64(out.ContentLength), tc.end-tc.first+1)
			}
			h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String(tc.key), Range: aws.String(tc.rng)})
			if err != nil {
				t.Fatalf("HeadObject with Range: %v", err)
			}
			if aws.ToInt64(h.ContentLength) != tc.end-tc.first+1 || aws.ToString(h.ContentRange) != wantCR {
				t.Errorf("HeadObject with Range: Content-Length %d Content-Range %q, want %d %q",
					aws.ToInt64(h.ContentLength), aws.ToString(h.ContentRange), tc.end-tc.first+1, wantCR)
			}
		})
	}

	t.Run("partNumber single-part object", func(t *testing.T) {
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String("small"), PartNumber: aws.Int32(1)})
		if err != nil {
			t.Fatalf("GetObject partNumber=1: %v", err)
		}
		got, _ := io.ReadAll(out.Body)
		out.Body.Close()
		checkBody(t, "partNumber=1 of a single-part object", got, small)
		_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String("small"), PartNumber: aws.Int32(2)})
		wantErr(t, "GetObject partNumber=2 of a single-part object", err, "InvalidPartNumber", 416)
		_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String("small"), PartNumber: aws.Int32(1), Range: aws.String("bytes=0-1")})
		wantErr(t, "GetObject with both partNumber and Range", err, "InvalidRequest", 400)
	})

	t.Run("responseOverrides", func(t *testing.T) {
		exp := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
		out, err := c.GetObject(ctx, &s3.GetObjectInput{
			Bucket: aws.String(b), Key: aws.String("small"),
			ResponseContentType:        aws.String("application/x-override"),
			ResponseContentLanguage:    aws.String("fr-CA"),
			ResponseExpires:            aws.Time(exp),
			ResponseCacheControl:       aws.String("no-cache"),
			ResponseContentDisposition: aws.String(`inline; filename="ö.bin"`),
			ResponseContentEncoding:    aws.String("identity"),
		})
		if err != nil {
			t.Fatalf("GetObject with response-* overrides: %v", err)
		}
		got, _ := io.ReadAll(out.Body)
		out.Body.Close()
		checkBody(t, "body", got, small)
		for _, f := range []struct{ name, got, want string }{
			{"Content-Type", aws.ToString(out.ContentType), "application/x-override"},
			{"Content-Language", aws.ToString(out.ContentLanguage), "fr-CA"},
			{"Expires", aws.ToString(out.ExpiresString), exp.Format(http.TimeFormat)},
			{"Cache-Control", aws.ToString(out.CacheControl), "no-cache"},
			{"Content-Disposition", aws.ToString(out.ContentDisposition), `inline; filename="ö.bin"`},
			{"Content-Encoding", aws.ToString(out.ContentEncoding), "identity"},
		} {
			if f.got != f.want {
				t.Errorf("%s = %q, want %q", f.name, f.got, f.want)
			}
		}
	})
}

func TestReadConditions(t *testing.T) {
	t.Parallel()
	testReadConditions(t, startServer(t))
}

// testReadConditions is TestReadConditions's body, which TestCluster runs against three nodes.
func testReadConditions(t *testing.T, ts s3Target) {
	c := ts.client(t)
	ctx := t.Context()
	b := mkBucket(t, c, "cond")

	for _, size := range []int{100, 3 * mib} {
		body := randBytes(size)
		key := fmt.Sprintf("obj-%d", size)
		put(t, c, b, key, body)
		h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String(key)})
		if err != nil {
			t.Fatalf("HeadObject: %v", err)
		}
		etag := aws.ToString(h.ETag)
		lm := *h.LastModified // second precision, from the Last-Modified header
		hour := time.Hour
		type cond struct {
			ifMatch, ifNoneMatch string
			ifModSince, ifUnmod  *time.Time
		}
		at := func(d time.Duration) *time.Time { x := lm.Add(d); return &x }
		cases := []struct {
			name   string
			c      cond
			status int // 200, 304 or 412
		}{
			{"If-Match etag", cond{ifMatch: etag}, 200},
			{"If-Match unquoted etag", cond{ifMatch: strings.Trim(etag, `"`)}, 200},
			{"If-Match *", cond{ifMatch: "*"}, 200},
			{"If-Match wrong", cond{ifMatch: `"0123456789abcdef0123456789abcdef"`}, 412},
			{"If-None-Match etag", cond{ifNoneMatch: etag}, 304},
			{"If-None-Match *", cond{ifNoneMatch: "*"}, 304},
			{"If-None-Match other", cond{ifNoneMatch: `"0123456789abcdef0123456789abcdef"`}, 200},
			{"If-Modified-Since earlier", cond{ifModSince: at(-hour)}, 200},
			{"If-Modified-Since Last-Modified", cond{ifModSince: at(0)}, 304},
			{"If-Unmodified-Since earlier", cond{ifUnmod: at(-hour)}, 412},
			{"If-Unmodified-Since Last-Modified", cond{ifUnmod: at(0)}, 200},
			{"If-Unmodified-Since later", cond{ifUnmod: at(hour)}, 200},
			{"If-Match true + If-Unmodified-Since false", cond{ifMatch: etag, ifUnmod: at(-hour)}, 200},
			{"If-Match false + If-Unmodified-Since true", cond{ifMatch: `"00"`, ifUnmod: at(hour)}, 412},
			{"If-None-Match false + If-Modified-Since true", cond{ifNoneMatch: etag, ifModSince: at(-hour)}, 304},
			{"If-None-Match true + If-Modified-Since false", cond{ifNoneMatch: `"00"`, ifModSince: at(0)}, 200},
			{"If-Match false + If-None-Match true", cond{ifMatch: `"00"`, ifNoneMatch: `"00"`}, 412},
		}
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%d/%s", size, tc.name), func(t *testing.T) {
				gin := &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String(key), IfModifiedSince: tc.c.ifModSince, IfUnmodifiedSince: tc.c.ifUnmod}
				hin := &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String(key), IfModifiedSince: tc.c.ifModSince, IfUnmodifiedSince: tc.c.ifUnmod}
				if tc.c.ifMatch != "" {
					gin.IfMatch, hin.IfMatch = aws.String(tc.c.ifMatch), aws.String(tc.c.ifMatch)
				}
				if tc.c.ifNoneMatch != "" {
					gin.IfNoneMatch, hin.IfNoneMatch = aws.String(tc.c.ifNoneMatch), aws.String(tc.c.ifNoneMatch)
				}
				out, err := c.GetObject(ctx, gin)
				_, herr := c.HeadObject(ctx, hin)
				switch tc.status {
				case 200:
					if err != nil {
						t.Fatalf("GetObject: %v, want 200", err)
					}
					got, _ := io.ReadAll(out.Body)
					out.Body.Close()
					checkBody(t, "GetObject", got, body)
					if herr != nil {
						t.Errorf("HeadObject: %v, want 200", herr)
					}
				case 304:
					wantStatus(t, "GetObject", err, 304)
					wantStatus(t, "HeadObject", herr, 304)
				case 412:
					wantErr(t, "GetObject", err, "PreconditionFailed", 412)
					wantStatus(t, "HeadObject", herr, 412)
				}
				if err == nil && tc.status != 200 {
					out.Body.Close()
				}
			})
		}
	}

	_, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String("absent"), IfMatch: aws.String("*")})
	wantErr(t, "GetObject If-Match:* of an absent key", err, "NoSuchKey", 404)
	_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String("absent"), IfNoneMatch: aws.String("*")})
	wantErr(t, "GetObject If-None-Match:* of an absent key", err, "NoSuchKey", 404)
}
