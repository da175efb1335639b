package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

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
// that finds differences (a real store has none to find): the table, and
// exit status 1 unless a repair left none, which a second check (without
// repair) decides. Records of a bucket that does not exist are never
// repaired: after a repair that cannot fix them the command fails, naming
// them.
func TestAdminUsageCheckMismatch(t *testing.T) {
	t.Parallel()
	wrong := adminapi.UsageMismatch{Bucket: "bkt", Stored: adminapi.Usage{Objects: 5, Bytes: 10}, Counted: adminapi.Usage{Objects: 4, Bytes: 9}}
	orphans := adminapi.UsageMismatch{Bucket: "gone", Counted: adminapi.Usage{Objects: 1, Bytes: 2}, Problem: "records of a bucket that does not exist"}
	for _, tc := range []struct {
		name      string
		found     []adminapi.UsageMismatch // what the server finds
		repair    bool
		wantCode  int
		wantTable []string // rows of the table, as patterns
		wantErr   string   // in stderr; "" for none
		wantCalls []string // the bodies of the server's calls
	}{
		{name: "check", found: []adminapi.UsageMismatch{wrong}, wantCode: 1,
			wantTable: []string{`bkt +5 +4 +10 +9 +0 +0 +0 +0 +-`}, wantErr: "run with --repair",
			wantCalls: []string{`{}`}},
		{name: "repaired", found: []adminapi.UsageMismatch{wrong}, repair: true, wantCode: 0,
			wantTable: []string{`bkt +5 +4 +10 +9 +0 +0 +0 +0 +-`},
			wantCalls: []string{`{"repair":true}`, `{}`}},
		{name: "difference remains", found: []adminapi.UsageMismatch{wrong, orphans}, repair: true, wantCode: 1,
			wantTable: []string{`bkt +5 +4 +10 +9 +0 +0 +0 +0 +-`, `gone +0 +1 +0 +2 +0 +0 +0 +0 +records of a bucket that does not exist`},
			wantErr:   "usage of 1 bucket still differs from its records after the repair: gone (records of a bucket that does not exist)",
			wantCalls: []string{`{"repair":true}`, `{}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var (
				mu    sync.Mutex
				calls []string
			)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost || r.URL.Path != adminapi.BasePath+"/usage/check" {
					http.NotFound(w, r)
					return
				}
				body, _ := io.ReadAll(r.Body)
				mu.Lock()
				repaired := slices.Contains(calls, `{"repair":true}`)
				calls = append(calls, strings.TrimSpace(string(body)))
				mu.Unlock()
				res := adminapi.UsageCheckResult{Buckets: 3, Mismatches: tc.found}
				switch {
				case strings.Contains(string(body), `"repair":true`):
					res.Repaired = 1 // bkt; gone cannot be
				case repaired: // what the repair could not fix
					res.Mismatches = slices.DeleteFunc(slices.Clone(tc.found), func(m adminapi.UsageMismatch) bool { return m.Problem == "" })
				}
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode(res)
			}))
			t.Cleanup(srv.Close)
			env := map[string]string{"COFFER_ENDPOINT": srv.URL, "COFFER_ACCESS_KEY": "AK", "COFFER_SECRET_KEY": "SK"}
			args := []string{"admin", "usage", "check"}
			if tc.repair {
				args = append(args, "--repair")
			}
			code, stdout, stderr := runCLI(t, env, args...)
			if code != tc.wantCode {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr: %s", code, tc.wantCode, stdout, stderr)
			}
			if want := fmt.Sprintf("Checked 3 buckets: %d differ from their records.\nBUCKET ", len(tc.found)); !strings.HasPrefix(stdout, want) {
				t.Errorf("stdout does not start with %q:\n%s", want, stdout)
			}
			for _, re := range tc.wantTable {
				if !regexp.MustCompile(`(?m)^` + re + `$`).MatchString(stdout) {
					t.Errorf("stdout has no row %q:\n%s", re, stdout)
				}
			}
			if got := strings.Contains(stdout, "Repaired 1."); got != tc.repair {
				t.Errorf("stdout says 'Repaired 1.': %v, want %v:\n%s", got, tc.repair, stdout)
			}
			if (tc.wantErr == "") != (stderr == "") || !strings.Contains(stderr, tc.wantErr) {
				t.Errorf("stderr = %q, want %q", stderr, tc.wantErr)
			}
			mu.Lock()
			defer mu.Unlock()
			if diff := cmp.Diff(tc.wantCalls, calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAdminBucketsCorruptUsage lists buckets from a fake admin API that
// reports one bucket's stored usage as corrupt: the others are listed as
// they are, that one shows ? and a note names it.
func TestAdminBucketsCorruptUsage(t *testing.T) {
	t.Parallel()
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	buckets := []adminapi.BucketInfo{
		{Name: "bad", Created: created, UsageCorrupt: true},
		{Name: "good", Created: created, Usage: adminapi.Usage{Objects: 2, Bytes: 2048}},
		{Name: "listed-in-part", Created: created, UsageHidden: true},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var v any
		switch r.URL.Path {
		case adminapi.BasePath + "/buckets":
			v = adminapi.BucketList{Buckets: buckets}
		case adminapi.BasePath + "/buckets/bad":
			v = buckets[0]
		case adminapi.BasePath + "/buckets/listed-in-part":
			v = buckets[2]
		default:
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}))
	t.Cleanup(srv.Close)
	env := map[string]string{"COFFER_ENDPOINT": srv.URL, "COFFER_ACCESS_KEY": "AK", "COFFER_SECRET_KEY": "SK"}

	code, stdout, stderr := runCLI(t, env, "admin", "bucket", "ls")
	for _, re := range []string{`(?m)^bad +\? +\? +\? +\? +no +2026-01-02T03:04:05Z$`, `(?m)^good +2 +2\.0 KiB +0 +0 B +no +2026-`,
		`(?m)^listed-in-part +- +- +- +- +no +2026-`} {
		if !regexp.MustCompile(re).MatchString(stdout) {
			t.Errorf("bucket ls does not match %q:\n%s", re, stdout)
		}
	}
	if want := "The stored usage of bad is corrupt (shown as ?); 'coffer admin usage check --repair' resets it.\n"; code != 0 || stderr != want {
		t.Errorf("bucket ls: exit %d, stderr %q; want 0, %q", code, stderr, want)
	}
	var list adminapi.BucketList
	code, stdout, _ = runCLI(t, env, "admin", "bucket", "ls", "--json")
	if err := json.Unmarshal([]byte(stdout), &list); err != nil || code != 0 {
		t.Fatalf("bucket ls --json: exit %d, %v:\n%s", code, err, stdout)
	}
	if diff := cmp.Diff(buckets, list.Buckets); diff != "" {
		t.Errorf("bucket ls --json (-want +got):\n%s", diff)
	}

	code, stdout, stderr = runCLI(t, env, "admin", "bucket", "info", "bad")
	if !regexp.MustCompile(`(?m)^Usage: +unknown: the stored value is corrupt; 'coffer admin usage check --repair' resets it$`).MatchString(stdout) ||
		strings.Contains(stdout, "Objects:") || code != 0 || stderr != "" {
		t.Errorf("bucket info of a corrupt bucket: exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
	code, stdout, stderr = runCLI(t, env, "admin", "bucket", "info", "listed-in-part")
	if !regexp.MustCompile(`(?m)^Usage: +not shown: you may not list the whole bucket$`).MatchString(stdout) ||
		strings.Contains(stdout, "Objects:") || code != 0 || stderr != "" {
		t.Errorf("bucket info of a bucket listed in part: exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
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
