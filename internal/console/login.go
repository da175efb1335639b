package console

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/coffer-s3/coffer/internal/iam"
)

// loginView is the sign-in form's data.
type loginView struct {
	Username string
	Error    string
}

// loginForm serves GET /login: the sign-in form, or the home page for a
// browser already signed in.
func (h *Handler) loginForm(w http.ResponseWriter, r *http.Request) {
	if s, ok := h.session(r); ok && h.iam.SessionValid(s.principal, s.start) {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	if cs := r.CookiesNamed(h.cookieName(r)); len(cs) > 1 {
		h.clearCookies(w, r)
	} else if len(cs) == 0 || cs[0].Value != heldCookie {
		h.holdCookie(w, r)
	}
	h.render(w, r, http.StatusOK, "login.html", nil, "Sign in", loginView{})
}

// login serves POST /login: it checks the name and password (a user's
// console password, or root's access key ID and secret key) and starts a
// session.
//
// Order matters. The origin check comes first: no other site may make a
// browser sign in. The limiter counts the attempt before the hash runs,
// so a burst cannot overshoot it, and refuses an address or name over the
// limit even with the right password. The gate bounds how many hashes
// run at once. A wrong name and a wrong password take the same path and
// the same time (iam.SignIn hashes once either way) and get the same
// answer.
func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	start := h.clock()
	if !sameOrigin(r, h.cfg.Origin) {
		h.writeError(w, r, nil, pageError(http.StatusForbidden, "The sign-in did not come from the console's own page (Origin check failed)."))
		h.recordSignIn(r, start, "", iam.Principal{}, http.StatusForbidden, codeOrigin)
		return
	}
	capBody(w, r, signInBodyTimeout)
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		h.writeError(w, r, nil, pageError(http.StatusBadRequest, "The form could not be read."))
		h.recordSignIn(r, start, "", iam.Principal{}, http.StatusBadRequest, codeBadForm)
		return
	}
	name, password := r.PostFormValue("username"), r.PostFormValue("password")
	form := loginView{Username: name}
	refuse := func(status int, code, msg string) {
		form.Error = msg
		h.render(w, r, status, "login.html", nil, "Sign in", form)
		h.recordSignIn(r, start, name, iam.Principal{}, status, code)
	}
	if name == "" || password == "" {
		refuse(http.StatusUnauthorized, codeSignInFailed, "Enter a user name and a password.")
		return
	}
	addr := clientAddr(r)
	at, wait, ok := h.limiter.begin(addr, name, h.device(r, name))
	if !ok {
		h.log.DebugContext(r.Context(), "console sign-in locked out", "user", h.loggedName(name), "client", addr)
		w.Header().Set("Retry-After", retryAfter(wait))
		refuse(http.StatusTooManyRequests, codeLockedOut, "Too many failed sign-ins. Try again in "+wait.Round(time.Second).String()+".")
		return
	}
	if err := h.gate.acquire(r.Context()); err != nil {
		h.limiter.forgive(at) // not checked, so not a failure
		if errors.Is(err, context.Canceled) {
			return
		}
		h.log.WarnContext(r.Context(), "console sign-in refused: password checks saturated", "client", addr)
		w.Header().Set("Retry-After", retryAfterBusy)
		refuse(http.StatusServiceUnavailable, codeBusy, "The server is busy checking other sign-ins. Try again in a moment.")
		return
	}
	p, err := h.iam.SignIn(r.Context(), name, password)
	h.gate.release()
	if err != nil {
		h.log.DebugContext(r.Context(), "console sign-in failed", "user", h.loggedName(name), "client", addr)
		refuse(http.StatusUnauthorized, codeSignInFailed, "Wrong user name or password.")
		return
	}
	h.limiter.forgive(at)
	if old, ok := h.session(r); ok {
		h.sessions.remove(old.key) // a new sign-in never reuses a session
	}
	h.clearCookies(w, r)
	id, _ := h.sessions.create(p)
	http.SetCookie(w, &http.Cookie{
		Name:     h.cookieName(r),
		Value:    id,
		Path:     "/",
		HttpOnly: true,
		Secure:   h.secure(r),
		SameSite: http.SameSiteStrictMode,
		MaxAge:   int(h.cfg.SessionLifetime / time.Second),
	})
	h.setDevice(w, r, name, at.device)
	h.log.InfoContext(r.Context(), "console sign-in", "user", displayName(p), "client", addr)
	http.Redirect(w, r, "/", http.StatusSeeOther)
	h.recordSignIn(r, start, name, p, http.StatusSeeOther, "")
}

// logout serves POST /logout: it ends the session and clears the cookie.
func (h *Handler) logout(w http.ResponseWriter, r *http.Request, s *session) error {
	_ = s.allowed(nil) // anyone may end their own session: recorded in full
	h.sessions.remove(s.key)
	h.holdCookie(w, r)
	h.log.InfoContext(r.Context(), "console sign-out", "user", displayName(s.principal), "client", clientAddr(r))
	http.Redirect(w, r, "/login", http.StatusSeeOther)
	return nil
}

// retryAfter formats a wait as Retry-After seconds, rounded up.
func retryAfter(d time.Duration) string {
	return strconv.FormatInt(int64(math.Ceil(d.Seconds())), 10)
}

// signInBodyTimeout bounds the time a sign-in form (a few hundred bytes;
// at most maxFormBytes) may take to arrive: nobody is known before it is
// in, and a stranger sending a byte now and then would otherwise hold a
// connection of the ops listener, whose limit /healthz and /metrics
// share, for as long as it liked.
const signInBodyTimeout = 10 * time.Second

// capBody bounds the time r's body may take to arrive, whatever its pace:
// through the server's body wrapper, which would otherwise move the read
// deadline on as the body progresses, or else the connection's deadline.
func capBody(w http.ResponseWriter, r *http.Request, d time.Duration) {
	t := time.Now().Add(d)
	if b, ok := r.Body.(interface{ Until(time.Time) }); ok {
		b.Until(t)
		return
	}
	_ = http.NewResponseController(w).SetReadDeadline(t)
}
