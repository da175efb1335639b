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
// one that is malformed: https:user:secret@host (no "//", so an opaque
// URL) and user:secret@host (whose "user" parses as a scheme) are masked
// up to the last "@", scheme included. A URL without any of these is
// returned as u.String() does.
func URL(u *url.URL) string {
	if u == nil {
		return ""
	}
	v := *u
	switch {
	case v.User != nil:
		// A user name that needs no escaping marks where the user
		// information goes: the first "//" is that of the authority,
		// since a scheme holds no slash.
		v.User = url.User("_")
		return strings.Replace(v.String(), "//_@", "//"+hidden+"@", 1)
	case v.Opaque != "" || v.Scheme == "" && v.Host == "":
		// Nothing was parsed as an authority, so a "/", "?" or "#" in a
		// secret (a third of AWS secret keys hold a "/") split it into
		// path or opaque part, query and fragment, and what parsed as a
		// scheme may be a user name (user:secret@host): mask all of it
		// up to the last "@".
		return maskUserinfo(v.String())
	}
	return v.String()
}

// maskUserinfo replaces what precedes the last "@" of s with hidden: the
// user information, if s starts with one, whatever "/", "?" or "#" it
// holds. A host holds no "@"; a path that does is masked up to it too,
// which a message about a malformed URL can afford.
func maskUserinfo(s string) string {
	if i := strings.LastIndex(s, "@"); i >= 0 {
		return hidden + s[i:]
	}
	return s
}
