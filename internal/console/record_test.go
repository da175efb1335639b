package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/coffer-s3/coffer/internal/audit"
)

// TestEveryChangeAudited checks that every state-changing route has its
// audit record, and that the table names no route that does not exist.
func TestEveryChangeAudited(t *testing.T) {
	t.Parallel()
	routes := map[string]bool{"POST /logout": true}
	for _, p := range pages() {
		for _, rt := range append(p.routes, p.streams...) {
			method, _, _ := strings.Cut(rt.pattern, " ")
			if stateChanging(method) {
				routes[rt.pattern] = true
			}
		}
	}
	for r := range routes {
		if _, ok := actions[r]; !ok {
			t.Errorf("route %q has no audit record in actions", r)
		}
	}
	for r, spec := range actions {
		if !routes[r] {
			t.Errorf("actions names %q, which is no state-changing route", r)
		}
		if spec.op == "" {
			t.Errorf("actions[%q] has no op", r)
		}
	}
}

// recordedRow is what TestConsoleActionsAudited compares of an event.
type recordedRow struct {
	Op     string
	Status int
	Code   string
	User   string
	IP     string
	Bucket string
	Key    string
	Target string
}

// TestConsoleActionsAudited signs in and out, fails and gets locked out,
// and makes changes, allowed and refused, and checks the audit log's
// console events: who, what, from where, the outcome; that a
// confirmation step is not an event; and that no password, secret,
// token or share link is in any of them. The Audit page shows them.
func TestConsoleActionsAudited(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{LoginFailures: 3}, 1)
	log := withAudit(t, f, nil)
	f.h.events = log
	f.user(t, "alice", "alice-password", "readonly")

	login := func(name, password, addr string) *http.Response {
		return f.do(t, request{method: "POST", path: "/login", addr: addr, form: url.Values{"username": {name}, "password": {password}}})
	}
	status := func(what string, resp *http.Response, want int) string {
		t.Helper()
		b := body(t, resp)
		if resp.StatusCode != want {
			t.Fatalf("%s: status %d, want %d\n%s", what, resp.StatusCode, want, b)
		}
		return b
	}
	status("alice, wrong password", login("alice", "not-alices-password", ""), 401)
	status("a password typed as the name", login("hunter2-typed-as-name", "x", ""), 401)
	aliceID, aliceCSRF := f.signIn(t, "alice", "alice-password")
	status("alice creates a bucket", f.post(t, aliceID, aliceCSRF, "/buckets", url.Values{"name": {"alices"}}), 403)

	id, csrf := f.signIn(t, testRootKey, testRootSecret)
	status("create bucket", f.post(t, id, csrf, "/buckets", url.Values{"name": {"photos"}}), 303)
	status("alice uploads", f.raw(t, "/objects/photos/upload?key=nope.txt", aliceID, aliceCSRF, []byte("x"), nil), 403)
	// A request that fails before any authorization (no key) is a
	// stranger's to the audit log: recorded within its bounds.
	status("alice uploads without a key", f.raw(t, "/objects/photos/upload", aliceID, aliceCSRF, []byte("x"), nil), 400)
	page := status("create user", f.post(t, id, csrf, "/users", url.Values{"name": {"bob"}}), 200)
	bobSecret := regexp.MustCompile(`id="secret-key">([^<]+)<`).FindStringSubmatch(page)
	if bobSecret == nil {
		t.Fatal("no secret key on the new user's page")
	}
	status("set password", f.post(t, id, csrf, "/users/bob/password", url.Values{"password": {"bobs-console-password"}}), 303)
	status("upload", f.raw(t, "/objects/photos/upload?key=a.txt", id, csrf, []byte("hello"), map[string]string{"Content-Type": "text/plain"}), 200)
	page = status("share", f.post(t, id, csrf, "/objects/photos/share", url.Values{"key": {"a.txt"}, "expires": {"1"}, "unit": {"h"}}), 200)
	link, ok := attr(page, "share-url", "value")
	if !ok {
		t.Fatal("no share link")
	}
	// The object comes from the form alone, from which the event
	// records it: a key in a POST's query once made a link that the
	// log recorded without its object.
	status("share with the key in the query", f.post(t, id, csrf, "/objects/photos/share?key=a.txt", url.Values{"expires": {"1"}, "unit": {"h"}}), 400)
	sig := regexp.MustCompile(`X-Amz-Signature=([0-9a-f]+)`).FindStringSubmatch(link)
	if sig == nil {
		t.Fatalf("share link %q has no signature", link)
	}
	status("delete, confirmation step", f.post(t, id, csrf, "/objects/photos/delete", url.Values{"key": {"a.txt"}}), 200)
	status("delete", f.post(t, id, csrf, "/objects/photos/delete", url.Values{"key": {"a.txt"}, "confirm": {"1"}}), 303)
	status("forged post", f.do(t, request{method: "POST", path: "/buckets", cookie: id, form: url.Values{"name": {"forged"}}}), 403)
	status("post without a session", f.do(t, request{method: "POST", path: "/buckets/photos/delete", form: url.Values{}}), 403)
	status("sign out", f.post(t, id, csrf, "/logout", nil), 303)

	const far = "198.51.100.7"
	for range 3 {
		status("bob, wrong password", login("bob", "wrong", far), 401)
	}
	status("bob, locked out", login("bob", "bobs-console-password", far), 429)

	if err := log.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	pg, err := log.Query(t.Context(), audit.Filter{Source: audit.SourceConsole, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var got []recordedRow
	for i := len(pg.Events) - 1; i >= 0; i-- { // oldest first
		e := pg.Events[i]
		target := e.Target
		if e.Op == "CreateUser" {
			target = regexp.MustCompile(`new key \S+`).ReplaceAllString(target, "new key K")
		}
		got = append(got, recordedRow{e.Op, e.Status, e.Code, e.User, e.SourceIP, e.Bucket, e.Key, target})
	}
	const ip = "192.0.2.10"
	want := []recordedRow{
		{"SignIn", 401, codeSignInFailed, "alice", ip, "", "", ""},
		{"SignIn", 401, codeSignInFailed, "", ip, "", "", hiddenName},
		{"SignIn", 303, "", "alice", ip, "", "", ""},
		{"CreateBucket", 403, "AccessDenied", "alice", ip, "alices", "", ""},
		{"SignIn", 303, "", "root", ip, "", "", ""},
		{"CreateBucket", 303, "", "root", ip, "photos", "", ""},
		{"PutObject", 403, "AccessDenied", "alice", ip, "photos", "nope.txt", ""},
		{"PutObject", 400, "BadRequest", "alice", ip, "photos", "", ""},
		{"CreateUser", 200, "", "root", ip, "", "", "users/bob new key K"},
		{"SetUserPassword", 303, "", "root", ip, "", "", "users/bob"},
		{"PutObject", 200, "", "root", ip, "photos", "a.txt", ""},
		{"ShareObject", 200, "", "root", ip, "photos", "a.txt", "expires in 1h"},
		{"ShareObject", 400, "BadRequest", "root", ip, "photos", "", "expires in 1h"},
		{"DeleteObjects", 303, "", "root", ip, "photos", "a.txt", ""},
		{"CreateBucket", 403, codeCSRF, "root", ip, "forged", "", ""},
		{"DeleteBucket", 403, codeNoSession, "", ip, "photos", "", ""},
		{"SignOut", 303, "", "root", ip, "", "", ""},
		{"SignIn", 401, codeSignInFailed, "bob", far, "", "", ""},
		{"SignIn", 401, codeSignInFailed, "bob", far, "", "", ""},
		{"SignIn", 401, codeSignInFailed, "bob", far, "", "", ""},
		{"SignIn", 429, codeLockedOut, "bob", far, "", "", ""},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("console audit events (-want +got):\n%s", diff)
	}
	for _, e := range pg.Events {
		if e.Op == "SignIn" && e.User == "root" && e.AccessKey != testRootKey {
			t.Errorf("root's sign-in recorded with access key %q, want %q", e.AccessKey, testRootKey)
		}
		// Refusals and failures before any authorization are recorded
		// within the bounds for strangers; the rest in full.
		if want := e.Status == 401 || e.Status == 403 || e.Status == 429 || e.Status == 400; e.Untrusted != want {
			t.Errorf("%s %d by %q: untrusted %v, want %v", e.Op, e.Status, e.User, e.Untrusted, want)
		}
	}

	raw, err := json.Marshal(pg.Events)
	if err != nil {
		t.Fatal(err)
	}
	for what, secret := range map[string]string{
		"a wrong password": "not-alices-password", "a name that may be a password": "hunter2-typed-as-name",
		"alice's password": "alice-password", "root's secret": testRootSecret, "bob's password": "bobs-console-password",
		"bob's secret key": bobSecret[1], "the CSRF token": csrf, "the session ID": id, "the share link's signature": sig[1],
	} {
		if strings.Contains(string(raw), secret) {
			t.Errorf("the audit log holds %s", what)
		}
	}

	id, _ = f.signIn(t, testRootKey, testRootSecret)
	code, b := f.get(t, id, "/audit?source=console&op=ShareObject")
	if code != 200 || !strings.Contains(b, "ShareObject") || !strings.Contains(b, "a.txt") {
		t.Errorf("Audit page filtered to the console's share links: %d, want a row of ShareObject on a.txt\n%s", code, b)
	}
}

// TestDeniedDeletesBounded: a signed-in user with no permissions gets no
// event recorded in full: a confirmed delete of keys it may not delete
// answers 303 with the refusal shown, and recorded in full it let such a
// user fill the log with 24 KiB events at will.
func TestDeniedDeletesBounded(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, 1)
	log := withAudit(t, f, nil)
	f.h.events = log
	f.user(t, "mallory", "mallory-password") // no policies
	id, csrf := f.signIn(t, "mallory", "mallory-password")
	keys := make([]string, 60)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s-%04d", strings.Repeat("k", 1000), i)
	}
	for range 20 {
		resp := f.post(t, id, csrf, "/objects/nosuchbucket/delete", url.Values{"key": keys, "confirm": {"1"}})
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	if err := log.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	pg, err := log.Query(t.Context(), audit.Filter{Source: audit.SourceConsole, Op: "DeleteObjects", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range pg.Events {
		if !e.Untrusted {
			t.Errorf("a denied-only delete recorded in full: %d bytes of target", len(e.Target))
		}
	}
}
