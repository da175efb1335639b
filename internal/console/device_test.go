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
	if status != http.StatusSeeOther || renewed == "" || renewed == device {
		t.Fatalf("sign-in with the device cookie while the name is locked: %d, cookie %q; want 303 and a new device cookie", status, renewed)
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
	if status, _ := signInFrom(t, f.h, f, "192.0.2.10", "alice", "alice-password", deviceCookie+"="+renewed); status != http.StatusSeeOther {
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
	oh, err := New(Config{}, Deps{IAM: other, Buckets: f.objects, Clock: f.clock.now, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
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
	if id, ok := f.h.checkDevice(aliceDev, testRootKey); ok {
		t.Errorf("alice's device cookie checked for root: device %q", id)
	}

	// A restarted console (a new Handler, the same IAM) honours it.
	restarted, err := New(Config{}, Deps{IAM: f.iam, Buckets: f.objects, Clock: f.clock.now, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range DefaultLoginFailures {
		signInFrom(t, restarted, f, fmt.Sprintf("198.51.100.%d", i), "alice", "guess", "")
	}
	if status, _ := signInFrom(t, restarted, f, "192.0.2.10", "alice", "alice-password", deviceCookie+"="+aliceDev); status != http.StatusSeeOther {
		t.Errorf("after a restart, sign-in with the device cookie while the name is locked = %d, want 303", status)
	}

	// Too old: not honoured.
	f.clock.advance(deviceLifetime + time.Hour)
	if _, ok := f.h.checkDevice(aliceDev, "alice"); ok {
		t.Errorf("a device cookie %v old was honoured", deviceLifetime+time.Hour)
	}
}

// makeDevice returns a device cookie h's store made for name.
func makeDevice(t *testing.T, h *Handler, name string) string {
	t.Helper()
	w := httptest.NewRecorder()
	h.setDevice(w, httptest.NewRequest("POST", testOrigin+"/login", nil), name)
	for _, c := range w.Result().Cookies() {
		return c.Value
	}
	t.Fatal("setDevice set no cookie")
	return ""
}
