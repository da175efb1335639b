package console

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/coffer-s3/coffer/internal/httprec"
	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/procs"
	"github.com/coffer-s3/coffer/internal/s3err"
	"github.com/coffer-s3/coffer/internal/sigv4"
)

// web holds the templates and static assets, embedded so that go build
// alone makes the binary.
//
//go:embed web
var web embed.FS

// Config configures the console. Zero fields take the defaults below.
type Config struct {
	// SessionIdle ends a session after this long without a request.
	SessionIdle time.Duration
	// SessionLifetime ends a session this long after sign-in, however
	// active.
	SessionLifetime time.Duration
	// LoginFailures failed sign-ins per client address or per user name
	// within LoginWindow lock further attempts out (429) until the oldest
	// leaves the window.
	LoginFailures int
	LoginWindow   time.Duration
	// LoginQueueTimeout is how long a sign-in waits for a password check
	// to run, when as many run as there are CPUs, before it is refused
	// (503).
	LoginQueueTimeout time.Duration
	// Origin is the console's public origin (scheme://host[:port]) that
	// state-changing requests must come from; "" means the origin the
	// request reached (its scheme and Host header).
	Origin string
	// S3URL is the public base URL of the S3 endpoint that share links
	// point at (scheme://host[:port][/path]); "" means the S3 listener's
	// own address.
	S3URL string
	// MetricsInterval is how often the server samples its own metrics for
	// the Metrics page's charts; the page keeps an hour of samples (at
	// most MaxMetricsSamples).
	MetricsInterval time.Duration
}

// Defaults of Config.
const (
	DefaultSessionIdle       = 30 * time.Minute
	DefaultSessionLifetime   = 12 * time.Hour
	DefaultLoginFailures     = 10
	DefaultLoginWindow       = 15 * time.Minute
	DefaultLoginQueueTimeout = 5 * time.Second
)

// Bounds on memory, whatever the load: sessions held, keys each table of
// the sign-in limiter keeps (addresses, user names), password checks at
// once by default (each holds its argon2id memory, 19 MiB by default: one
// per CPU, but not 64 on a 64-CPU machine), sign-ins waiting per hashing
// slot, and the size of a posted form.
const (
	maxSessions     = 10_000
	limiterKeys     = 10_000
	maxDefaultSlots = 4
	queuePerSlot    = 64
	maxFormBytes    = 64 << 10
)

// The session cookie's names: over TLS with the __Host- prefix, which
// browsers accept only Secure, host-only and for Path=/.
const (
	sessionCookie = "coffer_session"
	secureCookie  = "__Host-coffer_session"
)

const (
	staticMaxAge   = "max-age=3600" // Cache-Control of the static assets
	retryAfterBusy = "1"            // Retry-After of a sign-in refused by the gate, in seconds
)

func (c Config) withDefaults() Config {
	if c.SessionIdle == 0 {
		c.SessionIdle = DefaultSessionIdle
	}
	if c.SessionLifetime == 0 {
		c.SessionLifetime = DefaultSessionLifetime
	}
	if c.LoginFailures == 0 {
		c.LoginFailures = DefaultLoginFailures
	}
	if c.LoginWindow == 0 {
		c.LoginWindow = DefaultLoginWindow
	}
	if c.LoginQueueTimeout == 0 {
		c.LoginQueueTimeout = DefaultLoginQueueTimeout
	}
	if c.MetricsInterval == 0 {
		c.MetricsInterval = DefaultMetricsInterval
	}
	return c
}

// IAM is what the console needs of package iam: checking sign-ins,
// keeping sessions valid, and the same allow/deny decision S3 and the
// admin API use. *iam.IAM implements it.
type IAM interface {
	SignIn(ctx context.Context, name, password string) (iam.Principal, error)
	SessionValid(p iam.Principal, start time.Time) bool
	Authorize(ctx context.Context, rq iam.Request) error
	CanSeeBucket(p iam.Principal, bucket string) bool
	RefreshBucketPolicy(ctx context.Context, bucket string) error
	// SignInName returns the principal a sign-in name stands for, or
	// false if it names none.
	SignInName(name string) (iam.Principal, bool)
	// CanonicalID returns the canonical user ID of a principal, the
	// owner its writes record.
	CanonicalID(p iam.Principal) string
	// MAC returns a tag of msg for purpose that only this store can
	// make, and CredentialStamp a value that changes with the sign-in
	// name's credential (device cookies).
	MAC(purpose string, msg []byte) []byte
	CredentialStamp(name string) ([]byte, bool)
}

var _ IAM = (*iam.IAM)(nil)

// Buckets is what the console needs of the object service.
// *objects.Service implements it.
type Buckets interface {
	BucketsUsage(ctx context.Context) ([]objects.BucketUsage, error)
	CreateBucket(ctx context.Context, name string, in objects.CreateBucketInput) error
	DeleteBucket(ctx context.Context, name string) error
}

var _ Buckets = (*objects.Service)(nil)

// Deps are the console's collaborators.
type Deps struct {
	IAM     IAM     // required
	Buckets Buckets // required
	Logger  *slog.Logger
	// Clock returns the current time; nil means time.Now.
	Clock func() time.Time
	// HashSlots is how many password checks may run at once; 0 means
	// one per CPU (procs.CPUs), at most maxDefaultSlots.
	HashSlots int
	// Browser is what the object browser needs; without Objects its
	// pages answer 404.
	Browser BrowserDeps
	// Audit is the audit log the Audit page reads; nil when it is off.
	Audit AuditLog
	// Monitor is what the Metrics page shows.
	Monitor MonitorDeps
	// Events is where sign-ins and every state-changing request are
	// recorded; nil when the audit log is off.
	Events AuditRecorder
	// Unavailable, if not nil, says why the server can take no changes
	// (the metadata store failed: objects.Service.Err): every
	// state-changing request, and every request that failed with an
	// internal error, then answers its error, 503, as S3 and the admin
	// API do.
	Unavailable func() error
}

// Handler serves the console. It is an http.Handler for every path of
// the ops listener that no other endpoint there claims, and is safe for
// concurrent use.
type Handler struct {
	cfg      Config
	iam      IAM
	buckets  Buckets
	log      *slog.Logger
	clock    func() time.Time
	sessions *sessionStore
	limiter  *limiter
	gate     *gate
	pages    []page
	browser  BrowserDeps
	audit    AuditLog
	events   AuditRecorder // nil without an audit log
	down     func() error  // Deps.Unavailable; nil for never
	monitor  MonitorDeps
	tmpl     map[string]*template.Template // by template file name
	mux      *http.ServeMux
	bufs     sync.Pool // of *bytes.Buffer, to render pages into
}

// New returns the console over d.
func New(cfg Config, d Deps) (*Handler, error) {
	if d.IAM == nil || d.Buckets == nil {
		return nil, errors.New("console: iam and buckets are required")
	}
	cfg = cfg.withDefaults()
	h := &Handler{cfg: cfg, iam: d.IAM, buckets: d.Buckets, log: d.Logger, clock: d.Clock, browser: d.Browser, audit: d.Audit, events: d.Events, down: d.Unavailable, monitor: d.Monitor}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.clock == nil {
		h.clock = time.Now
	}
	slots := d.HashSlots
	if slots <= 0 {
		slots = min(procs.CPUs(), maxDefaultSlots) // hashing is CPU-bound; GOMAXPROCS may be twice this
	}
	h.sessions = newSessionStore(cfg.SessionIdle, cfg.SessionLifetime, maxSessions, h.clock)
	h.limiter = newLimiter(cfg.LoginFailures, cfg.LoginWindow, limiterKeys, h.clock)
	h.gate = newGate(slots, slots*queuePerSlot, cfg.LoginQueueTimeout)
	h.pages = pages()
	if err := h.parseTemplates(); err != nil {
		return nil, err
	}
	h.routes()
	return h, nil
}

// parseTemplates parses every page's template with the layout, and the
// sign-in and error pages.
func (h *Handler) parseTemplates() error {
	h.tmpl = map[string]*template.Template{}
	names := []string{"login.html", "error.html"}
	for _, p := range h.pages {
		names = append(names, p.templates...)
	}
	for _, n := range names {
		if _, ok := h.tmpl[n]; ok {
			continue
		}
		t, err := template.New(n).Funcs(funcs).ParseFS(web, "web/templates/layout.html", "web/templates/"+n)
		if err != nil {
			return fmt.Errorf("console: template %s: %w", n, err)
		}
		h.tmpl[n] = t
	}
	return nil
}

// routes registers the sign-in endpoints, the static assets and every
// page's routes.
func (h *Handler) routes() {
	mux := http.NewServeMux()
	static, _ := fs.Sub(web, "web/static") // web/static exists: it is embedded
	files := http.FileServerFS(static)
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", staticMaxAge)
		files.ServeHTTP(w, r)
	})))
	mux.HandleFunc("GET /login", h.loginForm)
	mux.HandleFunc("POST /login", h.login)
	mux.HandleFunc("POST /logout", h.signedIn(h.logout))
	mux.HandleFunc("GET /{$}", h.signedIn(h.home))
	for _, p := range h.pages {
		for _, rt := range p.routes {
			mux.HandleFunc(rt.pattern, h.checkNames(rt.pattern, h.signedIn(rt.handle(h))))
		}
		for _, rt := range p.streams {
			mux.HandleFunc(rt.pattern, h.checkNames(rt.pattern, h.guard(rt.handle(h), true)))
		}
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		h.writeError(w, r, nil, pageError(http.StatusNotFound, "There is no page at %s.", r.URL.Path))
	})
	h.mux = mux
}

// checkNames answers 404 for a request whose path gives a wildcard of
// pattern (a bucket, user, group, policy or access key) a value no such
// name can have: pages put these values into the paths of their links
// and forms, and a value with a slash, a question mark or a dot segment
// (%2F, %3F and ".." decoded) would aim a page's confirmation form at
// another endpoint with the viewer's own CSRF token. Bucket names, IAM
// names and access keys are all of nameChars.
func (h *Handler) checkNames(pattern string, next http.HandlerFunc) http.HandlerFunc {
	var names []string
	for rest := pattern; ; {
		i := strings.IndexByte(rest, '{')
		j := strings.IndexByte(rest[i+1:], '}')
		if i < 0 || j < 0 {
			break
		}
		if n := strings.TrimSuffix(rest[i+1:i+1+j], "..."); n != "$" {
			names = append(names, n)
		}
		rest = rest[i+1+j+1:]
	}
	if len(names) == 0 {
		return next
	}
	return func(w http.ResponseWriter, r *http.Request) {
		for _, n := range names {
			if !pathName(r.PathValue(n)) {
				h.writeError(w, r, nil, pageError(http.StatusNotFound, "There is no page at %s.", r.URL.Path))
				return
			}
		}
		next(w, r)
	}
}

// pathName reports whether v can be a name in a console path: 1 to 255
// characters of letters, digits and "+=,.@_-", and not only dots.
func pathName(v string) bool {
	if v == "" || len(v) > 255 || strings.Trim(v, ".") == "" {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("+=,.@_-", c) >= 0) {
			return false
		}
	}
	return true
}

// ServeHTTP implements http.Handler: every response carries the security
// headers, and no page is cached.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	setSecurityHeaders(w.Header())
	w.Header().Set("Cache-Control", "no-store")
	if !knownHost(r.Host, h.cfg.Origin) {
		h.writeError(w, r, nil, pageError(http.StatusMisdirectedRequest,
			"This console answers only at an IP address or localhost. "+
				"To reach it by a name, set --console.origin to the address you use (scheme://name[:port])."))
		return
	}
	h.mux.ServeHTTP(w, r)
}

// home sends a signed-in browser to the first page.
func (h *Handler) home(w http.ResponseWriter, r *http.Request, _ *session) error {
	http.Redirect(w, r, h.pages[0].path, http.StatusSeeOther)
	return nil
}

// sessionHandler is a handler for a signed-in browser. It returns an
// error for writeError to show.
type sessionHandler func(w http.ResponseWriter, r *http.Request, s *session) error

// signedIn wraps fn: the request must carry a live session cookie whose
// principal may still act (a disabled or deleted user's sessions end
// here), and a state-changing request must come from the console's own
// origin with the session's CSRF token. A GET without a session is sent
// to the sign-in page.
func (h *Handler) signedIn(fn sessionHandler) http.HandlerFunc { return h.guard(fn, false) }

// guard implements signedIn. With stream, the handler reads the raw
// request body itself (an upload): the body is neither parsed as a form
// nor limited to maxFormBytes, and the CSRF token must come in the
// X-CSRF-Token header.
func (h *Handler) guard(fn sessionHandler, stream bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var a *action
		sw := &httprec.Writer{ResponseWriter: w}
		if stateChanging(r.Method) {
			if a = h.beginAction(r); a != nil {
				w = sw
			}
		}
		s, ok := h.session(r)
		if ok && !h.iam.SessionValid(s.principal, s.start) {
			h.sessions.remove(s.key)
			ok = false
		}
		if !ok {
			h.clearCookies(w, r)
			if !stateChanging(r.Method) {
				http.Redirect(w, r, "/login", http.StatusSeeOther)
				return
			}
			err := pageError(http.StatusForbidden, "Your session has ended. Sign in again.")
			h.writeError(w, r, nil, err)
			h.endAction(r, a.refused(codeNoSession), nil, sw, err)
			return
		}
		s.act = a
		if stream && r.Body != nil {
			r.Body = &clientBody{rc: r.Body} // see jsonErrors
		}
		err := h.admit(w, r, &s, stream)
		if err == nil {
			err = fn(w, r, &s)
		}
		if err != nil {
			h.writeError(w, r, &s, err)
		}
		h.endAction(r, a, &s, sw, err)
	}
}

// admit checks a signed-in request: a state-changing one must come from
// the console's own origin and carry the session's CSRF token (its form
// is parsed here, unless stream). A refusal's code goes in the audit
// record.
func (h *Handler) admit(w http.ResponseWriter, r *http.Request, s *session, stream bool) error {
	if !stateChanging(r.Method) {
		return nil
	}
	if !sameOrigin(r, h.cfg.Origin) {
		s.act.refused(codeOrigin)
		return pageError(http.StatusForbidden, "The request did not come from the console's own pages (Origin check failed).")
	}
	if !stream {
		r.Body = http.MaxBytesReader(unwrap(w), r.Body, maxFormBytes)
		if err := r.ParseForm(); err != nil {
			s.act.refused(codeBadForm)
			return pageError(http.StatusBadRequest, "The form could not be read.")
		}
	}
	if !validCSRF(r, s, stream) {
		s.act.refused(codeCSRF)
		return pageError(http.StatusForbidden, "The form is stale or forged (CSRF token missing or wrong). Reload the page and try again.")
	}
	if h.down != nil {
		if err := h.down(); err != nil {
			return err // before an upload's body is read
		}
	}
	return nil
}

// session returns the session of the request's cookie. A request with
// more than one session cookie has none: a page of another port of this
// host (an HTML object served by the S3 listener, say) can set a cookie
// for the console's host with a longer path, which the browser sends
// first, and so switch a signed-in user to the page author's session
// for the pages under that path. Both sessions end (the one of the two
// that is the user's own cannot be told), and conflicting clears the
// cookies.
func (h *Handler) session(r *http.Request) (session, bool) {
	cs := r.CookiesNamed(h.cookieName(r))
	if len(cs) != 1 {
		for _, c := range cs {
			if s, ok := h.sessions.get(c.Value); ok {
				h.sessions.remove(s.key)
			}
		}
		return session{}, false
	}
	return h.sessions.get(cs[0].Value)
}

// heldCookie is the value of a session cookie that holds no session
// (holdCookie).
const heldCookie = "-"

// heldCookieAge is how long a held cookie lasts: the most browsers keep
// a cookie (400 days).
const heldCookieAge = 400 * 24 * 60 * 60

// holdCookie sets the session cookie at Path=/ to a value that is no
// session, HttpOnly, for as long as browsers keep cookies. Signing out,
// the sign-in page and a conflict (clearCookies) leave it so instead of
// deleting the cookie: a script cannot replace an HttpOnly cookie, so a
// page of another port of this host cannot then set its author's session
// at "/" in the browser (it can only add one at a longer path, which
// conflicts with this one and ends the author's session).
func (h *Handler) holdCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: h.cookieName(r), Value: heldCookie, Path: "/", MaxAge: heldCookieAge,
		HttpOnly: true, Secure: h.secure(r), SameSite: http.SameSiteStrictMode})
}

// maxClearedDepth bounds the path segments clearCookies clears cookies
// for.
const maxClearedDepth = 16

// clearCookies, for a request with more than one session cookie, expires
// the session cookie for every path the browser could have sent one of
// them for: each prefix of the request's path, with and without a
// trailing slash. A cookie set by a script cannot be HttpOnly, and so a
// response's Set-Cookie replaces it.
func (h *Handler) clearCookies(w http.ResponseWriter, r *http.Request) {
	name := h.cookieName(r)
	if len(r.CookiesNamed(name)) < 2 {
		return
	}
	clear := func(path string) {
		if path != "/" {
			http.SetCookie(w, &http.Cookie{Name: name, Value: "", Path: path, MaxAge: -1, HttpOnly: true, Secure: h.secure(r), SameSite: http.SameSiteStrictMode})
		}
	}
	h.holdCookie(w, r)          // at "/": held, not cleared (see holdCookie)
	path := r.URL.EscapedPath() // what browsers match cookie paths against
	for i, depth := 1, 0; i < len(path) && depth < maxClearedDepth; depth++ {
		j := strings.IndexByte(path[i:], '/')
		if j < 0 {
			clear(path)
			break
		}
		clear(path[:i+j])
		clear(path[:i+j+1])
		i += j + 1
	}
}

// cookieName is the session cookie's name: over TLS with the __Host-
// prefix, which browsers accept only Secure, host-only and for Path=/.
func (h *Handler) cookieName(r *http.Request) string {
	if h.secure(r) {
		return secureCookie
	}
	return sessionCookie
}

// secure reports whether the browser reaches the console over TLS: the
// connection is TLS, or the configured public origin is https (a TLS
// proxy in front). Its session cookie is then Secure, so that a browser
// never sends it over plain HTTP to the same host (the S3 listener, say).
func (h *Handler) secure(r *http.Request) bool {
	return r.TLS != nil || strings.HasPrefix(strings.ToLower(h.cfg.Origin), "https://")
}

// clientAddr returns the address of the client (the TCP peer; a proxy in
// front of the console is the client).
func clientAddr(r *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.IPv4Unspecified()
	}
	return ap.Addr().Unmap()
}

// conditions are the policy condition keys of a console request, as S3
// computes them for its own.
//
// Nothing signs a console request's body (an upload's bytes), so it is
// UNSIGNED-PAYLOAD to s3:x-amz-content-sha256, as a presigned URL's is:
// a policy that refuses unsigned payloads refuses the console's too.
func conditions(r *http.Request) iam.Conditions {
	return iam.Conditions{
		SourceIP:        clientAddr(r),
		SecureTransport: r.TLS != nil,
		UserAgent:       r.UserAgent(),
		Referer:         r.Referer(),
		ContentSHA256:   sigv4.PayloadUnsigned.String(),
	}
}

// authorize asks iam whether the session may do action on bucket, with
// the same decision S3 makes for a request of its principal, and marks
// the request authorized if so (action.authorized).
func (h *Handler) authorize(r *http.Request, s *session, action iam.Action, bucket string) error {
	return s.allowed(h.probe(r, s, action, bucket))
}

// probe is authorize without marking the request authorized: for a page
// that shows what else s may do (a Delete button), which authorizes
// nothing the request does.
func (h *Handler) probe(r *http.Request, s *session, action iam.Action, bucket string) error {
	return h.iam.Authorize(r.Context(), iam.Request{Principal: s.principal, Action: action, Bucket: bucket, Cond: conditions(r)})
}

// An errorPage is an error shown to the user as a page with a status.
type errorPage struct {
	status int
	msg    string
}

func (e *errorPage) Error() string { return e.msg }

func pageError(status int, format string, a ...any) *errorPage {
	return &errorPage{status: status, msg: fmt.Sprintf(format, a...)}
}

// describe returns the status and message to show for err: an
// errorPage's own, an S3 error's (AccessDenied, BucketNotEmpty, …), 503
// for a metadata store out of reach or failed, or 500 with a generic
// message for anything else, which is logged.
func (h *Handler) describe(r *http.Request, err error) (int, string) {
	if status, msg, ok := known(err); ok {
		if status == http.StatusServiceUnavailable && unavailable(err) {
			h.log.WarnContext(r.Context(), "console request failed: metadata store unavailable", "method", r.Method, "path", r.URL.Path, "err", err)
		}
		return status, msg
	}
	if h.down != nil {
		if derr := h.down(); derr != nil {
			// Once the metadata store has failed, an internal error is
			// most likely its doing: the server restarts, and the user
			// should try again, not report a bug.
			h.log.WarnContext(r.Context(), "console request failed: metadata store failed", "method", r.Method, "path", r.URL.Path, "err", err)
			if status, msg, ok := known(derr); ok {
				return status, msg
			}
			return http.StatusServiceUnavailable, unavailableMessage
		}
	}
	h.log.ErrorContext(r.Context(), "console request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	return http.StatusInternalServerError, "Something went wrong on the server; the error is logged."
}

// unavailable reports whether a 503 error is the metadata store's (not
// the console's own, such as a missing setting): then it is worth
// retrying, and says so with Retry-After.
func unavailable(err error) bool {
	_, page := errors.AsType[*errorPage](err)
	return !page
}

// known returns the status and message of an error the user is told
// about as it is: an errorPage, an S3 error other than InternalError, or
// a metadata store out of reach (503).
func known(err error) (int, string, bool) {
	if pe, ok := errors.AsType[*errorPage](err); ok {
		return pe.status, pe.msg, true
	}
	if se, ok := errors.AsType[*s3err.Error](err); ok && se.Code != s3err.InternalError && s3err.Known(se.Code) {
		msg := se.Msg()
		if se.Code == s3err.AccessDenied {
			msg = "Your policies do not allow this."
		}
		return se.Status(), msg, true
	}
	if errors.Is(err, objects.ErrUnavailable) {
		return http.StatusServiceUnavailable, unavailableMessage, true
	}
	return 0, "", false
}

// unavailableMessage is the page of a request that failed because the
// metadata store (PostgreSQL) could not be reached.
const unavailableMessage = "The metadata store cannot be reached just now. Try again in a moment."

// retryAfterUnavailable is Retry-After of a 503 for a metadata store
// out of reach or failed, in seconds: S3's.
const retryAfterUnavailable = "1"

// writeError shows err as the error page; s is the session, if any.
func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, s *session, err error) {
	status, msg := h.describe(r, err)
	title := "Error"
	if status == http.StatusServiceUnavailable && unavailable(err) {
		w.Header().Set("Retry-After", retryAfterUnavailable)
		title = "Unavailable"
	}
	h.render(w, r, status, "error.html", s, title, msg)
}

// view is what every template sees: the layout's data and the page's.
type view struct {
	Title   string
	Nav     []navItem
	Current string // path of the page shown, for the navigation
	User    string // who is signed in; "" on the sign-in page
	CSRF    string
	Flash   string
	Page    any
}

type navItem struct{ Title, Path string }

// maxPooledPage is the largest page buffer kept for the next page: a
// few pages are much larger than the rest (a long policy, an audit
// export), and their buffers are left to the garbage collector.
const maxPooledPage = 256 << 10

// render executes template name with the layout and writes it with
// status. Rendering into a buffer first means a template error becomes
// a clean 500, not half a page.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, name string, s *session, title string, data any) {
	v := view{Title: title, Current: r.URL.Path, Page: data}
	if s != nil {
		v.User = displayName(s.principal)
		v.CSRF = s.csrf
		v.Flash = h.sessions.takeFlash(s.key)
		v.Nav = h.nav(r, s)
	}
	b, _ := h.bufs.Get().(*bytes.Buffer)
	if b == nil {
		b = new(bytes.Buffer)
	}
	b.Reset()
	defer func() {
		if b.Cap() <= maxPooledPage {
			h.bufs.Put(b)
		}
	}()
	if err := h.tmpl[name].ExecuteTemplate(b, "layout", v); err != nil {
		h.log.ErrorContext(r.Context(), "console template failed", "template", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

// nav is the navigation of s: the pages its principal may use.
func (h *Handler) nav(r *http.Request, s *session) []navItem {
	var items []navItem
	for _, p := range h.pages {
		if p.need == "" || h.may(r, s, p.need) {
			items = append(items, navItem{Title: p.title, Path: p.path})
		}
	}
	return items
}

// displayName names a principal in the page header.
func displayName(p iam.Principal) string {
	if p.Root {
		return "root"
	}
	return p.User
}
