package policy

import "testing"

var visible = []string{"s3:ListBucket", "s3:GetObject"}

func TestCouldAllowInBucket(t *testing.T) {
	alice := Principal{User: "alice"}
	for _, tc := range []struct {
		name     string
		bucket   string // "" for an identity policy
		doc      string
		pr       Principal
		username string
		target   string
		actions  []string
		want     bool
	}{
		{name: "objects of the bucket", doc: doc(allowGO), target: "b", want: true},
		{name: "other bucket", doc: doc(allowGO), target: "c", want: false},
		{name: "bucket name prefix", doc: doc(allowGO), target: "bb", want: false},
		{name: "bucket itself", doc: doc(`{"Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::b"}`), target: "b", want: true},
		{name: "other actions only", doc: doc(`{"Effect":"Allow","Action":"s3:PutObject","Resource":"*"}`), target: "b", want: false},
		{name: "star resource", doc: doc(`{"Effect":"Allow","Action":"s3:Get*","Resource":"*"}`), target: "b", want: true},
		{name: "wildcard bucket", doc: doc(`{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::b*/*"}`), target: "bx", want: true},
		{name: "question mark bucket", doc: doc(`{"Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::b?"}`), target: "bx", want: true},
		{name: "one specific object", doc: doc(`{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/report.pdf"}`), target: "b", want: true},
		{name: "pattern needs more than the bucket ARN", doc: doc(`{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/"}`), target: "b", want: false},
		{name: "conditions are ignored", doc: doc(`{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*","Condition":{"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}}`), target: "b", want: true},
		{name: "deny does not hide", doc: doc(allowGO, `{"Effect":"Deny","Action":"s3:*","Resource":"*"}`), target: "b", want: true},
		{name: "deny alone", doc: doc(`{"Effect":"Deny","Action":"s3:*","Resource":"*"}`), target: "b", want: false},
		{name: "NotAction", doc: doc(`{"Effect":"Allow","NotAction":"s3:PutObject","Resource":"*"}`), target: "b", want: true},
		{name: "NotAction excluding both", doc: doc(`{"Effect":"Allow","NotAction":["s3:ListBucket","s3:GetObject"],"Resource":"*"}`), target: "b", want: false},
		{name: "home directory", doc: doc(`{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::home/${aws:username}/*"}`), username: "alice", target: "home", want: true},
		{name: "home directory without user", doc: doc(`{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::home/${aws:username}/*"}`), target: "home", want: false},
		{name: "username as bucket", doc: doc(`{"Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::${aws:username}"}`), username: "alice", target: "alice", want: true},
		{name: "username as bucket, other", doc: doc(`{"Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::${aws:username}"}`), username: "alice", target: "bob", want: false},
		{name: "other variable could be anything", doc: doc(`{"Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::${s3:prefix}"}`), target: "b", want: true},
		{name: "NotResource excluding the bucket only", doc: doc(`{"Effect":"Allow","Action":"s3:*","NotResource":"arn:aws:s3:::b"}`), target: "b", want: true},
		{name: "NotResource excluding the objects only", doc: doc(`{"Effect":"Allow","Action":"s3:*","NotResource":"arn:aws:s3:::b/*"}`), target: "b", want: true},
		{name: "NotResource excluding both", doc: doc(`{"Effect":"Allow","Action":"s3:*","NotResource":["arn:aws:s3:::b","arn:aws:s3:::b/*"]}`), target: "b", want: false},
		{name: "NotResource excluding both by one pattern", doc: doc(`{"Effect":"Allow","Action":"s3:*","NotResource":"arn:aws:s3:::b*"}`), target: "b", want: false},
		{name: "NotResource elsewhere", doc: doc(`{"Effect":"Allow","Action":"s3:*","NotResource":["arn:aws:s3:::b","arn:aws:s3:::b/*"]}`), target: "c", want: true},
		{name: "NotResource some objects", doc: doc(`{"Effect":"Allow","Action":"s3:*","NotResource":["arn:aws:s3:::b","arn:aws:s3:::b/secret/*"]}`), target: "b", want: true},
		{name: "resource-less action", doc: doc(`{"Effect":"Allow","Action":"s3:ListAllMyBuckets","Resource":"*"}`), target: "b", actions: []string{"s3:ListAllMyBuckets"}, want: true},
		{name: "canned readonly", doc: string(mustCanned(t, "readonly").Raw()), target: "b", want: true},
		{name: "canned writeonly", doc: string(mustCanned(t, "writeonly").Raw()), target: "b", want: false},

		{name: "bucket policy to everyone", bucket: "b", doc: doc(`{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"}`), pr: alice, target: "b", want: true},
		{name: "bucket policy to the user", bucket: "b", doc: doc(`{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::123456789012:user/alice"},"Action":"s3:ListBucket","Resource":"arn:aws:s3:::b"}`), pr: alice, target: "b", want: true},
		{name: "bucket policy to another user", bucket: "b", doc: doc(`{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::123456789012:user/bob"},"Action":"s3:ListBucket","Resource":"arn:aws:s3:::b"}`), pr: alice, target: "b", want: false},
		{name: "bucket policy asked about another bucket", bucket: "b", doc: doc(`{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"}`), pr: alice, target: "c", want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p *Policy
			if tc.bucket == "" {
				p = mustIdentity(t, tc.doc)
			} else {
				p = mustBucket(t, tc.bucket, tc.doc)
			}
			actions := tc.actions
			if actions == nil {
				actions = visible
			}
			if got := p.CouldAllowInBucket(tc.pr, tc.username, tc.target, actions...); got != tc.want {
				t.Errorf("CouldAllowInBucket(%+v, %q, %q, %q) = %v, want %v\npolicy: %s", tc.pr, tc.username, tc.target, actions, got, tc.want, tc.doc)
			}
		})
	}
}

func mustCanned(t testing.TB, name string) *Policy {
	t.Helper()
	p, ok := Canned(name)
	if !ok {
		t.Fatalf("no canned policy %q", name)
	}
	return p
}

func TestPublic(t *testing.T) {
	pol := func(effect, principal, cond string) string {
		s := `{"Effect":"` + effect + `","Principal":` + principal + `,"Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"`
		if cond != "" {
			s += `,"Condition":` + cond
		}
		return doc(s + `}`)
	}
	for _, tc := range []struct {
		name string
		doc  string
		want bool
	}{
		{"everyone", pol("Allow", `"*"`, ""), true},
		{"AWS star", pol("Allow", `{"AWS":"*"}`, ""), true},
		{"star among users", pol("Allow", `{"AWS":["arn:aws:iam::123456789012:user/a","*"]}`, ""), true},
		{"a user", pol("Allow", `{"AWS":"arn:aws:iam::123456789012:user/a"}`, ""), false},
		{"root", pol("Allow", `{"AWS":"123456789012"}`, ""), false},
		{"deny to everyone", pol("Deny", `"*"`, ""), false},
		{"limited by IP", pol("Allow", `"*"`, `{"IpAddress":{"aws:SourceIp":"203.0.113.0/24"}}`), false},
		{"limited by IP with another condition", pol("Allow", `"*"`, `{"IpAddress":{"aws:SourceIp":"203.0.113.0/24"},"Bool":{"aws:SecureTransport":"true"}}`), false},
		{"IP range is everything", pol("Allow", `"*"`, `{"IpAddress":{"aws:SourceIp":["203.0.113.0/24","0.0.0.0/0"]}}`), true},
		{"IP range is half of IPv4", pol("Allow", `"*"`, `{"IpAddress":{"aws:SourceIp":"0.0.0.0/1"}}`), true},
		{"IP ranges add up to everything", pol("Allow", `"*"`, `{"IpAddress":{"aws:SourceIp":["0.0.0.0/1","128.0.0.0/1"]}}`), true},
		{"IPv6 range is everything", pol("Allow", `"*"`, `{"IpAddress":{"aws:SourceIp":["::/1","8000::/1"]}}`), true},
		{"private ranges", pol("Allow", `"*"`, `{"IpAddress":{"aws:SourceIp":["10.0.0.0/8","172.16.0.0/12","192.168.0.0/16","fd00::/8"]}}`), false},
		{"a quarter of IPv4", pol("Allow", `"*"`, `{"IpAddress":{"aws:SourceIp":"64.0.0.0/2"}}`), false},
		{"NotIpAddress does not limit", pol("Allow", `"*"`, `{"NotIpAddress":{"aws:SourceIp":"203.0.113.0/24"}}`), true},
		{"IpAddressIfExists does not limit", pol("Allow", `"*"`, `{"IpAddressIfExists":{"aws:SourceIp":"203.0.113.0/24"}}`), true},
		{"ForAllValues does not limit", pol("Allow", `"*"`, `{"ForAllValues:IpAddress":{"aws:SourceIp":"203.0.113.0/24"}}`), true},
		{"other condition does not limit", pol("Allow", `"*"`, `{"Bool":{"aws:SecureTransport":"true"}}`), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mustBucket(t, "b", tc.doc)
			if got := p.Public(); got != tc.want {
				t.Errorf("Public() = %v, want %v\npolicy: %s", got, tc.want, tc.doc)
			}
		})
	}
	if mustCanned(t, "readwrite").Public() {
		t.Errorf("an identity policy is public")
	}
}
