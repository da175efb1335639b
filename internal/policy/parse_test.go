package policy

import (
	"errors"
	"strings"
	"testing"
)

// TestParseErrors checks that each kind of mistake is rejected with a
// message naming it.
func TestParseErrors(t *testing.T) {
	stmt := func(fields string) string {
		return doc(`{"Sid":"S1","Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"` + fields + `}`)
	}
	cond := func(c string) string {
		return doc(`{"Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::b","Condition":` + c + `}`)
	}
	for _, tc := range []struct {
		name    string
		bucket  string // "" parses as an identity policy
		doc     string
		wantErr string
	}{
		{name: "empty", doc: "", wantErr: "policy: document is empty"},
		{name: "blank", doc: " \n", wantErr: "policy: document is empty"},
		{name: "too large", doc: `{"Statement":[` + strings.Repeat(" ", MaxDocumentSize) + `]}`, wantErr: "policies must be less than 20 KB"},
		{name: "invalid JSON", doc: `{"Version":`, wantErr: "invalid JSON"},
		{name: "syntax error", doc: `{"Version" "2012-10-17"}`, wantErr: "invalid JSON at byte"},
		{name: "trailing data", doc: doc(allowGO) + `{}`, wantErr: "unexpected data after the policy document"},
		{name: "trailing garbage", doc: doc(allowGO) + `x`, wantErr: "unexpected data after the policy document"},
		{name: "duplicate key", doc: `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Effect":"Deny","Action":"s3:*","Resource":"*"}]}`, wantErr: `duplicate field "Effect"`},
		{name: "duplicate top-level key", doc: `{"Statement":[],"Statement":[]}`, wantErr: `duplicate field "Statement"`},
		{name: "not an object", doc: `["Statement"]`, wantErr: "a policy must be a JSON object, not a JSON array"},
		{name: "deep nesting", doc: strings.Repeat("[", 40) + strings.Repeat("]", 40), wantErr: "nested more than"},
		{name: "unknown top-level field", doc: `{"Version":"2012-10-17","Statement":[` + allowGO + `],"Statements":[]}`, wantErr: `unknown field "Statements" in the policy document`},
		{name: "lower-case field", doc: `{"version":"2012-10-17","Statement":[` + allowGO + `]}`, wantErr: `unknown field "version"`},
		{name: "missing Statement", doc: `{"Version":"2012-10-17"}`, wantErr: "missing required field Statement"},
		{name: "empty Statement", doc: `{"Version":"2012-10-17","Statement":[]}`, wantErr: "Statement must not be empty"},
		{name: "bad Version", doc: `{"Version":"2012-10-18","Statement":[` + allowGO + `]}`, wantErr: `unsupported Version "2012-10-18"`},
		{name: "Version not a string", doc: `{"Version":2012,"Statement":[` + allowGO + `]}`, wantErr: "unsupported Version a JSON number"},
		{name: "Id not a string", doc: `{"Id":1,"Statement":[` + allowGO + `]}`, wantErr: "Id must be a string"},

		{name: "statement not an object", doc: doc(`"s3:*"`), wantErr: "policy: statement 1: a statement must be a JSON object, not a JSON string"},
		{name: "unknown statement field", doc: stmt(`,"Actions":"s3:*"`), wantErr: `policy: statement 1 ("S1"): unknown field "Actions"`},
		{name: "missing Effect", doc: doc(`{"Action":"s3:*","Resource":"*"}`), wantErr: "missing required field Effect"},
		{name: "lower-case Effect", doc: doc(`{"Effect":"allow","Action":"s3:*","Resource":"*"}`), wantErr: `Effect must be "Allow" or "Deny", not "allow"`},
		{name: "Effect not a string", doc: doc(`{"Effect":true,"Action":"s3:*","Resource":"*"}`), wantErr: `Effect must be "Allow" or "Deny", not a JSON boolean`},
		{name: "missing Action", doc: doc(`{"Effect":"Allow","Resource":"*"}`), wantErr: "missing required field Action (or NotAction)"},
		{name: "Action and NotAction", doc: stmt(`,"NotAction":"s3:PutObject"`), wantErr: "both Action and NotAction"},
		{name: "unknown action", doc: doc(`{"Sid":"S1","Effect":"Allow","Action":"s3:GetObject","Resource":"*"}`, `{"Sid":"AllowList","Effect":"Allow","Action":"s3:GetObjekt","Resource":"*"}`), wantErr: `policy: statement 2 ("AllowList"): unknown action "s3:GetObjekt"`},
		{name: "wildcard matching nothing", doc: doc(`{"Effect":"Allow","Action":"s3:Fly*","Resource":"*"}`), wantErr: `action "s3:Fly*" matches no known action`},
		{name: "action without service", doc: doc(`{"Effect":"Allow","Action":"GetObject","Resource":"*"}`), wantErr: `invalid action "GetObject": want SERVICE:ACTION`},
		{name: "action of another service", doc: doc(`{"Effect":"Allow","Action":"iam:CreateUser","Resource":"*"}`), wantErr: `unknown action "iam:CreateUser": Coffer knows only s3:* and admin:* actions`},
		{name: "unknown admin action", doc: doc(`{"Effect":"Allow","Action":"admin:Reboot","Resource":"*"}`), wantErr: `unknown action "admin:Reboot"`},
		{name: "empty Action list", doc: doc(`{"Effect":"Allow","Action":[],"Resource":"*"}`), wantErr: "Action must not be empty"},
		{name: "Action not a string", doc: doc(`{"Effect":"Allow","Action":[1],"Resource":"*"}`), wantErr: "Action must be a string or an array of strings, but holds a JSON number"},
		{name: "NotAction object", doc: doc(`{"Effect":"Allow","NotAction":{},"Resource":"*"}`), wantErr: "NotAction must be a string or an array of strings, not a JSON object"},

		{name: "missing Resource", doc: doc(`{"Effect":"Allow","Action":"s3:*"}`), wantErr: "missing required field Resource (or NotResource)"},
		{name: "Resource and NotResource", doc: stmt(`,"NotResource":"*"`), wantErr: "both Resource and NotResource"},
		{name: "resource not an ARN", doc: doc(`{"Effect":"Allow","Action":"s3:*","Resource":"mybucket/*"}`), wantErr: `invalid resource "mybucket/*": want "*" or an ARN starting with arn:aws:s3:::`},
		{name: "resource of another service", doc: doc(`{"Effect":"Allow","Action":"s3:*","Resource":"arn:aws:iam::123456789012:user/x"}`), wantErr: "Coffer's resources are S3 ARNs"},
		{name: "resource without bucket", doc: doc(`{"Effect":"Allow","Action":"s3:*","Resource":"arn:aws:s3:::"}`), wantErr: "the ARN names no bucket"},
		{name: "empty Resource list", doc: doc(`{"Effect":"Allow","Action":"s3:*","Resource":[]}`), wantErr: "Resource must not be empty"},

		{name: "identity with Principal", doc: stmt(`,"Principal":"*"`), wantErr: "an identity policy must not specify a principal"},
		{name: "identity with NotPrincipal", doc: stmt(`,"NotPrincipal":{"AWS":"*"}`), wantErr: "an identity policy must not specify a principal"},
		{name: "identity Sid with hyphen", doc: doc(`{"Sid":"allow-get","Effect":"Allow","Action":"s3:GetObject","Resource":"*"}`), wantErr: `Sid "allow-get" may contain only ASCII letters and digits`},
		{name: "Sid not a string", doc: doc(`{"Sid":1,"Effect":"Allow","Action":"s3:GetObject","Resource":"*"}`), wantErr: "Sid must be a string"},
		{name: "duplicate Sid", doc: doc(`{"Sid":"A","Effect":"Allow","Action":"s3:GetObject","Resource":"*"}`, `{"Sid":"A","Effect":"Deny","Action":"s3:PutObject","Resource":"*"}`), wantErr: `statement 2 ("A"): Statement IDs (Sid) must be unique`},

		{name: "bucket without Principal", bucket: "b", doc: doc(allowGO), wantErr: "missing required field Principal"},
		{name: "bucket NotPrincipal", bucket: "b", doc: doc(`{"Effect":"Deny","NotPrincipal":{"AWS":"arn:aws:iam::123456789012:user/a"},"Action":"s3:*","Resource":"arn:aws:s3:::b/*"}`), wantErr: "NotPrincipal is not supported"},
		{name: "bucket other bucket", bucket: "b", doc: doc(`{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::other/*"}`), wantErr: `Policy has invalid resource "arn:aws:s3:::other/*"`},
		{name: "bucket name prefix", bucket: "b", doc: doc(`{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::b2/*"}`), wantErr: "Policy has invalid resource"},
		{name: "bucket name wildcard for another", bucket: "b", doc: doc(`{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::c*"}`), wantErr: "Policy has invalid resource"},
		{name: "bucket wildcard for another's objects", bucket: "b", doc: doc(`{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::?b/*"}`), wantErr: "Policy has invalid resource"},
		{name: "bucket NotResource other bucket", bucket: "b", doc: doc(`{"Effect":"Deny","Principal":"*","Action":"s3:*","NotResource":"arn:aws:s3:::c/*"}`), wantErr: "Policy has invalid resource"},
		{name: "bucket admin action", bucket: "b", doc: doc(`{"Effect":"Allow","Principal":"*","Action":"admin:CreateUser","Resource":"arn:aws:s3:::b"}`), wantErr: "Policy has invalid action"},
		{name: "bucket Principal string", bucket: "b", doc: doc(`{"Effect":"Allow","Principal":"alice","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"}`), wantErr: `invalid Principal "alice"`},
		{name: "bucket Principal service", bucket: "b", doc: doc(`{"Effect":"Allow","Principal":{"Service":"logging.s3.amazonaws.com"},"Action":"s3:PutObject","Resource":"arn:aws:s3:::b/*"}`), wantErr: `principal type "Service" is not supported`},
		{name: "bucket Principal empty", bucket: "b", doc: doc(`{"Effect":"Allow","Principal":{},"Action":"s3:PutObject","Resource":"arn:aws:s3:::b/*"}`), wantErr: "Principal must not be empty"},
		{name: "bucket Principal wildcard ARN", bucket: "b", doc: doc(`{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::123456789012:user/*"},"Action":"s3:PutObject","Resource":"arn:aws:s3:::b/*"}`), wantErr: "principal ARNs cannot hold wildcards"},
		{name: "bucket Principal bad account", bucket: "b", doc: doc(`{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::1234:root"},"Action":"s3:PutObject","Resource":"arn:aws:s3:::b/*"}`), wantErr: "12-digit account ID"},
		{name: "bucket Principal role", bucket: "b", doc: doc(`{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::123456789012:role/r"},"Action":"s3:PutObject","Resource":"arn:aws:s3:::b/*"}`), wantErr: "Coffer's principals are the account root and users"},
		{name: "bucket Principal empty user", bucket: "b", doc: doc(`{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::123456789012:user/"},"Action":"s3:PutObject","Resource":"arn:aws:s3:::b/*"}`), wantErr: "the user name is empty"},
		{name: "bucket Principal number", bucket: "b", doc: doc(`{"Effect":"Allow","Principal":{"AWS":123456789012},"Action":"s3:PutObject","Resource":"arn:aws:s3:::b/*"}`), wantErr: "Principal AWS must be a string or an array of strings"},
		{name: "invalid bucket name", bucket: "a/b", doc: doc(allowGO), wantErr: `invalid bucket name "a/b"`},

		{name: "Condition not an object", doc: cond(`[]`), wantErr: "Condition must be a JSON object"},
		{name: "operator block not an object", doc: cond(`{"StringEquals":"x"}`), wantErr: "condition operator StringEquals must map to a JSON object"},
		{name: "empty operator block", doc: cond(`{"StringEquals":{}}`), wantErr: "condition operator StringEquals has no condition keys"},
		{name: "unknown operator", doc: cond(`{"StringMatches":{"s3:prefix":"a"}}`), wantErr: `unknown condition operator "StringMatches"`},
		{name: "operator case", doc: cond(`{"stringequals":{"s3:prefix":"a"}}`), wantErr: `did you mean "StringEquals"?`},
		{name: "ARN operator", doc: cond(`{"ArnLike":{"aws:SourceArn":"arn:aws:sns:*"}}`), wantErr: `condition operator "ArnLike" is not supported: no supported condition key is an ARN`},
		{name: "binary operator", doc: cond(`{"BinaryEquals":{"s3:prefix":"QQ=="}}`), wantErr: "no supported condition key is binary"},
		{name: "Null with IfExists", doc: cond(`{"NullIfExists":{"s3:prefix":"true"}}`), wantErr: "Null takes neither IfExists nor a set qualifier"},
		{name: "Null with set qualifier", doc: cond(`{"ForAnyValue:Null":{"s3:prefix":"true"}}`), wantErr: "Null takes neither"},
		{name: "unknown key", doc: cond(`{"StringEquals":{"aws:PrincipalTag/team":"a"}}`), wantErr: `unknown condition key "aws:PrincipalTag/team"`},
		{name: "string operator on SourceIp", doc: cond(`{"StringEquals":{"aws:SourceIp":"10.0.0.1"}}`), wantErr: "condition operator StringEquals cannot test aws:SourceIp: use IpAddress or NotIpAddress"},
		{name: "IpAddress on prefix", doc: cond(`{"IpAddress":{"s3:prefix":"10.0.0.0/8"}}`), wantErr: "condition operator IpAddress cannot test s3:prefix"},
		{name: "Date on prefix", doc: cond(`{"DateLessThan":{"s3:prefix":"2020"}}`), wantErr: "cannot test s3:prefix"},
		{name: "Numeric on CurrentTime", doc: cond(`{"NumericLessThan":{"aws:CurrentTime":"1"}}`), wantErr: "use a Date operator"},
		{name: "Bool on prefix", doc: cond(`{"Bool":{"s3:prefix":"true"}}`), wantErr: "condition operator Bool cannot test s3:prefix"},
		{name: "bad CIDR", doc: cond(`{"IpAddress":{"aws:SourceIp":"10.0.0.0/33"}}`), wantErr: `condition IpAddress on aws:SourceIp: "10.0.0.0/33" is not an IP address or CIDR block`},
		{name: "bad address", doc: cond(`{"NotIpAddress":{"aws:SourceIp":"example.com"}}`), wantErr: "is not an IP address"},
		{name: "bad date", doc: cond(`{"DateLessThan":{"aws:CurrentTime":"2020-13-01"}}`), wantErr: `"2020-13-01" is not a date`},
		{name: "date without zone", doc: cond(`{"DateLessThan":{"aws:CurrentTime":"2020-01-01T00:00:00"}}`), wantErr: "is not a date"},
		{name: "bad number", doc: cond(`{"NumericLessThan":{"s3:max-keys":"1e3"}}`), wantErr: `"1e3" is not a number`},
		{name: "NaN", doc: cond(`{"NumericLessThan":{"s3:max-keys":"NaN"}}`), wantErr: "is not a number"},
		{name: "Bool not true or false", doc: cond(`{"Bool":{"aws:SecureTransport":"yes"}}`), wantErr: `"yes" is not true or false`},
		{name: "Null not true or false", doc: cond(`{"Null":{"s3:prefix":"1"}}`), wantErr: "is not true or false"},
		{name: "empty values", doc: cond(`{"StringEquals":{"s3:prefix":[]}}`), wantErr: "has an empty list of values"},
		{name: "object value", doc: cond(`{"StringEquals":{"s3:prefix":{"a":"b"}}}`), wantErr: "a value must be a string, number or boolean, not a JSON object"},
		{name: "null value", doc: cond(`{"StringEquals":{"s3:prefix":null}}`), wantErr: "not a JSON null"},
		{name: "unknown variable", doc: cond(`{"StringEquals":{"s3:prefix":"${aws:userid}"}}`), wantErr: "unknown policy variable ${aws:userid}"},
		{name: "variable of non-string key", doc: cond(`{"StringEquals":{"s3:prefix":"${aws:SourceIp}"}}`), wantErr: "policy variable ${aws:SourceIp} is not supported"},
		{name: "unknown variable in resource", doc: doc(`{"Effect":"Allow","Action":"s3:*","Resource":"arn:aws:s3:::b/${aws:PrincipalTag/team}"}`), wantErr: "unknown policy variable ${aws:PrincipalTag/team}"},
		{name: "unterminated variable", doc: doc(`{"Effect":"Allow","Action":"s3:*","Resource":"arn:aws:s3:::b/${aws:username"}`), wantErr: "unterminated policy variable"},
		{name: "bad default", doc: doc(`{"Effect":"Allow","Action":"s3:*","Resource":"arn:aws:s3:::b/${aws:username, guest}"}`), wantErr: "invalid default value"},
		{name: "lone quote in default", doc: doc(`{"Effect":"Allow","Action":"s3:*","Resource":"arn:aws:s3:::b/${aws:username, 'a'b'}"}`), wantErr: "write a quote inside it as ''"},
		{name: "too many wildcards in resource", doc: doc(`{"Effect":"Allow","Action":"s3:*","Resource":"arn:aws:s3:::b/` + strings.Repeat("?", 65) + `"}`), wantErr: "has 65 wildcards: at most 64 are allowed"},
		{name: "too many wildcards in action", doc: doc(`{"Effect":"Allow","Action":"s3:` + strings.Repeat("*", 65) + `","Resource":"*"}`), wantErr: "at most 64 are allowed"},
		{name: "too many wildcards in StringLike", doc: cond(`{"StringLike":{"s3:prefix":"` + strings.Repeat("*a", 65) + `"}}`), wantErr: "at most 64 are allowed"},
		{name: "variable in numeric value", doc: cond(`{"NumericLessThan":{"s3:max-keys":"${s3:max-keys}"}}`), wantErr: "is not a number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.bucket == "" {
				_, err = ParseIdentity([]byte(tc.doc))
			} else {
				_, err = ParseBucket(tc.bucket, []byte(tc.doc))
			}
			if err == nil {
				t.Fatalf("parse(%s) succeeded, want error containing %q", tc.doc, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parse(%s) error = %q, want it to contain %q", tc.doc, err, tc.wantErr)
			}
			var pe *Error
			if !errors.As(err, &pe) {
				t.Errorf("error %v is a %T, want *Error", err, err)
			}
		})
	}
}

// TestParseAccepts checks documents that are valid though unusual.
func TestParseAccepts(t *testing.T) {
	for _, tc := range []struct {
		name, bucket, doc string
	}{
		{"2008 version", "", `{"Version":"2008-10-17","Statement":[` + allowGO + `]}`},
		{"no version", "", `{"Statement":` + allowGO + `}`},
		{"Id", "", `{"Version":"2012-10-17","Id":"any text here","Statement":[` + allowGO + `]}`},
		{"every s3 action", "", doc(`{"Effect":"Allow","Action":["s3:GetObjectTagging","s3:PutLifecycleConfiguration","s3:CreateJob","s3:GetObjectVersionForReplication"],"Resource":"*"}`)},
		{"unknown-to-Coffer variable in 2008", "", `{"Statement":{"Effect":"Allow","Action":"s3:*","Resource":"arn:aws:s3:::b/${aws:PrincipalTag/team}"}}`},
		{"leading whitespace", "", "\n  " + doc(allowGO)},
		{"bucket Sid with spaces", "b", doc(`{"Sid":"Public read, v2","Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"}`)},
		{"bucket action star", "b", doc(`{"Effect":"Deny","Principal":"*","Action":"*","Resource":["arn:aws:s3:::b","arn:aws:s3:::b/*"]}`)},
		{"bucket resources that may name it (s3-tests' another_bucket)", "b", doc(`{"Effect":"Allow","Principal":{"AWS":"*"},"Action":"s3:ListBucket","Resource":["arn:aws:s3:::*","arn:aws:s3:::*/*","*","arn:aws:s3:::b*","arn:aws:s3:::?/x"]}`)},
		{"another tenant's principal (matches nobody)", "b", doc(`{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::s3tenant1:root"},"Action":"s3:ListBucket","Resource":"arn:aws:s3:::b"}`)},
		{"bucket variable after slash", "b", doc(`{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/${aws:username}/*"}`)},
		{"bucket duplicate Sid", "b", doc(`{"Sid":"A","Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"}`, `{"Sid":"A","Effect":"Deny","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::b/*"}`)},
		{"empty Sid", "", doc(`{"Sid":"","Effect":"Allow","Action":"s3:GetObject","Resource":"*"}`, `{"Sid":"","Effect":"Allow","Action":"s3:PutObject","Resource":"*"}`)},
		{"numbers and booleans as values", "", doc(`{"Effect":"Allow","Action":"s3:ListBucket","Resource":"*","Condition":{"StringEquals":{"s3:prefix":[1,true]},"NumericEquals":{"s3:max-keys":-1.5}}}`)},
		{"default value with comma", "", doc(`{"Effect":"Allow","Action":"s3:*","Resource":"arn:aws:s3:::b/${ aws:username , 'a, b' }"}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.bucket == "" {
				_, err = ParseIdentity([]byte(tc.doc))
			} else {
				_, err = ParseBucket(tc.bucket, []byte(tc.doc))
			}
			if err != nil {
				t.Errorf("parse(%s): %v", tc.doc, err)
			}
		})
	}
}

func TestErrorMessage(t *testing.T) {
	for _, tc := range []struct {
		err  Error
		want string
	}{
		{Error{Msg: "document is empty"}, "policy: document is empty"},
		{Error{Statement: 3, Msg: "missing required field Effect"}, "policy: statement 3: missing required field Effect"},
		{Error{Statement: 2, Sid: "AllowList", Msg: `unknown action "s3:GetObjekt"`}, `policy: statement 2 ("AllowList"): unknown action "s3:GetObjekt"`},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}

func TestRaw(t *testing.T) {
	in := []byte(doc(allowGO))
	p := mustIdentity(t, string(in))
	in[0] = 'X' // the policy keeps its own copy
	got := p.Raw()
	if string(got) != doc(allowGO) {
		t.Fatalf("Raw() = %s, want %s", got, doc(allowGO))
	}
	got[0] = 'Y' // and hands out copies
	if string(p.Raw()) != doc(allowGO) {
		t.Errorf("Raw() changed after its result was modified")
	}
}

func TestKnownAction(t *testing.T) {
	for _, tc := range []struct {
		action string
		want   bool
	}{
		{"s3:GetObject", true},
		{"s3:getobject", true},
		{"s3:PutLifecycleConfiguration", true},
		{"s3:GetObjectTagging", true},
		{"admin:CreateUser", true},
		{AdminServerInfo, true},
		{"s3:GetObjekt", false},
		{"s3:*", false},
		{"*", false},
		{"", false},
		{"iam:CreateUser", false},
	} {
		if got := KnownAction(tc.action); got != tc.want {
			t.Errorf("KnownAction(%q) = %v, want %v", tc.action, got, tc.want)
		}
	}
	seen := map[string]bool{}
	for _, a := range Actions() {
		if seen[strings.ToLower(a)] {
			t.Errorf("action %q listed twice", a)
		}
		seen[strings.ToLower(a)] = true
		if !strings.HasPrefix(a, "s3:") && !strings.HasPrefix(a, "admin:") {
			t.Errorf("action %q has an unknown service", a)
		}
	}
	if n := len(Actions()); n != numActions {
		t.Errorf("len(Actions()) = %d, want %d", n, numActions)
	}
}

func TestDecisionString(t *testing.T) {
	for d, want := range map[Decision]string{NotApplicable: "NotApplicable", Allow: "Allow", Deny: "Deny", 7: "Decision(7)"} {
		if got := d.String(); got != want {
			t.Errorf("Decision(%d).String() = %q, want %q", d, got, want)
		}
	}
}

func TestGlobCanMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, s string
		prefix     bool
		want       bool
	}{
		{"arn:aws:s3:::b", "arn:aws:s3:::b", false, true},
		{"arn:aws:s3:::b*", "arn:aws:s3:::b", false, true},
		{"arn:aws:s3:::b?", "arn:aws:s3:::b", false, false},
		{"arn:aws:s3:::b?", "arn:aws:s3:::b", true, true},
		{"arn:aws:s3:::*/*", "arn:aws:s3:::b/", true, true},
		{"arn:aws:s3:::c*", "arn:aws:s3:::b/", true, false},
		{"arn:aws:s3:::b/${aws:username}/x", "arn:aws:s3:::b/", true, true},
		{"arn:aws:s3:::${x}", "arn:aws:s3:::b", false, true},
		{"", "", false, true},
		{"", "x", true, false},
		{"**?", "", false, false},
		// Many stars against a long string: linear, not exponential.
		{strings.Repeat("*a", 64) + "b", strings.Repeat("a", 200), false, false},
		{strings.Repeat("*a", 64), strings.Repeat("a", 200), false, true},
	} {
		if got := globCanMatch(tc.pattern, tc.s, tc.prefix); got != tc.want {
			t.Errorf("globCanMatch(%q, %q, %v) = %v, want %v", tc.pattern, tc.s, tc.prefix, got, tc.want)
		}
	}
}
