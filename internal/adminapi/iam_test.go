package adminapi

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/sigv4"
	"github.com/google/go-cmp/cmp"
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

// realServer is the Handler over a real in-memory iam.IAM.
type realServer struct {
	h    *Handler
	root *Client
}

func newRealServer(t *testing.T) *realServer {
	t.Helper()
	m, err := iam.New(iam.Config{RootAccessKey: rootCred.AccessKeyID, RootSecretKey: rootCred.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	fg := &fakeGC{}
	h, err := New(Deps{
		IAM:      m,
		Verifier: sigv4.NewVerifier(sigv4.Config{CacheSize: -1}, iamKeyring{m}),
		GC:       fg.run,
		Logger:   slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	s := &realServer{h: h}
	s.root = newTestClient(t, h, rootCred)
	return s
}

// as returns a Client signing with a key the server made.
func (s *realServer) as(t *testing.T, ak, sk string) *Client {
	t.Helper()
	return newTestClient(t, s.h, sigv4.Credentials{AccessKeyID: ak, SecretKey: sk})
}

// wantCode fails unless err is an *Error with code.
func wantCode(t *testing.T, what string, err error, code string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Code != code {
		t.Errorf("%s: error %v, want %s", what, err, code)
	}
}

func must[T any](t *testing.T, what string) func(v T, err error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}
}

func mustDo(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func TestWithIAMUsersAndPolicies(t *testing.T) {
	t.Parallel()
	s := newRealServer(t)
	ctx := t.Context()

	who := must[WhoAmI](t, "root whoami")(s.root.WhoAmI(ctx))
	if diff := cmp.Diff(WhoAmI{AccessKey: rootCred.AccessKeyID, Root: true}, who); diff != "" {
		t.Errorf("root whoami (-want +got):\n%s", diff)
	}

	alice := must[CreateUserResponse](t, "create alice")(s.root.CreateUser(ctx, "alice"))
	if alice.User != "alice" || len(alice.AccessKey) != 20 || alice.SecretKey == "" {
		t.Fatalf("CreateUser = %+v", alice)
	}
	ac := s.as(t, alice.AccessKey, alice.SecretKey)
	who = must[WhoAmI](t, "alice whoami")(ac.WhoAmI(ctx))
	if diff := cmp.Diff(WhoAmI{AccessKey: alice.AccessKey, User: "alice"}, who); diff != "" {
		t.Errorf("alice whoami (-want +got):\n%s", diff)
	}

	// A user without policies may not administer.
	_, err := ac.Users(ctx)
	wantCode(t, "alice lists users", err, CodeAccessDenied)
	if err != nil && !strings.Contains(err.Error(), "user alice is not allowed to perform admin:ListUsers") {
		t.Errorf("denial message %q does not say who and what", err)
	}

	// The canned admin policy allows everything.
	mustDo(t, "attach admin", s.root.AttachPolicy(ctx, "admin", iam.Target{User: "alice"}))
	users := must[[]UserInfo](t, "alice lists users")(ac.Users(ctx))
	if len(users) != 1 || users[0].Name != "alice" || !cmp.Equal(users[0].Policies, []string{"admin"}) {
		t.Errorf("Users = %+v", users)
	}
	mustDo(t, "detach admin", s.root.DetachPolicy(ctx, "admin", iam.Target{User: "alice"}))
	_, err = ac.Users(ctx)
	wantCode(t, "alice lists users after detach", err, CodeAccessDenied)

	// A custom policy through a group allows exactly its actions.
	doc := []byte(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["admin:ListUsers","admin:GetUser"],"Resource":"*"}]}`)
	mustDo(t, "put policy", s.root.PutPolicy(ctx, "user-readers", doc))
	mustDo(t, "create group", s.root.CreateGroup(ctx, "ops"))
	mustDo(t, "add member", s.root.UpdateGroupMembers(ctx, "ops", []string{"alice"}, nil))
	mustDo(t, "attach to group", s.root.AttachPolicy(ctx, "user-readers", iam.Target{Group: "ops"}))
	must[[]UserInfo](t, "alice lists users via group")(ac.Users(ctx))
	u := must[UserInfo](t, "alice gets herself")(ac.User(ctx, "alice"))
	if !cmp.Equal(u.Groups, []string{"ops"}) {
		t.Errorf("alice's groups = %v, want [ops]", u.Groups)
	}
	_, err = ac.CreateUser(ctx, "mallory")
	wantCode(t, "alice creates a user", err, CodeAccessDenied)

	pi := must[PolicyInfo](t, "get policy")(s.root.Policy(ctx, "user-readers"))
	if pi.Canned || !cmp.Equal(pi.Groups, []string{"ops"}) || !json.Valid(pi.Document) {
		t.Errorf("Policy = %+v", pi)
	}
	ps := must[[]PolicyInfo](t, "list policies")(s.root.Policies(ctx))
	names := map[string]bool{}
	for _, p := range ps {
		names[p.Name] = p.Canned
	}
	for _, n := range []string{"readonly", "readwrite", "writeonly", "admin"} {
		if canned, ok := names[n]; !ok || !canned {
			t.Errorf("canned policy %s missing from %v", n, names)
		}
	}

	// A condition on the source address applies to admin requests.
	ipDoc := []byte(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"admin:ListGroups","Resource":"*","Condition":{"IpAddress":{"aws:SourceIp":"203.0.113.0/24"}}}]}`)
	mustDo(t, "put ip policy", s.root.PutPolicy(ctx, "remote-groups", ipDoc))
	mustDo(t, "attach ip policy", s.root.AttachPolicy(ctx, "remote-groups", iam.Target{User: "alice"}))
	_, err = ac.Groups(ctx)
	wantCode(t, "alice lists groups from 127.0.0.1", err, CodeAccessDenied)
	localDoc := []byte(strings.ReplaceAll(string(ipDoc), "203.0.113.0/24", "127.0.0.0/8"))
	mustDo(t, "put local policy", s.root.PutPolicy(ctx, "local-groups", localDoc))
	mustDo(t, "attach local policy", s.root.AttachPolicy(ctx, "local-groups", iam.Target{User: "alice"}))
	must[[]GroupInfo](t, "alice lists groups from 127.0.0.1 when allowed")(ac.Groups(ctx))

	// Errors of iam reach the client with their codes.
	_, err = s.root.CreateUser(ctx, "alice")
	wantCode(t, "create alice again", err, CodeEntityAlreadyExists)
	_, err = s.root.User(ctx, "nobody")
	wantCode(t, "get nobody", err, CodeNoSuchEntity)
	_, err = s.root.CreateUser(ctx, "bad name!")
	wantCode(t, "bad user name", err, CodeInvalidInput)
	wantCode(t, "delete attached policy", s.root.DeletePolicy(ctx, "user-readers"), CodeDeleteConflict)
	wantCode(t, "malformed policy", s.root.PutPolicy(ctx, "bad", []byte(`{"Statement":"nope"}`)), CodeMalformedPolicyDocument)
	wantCode(t, "replace canned", s.root.PutPolicy(ctx, "readonly", doc), CodeInvalidInput)
	wantCode(t, "members of unknown group", s.root.UpdateGroupMembers(ctx, "nope", []string{"alice"}, nil), CodeNoSuchEntity)

	mustDo(t, "detach from group", s.root.DetachPolicy(ctx, "user-readers", iam.Target{Group: "ops"}))
	mustDo(t, "delete policy", s.root.DeletePolicy(ctx, "user-readers"))
	mustDo(t, "remove member", s.root.UpdateGroupMembers(ctx, "ops", nil, []string{"alice"}))
	g := must[GroupInfo](t, "get group")(s.root.Group(ctx, "ops"))
	if len(g.Members) != 0 || len(g.Policies) != 0 {
		t.Errorf("group after removals = %+v", g)
	}
	mustDo(t, "delete group", s.root.DeleteGroup(ctx, "ops"))
	gs := must[[]GroupInfo](t, "list groups")(s.root.Groups(ctx))
	if gs == nil || len(gs) != 0 {
		t.Errorf("Groups = %#v, want an empty list", gs)
	}

	// Console passwords: set by an admin, checked by iam, never shown.
	wantCode(t, "short password", s.root.SetPassword(ctx, "alice", "short"), CodeInvalidInput)
	wantCode(t, "password of a missing user", s.root.SetPassword(ctx, "nobody", "long enough"), CodeNoSuchEntity)
	mustDo(t, "set alice's password", s.root.SetPassword(ctx, "alice", "long enough"))
	if u := must[UserInfo](t, "get alice")(s.root.User(ctx, "alice")); !u.Password {
		t.Errorf("alice after SetPassword = %+v, want Password true", u)
	}
	wantCode(t, "alice sets a password", ac.SetPassword(ctx, "alice", "long enough"), CodeAccessDenied)

	// Disabling and deleting a user stops its keys.
	mustDo(t, "disable alice", s.root.DisableUser(ctx, "alice"))
	_, err = ac.WhoAmI(ctx)
	wantCode(t, "whoami of a disabled user", err, "InvalidAccessKeyId")
	mustDo(t, "enable alice", s.root.EnableUser(ctx, "alice"))
	must[WhoAmI](t, "whoami after enable")(ac.WhoAmI(ctx))
	mustDo(t, "delete alice", s.root.DeleteUser(ctx, "alice"))
	_, err = ac.WhoAmI(ctx)
	wantCode(t, "whoami of a deleted user", err, "InvalidAccessKeyId")
}

func TestWithIAMKeys(t *testing.T) {
	t.Parallel()
	s := newRealServer(t)
	ctx := t.Context()
	bob := must[CreateUserResponse](t, "create bob")(s.root.CreateUser(ctx, "bob"))
	mustDo(t, "attach admin", s.root.AttachPolicy(ctx, "admin", iam.Target{User: "bob"}))

	// A key scoped to listing users only.
	exp := time.Now().Add(24 * time.Hour).UTC().Truncate(time.Second)
	scope := json.RawMessage(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"admin:ListUsers","Resource":"*"}]}`)
	nk := must[NewKey](t, "create key")(s.root.CreateKey(ctx, CreateKeyRequest{User: "bob", Policy: scope, Description: "reporting", Expires: &exp}))
	if nk.User != "bob" || nk.SecretKey == "" || nk.Description != "reporting" || nk.Expires == nil || !nk.Expires.Equal(exp) || len(nk.Policy) == 0 {
		t.Fatalf("CreateKey = %+v", nk)
	}
	sc := s.as(t, nk.AccessKey, nk.SecretKey)
	must[[]UserInfo](t, "scoped key lists users")(sc.Users(ctx))
	_, err := sc.Groups(ctx)
	wantCode(t, "scoped key lists groups", err, CodeAccessDenied)

	ki := must[KeyInfo](t, "get key")(s.root.Key(ctx, nk.AccessKey))
	if diff := cmp.Diff(nk.KeyInfo, ki); diff != "" {
		t.Errorf("Key (-created +got):\n%s", diff)
	}
	keys := must[[]KeyInfo](t, "list keys")(s.root.Keys(ctx, "bob"))
	if len(keys) != 2 {
		t.Errorf("bob's keys = %+v, want 2", keys)
	}
	_, err = s.root.Keys(ctx, "nobody")
	wantCode(t, "keys of nobody", err, CodeNoSuchEntity)

	mustDo(t, "disable key", s.root.DisableKey(ctx, nk.AccessKey))
	_, err = sc.WhoAmI(ctx)
	wantCode(t, "disabled key", err, "InvalidAccessKeyId")
	mustDo(t, "enable key", s.root.EnableKey(ctx, nk.AccessKey))
	must[WhoAmI](t, "enabled key")(sc.WhoAmI(ctx))

	rk := must[NewKey](t, "rotate")(s.root.RotateKey(ctx, nk.AccessKey))
	if rk.AccessKey == nk.AccessKey || rk.Description != "reporting" || string(rk.Policy) != string(nk.Policy) {
		t.Errorf("RotateKey = %+v, want a new key with the old properties", rk)
	}
	_, err = sc.WhoAmI(ctx)
	wantCode(t, "rotated-away key", err, "InvalidAccessKeyId")
	rc := s.as(t, rk.AccessKey, rk.SecretKey)
	must[[]UserInfo](t, "rotated key lists users")(rc.Users(ctx))

	_, err = s.root.CreateKey(ctx, CreateKeyRequest{User: "bob", Policy: json.RawMessage(`{"Statement":1}`)})
	wantCode(t, "malformed scope", err, CodeMalformedPolicyDocument)
	past := time.Now().Add(-time.Hour)
	_, err = s.root.CreateKey(ctx, CreateKeyRequest{User: "bob", Expires: &past})
	wantCode(t, "expiry in the past", err, CodeInvalidInput)

	mustDo(t, "delete key", s.root.DeleteKey(ctx, rk.AccessKey))
	wantCode(t, "delete key again", s.root.DeleteKey(ctx, rk.AccessKey), CodeNoSuchEntity)
	_, err = rc.WhoAmI(ctx)
	wantCode(t, "deleted key", err, "InvalidAccessKeyId")

	// GC needs admin:RunGC, which bob has from the canned admin policy.
	bc := s.as(t, bob.AccessKey, bob.SecretKey)
	res := must[GCResult](t, "gc")(bc.GC(ctx, GCRequest{}))
	if res.GraceSeconds != DefaultGCGrace.Seconds() {
		t.Errorf("GC grace = %v, want the default", res.GraceSeconds)
	}
	var e *Error
	if _, err := bc.GC(ctx, GCRequest{GraceSeconds: new(-1.0)}); !errors.As(err, &e) || e.Status != http.StatusBadRequest {
		t.Errorf("GC with negative grace: %v, want 400", err)
	}
}

// TestSimulate asks the simulator through the API of a real iam: the
// verdict, the deciding statement, input errors, and who may ask.
func TestSimulate(t *testing.T) {
	t.Parallel()
	s := newRealServer(t)
	ctx := t.Context()
	doc := []byte(`{"Version":"2012-10-17","Statement":[{"Sid":"Read","Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::photos/*",` +
		`"Condition":{"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}}]}`)
	mustDo(t, "put policy", s.root.PutPolicy(ctx, "office-read", doc))
	alice := must[CreateUserResponse](t, "create alice")(s.root.CreateUser(ctx, "alice"))
	mustDo(t, "attach", s.root.AttachPolicy(ctx, "office-read", iam.Target{User: "alice"}))

	in := SimulateRequest{User: "alice", Action: "s3:GetObject", Resource: "arn:aws:s3:::photos/a.jpg", Context: map[string]string{"aws:SourceIp": "10.1.2.3"}}
	sim := must[Simulation](t, "simulate inside")(s.root.Simulate(ctx, in))
	if !sim.Allowed || sim.Reason != iam.ReasonAllowed || len(sim.Deciding) != 1 || sim.Deciding[0].Policy != "office-read" || sim.Deciding[0].Sid != "Read" {
		t.Errorf("simulate inside = %+v", sim)
	}
	in.Context["aws:SourceIp"] = "192.0.2.1"
	sim = must[Simulation](t, "simulate outside")(s.root.Simulate(ctx, in))
	if sim.Allowed || sim.Reason != iam.ReasonNoAllow {
		t.Errorf("simulate outside = %+v", sim)
	}
	in.User, in.AccessKey = "", alice.AccessKey
	in.Context = nil
	sim = must[Simulation](t, "simulate key")(s.root.Simulate(ctx, in))
	if sim.Allowed || sim.Principal != "alice (key "+alice.AccessKey+")" {
		t.Errorf("simulate key without source ip = %+v", sim)
	}

	for _, tc := range []struct {
		name string
		in   SimulateRequest
		code string
	}{
		{"no principal", SimulateRequest{Action: "s3:GetObject"}, CodeInvalidInput},
		{"bad resource", SimulateRequest{User: "alice", Action: "s3:GetObject", Resource: "photos/a"}, CodeInvalidInput},
		{"bad context key", SimulateRequest{User: "alice", Action: "s3:GetObject", Context: map[string]string{"aws:nope": "x"}}, CodeInvalidInput},
		{"bad ip", SimulateRequest{User: "alice", Action: "s3:GetObject", Context: map[string]string{"aws:SourceIp": "x"}}, CodeInvalidInput},
		{"unknown action", SimulateRequest{User: "alice", Action: "s3:Nope"}, CodeInvalidInput},
		{"unknown user", SimulateRequest{User: "nobody", Action: "s3:GetObject"}, CodeNoSuchEntity},
	} {
		_, err := s.root.Simulate(ctx, tc.in)
		wantCode(t, tc.name, err, tc.code)
	}
	_, err := s.as(t, alice.AccessKey, alice.SecretKey).Simulate(ctx, SimulateRequest{User: "alice", Action: "s3:GetObject"})
	wantCode(t, "alice simulates", err, CodeAccessDenied)
}
