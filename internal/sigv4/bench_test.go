package sigv4

import (
	"bytes"
	"io"
	"net/http"
	"testing"
	"time"
)

// benchGet is a typical SDK GetObject: a few signed headers and a query.
func benchGet(b *testing.B) *http.Request {
	c := newRequest(b, http.MethodGet, "http://bucket.localhost:6789/photos/2025/img_0001.jpg?versionId=3HL4kqtJlcpXroDTDmJ%2Bmmm", nil)
	c.Header.Set("Range", "bytes=0-1023")
	c.Header.Set("If-None-Match", `"0123456789abcdef"`)
	c.Header.Set("User-Agent", "aws-sdk-go-v2/1.30.0")
	SignRequest(c, testCred, "us-east-1", testTime, emptySHA256)
	return serverSide(b, c)
}

func benchVerifier(cacheSize int) *Verifier {
	return NewVerifier(Config{Clock: func() time.Time { return testTime }, CacheSize: cacheSize}, newKeyring(testCred))
}

func BenchmarkVerify(b *testing.B) {
	for _, bc := range []struct {
		name  string
		cache int
	}{{"cache=hit", 0}, {"cache=miss", -1}} {
		b.Run(bc.name, func(b *testing.B) {
			v := benchVerifier(bc.cache)
			r := benchGet(b)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Verify(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkVerifyPresigned(b *testing.B) {
	u, err := Presign(http.MethodGet, "http://bucket.localhost:6789/photos/2025/img_0001.jpg?versionId=3", testCred, "us-east-1", testTime, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	r := serverSide(b, newRequest(b, http.MethodGet, u, nil))
	v := benchVerifier(0)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Verify(r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRejectBadSignature(b *testing.B) {
	c := newRequest(b, http.MethodGet, "http://bucket.localhost:6789/photos/2025/img_0001.jpg", nil)
	SignRequest(c, testCred, "us-east-1", testTime, emptySHA256)
	flipSignature(c)
	r := serverSide(b, c)
	v := benchVerifier(0)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Verify(r); err == nil {
			b.Fatal("bad signature accepted")
		}
	}
}

func BenchmarkChunkedDecode(b *testing.B) {
	for _, bc := range []struct {
		name string
		mode PayloadMode
		size int
	}{
		{"mode=signed/size=64KiB", PayloadStreamingSigned, 64 << 10},
		{"mode=signed/size=8MiB", PayloadStreamingSigned, 8 << 20},
		{"mode=unsigned-trailer/size=8MiB", PayloadStreamingUnsignedTrailer, 8 << 20},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r, encoded := chunkedUpload(b, bytes.Repeat([]byte{'x'}, bc.size), bc.mode, 64<<10)
			res, err := benchVerifier(0).Verify(r)
			if err != nil {
				b.Fatal(err)
			}
			rd := bytes.NewReader(encoded)
			buf := make([]byte, 64<<10)
			b.SetBytes(int64(bc.size))
			b.ReportAllocs()
			for b.Loop() {
				rd.Reset(encoded)
				body, err := res.Body(io.NopCloser(rd))
				if err != nil {
					b.Fatal(err)
				}
				for err == nil {
					_, err = body.Read(buf)
				}
				if err != io.EOF {
					b.Fatal(err)
				}
			}
		})
	}
}
