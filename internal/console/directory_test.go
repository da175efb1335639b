package console

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/coffer-s3/coffer/internal/iam"
)

// readUsersPolicy lets a user look at users and policies, change nothing.
const readUsersPolicy = `{"Version":"2012-10-17","Statement":[
 {"Effect":"Allow","Action":["admin:ListUsers","admin:GetUser","admin:ListAccessKeys","admin:ListPolicies","admin:GetPolicy"],"Resource":"*"}]}`

// post posts form (with the session's CSRF token) and returns the
// response.
func (f *fixture) post(t *testing.T, id, csrf, path string, form url.Values) *http.Response {
	t.Helper()
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf", csrf)
	return f.do(t, request{method: "POST", path: path, cookie: id, form: form})
}

func (f *fixture) get(t *testing.T, id, path string) (int, string) {
	t.Helper()
	resp := f.do(t, request{method: "GET", path: path, cookie: id})
	return resp.StatusCode, body(t, resp)
}

// TestDirectoryAuthorization checks that every page and change is
// decided by iam with the admin action the admin API uses: an admin may
// do everything, a reader sees but changes nothing (and sees no forms),
// a user without admin rights is refused.
func TestDirectoryAuthorization(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, 1)
	ctx := t.Context()
	if err := f.iam.PutPolicy(ctx, "read-users", []byte(readUsersPolicy)); err != nil {
		t.Fatal(err)
	}
	f.user(t, "boss", "boss-password", "admin")
	f.user(t, "reader", "reader-password", "read-users")
	f.user(t, "nobody", "nobody-password", "readwrite")
	if _, err := f.iam.CreateUser(ctx, "target"); err != nil {
		t.Fatal(err)
	}

	pages := []string{"/users", "/users/target", "/groups", "/policies", "/policies/readonly", "/simulator"}
	for _, tc := range []struct {
		user, password string
		status         map[string]int // by page; missing means 200
		forms          bool           // the create forms show
	}{
		{"boss", "boss-password", nil, true},
		{"reader", "reader-password", map[string]int{"/groups": 403, "/simulator": 403}, false},
		{"nobody", "nobody-password", map[string]int{"/users": 403, "/users/target": 403, "/groups": 403, "/policies": 403, "/policies/readonly": 403, "/simulator": 403}, false},
	} {
		id, csrf := f.signIn(t, tc.user, tc.password)
		for _, p := range pages {
			want := 200
			if s, ok := tc.status[p]; ok {
				want = s
			}
			code, b := f.get(t, id, p)
			if code != want {
				t.Errorf("%s GET %s: %d, want %d", tc.user, p, code, want)
				continue
			}
			if code == 200 && p == "/users" && strings.Contains(b, `id="create-user"`) != tc.forms {
				t.Errorf("%s GET /users: create form shown = %v, want %v", tc.user, !tc.forms, tc.forms)
			}
			if code == 200 && p == "/users/target" && strings.Contains(b, `id="create-key"`) != tc.forms {
				t.Errorf("%s GET /users/target: key form shown = %v, want %v", tc.user, !tc.forms, tc.forms)
			}
		}
		if tc.user == "boss" {
			continue
		}
		// Changes are refused and change nothing, whatever the page showed.
		for _, c := range []struct {
			path string
			form url.Values
		}{
			{"/users", url.Values{"name": {"mallory"}}},
			{"/users/target/disable", nil},
			{"/users/target/delete", nil},
			{"/users/target/password", url.Values{"password": {"long enough pw"}}},
			{"/users/target/keys", nil},
			{"/users/target/attach", url.Values{"policy": {"admin"}}},
			{"/groups", url.Values{"name": {"g"}}},
			{"/policies", url.Values{"name": {"p"}, "document": {policyTemplate}}},
		} {
			resp := f.post(t, id, csrf, c.path, c.form)
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("%s POST %s: %d, want 403", tc.user, c.path, resp.StatusCode)
			}
		}
	}
	u, err := f.iam.User(ctx, "target")
	if err != nil || u.Disabled || u.Password || len(u.Policies) != 0 {
		t.Errorf("target after refused changes = %+v, %v", u, err)
	}
	if _, err := f.iam.User(ctx, "mallory"); err == nil {
		t.Error("a refused create made user mallory")
	}
	if ks, _ := f.iam.Keys(ctx, "target"); len(ks) != 1 {
		t.Errorf("target has %d keys, want 1", len(ks))
	}
}

// TestDirectoryCSRF checks that changes need the session's token and the
// console's origin.
func TestDirectoryCSRF(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, 1)
	id, csrf := f.signIn(t, testRootKey, testRootSecret)
	for _, rq := range []request{
		{method: "POST", path: "/users", cookie: id, form: url.Values{"name": {"eve"}}},
		{method: "POST", path: "/users", cookie: id, form: url.Values{"name": {"eve"}, "csrf": {"wrong"}}},
		{method: "POST", path: "/users", cookie: id, form: url.Values{"name": {"eve"}, "csrf": {csrf}}, origin: "http://evil.test"},
	} {
		if resp := f.do(t, rq); resp.StatusCode != http.StatusForbidden {
			t.Errorf("POST /users %+v: %d, want 403", rq, resp.StatusCode)
		}
	}
	if _, err := f.iam.User(t.Context(), "eve"); err == nil {
		t.Error("a forged request made user eve")
	}
}

var (
	accessKeyRE = regexp.MustCompile(`<code id="access-key">([A-Z0-9]+)</code>`)
	secretKeyRE = regexp.MustCompile(`<code id="secret-key">([^<]+)</code>`)
)

// TestUsersAndKeys walks through what an administrator does: create a
// user (its secret shown once), set its password, attach a policy, make
// a scoped key, rotate it (old one disabled), delete it.
func TestUsersAndKeys(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, 1)
	ctx := t.Context()
	id, csrf := f.signIn(t, testRootKey, testRootSecret)

	resp := f.post(t, id, csrf, "/users", url.Values{"name": {"alice"}})
	b := body(t, resp)
	ak, sk := accessKeyRE.FindStringSubmatch(b), secretKeyRE.FindStringSubmatch(b)
	if resp.StatusCode != 200 || ak == nil || sk == nil {
		t.Fatalf("create user: %d\n%s", resp.StatusCode, b)
	}
	sk[1] = html.UnescapeString(sk[1]) // base64's + is &#43; in HTML
	if got, err := f.iam.SecretKey(ctx, ak[1]); err != nil || got != sk[1] {
		t.Errorf("the secret shown is not the key's: %v", err)
	}
	_, page := f.get(t, id, "/users/alice")
	if strings.Contains(html.UnescapeString(page), sk[1]) {
		t.Error("the user's page shows the secret again")
	}
	if want := `<code id="canonical-id">` + f.canonicalID(t, "alice") + `</code>`; !strings.Contains(page, want) {
		t.Errorf("the user's page does not show the canonical ID (%s)", want)
	}
	resp = f.post(t, id, csrf, "/users", url.Values{"name": {"bad name!"}})
	if b := body(t, resp); resp.StatusCode != 400 || !strings.Contains(b, `id="error"`) || !strings.Contains(b, "may contain only letters") {
		t.Errorf("create bad name: %d\n%s", resp.StatusCode, b)
	}

	if resp := f.post(t, id, csrf, "/users/alice/password", url.Values{"password": {"short"}}); resp.StatusCode != 400 {
		t.Errorf("short password: %d", resp.StatusCode)
	}
	if resp := f.post(t, id, csrf, "/users/alice/password", url.Values{"password": {"alice-password"}}); resp.StatusCode != 303 {
		t.Errorf("set password: %d", resp.StatusCode)
	}
	if _, err := f.iam.SignIn(ctx, "alice", "alice-password"); err != nil {
		t.Errorf("alice cannot sign in with the password set: %v", err)
	}
	if resp := f.post(t, id, csrf, "/users/alice/attach", url.Values{"policy": {"readwrite"}}); resp.StatusCode != 303 {
		t.Errorf("attach: %d", resp.StatusCode)
	}
	if u, _ := f.iam.User(ctx, "alice"); len(u.Policies) != 1 || u.Policies[0] != "readwrite" {
		t.Errorf("alice's policies = %v", u.Policies)
	}

	// A scope that does not parse is shown beside the form, naming the statement.
	resp = f.post(t, id, csrf, "/users/alice/keys", url.Values{"policy": {`{"Version":"2012-10-17","Statement":[{"Sid":"X","Effect":"Allow","Action":"s3:GetObjekt","Resource":"*"}]}`}})
	if b := body(t, resp); resp.StatusCode != 400 || !strings.Contains(b, `id="key-error"`) || !strings.Contains(b, `Statement 1 (&#34;X&#34;): unknown action`) {
		t.Errorf("bad scope: %d\n%s", resp.StatusCode, b)
	}
	scope := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::photos/*"}]}`
	resp = f.post(t, id, csrf, "/users/alice/keys", url.Values{"policy": {scope}, "description": {"thumbnailer"}, "expires": {"30"}})
	b = body(t, resp)
	scoped := accessKeyRE.FindStringSubmatch(b)
	if resp.StatusCode != 200 || scoped == nil || secretKeyRE.FindStringSubmatch(b) == nil {
		t.Fatalf("create key: %d\n%s", resp.StatusCode, b)
	}
	k, err := f.iam.Key(ctx, scoped[1])
	if err != nil || len(k.Policy) == 0 || k.Description != "thumbnailer" || k.Expires == nil {
		t.Errorf("created key = %+v, %v", k, err)
	}

	resp = f.post(t, id, csrf, "/keys/"+scoped[1]+"/rotate", nil)
	b = body(t, resp)
	rotated := accessKeyRE.FindStringSubmatch(b)
	if resp.StatusCode != 200 || rotated == nil || rotated[1] == scoped[1] {
		t.Fatalf("rotate: %d\n%s", resp.StatusCode, b)
	}
	if old, _ := f.iam.Key(ctx, scoped[1]); !old.Disabled {
		t.Error("the rotated key is not disabled")
	}
	if nk, _ := f.iam.Key(ctx, rotated[1]); string(nk.Policy) != string(k.Policy) || nk.Description != k.Description || nk.Disabled {
		t.Errorf("the new key = %+v, want the old one's scope and description", nk)
	}
	if resp := f.post(t, id, csrf, "/keys/"+scoped[1]+"/delete", nil); resp.StatusCode != 303 {
		t.Errorf("delete key: %d", resp.StatusCode)
	}
	if _, err := f.iam.Key(ctx, scoped[1]); err == nil {
		t.Error("the deleted key exists")
	}
	if resp := f.post(t, id, csrf, "/users/alice/disable", nil); resp.StatusCode != 303 {
		t.Errorf("disable: %d", resp.StatusCode)
	}
	if u, _ := f.iam.User(ctx, "alice"); !u.Disabled {
		t.Error("alice is not disabled")
	}
	if resp := f.post(t, id, csrf, "/users/alice/delete", nil); resp.StatusCode != 303 {
		t.Errorf("delete user: %d", resp.StatusCode)
	}
	if _, err := f.iam.User(ctx, "alice"); err == nil {
		t.Error("alice exists after delete")
	}
}

func TestGroupsAndPolicies(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, 1)
	ctx := t.Context()
	id, csrf := f.signIn(t, testRootKey, testRootSecret)
	if _, err := f.iam.CreateUser(ctx, "alice"); err != nil {
		t.Fatal(err)
	}

	// The editor shows a parse error inline, with the document kept.
	bad := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"*"},{"Sid":"Two","Effect":"Maybe","Action":"s3:GetObject","Resource":"*"}]}`
	resp := f.post(t, id, csrf, "/policies", url.Values{"name": {"photos"}, "document": {bad}})
	if b := body(t, resp); resp.StatusCode != 400 || !strings.Contains(b, `id="policy-error"`) || !strings.Contains(b, `Statement 2 (&#34;Two&#34;):`) ||
		!strings.Contains(b, `aria-invalid="true"`) || !strings.Contains(b, "Maybe") {
		t.Errorf("bad policy: %d\n%s", resp.StatusCode, b)
	}
	good := `{"Version":"2012-10-17","Statement":[{"Sid":"Read","Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::photos/*"}]}`
	if resp := f.post(t, id, csrf, "/policies", url.Values{"name": {"photos"}, "document": {good}}); resp.StatusCode != 303 {
		t.Fatalf("create policy: %d", resp.StatusCode)
	}
	if resp := f.post(t, id, csrf, "/policies", url.Values{"name": {"photos"}, "document": {good}}); resp.StatusCode != 400 {
		t.Errorf("create existing policy: %d, want 400", resp.StatusCode)
	}
	resp = f.post(t, id, csrf, "/policies/photos", url.Values{"document": {`{"Statement":[]}`}})
	if b := body(t, resp); resp.StatusCode != 400 || !strings.Contains(b, "Statement must not be empty") {
		t.Errorf("update to a bad document: %d\n%s", resp.StatusCode, b)
	}
	if p, _ := f.iam.Policy(ctx, "photos"); !strings.Contains(string(p.Document), `"Read"`) {
		t.Error("a refused update changed the policy")
	}
	if resp := f.post(t, id, csrf, "/policies/readonly", url.Values{"document": {good}}); resp.StatusCode != 400 {
		t.Errorf("update a built-in policy: %d, want 400", resp.StatusCode)
	}

	if resp := f.post(t, id, csrf, "/groups", url.Values{"name": {"team"}}); resp.StatusCode != 303 {
		t.Fatalf("create group: %d", resp.StatusCode)
	}
	if resp := f.post(t, id, csrf, "/groups/team/members", url.Values{"add": {"alice"}}); resp.StatusCode != 303 {
		t.Errorf("add member: %d", resp.StatusCode)
	}
	if resp := f.post(t, id, csrf, "/groups/team/attach", url.Values{"policy": {"photos"}}); resp.StatusCode != 303 {
		t.Errorf("attach to group: %d", resp.StatusCode)
	}
	if g, _ := f.iam.Group(ctx, "team"); len(g.Members) != 1 || len(g.Policies) != 1 {
		t.Errorf("group = %+v", g)
	}
	resp = f.post(t, id, csrf, "/policies/photos/delete", nil)
	if b := body(t, resp); resp.StatusCode != 409 || !strings.Contains(b, "detach it first") {
		t.Errorf("delete an attached policy: %d\n%s", resp.StatusCode, b)
	}
	if resp := f.post(t, id, csrf, "/groups/team/detach", url.Values{"policy": {"photos"}}); resp.StatusCode != 303 {
		t.Errorf("detach: %d", resp.StatusCode)
	}
	if resp := f.post(t, id, csrf, "/groups/team/members", url.Values{"remove": {"alice"}}); resp.StatusCode != 303 {
		t.Errorf("remove member: %d", resp.StatusCode)
	}
	if resp := f.post(t, id, csrf, "/policies/photos/delete", nil); resp.StatusCode != 303 {
		t.Errorf("delete policy: %d", resp.StatusCode)
	}
	if resp := f.post(t, id, csrf, "/groups/team/delete", nil); resp.StatusCode != 303 {
		t.Errorf("delete group: %d", resp.StatusCode)
	}
	if _, err := f.iam.Group(ctx, "team"); err == nil {
		t.Error("team exists after delete")
	}
}

// TestSimulatorPage checks that the page answers what iam.Simulate
// answers, with the deciding statement, for a user and a scoped key.
func TestSimulatorPage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, 1)
	ctx := t.Context()
	doc := `{"Version":"2012-10-17","Statement":[{"Sid":"OfficeRead","Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::photos/*","Condition":{"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}}]}`
	if err := f.iam.PutPolicy(ctx, "office", []byte(doc)); err != nil {
		t.Fatal(err)
	}
	f.user(t, "alice", "alice-password", "office")
	nk, err := f.iam.CreateKey(ctx, "alice", iam.KeyOptions{Policy: []byte(`{"Version":"2012-10-17","Statement":[{"Sid":"Thumbs","Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::photos/thumbs/*"}]}`)})
	if err != nil {
		t.Fatal(err)
	}
	id, _ := f.signIn(t, testRootKey, testRootSecret)
	for _, tc := range []struct {
		name   string
		q      url.Values
		status int
		want   []string
	}{
		{"form only", url.Values{}, 200, []string{`id="simulate"`, `<option>alice</option>`}},
		{"allowed", url.Values{"as": {"user"}, "user": {"alice"}, "action": {"s3:GetObject"}, "bucket": {"photos"}, "object": {"a.jpg"}, "sourceip": {"10.1.1.1"}}, 200,
			[]string{`data-allowed="true"`, `statement &#34;OfficeRead&#34;`, `policy &#34;office&#34; (attached to user alice)`}},
		{"denied outside", url.Values{"as": {"user"}, "user": {"alice"}, "action": {"s3:GetObject"}, "bucket": {"photos"}, "object": {"a.jpg"}, "sourceip": {"192.0.2.1"}}, 200,
			[]string{`data-allowed="false"`, `data-reason="no-allow"`}},
		{"key outside scope", url.Values{"as": {"key"}, "accesskey": {nk.AccessKey}, "action": {"s3:GetObject"}, "bucket": {"photos"}, "object": {"a.jpg"}, "context": {"aws:SourceIp=10.0.0.9\n"}}, 200,
			[]string{`data-allowed="false"`, `data-reason="outside-scope"`, "is narrower"}},
		{"no principal", url.Values{"action": {"s3:GetObject"}}, 400, []string{"Pick a user or enter an access key."}},
		{"bad ip", url.Values{"user": {"alice"}, "action": {"s3:GetObject"}, "sourceip": {"nope"}}, 400, []string{"is not an IP address"}},
		{"bad context", url.Values{"user": {"alice"}, "action": {"s3:GetObject"}, "context": {"nonsense"}}, 400, []string{"KEY=VALUE"}},
		{"unknown action", url.Values{"user": {"alice"}, "action": {"s3:Nope"}}, 400, []string{"Unknown action"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, b := f.get(t, id, "/simulator?"+tc.q.Encode())
			if code != tc.status {
				t.Errorf("status %d, want %d", code, tc.status)
			}
			for _, w := range tc.want {
				if !strings.Contains(b, w) {
					t.Errorf("page lacks %q:\n%s", w, b)
				}
			}
		})
	}
}
