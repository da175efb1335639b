package metrics

import (
	"context"
	"errors"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
)

func TestStorageFunc(t *testing.T) {
	t.Parallel()
	r := newRegistry(t)
	var calls atomic.Int64
	var fail atomic.Bool
	err := r.StorageFunc(func(ctx context.Context) (Storage, error) {
		calls.Add(1)
		if _, ok := ctx.Deadline(); !ok {
			t.Error("StorageFunc's fn got a context without a deadline")
		}
		if fail.Load() {
			return Storage{}, errors.New("disk on fire")
		}
		return Storage{Buckets: 2, Objects: 30, Bytes: 4 << 30, Uploads: 1, PartBytes: 5 << 20}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	e := scrape(t, r)
	e.want(t, 2, "coffer_storage_buckets")
	e.want(t, 30, "coffer_storage_objects")
	e.want(t, 4<<30, "coffer_storage_bytes")
	e.want(t, 1, "coffer_storage_multipart_uploads")
	e.want(t, 5<<20, "coffer_storage_multipart_part_bytes")
	if n := calls.Load(); n != 1 {
		t.Errorf("one scrape called fn %d times, want once for all five gauges", n)
	}

	// A failing fn leaves the storage gauges out; the rest is served.
	fail.Store(true)
	e = scrape(t, r)
	if _, ok := e.get("coffer_storage_bytes"); ok {
		t.Error("coffer_storage_bytes served although fn failed")
	}
	e.want(t, 1, "coffer_build_info", "version", "v1.2.3", "go_version", runtime.Version())

	rec := httptest.NewRecorder()
	fail.Store(false)
	r.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	problems, err := promlint.New(rec.Body).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "coffer_storage") {
			t.Errorf("lint: %s: %s", p.Metric, p.Text)
		}
	}
	if err := r.StorageFunc(func(context.Context) (Storage, error) { return Storage{}, nil }); err == nil {
		t.Error("a second StorageFunc was accepted")
	}
}
