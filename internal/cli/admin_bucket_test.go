package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/coffer-s3/coffer/internal/adminapi"
	"github.com/coffer-s3/coffer/internal/objects"
)

// fill creates bucket and puts objects of the given sizes into it.
func (s *adminServer) fill(t *testing.T, bucket string, sizes ...int) {
	t.Helper()
	ctx := context.Background()
	if err := s.objects.CreateBucket(ctx, bucket, objects.CreateBucketInput{}); err != nil {
		t.Fatal(err)
	}
	for i, n := range sizes {
		if _, err := s.objects.PutObject(ctx, bucket, strings.Repeat("k", i+1), objects.PutInput{Size: int64(n)}, bytes.NewReader(make([]byte, n))); err != nil {
			t.Fatal(err)
		}
	}
}

func TestAdminBuckets(t *testing.T) {
	t.Parallel()
	s := newAdminServer(t)
	if code, stdout, stderr := s.admin(t, "bucket", "ls"); code != 0 || stdout != "" || stderr != "No buckets.\n" {
		t.Errorf("bucket ls of none: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	var empty adminapi.BucketList
	decode(t, s.ok(t, "bucket", "ls", "--json"), &empty)
	if empty.Buckets == nil || len(empty.Buckets) != 0 {
		t.Errorf("bucket ls --json of none = %#v, want an empty list", empty)
	}

	s.fill(t, "photos", 1000, 2<<20, 512<<10)
	s.fill(t, "empty")
	if _, err := s.objects.CreateMultipartUpload(context.Background(), "empty", "big", objects.CreateUploadInput{}); err != nil {
		t.Fatal(err)
	}

	out := s.ok(t, "bucket", "ls")
	want := []string{
		`NAME +OBJECTS +SIZE +UPLOADS +PART SIZE +PUBLIC +CREATED`,
		`empty +0 +0 B +1 +0 B +no +\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`,
		`photos +3 +2\.5 MiB +0 +0 B +no +\d{4}-`,
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("bucket ls printed %d lines, want %d:\n%s", len(lines), len(want), out)
	}
	for i, re := range want {
		if !regexp.MustCompile("^" + re).MatchString(lines[i]) {
			t.Errorf("bucket ls line %d = %q, want %q", i, lines[i], re)
		}
	}

	var list adminapi.BucketList
	decode(t, s.ok(t, "bucket", "ls", "--json"), &list)
	var got []adminapi.BucketInfo
	for _, b := range list.Buckets {
		if b.Created.IsZero() {
			t.Errorf("bucket %s has no creation time", b.Name)
		}
		b.Created = list.Buckets[0].Created
		got = append(got, b)
	}
	created := list.Buckets[0].Created
	wantList := []adminapi.BucketInfo{
		{Name: "empty", Created: created, Usage: adminapi.Usage{Uploads: 1}},
		{Name: "photos", Created: created, Usage: adminapi.Usage{Objects: 3, Bytes: 1000 + 2<<20 + 512<<10}},
	}
	if diff := cmp.Diff(wantList, got); diff != "" {
		t.Errorf("bucket ls --json (-want +got):\n%s", diff)
	}

	out = s.ok(t, "bucket", "info", "photos")
	for _, re := range []string{`(?m)^Name: +photos$`, `(?m)^Objects: +3$`, `(?m)^Size: +2\.5 MiB \(2622440 bytes\)$`,
		`(?m)^Uploads in progress: +0$`, `(?m)^Public: +no$`, `(?m)^Region: +\(the server's\)$`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("bucket info does not match %q:\n%s", re, out)
		}
	}
	var info adminapi.BucketInfo
	decode(t, s.ok(t, "bucket", "info", "photos", "--json"), &info)
	if info.Name != "photos" || info.Objects != 3 || info.Bytes != 1000+2<<20+512<<10 {
		t.Errorf("bucket info --json = %+v", info)
	}
	s.fails(t, 1, "coffer admin: NoSuchBucket", "bucket", "info", "nope")
	s.fails(t, 2, "missing NAME", "bucket", "info")
	s.fails(t, 2, `unexpected argument "x"`, "bucket", "ls", "x")
}

func TestAdminUsageCheck(t *testing.T) {
	t.Parallel()
	s := newAdminServer(t)
	s.fill(t, "aaa", 1, 2, 3)
	s.fill(t, "bbb")
	if out := s.ok(t, "usage", "check"); out != "Checked 2 buckets: usage matches the records.\n" {
		t.Errorf("usage check = %q", out)
	}
	var res adminapi.UsageCheckResult
	decode(t, s.ok(t, "usage", "check", "--repair", "--json"), &res)
	res.DurationSeconds = 0
	if diff := cmp.Diff(adminapi.UsageCheckResult{Buckets: 2, Mismatches: []adminapi.UsageMismatch{}}, res); diff != "" {
		t.Errorf("usage check --json (-want +got):\n%s", diff)
	}
}

// TestAdminUsageCheckMismatch runs usage check against a fake admin API
// that finds a difference (a real store has none to find): the table, and
// exit status 1 unless it was repaired.
func TestAdminUsageCheckMismatch(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != adminapi.BasePath+"/usage/check" {
			http.NotFound(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		res := adminapi.UsageCheckResult{Buckets: 3, Mismatches: []adminapi.UsageMismatch{
			{Bucket: "bkt", Stored: adminapi.Usage{Objects: 5, Bytes: 10}, Counted: adminapi.Usage{Objects: 4, Bytes: 9}},
		}}
		if strings.Contains(string(body), `"repair":true`) {
			res.Repaired = 1
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(res)
	}))
	t.Cleanup(srv.Close)
	env := map[string]string{"COFFER_ENDPOINT": srv.URL, "COFFER_ACCESS_KEY": "AK", "COFFER_SECRET_KEY": "SK"}
	for _, tc := range []struct {
		args     []string
		wantCode int
	}{
		{[]string{"admin", "usage", "check"}, 1},
		{[]string{"admin", "usage", "check", "--repair"}, 0},
	} {
		code, stdout, stderr := runCLI(t, env, tc.args...)
		repair := len(tc.args) == 4
		if code != tc.wantCode ||
			!strings.HasPrefix(stdout, "Checked 3 buckets: 1 differ from their records.\nBUCKET ") ||
			!regexp.MustCompile(`(?m)^bkt +5 +4 +10 +9 +0 +0 +0 +0 +-$`).MatchString(stdout) ||
			strings.Contains(stdout, "Repaired 1.") != repair ||
			strings.Contains(stderr, "run with --repair") == repair {
			t.Errorf("%q: exit %d (want %d)\nstdout:\n%s\nstderr: %s", tc.args, code, tc.wantCode, stdout, stderr)
		}
	}
}

func TestHumanBytes(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "0 B"},
		{1023, "1023 B"},
		{1024, "1.0 KiB"},
		{1536, "1.5 KiB"},
		{1<<20 - 1, "1.0 MiB"},
		{5 << 20, "5.0 MiB"},
		{3<<30 + 1<<29, "3.5 GiB"},
		{1 << 40, "1.0 TiB"},
		{math.MaxInt64, "8.0 EiB"},
		{-2048, "-2.0 KiB"},
		{math.MinInt64, "-8.0 EiB"},
	} {
		if got := humanBytes(tc.n); got != tc.want {
			t.Errorf("humanBytes(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}
