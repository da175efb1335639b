package console

import (
	"html/template"
	"net/http"
	"strconv"
	"time"

	"github.com/coffer-s3/coffer/internal/bytesize"
)

// A page is one screen of the console: its entry in the navigation, its
// templates (each rendered inside web/templates/layout.html) and its
// routes. A new page is one more entry in pages and a file of handlers;
// the layout, sessions, CSRF and security headers come with it.
type page struct {
	title string // in the navigation
	path  string // the navigation's link
	// need is the admin action (without "admin:") the page's main view
	// needs, "" for none: the navigation shows the page only to a
	// principal that may perform it. (The page itself refuses anyone
	// else; the link only spares them a 403.)
	need      string
	templates []string
	routes    []pageRoute
	// streams are routes whose handler reads the raw request body (an
	// upload): origin-checked like the others, but the CSRF token comes
	// only in the X-CSRF-Token header and the body is not parsed as a
	// form or limited to maxFormBytes.
	streams []pageRoute
}

// pageRoute is one route of a page: a ServeMux pattern with its method
// ("GET /buckets", "POST /buckets/{name}/delete") and the handler, which
// runs only for a signed-in session and, for state-changing methods, only
// after the origin and CSRF checks.
type pageRoute struct {
	pattern string
	handle  func(h *Handler) sessionHandler
}

// pages is the console's navigation, in order; the first is the home
// page.
func pages() []page {
	return []page{bucketsPage(), objectsPage(), usersPage(), groupsPage(), policiesPage(), simulatorPage(), auditPage(), metricsPage()}
}

// funcs are the template functions of every page.
var funcs = template.FuncMap{
	"bytes": func(n int64) string { return bytesize.Format(n) },
	"time":  func(t time.Time) string { return t.UTC().Format(minuteLayout) },
	"size":  humanBytes,
	"ms":    func(d time.Duration) string { return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 1, 64) },
}

// redirectWithFlash sends the browser to path with a message for the
// next page it shows.
func (h *Handler) redirectWithFlash(w http.ResponseWriter, r *http.Request, s *session, path, msg string) {
	h.sessions.setFlash(s.key, msg)
	http.Redirect(w, r, path, http.StatusSeeOther)
}

// humanBytes formats a byte count for reading, rounded: 189300 → "184.9 KiB".
// (The bytes function shows exact counts, as Coffer's flags take them.)
func humanBytes(n int64) string {
	const units = "KMGTPE"
	if n < 1024 && n > -1024 {
		return strconv.FormatInt(n, 10) + " B"
	}
	v, i := float64(n)/1024, 0
	for (v >= 1024 || v <= -1024) && i < len(units)-1 {
		v /= 1024
		i++
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " " + units[i:i+1] + "iB"
}
