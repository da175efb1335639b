package console

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/coffer-s3/coffer/internal/objects"
)

// alicePolicy lets alice list, create and delete buckets named alice-*,
// and nothing else.
const alicePolicy = `{"Version":"2012-10-17","Statement":[
 {"Effect":"Allow","Action":["s3:ListBucket","s3:CreateBucket","s3:DeleteBucket"],"Resource":"arn:aws:s3:::alice-*"}]}`

func TestBucketsFollowPolicies(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, 1)
	ctx := t.Context()
	if err := f.iam.PutPolicy(ctx, "alice-buckets", []byte(alicePolicy)); err != nil {
		t.Fatal(err)
	}
	f.user(t, "alice", "alice-password", "alice-buckets")
	f.user(t, "reader", "reader-password", "readonly")
	f.user(t, "nobody", "nobody-password")
	for _, b := range []string{"alice-one", "team-data"} {
		if err := f.objects.CreateBucket(ctx, b, objects.CreateBucketInput{}); err != nil {
			t.Fatal(err)
		}
	}
	page := func(id string) string {
		t.Helper()
		resp := f.do(t, request{method: "GET", path: "/buckets", cookie: id})
		if resp.StatusCode != 200 {
			t.Fatalf("GET /buckets: %d", resp.StatusCode)
		}
		return body(t, resp)
	}
	for _, tc := range []struct {
		user, password string
		see, hide      []string
		canDelete      []string
	}{
		{testRootKey, testRootSecret, []string{"alice-one", "team-data"}, nil, []string{"alice-one", "team-data"}},
		{"alice", "alice-password", []string{"alice-one"}, []string{"team-data"}, []string{"alice-one"}},
		{"reader", "reader-password", []string{"alice-one", "team-data"}, nil, nil},
		{"nobody", "nobody-password", nil, []string{"alice-one", "team-data"}, nil},
	} {
		id, _ := f.signIn(t, tc.user, tc.password)
		b := page(id)
		for _, n := range tc.see {
			if !strings.Contains(b, `data-bucket="`+n+`"`) {
				t.Errorf("%s does not see bucket %s", tc.user, n)
			}
		}
		for _, n := range tc.hide {
			if strings.Contains(b, n) {
				t.Errorf("%s sees bucket %s", tc.user, n)
			}
		}
		if got := strings.Count(b, "/delete\""); got != len(tc.canDelete) {
			t.Errorf("%s has %d delete links, want %d (%v)", tc.user, got, len(tc.canDelete), tc.canDelete)
		}
		if tc.user == "nobody" && !strings.Contains(b, `id="no-buckets"`) {
			t.Errorf("nobody's page does not say there are no buckets")
		}
	}

	id, csrf := f.signIn(t, "alice", "alice-password")
	create := func(name string) *http.Response {
		return f.do(t, request{method: "POST", path: "/buckets", cookie: id, form: url.Values{"csrf": {csrf}, "name": {name}}})
	}
	resp := create("alice-two")
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("create alice-two: %d\n%s", resp.StatusCode, body(t, resp))
	}
	if b := page(id); !strings.Contains(b, `data-bucket="alice-two"`) || !strings.Contains(b, "Created bucket alice-two.") {
		t.Errorf("the list after creating does not show the bucket and the message:\n%s", b)
	}
	if b := page(id); strings.Contains(b, "Created bucket") {
		t.Errorf("the message shows twice")
	}
	hb, err := f.objects.HeadBucket(ctx, "alice-two")
	if err != nil {
		t.Fatal(err)
	}
	if owner := hb.Owner; owner != f.canonicalID(t, "alice") {
		t.Errorf("alice-two is owned by %q, want alice's canonical ID as S3 would record", hb.Owner)
	}
	for _, tc := range []struct {
		name   string
		status int
		msg    string
	}{
		{"team-new", http.StatusForbidden, "Your policies do not allow this."},
		{"alice-two", http.StatusConflict, "already"},
		{"alice-Bad_Name", http.StatusBadRequest, "not valid"},
	} {
		resp := create(tc.name)
		b := body(t, resp)
		if resp.StatusCode != tc.status || !strings.Contains(b, tc.msg) || !strings.Contains(b, `value="`+tc.name+`"`) {
			t.Errorf("create %s: %d, want %d with %q and the name kept in the form\n%s", tc.name, resp.StatusCode, tc.status, tc.msg, b)
		}
	}

	// Delete: a confirmation page, then the POST.
	resp = f.do(t, request{method: "GET", path: "/buckets/alice-two/delete", cookie: id})
	if b := body(t, resp); resp.StatusCode != 200 || !strings.Contains(b, `action="/buckets/alice-two/delete"`) || !strings.Contains(b, `name="csrf"`) {
		t.Errorf("confirmation page: %d\n%s", resp.StatusCode, b)
	}
	if resp := f.do(t, request{method: "GET", path: "/buckets/team-data/delete", cookie: id}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("confirmation page of a bucket alice may not delete: %d, want 403", resp.StatusCode)
	}
	del := func(name string) *http.Response {
		return f.do(t, request{method: "POST", path: "/buckets/" + name + "/delete", cookie: id, form: url.Values{"csrf": {csrf}}})
	}
	if resp := del("team-data"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("delete team-data as alice: %d, want 403", resp.StatusCode)
	}
	if resp := del("alice-two"); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("delete alice-two: %d, want 303\n%s", resp.StatusCode, body(t, resp))
	}
	if b := page(id); strings.Contains(b, `data-bucket="alice-two"`) || !strings.Contains(b, "Deleted bucket alice-two.") {
		t.Errorf("the list after deleting:\n%s", b)
	}
	if resp := del("alice-missing"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("delete a missing bucket: %d, want 404", resp.StatusCode)
	}
	if _, err := f.objects.PutObject(ctx, "alice-one", "k", objects.PutInput{Size: 1}, strings.NewReader("x")); err != nil {
		t.Fatal(err)
	}
	resp = del("alice-one")
	if b := body(t, resp); resp.StatusCode != http.StatusConflict || !strings.Contains(b, "not empty") {
		t.Errorf("delete a bucket with an object: %d, want 409 saying it is not empty\n%s", resp.StatusCode, b)
	}
}

// corruptUsage is the object service with bucket's stored usage reported
// as corrupt, as objects.Service reports a value that does not decode.
type corruptUsage struct {
	Buckets
	bucket string
}

func (c corruptUsage) BucketsUsage(ctx context.Context) ([]objects.BucketUsage, error) {
	bs, err := c.Buckets.BucketsUsage(ctx)
	for i := range bs {
		if bs[i].Name == c.bucket {
			bs[i].Usage, bs[i].UsageCorrupt = objects.Usage{}, true
		}
	}
	return bs, err
}

// A bucket whose stored usage is corrupt is listed, saying so, and the
// others as they are.
func TestBucketsCorruptUsage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, 1)
	f.h.buckets = corruptUsage{Buckets: f.h.buckets, bucket: "bad"}
	f.bucket(t, "bad")
	f.bucket(t, "good")
	id, _ := f.signIn(t, testRootKey, testRootSecret)
	resp := f.do(t, request{method: "GET", path: "/buckets", cookie: id})
	b := body(t, resp)
	if resp.StatusCode != 200 {
		t.Fatalf("GET /buckets: %d\n%s", resp.StatusCode, b)
	}
	for _, want := range []string{
		"<tr data-bucket=\"bad\">\n    <td><a href=\"/objects/bad\">bad</a></td>\n    " + corruptUsageCell,
		"<tr data-bucket=\"good\">\n    <td><a href=\"/objects/good\">good</a></td>\n    <td class=\"num\">0</td>",
	} {
		if !strings.Contains(b, want) {
			t.Errorf("the bucket list has no %q:\n%s", want, b)
		}
	}
}

// TestBucketsUsageNeedsWholeList: a bucket's totals are shown only to a
// viewer who may list the whole bucket, as S3 would tell them by a
// listing; one who may list a prefix alone sees the bucket, not its
// totals.
func TestBucketsUsageNeedsWholeList(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, 1)
	ctx := t.Context()
	f.bucket(t, "shared")
	f.put(t, "shared", "home/bob/secret.txt", "bob's bytes")
	if err := f.iam.PutPolicy(ctx, "home-alice", []byte(`{"Version":"2012-10-17","Statement":[
 {"Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::shared","Condition":{"StringLike":{"s3:prefix":"home/alice/*"}}},
 {"Effect":"Allow","Action":"s3:*Object","Resource":"arn:aws:s3:::shared/home/alice/*"}]}`)); err != nil {
		t.Fatal(err)
	}
	f.user(t, "alice", "alice-password", "home-alice")
	for _, tc := range []struct {
		who, password string
		shown         bool
	}{{testRootKey, testRootSecret, true}, {"alice", "alice-password", false}} {
		id, _ := f.signIn(t, tc.who, tc.password)
		for path, totals := range map[string]string{"/buckets": "<td class=\"num\">1</td>", "/objects": "1 objects"} {
			resp := f.do(t, request{method: "GET", path: path, cookie: id})
			b := body(t, resp)
			if resp.StatusCode != 200 || !strings.Contains(b, `data-bucket="shared"`) {
				t.Fatalf("%s: GET %s: %d, or no bucket shared\n%s", tc.who, path, resp.StatusCode, b)
			}
			if got := strings.Contains(b, totals); got != tc.shown {
				t.Errorf("%s: GET %s shows the totals: %v, want %v\n%s", tc.who, path, got, tc.shown, b)
			}
		}
	}
}
