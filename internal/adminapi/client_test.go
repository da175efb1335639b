package adminapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/s3err"
	"github.com/coffer-s3/coffer/internal/sigv4"
	"github.com/google/go-cmp/cmp"
)

// newTestClient returns a Client of cred for a server running h.
func newTestClient(t *testing.T, h http.Handler, cred sigv4.Credentials) *Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := NewClient(srv.URL, cred.AccessKeyID, cred.SecretKey, "", srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestClientRoundTrip calls every Client method of the admin API against
// the Handler over a fake backend and checks what reached the backend
// and what came back.
func TestClientRoundTrip(t *testing.T) {
	t.Parallel()
	expires := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	grace := 90.0
	wantNewKey := NewKey{KeyInfo: KeyInfo{AccessKey: "NEWKEY", User: "alice", Created: testTime}, SecretKey: "new-secret"}
	for _, tc := range []struct {
		name     string
		call     func(ctx context.Context, c *Client) (any, error)
		wantCall string
		want     any
	}{
		{"Users", func(ctx context.Context, c *Client) (any, error) { return c.Users(ctx) }, "Users()",
			[]UserInfo{{Name: "alice", Policies: []string{"readonly"}, Groups: []string{"devs"}, Created: testTime, CanonicalID: "c0ffee"}}},
		{"CreateUser", func(ctx context.Context, c *Client) (any, error) { return c.CreateUser(ctx, "alice") }, "CreateUser(alice)",
			CreateUserResponse{User: "alice", AccessKey: "NEWKEY", SecretKey: "new-secret"}},
		{"User", func(ctx context.Context, c *Client) (any, error) { return c.User(ctx, "a b/c") }, "User(a b/c)",
			UserInfo{Name: "a b/c", Policies: []string{"readonly"}, Groups: []string{"devs"}, Created: testTime, CanonicalID: "c0ffee"}},
		{"DeleteUser", func(ctx context.Context, c *Client) (any, error) { return nil, c.DeleteUser(ctx, "alice") }, "DeleteUser(alice)", nil},
		{"DisableUser", func(ctx context.Context, c *Client) (any, error) { return nil, c.DisableUser(ctx, "alice") }, "SetUserDisabled(alice, true)", nil},
		{"EnableUser", func(ctx context.Context, c *Client) (any, error) { return nil, c.EnableUser(ctx, "alice") }, "SetUserDisabled(alice, false)", nil},
		{"SetPassword", func(ctx context.Context, c *Client) (any, error) {
			return nil, c.SetPassword(ctx, "a b", "s3cret-pass")
		},
			"SetPassword(a b, 11 bytes)", nil},
		{"Keys", func(ctx context.Context, c *Client) (any, error) { return c.Keys(ctx, "al ice") }, "Keys(al ice)",
			[]KeyInfo{{AccessKey: "AK1", User: "alice", Description: "ci", Created: testTime}}},
		{"Keys of all", func(ctx context.Context, c *Client) (any, error) { return c.Keys(ctx, "") }, "Keys()",
			[]KeyInfo{{AccessKey: "AK1", User: "alice", Description: "ci", Created: testTime}}},
		{"CreateKey", func(ctx context.Context, c *Client) (any, error) {
			return c.CreateKey(ctx, CreateKeyRequest{User: "alice", Policy: json.RawMessage(`{"Version":"2012-10-17"}`), Description: "ci", Expires: &expires})
		}, `CreateKey(alice, policy={"Version":"2012-10-17"}, description=ci, expires=2030-01-01T00:00:00Z)`, wantNewKey},
		{"Key", func(ctx context.Context, c *Client) (any, error) { return c.Key(ctx, "AK1") }, "Key(AK1)",
			KeyInfo{AccessKey: "AK1", User: "alice", Description: "ci", Created: testTime}},
		{"DeleteKey", func(ctx context.Context, c *Client) (any, error) { return nil, c.DeleteKey(ctx, "AK1") }, "DeleteKey(AK1)", nil},
		{"Simulate", func(ctx context.Context, c *Client) (any, error) {
			return c.Simulate(ctx, SimulateRequest{AccessKey: "AK1", Action: "s3:PutObject", Resource: "arn:aws:s3:::b/k"})
		}, "Simulate(user=, key=AK1, s3:PutObject, b/k, ip=)",
			Simulation{Reason: iam.ReasonAllowed, Message: "Allowed.", Deciding: []iam.Evaluation{}, Evaluated: []iam.Evaluation{}, Action: "s3:PutObject"}},
		{"DisableKey", func(ctx context.Context, c *Client) (any, error) { return nil, c.DisableKey(ctx, "AK1") }, "SetKeyDisabled(AK1, true)", nil},
		{"EnableKey", func(ctx context.Context, c *Client) (any, error) { return nil, c.EnableKey(ctx, "AK1") }, "SetKeyDisabled(AK1, false)", nil},
		{"RotateKey", func(ctx context.Context, c *Client) (any, error) { return c.RotateKey(ctx, "AK1") }, "RotateKey(AK1)", wantNewKey},
		{"Groups", func(ctx context.Context, c *Client) (any, error) { return c.Groups(ctx) }, "Groups()",
			[]GroupInfo{{Name: "devs", Members: []string{"alice"}, Policies: []string{}, Created: testTime}}},
		{"CreateGroup", func(ctx context.Context, c *Client) (any, error) { return nil, c.CreateGroup(ctx, "devs") }, "CreateGroup(devs)", nil},
		{"Group", func(ctx context.Context, c *Client) (any, error) { return c.Group(ctx, "devs") }, "Group(devs)",
			GroupInfo{Name: "devs", Members: []string{"alice"}, Policies: []string{}, Created: testTime}},
		{"DeleteGroup", func(ctx context.Context, c *Client) (any, error) { return nil, c.DeleteGroup(ctx, "devs") }, "DeleteGroup(devs)", nil},
		{"UpdateGroupMembers", func(ctx context.Context, c *Client) (any, error) {
			return nil, c.UpdateGroupMembers(ctx, "devs", []string{"a"}, []string{"b", "c"})
		}, "UpdateGroupMembers(devs, add=a, remove=b,c)", nil},
		{"Policies", func(ctx context.Context, c *Client) (any, error) { return c.Policies(ctx) }, "Policies()",
			[]PolicyInfo{{Name: "readonly", Canned: true, Document: json.RawMessage(`{"Version":"2012-10-17"}`), Users: []string{}, Groups: []string{}}}},
		{"PutPolicy", func(ctx context.Context, c *Client) (any, error) {
			return nil, c.PutPolicy(ctx, "p1", []byte("{\n  \"Version\": \"2012-10-17\"\n}"))
		}, "PutPolicy(p1, {\n  \"Version\": \"2012-10-17\"\n})", nil},
		{"Policy", func(ctx context.Context, c *Client) (any, error) { return c.Policy(ctx, "p1") }, "Policy(p1)",
			PolicyInfo{Name: "p1", Document: json.RawMessage(`{"Version":"2012-10-17"}`), Users: []string{"alice"}, Groups: []string{}, Created: testTime}},
		{"DeletePolicy", func(ctx context.Context, c *Client) (any, error) { return nil, c.DeletePolicy(ctx, "p1") }, "DeletePolicy(p1)", nil},
		{"AttachPolicy", func(ctx context.Context, c *Client) (any, error) {
			return nil, c.AttachPolicy(ctx, "p1", iam.Target{User: "alice"})
		}, "AttachPolicy(p1, user=alice, group=)", nil},
		{"DetachPolicy", func(ctx context.Context, c *Client) (any, error) {
			return nil, c.DetachPolicy(ctx, "p1", iam.Target{Group: "devs"})
		}, "DetachPolicy(p1, user=, group=devs)", nil},
		{"Buckets", func(ctx context.Context, c *Client) (any, error) { return c.Buckets(ctx) }, "BucketsUsage()",
			[]BucketInfo{
				{Name: "photos", Created: testTime, Usage: Usage{Objects: 3, Bytes: 3 << 20, Uploads: 1, PartBytes: 5 << 20}, Public: true},
				{Name: "private", Region: "eu-west-1", Created: testTime, Usage: Usage{Objects: 1, Bytes: 10}},
			}},
		{"Bucket", func(ctx context.Context, c *Client) (any, error) { return c.Bucket(ctx, "private") }, "BucketUsage(private)",
			BucketInfo{Name: "private", Region: "eu-west-1", Created: testTime, Usage: Usage{Objects: 1, Bytes: 10}}},
		{"CheckUsage", func(ctx context.Context, c *Client) (any, error) {
			r, err := c.CheckUsage(ctx, UsageCheckRequest{})
			r.DurationSeconds = 0
			return r, err
		}, "CheckUsage(false)", UsageCheckResult{Buckets: 2, Mismatches: []UsageMismatch{}}},
		{"WhoAmI", func(ctx context.Context, c *Client) (any, error) { return c.WhoAmI(ctx) }, "",
			WhoAmI{AccessKey: "ROOTKEY", Root: true}},
		{"GC", func(ctx context.Context, c *Client) (any, error) {
			r, err := c.GC(ctx, GCRequest{GraceSeconds: &grace})
			r.DurationSeconds = 0
			return r, err
		}, "", GCResult{GraceSeconds: 90, Scanned: 7, Deleted: 3, DeletedBytes: 300, ExpiredUploads: 1}},
		{"RunLifecycle", func(ctx context.Context, c *Client) (any, error) {
			r, err := c.RunLifecycle(ctx, LifecycleRunRequest{Bucket: "logs"})
			return r.Totals, err
		}, "", LifecycleBucketResult{Examined: 14, ObjectsExpired: 3, DeleteMarkersCreated: 1, VersionsRemoved: 2, DeleteMarkersRemoved: 1,
			UploadsAborted: 1, Skipped: 1, DeletedBytes: 500, Error: "InternalError: We encountered an internal error. Please try again."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			c := newTestClient(t, f.h, rootCred)
			got, err := tc.call(t.Context(), c)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("result mismatch (-want +got):\n%s", diff)
			}
			var wantCalls []string
			if tc.wantCall != "" {
				wantCalls = []string{tc.wantCall}
			}
			if diff := cmp.Diff(wantCalls, f.be.Calls()); diff != "" {
				t.Errorf("backend calls mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestClientErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.be.err = fmt.Errorf("%w: user %q", iam.ErrNotFound, "bob")
	c := newTestClient(t, f.h, rootCred)
	_, err := c.User(t.Context(), "bob")
	want := &Error{Status: 404, Code: CodeNoSuchEntity, Message: `user "bob"`, RequestID: "REQ1"}
	var got *Error
	if !errors.As(err, &got) {
		t.Fatalf("User error = %v (%T), want *Error", err, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("error mismatch (-want +got):\n%s", diff)
	}
	if s := err.Error(); s != `NoSuchEntity: user "bob" (request id REQ1)` {
		t.Errorf("Error() = %q", s)
	}

	// A key the server does not know.
	bad := newTestClient(t, f.h, sigv4.Credentials{AccessKeyID: "NOPE", SecretKey: "x"})
	_, err = bad.WhoAmI(t.Context())
	if !errors.As(err, &got) || got.Code != "InvalidAccessKeyId" || got.Status != 403 {
		t.Errorf("WhoAmI with an unknown key: %v, want 403 InvalidAccessKeyId", err)
	}
}

func TestReadError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		status int
		header http.Header
		body   string
		want   Error
	}{
		{name: "json", status: 409, body: `{"code":"EntityAlreadyExists","message":"user \"a\"","requestId":"R1"}`,
			want: Error{Status: 409, Code: "EntityAlreadyExists", Message: `user "a"`, RequestID: "R1"}},
		{name: "s3 xml", status: 404, header: http.Header{"X-Amz-Request-Id": {"HDR"}},
			body: `<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<Error><Code>NoSuchBucketPolicy</Code><Message>The bucket policy does not exist</Message><BucketName>b</BucketName><RequestId>R2</RequestId></Error>`,
			want: Error{Status: 404, Code: "NoSuchBucketPolicy", Message: "The bucket policy does not exist", RequestID: "R2"}},
		{name: "xml without request id", status: 403, header: http.Header{"X-Amz-Request-Id": {"HDR"}},
			body: `<Error><Code>AccessDenied</Code><Message>Access Denied.</Message></Error>`,
			want: Error{Status: 403, Code: "AccessDenied", Message: "Access Denied.", RequestID: "HDR"}},
		{name: "bare status", status: 502, body: "<html>bad gateway</html>",
			want: Error{Status: 502, Code: "BadGateway", Message: "HTTP status 502"}},
		{name: "empty", status: 404, want: Error{Status: 404, Code: "NotFound", Message: "HTTP status 404"}},
		{name: "unknown status", status: 599, want: Error{Status: 599, Code: "HTTP599", Message: "HTTP status 599"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			resp := &http.Response{StatusCode: tc.status, Header: tc.header, Body: io.NopCloser(strings.NewReader(tc.body))}
			if resp.Header == nil {
				resp.Header = http.Header{}
			}
			got := readError(resp)
			if diff := cmp.Diff(&tc.want, got); diff != "" {
				t.Errorf("readError mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewClient(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		endpoint, ak, sk string
		wantErr          string
	}{
		{endpoint: "http://127.0.0.1:6789", ak: "a", sk: "b"},
		{endpoint: "https://s3.example.com/", ak: "a", sk: "b"},
		{endpoint: "127.0.0.1:6789", ak: "a", sk: "b", wantErr: "want http(s)://host[:port]"},
		{endpoint: "ftp://host", ak: "a", sk: "b", wantErr: "want http(s)://host[:port]"},
		{endpoint: "http://host/prefix", ak: "a", sk: "b", wantErr: "want http(s)://host[:port]"},
		{endpoint: "http://host?x=1", ak: "a", sk: "b", wantErr: "want http(s)://host[:port]"},
		{endpoint: "http://u:p@host", ak: "a", sk: "b", wantErr: `endpoint "http://***@host": want http(s)://host[:port]`},
		{endpoint: "https://ghp_Sup3rS3cret@host/", ak: "a", sk: "b", wantErr: `endpoint "https://***@host/": want http(s)://host[:port]`},
		{endpoint: "https://AKID:Sup3rS3cret@host/x", ak: "a", sk: "b", wantErr: `endpoint "https://***@host/x": want http(s)://host[:port]`},
		{endpoint: "http://host", ak: "", sk: "b", wantErr: "access key and secret key are required"},
		{endpoint: "http://host", ak: "a", sk: "", wantErr: "access key and secret key are required"},
		{endpoint: "http://[::1", ak: "a", sk: "b", wantErr: "endpoint"},
	} {
		c, err := NewClient(tc.endpoint, tc.ak, tc.sk, "", nil)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("NewClient(%q): %v", tc.endpoint, err)
		case tc.wantErr == "" && c.Endpoint() != strings.TrimSuffix(tc.endpoint, "/"):
			t.Errorf("NewClient(%q).Endpoint() = %q", tc.endpoint, c.Endpoint())
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("NewClient(%q, %q, %q) error = %v, want %q", tc.endpoint, tc.ak, tc.sk, err, tc.wantErr)
		case err != nil && strings.Contains(err.Error(), "Sup3rS3cret"):
			t.Errorf("NewClient(%q) error = %v: it shows the secret in the URL", tc.endpoint, err)
		}
	}
}

// fakeS3 serves ?policy of one bucket like S3, verifying signatures and
// payload hashes with sigv4.
type fakeS3 struct {
	v      *sigv4.Verifier
	mu     sync.Mutex // guards policy
	policy []byte
}

func (s *fakeS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fail := func(status int, code, msg string) {
		w.Header().Set("Content-Type", "application/xml")
		w.Header().Set("x-amz-request-id", "S3REQ")
		w.WriteHeader(status)
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n<Error><Code>%s</Code><Message>%s</Message><RequestId>S3REQ</RequestId></Error>", code, msg)
	}
	res, err := s.v.Verify(r)
	if err != nil {
		var e *s3err.Error
		errors.As(err, &e)
		fail(e.Status(), string(e.Code), e.Msg())
		return
	}
	if res.Anonymous || res.Payload != sigv4.PayloadSigned {
		fail(403, "AccessDenied", "want a signed payload")
		return
	}
	if _, ok := r.URL.Query()["policy"]; !ok || r.URL.Path != "/my-bucket" {
		fail(400, "InvalidRequest", "unexpected "+r.URL.String())
		return
	}
	b, err := res.Body(r.Body)
	if err != nil {
		fail(500, "InternalError", err.Error())
		return
	}
	body, err := io.ReadAll(b)
	if err != nil {
		fail(400, "XAmzContentSHA256Mismatch", err.Error())
		return
	}
	switch r.Method {
	case http.MethodPut:
		s.policy = body
		w.WriteHeader(http.StatusNoContent)
	case http.MethodGet:
		if s.policy == nil {
			fail(404, "NoSuchBucketPolicy", "The bucket policy does not exist")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(s.policy)
	case http.MethodDelete:
		s.policy = nil
		w.WriteHeader(http.StatusNoContent)
	}
}

func TestClientBucketPolicy(t *testing.T) {
	t.Parallel()
	be := newFakeBackend()
	s3 := &fakeS3{v: sigv4.NewVerifier(sigv4.Config{}, be)}
	c := newTestClient(t, s3, rootCred)
	ctx := t.Context()
	doc := []byte(`{"Version":"2012-10-17","Statement":[]}`)
	if err := c.PutBucketPolicy(ctx, "my-bucket", doc); err != nil {
		t.Fatalf("PutBucketPolicy: %v", err)
	}
	got, err := c.GetBucketPolicy(ctx, "my-bucket")
	if err != nil || string(got) != string(doc) {
		t.Fatalf("GetBucketPolicy = %q, %v; want %q", got, err, doc)
	}
	if err := c.DeleteBucketPolicy(ctx, "my-bucket"); err != nil {
		t.Fatalf("DeleteBucketPolicy: %v", err)
	}
	_, err = c.GetBucketPolicy(ctx, "my-bucket")
	want := &Error{Status: 404, Code: "NoSuchBucketPolicy", Message: "The bucket policy does not exist", RequestID: "S3REQ"}
	var ae *Error
	if !errors.As(err, &ae) {
		t.Fatalf("GetBucketPolicy after delete: %v, want *Error", err)
	}
	if diff := cmp.Diff(want, ae); diff != "" {
		t.Errorf("error mismatch (-want +got):\n%s", diff)
	}
	if err := c.PutBucketPolicy(ctx, "other", doc); err == nil {
		t.Error("PutBucketPolicy on another bucket succeeded against the fake")
	}
}

func TestPresign(t *testing.T) {
	t.Parallel()
	be := newFakeBackend()
	c, err := NewClient("http://127.0.0.1:6789", rootCred.AccessKeyID, rootCred.SecretKey, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	u, err := c.Presign(http.MethodPut, "b", "dir/a key+x", 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(u, "http://127.0.0.1:6789/b/dir/a%20key%2Bx?") || !strings.Contains(u, "X-Amz-Expires=600") {
		t.Errorf("Presign = %q, want a path-style URL of b/dir/a key+x valid 600 s", u)
	}
	v := sigv4.NewVerifier(sigv4.Config{}, be)
	r := httptest.NewRequest(http.MethodPut, u, nil)
	res, err := v.Verify(r)
	if err != nil || res.AccessKeyID != rootCred.AccessKeyID || !res.Presigned {
		t.Errorf("Verify(presigned) = %+v, %v", res, err)
	}
	if r.URL.Path != "/b/dir/a key+x" {
		t.Errorf("presigned path decodes to %q", r.URL.Path)
	}
	if _, err := v.Verify(httptest.NewRequest(http.MethodGet, u, nil)); !s3err.Is(err, s3err.SignatureDoesNotMatch) {
		t.Errorf("Verify with another method: %v, want SignatureDoesNotMatch", err)
	}
	if _, err := c.Presign(http.MethodGet, "b", "k", 8*24*time.Hour); err == nil {
		t.Error("Presign for 8 days succeeded")
	}
}
