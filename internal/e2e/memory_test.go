package e2e

import (
	"bufio"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coffer-s3/coffer/internal/sigv4"
)

// patternReader yields n deterministic bytes without holding them: a 1 MiB
// random block, rotated by one byte per MiB so that no two blocks of the
// stream are equal. Every byte read is also written to sum.
type patternReader struct {
	pat  []byte
	left int64
	pos  int64
	sum  hash.Hash
}

func newPatternReader(n int64) *patternReader {
	return &patternReader{pat: randBytes(mib), left: n, sum: md5.New()}
}

func (r *patternReader) Read(p []byte) (int, error) {
	if r.left == 0 {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), r.left)]
	for done := 0; done < len(p); {
		blk := r.pos / mib
		i := (r.pos + blk) % mib
		// Up to the end of the pattern and of the current MiB of the stream.
		n := copy(p[done:min(len(p), done+int(mib-r.pos%mib))], r.pat[i:])
		done += n
		r.pos += int64(n)
	}
	r.left -= int64(len(p))
	r.sum.Write(p)
	return len(p), nil
}

// procStatusKB returns the named "kB" fields of /proc/pid/status.
func procStatusKB(pid int, names ...string) (map[string]int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		for _, want := range names {
			if name == want {
				v, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
				if err != nil {
					return nil, fmt.Errorf("%s: %q: %v", name, rest, err)
				}
				out[name] = v
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for _, want := range names {
		if _, ok := out[want]; !ok {
			return nil, fmt.Errorf("/proc/%d/status has no %s", pid, want)
		}
	}
	return out, nil
}

// TestMemoryBound streams a 256 MiB object through a `coffer serve` child
// process, up and down, and checks that the server's peak resident set
// (VmHWM) stays bounded: the server must stream, not buffer objects.
//
// Measured on the development machine (2 cores, fs blob store, default 8 MiB
// blocks): VmRSS about 24 MiB when idle after start-up, VmHWM 25.0-25.4 MiB
// after the PUT and the GET. The bound, memoryBoundMiB, is about 2.5 times
// that: room for GC pacing and other machines, but far below what
// buffering even a few blocks per request, let alone the object, would
// take.
func TestMemoryBound(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 512 MiB through a child process")
	}
	const (
		size           = 256 * mib
		memoryBoundMiB = 64
	)
	srv := startChild(t, t.TempDir())
	pid := srv.cmd.Process.Pid
	base, err := procStatusKB(pid, "VmRSS", "VmHWM")
	if err != nil {
		t.Fatal(err)
	}

	// Sample VmRSS while the transfers run; VmHWM is the kernel's own peak.
	var (
		mu      sync.Mutex
		peakRSS int64
	)
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			if st, err := procStatusKB(pid, "VmRSS"); err == nil {
				mu.Lock()
				peakRSS = max(peakRSS, st["VmRSS"])
				mu.Unlock()
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-sampled
	}()

	hc := newHTTPClient()
	const b = "memory"
	if resp, body := do(t, hc, rawReq{method: "PUT", target: "/" + b}.build(t, srv.endpoint)); resp.StatusCode != http.StatusOK {
		t.Fatalf("CreateBucket: %d %s", resp.StatusCode, body)
	}

	start := time.Now()
	gen := newPatternReader(size)
	req, err := http.NewRequestWithContext(t.Context(), "PUT", srv.endpoint+"/"+b+"/big", gen)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = size
	sigv4.SignRequest(req, testCreds, testRegion, time.Now(), "UNSIGNED-PAYLOAD")
	resp, body := do(t, hc, req)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT of %d bytes: %d %s", size, resp.StatusCode, body)
	}
	wantMD5 := hex.EncodeToString(gen.sum.Sum(nil))
	if etag := resp.Header.Get("ETag"); etag != quoted(wantMD5) {
		t.Errorf("PUT ETag %s, want %s", etag, quoted(wantMD5))
	}
	putTime := time.Since(start)

	start = time.Now()
	req = rawReq{method: "GET", target: "/" + b + "/big"}.build(t, srv.endpoint)
	gresp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("GET: %v", err)
	}
	h := md5.New()
	n, err := io.Copy(h, gresp.Body)
	gresp.Body.Close()
	if err != nil || gresp.StatusCode != http.StatusOK {
		t.Fatalf("GET: status %d, %d bytes, %v", gresp.StatusCode, n, err)
	}
	if n != size || hex.EncodeToString(h.Sum(nil)) != wantMD5 {
		t.Errorf("GET returned %d bytes with MD5 %x, want %d bytes with MD5 %s", n, h.Sum(nil), int64(size), wantMD5)
	}
	getTime := time.Since(start)

	close(stop)
	<-sampled
	end, err := procStatusKB(pid, "VmRSS", "VmHWM")
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	peak := peakRSS
	mu.Unlock()
	t.Logf("coffer serve RSS: at start %d KiB (VmHWM %d KiB); sampled peak VmRSS %d KiB; VmHWM after PUT+GET of %d MiB %d KiB; PUT %v, GET %v",
		base["VmRSS"], base["VmHWM"], peak, size/mib, end["VmHWM"], putTime.Round(time.Millisecond), getTime.Round(time.Millisecond))
	if end["VmHWM"] > memoryBoundMiB*1024 {
		t.Errorf("coffer serve peak RSS (VmHWM) %d KiB after streaming %d MiB up and down, want under %d MiB", end["VmHWM"], size/mib, memoryBoundMiB)
	}
}

// TestMemoryLimitSetting: --memory-limit sets the Go runtime's soft limit,
// over GOMEMLIMIT and the cgroup's.
func TestMemoryLimitSetting(t *testing.T) {
	t.Parallel()
	srv := startChild(t, t.TempDir(), "--memory-limit", "96MiB")
	srv.stop()
	if out := srv.out.String(); !strings.Contains(out, `msg="Go memory limit set" limit_bytes=100663296 reason=memory-limit`) {
		t.Errorf("no log line for the memory limit:\n%s", tail(out, 4*kib))
	}
}
