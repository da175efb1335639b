package console

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/s3err"
)

// signInFrom posts a sign-in from addr with the given Cookie header ("" for
// none) and returns the status and the device cookie set, if any.
func signInFrom(t *testing.T, h *Handler, f *fixture, addr, name, password, cookie string) (int, string) {
	t.Helper()
	rq := request{method: "POST", path: "/login", addr: addr, form: url.Values{"username": {name}, "password": {password}}}
	if cookie != "" {
		rq.header = map[string]string{"Cookie": cookie}
	}
	saved := f.h
	f.h = h
	defer func() { f.h = saved }()
	resp := f.do(t, rq)
	resp.Body.Close()
	for _, c := range resp.Cookies() {
		if c.Name == deviceCookie && c.MaxAge > 0 {
			return resp.StatusCode, c.Value
		}
	}
	return resp.StatusCode, ""
}

// TestDeviceCookieKeepsUserIn: strangers' failures under a name lock out
// strangers — the right password from a new browser gets 429 — but not a
// browser that signed in as the name before and shows its device cookie;
// that browser's own failures lock it out too, and then it is a stranger.
func TestDeviceCookieKeepsUserIn(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, 1)
	f.user(t, "alice", "alice-password")
	status, device := signInFrom(t, f.h, f, "192.0.2.10", "alice", "alice-password", "")
	if status != http.StatusSeeOther || device == "" {
		t.Fatalf("first sign-in: %d, device cookie %q; want 303 and a device cookie", status, device)
	}
	dev := deviceCookie + "=" + device
	_, second := signInFrom(t, f.h, f, "192.0.2.11", "alice", "alice-password", "") // another browser

	// Strangers from many addresses lock the name.
	for i := range DefaultLoginFailures {
		if status, _ := signInFrom(t, f.h, f, fmt.Sprintf("198.51.100.%d", i), "alice", "guess", ""); status != http.StatusUnauthorized {
			t.Fatalf("stranger's failure %d: %d, want 401", i, status)
		}
	}
	if status, _ := signInFrom(t, f.h, f, "203.0.113.1", "alice", "alice-password", ""); status != http.StatusTooManyRequests {
		t.Fatalf("right password from a new browser while the name is locked: %d, want 429", status)
	}
	// Alice's browser, even from an address of the strangers'.
	status, renewed := signInFrom(t, f.h, f, "198.51.100.1", "alice", "alice-password", dev)
	if status != http.StatusSeeOther || renewed == "" || deviceOf(f.h, renewed, "alice") != deviceOf(f.h, device, "alice") {
		t.Fatalf("sign-in with the device cookie while the name is locked: %d, cookie %q; want 303 and the cookie renewed for the same device", status, renewed)
	}
	// Its own failures lock it out: then it counts as a stranger, whose
	// name is locked.
	for i := range DefaultLoginFailures {
		if status, _ := signInFrom(t, f.h, f, "192.0.2.10", "alice", "wrong", dev); status != http.StatusUnauthorized {
			t.Fatalf("the device's failure %d: %d, want 401", i, status)
		}
	}
	if status, _ := signInFrom(t, f.h, f, "192.0.2.10", "alice", "alice-password", dev); status != http.StatusTooManyRequests {
		t.Fatalf("right password from a locked device while the name is locked: %d, want 429", status)
	}
	// Another device of alice's is not locked with it.
	if status, _ := signInFrom(t, f.h, f, "192.0.2.10", "alice", "alice-password", deviceCookie+"="+second); status != http.StatusSeeOther {
		t.Fatalf("sign-in from another device of alice's: %d, want 303", status)
	}
	// Once the window has passed, strangers may try again.
	f.clock.advance(DefaultLoginWindow + time.Second)
	if status, _ := signInFrom(t, f.h, f, "203.0.113.1", "alice", "alice-password", ""); status != http.StatusSeeOther {
		t.Fatalf("right password from a new browser after the window: %d, want 303", status)
	}
}

// TestDeviceCookieChecked: only a device cookie this store made, for the
// name signed in as and not too old, exempts a browser from the name's
// lock; one made by another store (another master key) or tampered with
// does not, and neither does a second Handler's refusal of a good one
// (a restart keeps them valid).
func TestDeviceCookieChecked(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, 1)
	f.user(t, "alice", "alice-password")
	f.user(t, "bob", "bob-password")
	_, aliceDev := signInFrom(t, f.h, f, "192.0.2.10", "alice", "alice-password", "")
	_, bobDev := signInFrom(t, f.h, f, "192.0.2.11", "bob", "bob-password", "")
	if aliceDev == "" || bobDev == "" {
		t.Fatal("no device cookies")
	}
	for i := range DefaultLoginFailures {
		signInFrom(t, f.h, f, fmt.Sprintf("198.51.100.%d", i), "alice", "guess", "")
	}

	// Another store's cookie for alice: same format, another key.
	other, err := iam.New(iam.Config{RootAccessKey: testRootKey, RootSecretKey: testRootSecret, Clock: f.clock.now})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.CreateUser(t.Context(), "alice"); err != nil {
		t.Fatal(err)
	}
	if err := other.SetPassword(t.Context(), "alice", "alice-password"); err != nil {
		t.Fatal(err)
	}
	oh := otherHandler(t, other, f.objects, f.clock.now)
	payload, tag, _ := strings.Cut(aliceDev, ".")
	forged := []byte(payload)
	forged[len(forged)-1] ^= 1 // another nonce or name byte
	for name, cookie := range map[string]string{
		"bob's cookie":     bobDev,
		"another store's":  makeDevice(t, oh, "alice"),
		"tampered payload": string(forged) + "." + tag,
		"tag cut":          payload + "." + tag[:len(tag)-2],
		"no tag":           payload,
		"garbage":          "%%%.%%%",
	} {
		if status, _ := signInFrom(t, f.h, f, "192.0.2.10", "alice", "alice-password", deviceCookie+"="+cookie); status != http.StatusTooManyRequests {
			t.Errorf("%s: sign-in while the name is locked = %d, want 429", name, status)
		}
	}
	if id := deviceOf(f.h, aliceDev, testRootKey); id != "" {
		t.Errorf("alice's device cookie checked for root: device %q", id)
	}

	// A restarted console (a new Handler, the same IAM) honours it.
	restarted := otherHandler(t, f.iam, f.objects, f.clock.now)
	for i := range DefaultLoginFailures {
		signInFrom(t, restarted, f, fmt.Sprintf("198.51.100.%d", i), "alice", "guess", "")
	}
	if status, _ := signInFrom(t, restarted, f, "192.0.2.10", "alice", "alice-password", deviceCookie+"="+aliceDev); status != http.StatusSeeOther {
		t.Errorf("after a restart, sign-in with the device cookie while the name is locked = %d, want 303", status)
	}

	// Ages: honoured until deviceLifetime, and up to an hour ahead of
	// the clock (another node's), not further.
	if id := deviceOf(f.h, aliceDev, "alice"); id == "" {
		t.Fatal("a fresh device cookie was not honoured")
	}
	f.clock.advance(deviceLifetime - time.Second)
	if id := deviceOf(f.h, aliceDev, "alice"); id == "" {
		t.Errorf("a device cookie %v old was not honoured", deviceLifetime-time.Second)
	}
	f.clock.advance(2 * time.Second)
	if id := deviceOf(f.h, aliceDev, "alice"); id != "" {
		t.Errorf("a device cookie %v old was honoured", deviceLifetime+time.Second)
	}
	ahead := func(d time.Duration) string {
		c := newFakeClock()
		c.ns.Store(f.clock.now().Add(d).UnixNano())
		h := otherHandler(t, f.iam, f.objects, c.now)
		return makeDevice(t, h, "alice")
	}
	if id := deviceOf(f.h, ahead(59*time.Minute), "alice"); id == "" {
		t.Error("a device cookie issued 59 minutes ahead of the clock was not honoured")
	}
	if id := deviceOf(f.h, ahead(61*time.Minute), "alice"); id != "" {
		t.Error("a device cookie issued 61 minutes ahead of the clock was honoured")
	}
}

// TestDeviceCookieEndsWithCredential: a device cookie is honoured only
// while its name's credential is the one it was issued under: not after
// a new password, a disable (ended sessions), a user deleted and created
// again, or a new root secret key; so whoever knew an old password keeps
// no device spared the name's lock.
func TestDeviceCookieEndsWithCredential(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, f *fixture)
	}{
		{"new password", func(t *testing.T, f *fixture) {
			if err := f.iam.SetPassword(ctx, "alice", "alice-password"); err != nil {
				t.Fatal(err)
			}
		}},
		{"disabled and enabled", func(t *testing.T, f *fixture) {
			f.clock.advance(time.Second)
			if err := f.iam.SetUserDisabled(ctx, "alice", true); err != nil {
				t.Fatal(err)
			}
			if err := f.iam.SetUserDisabled(ctx, "alice", false); err != nil {
				t.Fatal(err)
			}
		}},
		{"deleted and created again", func(t *testing.T, f *fixture) {
			if err := f.iam.DeleteUser(ctx, "alice"); err != nil {
				t.Fatal(err)
			}
			f.user(t, "alice", "alice-password")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, Config{}, 1)
			f.user(t, "alice", "alice-password")
			_, dev := signInFrom(t, f.h, f, "192.0.2.10", "alice", "alice-password", "")
			if deviceOf(f.h, dev, "alice") == "" {
				t.Fatal("the device cookie is not honoured to begin with")
			}
			tc.change(t, f)
			if id := deviceOf(f.h, dev, "alice"); id != "" {
				t.Errorf("the device cookie is still honoured (device %s)", id)
			}
		})
	}

	// Root: a new secret key (a restart with another one, the same master
	// key) ends root's device cookies; the same secret keeps them.
	master := make([]byte, iam.MasterKeySize)
	handler := func(secret string) *Handler {
		m, err := iam.New(iam.Config{RootAccessKey: testRootKey, RootSecretKey: secret, MasterKey: master})
		if err != nil {
			t.Fatal(err)
		}
		return otherHandler(t, m, newFixture(t, Config{}, 1).objects, nil)
	}
	dev := makeDevice(t, handler(testRootSecret), testRootKey)
	if deviceOf(handler(testRootSecret), dev, testRootKey) == "" {
		t.Error("root's device cookie is not honoured after a restart with the same secret key")
	}
	if id := deviceOf(handler(testRootSecret+"-new"), dev, testRootKey); id != "" {
		t.Errorf("root's device cookie is honoured after a new secret key (device %s)", id)
	}
}

// TestDeviceCookieAmongStrays: cookies of the device cookie's name that
// others set at longer paths (sent first) cannot hide the browser's own,
// however many; and a renewed cookie keeps the device's ID, so that
// signing in again does not mint devices.
func TestDeviceCookieAmongStrays(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, 1)
	f.user(t, "alice", "alice-password")
	_, dev := signInFrom(t, f.h, f, "192.0.2.10", "alice", "alice-password", "")
	id := deviceOf(f.h, dev, "alice")
	var strays []string
	for i := range 40 {
		strays = append(strays, fmt.Sprintf("%s=junk%d", deviceCookie, i))
	}
	// Strays for alice with bad tags (anyone can make the payload) cost a
	// tag check each; they come first, as cookies at longer paths do.
	payload, _, _ := strings.Cut(dev, ".")
	for range 100 {
		strays = append(strays, deviceCookie+"="+payload+".AAAA")
	}
	for i := range DefaultLoginFailures {
		signInFrom(t, f.h, f, fmt.Sprintf("198.51.100.%d", i), "alice", "guess", "")
	}
	cookie := strings.Join(append(strays, deviceCookie+"="+dev), "; ")
	status, renewed := signInFrom(t, f.h, f, "192.0.2.10", "alice", "alice-password", cookie)
	if status != http.StatusSeeOther {
		t.Fatalf("sign-in with the device cookie behind %d strays: %d, want 303", len(strays), status)
	}
	if got := deviceOf(f.h, renewed, "alice"); got != id {
		t.Errorf("renewed device cookie's device = %s, want the same device %s", got, id)
	}
}

// TestSecureDeviceCookie: over TLS (an https origin) the device cookie is
// read back under its __Host- name, and the plain name is not honoured.
func TestSecureDeviceCookie(t *testing.T) {
	t.Parallel()
	const origin = "https://console.example"
	f := newFixture(t, Config{Origin: origin}, 1)
	f.user(t, "alice", "alice-password")
	login := func(password, cookie string) *http.Response {
		rq := request{method: "POST", path: "/login", origin: origin, form: url.Values{"username": {"alice"}, "password": {password}}}
		if cookie != "" {
			rq.header = map[string]string{"Cookie": cookie}
		}
		return f.do(t, rq)
	}
	var dev string
	for _, c := range login("alice-password", "").Cookies() {
		if c.Name == secureDeviceCookie {
			dev = c.Value
		}
	}
	if dev == "" {
		t.Fatal("no __Host- device cookie")
	}
	for i := range DefaultLoginFailures {
		if resp := login("guess", ""); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d, want 401", i, resp.StatusCode)
		}
	}
	if resp := login("alice-password", deviceCookie+"="+dev); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("over TLS with the plain-named cookie: %d, want 429", resp.StatusCode)
	}
	if resp := login("alice-password", secureDeviceCookie+"="+dev); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("over TLS with the __Host- cookie: %d, want 303", resp.StatusCode)
	}
}

// deviceOf returns the device h finds in a request showing value as its
// device cookie for name ("" for none).
func deviceOf(h *Handler, value, name string) string {
	r := httptest.NewRequest("POST", testOrigin+"/login", nil)
	r.AddCookie(&http.Cookie{Name: deviceCookie, Value: value})
	return h.device(r, name)
}

// makeDevice returns a device cookie h's store made for name.
func makeDevice(t *testing.T, h *Handler, name string) string {
	t.Helper()
	w := httptest.NewRecorder()
	h.setDevice(w, httptest.NewRequest("POST", testOrigin+"/login", nil), name, "")
	for _, c := range w.Result().Cookies() {
		return c.Value
	}
	t.Fatal("setDevice set no cookie")
	return ""
}

// TestConsoleConditionsUnsignedPayload: nothing signs a console
// request's body, so policies see s3:x-amz-content-sha256 as
// UNSIGNED-PAYLOAD, for the console's own requests and for share links
// (presigned GETs).
func TestConsoleConditionsUnsignedPayload(t *testing.T) {
	t.Parallel()
	if got := conditions(httptest.NewRequest("POST", testOrigin+"/upload", nil)).ContentSHA256; got != "UNSIGNED-PAYLOAD" {
		t.Errorf("console request: s3:x-amz-content-sha256 = %q, want UNSIGNED-PAYLOAD", got)
	}
	f := newFixture(t, Config{}, 1)
	f.user(t, "alice", "alice-password")
	const pol = `{"Version":"2012-10-17","Statement":[
  {"Effect":"Allow","Action":"s3:*","Resource":"*"},
  {"Effect":"Deny","Action":"s3:*","Resource":"*","Condition":{"StringEquals":{"s3:x-amz-content-sha256":"UNSIGNED-PAYLOAD"}}}]}`
	if err := f.iam.PutPolicy(t.Context(), "signed-only", []byte(pol)); err != nil {
		t.Fatal(err)
	}
	if err := f.iam.AttachPolicy(t.Context(), "signed-only", iam.Target{User: "alice"}); err != nil {
		t.Fatal(err)
	}
	p, _ := f.iam.SignInName("alice")
	p.Session = true // as a console session's
	s := &session{principal: p}
	err := f.h.authorizeKey(httptest.NewRequest("POST", testOrigin+"/share", nil), s, objectRequest{action: iam.GetObject, bucket: "b", key: "k"}, false)
	if !s3err.Is(err, s3err.AccessDenied) {
		t.Errorf("a share link of a user whose policy denies unsigned payloads: %v, want AccessDenied", err)
	}
}

// otherHandler is a second console over iam and buckets (another node, a
// restart, another store), with clock (nil for time.Now).
func otherHandler(t *testing.T, iam IAM, buckets Buckets, clock func() time.Time) *Handler {
	t.Helper()
	h, err := New(Config{}, Deps{IAM: iam, Buckets: buckets, Clock: clock, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return h
}
