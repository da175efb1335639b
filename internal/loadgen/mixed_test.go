package loadgen

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coffer-s3/coffer/internal/s3err"
	"github.com/coffer-s3/coffer/internal/sigv4"
)

// fakeS3 is a minimal in-memory S3 endpoint: one level of buckets and
// objects, path style, ListObjectsV2 in pages of 100. It verifies the
// signature and the body of every request signed with the key AK/SK (the
// bad-signature operation's are answered SignatureDoesNotMatch) and counts
// the payload modes of uploads.
type fakeS3 struct {
	t          *testing.T
	v          *sigv4.Verifier
	mu         sync.Mutex
	payloads   map[string]int              // payload mode of PUT requests → count
	buckets    map[string]map[string]int64 // bucket → key → size
	requests   map[string]int              // by method
	parts      map[string]int64            // multipart upload → bytes
	uploads    int
	onObject   func(size int64) // called with the size of every object stored
	denyCreate bool             // CreateBucket answers InvalidAccessKeyId
	denyDrop   bool             // DeleteBucket answers AccessDenied
	failGets   bool             // GET object answers InternalError
	acceptBad  bool             // serve requests with a wrong signature
}

func newFake(t *testing.T) (*fakeS3, *httptest.Server) {
	f := &fakeS3{t: t, buckets: map[string]map[string]int64{}, requests: map[string]int{}, parts: map[string]int64{},
		payloads: map[string]int{}, v: sigv4.NewVerifier(sigv4.Config{}, fakeKeys{})}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func s3error(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, "<Error><Code>%s</Code><Message>fake %s</Message></Error>", code, code)
}

func (f *fakeS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	res, err := f.v.Verify(r)
	f.mu.Lock()
	acceptBad := f.acceptBad
	f.mu.Unlock()
	var body []byte
	switch {
	case s3err.Is(err, s3err.SignatureDoesNotMatch) && acceptBad:
		body, _ = io.ReadAll(r.Body)
		res = &sigv4.Result{}
	case s3err.Is(err, s3err.SignatureDoesNotMatch):
		s3error(w, http.StatusForbidden, "SignatureDoesNotMatch")
		return
	case err != nil || res.Anonymous:
		f.t.Errorf("%s %s: not signed: %v", r.Method, r.URL, err)
		return
	default:
		rb, err := res.Body(r.Body)
		if err != nil {
			f.t.Fatal(err)
		}
		if body, err = io.ReadAll(rb); err != nil {
			// A body cut off is the client going away: a run that ends
			// (cancelled, or too many errors) abandons its requests.
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				f.t.Errorf("%s %s: read body: %v", r.Method, r.URL, err)
			}
			return
		}
		if want := rb.Trailer("x-amz-checksum-crc32"); want != "" && want != crc32Base64(body) {
			f.t.Errorf("%s %s: CRC32 trailer %s, body's %s", r.Method, r.URL, want, crc32Base64(body))
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests[r.Method]++
	if r.Method == http.MethodPut && key != "" {
		f.payloads[res.Payload.String()]++
	}
	objs, ok := f.buckets[bucket]
	switch {
	case key == "" && r.Method == http.MethodPut:
		if f.denyCreate {
			s3error(w, http.StatusForbidden, "InvalidAccessKeyId")
			return
		}
		f.buckets[bucket] = map[string]int64{}
	case !ok:
		s3error(w, http.StatusNotFound, "NoSuchBucket")
	case key == "" && r.Method == http.MethodDelete:
		if f.denyDrop {
			s3error(w, http.StatusForbidden, "AccessDenied")
			return
		}
		if len(objs) > 0 {
			s3error(w, http.StatusConflict, "BucketNotEmpty")
			return
		}
		delete(f.buckets, bucket)
		w.WriteHeader(http.StatusNoContent)
	case key == "" && r.Method == http.MethodGet:
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range objs {
				if !yield(k) {
					return
				}
			}
		})
		var page struct {
			XMLName   xml.Name `xml:"ListBucketResult"`
			Keys      []string `xml:"Contents>Key"`
			Truncated bool     `xml:"IsTruncated"`
		}
		page.Keys = keys[:min(100, len(keys))]
		page.Truncated = len(keys) > 100
		_ = xml.NewEncoder(w).Encode(page)
	case r.Method == http.MethodPost && r.URL.Query().Has("uploads"):
		f.uploads++
		fmt.Fprintf(w, "<InitiateMultipartUploadResult><UploadId>up%d</UploadId></InitiateMultipartUploadResult>", f.uploads)
	case r.Method == http.MethodPut && r.URL.Query().Has("partNumber"):
		f.parts[r.URL.Query().Get("uploadId")] += int64(len(body))
		w.Header().Set("ETag", `"etag`+r.URL.Query().Get("partNumber")+`"`)
	case r.Method == http.MethodPost && r.URL.Query().Has("uploadId"):
		var done struct {
			Parts []struct {
				Number int    `xml:"PartNumber"`
				ETag   string `xml:"ETag"`
			} `xml:"Part"`
		}
		if err := xml.Unmarshal(body, &done); err != nil || len(done.Parts) == 0 || done.Parts[0].ETag != `"etag1"` {
			s3error(w, http.StatusBadRequest, "MalformedXML")
			return
		}
		id := r.URL.Query().Get("uploadId")
		objs[key] = f.parts[id]
		if f.onObject != nil {
			f.onObject(f.parts[id])
		}
		delete(f.parts, id)
		fmt.Fprint(w, "<CompleteMultipartUploadResult></CompleteMultipartUploadResult>")
	case r.Method == http.MethodPut:
		objs[key] = int64(len(body))
		if f.onObject != nil {
			f.onObject(int64(len(body)))
		}
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		n, ok := objs[key]
		if !ok {
			s3error(w, http.StatusNotFound, "NoSuchKey")
			return
		}
		if f.failGets && r.Method == http.MethodGet {
			s3error(w, http.StatusInternalServerError, "InternalError")
			return
		}
		w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
		if r.Method == http.MethodGet {
			_, _ = w.Write(make([]byte, n))
		}
	case r.Method == http.MethodDelete:
		delete(objs, key)
		w.WriteHeader(http.StatusNoContent)
	default:
		s3error(w, http.StatusMethodNotAllowed, "MethodNotAllowed")
	}
}

// fakeKeys knows the secret of AK.
type fakeKeys struct{}

func (fakeKeys) SecretKey(_ context.Context, id string) (string, error) {
	if id != "AK" {
		return "", s3err.New(s3err.InvalidAccessKeyID, "")
	}
	return "SK", nil
}

func (f *fakeS3) state() (buckets, objects int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, b := range f.buckets {
		objects += len(b)
	}
	return len(f.buckets), objects
}

func quickConfig() MixedConfig {
	c := DefaultMixed()
	c.Size, c.Workers, c.Duration, c.Objects = 1<<10, 4, 2*time.Second, 150
	return c
}

func target(name, url string) Target {
	return Target{Name: name, URL: url, AccessKey: "AK", SecretKey: "SK"}
}

func TestRunMixedTwoTargets(t *testing.T) {
	t.Parallel()
	fa, a := newFake(t)
	fb, b := newFake(t)
	cfg := quickConfig()
	cfg.Rounds = 2
	var progress strings.Builder
	cfg.Progress, cfg.TTY = &progress, true
	res, err := RunMixed(t.Context(), cfg, []Target{target("a", a.URL), target("b", b.URL)})
	if err != nil {
		t.Fatalf("RunMixed: %v", err)
	}
	// Rounds interleave: a, b, a, b, each line rewritten in place.
	p := progress.String()
	if !regexp.MustCompile(`(?s)^\r\x1b\[Ka round 1/2: +1s .*\n.*\r\x1b\[Kb round 1/2: +1s .*\n.*\r\x1b\[Ka round 2/2: +1s .*\n.*\r\x1b\[Kb round 2/2: +1s .*\n$`).MatchString(p) {
		t.Errorf("progress on a terminal = %q, want rounds a b a b", p)
	}
	for i, f := range []*fakeS3{fa, fb} {
		tr := res.Targets[i]
		if nb, no := f.state(); nb != 0 || no != 0 {
			t.Errorf("target %s: %d buckets and %d objects left, want none", tr.Name, nb, no)
		}
		if tr.ElapsedSeconds < 2 || tr.ElapsedSeconds > 3 {
			t.Errorf("target %s: elapsed %.2fs, want about 2s", tr.Name, tr.ElapsedSeconds)
		}
		byOp := map[string]OpStat{}
		for _, o := range tr.Ops {
			byOp[o.Op] = o
			if o.Ops == 0 || o.Errors != 0 {
				t.Errorf("target %s %s: %d ops, %d errors (%v); want some ops and no errors", tr.Name, o.Op, o.Ops, o.Errors, o.ErrorCodes)
			}
			if len(o.PerSecond) != 2 { // one whole second in each of the two rounds
				t.Errorf("target %s %s: %d per-second windows, want 2", tr.Name, o.Op, len(o.PerSecond))
			}
			if o.Latency.MaxNs <= 0 || o.Summary.P50Ms <= 0 {
				t.Errorf("target %s %s: no latencies recorded: %+v", tr.Name, o.Op, o.Summary)
			}
		}
		// The fake's request counts match the generator's: PUTs are the
		// bucket, the prepared objects and the measured PUTs; DELETEs the
		// measured ones, the rest in cleanup and the bucket.
		f.mu.Lock()
		got := f.requests
		f.mu.Unlock()
		live := int64(cfg.Objects) + byOp["PUT"].Ops - byOp["DELETE"].Ops
		want := map[string]int{
			http.MethodPut:    1 + cfg.Objects + int(byOp["PUT"].Ops),
			http.MethodGet:    int(byOp["GET"].Ops) + int(max(1, (live+99)/100)), // + cleanup listings of 100
			http.MethodHead:   int(byOp["STAT"].Ops),
			http.MethodDelete: int(byOp["DELETE"].Ops) + int(live) + 1,
		}
		for m, n := range want {
			if got[m] != n {
				t.Errorf("target %s: server saw %d %s requests, want %d (all %v)", tr.Name, got[m], m, n, got)
			}
		}
		if byOp["GET"].Bytes != byOp["GET"].Ops*cfg.Size || byOp["PUT"].Bytes != byOp["PUT"].Ops*cfg.Size {
			t.Errorf("target %s: GET %d B in %d ops, PUT %d B in %d ops; want %d B each", tr.Name, byOp["GET"].Bytes, byOp["GET"].Ops, byOp["PUT"].Bytes, byOp["PUT"].Ops, cfg.Size)
		}
	}
}

func TestRunMixedTooManyErrors(t *testing.T) {
	t.Parallel()
	f, srv := newFake(t)
	f.mu.Lock()
	f.failGets = true
	f.mu.Unlock()
	cfg := quickConfig()
	cfg.Get, cfg.Put, cfg.Delete, cfg.Stat = 90, 10, 0, 0
	_, err := RunMixed(t.Context(), cfg, []Target{target("bad", srv.URL)})
	if !errors.Is(err, errTooManyErrors) || !strings.Contains(err.Error(), "GET/InternalError") {
		t.Fatalf("RunMixed against a target failing GETs: %v, want too many errors naming GET/InternalError", err)
	}
	if nb, no := f.state(); nb != 0 || no != 0 {
		t.Errorf("%d buckets and %d objects left, want none", nb, no)
	}
}

func TestRunMixedCancelCleansUp(t *testing.T) {
	t.Parallel()
	f, srv := newFake(t)
	cfg := quickConfig()
	cfg.Duration = time.Minute
	ctx, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := RunMixed(ctx, cfg, []Target{target("a", srv.URL)})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("RunMixed with a cancelled context: %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("RunMixed took %v after cancellation", d)
	}
	if nb, no := f.state(); nb != 0 || no != 0 {
		t.Errorf("%d buckets and %d objects left after cancellation, want none", nb, no)
	}
}

func TestRunMixedKeep(t *testing.T) {
	t.Parallel()
	f, srv := newFake(t)
	cfg := quickConfig()
	cfg.Duration, cfg.Keep = time.Second, true
	var progress strings.Builder
	cfg.Progress = &progress
	res, err := RunMixed(t.Context(), cfg, []Target{target("a", srv.URL)})
	if err != nil {
		t.Fatalf("RunMixed: %v", err)
	}
	if p := progress.String(); !strings.HasPrefix(p, "a round 1/1: done in 1.") || strings.Contains(p, "\r") {
		t.Errorf("progress output %q, want one plain line for the round", p)
	}
	ops := map[string]int64{}
	for _, o := range res.Targets[0].Ops {
		ops[o.Op] = o.Ops
	}
	nb, no := f.state()
	if want := int64(cfg.Objects) + ops["PUT"] - ops["DELETE"]; nb != 1 || int64(no) != want {
		t.Errorf("with Keep: %d buckets, %d objects; want 1 bucket with %d objects", nb, no, want)
	}
}

func TestRunMixedBadInput(t *testing.T) {
	t.Parallel()
	f, srv := newFake(t)
	f.mu.Lock()
	f.denyCreate = true
	f.mu.Unlock()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	cfg := quickConfig()
	for _, tc := range []struct {
		name    string
		cfg     func(*MixedConfig)
		targets []Target
		want    string
	}{
		{"denied", nil, []Target{target("x", srv.URL)}, "target x (" + srv.URL + "): create bucket: InvalidAccessKeyId (HTTP 403): fake InvalidAccessKeyId"},
		{"unreachable", nil, []Target{target("y", closed.URL)}, "target y (" + closed.URL + "): create bucket: ConnectionError: cannot connect"},
		{"no target", nil, nil, "no target"},
		{"same name", nil, []Target{target("x", srv.URL), target("x", srv.URL)}, `target name "x" used twice`},
		{"no workers", func(c *MixedConfig) { c.Workers = 0 }, []Target{target("x", srv.URL)}, "workers must be at least 1"},
		{"short", func(c *MixedConfig) { c.Duration = time.Second; c.Rounds = 2 }, []Target{target("x", srv.URL)}, "duration per round"},
		{"no weights", func(c *MixedConfig) { c.Get, c.Put, c.Delete, c.Stat = 0, 0, 0, 0 }, []Target{target("x", srv.URL)}, "weight must be positive"},
		{"negative weight", func(c *MixedConfig) { c.Get = -1 }, []Target{target("x", srv.URL)}, "must not be negative"},
		{"no objects", func(c *MixedConfig) { c.Objects = 0 }, []Target{target("x", srv.URL)}, "objects must be at least 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := cfg
			if tc.cfg != nil {
				tc.cfg(&c)
			}
			res, err := RunMixed(t.Context(), c, tc.targets)
			if err == nil || !strings.Contains(err.Error(), tc.want) || res != nil {
				t.Errorf("RunMixed = %v, %v; want no results and an error containing %q", res, err, tc.want)
			}
		})
	}
}

func TestRunSingle(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		op   string
		want []string // operations in the results
	}{
		{"get", []string{"GET"}},
		{"stat", []string{"STAT"}},
		{"put", []string{"PUT"}},
		{"list", []string{"LIST"}},
		{"multipart", []string{"MULTIPART"}},
		// 20 objects over 4 workers run out within the second: the
		// workers then PUT new ones to delete.
		{"delete", []string{"PUT", "DELETE"}},
	} {
		t.Run(tc.op, func(t *testing.T) {
			t.Parallel()
			f, srv := newFake(t)
			cfg := quickConfig()
			cfg.Duration, cfg.Objects = time.Second, 20
			var sizes []int64
			if tc.op == "multipart" {
				cfg.Size = 12 << 20 // parts of 6 MiB
				f.mu.Lock()
				f.onObject = func(n int64) { sizes = append(sizes, n) }
				f.mu.Unlock()
			}
			res, err := RunSingle(t.Context(), tc.op, cfg, []Target{target("a", srv.URL)})
			if err != nil {
				t.Fatalf("RunSingle(%q): %v", tc.op, err)
			}
			if res.Workload != tc.op {
				t.Errorf("workload %q, want %q", res.Workload, tc.op)
			}
			var got []string
			for _, o := range res.Targets[0].Ops {
				got = append(got, o.Op)
				if o.Ops == 0 || o.Errors != 0 {
					t.Errorf("%s: %d ops, %d errors %v", o.Op, o.Ops, o.Errors, o.ErrorCodes)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("operations %v, want %v", got, tc.want)
			}
			if nb, no := f.state(); nb != 0 || no != 0 {
				t.Errorf("%d buckets and %d objects left, want none", nb, no)
			}
			if tc.op == "multipart" {
				f.mu.Lock()
				defer f.mu.Unlock()
				if want := 20 + res.Targets[0].Ops[0].Ops; int64(len(sizes)) != want || f.uploads != int(want-20) || len(f.parts) != 0 {
					t.Errorf("%d objects stored, %d uploads, %d left open; want %d objects, %d uploads, none open", len(sizes), f.uploads, len(f.parts), want, want-20)
				}
				for i, n := range sizes {
					if want := map[bool]int64{true: 6 << 20, false: 12 << 20}[i < 20]; n != want {
						t.Errorf("object %d: %d bytes, want %d", i, n, want)
						break
					}
				}
			}
		})
	}
	if _, err := RunSingle(t.Context(), "copy", quickConfig(), nil); err == nil || !strings.Contains(err.Error(), `unknown operation "copy"`) {
		t.Errorf("RunSingle(copy) = %v, want unknown operation", err)
	}
}

func TestRunCases(t *testing.T) {
	t.Parallel()
	f, srv := newFake(t)
	cfg := CasesConfig{Workers: 2, Duration: time.Second, Cases: []string{"put-1KiB", "get-1MiB", "delete", "presigned-get"}}
	res, err := RunCases(t.Context(), cfg, []Target{target("a", srv.URL)})
	if err != nil {
		t.Fatalf("RunCases: %v", err)
	}
	var got []string
	for _, o := range res.Targets[0].Ops {
		if o.Op != "delete:PUT" { // refills, if the workers ran out of objects
			got = append(got, o.Op)
		}
		if o.Ops == 0 || o.Errors != 0 || o.ElapsedSeconds < 1 {
			t.Errorf("%s: %d ops, %d errors, %.2fs", o.Op, o.Ops, o.Errors, o.ElapsedSeconds)
		}
		if o.Op == "get-1MiB" && o.Bytes != o.Ops<<20 {
			t.Errorf("get-1MiB: %d bytes in %d ops", o.Bytes, o.Ops)
		}
	}
	want := []string{"put-1KiB", "get-1MiB", "delete", "presigned-get"}
	if !slices.Equal(got, want) {
		t.Errorf("operations %v, want %v", got, want)
	}
	if diff := slices.Compare(res.Config.Cases, cfg.Cases); diff != 0 {
		t.Errorf("config cases %v, want %v", res.Config.Cases, cfg.Cases)
	}
	if nb, no := f.state(); nb != 0 || no != 0 {
		t.Errorf("%d buckets and %d objects left, want none", nb, no)
	}

	// A target that accepts any signature: the bad-signature case must say so.
	f.mu.Lock()
	f.acceptBad = true
	f.mu.Unlock()
	res, err = RunCases(t.Context(), CasesConfig{Workers: 2, Duration: time.Second, Cases: []string{"bad-signature"}}, []Target{target("a", srv.URL)})
	if res != nil || err == nil || !strings.Contains(err.Error(), "case bad-signature") || !strings.Contains(err.Error(), "BAD-SIGNATURE/BadSignatureAccepted") {
		t.Errorf("bad-signature against a target accepting it: %v, %v; want no results and BadSignatureAccepted errors", res, err)
	}
	if _, err := RunCases(t.Context(), CasesConfig{Cases: []string{"nope"}}, nil); err == nil || !strings.Contains(err.Error(), `unknown case "nope" (cases: put-1KiB, put-1MiB,`) {
		t.Errorf("RunCases(nope) = %v, want unknown case and the list of cases", err)
	}
}

// TestRunCasesSettle checks the pause between cases: none before the
// first, one before each other, and a run that ends while settling keeps
// the results of the cases before and says why it stopped.
func TestRunCasesSettle(t *testing.T) {
	t.Parallel()
	_, srv := newFake(t)
	var progress strings.Builder
	cfg := CasesConfig{
		Workers: 2, Duration: time.Second, Cases: []string{"head", "list-1000"}, Settle: 300 * time.Millisecond,
		Progress: MixedConfig{Progress: &progress},
	}
	start := time.Now()
	res, err := RunCases(t.Context(), cfg, []Target{target("a", srv.URL)})
	if err != nil {
		t.Fatalf("RunCases: %v", err)
	}
	if el := time.Since(start); el < 2*cfg.Duration+cfg.Settle {
		t.Errorf("run took %v, less than its two cases and one pause", el)
	}
	if p := progress.String(); strings.Contains(p, "head: settling") || !strings.Contains(p, "list-1000: settling 300ms after the previous case\n") {
		t.Errorf("progress %q: want a pause before list-1000 alone", p)
	}
	if res.Config.SettleSeconds != 0.3 {
		t.Errorf("SettleSeconds %g, want 0.3", res.Config.SettleSeconds)
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cfg.Settle = time.Hour
	cfg.Progress.Progress = writerFunc(func(p []byte) (int, error) {
		if strings.Contains(string(p), "settling") {
			cancel()
		}
		return len(p), nil
	})
	res, err = RunCases(ctx, cfg, []Target{target("a", srv.URL)})
	if res == nil || !slices.Equal(res.Config.Cases, []string{"head"}) {
		t.Fatalf("RunCases ended while settling: results %+v; want those of head", res)
	}
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "case list-1000: settling before the case") {
		t.Errorf("RunCases ended while settling: %v; want list-1000's pause canceled", err)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestRunCasesKeepsResultsOfOthers checks that a failing case is reported
// while the results of the cases around it are kept.
func TestRunCasesKeepsResultsOfOthers(t *testing.T) {
	t.Parallel()
	f, srv := newFake(t)
	f.acceptBad = true
	var progress strings.Builder
	cfg := CasesConfig{
		Workers: 2, Duration: time.Second, Cases: []string{"head", "bad-signature", "list-1000"},
		Progress: MixedConfig{Progress: &progress},
	}
	res, err := RunCases(t.Context(), cfg, []Target{target("a", srv.URL)})
	if err == nil || !strings.Contains(err.Error(), "case bad-signature: target a ("+srv.URL+"): more than half of the requests failed: BAD-SIGNATURE/BadSignatureAccepted") {
		t.Fatalf("RunCases error = %v, want the bad-signature case's failure", err)
	}
	if res == nil {
		t.Fatal("RunCases returned no results; want those of head and list-1000")
	}
	var ops []string
	for _, o := range res.Targets[0].Ops {
		ops = append(ops, o.Op)
		if o.Ops == 0 || o.Errors != 0 {
			t.Errorf("%s: %d ops, %d errors", o.Op, o.Ops, o.Errors)
		}
	}
	if want := []string{"head", "list-1000"}; !slices.Equal(ops, want) || !slices.Equal(res.Config.Cases, want) {
		t.Errorf("operations %v, config cases %v; want %v", ops, res.Config.Cases, want)
	}
	if len(res.Failed) != 1 || res.Failed[0].Case != "bad-signature" || !strings.Contains(res.Failed[0].Error, "BadSignatureAccepted") {
		t.Errorf("Failed = %+v, want bad-signature with its error", res.Failed)
	}
	var md strings.Builder
	if err := WriteMarkdown(&md, res, "", false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "\n## Failed cases\n") || !strings.Contains(md.String(), "- **bad-signature**: target a (") {
		t.Errorf("report does not name the failed case:\n%s", md.String())
	}
	// Progress lines name the case.
	for _, c := range cfg.Cases {
		if !strings.Contains(progress.String(), c+": a round 1/1: done in ") {
			t.Errorf("no progress line for case %s in %q", c, progress.String())
		}
	}
	if nb, no := f.state(); nb != 0 || no != 0 {
		t.Errorf("%d buckets and %d objects left, want none", nb, no)
	}

	// A target that cannot be used fails the first case, and no other is
	// tried.
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	res, err = RunCases(t.Context(), CasesConfig{Workers: 2, Duration: time.Second, Cases: []string{"head", "delete"}}, []Target{target("gone", closed.URL)})
	if res != nil || err == nil || !strings.Contains(err.Error(), "case head: target gone") || strings.Contains(err.Error(), "case delete") {
		t.Errorf("RunCases against an unreachable target = %v, %v; want no results and the head case's error alone", res, err)
	}

	// So does a profiler whose listener does not answer, before any case.
	f.mu.Lock()
	before := maps.Clone(f.requests)
	f.mu.Unlock()
	cfg.Profile = &Profiler{URL: closed.URL, Dir: t.TempDir()}
	res, err = RunCases(t.Context(), cfg, []Target{target("a", srv.URL)})
	if res != nil || err == nil || !strings.HasPrefix(err.Error(), "profile pprof index: ") {
		t.Errorf("RunCases with an unreachable pprof listener = %v, %v; want no results and the profiler's error alone", res, err)
	}
	f.mu.Lock()
	after := maps.Clone(f.requests)
	f.mu.Unlock()
	if !maps.Equal(before, after) {
		t.Errorf("the target saw requests %v → %v although the profiler check failed", before, after)
	}
}

func TestRunMixedCleanupFailure(t *testing.T) {
	t.Parallel()
	f, srv := newFake(t)
	f.mu.Lock()
	f.denyDrop = true
	f.mu.Unlock()
	cfg := quickConfig()
	cfg.Duration = time.Second
	res, err := RunMixed(t.Context(), cfg, []Target{target("a", srv.URL)})
	if res == nil || err == nil || !strings.Contains(err.Error(), "target a: clean up bucket coffer-bench-") || !strings.Contains(err.Error(), "AccessDenied") {
		t.Errorf("RunMixed with DeleteBucket denied = %v, %v; want results and a clean-up error", res, err)
	}
	if nb, no := f.state(); nb != 1 || no != 0 {
		t.Errorf("%d buckets and %d objects left, want the empty bucket alone", nb, no)
	}
}

// TestPayloadModes checks that every payload mode sends uploads the fake
// (a real SigV4 verifier) accepts, in that mode, for PUT and multipart, and
// that results record the mode.
func TestPayloadModes(t *testing.T) {
	t.Parallel()
	want := map[Payload]string{
		PayloadSigned:           "SHA256",
		PayloadUnsigned:         "UNSIGNED-PAYLOAD",
		PayloadStreaming:        "STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
		PayloadStreamingTrailer: "STREAMING-UNSIGNED-PAYLOAD-TRAILER",
	}
	for _, name := range Payloads() {
		p, err := ParsePayload(name)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f, srv := newFake(t)
			var sizes sync.Map
			f.onObject = func(n int64) { sizes.Store(n, true) }
			cfg := quickConfig()
			cfg.Size, cfg.Objects, cfg.Duration, cfg.Payload = 200<<10+3, 4, time.Second, p
			cfg.Get, cfg.Put, cfg.Delete, cfg.Stat, cfg.Multipart = 0, 50, 0, 10, 0
			res, err := RunMixed(t.Context(), cfg, []Target{target("a", srv.URL)})
			if err != nil {
				t.Fatal(err)
			}
			if res.Config.Payload != name {
				t.Errorf("results record payload %q, want %q", res.Config.Payload, name)
			}
			mp := cfg
			mp.Size, mp.Put, mp.Multipart = 11<<20, 0, 1
			if _, err := RunSingle(t.Context(), "multipart", mp, []Target{target("a", srv.URL)}); err != nil {
				t.Fatal(err)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if len(f.payloads) != 1 || f.payloads[want[p]] == 0 {
				t.Errorf("uploads were sent as %v, want only %s", f.payloads, want[p])
			}
			sizes.Range(func(k, _ any) bool {
				if n := k.(int64); n != cfg.Size && n != mp.Size && n != partSize(mp.Size) {
					t.Errorf("an object of %d bytes was stored, want %d, %d or %d", n, cfg.Size, mp.Size, partSize(mp.Size))
				}
				return true
			})
		})
	}
	if _, err := ParsePayload("chunked"); err == nil {
		t.Error(`ParsePayload("chunked") succeeded`)
	}
}
