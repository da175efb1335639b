package console

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"sync"
	"time"

	"github.com/coffer-s3/coffer/internal/iam"
)

// A session is a signed-in browser: who it acts as, its CSRF token and
// when it started. The store hands out copies; the session's ID is known
// only to its cookie.
type session struct {
	key       sessionKey
	principal iam.Principal
	csrf      string    // per-session CSRF token, base64url of 32 random bytes
	start     time.Time // when it signed in
	lastSeen  time.Time
	flash     string // a message for the next page shown, then cleared
	// act is the audit record of the request this copy serves, for its
	// handler to add to; never set in the store.
	act *action
}

// sessionKey is the SHA-256 of a session ID. The store is keyed by it,
// so neither a map lookup's timing nor a memory dump gives out a usable
// ID.
type sessionKey [sha256.Size]byte

// idBytes is the size of session IDs and CSRF tokens: 256 random bits.
const idBytes = 32

// randomToken returns idBytes random bytes in base64url.
func randomToken() string {
	b := make([]byte, idBytes)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b)
}

// sessionStore holds the console's sessions in memory: they end on
// restart, after idle time without a request, at an absolute lifetime,
// and on sign-out. It holds at most maxPerPrincipal sessions of one
// principal, past which that principal's session idle longest is
// dropped, and at most max sessions in all, past which the one idle
// longest is dropped: so one user signing in again and again ends only
// its own sessions, never those of everyone else. Safe for concurrent
// use.
type sessionStore struct {
	idle, lifetime time.Duration
	max            int
	clock          func() time.Time

	mu sync.Mutex // guards m
	m  map[sessionKey]*session
}

func newSessionStore(idle, lifetime time.Duration, max int, clock func() time.Time) *sessionStore {
	return &sessionStore{idle: idle, lifetime: lifetime, max: max, clock: clock, m: make(map[sessionKey]*session)}
}

func keyOf(id string) sessionKey { return sha256.Sum256([]byte(id)) }

// expired reports whether s has ended at now.
func (st *sessionStore) expired(s *session, now time.Time) bool {
	return !now.Before(s.lastSeen.Add(st.idle)) || !now.Before(s.start.Add(st.lifetime))
}

// create starts a session for p and returns its ID (for the cookie) and
// a copy of it.
func (st *sessionStore) create(p iam.Principal) (string, session) {
	id := randomToken()
	now := st.clock()
	s := &session{key: keyOf(id), principal: p, csrf: randomToken(), start: now, lastSeen: now}
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.m) >= st.max {
		st.sweepLocked(now)
	}
	if n := st.countLocked(p); n >= maxPerPrincipal {
		st.evictIdlestLocked(func(s *session) bool { return samePrincipal(s.principal, p) })
	}
	if len(st.m) >= st.max {
		st.evictIdlestLocked(nil)
	}
	st.m[s.key] = s
	return id, *s
}

// get returns the session of id and marks it used now, or false if there
// is none or it has expired (it is then removed).
func (st *sessionStore) get(id string) (session, bool) {
	if id == "" {
		return session{}, false
	}
	k := keyOf(id)
	now := st.clock()
	st.mu.Lock()
	defer st.mu.Unlock()
	s, ok := st.m[k]
	if !ok {
		return session{}, false
	}
	if st.expired(s, now) {
		delete(st.m, k)
		return session{}, false
	}
	s.lastSeen = now
	return *s, true
}

// remove ends the session with key k, if it exists.
func (st *sessionStore) remove(k sessionKey) {
	st.mu.Lock()
	defer st.mu.Unlock()
	delete(st.m, k)
}

// setFlash leaves msg for the next page the session sees.
func (st *sessionStore) setFlash(k sessionKey, msg string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if s, ok := st.m[k]; ok {
		s.flash = msg
	}
}

// takeFlash returns and clears the session's message.
func (st *sessionStore) takeFlash(k sessionKey) string {
	st.mu.Lock()
	defer st.mu.Unlock()
	s, ok := st.m[k]
	if !ok {
		return ""
	}
	msg := s.flash
	s.flash = ""
	return msg
}

// len returns the number of sessions held, expired ones included.
func (st *sessionStore) len() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.m)
}

// sweepLocked removes the expired sessions.
func (st *sessionStore) sweepLocked(now time.Time) {
	for k, s := range st.m {
		if st.expired(s, now) {
			delete(st.m, k)
		}
	}
}

// maxPerPrincipal is the most sessions one principal keeps: a browser
// each on a good many machines.
const maxPerPrincipal = 32

// samePrincipal reports whether a and b are the same principal (a user
// created again under its name is another).
func samePrincipal(a, b iam.Principal) bool {
	return a.Root == b.Root && a.AccessKeyID == b.AccessKeyID && a.User == b.User && a.UserID == b.UserID
}

// countLocked returns the number of sessions of p. Sign-ins, which alone
// call it, are paced by their password hashes, and a scan of at most max
// sessions costs far less than a hash.
func (st *sessionStore) countLocked(p iam.Principal) int {
	n := 0
	for _, s := range st.m {
		if samePrincipal(s.principal, p) {
			n++
		}
	}
	return n
}

// evictIdlestLocked removes the session unused for longest of those
// that match says (all of them with match nil).
func (st *sessionStore) evictIdlestLocked(match func(*session) bool) {
	var (
		oldest sessionKey
		seen   time.Time
		found  bool
	)
	for k, s := range st.m {
		if match != nil && !match(s) {
			continue
		}
		if !found || s.lastSeen.Before(seen) {
			oldest, seen, found = k, s.lastSeen, true
		}
	}
	if found {
		delete(st.m, oldest)
	}
}
