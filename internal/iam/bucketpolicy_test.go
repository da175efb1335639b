package iam

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

const erinPolicy = `{"Version":"2012-10-17","Statement":[
	{"Effect":"Allow","Principal":{"AWS":["arn:aws:iam::000000000000:user/erin","arn:aws:iam::000000000000:user/ops/frank"]},"Action":"s3:GetObject","Resource":"arn:aws:s3:::site/*"}]}`

// setBucketPolicy stores doc as bucket's policy as PutBucketPolicy does:
// bound, then refreshed.
func (f *fixture) setBucketPolicy(bucket, doc string) {
	f.t.Helper()
	stored, _, err := f.m.BindBucketPolicy(context.Background(), bucket, []byte(doc))
	if err != nil {
		f.t.Fatalf("BindBucketPolicy: %v", err)
	}
	f.setStoredPolicy(bucket, string(stored))
}

// setStoredPolicy stores bytes as bucket's policy as they are.
func (f *fixture) setStoredPolicy(bucket, stored string) {
	f.t.Helper()
	f.store.setPolicy(bucket, stored)
	if err := f.m.RefreshBucketPolicy(context.Background(), bucket); err != nil {
		f.t.Fatal(err)
	}
}

// TestBoundBucketPolicy checks the stored form of a bucket policy that
// names users: bound to the users that had the names when it was set, so a
// user deleted and created again is not the one it meant, in requests and
// in ListBuckets, for an Allow and for a Deny; a document that names no
// user is stored as given.
func TestBoundBucketPolicy(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	erin, frank := f.user("erin"), f.user("frank")

	if _, _, err := f.m.BindBucketPolicy(ctx, "site", []byte(strings.ReplaceAll(erinPolicy, "ops/frank", "gina"))); !errors.Is(err, ErrPolicy) || !strings.Contains(err.Error(), `Invalid principal in policy: there is no user "gina"`) {
		t.Fatalf("a policy naming a user that does not exist: %v", err)
	}
	plain := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::site/*"}]}`
	if stored, public, err := f.m.BindBucketPolicy(ctx, "site", []byte(plain)); err != nil || !public || string(stored) != plain {
		t.Fatalf("a policy naming no user is stored as %q, %v, %v; want it as given", stored, public, err)
	}

	stored, public, err := f.m.BindBucketPolicy(ctx, "site", []byte(erinPolicy))
	if err != nil || public || stored[0] != boundPolicyMark {
		t.Fatalf("BindBucketPolicy = %q, %v, %v", stored, public, err)
	}
	if doc, err := f.m.BucketPolicyDocument(stored); err != nil || string(doc) != erinPolicy {
		t.Fatalf("BucketPolicyDocument = %q, %v; want the document as given", doc, err)
	}
	f.setStoredPolicy("site", string(stored))
	if !f.allowed(erin.AccessKey, GetObject, "site", "k") || !f.allowed(frank.AccessKey, GetObject, "site", "k") {
		t.Fatal("the bound policy does not let in the users it names")
	}
	firstErin := f.m.CanonicalID(f.m.Principal(erin.AccessKey))
	if err := f.m.DeleteUser(ctx, "erin"); err != nil {
		t.Fatal(err)
	}
	erin = f.user("erin")
	if f.allowed(erin.AccessKey, GetObject, "site", "k") || f.m.CanSeeBucket(f.m.Principal(erin.AccessKey), "site") {
		t.Fatal("a re-created erin gets what the policy gave the first one")
	}
	f.open() // loaded at start, bound the same
	if f.allowed(erin.AccessKey, GetObject, "site", "k") || !f.allowed(frank.AccessKey, GetObject, "site", "k") {
		t.Fatal("after a restart the bound policy matches otherwise")
	}
	if err := f.m.ReloadBucketPolicies(ctx); err != nil {
		t.Fatal(err)
	}
	if f.allowed(erin.AccessKey, GetObject, "site", "k") || !f.allowed(frank.AccessKey, GetObject, "site", "k") {
		t.Fatal("after a reload the bound policy matches otherwise")
	}

	// GetBucketPolicy shows the deleted erin by the ID she had, as AWS
	// shows a deleted principal, and that document cannot be put back.
	doc, err := f.m.BucketPolicyDocument(stored)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Statement []struct{ Principal struct{ AWS []string } }
	}
	if err := json.Unmarshal(doc, &got); err != nil || len(got.Statement) != 1 {
		t.Fatalf("the document with a deleted user: %s, %v", doc, err)
	}
	if aws := got.Statement[0].Principal.AWS; len(aws) != 2 || aws[0] != firstErin || aws[1] != "arn:aws:iam::000000000000:user/ops/frank" {
		t.Errorf("principals shown with a deleted user: %q; want the first erin's ID %s, then frank's ARN", aws, firstErin)
	}
	if _, _, err := f.m.BindBucketPolicy(ctx, "site", doc); !errors.Is(err, ErrPolicy) {
		t.Errorf("the document with a deleted user's ID was accepted back: %v", err)
	}

	// A Deny is bound alike: it shuts out the frank it named, not a
	// frank created since.
	if err := f.m.AttachPolicy(ctx, "readwrite", Target{User: "frank"}); err != nil {
		t.Fatal(err)
	}
	f.setBucketPolicy("site", `{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Principal":{"AWS":"arn:aws:iam::000000000000:user/frank"},"Action":"s3:*","Resource":"arn:aws:s3:::site/*"}]}`)
	if f.allowed(frank.AccessKey, GetObject, "site", "k") {
		t.Fatal("the Deny does not shut out frank")
	}
	if err := f.m.DeleteUser(ctx, "frank"); err != nil {
		t.Fatal(err)
	}
	frank = f.user("frank", "readwrite")
	if !f.allowed(frank.AccessKey, GetObject, "site", "k") {
		t.Fatal("a Deny of the first frank shuts out the second")
	}
}

// TestLegacyBucketPolicy: a policy stored before policies were bound
// applies to the users created before users had IDs, never to a user
// created since under one of their names; stored bindings that do not
// name exactly the document's users are damage, and the bucket fails
// closed.
func TestLegacyBucketPolicy(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	erin, frank := f.user("erin"), f.user("frank")
	// erin and frank as a Coffer from before user IDs stored them.
	var doc map[string]any
	if err := json.Unmarshal(f.store.state, &doc); err != nil {
		t.Fatal(err)
	}
	for _, u := range doc["users"].(map[string]any) {
		delete(u.(map[string]any), "id")
	}
	var err error
	if f.store.state, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	f.open()
	f.setStoredPolicy("site", erinPolicy)
	if !f.allowed(erin.AccessKey, GetObject, "site", "k") || !f.allowed(frank.AccessKey, GetObject, "site", "k") {
		t.Fatal("a policy stored unbound does not let in the users from before IDs it names")
	}
	if err := f.m.DeleteUser(ctx, "erin"); err != nil {
		t.Fatal(err)
	}
	erin = f.user("erin")
	if f.allowed(erin.AccessKey, GetObject, "site", "k") {
		t.Fatal("a policy stored unbound lets in a user created since under a name it names")
	}
	// GetBucketPolicy shows that erin by the ID the first one had, and
	// the document cannot be put back as it is.
	shown, err := f.m.BucketPolicyDocument([]byte(erinPolicy))
	if err != nil || !bytes.Contains(shown, []byte(`"`+canonicalID("user:erin")+`"`)) || !bytes.Contains(shown, []byte("user/ops/frank")) {
		t.Fatalf("an unbound policy naming a re-created user is shown as %s, %v", shown, err)
	}
	if _, _, err := f.m.BindBucketPolicy(ctx, "site", shown); !errors.Is(err, ErrPolicy) {
		t.Errorf("the shown document was accepted back: %v", err)
	}
	// Set again, it names the erin there is now.
	f.setBucketPolicy("site", erinPolicy)
	if !f.allowed(erin.AccessKey, GetObject, "site", "k") || !f.allowed(frank.AccessKey, GetObject, "site", "k") {
		t.Fatal("the policy set again does not let in the users it names")
	}

	// Its Deny statements keep matching by name: a user created since
	// under a name one names is denied too (binding errs towards denying).
	if err := f.m.AttachPolicy(ctx, "readwrite", Target{User: "erin"}); err != nil {
		t.Fatal(err)
	}
	mallory := f.user("mallory", "readwrite")
	denyDoc := `{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Principal":{"AWS":["arn:aws:iam::000000000000:user/erin","arn:aws:iam::000000000000:user/mallory"]},"Action":"s3:*","Resource":"arn:aws:s3:::site/*"}]}`
	f.setStoredPolicy("site", denyDoc)
	if f.allowed(erin.AccessKey, GetObject, "site", "k") || f.allowed(mallory.AccessKey, GetObject, "site", "k") {
		t.Fatal("a Deny stored unbound stops applying to users created since under its names")
	}
	if shown, err := f.m.BucketPolicyDocument([]byte(denyDoc)); err != nil || string(shown) != denyDoc {
		t.Errorf("an unbound Deny is shown as %s, %v; want as stored (it applies to the users of its names)", shown, err)
	}

	// frank may read through his own policy: a bucket whose policy is
	// damaged must deny him (deny-all), not drop the policy.
	if err := f.m.AttachPolicy(ctx, "readonly", Target{User: "frank"}); err != nil {
		t.Fatal(err)
	}
	for name, stored := range map[string][]byte{
		"bindings lack a user":    append([]byte{boundPolicyMark, 2, '{', '}'}, erinPolicy...),
		"bindings name another":   append([]byte{boundPolicyMark, 21}, append([]byte(`{"erin":"","gina":""}`), erinPolicy...)...),
		"bindings cut short":      []byte{boundPolicyMark, 40, '{'},
		"trailing after bindings": append([]byte{boundPolicyMark, 4, '{', '}', '{', '}'}, erinPolicy...),
	} {
		f.setStoredPolicy("site", erinPolicy)
		f.store.setPolicy("site", string(stored))
		if err := f.m.RefreshBucketPolicy(ctx, "site"); err == nil {
			t.Errorf("%s: the refresh succeeds", name)
		}
		if f.allowed(frank.AccessKey, GetObject, "site", "k") {
			t.Errorf("%s: the bucket does not fail closed", name)
		}
	}
}

// FuzzStoredBucketPolicy: splitting any stored bytes never panics, a
// policy bound by BindBucketPolicy splits back to its document exactly,
// and what parses is bound to exactly the users it names.
func FuzzStoredBucketPolicy(f *testing.F) {
	fx := newFixture(f)
	fx.user("erin")
	fx.user("frank")
	ctx := context.Background()
	f.Add([]byte(erinPolicy), true)
	f.Add([]byte(`{"Version":"2012-10-17","Statement":{"Effect":"Deny","Principal":{"AWS":"arn:aws:iam::000000000000:user/erin"},"Action":"s3:*","Resource":"arn:aws:s3:::site/*"}}`), true)
	f.Add([]byte{boundPolicyMark}, false)
	f.Add([]byte{boundPolicyMark, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, false)
	f.Add([]byte{boundPolicyMark, 2, '{', '}', '{', '}'}, false)
	// Another store whose erin and frank are other users of the names:
	// every user a policy bound in fx names is a deleted one there.
	other := newFixture(f)
	other.user("erin")
	other.user("frank")
	f.Fuzz(func(t *testing.T, b []byte, bind bool) {
		if bind {
			stored, _, err := fx.m.BindBucketPolicy(ctx, "site", b)
			if err != nil {
				return
			}
			doc, _, err := splitStoredPolicy(stored)
			if err != nil || !bytes.Equal(doc, b) {
				t.Fatalf("bound %q, split back to %q, %v", b, doc, err)
			}
			if _, err := parseStoredBucketPolicy("site", stored); err != nil {
				t.Fatalf("a bound policy does not parse back: %v", err)
			}
			if shown, err := fx.m.BucketPolicyDocument(stored); err != nil || !bytes.Equal(shown, b) {
				t.Fatalf("BucketPolicyDocument with its users = %q, %v; want the document", shown, err)
			}
			for _, s := range [][]byte{stored, b} { // bound, and as if stored before binding
				shown, err := other.m.BucketPolicyDocument(s)
				if err != nil {
					t.Fatalf("BucketPolicyDocument with its users gone: %v", err)
				}
				if !bytes.Equal(shown, b) {
					if _, _, err := other.m.BindBucketPolicy(ctx, "site", shown); err == nil {
						t.Fatalf("a document showing a deleted user is accepted back: %s", shown)
					}
				}
			}
			return
		}
		doc, ids, err := splitStoredPolicy(b)
		if err != nil {
			return
		}
		if ids == nil && !bytes.Equal(doc, b) {
			t.Fatalf("unbound form split to %q", doc)
		}
		if _, err := parseStoredBucketPolicy("site", b); err != nil && !errors.Is(err, ErrPolicy) {
			t.Fatalf("parse error %v does not wrap ErrPolicy", err)
		}
		_, _ = fx.m.BucketPolicyDocument(b)
	})
}
