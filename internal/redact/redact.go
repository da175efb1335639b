// Package redact renders values that may hold a secret for error messages
// and logs, which reach terminals, journals and bug reports.
package redact

import (
	"net/url"
	"strings"
)

// hidden stands for user information in URL's result.
const hidden = "***"

// URL returns u as a string for a message, with its whole user
// information, user name and password alike, replaced by "***": in
// https://ghp_token@host/ or https://AKID:secret@host/ the user name is a
// secret too, and url.URL.Redacted, which masks only the password, shows
// it. What looks like user information where url.Parse sees none is
// masked as well, since the messages that quote a URL are mostly about
// one that is malformed: the "user:secret@" of https:user:secret@host
// (no "//", so an opaque URL) or of user:secret@host (no scheme, so a
// path). A URL without any of these is returned as u.String() does.
func URL(u *url.URL) string {
	if u == nil {
		return ""
	}
	v := *u
	v.Opaque = maskUserinfo(v.Opaque)
	switch {
	case v.User != nil:
		// A user name that needs no escaping marks where the user
		// information goes: the first "//" is that of the authority,
		// since a scheme holds no slash.
		v.User = url.User("_")
		return strings.Replace(v.String(), "//_@", "//"+hidden+"@", 1)
	case v.Scheme == "" && v.Host == "" && v.Opaque == "":
		return maskUserinfo(v.String())
	}
	return v.String()
}

// maskUserinfo replaces what precedes the last "@" before the first "/",
// "?" or "#" of s with hidden: the user information, if s starts with an
// authority.
func maskUserinfo(s string) string {
	end := len(s)
	if i := strings.IndexAny(s, "/?#"); i >= 0 {
		end = i
	}
	if i := strings.LastIndex(s[:end], "@"); i >= 0 {
		return hidden + s[i:]
	}
	return s
}
