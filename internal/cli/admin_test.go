package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coffer-s3/coffer/internal/adminapi"
	"github.com/coffer-s3/coffer/internal/blob/memblob"
	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/meta"
	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/sigv4"
	"github.com/google/go-cmp/cmp"
)

const (
	testRootKey    = "ROOTACCESSKEY0000000"
	testRootSecret = "root-secret-for-tests"
)

// iamKeyring adapts iam to sigv4.Keyring, as the server does.
type iamKeyring struct{ m *iam.IAM }

func (k iamKeyring) SecretKey(ctx context.Context, id string) (string, error) {
	s, err := k.m.SecretKey(ctx, id)
	if errors.Is(err, iam.ErrUnknownKey) {
		return "", sigv4.ErrUnknownKey
	}
	return s, err
}

// bucketPolicies serves S3's ?policy operations for any bucket, verifying
// signatures, as the server's S3 API does.
type bucketPolicies struct {
	v    *sigv4.Verifier
	mu   sync.Mutex // guards docs
	docs map[string][]byte
}

func (b *bucketPolicies) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	fail := func(status int, code, msg string) {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(status)
		fmt.Fprintf(w, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code><Message>%s</Message><RequestId>S3REQ</RequestId></Error>", code, msg)
	}
	res, err := b.v.Verify(r)
	if err != nil || res.Anonymous {
		fail(403, "AccessDenied", "Access Denied.")
		return
	}
	if _, ok := r.URL.Query()["policy"]; !ok {
		fail(501, "NotImplemented", "only ?policy")
		return
	}
	bucket := strings.Trim(r.URL.Path, "/")
	body, err := res.Body(r.Body)
	if err != nil {
		fail(500, "InternalError", err.Error())
		return
	}
	data, err := io.ReadAll(body)
	if err != nil {
		fail(400, "XAmzContentSHA256Mismatch", err.Error())
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch r.Method {
	case http.MethodPut:
		b.docs[bucket] = data
		w.WriteHeader(http.StatusNoContent)
	case http.MethodGet:
		doc, ok := b.docs[bucket]
		if !ok {
			fail(404, "NoSuchBucketPolicy", "The bucket policy does not exist")
			return
		}
		_, _ = w.Write(doc)
	case http.MethodDelete:
		delete(b.docs, bucket)
		w.WriteHeader(http.StatusNoContent)
	}
}

// adminServer is an httptest server with the admin API over a real
// in-memory iam, and bucket policies.
type adminServer struct {
	url      string
	verifier *sigv4.Verifier
	env      map[string]string // root credentials and the endpoint
	graces   chan time.Duration
	objects  *objects.Service // the buckets the admin API describes
	iam      *iam.IAM
}

func newAdminServer(t *testing.T) *adminServer {
	t.Helper()
	m, err := iam.New(iam.Config{RootAccessKey: testRootKey, RootSecretKey: testRootSecret})
	if err != nil {
		t.Fatal(err)
	}
	v := sigv4.NewVerifier(sigv4.Config{CacheSize: -1}, iamKeyring{m})
	db, err := meta.Open(meta.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	svc, err := objects.New(objects.Config{}, db, memblob.New(), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &adminServer{verifier: v, graces: make(chan time.Duration, 10), objects: svc, iam: m}
	h, err := adminapi.New(adminapi.Deps{
		IAM:      m,
		Verifier: v,
		GC: func(_ context.Context, grace time.Duration) (objects.GCStats, error) {
			s.graces <- grace
			return objects.GCStats{Grace: grace, Scanned: 12, Deleted: 2, DeletedBytes: 2048}, nil
		},
		Buckets: svc,
		Logger:  slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	bp := &bucketPolicies{v: v, docs: map[string][]byte{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, adminapi.PathPrefix) {
			h.ServeHTTP(w, r)
			return
		}
		bp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL
	s.env = map[string]string{"COFFER_ENDPOINT": srv.URL, "COFFER_ROOT_ACCESS_KEY": testRootKey, "COFFER_ROOT_SECRET_KEY": testRootSecret}
	return s
}

// admin runs `coffer admin args…` with the server's environment.
func (s *adminServer) admin(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runCLI(t, s.env, append([]string{"admin"}, args...)...)
}

// ok runs a command that must succeed and returns its output.
func (s *adminServer) ok(t *testing.T, args ...string) string {
	t.Helper()
	code, stdout, stderr := s.admin(t, args...)
	if code != 0 {
		t.Fatalf("coffer admin %q: exit %d\nstdout: %s\nstderr: %s", args, code, stdout, stderr)
	}
	return stdout
}

// fails runs a command that must fail with code and a message containing
// want on stderr.
func (s *adminServer) fails(t *testing.T, code int, want string, args ...string) {
	t.Helper()
	got, stdout, stderr := s.admin(t, args...)
	if got != code || !strings.Contains(stderr, want) {
		t.Errorf("coffer admin %q: exit %d, stderr %q (stdout %q); want exit %d and %q", args, got, stderr, stdout, code, want)
	}
}

// decode decodes JSON output into v, failing on unknown fields.
func decode(t *testing.T, out string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("output %q: %v", out, err)
	}
}

// jsonKeys returns the sorted top-level keys of a JSON object.
func jsonKeys(t *testing.T, out string) []string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("output %q is not a JSON object: %v", out, err)
	}
	return slices.Sorted(maps.Keys(m))
}

// writeFile writes a file in a temporary directory and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const readUsersPolicy = `{
  "Version": "2012-10-17",
  "Statement": [{"Effect": "Allow", "Action": ["admin:ListUsers", "admin:GetUser"], "Resource": "*"}]
}
`

func TestAdminUsers(t *testing.T) {
	t.Parallel()
	s := newAdminServer(t)

	out := s.ok(t, "whoami")
	if !regexpMatch(`(?m)^User:\s+\(root\)$`, out) || !regexpMatch(`(?m)^Access key ID:\s+`+testRootKey+`$`, out) || !regexpMatch(`(?m)^Endpoint:\s+`+s.url+`$`, out) {
		t.Errorf("whoami = %q", out)
	}
	var who adminapi.WhoAmI
	decode(t, s.ok(t, "whoami", "--json"), &who)
	if diff := cmp.Diff(adminapi.WhoAmI{AccessKey: testRootKey, Root: true}, who); diff != "" {
		t.Errorf("whoami --json (-want +got):\n%s", diff)
	}

	// --json output of user add is exactly user, accessKey, secretKey;
	// the flag may follow the argument.
	out = s.ok(t, "user", "add", "alice", "--json")
	if diff := cmp.Diff([]string{"accessKey", "secretKey", "user"}, jsonKeys(t, out)); diff != "" {
		t.Errorf("user add --json keys (-want +got):\n%s", diff)
	}
	var alice adminapi.CreateUserResponse
	decode(t, out, &alice)
	if alice.User != "alice" || alice.AccessKey == "" || alice.SecretKey == "" {
		t.Fatalf("user add --json = %+v", alice)
	}

	code, out, errOut := s.admin(t, "user", "add", "bob")
	if code != 0 || !regexpMatch(`(?m)^User:\s+bob$`, out) || !regexpMatch(`(?m)^Access key ID:\s+[A-Z0-9]{20}$`, out) ||
		!regexpMatch(`(?m)^Secret access key:\s+\S{40}$`, out) || !strings.Contains(errOut, "cannot be shown again") {
		t.Errorf("user add bob: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}

	s.fails(t, 1, `coffer admin: EntityAlreadyExists: user "alice" (request id `, "user", "add", "alice")
	s.fails(t, 1, `coffer admin: InvalidInput: user name "no way" may contain only`, "user", "add", "no way")
	s.fails(t, 1, `coffer admin: NoSuchEntity: user "carol"`, "user", "show", "carol")

	out = s.ok(t, "user", "ls")
	if !regexpMatch(`(?m)^NAME\s+STATUS\s+GROUPS\s+POLICIES\s+CREATED$`, out) || !regexpMatch(`(?m)^alice\s+active\s+-\s+-\s+\d{4}-`, out) || !regexpMatch(`(?m)^bob\s+active`, out) {
		t.Errorf("user ls =\n%s", out)
	}
	var ul adminapi.UserList
	decode(t, s.ok(t, "user", "ls", "--json"), &ul)
	if len(ul.Users) != 2 || ul.Users[0].Name != "alice" || ul.Users[1].Name != "bob" {
		t.Errorf("user ls --json = %+v", ul)
	}

	if out := s.ok(t, "user", "disable", "alice"); out != "Disabled user alice.\n" {
		t.Errorf("user disable = %q", out)
	}
	if out := s.ok(t, "user", "show", "--json", "alice"); !strings.Contains(out, `"disabled": true`) {
		t.Errorf("user show after disable = %s", out)
	}
	// alice's key no longer works.
	code, _, errOut = runCLI(t, map[string]string{"COFFER_ENDPOINT": s.url}, "admin", "whoami", "--access-key", alice.AccessKey, "--secret-key", alice.SecretKey)
	if code != 1 || !strings.Contains(errOut, "coffer admin: InvalidAccessKeyId") || !strings.Contains(errOut, "Check the credentials") {
		t.Errorf("whoami as disabled alice: exit %d, stderr %q", code, errOut)
	}
	if out := s.ok(t, "user", "enable", "alice", "--json"); out != "" {
		t.Errorf("user enable --json printed %q, want nothing", out)
	}

	// alice, through COFFER_ACCESS_KEY, which wins over the root key.
	aliceEnv := map[string]string{"COFFER_ACCESS_KEY": alice.AccessKey, "COFFER_SECRET_KEY": alice.SecretKey}
	maps.Copy(aliceEnv, s.env)
	code, out, _ = runCLI(t, aliceEnv, "admin", "whoami")
	if code != 0 || !regexpMatch(`(?m)^User:\s+alice$`, out) {
		t.Errorf("whoami as alice: exit %d, %q", code, out)
	}
	code, _, errOut = runCLI(t, aliceEnv, "admin", "user", "ls")
	if code != 1 || !strings.Contains(errOut, "coffer admin: AccessDenied: user alice is not allowed to perform admin:ListUsers") {
		t.Errorf("user ls as alice: exit %d, stderr %q", code, errOut)
	}

	// Policies: a custom one through a group, then canned ones directly.
	pf := writeFile(t, "read-users.json", readUsersPolicy)
	if out := s.ok(t, "policy", "add", "read-users", pf); out != "Saved policy read-users.\n" {
		t.Errorf("policy add = %q", out)
	}
	s.ok(t, "group", "add", "auditors")
	if out := s.ok(t, "group", "members", "auditors", "--add", "alice,bob", "--remove", ""); out != "Group auditors: added alice, bob.\n" {
		t.Errorf("group members = %q", out)
	}
	if out := s.ok(t, "policy", "attach", "read-users", "--group", "auditors"); out != "Attached policy read-users to group auditors.\n" {
		t.Errorf("policy attach = %q", out)
	}
	if code, out, _ = runCLI(t, aliceEnv, "admin", "user", "ls"); code != 0 || !strings.Contains(out, "auditors") {
		t.Errorf("user ls as alice in auditors: exit %d, %q", code, out)
	}
	out = s.ok(t, "group", "show", "auditors")
	if !regexpMatch(`(?m)^Members:\s+alice,bob$`, out) || !regexpMatch(`(?m)^Policies:\s+read-users$`, out) {
		t.Errorf("group show =\n%s", out)
	}
	if out := s.ok(t, "group", "ls"); !regexpMatch(`(?m)^auditors\s+alice,bob\s+read-users\s+\d{4}-`, out) {
		t.Errorf("group ls =\n%s", out)
	}
	out = s.ok(t, "policy", "ls")
	for _, re := range []string{`(?m)^NAME\s+TYPE\s+USERS\s+GROUPS\s+CREATED$`, `(?m)^read-users\s+custom\s+-\s+auditors\s`, `(?m)^readonly\s+built-in\s+-\s+-\s+-$`, `(?m)^admin\s+built-in`} {
		if !regexpMatch(re, out) {
			t.Errorf("policy ls does not match %s:\n%s", re, out)
		}
	}
	out = s.ok(t, "policy", "show", "read-users")
	if !strings.Contains(out, "\n  \"Statement\": [\n") || !json.Valid([]byte(out)) {
		t.Errorf("policy show is not the pretty-printed document:\n%s", out)
	}
	var pi adminapi.PolicyInfo
	decode(t, s.ok(t, "policy", "show", "read-users", "--json"), &pi)
	if pi.Name != "read-users" || !slices.Equal(pi.Groups, []string{"auditors"}) {
		t.Errorf("policy show --json = %+v", pi)
	}
	s.fails(t, 1, "coffer admin: DeleteConflict: policy \"read-users\" is attached to group \"auditors\"", "policy", "rm", "read-users")
	s.fails(t, 1, "coffer admin: InvalidInput", "policy", "add", "readonly", pf)
	s.fails(t, 1, "coffer admin: MalformedPolicyDocument", "policy", "add", "broken", writeFile(t, "b.json", `{"Statement":"x"}`))

	s.ok(t, "policy", "attach", "admin", "--user", "bob")
	if out := s.ok(t, "user", "show", "bob"); !regexpMatch(`(?m)^Policies:\s+admin$`, out) || !regexpMatch(`(?m)^Groups:\s+auditors$`, out) {
		t.Errorf("user show bob =\n%s", out)
	}
	if out := s.ok(t, "policy", "detach", "admin", "--user", "bob"); out != "Detached policy admin from user bob.\n" {
		t.Errorf("policy detach = %q", out)
	}
	s.fails(t, 1, "coffer admin: NoSuchEntity", "policy", "detach", "admin", "--user", "bob")

	s.ok(t, "policy", "detach", "read-users", "--group", "auditors")
	s.ok(t, "policy", "rm", "read-users")
	s.ok(t, "group", "members", "auditors", "--remove", "bob")
	if out := s.ok(t, "group", "show", "auditors", "--json"); !strings.Contains(out, `"members": [
    "alice"
  ]`) {
		t.Errorf("group show after removing bob:\n%s", out)
	}
	if out := s.ok(t, "group", "rm", "auditors"); out != "Deleted group auditors.\n" {
		t.Errorf("group rm = %q", out)
	}
	if out := s.ok(t, "user", "rm", "bob"); out != "Deleted user bob.\n" {
		t.Errorf("user rm = %q", out)
	}
	s.fails(t, 1, "NoSuchEntity", "user", "rm", "bob")
}

func regexpMatch(re, s string) bool {
	return regexp.MustCompile(re).MatchString(s)
}

func TestAdminKeys(t *testing.T) {
	t.Parallel()
	s := newAdminServer(t)
	s.ok(t, "user", "add", "alice")
	scope := writeFile(t, "scope.json", `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::photos/*"}]}`)

	before := time.Now()
	out := s.ok(t, "key", "add", "--user", "alice", "--policy", scope, "--description", "backup job", "--expires", "720h", "--json")
	var k adminapi.NewKey
	decode(t, out, &k)
	if k.User != "alice" || k.SecretKey == "" || k.Description != "backup job" || k.Expires == nil || len(k.Policy) == 0 {
		t.Fatalf("key add --json = %+v", k)
	}
	if d := k.Expires.Sub(before); d < 719*time.Hour || d > 721*time.Hour {
		t.Errorf("key expires %v, want about 720h from now", k.Expires)
	}

	out = s.ok(t, "key", "add", "--user=alice", "--expires", "2099-01-02T03:04:05Z")
	if !regexpMatch(`(?m)^Expires:\s+2099-01-02T03:04:05Z$`, out) || !regexpMatch(`(?m)^Secret access key:\s+\S+$`, out) {
		t.Errorf("key add text =\n%s", out)
	}

	out = s.ok(t, "key", "ls", "--user", "alice")
	if !regexpMatch(`(?m)^ACCESS KEY\s+USER\s+STATUS\s+SCOPED\s+EXPIRES\s+CREATED\s+DESCRIPTION$`, out) ||
		!regexpMatch(`(?m)^`+k.AccessKey+`\s+alice\s+active\s+yes\s+\d{4}-.*backup job$`, out) || strings.Count(out, "\n") != 4 {
		t.Errorf("key ls =\n%s", out)
	}
	var kl adminapi.KeyList
	decode(t, s.ok(t, "key", "ls", "--json"), &kl)
	if len(kl.Keys) != 3 {
		t.Errorf("key ls --json has %d keys, want 3", len(kl.Keys))
	}
	out = s.ok(t, "key", "show", k.AccessKey)
	if !regexpMatch(`(?m)^Description:\s+backup job$`, out) || !strings.Contains(out, "Policy:\n{\n  \"Version\"") {
		t.Errorf("key show =\n%s", out)
	}

	if out := s.ok(t, "key", "disable", k.AccessKey); out != "Disabled access key "+k.AccessKey+".\n" {
		t.Errorf("key disable = %q", out)
	}
	if out := s.ok(t, "key", "ls", "--user", "alice"); !regexpMatch(`(?m)^`+k.AccessKey+`\s+alice\s+disabled`, out) {
		t.Errorf("key ls after disable =\n%s", out)
	}
	s.ok(t, "key", "enable", k.AccessKey)

	code, out, errOut := s.admin(t, "key", "rotate", k.AccessKey)
	if code != 0 || !strings.Contains(errOut, k.AccessKey+" no longer works") {
		t.Fatalf("key rotate: exit %d\n%s\n%s", code, out, errOut)
	}
	s.fails(t, 1, "coffer admin: NoSuchEntity: access key", "key", "show", k.AccessKey)
	var rotated adminapi.NewKey
	decode(t, s.ok(t, "key", "rotate", strings.Fields(strings.Split(out, "Access key ID:")[1])[0], "--json"), &rotated)
	if rotated.Description != "backup job" {
		t.Errorf("rotated key = %+v, want the old description", rotated)
	}
	if out := s.ok(t, "key", "rm", rotated.AccessKey); out != "Deleted access key "+rotated.AccessKey+".\n" {
		t.Errorf("key rm = %q", out)
	}
	s.fails(t, 1, "coffer admin: NoSuchEntity", "key", "add", "--user", "nobody")
	s.fails(t, 1, "coffer admin: InvalidInput: expiry", "key", "add", "--user", "alice", "--expires", "2001-01-01T00:00:00Z")
}

func TestAdminStdinPolicy(t *testing.T) {
	t.Parallel()
	s := newAdminServer(t)
	var out, errb bytes.Buffer
	code := runAdmin(t.Context(), []string{"policy", "add", "from-stdin", "-"}, strings.NewReader(readUsersPolicy), &out, &errb, func(k string) string { return s.env[k] })
	if code != 0 {
		t.Fatalf("policy add - : exit %d, %s", code, errb.String())
	}
	if out := s.ok(t, "policy", "show", "from-stdin"); !strings.Contains(out, "admin:ListUsers") {
		t.Errorf("policy from stdin = %s", out)
	}
	code = runAdmin(t.Context(), []string{"policy", "add", "x", "-"}, strings.NewReader("{oops"), &out, &errb, func(k string) string { return s.env[k] })
	if code != 2 || !strings.Contains(errb.String(), "policy on standard input is not valid JSON") {
		t.Errorf("invalid policy on stdin: exit %d, stderr %q", code, errb.String())
	}
}

func TestAdminUserPasswd(t *testing.T) {
	t.Parallel()
	s := newAdminServer(t)
	s.ok(t, "user", "add", "alice")
	passwd := func(stdin string, args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := runAdmin(t.Context(), append([]string{"user", "passwd"}, args...), strings.NewReader(stdin), &out, &errb,
			func(k string) string { return s.env[k] })
		return code, out.String(), errb.String()
	}
	for _, tc := range []struct {
		name, stdin string
		args        []string
		wantCode    int
		wantErr     string
	}{
		{"no flag", "s3cret-pass\n", []string{"alice"}, 2, "give --password-stdin"},
		{"empty", "", []string{"alice", "--password-stdin"}, 2, "no password on standard input"},
		{"two lines", "s3cret-pass\nmore\n", []string{"alice", "--password-stdin"}, 2, "must be one line"},
		{"too short", "short\n", []string{"alice", "--password-stdin"}, 1, "InvalidInput: a password must be 8 to 1024 bytes"},
		{"no such user", "s3cret-pass\n", []string{"bob", "--password-stdin"}, 1, `NoSuchEntity: user "bob"`},
		{"ok", "s3cret-pass\r\n", []string{"alice", "--password-stdin"}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := passwd(tc.stdin, tc.args...)
			if code != tc.wantCode || !strings.Contains(errOut, tc.wantErr) {
				t.Errorf("user passwd %q: exit %d, stderr %q; want exit %d and %q", tc.args, code, errOut, tc.wantCode, tc.wantErr)
			}
			if strings.Contains(out+errOut, "s3cret") {
				t.Errorf("the output shows the password: %q %q", out, errOut)
			}
		})
	}
	if _, err := s.iam.SignIn(t.Context(), "alice", "s3cret-pass"); err != nil {
		t.Errorf("SignIn with the password set from stdin: %v", err)
	}
	if out := s.ok(t, "user", "show", "alice"); !regexpMatch(`(?m)^Console password:\s+set$`, out) {
		t.Errorf("user show = %q, want Console password: set", out)
	}
}

func TestAdminBucketPolicy(t *testing.T) {
	t.Parallel()
	s := newAdminServer(t)
	doc := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::site/*"}]}`
	f := writeFile(t, "site.json", doc)
	if out := s.ok(t, "bucket", "policy", "set", "site", f); out != "Set the policy of bucket site.\n" {
		t.Errorf("bucket policy set = %q", out)
	}
	out := s.ok(t, "bucket", "policy", "get", "site")
	var got, want any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("bucket policy get printed %q: %v", out, err)
	}
	if err := json.Unmarshal([]byte(doc), &want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" || !strings.Contains(out, "\n  \"Statement\"") {
		t.Errorf("bucket policy get, pretty-printed, mismatch (-want +got):\n%s\n%s", diff, out)
	}
	if out := s.ok(t, "bucket", "policy", "rm", "site"); out != "Removed the policy of bucket site.\n" {
		t.Errorf("bucket policy rm = %q", out)
	}
	s.fails(t, 1, "coffer admin: NoSuchBucketPolicy: The bucket policy does not exist (request id S3REQ)", "bucket", "policy", "get", "site")
}

func TestAdminGCOnline(t *testing.T) {
	t.Parallel()
	s := newAdminServer(t)
	out := s.ok(t, "gc")
	if !strings.HasPrefix(out, "gc on "+s.url+" (grace 1h0m0s): scanned 12 blobs, deleted 2 (2048 bytes), expired 0 uploads in ") {
		t.Errorf("gc = %q", out)
	}
	if g := <-s.graces; g != time.Hour {
		t.Errorf("server gc grace = %v, want the default 1h", g)
	}
	var res adminapi.GCResult
	decode(t, s.ok(t, "gc", "--grace", "10m", "--json"), &res)
	if res.GraceSeconds != 600 || res.Scanned != 12 || res.DeletedBytes != 2048 {
		t.Errorf("gc --json = %+v", res)
	}
	if g := <-s.graces; g != 10*time.Minute {
		t.Errorf("server gc grace = %v, want 10m", g)
	}
	s.ok(t, "gc", "--grace", "0s")
	if g := <-s.graces; g != 0 {
		t.Errorf("server gc grace = %v, want 0", g)
	}
}

// TestAdminGCOffline is the offline pass of a stopped server's storage:
// the behaviour `coffer admin gc` had before the admin API.
func TestAdminGCOffline(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, stdout, stderr := runCLI(t, nil, "admin", "gc", "--offline", "--storage-path", dir, "--json")
	if code != 0 {
		t.Fatalf("admin gc --offline on an empty dir: exit %d\nstderr: %s", code, stderr)
	}
	var res gcResult
	decode(t, stdout, &res)
	if res.StoragePath != dir || res.GraceSeconds != 3600 || res.Deleted != 0 {
		t.Errorf("admin gc --offline --json = %+v, want storage %s, grace 3600s, nothing deleted", res, dir)
	}

	code, stdout, stderr = runCLI(t, map[string]string{"COFFER_STORAGE_PATH": dir}, "admin", "gc", "--grace", "1m", "--offline")
	if code != 0 || !strings.Contains(stdout, "gc of "+dir+" (grace 1m0s): scanned 0 blobs, deleted 0") {
		t.Errorf("admin gc --offline with COFFER_STORAGE_PATH: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}

	code, _, stderr = runCLI(t, nil, "admin", "gc", "--offline", "--storage-path", filepath.Join(dir, "missing"))
	if code != 1 || !strings.Contains(stderr, "storage path") {
		t.Errorf("admin gc --offline on a missing dir: exit %d, stderr %q; want 1 and a clear error", code, stderr)
	}
}

// TestAdminMetaStatus shows the engine, schema version and store ID of a
// stopped server's metadata (the offline gc pass creates it).
func TestAdminMetaStatus(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, _, stderr := runCLI(t, nil, "admin", "meta", "status", "--storage-path", dir)
	if code != 1 || !strings.Contains(stderr, "metadata: stat") {
		t.Errorf("admin meta status without metadata: exit %d, stderr %q; want 1 and a clear error", code, stderr)
	}
	if code, _, stderr := runCLI(t, nil, "admin", "gc", "--offline", "--storage-path", dir); code != 0 {
		t.Fatalf("admin gc --offline: exit %d\nstderr: %s", code, stderr)
	}
	code, stdout, _ := runCLI(t, nil, "admin", "meta", "status", "--storage-path", dir, "--json")
	var res metaStatusResult
	decode(t, stdout, &res)
	if len(res.StoreID) != 32 {
		t.Errorf("admin meta status --json: store ID %q, want 32 hex digits", res.StoreID)
	}
	if want := (metaStatusResult{Engine: "pebble", SchemaVersion: 1, KnownVersion: 1, StoreID: res.StoreID}); code != 0 || res != want {
		t.Errorf("admin meta status --json: exit %d, %+v; want %+v", code, res, want)
	}
	code, stdout, stderr = runCLI(t, map[string]string{"COFFER_STORAGE_PATH": dir}, "admin", "meta", "status")
	if want := "engine: pebble\nschema version: 1 (this Coffer knows up to 1)\nstore id: " + res.StoreID + "\n"; code != 0 || stdout != want {
		t.Errorf("admin meta status: exit %d, stdout %q, stderr %q; want %q", code, stdout, stderr, want)
	}
}

// TestAdminPresign checks the URL presign prints with a Verifier, as the
// server would, without asking the server.
func TestAdminPresign(t *testing.T) {
	t.Parallel()
	s := newAdminServer(t)
	out := s.ok(t, "presign", "s3://photos/2024/cat 1.jpg", "--expires", "15m")
	u := strings.TrimSuffix(out, "\n")
	if strings.Contains(u, "\n") || !strings.HasPrefix(u, s.url+"/photos/2024/cat%201.jpg?") || !strings.Contains(u, "X-Amz-Expires=900") {
		t.Fatalf("presign printed %q, want one path-style URL valid 900 s", out)
	}
	r := httptest.NewRequest(http.MethodGet, u, nil)
	res, err := s.verifier.Verify(r)
	if err != nil || !res.Presigned || res.AccessKeyID != testRootKey {
		t.Errorf("Verify(presigned GET) = %+v, %v", res, err)
	}
	if r.URL.Path != "/photos/2024/cat 1.jpg" {
		t.Errorf("presigned path = %q", r.URL.Path)
	}

	var p presignedURL
	decode(t, s.ok(t, "presign", "--method", "put", "s3://photos/k", "--json"), &p)
	if p.Method != "PUT" || time.Until(p.Expires) < 59*time.Minute || time.Until(p.Expires) > 61*time.Minute {
		t.Errorf("presign --json = %+v, want PUT valid 1h", p)
	}
	if _, err := s.verifier.Verify(httptest.NewRequest(http.MethodPut, p.URL, nil)); err != nil {
		t.Errorf("Verify(presigned PUT): %v", err)
	}
	if _, err := s.verifier.Verify(httptest.NewRequest(http.MethodGet, p.URL, nil)); err == nil {
		t.Error("a URL presigned for PUT verified for GET")
	}

	if out := s.ok(t, "presign", "s3://photos/k", "--expires", "7d"); !strings.Contains(out, "X-Amz-Expires=604800") {
		t.Errorf("presign --expires 7d = %q", out)
	}

	// No server needed.
	code, out, stderr := runCLI(t, map[string]string{"COFFER_ACCESS_KEY": "AK", "COFFER_SECRET_KEY": "SK"}, "admin", "presign", "s3://b/k")
	if code != 0 || !strings.HasPrefix(out, defaultAdminEndpoint+"/b/k?") {
		t.Errorf("presign without a server: exit %d, %q, %q", code, out, stderr)
	}
}

func TestAdminUsageErrors(t *testing.T) {
	t.Parallel()
	const secret = "SECRET-NEVER-PRINTED"
	creds := map[string]string{"COFFER_ACCESS_KEY": "AK", "COFFER_SECRET_KEY": secret}
	bad := writeFile(t, "bad.json", "{\n  \"Version\": \"2012-10-17\",\n  oops\n}")
	arr := writeFile(t, "arr.json", "[]")
	missing := filepath.Join(t.TempDir(), "missing.json")
	for _, tc := range []struct {
		name       string
		env        map[string]string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{name: "no command", args: nil, wantCode: 2, wantStderr: "Usage: coffer admin <command>"},
		{name: "help", args: []string{"-h"}, wantCode: 0, wantStdout: "user add NAME"},
		{name: "help lists everything", args: []string{"help"}, wantCode: 0, wantStdout: "bucket policy set BUCKET FILE"},
		{name: "help names the env", args: []string{"--help"}, wantCode: 0, wantStdout: "$COFFER_ROOT_ACCESS_KEY"},
		{name: "help names the key file", args: []string{"--help"}, wantCode: 0, wantStdout: "--secret-key-file FILE"},
		{name: "command help names the key file", env: creds, args: []string{"whoami", "-h"}, wantCode: 0, wantStdout: "-secret-key-file"},
		{name: "unknown", args: []string{"fsck"}, wantCode: 2, wantStderr: `coffer admin: unknown command "fsck"`},
		{name: "group without command", args: []string{"user"}, wantCode: 2, wantStderr: "coffer admin user: missing command"},
		{name: "group help", args: []string{"key", "-h"}, wantCode: 0, wantStdout: "key rotate ACCESS_KEY"},
		{name: "group unknown", args: []string{"user", "frob"}, wantCode: 2, wantStderr: `coffer admin user: unknown command "frob"`},
		{name: "nested group", args: []string{"bucket", "policy"}, wantCode: 2, wantStderr: "coffer admin bucket policy: missing command"},
		{name: "nested unknown", args: []string{"bucket", "acl"}, wantCode: 2, wantStderr: `coffer admin bucket: unknown command "acl"`},
		{name: "command help", args: []string{"user", "add", "-h"}, wantCode: 0, wantStdout: "Usage: coffer admin user add NAME [flags]"},
		{name: "command help flags", args: []string{"key", "add", "--help"}, wantCode: 0, wantStdout: "-expires"},
		{name: "missing argument", env: creds, args: []string{"user", "add"}, wantCode: 2, wantStderr: "coffer admin user add: missing NAME\nRun 'coffer admin user add -h' for usage."},
		{name: "missing second argument", env: creds, args: []string{"policy", "add", "p"}, wantCode: 2, wantStderr: "missing FILE"},
		{name: "extra argument", env: creds, args: []string{"user", "add", "a", "b"}, wantCode: 2, wantStderr: `unexpected argument "b"`},
		{name: "extra argument to ls", env: creds, args: []string{"user", "ls", "x"}, wantCode: 2, wantStderr: `unexpected argument "x"`},
		{name: "unknown flag", env: creds, args: []string{"user", "add", "a", "--nope"}, wantCode: 2, wantStderr: "flag provided but not defined: -nope"},
		{name: "no credentials", args: []string{"user", "ls"}, wantCode: 2, wantStderr: "no credentials: set COFFER_ACCESS_KEY and COFFER_SECRET_KEY (or COFFER_ROOT_ACCESS_KEY and COFFER_ROOT_SECRET_KEY), or give --access-key and --secret-key-file"},
		{name: "no secret", env: map[string]string{"COFFER_ACCESS_KEY": "AK"}, args: []string{"user", "ls"}, wantCode: 2, wantStderr: "no secret key: set COFFER_SECRET_KEY (or COFFER_ROOT_SECRET_KEY) or give --secret-key-file"},
		{name: "no access key", args: []string{"user", "ls", "--secret-key", "x"}, wantCode: 2, wantStderr: "no access key"},
		{name: "bad endpoint", env: creds, args: []string{"whoami", "--endpoint", "localhost:6789"}, wantCode: 2, wantStderr: `endpoint "localhost:6789": want http(s)://host[:port]`},
		{name: "endpoint with credentials", env: creds, args: []string{"whoami", "--endpoint", "https://AK:" + secret + "@h:6789"}, wantCode: 2,
			wantStderr: `endpoint "https://***@h:6789": want http(s)://host[:port], without credentials`},
		{name: "endpoint with a token as user", env: creds, args: []string{"whoami", "--endpoint", "https://" + secret + "@h:6789"}, wantCode: 2,
			wantStderr: `endpoint "https://***@h:6789": want http(s)://host[:port], without credentials`},
		{name: "endpoint unparsable", env: creds, args: []string{"whoami", "--endpoint", "https://AK:" + secret + "@h:6789/%zz"}, wantCode: 2,
			wantStderr: "endpoint does not parse as a URL: want http(s)://host[:port]"},
		{name: "negative timeout", env: creds, args: []string{"whoami", "--timeout", "-1s"}, wantCode: 2, wantStderr: "--timeout must not be negative"},
		{name: "bad timeout", env: creds, args: []string{"whoami", "--timeout", "soon"}, wantCode: 2, wantStderr: `invalid value "soon" for flag -timeout`},
		{name: "key add without user", env: creds, args: []string{"key", "add"}, wantCode: 2, wantStderr: "missing --user"},
		{name: "key add bad expiry", env: creds, args: []string{"key", "add", "--user", "a", "--expires", "soon"}, wantCode: 2, wantStderr: `--expires "soon": want a duration such as 720h or 30d, or a time such as`},
		{name: "key add past expiry", env: creds, args: []string{"key", "add", "--user", "a", "--expires", "-5m"}, wantCode: 2, wantStderr: "must be in the future"},
		{name: "key add missing policy file", env: creds, args: []string{"key", "add", "--user", "a", "--policy", missing}, wantCode: 2, wantStderr: "cannot read policy file: open " + missing},
		{name: "policy add invalid JSON", env: creds, args: []string{"policy", "add", "p", bad}, wantCode: 2, wantStderr: "policy file " + bad + " is not valid JSON: line 3"},
		{name: "policy add array", env: creds, args: []string{"policy", "add", "p", arr}, wantCode: 2, wantStderr: "policy file " + arr + " must hold a JSON object"},
		{name: "bucket policy set missing file", env: creds, args: []string{"bucket", "policy", "set", "b", missing}, wantCode: 2, wantStderr: missing},
		{name: "attach to nothing", env: creds, args: []string{"policy", "attach", "p"}, wantCode: 2, wantStderr: "give exactly one of --user NAME and --group NAME"},
		{name: "attach to both", env: creds, args: []string{"policy", "detach", "p", "--user", "u", "--group", "g"}, wantCode: 2, wantStderr: "give exactly one"},
		{name: "members nothing", env: creds, args: []string{"group", "members", "g", "--add", " , "}, wantCode: 2, wantStderr: "nothing to do"},
		{name: "presign not s3", env: creds, args: []string{"presign", "http://b/k"}, wantCode: 2, wantStderr: `bad URL "http://b/k": want s3://BUCKET/KEY`},
		{name: "presign no key", env: creds, args: []string{"presign", "s3://b"}, wantCode: 2, wantStderr: "bad URL"},
		{name: "presign no key after slash", env: creds, args: []string{"presign", "s3://b/"}, wantCode: 2, wantStderr: "bad URL"},
		{name: "presign no bucket", env: creds, args: []string{"presign", "s3:///k"}, wantCode: 2, wantStderr: "bad URL"},
		{name: "presign method", env: creds, args: []string{"presign", "--method", "POST", "s3://b/k"}, wantCode: 2, wantStderr: `--method "POST": want GET, PUT, HEAD or DELETE`},
		{name: "presign too long", env: creds, args: []string{"presign", "s3://b/k", "--expires", "169h"}, wantCode: 2, wantStderr: "--expires 169h0m0s: want whole seconds from 1s to 7d"},
		{name: "presign too many days", env: creds, args: []string{"presign", "s3://b/k", "--expires", "8d"}, wantCode: 2, wantStderr: "want whole seconds from 1s to 7d"},
		{name: "presign fraction", env: creds, args: []string{"presign", "s3://b/k", "--expires", "1500ms"}, wantCode: 2, wantStderr: "want whole seconds"},
		{name: "presign zero", env: creds, args: []string{"presign", "s3://b/k", "--expires", "0s"}, wantCode: 2, wantStderr: "want whole seconds"},
		{name: "presign bad duration", env: creds, args: []string{"presign", "s3://b/k", "--expires", "soon"}, wantCode: 2, wantStderr: `invalid value "soon" for flag -expires: want a duration such as 15m, 12h or 7d`},
		{name: "presign without credentials", args: []string{"presign", "s3://b/k"}, wantCode: 2, wantStderr: "no credentials"},
		{name: "gc negative grace", env: creds, args: []string{"gc", "--grace", "-1h"}, wantCode: 2, wantStderr: "--grace must not be negative"},
		{name: "gc storage without offline", env: creds, args: []string{"gc", "--storage-path", "/tmp/x"}, wantCode: 2, wantStderr: "add --offline"},
		{name: "gc help", args: []string{"gc", "-h"}, wantCode: 0, wantStdout: "-offline"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runCLI(t, tc.env, append([]string{"admin"}, tc.args...)...)
			if code != tc.wantCode {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.wantCode, stdout, stderr)
			}
			if !strings.Contains(stdout, tc.wantStdout) {
				t.Errorf("stdout = %q, want it to contain %q", stdout, tc.wantStdout)
			}
			if !strings.Contains(stderr, tc.wantStderr) {
				t.Errorf("stderr = %q, want it to contain %q", stderr, tc.wantStderr)
			}
			if strings.Contains(stdout+stderr, secret) {
				t.Errorf("the secret key appears in the output")
			}
		})
	}
}

// TestAdminSecretKeyFile: --secret-key-file gives the secret key (before
// the environment) from a private file and refuses one that group or
// others may read; --secret-key still works, with a warning that it shows
// in the process list. No output holds the secret.
func TestAdminSecretKeyFile(t *testing.T) {
	t.Parallel()
	s := newAdminServer(t)
	keyFile := func(content string, mode os.FileMode) string {
		p := writeFile(t, "secret-key", content)
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	private := keyFile(testRootSecret+"\n", 0o600)
	readOnly := keyFile(testRootSecret+"\r\n", 0o400)
	open := keyFile(testRootSecret+"\n", 0o644)
	empty := keyFile("\nsecond line\n", 0o600)
	missing := filepath.Join(t.TempDir(), "missing")
	const warning = "coffer admin whoami: warning: --secret-key shows the secret key to every user of this machine (ps, /proc/PID/cmdline); set COFFER_SECRET_KEY or use --secret-key-file instead"
	for _, tc := range []struct {
		name       string
		env        map[string]string
		args       []string
		wantCode   int
		wantStderr string
		wantWarn   bool
	}{
		{name: "file", args: []string{"--secret-key-file", private}},
		{name: "read-only file, CRLF", args: []string{"--secret-key-file", readOnly}},
		{name: "file before the environment", env: map[string]string{"COFFER_SECRET_KEY": "wrong-secret"}, args: []string{"--secret-key-file", private}},
		{name: "flag warns", args: []string{"--secret-key", testRootSecret}, wantWarn: true},
		{name: "open file refused", args: []string{"--secret-key-file", open}, wantCode: 2,
			wantStderr: "--secret-key-file " + open + " has mode 0644, open to group or others: refusing to use it; run chmod 600 " + open},
		{name: "both", args: []string{"--secret-key", testRootSecret, "--secret-key-file", private}, wantCode: 2, wantStderr: "give --secret-key or --secret-key-file, not both"},
		{name: "empty first line", args: []string{"--secret-key-file", empty}, wantCode: 2, wantStderr: "--secret-key-file " + empty + ": the first line is empty"},
		{name: "missing file", args: []string{"--secret-key-file", missing}, wantCode: 2, wantStderr: "--secret-key-file: open " + missing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{"COFFER_ENDPOINT": s.url}
			maps.Copy(env, tc.env)
			args := append([]string{"admin", "whoami", "--access-key", testRootKey}, tc.args...)
			code, stdout, stderr := runCLI(t, env, args...)
			if code != tc.wantCode || !strings.Contains(stderr, tc.wantStderr) {
				t.Fatalf("exit %d, stderr %q; want exit %d and %q", code, stderr, tc.wantCode, tc.wantStderr)
			}
			if code == 0 && !regexpMatch(`(?m)^User:\s+\(root\)$`, stdout) {
				t.Errorf("whoami = %q, want root", stdout)
			}
			if warned := strings.Contains(stderr, warning); warned != tc.wantWarn {
				t.Errorf("stderr %q: warned %v, want %v", stderr, warned, tc.wantWarn)
			}
			if strings.Contains(stdout+stderr, testRootSecret) {
				t.Errorf("the output holds the secret key")
			}
		})
	}
}

func TestAdminUnreachable(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "http://" + ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI(t, map[string]string{"COFFER_ACCESS_KEY": "AK", "COFFER_SECRET_KEY": "SK", "COFFER_ENDPOINT": endpoint}, "admin", "user", "ls")
	if code != 1 || !strings.Contains(stderr, "coffer admin: cannot reach the server at "+endpoint+": connection refused") || !strings.Contains(stderr, "coffer serve") {
		t.Errorf("user ls against a closed port: exit %d, stderr %q", code, stderr)
	}
}

func TestAdminTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	code, _, stderr := runCLI(t, map[string]string{"COFFER_ACCESS_KEY": "AK", "COFFER_SECRET_KEY": "SK"}, "admin", "whoami", "--endpoint", srv.URL, "--timeout", "100ms")
	if code != 1 || !strings.Contains(stderr, "coffer admin: no answer from "+srv.URL+" within 100ms; raise --timeout") {
		t.Errorf("whoami against a silent server: exit %d, stderr %q", code, stderr)
	}
}

func TestAdminNotCoffer(t *testing.T) {
	t.Parallel()
	// A server that is not Coffer (or an old one) answers with S3 XML or
	// a bare status; the error still says what happened.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "nope", http.StatusBadGateway)
	}))
	t.Cleanup(srv.Close)
	code, _, stderr := runCLI(t, map[string]string{"COFFER_ACCESS_KEY": "AK", "COFFER_SECRET_KEY": "SK", "COFFER_ENDPOINT": srv.URL}, "admin", "group", "ls")
	if code != 1 || !strings.Contains(stderr, "coffer admin: BadGateway: HTTP status 502") {
		t.Errorf("group ls against a proxy error: exit %d, stderr %q", code, stderr)
	}
}

func TestParseInterleaved(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args    []string
		want    []string
		wantJ   bool
		wantU   string
		wantErr string
	}{
		{args: []string{"a", "--json"}, want: []string{"a"}, wantJ: true},
		{args: []string{"--json", "a"}, want: []string{"a"}, wantJ: true},
		{args: []string{"a", "--user", "u", "b"}, want: []string{"a", "b"}, wantU: "u"},
		{args: []string{"a", "--user=u", "--json", "b", "c"}, want: []string{"a", "b", "c"}, wantU: "u", wantJ: true},
		{args: []string{"a", "--", "--json", "-x"}, want: []string{"a", "--json", "-x"}},
		{args: []string{"-", "--json"}, want: []string{"-"}, wantJ: true},
		{args: []string{"a", "--user"}, wantErr: "flag needs an argument: -user"},
		{args: []string{"a", "--bogus"}, wantErr: "flag provided but not defined: -bogus"},
		{args: nil, want: nil},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		j := fs.Bool("json", false, "")
		u := fs.String("user", "", "")
		got, err := parseInterleaved(fs, tc.args)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parseInterleaved(%q) error = %v, want %q", tc.args, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) || *j != tc.wantJ || *u != tc.wantU {
			t.Errorf("parseInterleaved(%q) = %q, %v (json %t, user %q); want %q (json %t, user %q)", tc.args, got, err, *j, *u, tc.want, tc.wantJ, tc.wantU)
		}
	}
}

func TestParseExpiry(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in      string
		want    time.Time
		wantErr string
	}{
		{in: "720h", want: now.Add(720 * time.Hour)},
		{in: "90m", want: now.Add(90 * time.Minute)},
		{in: "30d", want: time.Date(2025, 3, 31, 12, 0, 0, 0, time.UTC)},
		{in: "2030-01-02T03:04:05Z", want: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)},
		{in: "2030-01-02T03:04:05+02:00", want: time.Date(2030, 1, 2, 1, 4, 5, 0, time.UTC)},
		{in: "0s", wantErr: "must be in the future"},
		{in: "0d", wantErr: "must be in the future"},
		{in: "-1h", wantErr: "must be in the future"},
		{in: "2030-01-02", wantErr: "want a duration"},
		{in: "d", wantErr: "want a duration"},
	} {
		got, err := parseExpiry(tc.in, now)
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parseExpiry(%q) error = %v, want %q", tc.in, err, tc.wantErr)
			}
		case err != nil || !got.Equal(tc.want):
			t.Errorf("parseExpiry(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestStickyWriter(t *testing.T) {
	t.Parallel()
	s := newAdminServer(t)
	var errb bytes.Buffer
	code := runAdmin(t.Context(), []string{"whoami"}, strings.NewReader(""), failWriter{}, &errb, func(k string) string { return s.env[k] })
	if code != 1 || !strings.Contains(errb.String(), "coffer admin whoami: write output: disk full") {
		t.Errorf("whoami to a failing stdout: exit %d, stderr %q", code, errb.String())
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }
