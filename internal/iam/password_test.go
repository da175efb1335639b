package iam

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// testPasswordParams make hashes cheap in tests.
var testPasswordParams = PasswordParams{Memory: MinPasswordMemory, Time: 1, Threads: 1}

func TestHashPassword(t *testing.T) {
	t.Parallel()
	h := hashPassword(testPasswordParams, "correct horse")
	if !strings.HasPrefix(h, "$argon2id$v=19$m=1024,t=1,p=1$") {
		t.Fatalf("hash = %q, want the PHC form with its parameters", h)
	}
	if h2 := hashPassword(testPasswordParams, "correct horse"); h2 == h {
		t.Errorf("two hashes of one password are equal: the salt is not random")
	}
	if !verifyPassword(h, "correct horse") {
		t.Errorf("verifyPassword(right password) = false")
	}
	for _, pw := range []string{"correct hors", "correct horse ", "Correct horse", ""} {
		if verifyPassword(h, pw) {
			t.Errorf("verifyPassword(%q) = true", pw)
		}
	}
	// A hash keeps verifying after the parameters change.
	other := hashPassword(PasswordParams{Memory: 2 * MinPasswordMemory, Time: 2, Threads: 2}, "pw with other params")
	if !verifyPassword(other, "pw with other params") {
		t.Errorf("a hash made with other parameters does not verify")
	}
}

func TestParsePHCRejects(t *testing.T) {
	t.Parallel()
	good := hashPassword(testPasswordParams, "password")
	parts := strings.Split(good, "$") // "", argon2id, v=19, params, salt, sum
	for _, tc := range []struct{ name, phc string }{
		{"empty", ""},
		{"argon2i", strings.Replace(good, "argon2id", "argon2i", 1)},
		{"other version", strings.Replace(good, "v=19", "v=16", 1)},
		{"huge memory", strings.Replace(good, "m=1024", "m=99999999", 1)},
		{"zero time", strings.Replace(good, "t=1", "t=0", 1)},
		{"threads over 255", strings.Replace(good, "p=1", "p=256", 1)},
		{"bad salt", strings.Join([]string{"", parts[1], parts[2], parts[3], "!!", parts[5]}, "$")},
		{"short sum", strings.Join([]string{"", parts[1], parts[2], parts[3], parts[4], "AAAA"}, "$")},
		{"extra field", good + "$x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, _, err := parsePHC(tc.phc); err == nil {
				t.Errorf("parsePHC(%q) = nil error", tc.phc)
			}
			if verifyPassword(tc.phc, "password") {
				t.Errorf("verifyPassword(%q) = true", tc.phc)
			}
		})
	}
}

func TestPasswordParamsValidate(t *testing.T) {
	t.Parallel()
	if err := DefaultPasswordParams.Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	for _, p := range []PasswordParams{
		{Memory: 512, Time: 1, Threads: 1},
		{Memory: MaxPasswordMemory + 1, Time: 1, Threads: 1},
		{Memory: 1024, Time: 0, Threads: 1},
		{Memory: 1024, Time: MaxPasswordTime + 1, Threads: 1},
		{Memory: 1024, Time: 1, Threads: 0},
		{Memory: 1024, Time: 1, Threads: 255},
	} {
		if err := p.Validate(); err == nil {
			t.Errorf("%+v.Validate() = nil", p)
		}
	}
}

func TestSetPassword(t *testing.T) {
	f := newFixture(t)
	f.user("alice")
	ctx := t.Context()
	for _, tc := range []struct {
		name, user, pw string
		want           error
	}{
		{"too short", "alice", "1234567", ErrInvalid},
		{"too long", "alice", strings.Repeat("x", MaxPasswordLen+1), ErrInvalid},
		{"unknown user", "bob", "long enough", ErrNotFound},
		{"ok", "alice", "long enough", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := f.m.SetPassword(ctx, tc.user, tc.pw); !errors.Is(err, tc.want) {
				t.Errorf("SetPassword = %v, want %v", err, tc.want)
			}
		})
	}
	ui, err := f.m.User(ctx, "alice")
	if err != nil || !ui.Password {
		t.Fatalf("User(alice) = %+v, %v; want Password true", ui, err)
	}
	js, _ := json.Marshal(ui)
	if strings.Contains(string(js), "argon2") {
		t.Errorf("UserInfo shows the hash: %s", js)
	}
	if strings.Contains(string(f.store.state), "long enough") {
		t.Errorf("the stored state holds the password in the clear")
	}
	// The hash survives a restart.
	f.open()
	if _, err := f.m.SignIn(ctx, "alice", "long enough"); err != nil {
		t.Errorf("SignIn after reopening: %v", err)
	}
}

func TestSignIn(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	f.user("alice", "readonly")
	f.user("nopw")
	f.user("off")
	for _, u := range []string{"alice", "off"} {
		if err := f.m.SetPassword(ctx, u, "s3cret-pass"); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.m.SetUserDisabled(ctx, "off", true); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, user, pw string
		want           Principal
		wantErr        bool
	}{
		{name: "user", user: "alice", pw: "s3cret-pass", want: Principal{User: "alice", Session: true}},
		{name: "root", user: "ROOT", pw: "rootsecret", want: Principal{AccessKeyID: "ROOT", Root: true, Session: true}},
		{name: "wrong password", user: "alice", pw: "s3cret-pasS", wantErr: true},
		{name: "unknown user", user: "mallory", pw: "s3cret-pass", wantErr: true},
		{name: "no password set", user: "nopw", pw: "", wantErr: true},
		{name: "disabled", user: "off", pw: "s3cret-pass", wantErr: true},
		{name: "root wrong secret", user: "ROOT", pw: "rootsecreT", wantErr: true},
		{name: "root secret for a user", user: "alice", pw: "rootsecret", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := f.m.SignIn(ctx, tc.user, tc.pw)
			if tc.wantErr {
				if !errors.Is(err, ErrSignIn) {
					t.Errorf("SignIn(%q) = %+v, %v; want ErrSignIn", tc.user, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("SignIn(%q) = %+v, %v; want %+v", tc.user, got, err, tc.want)
			}
		})
	}
}

// TestSignInUnknownUserHashes checks the structure that makes a wrong
// name cost what a wrong password costs: both verify against an argon2id
// hash with the current parameters (the dummy one for unknown names).
func TestSignInUnknownUserHashes(t *testing.T) {
	f := newFixture(t)
	f.user("alice")
	if err := f.m.SetPassword(t.Context(), "alice", "s3cret-pass"); err != nil {
		t.Fatal(err)
	}
	stored := f.store.state
	var doc stateDoc
	if err := json.Unmarshal(stored, &doc); err != nil {
		t.Fatal(err)
	}
	userParams, _, _, err := parsePHC(doc.Users["alice"].Password)
	if err != nil {
		t.Fatal(err)
	}
	dummyParams, _, _, err := parsePHC(f.m.dummyHash())
	if err != nil {
		t.Fatal(err)
	}
	if userParams != dummyParams || dummyParams != testPasswordParams {
		t.Errorf("user hash parameters %+v, dummy %+v: want both %+v", userParams, dummyParams, testPasswordParams)
	}
	if first, again := f.m.dummyHash(), f.m.dummyHash(); first != again {
		t.Errorf("the dummy hash is made more than once")
	}
}

func TestSessionValid(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	f.user("alice", "readwrite")
	if err := f.m.SetPassword(ctx, "alice", "s3cret-pass"); err != nil {
		t.Fatal(err)
	}
	p, err := f.m.SignIn(ctx, "alice", "s3cret-pass")
	if err != nil {
		t.Fatal(err)
	}
	start := f.now
	if !f.m.SessionValid(p, start) {
		t.Fatal("a fresh session is not valid")
	}
	if err := f.m.Authorize(ctx, Request{Principal: p, Action: PutObject, Bucket: "b", Key: "k"}); err != nil {
		t.Errorf("a session of a readwrite user may not PutObject: %v", err)
	}
	if !f.m.CanSeeBucket(p, "b") {
		t.Errorf("a session of a readwrite user cannot see bucket b")
	}
	if err := f.m.SetUserDisabled(ctx, "alice", true); err != nil {
		t.Fatal(err)
	}
	if f.m.SessionValid(p, start) {
		t.Errorf("a session of a disabled user is valid")
	}
	if err := f.m.Authorize(ctx, Request{Principal: p, Action: GetObject, Bucket: "b", Key: "k"}); err == nil {
		t.Errorf("a session of a disabled user may GetObject")
	}
	if err := f.m.SetUserDisabled(ctx, "alice", false); err != nil {
		t.Fatal(err)
	}
	f.now = f.now.Add(time.Minute)
	if err := f.m.SetPassword(ctx, "alice", "new-s3cret-pass"); err != nil {
		t.Fatal(err)
	}
	if f.m.SessionValid(p, start) {
		t.Errorf("a session from before a password change is valid")
	}
	if !f.m.SessionValid(p, f.now) {
		t.Errorf("a session from after the password change is not valid")
	}
	if err := f.m.DeleteUser(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if f.m.SessionValid(p, f.now) {
		t.Errorf("a session of a deleted user is valid")
	}
	// A session principal never borrows a key: without Session, a user
	// name alone is nobody.
	if f.m.SessionValid(Principal{User: "alice"}, f.now) {
		t.Errorf("a principal without Session is a valid session")
	}
	root, err := f.m.SignIn(ctx, "ROOT", "rootsecret")
	if err != nil || !f.m.SessionValid(root, start) {
		t.Errorf("root session: %v, valid %v", err, f.m.SessionValid(root, start))
	}
}
