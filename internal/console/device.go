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
// proves nothing but an earlier sign-in with the credential the name has
// now: the password is checked as ever, a device's own failures lock it
// like a name, and the cookie ends with the credential (a new password,
// ended sessions, a user deleted and created again, root's new secret
// key: IAM.CredentialStamp), so nobody who knew a password before it was
// changed keeps devices that are spared the name's lock.
//
// The value is base64url(payload) "." base64url(tag), where payload is a
// version byte (1), the time of issue (Unix seconds, 8 bytes big-endian),
// 16 random bytes (the device's ID in the limiter) and the name, and tag
// is IAM.MAC(deviceMACPurpose, payload ‖ the name's credential stamp).
// A browser keeps one: each sign-in replaces it with one for the name
// just signed in as, keeping the device's ID if it signed in as a known
// device.
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
	// maxDeviceTags bounds the device cookies of one request whose tag
	// is checked (an HMAC each, about a microsecond): those for the name
	// signed in as, from the last, where browsers put the Path=/ cookie
	// the console set (longer paths first). A page on another port of
	// this host, or a sibling host, can set any number at other paths,
	// with payloads anyone can make, but no more than the request's
	// headers hold (64 KiB): a bound above that many hides nothing.
	maxDeviceTags = 1024
)

// deviceCookieName is the device cookie's name, with the __Host- prefix
// over TLS like the session cookie's.
func (h *Handler) deviceCookieName(r *http.Request) string {
	if h.secure(r) {
		return secureDeviceCookie
	}
	return deviceCookie
}

// setDevice gives the browser of r a device cookie for name, with the
// device ID id (hex, as device returns it), or a new one if id is "".
func (h *Handler) setDevice(w http.ResponseWriter, r *http.Request, name, id string) {
	stamp, ok := h.iam.CredentialStamp(name)
	if !ok {
		return
	}
	payload := make([]byte, devicePayloadMin, devicePayloadMin+len(name))
	payload[0] = deviceVersion
	binary.BigEndian.PutUint64(payload[1:9], uint64(h.clock().Unix()))
	if b, err := hex.DecodeString(id); err == nil && len(b) == deviceIDBytes {
		copy(payload[9:devicePayloadMin], b)
	} else {
		_, _ = rand.Read(payload[9:devicePayloadMin]) // never fails
	}
	payload = append(payload, name...)
	value := base64.RawURLEncoding.EncodeToString(payload) + "." +
		base64.RawURLEncoding.EncodeToString(h.deviceTag(payload, stamp))
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

// deviceTag is the tag of a device cookie's payload, made with the
// credential stamp of its name.
func (h *Handler) deviceTag(payload, stamp []byte) []byte {
	msg := make([]byte, 0, len(payload)+len(stamp))
	return h.iam.MAC(deviceMACPurpose, append(append(msg, payload...), stamp...))
}

// device returns the ID of a valid device cookie of r's for name, or ""
// if it shows none.
func (h *Handler) device(r *http.Request, name string) string {
	cs := r.CookiesNamed(h.deviceCookieName(r))
	var stamp []byte // the name's credential stamp, once a cookie names it
	tags := 0
	for i := len(cs) - 1; i >= 0; i-- {
		payload, tag, ok := h.parseDevice(cs[i].Value, name)
		if !ok {
			continue
		}
		if tags++; tags > maxDeviceTags {
			break
		}
		if stamp == nil {
			if stamp, ok = h.iam.CredentialStamp(name); !ok {
				return ""
			}
		}
		if hmac.Equal(tag, h.deviceTag(payload, stamp)) {
			return hex.EncodeToString(payload[9:devicePayloadMin])
		}
	}
	return ""
}

// parseDevice returns the payload and tag of value if it is a device
// cookie for name, not older than deviceLifetime, its tag unchecked.
func (h *Handler) parseDevice(value, name string) (payload, tag []byte, ok bool) {
	p, t, ok := strings.Cut(value, ".")
	if !ok || len(p) > base64.RawURLEncoding.EncodedLen(devicePayloadMin+maxNameKey) {
		return nil, nil, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil || len(payload) < devicePayloadMin || payload[0] != deviceVersion ||
		string(payload[devicePayloadMin:]) != name {
		return nil, nil, false
	}
	issued := time.Unix(int64(binary.BigEndian.Uint64(payload[1:9])), 0)
	if age := h.clock().Sub(issued); age > deviceLifetime || age < -time.Hour {
		return nil, nil, false
	}
	tag, err = base64.RawURLEncoding.DecodeString(t)
	if err != nil {
		return nil, nil, false
	}
	return payload, tag, true
}
