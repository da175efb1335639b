package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/s3err"
)

// failingBuckets is the object service whose BucketsUsage fails with
// err while it is set.
type failingBuckets struct {
	Buckets
	err atomic.Pointer[error]
}

func (b *failingBuckets) BucketsUsage(ctx context.Context) ([]objects.BucketUsage, error) {
	if e := b.err.Load(); e != nil {
		return nil, *e
	}
	return b.Buckets.BucketsUsage(ctx)
}

// TestMetadataUnavailable checks that a metadata store out of reach
// (objects.ErrUnavailable in the chain) or failed (Deps.Unavailable)
// answers 503 with Retry-After and a page that says so, not 500; that
// changes are refused before they start; and that an unrelated internal
// error stays a 500.
func TestMetadataUnavailable(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, 1)
	fb := &failingBuckets{Buckets: f.h.buckets}
	f.h.buckets = fb
	f.bucket(t, "bkt")
	id, csrf := f.signIn(t, testRootKey, testRootSecret)

	unreachable := fmt.Errorf("list buckets: %w", objects.ErrUnavailable)
	fb.err.Store(&unreachable)
	resp := f.do(t, request{method: "GET", path: "/buckets", cookie: id})
	page := body(t, resp)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(page, "metadata store cannot be reached") {
		t.Errorf("GET /buckets with PostgreSQL out of reach: %d, Retry-After %q; want 503 with Retry-After and a page saying why\n%s",
			resp.StatusCode, resp.Header.Get("Retry-After"), page)
	}

	internal := errors.New("some bug")
	fb.err.Store(&internal)
	if resp := f.do(t, request{method: "GET", path: "/buckets", cookie: id}); resp.StatusCode != http.StatusInternalServerError {
		t.Errorf("GET /buckets failing with an internal error: %d, want 500", resp.StatusCode)
	}

	failed := &s3err.Error{Code: s3err.ServiceUnavailable, Message: "The metadata store failed (disk full); the server is restarting. Please retry."}
	f.h.down = func() error { return failed }
	for _, tc := range []struct {
		name string
		resp func() *http.Response
	}{
		{"internal error once the store failed", func() *http.Response { return f.do(t, request{method: "GET", path: "/buckets", cookie: id}) }},
		{"create bucket", func() *http.Response { return f.post(t, id, csrf, "/buckets", url.Values{"name": {"new-bucket"}}) }},
		{"upload", func() *http.Response {
			return f.raw(t, "/objects/bkt/upload?key=k", id, csrf, []byte("data"), map[string]string{"Content-Type": "text/plain"})
		}},
	} {
		resp := tc.resp()
		b := body(t, resp)
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(b, "metadata store failed") {
			t.Errorf("%s after the metadata store failed: %d, Retry-After %q; want 503 with Retry-After and the reason\n%s",
				tc.name, resp.StatusCode, resp.Header.Get("Retry-After"), b)
		}
	}
	// A failure Unavailable reports in no S3 terms still answers 503.
	f.h.down = func() error { return errors.New("pebble: closed") }
	if resp := f.do(t, request{method: "GET", path: "/buckets", cookie: id}); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("internal error once the store failed with a plain error: %d, want 503", resp.StatusCode)
	}
	fb.err.Store(nil)
	if f.exists(t, "bkt", "k") {
		t.Error("the upload was stored while the metadata store had failed")
	}
	if _, err := f.objects.HeadBucket(t.Context(), "new-bucket"); err == nil {
		t.Error("the bucket was created while the metadata store had failed")
	}
}
