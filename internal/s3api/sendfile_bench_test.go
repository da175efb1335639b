//go:build unix

package s3api

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/coffer-s3/coffer/internal/httprec"
)

// BenchmarkSendFile measures what a GET of a block object costs between
// the handler and the socket: a real http.Server on loopback answers each
// request through responseWriter.ReadFrom with an io.LimitedReader over an
// *os.File, as fsblob's Reader hands it down, and a keep-alive client
// drains the body. The file stays open, so the open and the metadata read
// of a real GET are not measured. Client and server share the process, so
// cpu-ns/op (user + system time of the process per request, which other
// load on the machine does not inflate as it does ns/op) counts both, and
// compares between runs of this benchmark only.
func BenchmarkSendFile(b *testing.B) {
	for _, size := range []int{1 << 10, 100 << 10, 1 << 20} {
		b.Run("size="+sizeName(size), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "blob")
			if err := os.WriteFile(path, bytes.Repeat([]byte{'x'}, size), 0o600); err != nil {
				b.Fatal(err)
			}
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				rw := &httprec.Writer{ResponseWriter: w}
				rw.Header().Set("Content-Type", "binary/octet-stream")
				rw.Header().Set("Content-Length", strconv.Itoa(size))
				rw.WriteHeader(http.StatusOK)
				if _, err := f.Seek(0, io.SeekStart); err != nil {
					panic(err)
				}
				if _, err := rw.ReadFrom(&io.LimitedReader{R: f, N: int64(size)}); err != nil {
					panic(err)
				}
			})}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			go srv.Serve(ln)
			defer srv.Close()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			url := "http://" + ln.Addr().String() + "/"
			buf := make([]byte, 256<<10)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			cpu0 := processCPU(b)
			for b.Loop() {
				resp, err := client.Get(url)
				if err != nil {
					b.Fatal(err)
				}
				n, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{resp.Body}, buf)
				resp.Body.Close()
				if err != nil || n != int64(size) {
					b.Fatalf("read %d bytes, %v; want %d", n, err, size)
				}
			}
			b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

func sizeName(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

// processCPU returns the user + system CPU time the process has used.
func processCPU(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkBodyToFile reads a PUT body of a non-streaming payload
// (UNSIGNED-PAYLOAD or a signed SHA-256: no aws-chunked decoder) as the
// server stores it: through exactReader, from a 4 KiB bufio.Reader (as
// net/http reads a connection) over a source that yields at most 16 KiB a
// read (loopback TCP segments), each Read written to a file through a
// 256 KiB buffer, as fsblob copies a blob. writes/op counts the file
// writes per body, cpu-ns/op the process's CPU time per body.
func BenchmarkBodyToFile(b *testing.B) {
	for _, size := range []int{100 << 10, 1 << 20} {
		b.Run("size="+sizeName(size), func(b *testing.B) {
			body := bytes.Repeat([]byte{'x'}, size)
			f, err := os.Create(filepath.Join(b.TempDir(), "blob"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			rd := bytes.NewReader(body)
			br := bufio.NewReaderSize(nil, 4096)
			buf := make([]byte, 256<<10)
			writes := 0
			b.SetBytes(int64(size))
			b.ReportAllocs()
			cpu0 := processCPU(b)
			for b.Loop() {
				rd.Reset(body)
				br.Reset(&pieceReader{r: rd, max: 16 << 10})
				er := &exactReader{r: br, n: int64(size)}
				var off int64
				for {
					n, err := er.Read(buf)
					if n > 0 {
						if _, werr := f.WriteAt(buf[:n], off); werr != nil {
							b.Fatal(werr)
						}
						off += int64(n)
						writes++
					}
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				if off != int64(size) {
					b.Fatalf("read %d bytes, want %d", off, size)
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
