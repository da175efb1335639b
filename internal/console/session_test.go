package console

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/coffer-s3/coffer/internal/iam"
)

// fakeClock is a settable clock, safe for concurrent use.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *fakeClock) now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *fakeClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

func TestSessionExpiry(t *testing.T) {
	t.Parallel()
	p := iam.Principal{User: "alice", Session: true}
	for _, tc := range []struct {
		name  string
		steps []time.Duration // time between uses after sign-in
		want  bool            // alive after the last step
	}{
		{name: "fresh", steps: []time.Duration{0}, want: true},
		{name: "just inside idle", steps: []time.Duration{30*time.Minute - time.Second}, want: true},
		{name: "idle", steps: []time.Duration{30 * time.Minute}, want: false},
		{name: "kept alive by use", steps: []time.Duration{20 * time.Minute, 20 * time.Minute, 20 * time.Minute}, want: true},
		{name: "absolute lifetime despite use", steps: []time.Duration{
			25 * time.Minute, 25 * time.Minute, 25 * time.Minute, 25 * time.Minute, 25 * time.Minute}, want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeClock()
			st := newSessionStore(30*time.Minute, 2*time.Hour, 10, c.now)
			id, created := st.create(p)
			var (
				got session
				ok  bool
			)
			for _, d := range tc.steps {
				c.advance(d)
				got, ok = st.get(id)
			}
			if ok != tc.want {
				t.Fatalf("session alive = %v, want %v", ok, tc.want)
			}
			if ok && (got.principal != p || got.csrf != created.csrf || got.start != created.start) {
				t.Errorf("get = %+v, want the created session %+v", got, created)
			}
			if !ok && st.len() != 0 {
				t.Errorf("an expired session is still held")
			}
		})
	}
}

func TestSessionIDs(t *testing.T) {
	t.Parallel()
	c := newFakeClock()
	st := newSessionStore(time.Hour, time.Hour, 10, c.now)
	id1, s1 := st.create(iam.Principal{Root: true})
	id2, s2 := st.create(iam.Principal{Root: true})
	if len(id1) != 43 || id1 == id2 || s1.csrf == s2.csrf || s1.csrf == id1 {
		t.Errorf("ids %q %q, csrf %q %q: want distinct 256-bit base64url values", id1, id2, s1.csrf, s2.csrf)
	}
	if _, ok := st.get(id1 + "x"); ok {
		t.Errorf("a wrong ID finds a session")
	}
	if _, ok := st.get(""); ok {
		t.Errorf("an empty ID finds a session")
	}
	st.remove(s1.key)
	if _, ok := st.get(id1); ok {
		t.Errorf("a removed session is still found")
	}
	if _, ok := st.get(id2); !ok {
		t.Errorf("removing one session removed another")
	}
	st.setFlash(s2.key, "done")
	if got := st.takeFlash(s2.key); got != "done" {
		t.Errorf("takeFlash = %q, want done", got)
	}
	if got := st.takeFlash(s2.key); got != "" {
		t.Errorf("second takeFlash = %q, want it cleared", got)
	}
}

func TestSessionStoreBounded(t *testing.T) {
	t.Parallel()
	c := newFakeClock()
	st := newSessionStore(time.Hour, 24*time.Hour, 3, c.now)
	ids := make([]string, 3)
	for i := range ids {
		ids[i], _ = st.create(iam.Principal{Root: true})
		c.advance(time.Minute)
	}
	st.get(ids[0]) // used last: ids[1] is now the idlest
	c.advance(time.Minute)
	st.create(iam.Principal{Root: true})
	if n := st.len(); n != 3 {
		t.Errorf("store holds %d sessions, want its bound 3", n)
	}
	if _, ok := st.get(ids[1]); ok {
		t.Errorf("the idlest session survived a full store")
	}
	for _, i := range []int{0, 2} {
		if _, ok := st.get(ids[i]); !ok {
			t.Errorf("session %d was dropped instead of the idlest", i)
		}
	}
	// Expired sessions go first.
	c.advance(2 * time.Hour)
	st.create(iam.Principal{Root: true})
	if n := st.len(); n != 1 {
		t.Errorf("after expiry the store holds %d sessions, want 1", n)
	}
}

// TestSessionsPerPrincipalBounded: one user signing in again and again
// ends its own oldest sessions, never another principal's, however many
// times it signs in.
func TestSessionsPerPrincipalBounded(t *testing.T) {
	t.Parallel()
	c := newFakeClock()
	st := newSessionStore(time.Hour, 24*time.Hour, maxPerPrincipal+2, c.now)
	admin, _ := st.create(iam.Principal{Root: true, AccessKeyID: "ROOT"})
	c.advance(time.Minute)
	mallory := iam.Principal{User: "mallory", UserID: "1", Session: true}
	var first string
	for i := range 5 * maxPerPrincipal {
		id, _ := st.create(mallory)
		if i == 0 {
			first = id
		}
		c.advance(time.Second)
	}
	if _, ok := st.get(admin); !ok {
		t.Error("another principal's sign-ins ended root's session")
	}
	if n := st.len(); n != maxPerPrincipal+1 {
		t.Errorf("store holds %d sessions, want %d of mallory and root's", n, maxPerPrincipal+1)
	}
	if _, ok := st.get(first); ok {
		t.Error("mallory's first session survived")
	}
	// A user created again under the name is another principal.
	again := mallory
	again.UserID = "2"
	id, _ := st.create(again)
	if _, ok := st.get(id); !ok {
		t.Error("no session for the re-created user")
	}
}
