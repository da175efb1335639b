package acl

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

const (
	alice = "alice-id"
	bob   = "bob-id"
)

func TestExpand(t *testing.T) {
	own := func(id string) Grant { return Grant{Grantee: Grantee{ID: id}, Permission: FullControl} }
	for _, tc := range []struct {
		canned             Canned
		owner, bucketOwner string
		want               []Grant
		wantErr            error
	}{
		{CannedPrivate, alice, alice, []Grant{own(alice)}, nil},
		{CannedPublicRead, alice, alice, []Grant{{Grantee{URI: AllUsers}, Read}, own(alice)}, nil},
		{CannedPublicReadWrite, alice, alice, []Grant{{Grantee{URI: AllUsers}, Read}, {Grantee{URI: AllUsers}, Write}, own(alice)}, nil},
		{CannedAuthenticatedRead, alice, alice, []Grant{{Grantee{URI: AuthenticatedUsers}, Read}, own(alice)}, nil},
		{CannedBucketOwnerRead, alice, bob, []Grant{own(alice), {Grantee{ID: bob}, Read}}, nil},
		{CannedBucketOwnerRead, alice, alice, []Grant{own(alice)}, nil},
		{CannedBucketOwnerFullControl, alice, bob, []Grant{own(alice), own(bob)}, nil},
		{CannedLogDeliveryWrite, alice, alice, []Grant{{Grantee{URI: LogDelivery}, Write}, {Grantee{URI: LogDelivery}, ReadACP}, own(alice)}, nil},
		{CannedAWSExecRead, alice, alice, nil, ErrUnsupportedCanned},
		{"everyone", alice, alice, nil, ErrUnknownCanned},
	} {
		t.Run(string(tc.canned), func(t *testing.T) {
			a, err := Expand(tc.canned, tc.owner, tc.bucketOwner)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Expand(%s) error = %v, want %v", tc.canned, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, a.Grants, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Expand(%s) grants (-want +got):\n%s", tc.canned, diff)
			}
		})
	}
}

func TestAllows(t *testing.T) {
	anon := Requester{Anonymous: true}
	a := Requester{ID: alice}
	b := Requester{ID: bob}
	pubRead, _ := Expand(CannedPublicRead, alice, alice)
	authRead, _ := Expand(CannedAuthenticatedRead, alice, alice)
	bobWrite := ACL{Owner: alice, Grants: []Grant{{Grantee{ID: bob}, Write}}}
	for _, tc := range []struct {
		name string
		acl  ACL
		r    Requester
		p    Permission
		want bool
	}{
		{"owner full control", Private(alice), a, Write, true},
		{"other on private", Private(alice), b, Read, false},
		{"anonymous on private", Private(alice), anon, Read, false},
		{"anonymous public read", pubRead, anon, Read, true},
		{"anonymous public write", pubRead, anon, Write, false},
		{"authenticated read: anonymous", authRead, anon, Read, false},
		{"authenticated read: bob", authRead, b, Read, true},
		{"grant to bob", bobWrite, b, Write, true},
		{"grant to bob is not read", bobWrite, b, Read, false},
		{"owner keeps ACP without a grant", bobWrite, a, WriteACP, true},
		{"owner without a grant has no write", bobWrite, a, Write, false},
		{"anonymous is no one's ID", ACL{Owner: alice, Grants: []Grant{{Grantee{ID: ""}, Read}}}, anon, Read, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.acl.Allows(tc.r, tc.p); got != tc.want {
				t.Errorf("Allows(%+v, %s) = %v, want %v", tc.r, tc.p, got, tc.want)
			}
		})
	}
}

func TestEncodeDecode(t *testing.T) {
	a, _ := Expand(CannedPublicReadWrite, alice, bob)
	got, err := Decode(Encode(a))
	if err != nil || !cmp.Equal(a, got) {
		t.Fatalf("Decode(Encode(%+v)) = %+v, %v", a, got, err)
	}
	for _, bad := range []string{`{}`, `{"owner":"a","grants":[{"grantee":{},"permission":"READ"}]}`,
		`{"owner":"a","grants":[{"grantee":{"id":"x"},"permission":"ALL"}]}`,
		`{"owner":"a","grants":[{"grantee":{"uri":"http://example.com/group"},"permission":"READ"}]}`, `not json`} {
		if _, err := Decode([]byte(bad)); err == nil {
			t.Errorf("Decode(%s) succeeded", bad)
		}
	}
}

// TestDecodeOwner checks that DecodeOwner finds the owner of what Encode
// writes without the rest, and decodes anything else whole.
func TestDecodeOwner(t *testing.T) {
	const hexID = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	public, _ := Expand(CannedPublicReadWrite, alice, bob)
	for _, tc := range []struct {
		name, doc string
		want      string
		wantErr   bool
	}{
		{name: "private", doc: string(Encode(Private(alice))), want: alice},
		{name: "grants", doc: string(Encode(public)), want: alice},
		{name: "escaped", doc: `{"owner":"a\u0062c","grants":[]}`, want: "abc"},
		{name: "owner last", doc: `{"grants":[],"owner":"abc"}`, want: "abc"},
		{name: "no owner", doc: `{"grants":[]}`, wantErr: true},
		{name: "empty owner", doc: `{"owner":"","grants":[]}`, wantErr: true},
		{name: "not json", doc: `not json`, wantErr: true},
		{name: "canonical", doc: string(Encode(Private(hexID))), want: hexID},
		// The shortcut takes only what Encode writes; anything else is
		// decoded whole, and agrees with Decode.
		{name: "duplicate owner", doc: `{"owner":"` + hexID + `","owner":"b","grants":[]}`, want: "b"},
		{name: "truncated", doc: `{"owner":"` + hexID + `","gra`, wantErr: true},
		{name: "upper case", doc: `{"owner":"` + strings.ToUpper(hexID) + `","grants":[]}`, want: strings.ToUpper(hexID)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeOwner([]byte(tc.doc))
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("DecodeOwner(%s) = %q, %v; want %q, error %t", tc.doc, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// FuzzDecode checks that a stored ACL that decodes re-encodes to itself,
// whose owner DecodeOwner reads back.
func FuzzDecode(f *testing.F) {
	a, _ := Expand(CannedPublicReadWrite, alice, bob)
	f.Add(Encode(a))
	f.Add([]byte(`{"owner":"a","grants":[]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := Decode(b)
		if err != nil {
			return
		}
		again, err := Decode(Encode(a))
		if err != nil || !cmp.Equal(a, again, cmpopts.EquateEmpty()) {
			t.Fatalf("round trip of %q: %+v, %v", b, again, err)
		}
		if owner, err := DecodeOwner(Encode(a)); err != nil || owner != a.Owner {
			t.Fatalf("DecodeOwner(Encode(%+v)) = %q, %v", a, owner, err)
		}
	})
}

func TestPublic(t *testing.T) {
	owner := "owner-id"
	for _, c := range []Canned{CannedPrivate, CannedPublicRead, CannedPublicReadWrite, CannedAuthenticatedRead, CannedBucketOwnerFullControl} {
		a, err := Expand(c, owner, "bucket-owner")
		if err != nil {
			t.Fatal(err)
		}
		want := c == CannedPublicRead || c == CannedPublicReadWrite || c == CannedAuthenticatedRead
		if a.Public() != want {
			t.Errorf("%s: Public() = %v, want %v", c, a.Public(), want)
		}
		w := a.WithoutPublic()
		if w.Public() || w.Owner != owner {
			t.Errorf("%s: WithoutPublic() = %+v", c, w)
		}
		// The owner's and other grants stay; the original is not changed.
		if !w.Allows(Requester{ID: owner}, Read) || a.Public() != want {
			t.Errorf("%s: WithoutPublic() dropped the owner's grant or changed the ACL: %+v, %+v", c, w, a)
		}
		if w.Allows(Requester{Anonymous: true}, Read) || w.Allows(Requester{ID: "someone"}, Read) {
			t.Errorf("%s: WithoutPublic() still allows others: %+v", c, w)
		}
	}
	logs := ACL{Owner: owner, Grants: []Grant{{Grantee: Grantee{URI: LogDelivery}, Permission: Write}}}
	if logs.Public() {
		t.Error("a LogDelivery grant counts as public")
	}
}
