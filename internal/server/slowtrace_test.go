package server

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/coffer-s3/coffer/internal/config"
)

// slowBody yields its bytes after a pause, so that the PUT carrying it
// takes at least that long.
type slowBody struct {
	pause time.Duration
	r     io.Reader
}

func (b *slowBody) Read(p []byte) (int, error) {
	if b.pause > 0 {
		time.Sleep(b.pause)
		b.pause = 0
	}
	return b.r.Read(p)
}

// TestPprofSlowRequest: GET /debug/pprof/slow waits for an S3 request over
// its threshold and answers with an execution trace naming it; 204 when
// none comes in time, 409 for a second capture at once, 400 for a bad
// parameter.
func TestPprofSlowRequest(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Pprof = config.Pprof{Enabled: true, Host: "127.0.0.1", Port: 0}
	s, _ := start(t, cfg, testLogger(io.Discard))
	root := aws.Credentials{AccessKeyID: cfg.Root.RootAccessKey, SecretAccessKey: cfg.Root.RootSecretKey}
	if st, body := signedDo(t, s, root, cfg.S3.Region, http.MethodPut, "/slowb", nil); st != http.StatusOK {
		t.Fatalf("CreateBucket: %d %s", st, body)
	}
	pprofURL := "http://" + s.PprofAddr() + "/debug/pprof/slow"

	if st, body := get(t, pprofURL+"?threshold=fast"); st != http.StatusBadRequest {
		t.Errorf("threshold=fast: %d %q, want 400", st, body)
	}

	type answer struct {
		status int
		hdr    http.Header
		body   []byte
	}
	captured := make(chan answer, 1)
	go func() {
		resp, err := client().Get(pprofURL + "?threshold=15ms&timeout=20s")
		if err != nil {
			captured <- answer{}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		captured <- answer{resp.StatusCode, resp.Header, b}
	}()
	// The capture is waiting once its watch is set; a second one is then
	// refused.
	for deadline := time.Now().Add(10 * time.Second); s.slow.watch.Load() == nil; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the capture did not start waiting within 10 s")
		}
	}
	if st, body := get(t, pprofURL+"?threshold=1m&timeout=1s"); st != http.StatusConflict {
		t.Errorf("a second capture answered %d %q, want 409 while the first waits", st, body)
	}

	// PUTs whose bodies arrive after 30 ms, until the capture answers.
	var got answer
	for got.status == 0 {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, "http://"+s.Addr()+"/slowb/slow-key",
			&slowBody{pause: 30 * time.Millisecond, r: strings.NewReader("slow")})
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = 4
		req.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
		if err := v4.NewSigner().SignHTTP(t.Context(), root, req, "UNSIGNED-PAYLOAD", "s3", cfg.S3.Region, time.Now()); err != nil {
			t.Fatal(err)
		}
		resp, err := client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("slow PUT: %d", resp.StatusCode)
		}
		select {
		case got = <-captured:
		case <-time.After(50 * time.Millisecond):
		}
	}
	if got.status != http.StatusOK {
		t.Fatalf("capture: %d %q, want 200 with a trace", got.status, got.body)
	}
	if h := got.hdr.Get("X-Coffer-Slow-Request"); !strings.HasPrefix(h, "PUT /slowb/slow-key ") {
		t.Errorf("X-Coffer-Slow-Request = %q, want the slow PUT", h)
	}
	if !bytes.HasPrefix(got.body, []byte("go 1.")) || !bytes.Contains(got.body, []byte("s3 PUT")) {
		t.Errorf("capture body (%d bytes) is not an execution trace with the request's task", len(got.body))
	}

	// Nothing that slow within the timeout: 204.
	if st, _ := get(t, pprofURL+"?threshold=1m&timeout=1s"); st != http.StatusNoContent {
		t.Errorf("capture with nothing slow: %d, want 204", st)
	}
}
