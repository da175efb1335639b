package sigv4

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
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

// BenchmarkChunkedToFile decodes a streaming-signed upload as the server
// stores one: the encoded body arrives through a 4 KiB bufio.Reader (as
// net/http reads a connection) over a source that yields at most 16 KiB a
// read (loopback TCP segments), and each Read of the decoded body is
// written to a file through a 256 KiB buffer, as fsblob copies a blob.
// writes/op counts the file writes per body, cpu-ns/op the process's CPU
// time per body.
func BenchmarkChunkedToFile(b *testing.B) {
	for _, size := range []int{100 << 10, 1 << 20} {
		name := "size=100KiB"
		if size == 1<<20 {
			name = "size=1MiB"
		}
		b.Run(name, func(b *testing.B) {
			r, encoded := chunkedUpload(b, bytes.Repeat([]byte{'x'}, size), PayloadStreamingSigned, 64<<10)
			res, err := benchVerifier(0).Verify(r)
			if err != nil {
				b.Fatal(err)
			}
			f, err := os.Create(filepath.Join(b.TempDir(), "blob"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			rd := bytes.NewReader(encoded)
			br := bufio.NewReaderSize(nil, 4096)
			buf := make([]byte, 256<<10)
			writes := 0
			b.SetBytes(int64(size))
			b.ReportAllocs()
			cpu0 := processCPU(b)
			for b.Loop() {
				rd.Reset(encoded)
				br.Reset(&pieceReader{r: rd, max: 16 << 10})
				body, err := res.Body(io.NopCloser(br))
				if err != nil {
					b.Fatal(err)
				}
				var off int64
				for err == nil {
					var n int
					n, err = body.Read(buf)
					if n > 0 {
						if _, werr := f.WriteAt(buf[:n], off); werr != nil {
							b.Fatal(werr)
						}
						off += int64(n)
						writes++
					}
				}
				if err != io.EOF || off != int64(size) {
					b.Fatalf("decoded %d bytes, %v", off, err)
				}
			}
			b.ReportMetric(float64(writes)/float64(b.N), "writes/op")
			b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// pieceReader returns at most max bytes a read.
type pieceReader struct {
	r   io.Reader
	max int
}

func (p *pieceReader) Read(b []byte) (int, error) {
	if len(b) > p.max {
		b = b[:p.max]
	}
	return p.r.Read(b)
}
