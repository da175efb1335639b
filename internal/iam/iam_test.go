package iam

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coffer-s3/coffer/internal/s3err"
)

// memStore is an in-memory Store that counts saves.
type memStore struct {
	mu       sync.Mutex
	state    []byte
	policies map[string][]byte
	saves    int
	failPut  error
}

func newMemStore() *memStore { return &memStore{policies: map[string][]byte{}} }

func (s *memStore) IAMState(context.Context) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state, nil
}

func (s *memStore) PutIAMState(_ context.Context, doc []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failPut != nil {
		return s.failPut
	}
	s.state = append([]byte(nil), doc...)
	s.saves++
	return nil
}

func (s *memStore) BucketPolicy(_ context.Context, b string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.policies[b], nil
}

func (s *memStore) BucketPolicies(context.Context) (map[string][]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]byte{}
	for k, v := range s.policies {
		out[k] = v
	}
	return out, nil
}

func (s *memStore) setPolicy(b, doc string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if doc == "" {
		delete(s.policies, b)
	} else {
		s.policies[b] = []byte(doc)
	}
}

var testMaster = bytes.Repeat([]byte{7}, MasterKeySize)

type fixture struct {
	t     testing.TB
	m     *IAM
	store *memStore
	now   time.Time
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	f := &fixture{t: t, store: newMemStore(), now: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	f.open()
	return f
}

// open (re)creates the IAM over the fixture's store.
func (f *fixture) open() {
	f.t.Helper()
	m, err := New(Config{RootAccessKey: "ROOT", RootSecretKey: "rootsecret", MasterKey: testMaster, Store: f.store, Clock: func() time.Time { return f.now },
		Password: testPasswordParams})
	if err != nil {
		f.t.Fatalf("New: %v", err)
	}
	f.m = m
}

func (f *fixture) user(name string, policies ...string) NewKey {
	f.t.Helper()
	nk, err := f.m.CreateUser(context.Background(), name)
	if err != nil {
		f.t.Fatalf("CreateUser(%s): %v", name, err)
	}
	for _, p := range policies {
		if err := f.m.AttachPolicy(context.Background(), p, Target{User: name}); err != nil {
			f.t.Fatalf("AttachPolicy(%s, %s): %v", p, name, err)
		}
	}
	return nk
}

// allowed reports whether ak may do action on bucket/key.
func (f *fixture) allowed(ak string, action Action, bucket, key string) bool {
	f.t.Helper()
	p := Principal{Anonymous: ak == ""}
	if ak != "" {
		p = f.m.Principal(ak)
	}
	err := f.m.Authorize(context.Background(), Request{Principal: p, Action: action, Bucket: bucket, Key: key})
	if err != nil && s3err.CodeOf(err) != s3err.AccessDenied {
		f.t.Fatalf("Authorize returned %v", err)
	}
	return err == nil
}

func TestRootOnly(t *testing.T) {
	m, err := New(Config{RootAccessKey: "AK", RootSecretKey: "SK"})
	if err != nil {
		t.Fatal(err)
	}
	if sk, err := m.SecretKey(t.Context(), "AK"); err != nil || sk != "SK" {
		t.Fatalf("SecretKey(AK) = %q, %v", sk, err)
	}
	if _, err := m.SecretKey(t.Context(), "AKX"); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("SecretKey(AKX) error = %v, want ErrUnknownKey", err)
	}
	for _, tc := range []struct {
		name string
		p    Principal
		want s3err.Code
	}{
		{"root", m.Principal("AK"), ""},
		{"anonymous", Principal{Anonymous: true}, s3err.AccessDenied},
		{"other key", m.Principal("BK"), s3err.AccessDenied},
		{"forged root flag", Principal{AccessKeyID: "BK", Root: true}, s3err.AccessDenied},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := m.Authorize(t.Context(), Request{Principal: tc.p, Action: GetObject, Bucket: "b", Key: "k"})
			if got := s3err.CodeOf(err); got != tc.want {
				t.Errorf("Authorize = %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := New(Config{}); err == nil {
		t.Error("New with no credentials succeeded")
	}
}

func TestUsersKeysAndPolicies(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	alice := f.user("alice", "readonly")
	bob := f.user("bob")

	if sk, err := f.m.SecretKey(ctx, alice.AccessKey); err != nil || sk != alice.SecretKey {
		t.Fatalf("SecretKey(alice) = %q, %v", sk, err)
	}
	if p := f.m.Principal(alice.AccessKey); p.User != "alice" || p.Root {
		t.Fatalf("Principal(alice) = %+v", p)
	}
	if !f.allowed(alice.AccessKey, GetObject, "b", "k") || f.allowed(alice.AccessKey, PutObject, "b", "k") {
		t.Fatal("readonly: want GET allowed and PUT denied")
	}
	if f.allowed(bob.AccessKey, GetObject, "b", "k") {
		t.Fatal("a user without policies was allowed")
	}

	// Groups carry policies to their members.
	if err := f.m.CreateGroup(ctx, "writers"); err != nil {
		t.Fatal(err)
	}
	if err := f.m.AttachPolicy(ctx, "readwrite", Target{Group: "writers"}); err != nil {
		t.Fatal(err)
	}
	if err := f.m.UpdateGroupMembers(ctx, "writers", []string{"bob"}, nil); err != nil {
		t.Fatal(err)
	}
	if !f.allowed(bob.AccessKey, PutObject, "b", "k") {
		t.Fatal("group policy not applied")
	}
	if err := f.m.UpdateGroupMembers(ctx, "writers", nil, []string{"bob"}); err != nil {
		t.Fatal(err)
	}
	if f.allowed(bob.AccessKey, PutObject, "b", "k") {
		t.Fatal("group policy still applied after removal")
	}

	// Named policies; deny wins over a canned allow.
	deny := `{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/secret/*"}]}`
	if err := f.m.PutPolicy(ctx, "nosecrets", []byte(deny)); err != nil {
		t.Fatal(err)
	}
	if err := f.m.AttachPolicy(ctx, "nosecrets", Target{User: "alice"}); err != nil {
		t.Fatal(err)
	}
	if f.allowed(alice.AccessKey, GetObject, "b", "secret/x") || !f.allowed(alice.AccessKey, GetObject, "b", "public/x") {
		t.Fatal("explicit deny did not win, or denied too much")
	}
	if err := f.m.DeletePolicy(ctx, "nosecrets"); !errors.Is(err, ErrInUse) {
		t.Fatalf("DeletePolicy of an attached policy = %v, want ErrInUse", err)
	}
	ui, err := f.m.User(ctx, "alice")
	if err != nil || strings.Join(ui.Policies, ",") != "nosecrets,readonly" {
		t.Fatalf("User(alice) = %+v, %v", ui, err)
	}

	// Disabling a user or key refuses its keys at once.
	if err := f.m.SetUserDisabled(ctx, "alice", true); err != nil {
		t.Fatal(err)
	}
	if _, err := f.m.SecretKey(ctx, alice.AccessKey); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("SecretKey of a disabled user = %v", err)
	}
	if f.allowed(alice.AccessKey, GetObject, "b", "public/x") {
		t.Fatal("disabled user authorized")
	}
	if err := f.m.SetUserDisabled(ctx, "alice", false); err != nil {
		t.Fatal(err)
	}
	if err := f.m.SetKeyDisabled(ctx, alice.AccessKey, true); err != nil {
		t.Fatal(err)
	}
	if _, err := f.m.SecretKey(ctx, alice.AccessKey); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("SecretKey of a disabled key = %v", err)
	}
	if err := f.m.SetKeyDisabled(ctx, alice.AccessKey, false); err != nil {
		t.Fatal(err)
	}

	// Rotation: the new key works with the same rights, the old one not.
	nk, err := f.m.RotateKey(ctx, alice.AccessKey)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.m.SecretKey(ctx, alice.AccessKey); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("old key after rotation: %v", err)
	}
	if sk, err := f.m.SecretKey(ctx, nk.AccessKey); err != nil || sk != nk.SecretKey || nk.SecretKey == alice.SecretKey {
		t.Fatalf("new key after rotation: %q, %v", sk, err)
	}
	if !f.allowed(nk.AccessKey, GetObject, "b", "public/x") {
		t.Fatal("rotated key lost its user's rights")
	}

	// Deleting a user deletes its keys and memberships.
	if err := f.m.UpdateGroupMembers(ctx, "writers", []string{"bob"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := f.m.DeleteUser(ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.m.SecretKey(ctx, bob.AccessKey); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("key of a deleted user: %v", err)
	}
	if g, _ := f.m.Group(ctx, "writers"); len(g.Members) != 0 {
		t.Fatalf("deleted user still a member: %+v", g)
	}
	if f.allowed(bob.AccessKey, GetObject, "b", "k") {
		t.Fatal("deleted user authorized")
	}
}

func TestScopedKey(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.user("carol", "readwrite")
	scope := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:GetObject","s3:PutObject"],"Resource":"arn:aws:s3:::photos/*"}]}`
	k, err := f.m.CreateKey(ctx, "carol", KeyOptions{Policy: []byte(scope), Description: "uploader"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		action      Action
		bucket, key string
		want        bool
	}{
		{PutObject, "photos", "a.jpg", true},
		{GetObject, "photos", "a.jpg", true},
		{DeleteObject, "photos", "a.jpg", false}, // user may, key may not
		{PutObject, "other", "a.jpg", false},
		{ListBucket, "photos", "", false},
	} {
		if got := f.allowed(k.AccessKey, tc.action, tc.bucket, tc.key); got != tc.want {
			t.Errorf("%s %s/%s = %v, want %v", tc.action, tc.bucket, tc.key, got, tc.want)
		}
	}
	if !f.m.CanSeeBucket(f.m.Principal(k.AccessKey), "photos") || f.m.CanSeeBucket(f.m.Principal(k.AccessKey), "other") {
		t.Error("scoped key: ListBuckets filter wrong")
	}
	// The scope never widens the user's rights.
	if err := f.m.DetachPolicy(ctx, "readwrite", Target{User: "carol"}); err != nil {
		t.Fatal(err)
	}
	if f.allowed(k.AccessKey, PutObject, "photos", "a.jpg") {
		t.Error("a key's scope granted what its user may not do")
	}
	if _, err := f.m.CreateKey(ctx, "carol", KeyOptions{Policy: []byte(`{"Statement":[]}`)}); !errors.Is(err, ErrPolicy) {
		t.Errorf("CreateKey with a bad policy = %v, want ErrPolicy", err)
	}
}

func TestKeyExpiry(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.user("dave", "readonly")
	k, err := f.m.CreateKey(ctx, "dave", KeyOptions{Expires: f.now.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.m.SecretKey(ctx, k.AccessKey); err != nil {
		t.Fatal(err)
	}
	f.now = f.now.Add(time.Hour)
	if _, err := f.m.SecretKey(ctx, k.AccessKey); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("expired key: %v", err)
	}
	if _, err := f.m.CreateKey(ctx, "dave", KeyOptions{Expires: f.now.Add(-time.Second)}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("key expiring in the past: %v", err)
	}
}

func TestBucketPolicies(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	erin := f.user("erin")
	public := `{"Version":"2012-10-17","Statement":[
		{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::site/public/*"},
		{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::000000000000:user/erin"},"Action":"s3:PutObject","Resource":"arn:aws:s3:::site/*"}]}`
	if _, err := ParseBucketPolicy("site", []byte(public)); err != nil {
		t.Fatal(err)
	}
	if _, err := ParseBucketPolicy("other", []byte(public)); !errors.Is(err, ErrPolicy) {
		t.Fatalf("a policy for another bucket's resources: %v", err)
	}
	f.setBucketPolicy("site", public)
	if !f.allowed("", GetObject, "site", "public/index.html") || f.allowed("", GetObject, "site", "private/x") || f.allowed("", PutObject, "site", "public/x") {
		t.Fatal("anonymous access through the bucket policy is wrong")
	}
	if !f.allowed(erin.AccessKey, PutObject, "site", "x") || f.allowed(erin.AccessKey, DeleteObject, "site", "x") {
		t.Fatal("user access through the bucket policy is wrong")
	}
	if !f.m.CanSeeBucket(f.m.Principal(erin.AccessKey), "site") {
		t.Fatal("a bucket the policy opens to erin is hidden from her")
	}
	// Loaded at start.
	f.open()
	if !f.allowed("", GetObject, "site", "public/index.html") {
		t.Fatal("bucket policy not loaded at start")
	}
	f.store.setPolicy("site", "")
	if err := f.m.RefreshBucketPolicy(ctx, "site"); err != nil {
		t.Fatal(err)
	}
	if f.allowed("", GetObject, "site", "public/index.html") {
		t.Fatal("deleted bucket policy still applies")
	}
}

func TestStateIsPersistentAndSealed(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	k := f.user("frank", "readonly")
	if err := f.m.PutPolicy(ctx, "mine", []byte(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:*","Resource":"arn:aws:s3:::frank/*"}]}`)); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(f.store.state, []byte(k.SecretKey)) {
		t.Fatal("the stored state holds a secret in the clear")
	}
	f.open()
	if sk, err := f.m.SecretKey(ctx, k.AccessKey); err != nil || sk != k.SecretKey {
		t.Fatalf("after restart SecretKey = %q, %v", sk, err)
	}
	if _, err := f.m.Policy(ctx, "mine"); err != nil {
		t.Fatal(err)
	}
	// Another master key does not open the state.
	other := bytes.Repeat([]byte{8}, MasterKeySize)
	if _, err := New(Config{RootAccessKey: "ROOT", RootSecretKey: "rootsecret", MasterKey: other, Store: f.store}); !errors.Is(err, ErrWrongMasterKey) {
		t.Fatalf("New with the wrong master key = %v", err)
	}
	// A failed save changes nothing.
	f.store.failPut = errors.New("disk full")
	if _, err := f.m.CreateUser(ctx, "gina"); err == nil {
		t.Fatal("CreateUser succeeded although the save failed")
	}
	if _, err := f.m.User(ctx, "gina"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a user whose save failed exists: %v", err)
	}
}

func TestManagementErrors(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.user("hal")
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"duplicate user", func() error { _, err := f.m.CreateUser(ctx, "hal"); return err }(), ErrExists},
		{"bad user name", func() error { _, err := f.m.CreateUser(ctx, "a/b"); return err }(), ErrInvalid},
		{"empty user name", func() error { _, err := f.m.CreateUser(ctx, ""); return err }(), ErrInvalid},
		{"long user name", func() error { _, err := f.m.CreateUser(ctx, strings.Repeat("a", 65)); return err }(), ErrInvalid},
		{"key of missing user", func() error { _, err := f.m.CreateKey(ctx, "nobody", KeyOptions{}); return err }(), ErrNotFound},
		{"delete missing key", f.m.DeleteKey(ctx, "NOPE"), ErrNotFound},
		{"replace canned", f.m.PutPolicy(ctx, "readonly", []byte(`{}`)), ErrInvalid},
		{"delete canned", f.m.DeletePolicy(ctx, "admin"), ErrInvalid},
		{"bad policy", f.m.PutPolicy(ctx, "p", []byte(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:Nope","Resource":"*"}]}`)), ErrPolicy},
		{"attach missing policy", f.m.AttachPolicy(ctx, "nope", Target{User: "hal"}), ErrNotFound},
		{"attach to both", f.m.AttachPolicy(ctx, "readonly", Target{User: "hal", Group: "g"}), ErrInvalid},
		{"attach to nobody", f.m.AttachPolicy(ctx, "readonly", Target{}), ErrInvalid},
		{"detach unattached", f.m.DetachPolicy(ctx, "readonly", Target{User: "hal"}), ErrNotFound},
		{"members of missing group", f.m.UpdateGroupMembers(ctx, "nope", []string{"hal"}, nil), ErrNotFound},
		{"missing member", f.m.CreateGroup(ctx, "g"), nil},
		{"add missing user", f.m.UpdateGroupMembers(ctx, "g", []string{"nobody"}, nil), ErrNotFound},
		{"duplicate group", f.m.CreateGroup(ctx, "g"), ErrExists},
	} {
		if tc.want == nil && tc.err != nil || tc.want != nil && !errors.Is(tc.err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, tc.err, tc.want)
		}
	}
	ps, err := f.m.Policies(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range ps {
		names = append(names, p.Name)
		if !p.Canned || len(p.Document) == 0 {
			t.Errorf("policy %+v: want a canned policy with its document", p)
		}
	}
	if strings.Join(names, ",") != "admin,readonly,readwrite,writeonly" {
		t.Errorf("Policies = %v", names)
	}
}

func TestAdminActions(t *testing.T) {
	f := newFixture(t)
	ops := f.user("ops", "admin")
	dev := f.user("dev", "readwrite")
	if !f.allowed(ops.AccessKey, Action("admin:CreateUser"), "", "") {
		t.Error("admin policy does not allow admin actions")
	}
	if f.allowed(dev.AccessKey, Action("admin:CreateUser"), "", "") {
		t.Error("readwrite allows admin actions")
	}
	if !f.allowed(dev.AccessKey, ListAllMyBuckets, "", "") {
		t.Error("ListBuckets refused to an authenticated user")
	}
	if f.allowed("", ListAllMyBuckets, "", "") {
		t.Error("ListBuckets allowed to anonymous")
	}
}

func TestConcurrentChangesAndRequests(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	k := f.user("ivy", "readonly")
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if !f.allowed(k.AccessKey, GetObject, "b", "k") {
					t.Error("a change elsewhere denied ivy")
					return
				}
			}
		})
	}
	for i := range 50 {
		if _, err := f.m.CreateUser(ctx, "u"+strings.Repeat("x", i%5)+string(rune('a'+i%26))+string(rune('a'+i/26))); err != nil {
			t.Error(err)
		}
	}
	close(stop)
	wg.Wait()
	us, _ := f.m.Users(ctx)
	if len(us) != 51 {
		t.Fatalf("%d users, want 51", len(us))
	}
}

// TestCanonicalIDs checks that a user's canonical ID is stable across its
// keys and restarts, that a user deleted and created again under the same
// name gets another one (so it owns nothing the first one owned and holds
// none of its ACL grants), and that a user stored before users had IDs
// keeps the ID derived from its name.
func TestCanonicalIDs(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	nk := f.user("alice")
	first := f.m.CanonicalID(f.m.Principal(nk.AccessKey))
	if len(first) != 64 || first == RootCanonicalID() {
		t.Fatalf("alice's canonical ID = %q", first)
	}
	k2, err := f.m.CreateKey(ctx, "alice", KeyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.m.CanonicalID(f.m.Principal(k2.AccessKey)); got != first {
		t.Errorf("alice's second key: canonical ID %q, want %q", got, first)
	}
	aliceID := f.m.Principal(nk.AccessKey).UserID
	if got := f.m.CanonicalID(Principal{User: "alice", UserID: aliceID, Session: true}); got != first {
		t.Errorf("alice's console session: canonical ID %q, want %q", got, first)
	}
	if p, ok := f.m.CanonicalUser(first); !ok || p.User != "alice" {
		t.Errorf("CanonicalUser(alice's ID) = %+v, %v", p, ok)
	}
	f.open() // a restart reads the same ID back
	if got := f.m.CanonicalID(f.m.Principal(nk.AccessKey)); got != first {
		t.Errorf("after a restart: canonical ID %q, want %q", got, first)
	}

	if err := f.m.DeleteUser(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	old := Principal{User: "alice", UserID: aliceID}
	gone := f.m.CanonicalID(old)
	if gone == first || gone == "" {
		t.Errorf("a deleted user's canonical ID = %q (its old one %q)", gone, first)
	}
	if _, ok := f.m.CanonicalUser(first); ok {
		t.Errorf("CanonicalUser still resolves the deleted user's ID")
	}
	nk = f.user("alice")
	second := f.m.CanonicalID(f.m.Principal(nk.AccessKey))
	if second == first || second == gone || len(second) != 64 {
		t.Errorf("re-created alice: canonical ID %q, the first alice's %q", second, first)
	}
	if _, ok := f.m.CanonicalUser(first); ok {
		t.Errorf("the first alice's canonical ID resolves to the second alice")
	}
	// A principal of the first alice (a request or session in flight)
	// is not the second one.
	if got := f.m.CanonicalID(old); got != gone {
		t.Errorf("a principal of the deleted alice: canonical ID %q, want the deleted user's %q", got, gone)
	}
	// Nor does it act as the new one with the new one's key.
	if f.m.Authorize(ctx, Request{Principal: Principal{AccessKeyID: nk.AccessKey, User: "alice", UserID: aliceID}, Action: ListAllMyBuckets}) == nil {
		t.Errorf("a principal of the deleted alice acts with the new alice's key")
	}
	if err := f.m.SetPassword(ctx, "alice", "another-s3cret"); err != nil {
		t.Fatal(err)
	}
	newID := f.m.Principal(nk.AccessKey).UserID
	if start := f.now.Add(time.Minute); f.m.SessionValid(Principal{User: "alice", UserID: aliceID, Session: true}, start) ||
		!f.m.SessionValid(Principal{User: "alice", UserID: newID, Session: true}, start) {
		t.Errorf("SessionValid tells the two alices apart wrongly")
	}

	// A user from before IDs (no "id" in the stored state) keeps the ID
	// its name gives, so what it owns stays its own.
	var doc map[string]any
	if err := json.Unmarshal(f.store.state, &doc); err != nil {
		t.Fatal(err)
	}
	if doc["version"] != 2.0 {
		t.Errorf("stored state format %v, want 2", doc["version"])
	}
	delete(doc["users"].(map[string]any)["alice"].(map[string]any), "id")
	doc["version"] = 1 // as a Coffer from before user IDs wrote it
	if f.store.state, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	f.open()
	if got, want := f.m.CanonicalID(f.m.Principal(nk.AccessKey)), canonicalID("user:alice"); got != want {
		t.Errorf("a user stored without an ID: canonical ID %q, want the name's %q", got, want)
	}
	if p, ok := f.m.CanonicalUser(canonicalID("user:alice")); !ok || p.User != "alice" {
		t.Errorf("CanonicalUser(legacy ID) = %+v, %v", p, ok)
	}
	// The first change writes format 2, which a Coffer of format 1
	// refuses rather than drop the IDs; a newer format is refused here.
	f.user("bob")
	if !bytes.Contains(f.store.state, []byte(`"version":2`)) {
		t.Errorf("a change did not write format 2: %.60s", f.store.state)
	}
	if _, err := decodeState(bytes.Replace(f.store.state, []byte(`"version":2`), []byte(`"version":3`), 1)); err == nil || !strings.Contains(err.Error(), "format 3") {
		t.Errorf("a state of format 3: %v", err)
	}
}
