package policy

import (
	"slices"
	"testing"
)

// TestBind checks Users and Bind: an unbound policy matches users by
// name; a bound one only the user of the name with the ID it was bound
// to ("" included: a user from before IDs), and a name the bindings lack
// matches nobody. Anonymous, root and "*" entries are unaffected.
func TestBind(t *testing.T) {
	const d = `{"Version":"2012-10-17","Statement":[
		{"Effect":"Deny","Principal":{"AWS":["arn:aws:iam::123456789012:user/ops/bob","arn:aws:iam::123456789012:user/carol"]},"Action":"s3:DeleteObject","Resource":"arn:aws:s3:::b/*"},
		{"Effect":"Allow","Principal":{"AWS":["arn:aws:iam::123456789012:user/alice","arn:aws:iam::123456789012:user/bob","123456789012"]},"Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"},
		{"Effect":"Allow","Principal":"*","Action":"s3:ListBucket","Resource":"arn:aws:s3:::b"}]}`
	if got := mustBucket(t, "b", d).Users(); !slices.Equal(got, []string{"bob", "carol", "alice"}) {
		t.Errorf("Users() = %q", got)
	}
	if got := mustBucket(t, "b", `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"}]}`).Users(); got != nil {
		t.Errorf("Users() of a policy naming no user = %q", got)
	}
	as := func(name, id string) func(*Context) {
		return func(c *Context) { c.Username, c.Principal = name, Principal{User: name, UserID: id} }
	}
	unbound := mustBucket(t, "b", d)
	bound := mustBucket(t, "b", d)
	bound.Bind(map[string]string{"alice": "a1", "bob": "", "carol": "c1"})
	partial := mustBucket(t, "b", d)
	partial.Bind(map[string]string{"alice": "a1"})
	allows := mustBucket(t, "b", d)
	allows.BindAllows(map[string]string{"alice": "", "bob": "", "carol": ""})
	for _, tc := range []struct {
		name string
		p    *Policy
		c    Context
		want Decision
	}{
		{"unbound matches by name", unbound, req(getObj, objARN, as("alice", "other")), Allow},
		{"unbound deny by name", unbound, req("s3:DeleteObject", objARN, as("carol", "x")), Deny},
		{"bound to the ID", bound, req(getObj, objARN, as("alice", "a1")), Allow},
		{"bound, another user of the name", bound, req(getObj, objARN, as("alice", "a2")), NotApplicable},
		{"bound, user from before IDs", bound, req(getObj, objARN, as("bob", "")), Allow},
		{"bound to before IDs, a user created since", bound, req(getObj, objARN, as("bob", "b2")), NotApplicable},
		{"bound deny applies to its user", bound, req("s3:DeleteObject", objARN, as("carol", "c1")), Deny},
		{"bound deny spares another of the name", bound, req("s3:DeleteObject", objARN, as("carol", "c2")), NotApplicable},
		{"name the bindings lack matches nobody", partial, req(getObj, objARN, as("bob", "")), NotApplicable},
		{"bound: root through the account's Allow", bound, req(getObj, objARN, asRoot), Allow},
		{"bound: anyone still anyone", bound, req(list, bktARN, anonymous), Allow},
		{"allows bound: Allow only its user", allows, req(getObj, objARN, as("alice", "a9")), NotApplicable},
		{"allows bound: Allow its user", allows, req(getObj, objARN, as("alice", "")), Allow},
		{"allows bound: Deny by name", allows, req("s3:DeleteObject", objARN, as("carol", "c9")), Deny},
	} {
		if got := tc.p.Evaluate(&tc.c); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
