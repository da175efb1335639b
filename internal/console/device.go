package console

import (
	"crypto/hmac"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"net/http"
	"strings"
	"time"
)

// Device cookies: a browser that signs in as a name gets a cookie that
// says so, signed by the store (IAM.MAC under the master key, so it holds
// across restarts and on every node of a shared store). Its sign-ins
// under that name are then counted per device, not per name and address
// (limiter), and so strangers' failures cannot lock it out. The cookie
// proves nothing but an earlier sign-in: the password is checked as ever,
// and a device's own failures lock it like a name.
//
// The value is base64url(payload) "." base64url(tag), where payload is a
// version byte (1), the time of issue (Unix seconds, 8 bytes big-endian),
// 16 random bytes (the device's ID in the limiter) and the name, and tag
// is IAM.MAC(deviceMACPurpose, payload). A browser keeps one: each
// sign-in replaces it with one for the name just signed in as.
const (
	deviceCookie       = "coffer_device"
	secureDeviceCookie = "__Host-coffer_device"
	deviceMACPurpose   = "console device cookie"
	deviceVersion      = 1
	deviceIDBytes      = 16
	devicePayloadMin   = 1 + 8 + deviceIDBytes
	// deviceLifetime is how long a device cookie is honoured after its
	// sign-in, and how long browsers keep it (the most they keep any
	// cookie). Every sign-in renews it.
	deviceLifetime = 400 * 24 * time.Hour
	// maxDeviceCookies bounds the device cookies of one request looked
	// at: only a page on another port of this host could set more than
	// one, at other paths.
	maxDeviceCookies = 4
)

// deviceCookieName is the device cookie's name, with the __Host- prefix
// over TLS like the session cookie's.
func (h *Handler) deviceCookieName(r *http.Request) string {
	if h.secure(r) {
		return secureDeviceCookie
	}
	return deviceCookie
}

// setDevice gives the browser of r a device cookie for name.
func (h *Handler) setDevice(w http.ResponseWriter, r *http.Request, name string) {
	payload := make([]byte, devicePayloadMin, devicePayloadMin+len(name))
	payload[0] = deviceVersion
	binary.BigEndian.PutUint64(payload[1:9], uint64(h.clock().Unix()))
	_, _ = rand.Read(payload[9:devicePayloadMin]) // never fails
	payload = append(payload, name...)
	value := base64.RawURLEncoding.EncodeToString(payload) + "." +
		base64.RawURLEncoding.EncodeToString(h.iam.MAC(deviceMACPurpose, payload))
	http.SetCookie(w, &http.Cookie{
		Name:     h.deviceCookieName(r),
		Value:    value,
		Path:     "/",
		MaxAge:   int(deviceLifetime / time.Second),
		HttpOnly: true,
		Secure:   h.secure(r),
		SameSite: http.SameSiteStrictMode,
	})
}

// device returns the ID of a valid device cookie of r's for name, or ""
// if it shows none.
func (h *Handler) device(r *http.Request, name string) string {
	for i, c := range r.CookiesNamed(h.deviceCookieName(r)) {
		if i == maxDeviceCookies {
			break
		}
		if id, ok := h.checkDevice(c.Value, name); ok {
			return id
		}
	}
	return ""
}

// checkDevice returns the device ID of value if it is a device cookie
// this store made for name, not older than deviceLifetime.
func (h *Handler) checkDevice(value, name string) (string, bool) {
	p, t, ok := strings.Cut(value, ".")
	if !ok || len(p) > base64.RawURLEncoding.EncodedLen(devicePayloadMin+maxNameKey) {
		return "", false
	}
	payload, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil || len(payload) < devicePayloadMin || payload[0] != deviceVersion {
		return "", false
	}
	tag, err := base64.RawURLEncoding.DecodeString(t)
	if err != nil || !hmac.Equal(tag, h.iam.MAC(deviceMACPurpose, payload)) {
		return "", false
	}
	if string(payload[devicePayloadMin:]) != name {
		return "", false
	}
	issued := time.Unix(int64(binary.BigEndian.Uint64(payload[1:9])), 0)
	if age := h.clock().Sub(issued); age > deviceLifetime || age < -time.Hour {
		return "", false
	}
	return hex.EncodeToString(payload[9:devicePayloadMin]), true
}
