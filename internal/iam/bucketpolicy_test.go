package iam

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

const erinPolicy = `{"Version":"2012-10-17","Statement":[
	{"Effect":"Allow","Principal":{"AWS":["arn:aws:iam::000000000000:user/erin","arn:aws:iam::000000000000:user/ops/frank"]},"Action":"s3:GetObject","Resource":"arn:aws:s3:::site/*"}]}`

// TestBoundBucketPolicy checks the stored form of a bucket policy that
// names users: bound to the users that had the names when it was set, so a
// user deleted and created again is not the one it meant, in requests and
// in ListBuckets; a policy stored before binding matches by name; a
// document that names no user is stored as given.
func TestBoundBucketPolicy(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	erin, frank := f.user("erin"), f.user("frank")

	if _, _, err := f.m.BindBucketPolicy("site", []byte(strings.ReplaceAll(erinPolicy, "ops/frank", "gina"))); !errors.Is(err, ErrPolicy) || !strings.Contains(err.Error(), `Invalid principal in policy: "arn:aws:iam::000000000000:user/gina"`) {
		t.Fatalf("a policy naming a user that does not exist: %v", err)
	}
	plain := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::site/*"}]}`
	if stored, public, err := f.m.BindBucketPolicy("site", []byte(plain)); err != nil || !public || string(stored) != plain {
		t.Fatalf("a policy naming no user is stored as %q, %v, %v; want it as given", stored, public, err)
	}

	stored, public, err := f.m.BindBucketPolicy("site", []byte(erinPolicy))
	if err != nil || public || stored[0] != boundPolicyMark {
		t.Fatalf("BindBucketPolicy = %q, %v, %v", stored, public, err)
	}
	if doc, err := BucketPolicyDocument(stored); err != nil || string(doc) != erinPolicy {
		t.Fatalf("BucketPolicyDocument = %q, %v; want the document as given", doc, err)
	}
	f.store.setPolicy("site", string(stored))
	if err := f.m.RefreshBucketPolicy(ctx, "site"); err != nil {
		t.Fatal(err)
	}
	if !f.allowed(erin.AccessKey, GetObject, "site", "k") || !f.allowed(frank.AccessKey, GetObject, "site", "k") {
		t.Fatal("the bound policy does not let in the users it names")
	}
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

	// Stored before binding: by name, as before.
	f.store.setPolicy("site", erinPolicy)
	if err := f.m.RefreshBucketPolicy(ctx, "site"); err != nil {
		t.Fatal(err)
	}
	if !f.allowed(erin.AccessKey, GetObject, "site", "k") {
		t.Fatal("an unbound stored policy does not match its users by name")
	}

	// A stored form whose bindings are damaged fails closed.
	f.store.setPolicy("site", string(stored[:5]))
	if err := f.m.RefreshBucketPolicy(ctx, "site"); err == nil {
		t.Fatal("a damaged stored policy refreshes without error")
	}
	if f.allowed(frank.AccessKey, GetObject, "site", "k") {
		t.Fatal("a damaged stored policy lets users in")
	}
}

// FuzzStoredBucketPolicy: splitting any stored bytes never panics, and a
// policy bound by BindBucketPolicy splits back to its document.
func FuzzStoredBucketPolicy(f *testing.F) {
	fx := newFixture(f)
	fx.user("erin")
	fx.user("frank")
	stored, _, err := fx.m.BindBucketPolicy("site", []byte(erinPolicy))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(stored)
	f.Add([]byte(erinPolicy))
	f.Add([]byte{boundPolicyMark})
	f.Add([]byte{boundPolicyMark, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add([]byte{boundPolicyMark, 2, '{', '}', '{', '}'})
	f.Fuzz(func(t *testing.T, b []byte) {
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
	})
}
