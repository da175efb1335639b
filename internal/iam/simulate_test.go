package iam

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// simWorld is an IAM state with every kind of policy source: direct and
// group policies, a bucket policy, scoped and disabled keys.
type simWorld struct {
	f                                    *fixture
	aliceKey, scopedKey, offKey, bobKey  string
	denyScopeKey, carolKey, disabledUser string
}

func newSimWorld(t *testing.T) *simWorld {
	t.Helper()
	f := newFixture(t)
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(f.m.PutPolicy(ctx, "photos-rw", []byte(`{"Version":"2012-10-17","Statement":[
		{"Sid":"ReadWritePhotos","Effect":"Allow","Action":["s3:GetObject","s3:PutObject","s3:ListBucket"],"Resource":["arn:aws:s3:::photos","arn:aws:s3:::photos/*"]},
		{"Sid":"NoRaw","Effect":"Deny","Action":"s3:*","Resource":"arn:aws:s3:::photos/raw/*"}]}`)))
	must(f.m.PutPolicy(ctx, "office-only", []byte(`{"Version":"2012-10-17","Statement":[
		{"Sid":"OutsideOffice","Effect":"Deny","Action":"s3:*","Resource":"*","Condition":{"NotIpAddress":{"aws:SourceIp":"10.0.0.0/8"}}}]}`)))
	must(f.m.PutPolicy(ctx, "home", []byte(`{"Version":"2012-10-17","Statement":[
		{"Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::home","Condition":{"StringLike":{"s3:prefix":"${aws:username}/*"}}}]}`)))
	w := &simWorld{f: f}
	w.aliceKey = f.user("alice", "photos-rw", "home").AccessKey
	w.bobKey = f.user("bob").AccessKey
	w.carolKey = f.user("carol", "readonly").AccessKey
	must(f.m.CreateGroup(ctx, "office"))
	must(f.m.UpdateGroupMembers(ctx, "office", []string{"carol"}, nil))
	must(f.m.AttachPolicy(ctx, "office-only", Target{Group: "office"}))
	nk, err := f.m.CreateKey(ctx, "alice", KeyOptions{Policy: []byte(`{"Version":"2012-10-17","Statement":[
		{"Sid":"UploadsOnly","Effect":"Allow","Action":"s3:PutObject","Resource":"arn:aws:s3:::photos/uploads/*"}]}`)})
	must(err)
	w.scopedKey = nk.AccessKey
	nk, err = f.m.CreateKey(ctx, "alice", KeyOptions{Policy: []byte(`{"Version":"2012-10-17","Statement":[
		{"Sid":"All","Effect":"Allow","Action":"s3:*","Resource":"*"},
		{"Sid":"NoPut","Effect":"Deny","Action":"s3:PutObject","Resource":"*"}]}`)})
	must(err)
	w.denyScopeKey = nk.AccessKey
	nk, err = f.m.CreateKey(ctx, "alice", KeyOptions{})
	must(err)
	w.offKey = nk.AccessKey
	must(f.m.SetKeyDisabled(ctx, w.offKey, true))
	f.user("dave", "readwrite")
	must(f.m.SetUserDisabled(ctx, "dave", true))
	w.disabledUser = "dave"
	f.setBucketPolicy("shared", `{"Version":"2012-10-17","Statement":[
		{"Sid":"BobReads","Effect":"Allow","Principal":{"AWS":"arn:aws:iam::000000000000:user/bob"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::shared/*"},
		{"Sid":"NobodyDeletes","Effect":"Deny","Principal":"*","Action":"s3:DeleteObject","Resource":"arn:aws:s3:::shared/*"}]}`)
	// Patterns that back-track at every character of a long User-Agent.
	costly := `"*` + strings.Repeat("?", 63) + `b"`
	f.store.setPolicy("costly", `{"Version":"2012-10-17","Statement":[
		{"Sid":"NotFromBots","Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::costly/*",
		 "Condition":{"StringNotLike":{"aws:UserAgent":[`+strings.TrimSuffix(strings.Repeat(costly+",", 100), ",")+`]}}}]}`)
	must(f.m.RefreshBucketPolicy(ctx, "costly"))
	return w
}

// longUserAgent makes the costly bucket's policy run out of its matching
// budget.
var longUserAgent = strings.Repeat("a", 60<<10)

type simCase struct {
	name     string
	in       SimulateInput
	want     Reason
	deciding []string // "SOURCE-KIND DECISION SID" of each deciding evaluation
}

func (w *simWorld) cases() []simCase {
	ip := func(s string) Conditions { return Conditions{SourceIP: netip.MustParseAddr(s)} }
	prefix := func(s string) Conditions { return Conditions{Prefix: &s} }
	return []simCase{
		{"root key", SimulateInput{AccessKey: "ROOT", Action: DeleteBucket, Bucket: "photos"}, ReasonRoot, nil},
		{"user allowed by policy", SimulateInput{User: "alice", Action: GetObject, Bucket: "photos", Key: "a.jpg"}, ReasonAllowed, []string{"user Allow ReadWritePhotos"}},
		{"key allowed by policy", SimulateInput{AccessKey: w.aliceKey, Action: PutObject, Bucket: "photos", Key: "a.jpg"}, ReasonAllowed, []string{"user Allow ReadWritePhotos"}},
		{"explicit deny in same policy", SimulateInput{User: "alice", Action: GetObject, Bucket: "photos", Key: "raw/a.cr2"}, ReasonExplicitDeny, []string{"user Deny NoRaw"}},
		{"no allow", SimulateInput{User: "alice", Action: DeleteObject, Bucket: "photos", Key: "a.jpg"}, ReasonNoAllow, nil},
		{"user without policies", SimulateInput{User: "bob", Action: GetObject, Bucket: "photos", Key: "a.jpg"}, ReasonNoAllow, nil},
		{"scope allows", SimulateInput{AccessKey: w.scopedKey, Action: PutObject, Bucket: "photos", Key: "uploads/a.jpg"}, ReasonAllowed,
			[]string{"user Allow ReadWritePhotos", "key Allow UploadsOnly"}},
		{"scope narrower", SimulateInput{AccessKey: w.scopedKey, Action: GetObject, Bucket: "photos", Key: "a.jpg"}, ReasonOutsideScope,
			[]string{"user Allow ReadWritePhotos", "key NotApplicable "}},
		{"scope denies", SimulateInput{AccessKey: w.denyScopeKey, Action: PutObject, Bucket: "photos", Key: "a.jpg"}, ReasonExplicitDeny, []string{"key Deny NoPut"}},
		{"scope allows what user may not", SimulateInput{AccessKey: w.denyScopeKey, Action: DeleteObject, Bucket: "photos", Key: "a.jpg"}, ReasonNoAllow, nil},
		{"disabled key", SimulateInput{AccessKey: w.offKey, Action: GetObject, Bucket: "photos", Key: "a.jpg"}, ReasonInactive, nil},
		{"disabled user", SimulateInput{User: w.disabledUser, Action: GetObject, Bucket: "photos", Key: "a.jpg"}, ReasonInactive, nil},
		{"group deny without source ip", SimulateInput{User: "carol", Action: GetObject, Bucket: "photos", Key: "a.jpg"}, ReasonExplicitDeny, []string{"group Deny OutsideOffice"}},
		{"group deny outside office", SimulateInput{User: "carol", Action: GetObject, Bucket: "photos", Key: "a.jpg", Cond: ip("192.0.2.1")}, ReasonExplicitDeny, []string{"group Deny OutsideOffice"}},
		{"inside office", SimulateInput{AccessKey: w.carolKey, Action: GetObject, Bucket: "photos", Key: "a.jpg", Cond: ip("10.1.2.3")}, ReasonAllowed, []string{"user Allow ReadOnly"}},
		{"bucket policy allows", SimulateInput{User: "bob", Action: GetObject, Bucket: "shared", Key: "doc.pdf"}, ReasonAllowed, []string{"bucket Allow BobReads"}},
		{"bucket policy denies", SimulateInput{User: "alice", Action: DeleteObject, Bucket: "shared", Key: "doc.pdf"}, ReasonExplicitDeny, []string{"bucket Deny NobodyDeletes"}},
		{"bucket policy and scope", SimulateInput{AccessKey: w.scopedKey, Action: GetObject, Bucket: "shared", Key: "doc.pdf"}, ReasonOutsideScope, []string{"key NotApplicable "}},
		{"list buckets", SimulateInput{User: "bob", Action: ListAllMyBuckets}, ReasonListBuckets, nil},
		{"prefix condition holds", SimulateInput{User: "alice", Action: ListBucket, Bucket: "home", Cond: prefix("alice/docs")}, ReasonAllowed, []string{"user Allow "}},
		{"prefix condition fails", SimulateInput{User: "alice", Action: ListBucket, Bucket: "home", Cond: prefix("bob/")}, ReasonNoAllow, nil},
		{"admin action", SimulateInput{User: "alice", Action: "admin:ListUsers"}, ReasonNoAllow, nil},
		{"costly to match", SimulateInput{User: "bob", Action: GetObject, Bucket: "costly", Key: "a", Cond: Conditions{UserAgent: longUserAgent}},
			ReasonCostly, []string{"bucket Deny "}},
		{"cheap to match", SimulateInput{User: "bob", Action: GetObject, Bucket: "costly", Key: "a", Cond: Conditions{UserAgent: "aws-cli/2"}},
			ReasonAllowed, []string{"bucket Allow NotFromBots"}},
	}
}

// TestSimulateMatchesAuthorize is the simulator's promise: for every
// case, its verdict is Authorize's for the same request, and it names the
// reason and the deciding statements.
func TestSimulateMatchesAuthorize(t *testing.T) {
	w := newSimWorld(t)
	ctx := context.Background()
	for _, tc := range w.cases() {
		t.Run(tc.name, func(t *testing.T) {
			sim, err := w.f.m.Simulate(ctx, tc.in)
			if err != nil {
				t.Fatalf("Simulate: %v", err)
			}
			p, _, err := w.f.m.simulatedPrincipal(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			real := w.f.m.Authorize(ctx, Request{Principal: p, Action: tc.in.Action, Bucket: tc.in.Bucket, Key: tc.in.Key, Cond: tc.in.Cond})
			if sim.Allowed != (real == nil) {
				t.Fatalf("Simulate allowed = %v, Authorize = %v", sim.Allowed, real)
			}
			if sim.Reason != tc.want {
				t.Errorf("reason = %q, want %q (%s)", sim.Reason, tc.want, sim.Message)
			}
			var got []string
			for _, e := range sim.Deciding {
				got = append(got, string(e.Kind)+" "+e.Decision+" "+e.Sid)
			}
			if diff := cmp.Diff(tc.deciding, got); diff != "" {
				t.Errorf("deciding mismatch (-want +got):\n%s\nmessage: %s", diff, sim.Message)
			}
			if sim.Message == "" {
				t.Error("no message")
			}
		})
	}
}

// TestSimulateMessages pins the sentences people read.
func TestSimulateMessages(t *testing.T) {
	w := newSimWorld(t)
	for _, tc := range []struct {
		in   SimulateInput
		want string
	}{
		{SimulateInput{User: "alice", Action: GetObject, Bucket: "photos", Key: "raw/a"},
			`Denied explicitly by statement "NoRaw" of policy "photos-rw" (attached to user alice); a Deny overrides every Allow.`},
		{SimulateInput{AccessKey: w.scopedKey, Action: GetObject, Bucket: "photos", Key: "a"},
			`Denied: allowed by statement "ReadWritePhotos" of policy "photos-rw" (attached to user alice), but the scope of access key ` + w.scopedKey + ` is narrower: none of its statements allows this.`},
		{SimulateInput{User: "bob", Action: GetObject, Bucket: "shared", Key: "a"},
			`Allowed by statement "BobReads" of the bucket policy of shared; no statement denies it.`},
		{SimulateInput{User: "carol", Action: GetObject, Bucket: "x", Key: "a", Cond: Conditions{SourceIP: netip.MustParseAddr("10.0.0.1")}},
			`Allowed by statement "ReadOnly" of policy "readonly" (attached to user carol); no statement denies it.`},
		{SimulateInput{User: "alice", Action: DeleteObject, Bucket: "photos", Key: "a"},
			`Denied: no statement of the 2 policies evaluated allows this (an implicit deny).`},
		{SimulateInput{User: "bob", Action: GetObject, Bucket: "costly", Key: "a", Cond: Conditions{UserAgent: longUserAgent}},
			`Denied: matching the patterns of the bucket policy of costly against this request's values took more work than a request may take (many wildcards against a long value), so it is refused.`},
	} {
		sim, err := w.f.m.Simulate(context.Background(), tc.in)
		if err != nil {
			t.Fatal(err)
		}
		if sim.Message != tc.want {
			t.Errorf("Simulate(%+v).Message =\n%s\nwant\n%s", tc.in, sim.Message, tc.want)
		}
	}
}

func TestSimulateInvalid(t *testing.T) {
	w := newSimWorld(t)
	for _, tc := range []struct {
		name string
		in   SimulateInput
		want error
	}{
		{"no principal", SimulateInput{Action: GetObject, Bucket: "b"}, ErrInvalid},
		{"two principals", SimulateInput{User: "alice", AccessKey: w.aliceKey, Action: GetObject}, ErrInvalid},
		{"unknown user", SimulateInput{User: "zed", Action: GetObject}, ErrNotFound},
		{"unknown key", SimulateInput{AccessKey: "AKNOPE", Action: GetObject}, ErrNotFound},
		{"unknown action", SimulateInput{User: "alice", Action: "s3:GetObjekt"}, ErrInvalid},
		{"key without bucket", SimulateInput{User: "alice", Action: GetObject, Key: "k"}, ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := w.f.m.Simulate(context.Background(), tc.in); !errors.Is(err, tc.want) {
				t.Errorf("error = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestParseResource(t *testing.T) {
	for _, tc := range []struct {
		arn, bucket, key string
		bad              bool
	}{
		{arn: ""},
		{arn: "*"},
		{arn: "arn:aws:s3:::photos", bucket: "photos"},
		{arn: "arn:aws:s3:::photos/", bucket: "photos"},
		{arn: "arn:aws:s3:::photos/a/b.jpg", bucket: "photos", key: "a/b.jpg"},
		{arn: "photos/a", bad: true},
		{arn: "arn:aws:s3:::", bad: true},
		{arn: "arn:aws:s3:::ph*/a", bad: true},
	} {
		b, k, err := ParseResource(tc.arn)
		if (err != nil) != tc.bad || b != tc.bucket || k != tc.key {
			t.Errorf("ParseResource(%q) = %q, %q, %v", tc.arn, b, k, err)
		}
	}
}

func TestSetCondition(t *testing.T) {
	var c Conditions
	for _, kv := range [][2]string{
		{"aws:SourceIp", "10.0.0.1"}, {"AWS:SECURETRANSPORT", "true"}, {"s3:prefix", "home/"}, {"s3:max-keys", "10"},
		{"s3:ExistingObjectTag/team", "red"}, {"s3:RequestObjectTag/env", "prod"}, {"aws:UserAgent", "curl/8"},
		{"s3:x-amz-acl", "private"}, {"S3:X-Amz-Copy-Source", "src/a"}, {"s3:x-amz-content-sha256", "UNSIGNED-PAYLOAD"},
	} {
		if err := c.SetCondition(kv[0], kv[1]); err != nil {
			t.Fatalf("SetCondition(%s, %s): %v", kv[0], kv[1], err)
		}
	}
	if c.SourceIP != netip.MustParseAddr("10.0.0.1") || !c.SecureTransport || *c.Prefix != "home/" || *c.MaxKeys != "10" ||
		c.ExistingObjectTags()["team"] != "red" || c.RequestObjectTags["env"] != "prod" || c.UserAgent != "curl/8" ||
		c.Header["X-Amz-Acl"][0] != "private" || c.CopySource != "src/a" || c.Header["If-Match"] != nil ||
		c.ContentSHA256 != "UNSIGNED-PAYLOAD" || c.Header["X-Amz-Content-Sha256"] != nil {
		t.Errorf("conditions = %+v", c)
	}
	for _, kv := range [][2]string{{"aws:SourceIp", "nope"}, {"aws:SecureTransport", "maybe"}, {"s3:max-keys", "-1"}, {"aws:username", "x"}, {"s3:ExistingObjectTag/", "x"}} {
		if err := c.SetCondition(kv[0], kv[1]); !errors.Is(err, ErrInvalid) {
			t.Errorf("SetCondition(%s, %s) = %v, want ErrInvalid", kv[0], kv[1], err)
		}
	}
}
