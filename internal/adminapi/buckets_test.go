package adminapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/coffer-s3/coffer/internal/blob/memblob"
	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/meta"
	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/sigv4"
)

// TestBucketVisibility checks that the bucket endpoints show a user only
// the buckets iam lets it see, and refuse the others as AccessDenied
// whether or not they exist.
func TestBucketVisibility(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		cred       sigv4.Credentials
		path       string
		wantStatus int
		wantCode   string
		wantNames  []string // for the list
		wantCalls  []string
	}{
		{name: "user lists", cred: userCred, path: "/buckets", wantStatus: 200, wantNames: []string{"photos"}, wantCalls: []string{"BucketsUsage()"}},
		{name: "root lists", cred: rootCred, path: "/buckets", wantStatus: 200, wantNames: []string{"photos", "private"}, wantCalls: []string{"BucketsUsage()"}},
		{name: "user gets a bucket it may not see", cred: userCred, path: "/buckets/private", wantStatus: 403, wantCode: CodeAccessDenied},
		{name: "user gets a bucket that does not exist", cred: userCred, path: "/buckets/nothing", wantStatus: 403, wantCode: CodeAccessDenied},
		{name: "root gets a bucket that does not exist", cred: rootCred, path: "/buckets/nothing", wantStatus: 404, wantCode: "NoSuchBucket",
			wantCalls: []string{"BucketUsage(nothing)"}},
		{name: "root gets a private bucket", cred: rootCred, path: "/buckets/private", wantStatus: 200, wantNames: []string{"private"},
			wantCalls: []string{"BucketUsage(private)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.be.allow[iam.ListAllMyBuckets] = true
			w := f.serve(signed(t, tc.cred, "GET", BasePath+tc.path, ""))
			if tc.wantCode != "" {
				checkError(t, w, tc.wantStatus, tc.wantCode, "")
			} else if w.Code != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.wantStatus, w.Body)
			}
			if diff := cmp.Diff(tc.wantCalls, f.be.Calls()); diff != "" {
				t.Errorf("backend calls (-want +got):\n%s", diff)
			}
			if tc.wantNames == nil {
				return
			}
			var got []string
			if tc.path == "/buckets" {
				var l BucketList
				decodeBody(t, w.Body.Bytes(), &l)
				for _, b := range l.Buckets {
					got = append(got, b.Name)
				}
			} else {
				var b BucketInfo
				decodeBody(t, w.Body.Bytes(), &b)
				got = []string{b.Name}
			}
			if diff := cmp.Diff(tc.wantNames, got); diff != "" {
				t.Errorf("buckets (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBucketsNotAvailable(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	h, err := New(Deps{IAM: f.be, Verifier: sigv4.NewVerifier(sigv4.Config{}, f.be), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	f.h = h
	for _, rq := range []struct{ method, path, body string }{
		{"GET", "/buckets", ""}, {"GET", "/buckets/photos", ""}, {"POST", "/usage/check", ""},
	} {
		w := f.serve(signed(t, rootCred, rq.method, BasePath+rq.path, rq.body))
		checkError(t, w, http.StatusNotImplemented, CodeNotImplemented, "bucket information is not available")
	}
}

func TestCheckUsageBodies(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body string
		wantStatus int
		wantCall   string
	}{
		{name: "empty body checks", body: "", wantStatus: 200, wantCall: "CheckUsage(false)"},
		{name: "no repair", body: `{}`, wantStatus: 200, wantCall: "CheckUsage(false)"},
		{name: "repair", body: `{"repair":true}`, wantStatus: 200, wantCall: "CheckUsage(true)"},
		{name: "unknown field", body: `{"fix":true}`, wantStatus: 400},
		{name: "not an object", body: `true`, wantStatus: 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			w := f.serve(signed(t, rootCred, "POST", BasePath+"/usage/check", tc.body))
			if w.Code != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.wantStatus, w.Body)
			}
			var want []string
			if tc.wantCall != "" {
				want = []string{tc.wantCall}
			}
			if diff := cmp.Diff(want, f.be.Calls()); diff != "" {
				t.Errorf("backend calls (-want +got):\n%s", diff)
			}
		})
	}

	// Mismatches reach the client whole.
	f := newFixture(t)
	f.be.checked = &objects.UsageCheck{Buckets: 4, Repaired: 1, Mismatches: []objects.UsageMismatch{
		{Bucket: "b", Stored: objects.Usage{Objects: 2}, Counted: objects.Usage{Objects: 1, Bytes: 9}},
		{Bucket: "ghost", Stored: objects.Usage{Objects: 1}, Problem: "usage of a bucket that does not exist"},
	}}
	c := newTestClient(t, f.h, rootCred)
	got, err := c.CheckUsage(t.Context(), UsageCheckRequest{Repair: true})
	if err != nil {
		t.Fatal(err)
	}
	got.DurationSeconds = 0
	want := UsageCheckResult{Buckets: 4, Repaired: 1, Mismatches: []UsageMismatch{
		{Bucket: "b", Stored: Usage{Objects: 2}, Counted: Usage{Objects: 1, Bytes: 9}},
		{Bucket: "ghost", Stored: Usage{Objects: 1}, Problem: "usage of a bucket that does not exist"},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CheckUsage (-want +got):\n%s", diff)
	}
}

// TestWithIAMBuckets runs the bucket endpoints over a real iam and a real
// object service: a user sees exactly the buckets its policy lets it list,
// with the usage the service counted.
func TestWithIAMBuckets(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, err := meta.Open(meta.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	svc, err := objects.New(objects.Config{}, db, memblob.New(), nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := iam.New(iam.Config{RootAccessKey: rootCred.AccessKeyID, RootSecretKey: rootCred.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(Deps{
		IAM:      m,
		Verifier: sigv4.NewVerifier(sigv4.Config{CacheSize: -1}, iamKeyring{m}),
		Buckets:  svc,
		Logger:   slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	root := newTestClient(t, h, rootCred)
	for _, b := range []string{"alice-photos", "alice-docs", "bob-stuff"} {
		mustDo(t, "create "+b, svc.CreateBucket(ctx, b, objects.CreateBucketInput{}))
	}
	for i, size := range []int{5, 1000, 0} {
		_, err := svc.PutObject(ctx, "alice-photos", string(rune('a'+i)), objects.PutInput{Size: int64(size)}, bytes.NewReader(make([]byte, size)))
		mustDo(t, "put", err)
	}
	_, err = svc.CreateMultipartUpload(ctx, "bob-stuff", "big", objects.CreateUploadInput{})
	mustDo(t, "create upload", err)

	alice := must[CreateUserResponse](t, "create alice")(root.CreateUser(ctx, "alice"))
	doc := []byte(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::alice-photos"}]}`)
	mustDo(t, "put policy", root.PutPolicy(ctx, "photos-reader", doc))
	mustDo(t, "attach", root.AttachPolicy(ctx, "photos-reader", iam.Target{User: "alice"}))
	ac := newTestClient(t, h, sigv4.Credentials{AccessKeyID: alice.AccessKey, SecretKey: alice.SecretKey})

	photos := Usage{Objects: 3, Bytes: 1005}
	got := must[[]BucketInfo](t, "alice lists")(ac.Buckets(ctx))
	if diff := cmp.Diff([]BucketInfo{{Name: "alice-photos", Created: got[0].Created, Usage: photos}}, got); diff != "" {
		t.Errorf("alice's buckets (-want +got):\n%s", diff)
	}
	all := must[[]BucketInfo](t, "root lists")(root.Buckets(ctx))
	var names []string
	usage := map[string]Usage{}
	for _, b := range all {
		names = append(names, b.Name)
		usage[b.Name] = b.Usage
	}
	if diff := cmp.Diff([]string{"alice-docs", "alice-photos", "bob-stuff"}, names); diff != "" {
		t.Errorf("root's buckets (-want +got):\n%s", diff)
	}
	if usage["alice-photos"] != photos || usage["bob-stuff"] != (Usage{Uploads: 1}) || usage["alice-docs"] != (Usage{}) {
		t.Errorf("usage = %+v", usage)
	}
	// carol may list alice-photos under a prefix alone: she sees the
	// bucket, not its totals, which S3 would not tell her.
	carol := must[CreateUserResponse](t, "create carol")(root.CreateUser(ctx, "carol"))
	doc = []byte(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::alice-photos",
		"Condition":{"StringLike":{"s3:prefix":"carol/*"}}}]}`)
	mustDo(t, "put policy", root.PutPolicy(ctx, "photos-carol", doc))
	mustDo(t, "attach", root.AttachPolicy(ctx, "photos-carol", iam.Target{User: "carol"}))
	cc := newTestClient(t, h, sigv4.Credentials{AccessKeyID: carol.AccessKey, SecretKey: carol.SecretKey})
	got = must[[]BucketInfo](t, "carol lists")(cc.Buckets(ctx))
	if diff := cmp.Diff([]BucketInfo{{Name: "alice-photos", Created: got[0].Created, UsageHidden: true}}, got); diff != "" {
		t.Errorf("carol's buckets (-want +got):\n%s", diff)
	}
	if one := must[BucketInfo](t, "carol gets the bucket")(cc.Bucket(ctx, "alice-photos")); one.Usage != (Usage{}) || !one.UsageHidden {
		t.Errorf("carol gets alice-photos = %+v, want no usage", one)
	}
	// Whether a bucket is public is told to whoever may ask S3
	// (s3:GetBucketPolicyStatus): root, not alice.
	mustDo(t, "make alice-docs public", svc.PutBucketPolicy(ctx, "alice-docs", []byte(`{"Version":"2012-10-17","Statement":[
		{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::alice-docs/*"}]}`)))
	doc = []byte(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::alice-docs"}]}`)
	mustDo(t, "put policy", root.PutPolicy(ctx, "docs-lister", doc))
	mustDo(t, "attach", root.AttachPolicy(ctx, "docs-lister", iam.Target{User: "alice"}))
	for who, c := range map[string]*Client{"root": root, "alice": ac} {
		if one := must[BucketInfo](t, who+" gets alice-docs")(c.Bucket(ctx, "alice-docs")); one.Public != (who == "root") {
			t.Errorf("%s gets alice-docs: public %v", who, one.Public)
		}
	}
	one := must[BucketInfo](t, "alice gets her bucket")(ac.Bucket(ctx, "alice-photos"))
	if one.Usage != photos {
		t.Errorf("alice-photos = %+v", one)
	}
	_, err = ac.Bucket(ctx, "bob-stuff")
	wantCode(t, "alice gets bob's bucket", err, CodeAccessDenied)
	_, err = root.Bucket(ctx, "nope")
	wantCode(t, "root gets a missing bucket", err, "NoSuchBucket")

	// Checking usage is administration: alice may not, root may.
	_, err = ac.CheckUsage(ctx, UsageCheckRequest{})
	wantCode(t, "alice checks usage", err, CodeAccessDenied)
	res := must[UsageCheckResult](t, "root checks usage")(root.CheckUsage(ctx, UsageCheckRequest{Repair: true}))
	if res.Buckets != 3 || len(res.Mismatches) != 0 || res.Repaired != 0 {
		t.Errorf("CheckUsage = %+v", res)
	}
	var e *Error
	if _, err := ac.Bucket(ctx, "bob-stuff"); !errors.As(err, &e) || e.Status != http.StatusForbidden {
		t.Errorf("status of a refused bucket = %v", err)
	}
}

// decodeBody decodes a response as the server decodes requests, refusing
// unknown fields, so that a test notices a field it does not expect.
func decodeBody(t *testing.T, body []byte, v any) {
	t.Helper()
	if err := decodeJSON(body, v); err != nil {
		t.Fatalf("response %s: %v", body, err)
	}
}

// TestBucketInfoCorruptUsage: a bucket whose stored usage does not decode
// is described with usageCorrupt (its usage zero), not left out or failed.
func TestBucketInfoCorruptUsage(t *testing.T) {
	t.Parallel()
	bu := objects.BucketUsage{Bucket: objects.Bucket{Name: "bad", Created: testTime}, UsageCorrupt: true}
	got := bucketInfo(bu, nil)
	if diff := cmp.Diff(BucketInfo{Name: "bad", Created: testTime, UsageCorrupt: true}, got); diff != "" {
		t.Errorf("bucketInfo (-want +got):\n%s", diff)
	}
	b, err := json.Marshal(got)
	if err != nil || !bytes.Contains(b, []byte(`"usageCorrupt":true`)) {
		t.Errorf("BucketInfo JSON = %s, %v; want usageCorrupt true", b, err)
	}
}
