package server

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/coffer-s3/coffer/internal/adminapi"
	"github.com/coffer-s3/coffer/internal/audit"
)

// TestAdminAuditor checks which admin requests go to the audit log, and
// how.
func TestAdminAuditor(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 26, 10, 4, 5, 0, time.UTC)
	listUsers := adminapi.Record{Op: "ListUsers", Method: "GET", Target: "users", Status: 200,
		AccessKeyID: "ROOTKEY", Root: true, RemoteAddr: "192.0.2.9:4242", RequestID: "R1", Start: start}
	with := func(f func(*adminapi.Record)) adminapi.Record { r := listUsers; f(&r); return r }
	for _, tc := range []struct {
		name string
		rec  adminapi.Record
		want *audit.Event // nil: not recorded
	}{
		{name: "a read", rec: listUsers},
		{name: "a read refused", rec: with(func(r *adminapi.Record) {
			r.Status, r.Code, r.AccessKeyID, r.Root, r.User = 403, "AccessDenied", "USERKEY", false, "bob"
		}),
			want: &audit.Event{Time: start, Source: audit.SourceAdmin, Op: "ListUsers", Status: 403, Code: "AccessDenied", Target: "users",
				User: "bob", AccessKey: "USERKEY", SourceIP: "192.0.2.9", RequestID: "R1", Untrusted: true}},
		{name: "a read with a bad parameter", rec: with(func(r *adminapi.Record) { r.Status, r.Code = 400, "InvalidInput" })},
		// A malformed signature is a 400, and an authentication failure
		// all the same (it used to go unrecorded).
		{name: "a read with a malformed signature", rec: with(func(r *adminapi.Record) {
			r.Status, r.Code, r.AccessKeyID, r.Root, r.AuthFailed, r.ClaimedAccessKeyID = 400, "AuthorizationHeaderMalformed", "", false, true, "AKCLAIMED"
		}), want: &audit.Event{Time: start, Source: audit.SourceAdmin, Op: "ListUsers", Status: 400, Code: "AuthorizationHeaderMalformed",
			Target: "users", AccessKey: "AKCLAIMED", SourceIP: "192.0.2.9", RequestID: "R1", Untrusted: true}},
		{name: "a change", rec: with(func(r *adminapi.Record) { r.Op, r.Method = "CreateUser", "POST" }),
			want: &audit.Event{Time: start, Source: audit.SourceAdmin, Op: "CreateUser", Status: 200, Target: "users",
				User: "root", AccessKey: "ROOTKEY", SourceIP: "192.0.2.9", RequestID: "R1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l, err := audit.Open(audit.Config{Path: filepath.Join(t.TempDir(), "audit.db")})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := l.Close(); err != nil {
					t.Error(err)
				}
			})
			rec := tc.rec
			adminAuditor{l}.ObserveAdmin(&rec)
			if err := l.Flush(t.Context()); err != nil {
				t.Fatal(err)
			}
			p, err := l.Query(t.Context(), audit.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			var want []audit.Event
			if tc.want != nil {
				want = []audit.Event{*tc.want}
			}
			if diff := cmp.Diff(want, p.Events, cmpopts.IgnoreFields(audit.Event{}, "ID"), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("recorded mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
