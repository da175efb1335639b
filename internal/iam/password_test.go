package iam

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
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
			if got.User != "" && got.UserID == "" {
				t.Errorf("SignIn(%q) = %+v: no user ID", tc.user, got)
			}
			got.UserID = ""
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

// newerPasswordParams are raised parameters: cheap enough for tests, and
// not testPasswordParams.
var newerPasswordParams = PasswordParams{Memory: 2 * MinPasswordMemory, Time: 2, Threads: 1}

// storedUser returns user name's stored record.
func storedUser(t *testing.T, state []byte, name string) userRec {
	t.Helper()
	var doc stateDoc
	if err := json.Unmarshal(state, &doc); err != nil {
		t.Fatal(err)
	}
	u, ok := doc.Users[name]
	if !ok {
		t.Fatalf("no user %s stored", name)
	}
	return *u
}

// TestSignInUpgradesHash: after console.argon2.* is raised, a user's
// hash made with the old parameters is replaced at its next successful
// sign-in by one with the current parameters, saved; a wrong password
// changes nothing; the password's change time, and so its sessions,
// stay; a current hash is not rewritten.
func TestSignInUpgradesHash(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	f.user("alice")
	if err := f.m.SetPassword(ctx, "alice", "s3cret-pass"); err != nil {
		t.Fatal(err)
	}
	before := storedUser(t, f.store.state, "alice")
	m, err := New(Config{RootAccessKey: "ROOT", RootSecretKey: "rootsecret", MasterKey: testMaster, Store: f.store,
		Clock: func() time.Time { return f.now }, Password: newerPasswordParams})
	if err != nil {
		t.Fatal(err)
	}
	saves := f.store.saves
	if _, err := m.SignIn(ctx, "alice", "wrong-pass"); !errors.Is(err, ErrSignIn) {
		t.Fatalf("SignIn with a wrong password = %v, want ErrSignIn", err)
	}
	if f.store.saves != saves || storedUser(t, f.store.state, "alice").Password != before.Password {
		t.Fatalf("a wrong password changed the stored hash")
	}
	start := f.now
	f.now = f.now.Add(time.Minute)
	p, err := m.SignIn(ctx, "alice", "s3cret-pass")
	if err != nil || p != (Principal{User: "alice", UserID: p.UserID, Session: true}) || p.UserID == "" {
		t.Fatalf("SignIn = %+v, %v", p, err)
	}
	after := storedUser(t, f.store.state, "alice")
	if f.store.saves != saves+1 {
		t.Errorf("saves = %d, want %d: the upgraded hash is not saved once", f.store.saves, saves+1)
	}
	if got, _, _, err := parsePHC(after.Password); err != nil || got != newerPasswordParams {
		t.Errorf("stored hash parameters after sign-in = %+v, %v; want %+v", got, err, newerPasswordParams)
	}
	if !after.PasswordChanged.Equal(before.PasswordChanged) {
		t.Errorf("PasswordChanged moved from %v to %v: an upgrade is no password change", before.PasswordChanged, after.PasswordChanged)
	}
	if !m.SessionValid(p, start) {
		t.Errorf("a session from before the upgrade is no longer valid")
	}
	// Current now: a sign-in verifies and writes nothing.
	if _, err := m.SignIn(ctx, "alice", "s3cret-pass"); err != nil {
		t.Fatal(err)
	}
	if f.store.saves != saves+1 {
		t.Errorf("a current hash was rewritten (saves %d, want %d)", f.store.saves, saves+1)
	}
	// The upgraded hash survives a restart, even with the old parameters
	// configured again (which would upgrade it back).
	f.open()
	if _, err := f.m.SignIn(ctx, "alice", "s3cret-pass"); err != nil {
		t.Errorf("SignIn after reopening: %v", err)
	}
	if _, err := f.m.SignIn(ctx, "alice", "wrong-pass"); !errors.Is(err, ErrSignIn) {
		t.Errorf("SignIn with a wrong password after the upgrade = %v", err)
	}
}

// TestSignInUpgradeSaveFails: when the upgraded hash cannot be saved, the
// sign-in still succeeds (the password was right) and the old hash stays,
// and the failure is logged at Warn with the user and the cause, never
// the password; it used to be dropped without a word. Once the store
// saves again, the next sign-in upgrades the hash, and logs nothing.
func TestSignInUpgradeSaveFails(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	f.user("alice")
	if err := f.m.SetPassword(ctx, "alice", "s3cret-pass"); err != nil {
		t.Fatal(err)
	}
	before := storedUser(t, f.store.state, "alice")
	var logs bytes.Buffer
	m, err := New(Config{RootAccessKey: "ROOT", RootSecretKey: "rootsecret", MasterKey: testMaster, Store: f.store,
		Clock: func() time.Time { return f.now }, Password: newerPasswordParams, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	f.store.failPut = errors.New("disk full")
	p, err := m.SignIn(ctx, "alice", "s3cret-pass")
	if err != nil || p != (Principal{User: "alice", UserID: p.UserID, Session: true}) || p.UserID == "" {
		t.Fatalf("SignIn with the right password and a failing store = %+v, %v; want alice signed in", p, err)
	}
	want := `level=WARN msg="console password hash upgrade not saved; it is tried again at the user's next sign-in" user=alice err="iam: save state: disk full"`
	if !strings.Contains(logs.String(), want) {
		t.Errorf("log does not say %q:\n%s", want, logs.String())
	}
	if strings.Contains(logs.String(), "s3cret-pass") {
		t.Errorf("the log holds the password:\n%s", logs.String())
	}
	if got := storedUser(t, f.store.state, "alice").Password; got != before.Password {
		t.Errorf("stored hash changed although the save failed")
	}

	f.store.failPut = nil
	logs.Reset()
	if _, err := m.SignIn(ctx, "alice", "s3cret-pass"); err != nil {
		t.Fatal(err)
	}
	if got, _, _, err := parsePHC(storedUser(t, f.store.state, "alice").Password); err != nil || got != newerPasswordParams {
		t.Errorf("stored hash parameters after the retry = %+v, %v; want %+v", got, err, newerPasswordParams)
	}
	if logs.Len() != 0 {
		t.Errorf("a saved upgrade logged:\n%s", logs.String())
	}
}

// TestSignInUpgradeShared: on a shared store the upgrade goes through
// UpdateIAMState, as any change does, so the other node sees it after
// Reload; and it never replaces a password that another node set after
// this node's snapshot: the stale check still signs in (as before), but
// the stored password stays the new one.
func TestSignInUpgradeShared(t *testing.T) {
	ctx := t.Context()
	st := sharedStore{newMemStore()}
	var logs bytes.Buffer
	open := func(p PasswordParams) *IAM {
		m, err := New(Config{RootAccessKey: "ROOT", RootSecretKey: "rootsecret", MasterKey: testMaster, Store: st, Password: p,
			Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	old, upgraded := open(testPasswordParams), open(newerPasswordParams)
	if _, err := old.CreateUser(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if err := old.SetPassword(ctx, "alice", "first-pass"); err != nil {
		t.Fatal(err)
	}
	if err := upgraded.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	// The password changes through the other node; upgraded has not
	// reloaded, and its stale hash still accepts the first password.
	if err := old.SetPassword(ctx, "alice", "second-pass"); err != nil {
		t.Fatal(err)
	}
	if _, err := upgraded.SignIn(ctx, "alice", "first-pass"); err != nil {
		t.Fatalf("SignIn against the stale snapshot: %v", err)
	}
	stored := storedUser(t, st.state, "alice").Password
	if !verifyPassword(stored, "second-pass") || verifyPassword(stored, "first-pass") {
		t.Fatalf("the upgrade of a stale hash replaced the password set through the other node")
	}
	// Caught up, the node upgrades the current password's hash in the
	// shared state.
	if err := upgraded.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	saves := st.saves
	if _, err := upgraded.SignIn(ctx, "alice", "second-pass"); err != nil {
		t.Fatal(err)
	}
	stored = storedUser(t, st.state, "alice").Password
	if got, _, _, _ := parsePHC(stored); st.saves != saves+1 || got != newerPasswordParams || !verifyPassword(stored, "second-pass") {
		t.Fatalf("after the sign-in: saves %d (want %d), stored parameters %+v (want %+v)", st.saves, saves+1, got, newerPasswordParams)
	}
	if err := old.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := old.SignIn(ctx, "alice", "second-pass"); err != nil {
		t.Errorf("the other node, after Reload, with the upgraded hash: %v", err)
	}
	// Keeping a password set meanwhile is no failure to report.
	if logs.Len() != 0 {
		t.Errorf("the upgrades logged:\n%s", logs.String())
	}
}

// TestSignInOldHashTiming: with raised parameters, a wrong password for a
// user whose hash still has the old, cheap ones costs at least what an
// unknown name costs (a check against a current hash); without that, it
// answered about 15 times faster here, telling that the user exists.
// Each side's fastest of a few tries is compared, which scheduling noise
// can only slow.
func TestSignInOldHashTiming(t *testing.T) {
	ctx := t.Context()
	store := newMemStore()
	open := func(p PasswordParams) *IAM {
		m, err := New(Config{RootAccessKey: "ROOT", RootSecretKey: "rootsecret", MasterKey: testMaster, Store: store, Password: p})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := open(testPasswordParams) // 1 MiB, 1 pass
	if _, err := m.CreateUser(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if err := m.SetPassword(ctx, "alice", "s3cret-pass"); err != nil {
		t.Fatal(err)
	}
	m = open(PasswordParams{Memory: 16 * MinPasswordMemory, Time: 2, Threads: 1}) // ~20x the work
	m.dummyHash()                                                                 // made once, outside the measurement
	fastest := func(name string) time.Duration {
		best := time.Duration(1<<63 - 1)
		for range 3 {
			start := time.Now()
			if _, err := m.SignIn(ctx, name, "wrong-pass"); !errors.Is(err, ErrSignIn) {
				t.Fatalf("SignIn(%s) = %v, want ErrSignIn", name, err)
			}
			best = min(best, time.Since(start))
		}
		return best
	}
	unknown, old := fastest("mallory"), fastest("alice")
	if old < unknown/2 {
		t.Errorf("a wrong password for a user with an old hash took %v, an unknown name %v: the time tells the user exists", old, unknown)
	}
}
