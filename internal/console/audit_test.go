package console

import (
	"bufio"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coffer-s3/coffer/internal/audit"
)

// auditPolicy lets a user read the audit log and nothing else.
const auditPolicy = `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"admin:GetAuditLog","Resource":"*"}]}`

// withAudit gives f's console an audit log holding events, recorded in
// order (so event i has ID i+1), and returns it.
func withAudit(t *testing.T, f *fixture, events []audit.Event) *audit.Log {
	t.Helper()
	l, err := audit.Open(audit.Config{Path: filepath.Join(t.TempDir(), "audit.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	for _, e := range events {
		if !l.Record(e) {
			t.Fatal("audit event dropped")
		}
	}
	if err := l.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	f.h.audit = l
	return l
}

// auditEvents are 130 events a second apart from auditT0: every tenth
// failed, users alternating alice and bob, keys under logs/ and img/.
func auditEvents() []audit.Event {
	var es []audit.Event
	for i := range 130 {
		e := audit.Event{Time: auditT0.Add(time.Duration(i) * time.Second), Source: audit.SourceS3, Op: "PutObject", Status: 200,
			Bucket: "photos", Key: fmt.Sprintf("img/%03d.jpg", i), User: "alice", AccessKey: "AKALICE", SourceIP: "10.0.0.1", Duration: 1500 * time.Microsecond}
		if i%2 == 1 {
			e.User, e.AccessKey, e.SourceIP, e.Op = "bob", "AKBOB", "10.0.0.2", "GetObject"
		}
		if i%10 == 0 {
			e.Status, e.Code, e.Key = 403, "AccessDenied", fmt.Sprintf("logs/%03d", i)
		}
		es = append(es, e)
	}
	return es
}

var auditT0 = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

var auditRowRE = regexp.MustCompile(`<tr data-id="(\d+)"`)

// auditIDs returns the event IDs of the rows of an Audit page, in order.
func auditIDs(page string) []int {
	var ids []int
	for _, m := range auditRowRE.FindAllStringSubmatch(page, -1) {
		var n int
		fmt.Sscan(m[1], &n)
		ids = append(ids, n)
	}
	return ids
}

// wantIDs returns the IDs (index+1) of events i for which keep is true,
// newest first.
func wantIDs(events []audit.Event, keep func(i int, e audit.Event) bool) []int {
	var ids []int
	for i := len(events) - 1; i >= 0; i-- {
		if keep(i, events[i]) {
			ids = append(ids, i+1)
		}
	}
	return ids
}

func TestAuditPageFilters(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, 1)
	events := auditEvents()
	withAudit(t, f, events)
	id, _ := f.signIn(t, testRootKey, testRootSecret)
	for _, tc := range []struct {
		name  string
		query url.Values
		keep  func(i int, e audit.Event) bool
	}{
		{"all, first page", nil, func(i int, _ audit.Event) bool { return i >= 130-auditPageSize }},
		{"user", url.Values{"user": {"bob"}}, func(i int, e audit.Event) bool { return e.User == "bob" && i >= 130-2*auditPageSize }},
		{"access key and failed", url.Values{"accesskey": {"AKALICE"}, "outcome": {"failed"}}, func(i int, e audit.Event) bool { return e.AccessKey == "AKALICE" && e.Status >= 400 }},
		{"success under a prefix", url.Values{"bucket": {"photos"}, "prefix": {"img/00"}, "outcome": {"success"}}, func(i int, e audit.Event) bool { return i < 10 && e.Status < 400 }},
		{"op and source IP", url.Values{"op": {"GetObject"}, "sourceip": {"10.0.0.2"}, "since": {"2026-11-20T12:01"}, "until": {"2026-11-20T12:01:10"}},
			func(i int, e audit.Event) bool { return e.Op == "GetObject" && i >= 60 && i < 70 }},
		{"source admin", url.Values{"source": {"admin"}}, func(int, audit.Event) bool { return false }},
		{"last hour at the fixture's clock", url.Values{"last": {"1h"}}, func(int, audit.Event) bool { return false }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, page := f.get(t, id, "/audit?"+tc.query.Encode())
			if code != http.StatusOK {
				t.Fatalf("status %d\n%s", code, page)
			}
			got, want := auditIDs(page), wantIDs(events, tc.keep)
			if !slices.Equal(got, want) {
				t.Errorf("rows %v, want %v", got, want)
			}
			if len(want) == 0 && !strings.Contains(page, `id="no-events"`) {
				t.Error("no rows and no 'No events match'")
			}
		})
	}
	for _, bad := range []string{"outcome=maybe", "since=yesterday", "last=forever", "since=2026-11-20T12:00&until=2026-11-20T11:00", "before=-3", "source=ftp"} {
		if code, page := f.get(t, id, "/audit?"+bad); code != http.StatusBadRequest || !strings.Contains(page, `id="error"`) {
			t.Errorf("GET /audit?%s: %d, want 400 with the message beside the form", bad, code)
		}
	}
}

// TestAuditPagePaging pages through a filtered set with the Older link:
// every event once, newest first, and the cursor is an event ID (a
// keyset), so new events do not shift the pages.
func TestAuditPagePaging(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, 1)
	events := auditEvents()
	l := withAudit(t, f, events)
	id, _ := f.signIn(t, testRootKey, testRootSecret)
	olderRE := regexp.MustCompile(`<a href="([^"]+)" id="older">`)
	path := "/audit?" + url.Values{"outcome": {"success"}}.Encode()
	var got []int
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("more pages than events")
		}
		code, page := f.get(t, id, path)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d", path, code)
		}
		got = append(got, auditIDs(page)...)
		if pages == 0 { // an event arriving between pages is not on the next ones
			l.Record(audit.Event{Time: auditT0.Add(time.Hour), Source: audit.SourceS3, Op: "PutObject", Status: 200, User: "carol"})
		} else if !strings.Contains(page, `id="first"`) {
			t.Errorf("page %d has no link to the newest events", pages+1)
		}
		m := olderRE.FindStringSubmatch(page)
		if m == nil {
			break
		}
		path = html.UnescapeString(m[1])
		if !strings.Contains(path, "outcome=success") || !strings.Contains(path, "before=") {
			t.Fatalf("older link %q does not keep the filter and a cursor", path)
		}
	}
	want := wantIDs(events, func(_ int, e audit.Event) bool { return e.Status < 400 })
	if !slices.Equal(got, want) {
		t.Errorf("paged through %d events %v, want %d %v", len(got), got, len(want), want)
	}
}

// TestAuditExport checks that the export streams the filtered set as
// JSON Lines, oldest first, whatever the page's cursor, as a download.
func TestAuditExport(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, 1)
	events := auditEvents()
	withAudit(t, f, events)
	id, _ := f.signIn(t, testRootKey, testRootSecret)
	q := url.Values{"user": {"alice"}, "outcome": {"failed"}, "before": {"100"}}
	resp := f.do(t, request{method: "GET", path: "/audit/export?" + q.Encode(), cookie: id})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("export: %d %s", resp.StatusCode, body(t, resp))
	}
	if ct, cd := resp.Header.Get("Content-Type"), resp.Header.Get("Content-Disposition"); ct != "application/x-ndjson" || !strings.HasPrefix(cd, `attachment; filename="coffer-audit-`) {
		t.Errorf("Content-Type %q, Content-Disposition %q", ct, cd)
	}
	var got []int
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var e audit.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if e.User != "alice" || e.Status < 400 {
			t.Errorf("exported %+v, outside the filter", e)
		}
		got = append(got, int(e.ID))
	}
	want := wantIDs(events, func(_ int, e audit.Event) bool { return e.User == "alice" && e.Status >= 400 })
	slices.Reverse(want)
	if !slices.Equal(got, want) {
		t.Errorf("exported IDs %v, want %v (oldest first, all of them)", got, want)
	}
	// The page links to the export of its filter.
	_, page := f.get(t, id, "/audit?user=alice&outcome=failed")
	if !strings.Contains(page, `href="/audit/export?outcome=failed&amp;user=alice"`) {
		t.Errorf("the page's export link is missing or not the filter's")
	}
}

// TestAuditAuthorization checks that the page and the export need
// admin:GetAuditLog, as the admin API's audit endpoints do, and that
// without a session they lead to the sign-in page.
func TestAuditAuthorization(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, 1)
	withAudit(t, f, auditEvents())
	if err := f.iam.PutPolicy(t.Context(), "audit-reader", []byte(auditPolicy)); err != nil {
		t.Fatal(err)
	}
	f.user(t, "auditor", "auditor-password", "audit-reader")
	f.user(t, "admin", "admin-password", "admin")
	f.user(t, "writer", "writer-password", "readwrite")
	for _, tc := range []struct {
		user, password string
		want           int
	}{
		{"auditor", "auditor-password", 200},
		{"admin", "admin-password", 200},
		{"writer", "writer-password", 403},
	} {
		id, _ := f.signIn(t, tc.user, tc.password)
		for _, p := range []string{"/audit", "/audit/export"} {
			if code, _ := f.get(t, id, p); code != tc.want {
				t.Errorf("%s GET %s: %d, want %d", tc.user, p, code, tc.want)
			}
		}
	}
	for _, p := range []string{"/audit", "/audit/export"} {
		resp := f.do(t, request{method: "GET", path: p})
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login" {
			t.Errorf("GET %s without a session: %d to %q, want 303 to /login", p, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	// Reading changes nothing, so there is no POST to forge.
	id, csrf := f.signIn(t, testRootKey, testRootSecret)
	for _, p := range []string{"/audit", "/audit/export"} {
		if resp := f.post(t, id, csrf, p, nil); resp.StatusCode != http.StatusNotFound {
			t.Errorf("POST %s: %d, want 404", p, resp.StatusCode)
		}
	}
}

// TestAuditOff checks the page of a server without an audit log.
func TestAuditOff(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, 1)
	id, _ := f.signIn(t, testRootKey, testRootSecret)
	if code, page := f.get(t, id, "/audit"); code != 200 || !strings.Contains(page, `id="audit-off"`) {
		t.Errorf("GET /audit without an audit log: %d", code)
	}
	if code, _ := f.get(t, id, "/audit/export"); code != http.StatusNotFound {
		t.Errorf("GET /audit/export without an audit log: %d, want 404", code)
	}
}
