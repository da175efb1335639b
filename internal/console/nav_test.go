package console

import (
	"regexp"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var navRE = regexp.MustCompile(`(?s)<nav aria-label="Main">(.*?)</nav>`)
var navLinkRE = regexp.MustCompile(`<a href="([^"]+)"`)

// navLinks returns the paths the page's navigation links to.
func navLinks(t *testing.T, page string) []string {
	t.Helper()
	m := navRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatal("the page has no navigation")
	}
	var links []string
	for _, l := range navLinkRE.FindAllStringSubmatch(m[1], -1) {
		links = append(links, l[1])
	}
	return links
}

// TestNavFollowsPolicies checks that the navigation shows a principal
// exactly the pages it may use: each page linked answers 200, and each
// page left out answers 403 when asked for directly.
func TestNavFollowsPolicies(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, 1)
	withAudit(t, f, nil)
	withMonitor(f)
	ctx := t.Context()
	for name, doc := range map[string]string{"read-users": readUsersPolicy, "auditor": auditPolicy} {
		if err := f.iam.PutPolicy(ctx, name, []byte(doc)); err != nil {
			t.Fatal(err)
		}
	}
	f.user(t, "boss", "boss-password", "admin")
	f.user(t, "reader", "reader-password", "read-users")
	f.user(t, "auditor", "auditor-password", "auditor")
	f.user(t, "plain", "plain-password", "readwrite")

	all := []string{"/buckets", "/objects", "/users", "/groups", "/policies", "/simulator", "/audit", "/monitoring"}
	for _, tc := range []struct {
		user, password string
		want           []string
	}{
		{testRootKey, testRootSecret, all},
		{"boss", "boss-password", all},
		{"reader", "reader-password", []string{"/buckets", "/objects", "/users", "/policies"}},
		{"auditor", "auditor-password", []string{"/buckets", "/objects", "/audit"}},
		{"plain", "plain-password", []string{"/buckets", "/objects"}},
	} {
		t.Run(tc.user, func(t *testing.T) {
			id, _ := f.signIn(t, tc.user, tc.password)
			_, page := f.get(t, id, "/buckets")
			if diff := cmp.Diff(tc.want, navLinks(t, page)); diff != "" {
				t.Errorf("navigation of %s (-want +got):\n%s", tc.user, diff)
			}
			for _, p := range all {
				want := 403
				if slices.Contains(tc.want, p) {
					want = 200
				}
				if code, _ := f.get(t, id, p); code != want {
					t.Errorf("%s GET %s: %d, want %d", tc.user, p, code, want)
				}
			}
		})
	}
}
