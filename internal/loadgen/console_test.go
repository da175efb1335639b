package loadgen

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeConsole is a web console over a fakeS3's objects: a sign-in form
// with a hidden nonce that must come back with the right user and
// password and the console's Origin, sessions by cookie, and the pages
// the console operations read.
type fakeConsole struct {
	s3  *fakeS3
	url string

	mu       sync.Mutex
	nonces   map[string]bool
	sessions map[string]bool
	requests map[string]int // by operation

	inFlight, peak atomic.Int64 // concurrent sign-ins
}

func newFakeConsole(t *testing.T, s3 *fakeS3) *fakeConsole {
	c := &fakeConsole{s3: s3, nonces: map[string]bool{}, sessions: map[string]bool{}, requests: map[string]int{}}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	c.url = srv.URL
	return c
}

func (c *fakeConsole) count(op string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests[op]++
}

func (c *fakeConsole) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/login" {
		c.login(w, r)
		return
	}
	ck, err := r.Cookie("coffer_session")
	c.mu.Lock()
	ok := err == nil && c.sessions[ck.Value]
	c.mu.Unlock()
	if !ok {
		http.Redirect(w, r, "/login", http.StatusSeeOther)
		return
	}
	bucket, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/objects/"), "/")
	c.s3.mu.Lock()
	objects := c.s3.buckets[bucket]
	size, found := objects[r.URL.Query().Get("key")]
	listed := 0
	for k := range objects {
		if strings.HasPrefix(k, r.URL.Query().Get("prefix")) {
			listed++
		}
	}
	c.s3.mu.Unlock()
	switch {
	case r.URL.Path == "/buckets":
		c.count("buckets")
		fmt.Fprint(w, "<table>buckets</table>")
	case rest == "" && objects != nil && r.URL.Query().Get("prefix") == "obj-":
		c.count("objects")
		fmt.Fprintf(w, "<p>%d keys</p>", listed)
	case rest == "download" && found:
		c.count("download")
		w.Write(make([]byte, size))
	default:
		http.NotFound(w, r)
	}
}

func (c *fakeConsole) login(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		nonce := rand.Text()
		c.mu.Lock()
		c.nonces[nonce] = true
		c.mu.Unlock()
		fmt.Fprintf(w, `<form method="post" action="/login" id="login"><input type="hidden" name="nonce" value="%s">`+
			`<input name="username"><input name="password" type="password"></form>`, nonce)
		return
	}
	n := c.inFlight.Add(1)
	defer c.inFlight.Add(-1)
	for p := c.peak.Load(); n > p && !c.peak.CompareAndSwap(p, n); p = c.peak.Load() {
	}
	time.Sleep(5 * time.Millisecond) // a password check
	c.mu.Lock()
	defer c.mu.Unlock()
	nonce := r.PostFormValue("nonce")
	if r.Header.Get("Origin") != c.url || !c.nonces[nonce] || r.PostFormValue("username") != "alice" || r.PostFormValue("password") != "alice-pw" {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	delete(c.nonces, nonce)
	c.requests["sign-in"]++
	sid := rand.Text()
	c.sessions[sid] = true
	http.SetCookie(w, &http.Cookie{Name: "coffer_session", Value: sid, Path: "/", HttpOnly: true})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// TestConsoleCases runs the console cases against a target with a
// console and one without: they measure the first, through its sign-in
// form and session, and skip the second, saying why.
func TestConsoleCases(t *testing.T) {
	t.Parallel()
	fa, a := newFake(t)
	_, b := newFake(t)
	con := newFakeConsole(t, fa)
	withConsole := target("coffer", a.URL)
	withConsole.ConsoleURL, withConsole.ConsoleUser, withConsole.ConsolePassword = con.url, "alice", "alice-pw"
	var progress strings.Builder
	cfg := CasesConfig{Workers: 8, Duration: time.Second,
		Cases:    []string{"console-sign-in", "console-buckets", "console-objects-1000", "console-download-1KiB"},
		Progress: MixedConfig{Progress: &progress}}
	res, err := RunCases(t.Context(), cfg, []Target{withConsole, target("minio", b.URL)})
	if err != nil {
		t.Fatalf("RunCases: %v", err)
	}
	if len(res.Targets) != 1 || res.Targets[0].Name != "coffer" {
		t.Fatalf("targets with results: %+v, want only coffer", res.Targets)
	}
	ops := map[string]OpStat{}
	for _, o := range res.Targets[0].Ops {
		ops[o.Op] = o
	}
	con.mu.Lock()
	seen := con.requests
	con.mu.Unlock()
	for c, seenAs := range map[string]string{"console-sign-in": "sign-in", "console-buckets": "buckets", "console-objects-1000": "objects", "console-download-1KiB": "download"} {
		o := ops[c]
		if o.Ops == 0 || o.Errors != 0 {
			t.Errorf("%s: %d ops, %d errors (%v); want some and none", c, o.Ops, o.Errors, o.ErrorCodes)
		}
		if seen[seenAs] < int(o.Ops) {
			t.Errorf("%s: %d ops, but the console saw %d", c, o.Ops, seen[seenAs])
		}
	}
	if d := ops["console-download-1KiB"]; d.Bytes != d.Ops<<10 {
		t.Errorf("console-download-1KiB: %d bytes in %d ops", d.Bytes, d.Ops)
	}
	if p := con.peak.Load(); p > 4 {
		t.Errorf("%d sign-ins at once, want at most the case's 4 workers", p)
	}
	want := []CaseSkip{
		{Case: "console-sign-in", Target: "minio", Reason: noConsole},
		{Case: "console-buckets", Target: "minio", Reason: noConsole},
		{Case: "console-objects-1000", Target: "minio", Reason: noConsole},
		{Case: "console-download-1KiB", Target: "minio", Reason: noConsole},
	}
	if diff := cmp.Diff(want, res.Skipped); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
	if !strings.Contains(progress.String(), "console-sign-in: skipped on minio: no web console") {
		t.Errorf("progress does not say that minio was skipped:\n%s", progress.String())
	}
	var md strings.Builder
	if err := WriteMarkdown(&md, res, "", false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "## Skipped") || !strings.Contains(md.String(), "**console-buckets** on minio") {
		t.Errorf("the report does not list the skipped cases:\n%s", md.String())
	}

	wrong := withConsole
	wrong.ConsolePassword = "not-alices"
	if _, err := RunCases(t.Context(), CasesConfig{Workers: 2, Duration: time.Second, Cases: []string{"console-buckets"}}, []Target{wrong}); err == nil || !strings.Contains(err.Error(), "SignInFailed") {
		t.Errorf("console case with a wrong password: %v, want SignInFailed", err)
	}
}

func TestHiddenFields(t *testing.T) {
	t.Parallel()
	page := `<form id="search" action="/find"><input type="hidden" name="x" value="no"></form>
<form method="post" action="/login"><input type="hidden" name="csrf" value="a&amp;b"><INPUT NAME="next" TYPE="HIDDEN" VALUE="/buckets">
<input name="username" value="prefilled"><input name="password" type="password"></form>`
	got, err := hiddenFields(page)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string][]string{"csrf": {"a&b"}, "next": {"/buckets"}}, map[string][]string(got)); diff != "" {
		t.Errorf("hiddenFields (-want +got):\n%s", diff)
	}
	if _, err := hiddenFields("<p>no form</p>"); err == nil {
		t.Error("hiddenFields of a page without a sign-in form: no error")
	}
}
