// Package console is Coffer's web console, served on the ops listener
// (console-address) under /: server-rendered html/template pages and one
// stylesheet, embedded from web/ (no JavaScript build step; the pages
// work without JavaScript).
//
// # Sign-in and sessions
//
// GET /login is the sign-in form; POST /login takes the fields username
// and password: a user's console password (set with `coffer admin user
// passwd`), or root's access key ID and secret key. iam.SignIn checks
// them with one argon2id hash whatever the outcome, so a wrong name and a
// wrong password look and take alike (401 with the form). Success answers
// 303 to / with a session cookie: HttpOnly, SameSite=Strict, Secure and
// __Host- prefixed over TLS, holding a random 256-bit ID. Sessions live
// in memory (sessionStore) with an idle and an absolute expiry, and end
// on POST /logout, on restart, and as soon as iam says their principal
// may no longer act (disabled or deleted user, password changed).
//
// # Limits
//
// At most Config.LoginFailures failed sign-ins per client address (IPv6:
// per /64) and per user name within Config.LoginWindow; past that, 429
// with Retry-After, even for the right password (limiter). Password
// checks run at most one per CPU at once; the others wait in a bounded
// queue for Config.LoginQueueTimeout, then get 503 (gate). Memory is
// bounded: sessions, limiter keys and waiting sign-ins are capped. The
// limiter never drops a locked key to make room; when all its keys are
// locked, new ones get the same 429. A browser that signed in as a name
// before shows the device cookie it got then (device.go, signed with a
// key derived from the master key) and is counted per device instead:
// strangers' failures under the name do not lock it out, its own do.
//
// # Request checks
//
// Every response carries a strict Content-Security-Policy (no inline
// script or style), X-Frame-Options DENY, Referrer-Policy same-origin and
// X-Content-Type-Options nosniff. Every state-changing request must come
// from the console's own origin (Origin, else Referer) and carry the
// session's CSRF token (a hidden form field, compared in constant time).
// What a signed-in principal may do is what iam.Authorize allows it, the
// decision S3 and the admin API use.
//
// # Pages
//
// The navigation is the page registry (pages in page.go): each page has
// a title, a path, templates rendered inside the shared layout and its
// routes; adding one adds it to the navigation. Today: Buckets;
// Objects (the object browser: browse.go, object_actions.go, upload.go,
// access.go; uploads run web/static/browser.js); Users, Groups and
// Policies (directory.go: iam's management API, each page and change
// authorized with the admin API's action for it); and the policy
// simulator (iam.Simulate, the decision real requests get).
package console
