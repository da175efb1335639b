package adminapi

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/coffer-s3/coffer/internal/audit"
	"github.com/coffer-s3/coffer/internal/sigv4"
)

// TestAuditQueryErrors checks that the audit endpoints refuse what they
// cannot honour exactly, before reading the log.
func TestAuditQueryErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		path string
		msg  string
	}{
		{"/audit?usr=alice", `unknown query parameter "usr"`},
		{"/audit?user=a&user=b", `query parameter "user" given 2 times`},
		{"/audit?failed=maybe", `failed="maybe": want true or false`},
		{"/audit?limit=0", `limit="0": want 1 to 1000`},
		{"/audit?limit=1001", `limit="1001": want 1 to 1000`},
		{"/audit?before=-3", `before="-3"`},
		{"/audit?since=yesterday", `since="yesterday": want an RFC 3339 time`},
		{"/audit?since=2026-11-24T10:00:00Z&until=2026-11-24T09:00:00Z", "until must be after since"},
		{"/audit/export?limit=5", `unknown query parameter "limit"`},
		{"/audit/export?before=5", `unknown query parameter "before"`},
	} {
		t.Run(tc.path, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			w := f.serve(signed(t, rootCred, "GET", BasePath+tc.path, ""))
			checkError(t, w, http.StatusBadRequest, CodeInvalidInput, tc.msg)
			if calls := f.be.Calls(); len(calls) != 0 {
				t.Errorf("the log was used: %v", calls)
			}
		})
	}
}

func TestAuditNotAvailable(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	h, err := New(Deps{IAM: f.be, Verifier: sigv4.NewVerifier(sigv4.Config{}, f.be), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	f.h = h
	for _, p := range []string{"/audit", "/audit/export"} {
		checkError(t, f.serve(signed(t, rootCred, "GET", BasePath+p, "")), http.StatusNotImplemented, CodeNotImplemented, "audit log is off")
	}
}

// TestAuditObserver checks what the Observer is told about admin
// requests: successes, refusals, bad signatures and unknown paths.
func TestAuditObserver(t *testing.T) {
	t.Parallel()
	badSig := sigv4.Credentials{AccessKeyID: "USERKEY", SecretKey: "wrong"}
	for _, tc := range []struct {
		name string
		r    func(t *testing.T) *http.Request
		want Record
	}{
		{
			name: "root creates a user",
			r: func(t *testing.T) *http.Request {
				return signed(t, rootCred, "POST", BasePath+"/users", `{"name":"alice"}`)
			},
			want: Record{Op: "CreateUser", Method: "POST", Target: "users", Status: 200, AccessKeyID: "ROOTKEY", Root: true,
				BytesIn: int64(len(`{"name":"alice"}`))},
		},
		{
			name: "a user without the action",
			r: func(t *testing.T) *http.Request {
				return signed(t, userCred, "POST", BasePath+"/users/bob/disable", "")
			},
			want: Record{Op: "DisableUser", Method: "POST", Target: "users/bob/disable", Status: 403, Code: CodeAccessDenied,
				AccessKeyID: "USERKEY", User: "bob"},
		},
		{
			name: "a bad signature",
			r:    func(t *testing.T) *http.Request { return signed(t, badSig, "DELETE", BasePath+"/users/bob", "") },
			want: Record{Op: "DeleteUser", Method: "DELETE", Target: "users/bob", Status: 403, Code: "SignatureDoesNotMatch",
				ClaimedAccessKeyID: "USERKEY", AuthFailed: true},
		},
		{
			name: "a malformed signature",
			r: func(t *testing.T) *http.Request {
				r := signed(t, rootCred, "GET", BasePath+"/users", "")
				r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=ROOTKEY/garbage")
				return r
			},
			want: Record{Op: "ListUsers", Method: "GET", Target: "users", Status: 400, Code: "AuthorizationHeaderMalformed", AuthFailed: true},
		},
		{
			name: "no such endpoint",
			r:    func(t *testing.T) *http.Request { return signed(t, rootCred, "POST", BasePath+"/frobnicate", "") },
			want: Record{Method: "POST", Target: "frobnicate", Status: 404, Code: CodeNoSuchRoute},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			r := tc.r(t)
			r.RemoteAddr = "192.0.2.9:4242"
			w := f.serve(r)
			recs := f.obs.records()
			if len(recs) != 1 {
				t.Fatalf("%d records, want 1", len(recs))
			}
			got := recs[0]
			want := tc.want
			want.RemoteAddr, want.RequestID = "192.0.2.9:4242", "REQ1"
			want.BytesOut = int64(w.Body.Len())
			if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(Record{}, "Start", "Duration")); diff != "" {
				t.Errorf("record (-want +got):\n%s", diff)
			}
			if got.Start.IsZero() || got.Duration < 0 || time.Since(got.Start) < got.Duration {
				t.Errorf("Start %v Duration %v", got.Start, got.Duration)
			}
		})
	}
}

// TestClientAudit checks the Client's audit methods against the Handler.
func TestClientAudit(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := newTestClient(t, f.h, rootCred)
	ctx := t.Context()
	since := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	p, err := c.AuditEvents(ctx, audit.Filter{Since: since, Bucket: "photos", KeyPrefix: "a b%", Failed: true, Before: 9, Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Events) != 1 || p.Events[0].ID != testEvent.ID || p.Next != 6 {
		t.Errorf("AuditEvents = %+v", p)
	}
	var buf bytes.Buffer
	if _, err := c.ExportAudit(ctx, audit.Filter{User: "alice", Limit: 5, Before: 2}, &buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"key":"a.jpg"`) || strings.Count(buf.String(), "\n") != 1 {
		t.Errorf("ExportAudit wrote %q", buf.String())
	}
	want := []string{
		"Flush()", "Query(since=2026-11-24T00:00:00Z, bucket=photos, prefix=a b%, failed=true, before=9, limit=3)",
		"Flush()", "Export(user=alice)", // an export has no page
	}
	if diff := cmp.Diff(want, f.be.Calls()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// FuzzAuditFilter feeds arbitrary query strings to the audit endpoints'
// parser: it never panics, and a filter it accepts survives the Client's
// encoding and a second parse unchanged.
func FuzzAuditFilter(f *testing.F) {
	for _, seed := range []string{
		"", "user=alice", "since=2026-11-24T00:00:00Z&until=2026-11-25T00:00:00.5%2B01:00",
		"prefix=a%25b_c%5C&bucket=photos&failed=true&limit=1000&before=7",
		"source=s3&op=PutObject&accessKey=AK&sourceIp=%3A%3A1", "user=a&user=b", "limit=0", "x=1", "failed=1&prefix=%00",
	} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	f.Fuzz(func(t *testing.T, raw string, export bool) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		flt, err := auditFilter(q, export)
		if err != nil {
			return
		}
		again, err := auditFilter(auditQuery(flt, export), export)
		if err != nil {
			t.Fatalf("re-parsing the Client's encoding of %+v: %v", flt, err)
		}
		if !again.Since.Equal(flt.Since) || !again.Until.Equal(flt.Until) {
			t.Fatalf("times changed: %+v -> %+v", flt, again)
		}
		again.Since, again.Until, flt.Since, flt.Until = time.Time{}, time.Time{}, time.Time{}, time.Time{}
		if again != flt {
			t.Fatalf("filter changed: %+v -> %+v", flt, again)
		}
	})
}
