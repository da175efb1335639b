package console

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coffer-s3/coffer/internal/blob/memblob"
	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/meta"
	"github.com/coffer-s3/coffer/internal/objects"
)

const (
	testRootKey    = "ROOTACCESSKEY"
	testRootSecret = "root-secret-key"
	testOrigin     = "http://127.0.0.1:6790"
	testS3URL      = "http://s3.test:9000"
	testRegion     = "us-east-1"
)

// countingIAM is the real iam with its sign-ins counted, and optionally
// slowed, to observe the login path's structure.
type countingIAM struct {
	*iam.IAM
	delay          time.Duration
	calls, running atomic.Int64
	peak           atomic.Int64
}

func (c *countingIAM) SignIn(ctx context.Context, name, password string) (iam.Principal, error) {
	c.calls.Add(1)
	n := c.running.Add(1)
	defer c.running.Add(-1)
	for {
		p := c.peak.Load()
		if n <= p || c.peak.CompareAndSwap(p, n) {
			break
		}
	}
	time.Sleep(c.delay)
	return c.IAM.SignIn(ctx, name, password)
}

type fixture struct {
	h       *Handler
	iam     *countingIAM
	objects *objects.Service
	clock   *fakeClock
}

func newFixture(t testing.TB, cfg Config, slots int) *fixture {
	t.Helper()
	c := newFakeClock()
	m, err := iam.New(iam.Config{RootAccessKey: testRootKey, RootSecretKey: testRootSecret, Clock: c.now,
		Password: iam.PasswordParams{Memory: iam.MinPasswordMemory, Time: 1, Threads: 1}})
	if err != nil {
		t.Fatal(err)
	}
	db, err := meta.Open(meta.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	svc, err := objects.New(objects.Config{}, db, memblob.New(), nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{iam: &countingIAM{IAM: m}, objects: svc, clock: c}
	f.h, err = New(cfg, Deps{IAM: f.iam, Buckets: svc, Clock: c.now, HashSlots: slots, Logger: slog.New(slog.DiscardHandler),
		Browser: BrowserDeps{Objects: svc, Region: testRegion, S3Endpoint: func() string { return testS3URL }}})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// user creates a user with a console password and policies.
func (f *fixture) user(t *testing.T, name, password string, policies ...string) {
	t.Helper()
	ctx := t.Context()
	if _, err := f.iam.CreateUser(ctx, name); err != nil {
		t.Fatal(err)
	}
	if err := f.iam.SetPassword(ctx, name, password); err != nil {
		t.Fatal(err)
	}
	for _, p := range policies {
		if err := f.iam.AttachPolicy(ctx, p, iam.Target{User: name}); err != nil {
			t.Fatal(err)
		}
	}
}

// request is one request to the console.
type request struct {
	method, path string
	form         url.Values
	cookie       string // session ID
	origin       string // "" for testOrigin; "-" for no Origin header
	addr         string // client address; "" for 192.0.2.10
	header       map[string]string
}

func (f *fixture) do(t testing.TB, rq request) *http.Response {
	t.Helper()
	var body io.Reader
	if rq.form != nil {
		body = strings.NewReader(rq.form.Encode())
	}
	r := httptest.NewRequest(rq.method, testOrigin+rq.path, body)
	if rq.form != nil {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	switch rq.origin {
	case "":
		r.Header.Set("Origin", testOrigin)
	case "-":
	default:
		r.Header.Set("Origin", rq.origin)
	}
	r.RemoteAddr = "192.0.2.10:4711"
	if rq.addr != "" {
		r.RemoteAddr = rq.addr + ":4711"
	}
	if rq.cookie != "" {
		r.AddCookie(&http.Cookie{Name: sessionCookie, Value: rq.cookie})
	}
	for k, v := range rq.header {
		if k == "Host" {
			r.Host = v // as net/http serves it
			continue
		}
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, r)
	return w.Result()
}

func body(t testing.TB, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// signIn signs in and returns the session ID and the page's CSRF token.
func (f *fixture) signIn(t testing.TB, name, password string) (id, csrf string) {
	t.Helper()
	resp := f.do(t, request{method: "POST", path: "/login", form: url.Values{"username": {name}, "password": {password}}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign in as %s: status %d\n%s", name, resp.StatusCode, body(t, resp))
	}
	for _, c := range resp.Cookies() {
		if c.Name == sessionCookie {
			id = c.Value
		}
	}
	page := f.do(t, request{method: "GET", path: "/buckets", cookie: id})
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body(t, page))
	if m == nil {
		t.Fatalf("no CSRF token on the buckets page")
	}
	return id, m[1]
}

func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, 1)
	want := map[string]string{
		"Content-Security-Policy": contentSecurityPolicy,
		"X-Frame-Options":         "DENY",
		"Referrer-Policy":         "same-origin",
		"X-Content-Type-Options":  "nosniff",
	}
	for _, rq := range []request{
		{method: "GET", path: "/login"},
		{method: "GET", path: "/"},
		{method: "GET", path: "/buckets"},
		{method: "GET", path: "/nowhere"},
		{method: "GET", path: "/static/console.css"},
		{method: "POST", path: "/login", form: url.Values{"username": {"x"}, "password": {"y"}}},
		{method: "POST", path: "/buckets", form: url.Values{"name": {"b"}}},
		{method: "POST", path: "/login", origin: "http://evil.test"},
	} {
		resp := f.do(t, rq)
		for k, v := range want {
			if got := resp.Header.Get(k); got != v {
				t.Errorf("%s %s (status %d): %s = %q, want %q", rq.method, rq.path, resp.StatusCode, k, got, v)
			}
		}
	}
	csp := want["Content-Security-Policy"]
	for _, part := range []string{"default-src 'self'", "script-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, part) || strings.Contains(csp, "unsafe-inline") {
			t.Errorf("CSP %q lacks %q or allows inline code", csp, part)
		}
	}
	// No template carries inline script or style.
	entries, err := web.ReadDir("web/templates")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, _ := web.ReadFile("web/templates/" + e.Name())
		// A script may only be loaded from a file under /static/.
		s := regexp.MustCompile(`<script src="/static/[a-z_]+\.js" defer></script>`).ReplaceAllString(string(b), "")
		if strings.Contains(s, "<script") || strings.Contains(s, "style=") || strings.Contains(s, "<style") || strings.Contains(s, " on") && regexp.MustCompile(`\son[a-z]+=`).MatchString(s) {
			t.Errorf("template %s has inline script or style", e.Name())
		}
	}
}

func TestLogin(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, 1)
	f.user(t, "alice", "alice-password", "readonly")

	resp := f.do(t, request{method: "GET", path: "/login"})
	if b := body(t, resp); resp.StatusCode != 200 || !strings.Contains(b, `name="username"`) || !strings.Contains(b, `name="password"`) {
		t.Fatalf("GET /login: %d\n%s", resp.StatusCode, b)
	}
	if resp := f.do(t, request{method: "GET", path: "/buckets"}); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login" {
		t.Errorf("GET /buckets without a session: %d to %q, want 303 to /login", resp.StatusCode, resp.Header.Get("Location"))
	}

	resp = f.do(t, request{method: "POST", path: "/login", form: url.Values{"username": {"alice"}, "password": {"alice-password"}}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("sign-in: %d to %q, want 303 to /", resp.StatusCode, resp.Header.Get("Location"))
	}
	var c *http.Cookie
	for _, k := range resp.Cookies() {
		if k.Name == sessionCookie {
			c = k
		}
	}
	if c == nil || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.Secure || len(c.Value) != 43 {
		t.Fatalf("session cookie = %+v; want HttpOnly, SameSite=Strict, Path=/, not Secure over plain HTTP, 256-bit value", c)
	}
	resp = f.do(t, request{method: "GET", path: "/", cookie: c.Value})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/buckets" {
		t.Errorf("GET / signed in: %d to %q, want 303 to /buckets", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp = f.do(t, request{method: "GET", path: "/buckets", cookie: c.Value})
	if b := body(t, resp); resp.StatusCode != 200 || !strings.Contains(b, `<span id="user">alice</span>`) || !strings.Contains(b, `href="/buckets" aria-current="page"`) {
		t.Errorf("GET /buckets signed in: %d\n%s", resp.StatusCode, b)
	}
	if resp := f.do(t, request{method: "GET", path: "/login", cookie: c.Value}); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("GET /login signed in: %d, want 303", resp.StatusCode)
	}

	// Sign-out needs the CSRF token, then ends the session.
	if resp := f.do(t, request{method: "POST", path: "/logout", cookie: c.Value, form: url.Values{}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("logout without a CSRF token: %d, want 403", resp.StatusCode)
	}
	id, csrf := f.signIn(t, "alice", "alice-password")
	resp = f.do(t, request{method: "POST", path: "/logout", cookie: id, form: url.Values{"csrf": {csrf}}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login" {
		t.Errorf("logout: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp := f.do(t, request{method: "GET", path: "/buckets", cookie: id}); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("GET /buckets after logout: %d, want 303 to /login", resp.StatusCode)
	}

	// Root signs in with its access key ID and secret key.
	rid, _ := f.signIn(t, testRootKey, testRootSecret)
	if b := body(t, f.do(t, request{method: "GET", path: "/buckets", cookie: rid})); !strings.Contains(b, `<span id="user">root</span>`) {
		t.Errorf("root's page does not name root:\n%s", b)
	}
}

// TestWrongUserLikeWrongPassword checks the structure that keeps a wrong
// name indistinguishable from a wrong password: both check one hash
// through the gate (iam.SignIn hashes against a dummy for unknown
// names), count against the limiter, and get the same answer.
func TestWrongUserLikeWrongPassword(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, 1)
	f.user(t, "alice", "alice-password")
	answer := func(name string) (int, string) {
		t.Helper()
		before := f.iam.calls.Load()
		resp := f.do(t, request{method: "POST", path: "/login", form: url.Values{"username": {name}, "password": {"wrong-password"}}})
		if n := f.iam.calls.Load() - before; n != 1 {
			t.Errorf("sign-in as %q called iam.SignIn %d times, want 1", name, n)
		}
		b := strings.ReplaceAll(body(t, resp), `value="`+name+`"`, `value="NAME"`)
		return resp.StatusCode, b
	}
	s1, b1 := answer("alice")
	s2, b2 := answer("mallory")
	if s1 != http.StatusUnauthorized || s1 != s2 || b1 != b2 {
		t.Errorf("wrong password: %d, unknown user: %d; bodies equal: %v", s1, s2, b1 == b2)
	}
	if !strings.Contains(b1, "Wrong user name or password.") || !strings.Contains(b1, `name="password"`) {
		t.Errorf("the 401 does not show the form with the error:\n%s", b1)
	}
	if n := f.h.limiter.len(); n != 3 { // one address, two names
		t.Errorf("limiter holds %d keys, want both failures counted", n)
	}
}

func TestLockout(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, 1)
	f.user(t, "alice", "alice-password")
	f.user(t, "bob", "bob-password")
	wrong := url.Values{"username": {"alice"}, "password": {"nope-nope"}}
	for i := range 10 {
		if resp := f.do(t, request{method: "POST", path: "/login", form: wrong}); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("failure %d: status %d, want 401", i+1, resp.StatusCode)
		}
		f.clock.advance(time.Second)
	}
	calls := f.iam.calls.Load()
	right := url.Values{"username": {"alice"}, "password": {"alice-password"}}
	resp := f.do(t, request{method: "POST", path: "/login", form: right})
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "890" {
		t.Fatalf("right password after 10 failures: %d, Retry-After %q; want 429 and 890", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if f.iam.calls.Load() != calls {
		t.Errorf("a locked-out sign-in still checked the password")
	}
	// The name is locked from any address; the address for any name.
	if resp := f.do(t, request{method: "POST", path: "/login", form: right, addr: "198.51.100.7"}); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("locked name from another address: %d, want 429", resp.StatusCode)
	}
	bob := url.Values{"username": {"bob"}, "password": {"bob-password"}}
	if resp := f.do(t, request{method: "POST", path: "/login", form: bob}); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("other name from the locked address: %d, want 429", resp.StatusCode)
	}
	if resp := f.do(t, request{method: "POST", path: "/login", form: bob, addr: "198.51.100.7"}); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("other name from another address: %d, want 303", resp.StatusCode)
	}
	f.clock.advance(15 * time.Minute)
	if resp := f.do(t, request{method: "POST", path: "/login", form: right}); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("after the window: %d, want 303", resp.StatusCode)
	}
}

// TestLockoutSurvivesFlood: a name locked out stays locked, for its
// right password too, while an attacker fails once each with more names
// than the limiter keeps, from as many addresses.
func TestLockoutSurvivesFlood(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, 1)
	f.user(t, "alice", "alice-password")
	wrong := url.Values{"username": {"alice"}, "password": {"nope-nope"}}
	for i := range 10 {
		if resp := f.do(t, request{method: "POST", path: "/login", form: wrong}); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("failure %d: status %d, want 401", i+1, resp.StatusCode)
		}
		f.clock.advance(time.Second)
	}
	flood(f.h.limiter, 2*limiterKeys)
	right := url.Values{"username": {"alice"}, "password": {"alice-password"}}
	resp := f.do(t, request{method: "POST", path: "/login", form: right, addr: "198.51.100.7"})
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "890" {
		t.Fatalf("right password after the flood: %d, Retry-After %q; want 429 and 890", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	f.clock.advance(889 * time.Second)
	if resp := f.do(t, request{method: "POST", path: "/login", form: right, addr: "198.51.100.7"}); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("right password a second before the lock ends: %d, want 429", resp.StatusCode)
	}
	f.clock.advance(time.Second)
	if resp := f.do(t, request{method: "POST", path: "/login", form: right, addr: "198.51.100.7"}); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("right password when the lock ended: %d, want 303", resp.StatusCode)
	}
}

// TestLoginLimiterFull: with every name the limiter keeps locked out, a
// sign-in as another name gets the lock-out's answer (no name is
// unlocked to make room), until the first lock ends.
func TestLoginLimiterFull(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, 1)
	f.user(t, "bob", "bob-password")
	for i := range 10 * limiterKeys {
		f.h.limiter.begin(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), fmt.Sprintf("locked%d", i/10), "")
	}
	calls := f.iam.calls.Load()
	bob := url.Values{"username": {"bob"}, "password": {"bob-password"}}
	resp := f.do(t, request{method: "POST", path: "/login", form: bob})
	if b := body(t, resp); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "900" ||
		!strings.Contains(b, "Too many failed sign-ins. Try again in 15m0s.") {
		t.Fatalf("new name with every kept name locked: %d, Retry-After %q; want 429 and 900 with the lock-out's message\n%s",
			resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	if f.iam.calls.Load() != calls {
		t.Errorf("a refused sign-in still checked the password")
	}
	if n := len(f.h.limiter.names.byKey); n != limiterKeys {
		t.Errorf("the name table holds %d keys, want %d", n, limiterKeys)
	}
	f.clock.advance(15 * time.Minute)
	if resp := f.do(t, request{method: "POST", path: "/login", form: bob}); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("after the locks ended: %d, want 303", resp.StatusCode)
	}
}

// TestLoginStormBounded sends many concurrent sign-ins and checks that
// the password checks (each an argon2id hash and its memory) never run
// more at once than the gate's slots, and that the ones that wait too
// long are refused with 503 and Retry-After.
func TestLoginStormBounded(t *testing.T) {
	t.Parallel()
	const slots, storm = 2, 60
	f := newFixture(t, Config{LoginQueueTimeout: 30 * time.Millisecond, LoginFailures: 1000}, slots)
	f.iam.delay = 10 * time.Millisecond
	var wg sync.WaitGroup
	statuses := make(chan *http.Response, storm)
	for i := range storm {
		wg.Go(func() {
			statuses <- f.do(t, request{method: "POST", path: "/login", addr: fmt.Sprintf("10.0.0.%d", i),
				form: url.Values{"username": {fmt.Sprintf("user%d", i)}, "password": {"password"}}})
		})
	}
	wg.Wait()
	close(statuses)
	counts := map[int]int{}
	for resp := range statuses {
		counts[resp.StatusCode]++
		if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") == "" {
			t.Errorf("503 without Retry-After")
		}
	}
	if p := f.iam.peak.Load(); p > slots {
		t.Errorf("%d password checks ran at once, want at most %d", p, slots)
	}
	if counts[http.StatusUnauthorized] == 0 || counts[http.StatusServiceUnavailable] == 0 || counts[401]+counts[503] != storm {
		t.Errorf("statuses %v: want some 401 (checked) and some 503 (refused after the queue deadline)", counts)
	}
	// A refused attempt was never checked, so it is not a failure.
	if n := f.h.limiter.len(); n != 2*counts[http.StatusUnauthorized] {
		t.Errorf("limiter holds %d keys for %d checked failures", n, counts[http.StatusUnauthorized])
	}
}

func TestCSRFAndOrigin(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, 1)
	id, csrf := f.signIn(t, testRootKey, testRootSecret)
	for _, tc := range []struct {
		name   string
		rq     request
		status int
	}{
		{"ok", request{form: url.Values{"csrf": {csrf}, "name": {"b-ok"}}}, http.StatusSeeOther},
		{"token in header", request{form: url.Values{"name": {"b-header"}}, header: map[string]string{"X-CSRF-Token": csrf}}, http.StatusSeeOther},
		{"referer instead of origin", request{form: url.Values{"csrf": {csrf}, "name": {"b-referer"}}, origin: "-",
			header: map[string]string{"Referer": testOrigin + "/buckets"}}, http.StatusSeeOther},
		{"no token", request{form: url.Values{"name": {"b1"}}}, http.StatusForbidden},
		{"wrong token", request{form: url.Values{"csrf": {csrf[:42] + "x"}, "name": {"b2"}}}, http.StatusForbidden},
		{"other origin", request{form: url.Values{"csrf": {csrf}, "name": {"b3"}}, origin: "http://evil.test"}, http.StatusForbidden},
		{"other port", request{form: url.Values{"csrf": {csrf}, "name": {"b4"}}, origin: testOrigin + ":8080"}, http.StatusForbidden},
		{"null origin", request{form: url.Values{"csrf": {csrf}, "name": {"b5"}}, origin: "null"}, http.StatusForbidden},
		{"no origin or referer", request{form: url.Values{"csrf": {csrf}, "name": {"b6"}}, origin: "-"}, http.StatusForbidden},
		{"other referer", request{form: url.Values{"csrf": {csrf}, "name": {"b7"}}, origin: "-",
			header: map[string]string{"Referer": "http://evil.test/x"}}, http.StatusForbidden},
		{"cross-site fetch", request{form: url.Values{"csrf": {csrf}, "name": {"b8"}},
			header: map[string]string{"Sec-Fetch-Site": "cross-site"}}, http.StatusForbidden},
		{"no session", request{form: url.Values{"csrf": {csrf}, "name": {"b9"}}, cookie: "-"}, http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rq := tc.rq
			rq.method, rq.path = "POST", "/buckets"
			if rq.cookie == "" {
				rq.cookie = id
			}
			resp := f.do(t, rq)
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d\n%s", resp.StatusCode, tc.status, body(t, resp))
			}
		})
	}
	bs, err := f.objects.BucketsUsage(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 3 {
		t.Errorf("%d buckets exist, want only the 3 of the accepted requests", len(bs))
	}
	// The sign-in form checks the origin too: no other site may sign a
	// browser in.
	resp := f.do(t, request{method: "POST", path: "/login", origin: "http://evil.test",
		form: url.Values{"username": {testRootKey}, "password": {testRootSecret}}})
	if resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) != 0 {
		t.Errorf("sign-in from another origin: %d with %d cookies, want 403 and none", resp.StatusCode, len(resp.Cookies()))
	}
}

func TestConfiguredOrigin(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{Origin: "https://coffer.example.com"}, 1)
	form := url.Values{"username": {testRootKey}, "password": {testRootSecret}}
	if resp := f.do(t, request{method: "POST", path: "/login", form: form}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("the request's own origin when another is configured: %d, want 403", resp.StatusCode)
	}
	if resp := f.do(t, request{method: "POST", path: "/login", form: form, origin: "https://coffer.example.com"}); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("the configured origin: %d, want 303", resp.StatusCode)
	}
}

// TestDNSRebinding: without --console.origin the console takes its
// origin from the Host header, so a page of another site reaching it
// under its own name (a name pointed at this machine) would pass the
// sign-in form's Origin check as the console's own origin; such names are
// refused, IP addresses and localhost answered. With --console.origin
// any Host is answered (a proxy may pass on its own) and the Origin check
// does the work.
func TestDNSRebinding(t *testing.T) {
	t.Parallel()
	form := url.Values{"username": {testRootKey}, "password": {testRootSecret}}
	signIn := func(f *fixture, host string) int {
		o := "http://" + host
		return f.do(t, request{method: "POST", path: "/login", form: form, origin: o, header: map[string]string{"Host": host}}).StatusCode
	}
	f := newFixture(t, Config{}, 1)
	for host, want := range map[string]int{
		"attacker.example:6790":           http.StatusMisdirectedRequest,
		"attacker.example":                http.StatusMisdirectedRequest,
		"127.0.0.1:6790":                  http.StatusSeeOther,
		"[::1]:6790":                      http.StatusSeeOther,
		"10.1.2.3":                        http.StatusSeeOther,
		"LOCALHOST:6790":                  http.StatusSeeOther,
		"localhost.:6790":                 http.StatusSeeOther,
		"coffer.localhost:6790":           http.StatusSeeOther,
		"localhost.attacker.example:6790": http.StatusMisdirectedRequest,
	} {
		if got := signIn(f, host); got != want {
			t.Errorf("sign-in with Host %s, no configured origin: %d, want %d", host, got, want)
		}
	}
	f = newFixture(t, Config{Origin: "https://coffer.example.com"}, 1)
	if got := signIn(f, "attacker.example:6790"); got != http.StatusForbidden {
		t.Errorf("sign-in from another origin, origin configured: %d, want 403 (the Origin check)", got)
	}
}

func TestSessionEndsWithUser(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{SessionIdle: time.Hour}, 1)
	f.user(t, "alice", "alice-password", "readwrite")
	ctx := t.Context()
	for _, tc := range []struct {
		name   string
		end    func() error
		revive func() error
	}{
		{"disabled", func() error { return f.iam.SetUserDisabled(ctx, "alice", true) }, func() error { return f.iam.SetUserDisabled(ctx, "alice", false) }},
		{"password changed", func() error { f.clock.advance(time.Second); return f.iam.SetPassword(ctx, "alice", "alice-password") }, nil},
	} {
		id, _ := f.signIn(t, "alice", "alice-password")
		if err := tc.end(); err != nil {
			t.Fatal(err)
		}
		if resp := f.do(t, request{method: "GET", path: "/buckets", cookie: id}); resp.StatusCode != http.StatusSeeOther {
			t.Errorf("%s: GET /buckets: %d, want 303 to /login", tc.name, resp.StatusCode)
		}
		if tc.revive != nil {
			if err := tc.revive(); err != nil {
				t.Fatal(err)
			}
		}
		// The ended session stays ended.
		if resp := f.do(t, request{method: "GET", path: "/buckets", cookie: id}); resp.StatusCode != http.StatusSeeOther {
			t.Errorf("%s: the session came back: %d", tc.name, resp.StatusCode)
		}
	}
	// Disabled and enabled again with no request between: the session
	// still ended.
	id, _ := f.signIn(t, "alice", "alice-password")
	f.clock.advance(time.Second)
	for _, disabled := range []bool{true, false} {
		if err := f.iam.SetUserDisabled(ctx, "alice", disabled); err != nil {
			t.Fatal(err)
		}
	}
	if resp := f.do(t, request{method: "GET", path: "/buckets", cookie: id}); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("a session from before a disable and an enable, unused meanwhile: %d, want 303 to /login", resp.StatusCode)
	}
	if id2, _ := f.signIn(t, "alice", "alice-password"); id2 == "" {
		t.Error("no session for a sign-in after the enable")
	}
	if err := f.iam.SetUserDisabled(ctx, "alice", true); err != nil {
		t.Fatal(err)
	}
	resp := f.do(t, request{method: "POST", path: "/login", form: url.Values{"username": {"alice"}, "password": {"alice-password"}}})
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("sign-in of a disabled user: %d, want 401", resp.StatusCode)
	}
	// Idle expiry through the handler.
	id, _ = f.signIn(t, testRootKey, testRootSecret)
	f.clock.advance(time.Hour)
	if resp := f.do(t, request{method: "GET", path: "/buckets", cookie: id}); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("after the idle time: %d, want 303 to /login", resp.StatusCode)
	}
}

// TestSecureCookieBehindTLSProxy: with an https public origin (a TLS proxy
// in front, the console itself on plain HTTP) the session cookie is Secure
// and __Host-, so a browser never sends it over plain HTTP to the host.
func TestSecureCookieBehindTLSProxy(t *testing.T) {
	t.Parallel()
	const origin = "https://console.example"
	f := newFixture(t, Config{Origin: origin}, 1)
	f.user(t, "alice", "alice-password")
	resp := f.do(t, request{method: "POST", path: "/login", origin: origin, form: url.Values{"username": {"alice"}, "password": {"alice-password"}}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in: %d", resp.StatusCode)
	}
	got := map[string]*http.Cookie{}
	for _, k := range resp.Cookies() {
		got[k.Name] = k
	}
	for _, name := range []string{secureCookie, secureDeviceCookie} {
		if c := got[name]; c == nil || !c.Secure || !c.HttpOnly || c.Path != "/" {
			t.Errorf("cookie %s = %+v; want it set, Secure, HttpOnly, at /", name, c)
		}
	}
	if len(got) != 2 {
		t.Errorf("cookies set: %v; want only %s and %s", got, secureCookie, secureDeviceCookie)
	}
}

// TestFailedSignInNotLogged: a failed sign-in's name is logged only if it
// names a user (a password typed into the name field must not reach the
// log), as the audit log records it.
func TestFailedSignInNotLogged(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, 1)
	var buf bytes.Buffer
	f.h.log = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	f.user(t, "alice", "alice-password")
	for _, name := range []string{"alice", "hunter2-secret"} {
		resp := f.do(t, request{method: "POST", path: "/login", form: url.Values{"username": {name}, "password": {"wrong"}}})
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("sign-in as %s with a wrong password: %d", name, resp.StatusCode)
		}
	}
	if log := buf.String(); strings.Contains(log, "hunter2-secret") || !strings.Contains(log, "user=alice") {
		t.Errorf("log of failed sign-ins:\n%s", log)
	}
}

// canonicalID returns the canonical ID of user name, as IAM reports it.
func (f *fixture) canonicalID(t testing.TB, name string) string {
	t.Helper()
	u, err := f.iam.User(context.Background(), name)
	if err != nil {
		t.Fatalf("User(%s): %v", name, err)
	}
	return u.CanonicalID
}

// TestPathNamesChecked: a wildcard of a console path takes only what a
// bucket, IAM or access key name can be. A bucket "name" with an encoded
// slash and dot segments once aimed the bucket-delete confirmation form
// at another endpoint (here: deleting user bob) with the viewer's own
// CSRF token.
func TestPathNamesChecked(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, 1)
	f.user(t, "bob", "bob-password")
	id, csrf := f.signIn(t, testRootKey, testRootSecret)
	for _, p := range []string{
		"/buckets/photos%2F..%2F..%2Fusers%2Fbob/delete",
		"/buckets/x%2F..%2F..%2Fkeys%2FAKIA%2Fenable%3F/delete",
		"/buckets/a%3Fb/delete",
		"/users/bob%2F..%2Falice",
		"/objects/" + strings.Repeat("b", 256),
		"/groups/..%2F..",
	} {
		resp := f.do(t, request{method: "GET", path: p, cookie: id})
		if b := body(t, resp); resp.StatusCode != http.StatusNotFound || strings.Contains(b, `action="/buckets/photos/`) {
			t.Errorf("GET %s: %d, want 404\n%s", p, resp.StatusCode, b)
		}
		resp = f.do(t, request{method: "POST", path: p, cookie: id, form: url.Values{"csrf": {csrf}}})
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("POST %s: %d, want 404", p, resp.StatusCode)
		}
	}
	if _, err := f.iam.User(t.Context(), "bob"); err != nil {
		t.Errorf("bob: %v", err)
	}
	// Names of every kind still reach their pages.
	for _, p := range []string{"/users/bob", "/users/bob/delete", "/buckets/photos.2026-a/delete"} {
		if resp := f.do(t, request{method: "GET", path: p, cookie: id}); resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %d, want 200", p, resp.StatusCode)
		}
	}
}

// TestConflictingSessionCookies: a second session cookie (set for a
// longer path by a page of another port of this host, which the browser
// sends first) switches nobody to another session: the request has none,
// both sessions end and the response clears the cookies for every path
// the browser could have sent one for.
func TestConflictingSessionCookies(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, 1)
	f.user(t, "alice", "alice-password", "readwrite")
	f.user(t, "bob", "bob-password", "readwrite")
	alice, _ := f.signIn(t, "alice", "alice-password")
	bob, _ := f.signIn(t, "bob", "bob-password")
	resp := f.do(t, request{method: "GET", path: "/objects/b/object", header: map[string]string{
		"Cookie": sessionCookie + "=" + alice + "; " + sessionCookie + "=" + bob}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login" {
		t.Fatalf("GET with two session cookies: %d to %q, want 303 to /login", resp.StatusCode, resp.Header.Get("Location"))
	}
	cleared, held := map[string]bool{}, false
	for _, c := range resp.Cookies() {
		switch {
		case c.Name == sessionCookie && c.MaxAge < 0:
			cleared[c.Path] = true
		case c.Name == sessionCookie && c.Path == "/" && c.Value == heldCookie && c.HttpOnly && c.MaxAge > 0:
			held = true
		}
	}
	for _, p := range []string{"/objects", "/objects/", "/objects/b", "/objects/b/", "/objects/b/object"} {
		if !cleared[p] {
			t.Errorf("cookie for path %s not cleared; cleared %v", p, cleared)
		}
	}
	// At "/" the cookie is held, HttpOnly, not deleted: a deleted one
	// would let a script set its author's session there next.
	if !held || cleared["/"] {
		t.Errorf("cookie at / not held (HttpOnly, no session): %v", resp.Cookies())
	}
	for name, id := range map[string]string{"alice": alice, "bob": bob} {
		if resp := f.do(t, request{method: "GET", path: "/buckets", cookie: id}); resp.StatusCode != http.StatusSeeOther {
			t.Errorf("%s's session after the conflict: %d, want 303 to /login", name, resp.StatusCode)
		}
	}
	// The next planted cookie meets the held one, and ends its author's
	// session rather than switching anyone to it.
	mallory, _ := f.signIn(t, "alice", "alice-password")
	resp = f.do(t, request{method: "GET", path: "/buckets", header: map[string]string{
		"Cookie": sessionCookie + "=" + mallory + "; " + sessionCookie + "=" + heldCookie}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Errorf("GET with a planted cookie beside the held one: %d, want 303 to /login", resp.StatusCode)
	}
	if resp := f.do(t, request{method: "GET", path: "/buckets", cookie: mallory}); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("the planted session after meeting the held cookie: %d, want ended", resp.StatusCode)
	}
	// The sign-in page and signing out hold the cookie too.
	for _, rq := range []request{{method: "GET", path: "/login"}} {
		resp := f.do(t, rq)
		ok := false
		for _, c := range resp.Cookies() {
			ok = ok || c.Name == sessionCookie && c.Value == heldCookie && c.HttpOnly && c.MaxAge > 0
		}
		if !ok {
			t.Errorf("%s %s: cookie not held: %v", rq.method, rq.path, resp.Cookies())
		}
	}
	// One cookie is a session as before.
	id, _ := f.signIn(t, "bob", "bob-password")
	if resp := f.do(t, request{method: "GET", path: "/buckets", cookie: id}); resp.StatusCode != http.StatusOK || len(resp.Cookies()) != 0 {
		t.Errorf("GET /buckets with one session cookie: %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
}
