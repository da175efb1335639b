//go:build unix

package console

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coffer-s3/coffer/internal/objects"
)

// BenchmarkObjectList1000 is the `coffer bench cases` case
// console-objects-1000 without the network: the first page (100 rows)
// of a prefix holding 1,000 keys, through the whole handler (session,
// authorization, listing, rendering).
func BenchmarkObjectList1000(b *testing.B) {
	f := newFixture(b, Config{}, 1)
	ctx := b.Context()
	if err := f.objects.CreateBucket(ctx, "bench", objects.CreateBucketInput{}); err != nil {
		b.Fatal(err)
	}
	for i := range 1000 {
		k := fmt.Sprintf("obj-%d-0", i)
		if _, err := f.objects.PutObject(ctx, "bench", k, objects.PutInput{Size: 1024}, strings.NewReader(strings.Repeat("x", 1024))); err != nil {
			b.Fatal(err)
		}
	}
	id, _ := f.signIn(b, testRootKey, testRootSecret)
	benchPage(b, f, id, "/objects/bench?prefix=obj-")
}

// BenchmarkBucketList is the Buckets page of a principal that sees 20
// buckets.
func BenchmarkBucketList(b *testing.B) {
	f := newFixture(b, Config{}, 1)
	for i := range 20 {
		if err := f.objects.CreateBucket(b.Context(), fmt.Sprintf("bucket-%02d", i), objects.CreateBucketInput{}); err != nil {
			b.Fatal(err)
		}
	}
	id, _ := f.signIn(b, testRootKey, testRootSecret)
	benchPage(b, f, id, "/buckets")
}

// benchPage measures GET path, signed in with session id. Besides the
// time per page it reports the process's CPU time per page (cpu-ns/op,
// the garbage collector's included), which a busy machine disturbs
// less.
func benchPage(b *testing.B, f *fixture, id, path string) {
	b.Helper()
	b.ReportAllocs()
	before := cpuTime(b)
	for b.Loop() {
		resp := f.do(b, request{method: "GET", path: path, cookie: id})
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
	}
	b.ReportMetric(float64(cpuTime(b)-before)/float64(b.N), "cpu-ns/op")
}

// cpuTime returns the CPU time the process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
