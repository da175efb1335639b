package s3blob_test

import (
	"bufio"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/coffer-s3/coffer/internal/blob/s3blob"
)

// sinkUpstream is a minimal S3 endpoint for measuring the store alone: it
// keeps bodies of up to 1 MiB (New's test blob), counts and discards larger
// ones, answers the MD5 of every body as its ETag, and serves sinkBigKey as bigSize bytes of the pattern, generated as
// it is sent. It understands just what the store sends: one bucket,
// path-style, plain or single-chunk aws-chunked bodies, no signatures.
type sinkUpstream struct {
	mu       sync.Mutex        // guards small, received
	small    map[string][]byte // path → body
	received int64             // bytes of large bodies discarded
}

const (
	sinkBigKey = "big"
	bigSize    = 64 << 20
)

func (u *sinkUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodHead && strings.Count(r.URL.Path, "/") == 1:
		return // HeadBucket
	case r.Method == http.MethodPut:
		body := io.Reader(r.Body)
		if r.Header.Get("Content-Encoding") == "aws-chunked" {
			br := bufio.NewReader(r.Body)
			line, _ := br.ReadString('\n')
			n, err := strconv.ParseInt(strings.TrimSpace(line), 16, 64)
			if err != nil {
				http.Error(w, "bad chunk", http.StatusBadRequest)
				return
			}
			body = io.LimitReader(br, n)
			defer io.Copy(io.Discard, br) // the final chunk and the trailer
		}
		size := r.ContentLength
		if dl := r.Header.Get("X-Amz-Decoded-Content-Length"); dl != "" {
			size, _ = strconv.ParseInt(dl, 10, 64)
		}
		h := md5.New()
		body = io.TeeReader(body, h)
		if size <= 1<<20 {
			p, err := io.ReadAll(body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			u.mu.Lock()
			u.small[r.URL.Path] = p
			u.mu.Unlock()
		} else {
			n, err := io.Copy(io.Discard, body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			u.mu.Lock()
			u.received += n
			u.mu.Unlock()
		}
		w.Header().Set("ETag", `"`+hex.EncodeToString(h.Sum(nil))+`"`)
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/"+sinkBigKey):
		w.Header().Set("Content-Length", strconv.Itoa(bigSize))
		io.Copy(w, &patternReader{n: bigSize})
	case r.Method == http.MethodGet:
		u.mu.Lock()
		p, ok := u.small[r.URL.Path]
		u.mu.Unlock()
		if !ok {
			writeS3Error(w, http.StatusNotFound, "NoSuchKey", "The specified key does not exist.")
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(p)))
		w.Write(p)
	case r.Method == http.MethodDelete:
		u.mu.Lock()
		delete(u.small, r.URL.Path)
		u.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	default:
		writeS3Error(w, http.StatusNotImplemented, "NotImplemented", r.Method+" "+r.URL.Path)
	}
}

// allocated returns the bytes allocated on the heap while f ran, by the
// whole process.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestStreaming checks that a 64 MiB Put and Get stream: the process,
// sink upstream included, allocates a small fraction of the blob. It is
// not parallel, so that no other test allocates meanwhile.
func TestStreaming(t *testing.T) {
	const limit = 8 << 20
	for _, mode := range []string{"", "MD5", "none"} {
		t.Run(modeName(mode), func(t *testing.T) {
			sink := &sinkUpstream{small: map[string][]byte{}}
			srv := httptest.NewServer(sink)
			t.Cleanup(srv.Close)
			s := newStore(t, s3blob.Config{
				Endpoint: srv.URL, Bucket: "b", AccessKey: "ak", SecretKey: "sk", PathStyle: true, Checksum: mode,
			})
			var err error
			put := allocated(func() {
				err = s.Put(t.Context(), "upload", &patternReader{n: bigSize}, bigSize)
			})
			if err != nil {
				t.Fatalf("Put(64 MiB) = %v", err)
			}
			if sink.received != bigSize {
				t.Fatalf("upstream received %d bytes, want %d", sink.received, bigSize)
			}
			var n int64
			get := allocated(func() {
				rc, gerr := s.Get(t.Context(), sinkBigKey, 0, -1)
				if gerr != nil {
					err = gerr
					return
				}
				defer rc.Close()
				n, err = io.Copy(io.Discard, rc)
			})
			if err != nil || n != bigSize {
				t.Fatalf("Get(64 MiB) read %d bytes, %v; want %d", n, err, bigSize)
			}
			t.Logf("allocated while streaming 64 MiB: Put %s, Get %s", mibs(put), mibs(get))
			if put > limit || get > limit {
				t.Errorf("allocated Put %s, Get %s for a 64 MiB blob; want at most %s each: is a body buffered?",
					mibs(put), mibs(get), mibs(limit))
			}
		})
	}
}

func mibs(n uint64) string { return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20)) }
