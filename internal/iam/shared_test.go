package iam

import (
	"bytes"
	"context"
	"errors"
	"testing"
)

// sharedStore is a memStore whose state two IAMs share, as two nodes of a
// cluster share PostgreSQL: it implements UpdateStore.
type sharedStore struct{ *memStore }

func (s sharedStore) UpdateIAMState(ctx context.Context, fn func(old []byte) ([]byte, error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	doc, err := fn(s.state)
	if err != nil {
		return err
	}
	s.state = append([]byte(nil), doc...)
	s.saves++
	return nil
}

// sharedNodes returns a new shared store and two IAMs over it, as two
// nodes of a cluster.
func sharedNodes(t *testing.T) (st sharedStore, a, b *IAM) {
	t.Helper()
	st = sharedStore{newMemStore()}
	open := func() *IAM {
		m, err := New(Config{RootAccessKey: "ROOT", RootSecretKey: "rootsecret", MasterKey: testMaster, Store: st,
			Password: testPasswordParams})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	return st, open(), open()
}

// TestSharedNodes runs two IAMs over one shared store: a change through
// one applies to the other after Reload (a revoked key stops working
// there), and a change through a node that has not reloaded yet builds on
// the stored state, so that no change made through the other is lost.
func TestSharedNodes(t *testing.T) {
	ctx := t.Context()
	st, a, b := sharedNodes(t)
	nk, err := a.CreateUser(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.SecretKey(ctx, nk.AccessKey); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("b knows alice's key before reloading: %v", err)
	}
	// b has not reloaded: its change must still keep alice.
	if _, err := b.CreateUser(ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.SecretKey(ctx, nk.AccessKey); err != nil {
		t.Fatalf("b after its own change: alice's key: %v", err)
	}
	if err := a.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	for _, m := range []*IAM{a, b} {
		us, err := m.Users(ctx)
		if err != nil || len(us) != 2 {
			t.Fatalf("users = %v, %v; want alice and bob", us, err)
		}
	}
	// Revoked through a; refused by b once it reloads.
	if err := a.SetKeyDisabled(ctx, nk.AccessKey, true); err != nil {
		t.Fatal(err)
	}
	if err := b.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.SecretKey(ctx, nk.AccessKey); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("b after the revocation: SecretKey = %v, want ErrUnknownKey", err)
	}
	// An edit's own error comes back as it is.
	if _, err := b.CreateUser(ctx, "bob"); !errors.Is(err, ErrExists) {
		t.Fatalf("CreateUser(bob) again = %v, want ErrExists", err)
	}
	// Bucket policies: reloaded all at once.
	st.setPolicy("bkt", `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"}]}`)
	if err := b.ReloadBucketPolicies(ctx); err != nil {
		t.Fatal(err)
	}
	rq := Request{Principal: Principal{Anonymous: true}, Action: GetObject, Bucket: "bkt", Key: "k"}
	if err := b.Authorize(ctx, rq); err != nil {
		t.Fatalf("anonymous GetObject after the policy reload: %v", err)
	}
}

// TestSharedMasterKeyCheck: the first node of a shared store stores the
// master-key check at its start, before any IAM change, so that a node
// started with another key is refused by New; one with the same key
// starts and reads the stored state.
func TestSharedMasterKeyCheck(t *testing.T) {
	st := sharedStore{newMemStore()}
	open := func(key []byte) (*IAM, error) {
		return New(Config{RootAccessKey: "ROOT", RootSecretKey: "rootsecret", MasterKey: key, Store: st,
			Password: testPasswordParams})
	}
	if _, err := open(testMaster); err != nil {
		t.Fatal(err)
	}
	if st.saves != 1 || st.state == nil {
		t.Fatalf("after the first start: %d saves, state %q; want the check stored once", st.saves, st.state)
	}
	other := bytes.Repeat([]byte{0x77}, MasterKeySize)
	if _, err := open(other); !errors.Is(err, ErrWrongMasterKey) {
		t.Errorf("New with another master key = %v, want ErrWrongMasterKey", err)
	}
	if _, err := open(testMaster); err != nil {
		t.Errorf("New with the same master key: %v", err)
	}
	if st.saves != 1 {
		t.Errorf("%d saves after three starts, want 1: a stored state is not written again", st.saves)
	}
}

// TestSharedBindsStoredUsers: a node binds a bucket policy to the users
// in the stored state, not to its own snapshot, which may not have caught
// up with a change made through another node: a user deleted and created
// again there is bound as the new one, and a user just created there can
// be named at once.
func TestSharedBindsStoredUsers(t *testing.T) {
	ctx := t.Context()
	st, a, b := sharedNodes(t)
	if _, err := a.CreateUser(ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	if err := b.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.DeleteUser(ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	nk, err := a.CreateUser(ctx, "bob")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.AttachPolicy(ctx, "readwrite", Target{User: "bob"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.CreateUser(ctx, "carol"); err != nil {
		t.Fatal(err)
	}
	// b has not reloaded: it still knows the first bob and no carol.
	doc := []byte(`{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Principal":{"AWS":["arn:aws:iam::000000000000:user/bob","arn:aws:iam::000000000000:user/carol"]},"Action":"s3:*","Resource":"arn:aws:s3:::bkt/*"}]}`)
	stored, _, err := b.BindBucketPolicy(ctx, "bkt", doc)
	if err != nil {
		t.Fatalf("b binds a policy naming users made through a: %v", err)
	}
	st.setPolicy("bkt", string(stored))
	if err := a.RefreshBucketPolicy(ctx, "bkt"); err != nil {
		t.Fatal(err)
	}
	err = a.Authorize(ctx, Request{Principal: a.Principal(nk.AccessKey), Action: GetObject, Bucket: "bkt", Key: "k"})
	if err == nil {
		t.Fatal("the Deny b set does not apply to the bob there is now")
	}
}
