package console

import (
	"crypto/subtle"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// contentSecurityPolicy allows the console's pages only what they use:
// their own scripts, styles and images, and forms posted to themselves.
// No inline script or style runs, no plugin loads, and no other site may
// frame the console.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// setSecurityHeaders sets the headers every console response carries.
func setSecurityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
}

// origin returns the console's own origin as the request reached it:
// cfgOrigin when set (the console sits behind a proxy whose public
// origin differs), else the scheme of the connection with the Host
// header.
func origin(r *http.Request, cfgOrigin string) string {
	if cfgOrigin != "" {
		return cfgOrigin
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + strings.ToLower(r.Host)
}

// knownHost reports whether the console answers a request for host (the
// Host header). Without cfgOrigin the console takes its origin from the
// Host header, so a page of another site whose name its owner points at
// this machine's address (DNS rebinding) would reach the console under
// that name as the console's own origin, and pass the Origin check of the
// sign-in form: names are refused then, and only IP addresses (no other
// site can be served from one) and localhost, any port, are answered.
// With cfgOrigin, the Origin check compares with it, whatever the Host
// (a proxy may pass on any name).
func knownHost(host, cfgOrigin string) bool {
	if cfgOrigin != "" {
		return true
	}
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	name = strings.TrimSuffix(strings.TrimPrefix(name, "["), "]")
	if _, err := netip.ParseAddr(name); err == nil {
		return true
	}
	// localhost and its subdomains always name the loopback (RFC 6761),
	// whoever asks a resolver: no other site can be behind them.
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	return name == "localhost" || strings.HasSuffix(name, ".localhost")
}

// sameOrigin reports whether a state-changing request comes from the
// console's own pages: its Origin header names the console's origin, or,
// from a browser that sends none, its Referer does. A request with
// neither is refused: every browser that can carry the session cookie
// sends one of them on a POST, and the pages ask for same-origin
// referrers. A browser's Sec-Fetch-Site, when sent, must not be
// cross-site either.
func sameOrigin(r *http.Request, cfgOrigin string) bool {
	want := origin(r, cfgOrigin)
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return false
	}
	if o := r.Header.Get("Origin"); o != "" {
		return strings.EqualFold(o, want)
	}
	ref := r.Header.Get("Referer")
	if ref == "" {
		return false
	}
	u, err := url.Parse(ref)
	if err != nil || u.Host == "" {
		return false
	}
	return strings.EqualFold(u.Scheme+"://"+u.Host, want)
}

// csrfField is the hidden form field (and csrfHeader the header, for
// scripts) that carries the session's CSRF token.
const (
	csrfField  = "csrf"
	csrfHeader = "X-CSRF-Token"
)

// validCSRF reports whether the request carries the session's token, in
// constant time. The form must be parsed, unless headerOnly: then only
// the header counts (the body is an upload, not a form).
func validCSRF(r *http.Request, s *session, headerOnly bool) bool {
	var got string
	if !headerOnly {
		got = r.PostFormValue(csrfField)
	}
	if got == "" {
		got = r.Header.Get(csrfHeader)
	}
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(s.csrf)) == 1
}

// stateChanging reports whether a request's method may change state, and
// so needs the origin and CSRF checks.
func stateChanging(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}
