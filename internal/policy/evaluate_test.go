package policy

import (
	"net/netip"
	"strings"
	"testing"
	"time"
)

// doc wraps statements in a 2012-10-17 policy document.
func doc(stmts ...string) string {
	return `{"Version":"2012-10-17","Statement":[` + strings.Join(stmts, ",") + `]}`
}

func mustIdentity(t testing.TB, d string) *Policy {
	t.Helper()
	p, err := ParseIdentity([]byte(d))
	if err != nil {
		t.Fatalf("ParseIdentity(%s): %v", d, err)
	}
	return p
}

func mustBucket(t testing.TB, bucket, d string) *Policy {
	t.Helper()
	p, err := ParseBucket(bucket, []byte(d))
	if err != nil {
		t.Fatalf("ParseBucket(%q, %s): %v", bucket, d, err)
	}
	return p
}

var now = time.Date(2025, 6, 15, 12, 30, 45, 123456789, time.UTC)

// req returns the context of a request by user alice, with edit applied.
func req(action, resource string, edit ...func(c *Context)) Context {
	c := Context{
		Action:      action,
		Resource:    resource,
		Principal:   Principal{User: "alice"},
		Username:    "alice",
		CurrentTime: now,
	}
	for _, e := range edit {
		e(&c)
	}
	return c
}

func withPrefix(p string) func(*Context) {
	return func(c *Context) { c.Prefix, c.HasPrefix = p, true }
}
func withUser(u string) func(*Context) {
	return func(c *Context) { c.Username, c.Principal = u, Principal{User: u} }
}
func anonymous(c *Context) { c.Username, c.Principal = "", Principal{Anonymous: true} }
func asRoot(c *Context)    { c.Username, c.Principal = "", Principal{Root: true} }
func withIP(ip string) func(*Context) {
	return func(c *Context) { c.SourceIP = netip.MustParseAddr(ip) }
}
func withMaxKeys(n string) func(*Context) {
	return func(c *Context) { c.MaxKeys, c.HasMaxKeys = n, true }
}
func withTime(t time.Time) func(*Context) { return func(c *Context) { c.CurrentTime = t } }
func secure(c *Context)                   { c.SecureTransport = true }

const (
	getObj  = "s3:GetObject"
	putObj  = "s3:PutObject"
	list    = "s3:ListBucket"
	objARN  = "arn:aws:s3:::b/k"
	bktARN  = "arn:aws:s3:::b"
	allowGO = `{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"}`
)

// listIf is an identity policy allowing s3:ListBucket on bucket b under
// the given Condition element.
func listIf(cond string) string {
	return doc(`{"Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::b","Condition":` + cond + `}`)
}

type evalCase struct {
	name string
	doc  string
	ctx  Context
	want Decision
}

func runEval(t *testing.T, parse func(testing.TB, string) *Policy, cases []evalCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := parse(t, tc.doc)
			if got := p.Evaluate(&tc.ctx); got != tc.want {
				t.Errorf("Evaluate(%+v) = %v, want %v\npolicy: %s", tc.ctx, got, tc.want, tc.doc)
			}
			// Explain must decide as Evaluate does, naming a statement
			// exactly when one decided.
			if got, ref := p.Explain(&tc.ctx); got != tc.want || (got == NotApplicable) != (ref.Index == 0) {
				t.Errorf("Explain(%+v) = %v, %+v; want %v\npolicy: %s", tc.ctx, got, ref, tc.want, tc.doc)
			}
		})
	}
}

// TestEvaluate checks the evaluation logic within one policy
// (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html)
// and the matching of Action, Resource and their negations.
func TestEvaluate(t *testing.T) {
	runEval(t, mustIdentity, []evalCase{
		{"allow", doc(allowGO), req(getObj, objARN), Allow},
		{"no statement applies", doc(allowGO), req(putObj, objARN), NotApplicable},
		{"deny wins over allow", doc(allowGO, `{"Effect":"Deny","Action":"s3:*","Resource":"*"}`), req(getObj, objARN), Deny},
		{"deny listed first wins too", doc(`{"Effect":"Deny","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/k"}`, allowGO), req(getObj, objARN), Deny},
		{"deny not applying leaves allow", doc(allowGO, `{"Effect":"Deny","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/secret/*"}`), req(getObj, objARN), Allow},
		{"deny alone", doc(`{"Effect":"Deny","Action":"s3:GetObject","Resource":"*"}`), req(getObj, objARN), Deny},
		{"statement as an object", `{"Version":"2012-10-17","Statement":` + allowGO + `}`, req(getObj, objARN), Allow},

		{"action wildcard", doc(`{"Effect":"Allow","Action":"s3:Get*","Resource":"*"}`), req(getObj, objARN), Allow},
		{"action wildcard misses", doc(`{"Effect":"Allow","Action":"s3:Get*","Resource":"*"}`), req(putObj, objARN), NotApplicable},
		{"action ? wildcard", doc(`{"Effect":"Allow","Action":"s3:?etObject","Resource":"*"}`), req(getObj, objARN), Allow},
		{"action star", doc(`{"Effect":"Allow","Action":"*","Resource":"*"}`), req(AdminCreateUser, ""), Allow},
		{"action list", doc(`{"Effect":"Allow","Action":["s3:PutObject","s3:GetObject"],"Resource":"*"}`), req(getObj, objARN), Allow},
		{"action case-insensitive in policy", doc(`{"Effect":"Allow","Action":"S3:getobject","Resource":"*"}`), req(getObj, objARN), Allow},
		{"action case-insensitive in request", doc(`{"Effect":"Allow","Action":"s3:GetObject","Resource":"*"}`), req("S3:GETOBJECT", objARN), Allow},
		{"unknown request action matches s3:*", doc(`{"Effect":"Allow","Action":"s3:*","Resource":"*"}`), req("s3:FutureAction", objARN), Allow},
		{"unknown request action misses s3:Get*", doc(`{"Effect":"Allow","Action":"s3:Get*","Resource":"*"}`), req("s3:FutureAction", objARN), NotApplicable},
		{"admin wildcard", doc(`{"Effect":"Allow","Action":"admin:*","Resource":"*"}`), req(AdminRunGC, ""), Allow},
		{"admin wildcard misses s3", doc(`{"Effect":"Allow","Action":"admin:*","Resource":"*"}`), req(getObj, objARN), NotApplicable},

		{"NotAction allows the rest", doc(`{"Effect":"Allow","NotAction":"s3:DeleteObject","Resource":"*"}`), req(getObj, objARN), Allow},
		{"NotAction excludes", doc(`{"Effect":"Allow","NotAction":"s3:DeleteObject","Resource":"*"}`), req("s3:DeleteObject", objARN), NotApplicable},
		{"NotAction with wildcard", doc(`{"Effect":"Deny","NotAction":"s3:Get*","Resource":"*"}`), req(putObj, objARN), Deny},
		{"NotAction matches unknown action", doc(`{"Effect":"Deny","NotAction":"s3:Get*","Resource":"*"}`), req("s3:FutureAction", objARN), Deny},

		{"resource star crosses slashes", doc(allowGO), req(getObj, "arn:aws:s3:::b/a/b/c"), Allow},
		{"resource b/* is not the bucket", doc(allowGO), req(getObj, bktARN), NotApplicable},
		{"resource other bucket", doc(allowGO), req(getObj, "arn:aws:s3:::bb/k"), NotApplicable},
		{"resource ? is one character", doc(`{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/?"}`), req(getObj, "arn:aws:s3:::b/é"), Allow},
		{"resource ? is not two", doc(`{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/?"}`), req(getObj, "arn:aws:s3:::b/ab"), NotApplicable},
		{"resource middle star", doc(`{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*/x.txt"}`), req(getObj, "arn:aws:s3:::b/a/b/x.txt"), Allow},
		{"resource middle star misses", doc(`{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*/x.txt"}`), req(getObj, "arn:aws:s3:::b/a/x.txt.bak"), NotApplicable},
		{"resource backtracking", doc(`{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*ab*ab"}`), req(getObj, "arn:aws:s3:::b/xabyabab"), Allow},
		{"resource case-sensitive", doc(`{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/Key"}`), req(getObj, "arn:aws:s3:::b/key"), NotApplicable},
		{"resource star", doc(`{"Effect":"Allow","Action":"s3:GetObject","Resource":"*"}`), req(getObj, objARN), Allow},
		{"resource list", doc(`{"Effect":"Allow","Action":"s3:GetObject","Resource":["arn:aws:s3:::a/*","arn:aws:s3:::b/*"]}`), req(getObj, objARN), Allow},

		{"NotResource applies elsewhere", doc(`{"Effect":"Allow","Action":"s3:GetObject","NotResource":"arn:aws:s3:::b/secret/*"}`), req(getObj, objARN), Allow},
		{"NotResource excludes", doc(`{"Effect":"Allow","Action":"s3:GetObject","NotResource":"arn:aws:s3:::b/secret/*"}`), req(getObj, "arn:aws:s3:::b/secret/x"), NotApplicable},
		{"Deny NotResource", doc(allowGO, `{"Effect":"Deny","Action":"s3:*","NotResource":["arn:aws:s3:::b","arn:aws:s3:::b/*"]}`), req(getObj, "arn:aws:s3:::c/k"), Deny},

		{"resource-less by star", doc(`{"Effect":"Allow","Action":"s3:ListAllMyBuckets","Resource":"*"}`), req("s3:ListAllMyBuckets", ""), Allow},
		{"resource-less by arn:aws:s3:::*", doc(`{"Effect":"Allow","Action":"s3:ListAllMyBuckets","Resource":"arn:aws:s3:::*"}`), req("s3:ListAllMyBuckets", ""), Allow},
		{"resource-less not by a bucket pattern", doc(`{"Effect":"Allow","Action":"s3:ListAllMyBuckets","Resource":"arn:aws:s3:::b*"}`), req("s3:ListAllMyBuckets", ""), NotApplicable},
		{"resource-less not by arn:aws:s3:::*/*", doc(`{"Effect":"Allow","Action":"s3:ListAllMyBuckets","Resource":"arn:aws:s3:::*/*"}`), req("s3:ListAllMyBuckets", ""), NotApplicable},
		{"resource-less not by NotResource", doc(`{"Effect":"Allow","Action":"s3:ListAllMyBuckets","NotResource":"arn:aws:s3:::b"}`), req("s3:ListAllMyBuckets", ""), NotApplicable},
		{"resource-less admin action", doc(`{"Effect":"Allow","Action":"admin:CreateUser","Resource":"*"}`), req(AdminCreateUser, ""), Allow},
		{"admin action needs star resource", doc(`{"Effect":"Allow","Action":"admin:CreateUser","Resource":"arn:aws:s3:::b"}`), req(AdminCreateUser, ""), NotApplicable},
		// An S3 ARN never covers IAM's actions on AWS: a policy copied
		// from there grants no administration.
		{"admin action not by arn:aws:s3:::*", doc(`{"Effect":"Allow","Action":"*","Resource":"arn:aws:s3:::*"}`), req(AdminCreateUser, ""), NotApplicable},
		{"s3 resource-less by Action * and arn:aws:s3:::*", doc(`{"Effect":"Allow","Action":"*","Resource":"arn:aws:s3:::*"}`), req("s3:ListAllMyBuckets", ""), Allow},
		// A Deny with NotResource applies to what has no resource (it is
		// none of those listed), as on AWS: a guardrail holds for admin
		// actions too. An Allow with NotResource still grants them nothing.
		{"resource-less denied by Deny NotResource", doc(`{"Effect":"Allow","Action":"admin:*","Resource":"*"}`, `{"Effect":"Deny","Action":"*","NotResource":["arn:aws:s3:::team","arn:aws:s3:::team/*"]}`), req(AdminCreateUser, ""), Deny},
	})
}

// TestEvaluateVariables checks policy variables, their escapes and
// defaults (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_variables.html).
func TestEvaluateVariables(t *testing.T) {
	home := doc(`{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::home/${aws:username}/*"}`)
	runEval(t, mustIdentity, []evalCase{
		{"own home", home, req(getObj, "arn:aws:s3:::home/alice/x"), Allow},
		{"other home", home, req(getObj, "arn:aws:s3:::home/bob/x"), NotApplicable},
		{"other user's own home", home, req(getObj, "arn:aws:s3:::home/bob/x", withUser("bob")), Allow},
		{"absent username matches no resource", home, req(getObj, "arn:aws:s3:::home//x", withUser("")), NotApplicable},
		{"value is literal, not a wildcard", home, req(getObj, "arn:aws:s3:::home/al/x", withUser("a*")), NotApplicable},
		{"key name case-insensitive", doc(`{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::home/${AWS:UserName}/*"}`), req(getObj, "arn:aws:s3:::home/alice/x"), Allow},
		{"default value used", doc(`{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::home/${aws:username, 'guest'}/*"}`), req(getObj, "arn:aws:s3:::home/guest/x", withUser("")), Allow},
		{"default value unused", doc(`{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::home/${aws:username, 'guest'}/*"}`), req(getObj, "arn:aws:s3:::home/guest/x"), NotApplicable},
		{"default with quote", doc(`{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/${aws:username, 'o''k'}"}`), req(getObj, "arn:aws:s3:::b/o'k", withUser("")), Allow},
		{"escape star is literal", doc(`{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/${*}"}`), req(getObj, "arn:aws:s3:::b/*"), Allow},
		{"escape star matches no other", doc(`{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/${*}"}`), req(getObj, "arn:aws:s3:::b/x"), NotApplicable},
		{"escape question mark", doc(`{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/why${?}"}`), req(getObj, "arn:aws:s3:::b/why?"), Allow},
		{"escape dollar", doc(`{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/${$}{aws:username}"}`), req(getObj, "arn:aws:s3:::b/${aws:username}"), Allow},
		{"lone dollar is literal", doc(`{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/$x"}`), req(getObj, "arn:aws:s3:::b/$x"), Allow},
		{"prefix variable", doc(`{"Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::b","Condition":{"StringEquals":{"s3:delimiter":"${s3:prefix}"}}}`), req(list, bktARN, withPrefix("/"), func(c *Context) { c.Delimiter, c.HasDelimiter = "/", true }), Allow},
		{"secure transport variable", doc(`{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/${aws:SecureTransport}"}`), req(getObj, "arn:aws:s3:::b/true", secure), Allow},
		{"two variables", doc(`{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/${aws:username}/${aws:username}"}`), req(getObj, "arn:aws:s3:::b/alice/alice"), Allow},

		// Version 2008-10-17, or none, substitutes nothing: "variables like
		// ${aws:username} are treated as literal strings in the policy".
		{"2008 treats variables literally", `{"Version":"2008-10-17","Statement":{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::home/${aws:username}/*"}}`, req(getObj, "arn:aws:s3:::home/alice/x"), NotApplicable},
		{"2008 literal matches literally", `{"Version":"2008-10-17","Statement":{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::home/${aws:username}/*"}}`, req(getObj, "arn:aws:s3:::home/${aws:username}/x"), Allow},
		{"no Version is 2008", `{"Statement":{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::home/${aws:username}/*"}}`, req(getObj, "arn:aws:s3:::home/alice/x"), NotApplicable},
		{"2008 escapes are not escapes", `{"Statement":{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/${*}"}}`, req(getObj, "arn:aws:s3:::b/${anything}"), Allow},
		{"2008 condition variable literal", `{"Statement":{"Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::b","Condition":{"StringEquals":{"s3:prefix":"${aws:username}"}}}}`, req(list, bktARN, withPrefix("alice")), NotApplicable},

		// "If a variable that has no value ... is used as part of the
		// Resource or NotResource element ..., the resource that includes a
		// policy variable with no value will not match any resource."
		{"NotResource entry without value excludes nothing", doc(`{"Effect":"Deny","Action":"s3:GetObject","NotResource":"arn:aws:s3:::home/${aws:username}/*"}`), req(getObj, "arn:aws:s3:::home/alice/x", withUser("")), Deny},
		{"NotResource entry with value excludes", doc(`{"Effect":"Deny","Action":"s3:GetObject","NotResource":"arn:aws:s3:::home/${aws:username}/*"}`), req(getObj, "arn:aws:s3:::home/alice/x"), NotApplicable},
	})
}

// TestEvaluatePrincipal checks the Principal element of bucket policies.
func TestEvaluatePrincipal(t *testing.T) {
	pol := func(principal string) string {
		return doc(`{"Effect":"Allow","Principal":` + principal + `,"Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"}`)
	}
	bucket := func(t testing.TB, d string) *Policy { return mustBucket(t, "b", d) }
	runEval(t, bucket, []evalCase{
		{"star allows anonymous", pol(`"*"`), req(getObj, objARN, anonymous), Allow},
		{"star allows users", pol(`"*"`), req(getObj, objARN), Allow},
		{"AWS star allows anonymous", pol(`{"AWS":"*"}`), req(getObj, objARN, anonymous), Allow},
		{"AWS star in a list", pol(`{"AWS":["*"]}`), req(getObj, objARN, anonymous), Allow},
		{"user ARN", pol(`{"AWS":"arn:aws:iam::123456789012:user/alice"}`), req(getObj, objARN), Allow},
		{"user ARN with path", pol(`{"AWS":"arn:aws:iam::123456789012:user/staff/alice"}`), req(getObj, objARN), Allow},
		{"user ARN other user", pol(`{"AWS":"arn:aws:iam::123456789012:user/alice"}`), req(getObj, objARN, withUser("bob")), NotApplicable},
		{"user ARN not anonymous", pol(`{"AWS":"arn:aws:iam::123456789012:user/alice"}`), req(getObj, objARN, anonymous), NotApplicable},
		{"user ARN not root", pol(`{"AWS":"arn:aws:iam::123456789012:user/alice"}`), req(getObj, objARN, asRoot), NotApplicable},
		{"user list", pol(`{"AWS":["arn:aws:iam::123456789012:user/bob","arn:aws:iam::123456789012:user/alice"]}`), req(getObj, objARN), Allow},
		{"root ARN", pol(`{"AWS":"arn:aws:iam::123456789012:root"}`), req(getObj, objARN, asRoot), Allow},
		{"root ARN not a user", pol(`{"AWS":"arn:aws:iam::123456789012:root"}`), req(getObj, objARN), NotApplicable},
		{"account ID is root", pol(`{"AWS":"123456789012"}`), req(getObj, objARN, asRoot), Allow},
		{"deny everyone", doc(`{"Effect":"Deny","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::b/*"}`), req(getObj, objARN, anonymous), Deny},

		// A Deny naming the account shuts out every identity of it, not
		// only the root user an Allow naming it means.
		{"deny account ID denies users", doc(`{"Effect":"Deny","Principal":{"AWS":"123456789012"},"Action":"s3:*","Resource":"arn:aws:s3:::b/*"}`), req(getObj, objARN), Deny},
		{"deny account ARN denies users", doc(`{"Effect":"Deny","Principal":{"AWS":"arn:aws:iam::123456789012:root"},"Action":"s3:*","Resource":"arn:aws:s3:::b/*"}`), req(getObj, objARN, withUser("bob")), Deny},
		{"deny account ARN denies root", doc(`{"Effect":"Deny","Principal":{"AWS":"arn:aws:iam::123456789012:root"},"Action":"s3:*","Resource":"arn:aws:s3:::b/*"}`), req(getObj, objARN, asRoot), Deny},
		{"deny account not anonymous", doc(`{"Effect":"Deny","Principal":{"AWS":"123456789012"},"Action":"s3:*","Resource":"arn:aws:s3:::b/*"}`), req(getObj, objARN, anonymous), NotApplicable},
		{"deny account in a list", doc(`{"Effect":"Deny","Principal":{"AWS":["arn:aws:iam::123456789012:user/carol","123456789012"]},"Action":"s3:*","Resource":"arn:aws:s3:::b/*"}`), req(getObj, objARN), Deny},
		{"deny other tenant denies nobody", doc(`{"Effect":"Deny","Principal":{"AWS":"arn:aws:iam::tenant2:root"},"Action":"s3:*","Resource":"arn:aws:s3:::b/*"}`), req(getObj, objARN), NotApplicable},
	})
}

// TestEvaluateConditions checks every condition operator, the logic of
// several keys and values
// (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_condition-logic-multiple-context-keys-or-values.html)
// and absent keys
// (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_condition_operators.html).
func TestEvaluateConditions(t *testing.T) {
	l := func(edit ...func(*Context)) Context { return req(list, bktARN, edit...) }
	runEval(t, mustIdentity, []evalCase{
		{"StringEquals", listIf(`{"StringEquals":{"s3:prefix":"home/"}}`), l(withPrefix("home/")), Allow},
		{"StringEquals other", listIf(`{"StringEquals":{"s3:prefix":"home/"}}`), l(withPrefix("other")), NotApplicable},
		{"StringEquals absent", listIf(`{"StringEquals":{"s3:prefix":"home/"}}`), l(), NotApplicable},
		{"StringEquals empty present", listIf(`{"StringEquals":{"s3:prefix":""}}`), l(withPrefix("")), Allow},
		{"StringEquals star is literal", listIf(`{"StringEquals":{"s3:prefix":"a*"}}`), l(withPrefix("ab")), NotApplicable},
		{"StringEquals case-sensitive", listIf(`{"StringEquals":{"s3:prefix":"Home"}}`), l(withPrefix("home")), NotApplicable},
		{"StringNotEquals", listIf(`{"StringNotEquals":{"s3:prefix":"home/"}}`), l(withPrefix("other")), Allow},
		{"StringNotEquals equal", listIf(`{"StringNotEquals":{"s3:prefix":"home/"}}`), l(withPrefix("home/")), NotApplicable},
		{"StringNotEquals absent is true", listIf(`{"StringNotEquals":{"s3:prefix":"home/"}}`), l(), Allow},
		{"StringEqualsIgnoreCase", listIf(`{"StringEqualsIgnoreCase":{"aws:UserAgent":"AWS-CLI"}}`), l(func(c *Context) { c.UserAgent = "aws-cli" }), Allow},
		{"StringEqualsIgnoreCase other", listIf(`{"StringEqualsIgnoreCase":{"aws:UserAgent":"AWS-CLI"}}`), l(func(c *Context) { c.UserAgent = "boto3" }), NotApplicable},
		{"StringEqualsIgnoreCase with variable", listIf(`{"StringEqualsIgnoreCase":{"s3:prefix":"HOME/${aws:username}"}}`), l(withPrefix("home/ALICE")), Allow},
		{"StringEqualsIgnoreCase folding changes length", listIf(`{"StringEqualsIgnoreCase":{"s3:prefix":"${aws:username}/k"}}`), l(withUser("ſ"), withPrefix("S/\u212a")), Allow},
		{"StringNotEqualsIgnoreCase", listIf(`{"StringNotEqualsIgnoreCase":{"aws:UserAgent":"AWS-CLI"}}`), l(func(c *Context) { c.UserAgent = "aws-cli" }), NotApplicable},
		{"StringNotEqualsIgnoreCase absent", listIf(`{"StringNotEqualsIgnoreCase":{"aws:UserAgent":"AWS-CLI"}}`), l(), Allow},
		{"StringLike", listIf(`{"StringLike":{"s3:prefix":"home/*"}}`), l(withPrefix("home/x/y")), Allow},
		{"StringLike ?", listIf(`{"StringLike":{"s3:prefix":"v?"}}`), l(withPrefix("v1")), Allow},
		{"StringLike misses", listIf(`{"StringLike":{"s3:prefix":"home/*"}}`), l(withPrefix("other/")), NotApplicable},
		{"StringLike absent", listIf(`{"StringLike":{"s3:prefix":"*"}}`), l(), NotApplicable},
		{"StringNotLike", listIf(`{"StringNotLike":{"s3:prefix":"secret/*"}}`), l(withPrefix("public/")), Allow},
		{"StringNotLike matching", listIf(`{"StringNotLike":{"s3:prefix":"secret/*"}}`), l(withPrefix("secret/x")), NotApplicable},
		{"StringNotLike absent is true", listIf(`{"StringNotLike":{"s3:prefix":"secret/*"}}`), l(), Allow},
		{"StringLike variable", listIf(`{"StringLike":{"s3:prefix":["","home/","home/${aws:username}/*"]}}`), l(withPrefix("home/alice/docs")), Allow},
		{"StringLike variable other user", listIf(`{"StringLike":{"s3:prefix":["","home/","home/${aws:username}/*"]}}`), l(withPrefix("home/bob/docs")), NotApplicable},
		{"StringLike escaped star", listIf(`{"StringLike":{"s3:prefix":"a${*}"}}`), l(withPrefix("ab")), NotApplicable},
		{"StringLike escaped star literal", listIf(`{"StringLike":{"s3:prefix":"a${*}"}}`), l(withPrefix("a*")), Allow},
		// "Condition operators like StringEquals or StringLike do not match"
		// a variable with no value; "inverted condition operators like
		// StringNotEquals or StringNotLike do match against a null value".
		{"variable without value: positive", listIf(`{"StringEquals":{"s3:prefix":"${aws:username}"}}`), l(withUser(""), withPrefix("")), NotApplicable},
		{"variable without value: negated", listIf(`{"StringNotEquals":{"s3:prefix":"${aws:username}"}}`), l(withUser(""), withPrefix("")), Allow},
		{"variable without value: other value matches", listIf(`{"StringEquals":{"s3:prefix":["${aws:username}","x"]}}`), l(withUser(""), withPrefix("x")), Allow},
		{"string operator on Bool key", listIf(`{"StringEquals":{"aws:SecureTransport":"true"}}`), l(secure), Allow},
		{"string operator on max-keys", listIf(`{"StringEquals":{"s3:max-keys":"10"}}`), l(withMaxKeys("10")), Allow},
		{"referer", listIf(`{"StringLike":{"aws:Referer":"https://example.com/*"}}`), l(func(c *Context) { c.Referer = "https://example.com/page" }), Allow},
		{"signature version", listIf(`{"StringEquals":{"s3:signatureversion":"AWS4-HMAC-SHA256"}}`), l(func(c *Context) { c.SignatureVersion = "AWS4-HMAC-SHA256" }), Allow},
		{"auth type", listIf(`{"StringNotEquals":{"s3:authType":"REST-QUERY-STRING"}}`), l(func(c *Context) { c.AuthType = "REST-QUERY-STRING" }), NotApplicable},
		{"username key", listIf(`{"StringEquals":{"aws:username":["bob","alice"]}}`), l(), Allow},
		{"delimiter key", listIf(`{"StringEquals":{"s3:delimiter":"/"}}`), l(func(c *Context) { c.Delimiter, c.HasDelimiter = "/", true }), Allow},

		{"values OR", listIf(`{"StringEquals":{"s3:prefix":["a","b"]}}`), l(withPrefix("b")), Allow},
		{"negated values NOR: one equal", listIf(`{"StringNotEquals":{"s3:prefix":["a","b"]}}`), l(withPrefix("b")), NotApplicable},
		{"negated values NOR: none equal", listIf(`{"StringNotEquals":{"s3:prefix":["a","b"]}}`), l(withPrefix("c")), Allow},
		{"keys AND: both", listIf(`{"StringEquals":{"s3:prefix":"a","s3:delimiter":"/"}}`), l(withPrefix("a"), func(c *Context) { c.Delimiter, c.HasDelimiter = "/", true }), Allow},
		{"keys AND: one", listIf(`{"StringEquals":{"s3:prefix":"a","s3:delimiter":"/"}}`), l(withPrefix("a")), NotApplicable},
		{"operators AND: both", listIf(`{"StringEquals":{"s3:prefix":"a"},"Bool":{"aws:SecureTransport":"true"}}`), l(withPrefix("a"), secure), Allow},
		{"operators AND: one", listIf(`{"StringEquals":{"s3:prefix":"a"},"Bool":{"aws:SecureTransport":"true"}}`), l(withPrefix("a")), NotApplicable},
		{"empty condition element", listIf(`{}`), l(), Allow},
		{"key names case-insensitive", listIf(`{"StringEquals":{"S3:PREFIX":"a"},"IpAddress":{"AWS:SOURCEIP":"10.0.0.0/8"}}`), l(withPrefix("a"), withIP("10.1.2.3")), Allow},

		{"NumericLessThanEquals below", listIf(`{"NumericLessThanEquals":{"s3:max-keys":"10"}}`), l(withMaxKeys("5")), Allow},
		{"NumericLessThanEquals equal", listIf(`{"NumericLessThanEquals":{"s3:max-keys":"10"}}`), l(withMaxKeys("10")), Allow},
		{"NumericLessThanEquals above", listIf(`{"NumericLessThanEquals":{"s3:max-keys":"10"}}`), l(withMaxKeys("11")), NotApplicable},
		{"NumericLessThanEquals absent", listIf(`{"NumericLessThanEquals":{"s3:max-keys":"10"}}`), l(), NotApplicable},
		{"NumericLessThanEquals not a number", listIf(`{"NumericLessThanEquals":{"s3:max-keys":"10"}}`), l(withMaxKeys("ten")), NotApplicable},
		{"NumericLessThan", listIf(`{"NumericLessThan":{"s3:max-keys":10}}`), l(withMaxKeys("10")), NotApplicable},
		{"NumericGreaterThan", listIf(`{"NumericGreaterThan":{"s3:max-keys":"10"}}`), l(withMaxKeys("11")), Allow},
		{"NumericGreaterThanEquals", listIf(`{"NumericGreaterThanEquals":{"s3:max-keys":"10.5"}}`), l(withMaxKeys("10")), NotApplicable},
		{"NumericEquals", listIf(`{"NumericEquals":{"s3:max-keys":["100","1000"]}}`), l(withMaxKeys("1000")), Allow},
		{"NumericEquals compares numbers", listIf(`{"NumericEquals":{"s3:max-keys":"100"}}`), l(withMaxKeys("0100")), Allow},
		{"NumericNotEquals", listIf(`{"NumericNotEquals":{"s3:max-keys":"1000"}}`), l(withMaxKeys("1000")), NotApplicable},
		{"NumericNotEquals absent is true", listIf(`{"NumericNotEquals":{"s3:max-keys":"1000"}}`), l(), Allow},
		{"NumericNotEquals not a number", listIf(`{"NumericNotEquals":{"s3:max-keys":"1000"}}`), l(withMaxKeys("x")), Allow},
		{"Numeric on EpochTime", listIf(`{"NumericLessThan":{"aws:EpochTime":"1750000000"}}`), l(), Allow},
		{"Numeric on EpochTime after", listIf(`{"NumericGreaterThan":{"aws:EpochTime":"1750000000"}}`), l(), NotApplicable},

		{"DateLessThan", listIf(`{"DateLessThan":{"aws:CurrentTime":"2030-01-01T00:00:00Z"}}`), l(), Allow},
		{"DateLessThan after", listIf(`{"DateLessThan":{"aws:CurrentTime":"2025-01-01T00:00:00Z"}}`), l(), NotApplicable},
		{"DateLessThan absent", listIf(`{"DateLessThan":{"aws:CurrentTime":"2030-01-01T00:00:00Z"}}`), l(withTime(time.Time{})), NotApplicable},
		{"DateGreaterThan epoch value", listIf(`{"DateGreaterThan":{"aws:CurrentTime":"1700000000"}}`), l(), Allow},
		{"DateGreaterThan epoch number", listIf(`{"DateGreaterThan":{"aws:CurrentTime":1700000000}}`), l(), Allow},
		{"DateGreaterThanEquals date only", listIf(`{"DateGreaterThanEquals":{"aws:CurrentTime":"2025-06-15"}}`), l(), Allow},
		{"DateLessThanEquals with zone", listIf(`{"DateLessThanEquals":{"aws:CurrentTime":"2025-06-15T14:30:45+02:00"}}`), l(), Allow},
		{"DateEquals to the second", listIf(`{"DateEquals":{"aws:CurrentTime":"2025-06-15T12:30:45Z"}}`), l(), Allow},
		{"DateEquals fraction", listIf(`{"DateEquals":{"aws:CurrentTime":"2025-06-15T12:30:45.5Z"}}`), l(), NotApplicable},
		{"DateNotEquals", listIf(`{"DateNotEquals":{"aws:CurrentTime":"2025-06-15T12:30:45Z"}}`), l(), NotApplicable},
		{"DateNotEquals other", listIf(`{"DateNotEquals":{"aws:CurrentTime":"2025-06-15T12:30:46Z"}}`), l(), Allow},
		{"Date on EpochTime", listIf(`{"DateLessThan":{"aws:EpochTime":"2026"}}`), l(), Allow},
		{"Date minutes only", listIf(`{"DateGreaterThan":{"aws:CurrentTime":"2025-06-15T12:30Z"}}`), l(), Allow},

		{"Bool true", listIf(`{"Bool":{"aws:SecureTransport":"true"}}`), l(secure), Allow},
		{"Bool true insecure", listIf(`{"Bool":{"aws:SecureTransport":"true"}}`), l(), NotApplicable},
		{"Bool JSON false", listIf(`{"Bool":{"aws:SecureTransport":false}}`), l(), Allow},
		{"Bool deny insecure", doc(allowGO, `{"Effect":"Deny","Action":"s3:*","Resource":"*","Condition":{"Bool":{"aws:SecureTransport":"false"}}}`), req(getObj, objARN), Deny},

		{"IpAddress inside", listIf(`{"IpAddress":{"aws:SourceIp":"203.0.113.0/24"}}`), l(withIP("203.0.113.7")), Allow},
		{"IpAddress outside", listIf(`{"IpAddress":{"aws:SourceIp":"203.0.113.0/24"}}`), l(withIP("198.51.100.1")), NotApplicable},
		{"IpAddress absent", listIf(`{"IpAddress":{"aws:SourceIp":"203.0.113.0/24"}}`), l(), NotApplicable},
		{"IpAddress single address is /32", listIf(`{"IpAddress":{"aws:SourceIp":"203.0.113.7"}}`), l(withIP("203.0.113.7")), Allow},
		{"IpAddress single address other", listIf(`{"IpAddress":{"aws:SourceIp":"203.0.113.7"}}`), l(withIP("203.0.113.8")), NotApplicable},
		{"IpAddress IPv6", listIf(`{"IpAddress":{"aws:SourceIp":["203.0.113.0/24","2001:DB8:1234:5678::/64"]}}`), l(withIP("2001:db8:1234:5678::1")), Allow},
		{"IpAddress IPv4-mapped request", listIf(`{"IpAddress":{"aws:SourceIp":"203.0.113.0/24"}}`), l(withIP("::ffff:203.0.113.9")), Allow},
		{"IpAddress IPv4-mapped policy", listIf(`{"IpAddress":{"aws:SourceIp":"::ffff:203.0.113.0/120"}}`), l(withIP("203.0.113.9")), Allow},
		{"IpAddress non-canonical CIDR", listIf(`{"IpAddress":{"aws:SourceIp":"10.1.2.3/8"}}`), l(withIP("10.200.0.1")), Allow},
		{"NotIpAddress outside", listIf(`{"NotIpAddress":{"aws:SourceIp":"203.0.113.0/24"}}`), l(withIP("198.51.100.1")), Allow},
		{"NotIpAddress inside", listIf(`{"NotIpAddress":{"aws:SourceIp":"203.0.113.0/24"}}`), l(withIP("203.0.113.1")), NotApplicable},
		{"NotIpAddress absent is true", listIf(`{"NotIpAddress":{"aws:SourceIp":"203.0.113.0/24"}}`), l(), Allow},

		{"IfExists absent is true", listIf(`{"StringEqualsIfExists":{"s3:prefix":"a"}}`), l(), Allow},
		{"IfExists present matching", listIf(`{"StringEqualsIfExists":{"s3:prefix":"a"}}`), l(withPrefix("a")), Allow},
		{"IfExists present other", listIf(`{"StringEqualsIfExists":{"s3:prefix":"a"}}`), l(withPrefix("b")), NotApplicable},
		{"negated IfExists absent is true", listIf(`{"StringNotEqualsIfExists":{"s3:prefix":"a"}}`), l(), Allow},
		{"negated IfExists present equal", listIf(`{"StringNotEqualsIfExists":{"s3:prefix":"a"}}`), l(withPrefix("a")), NotApplicable},
		{"Numeric IfExists absent", listIf(`{"NumericLessThanEqualsIfExists":{"s3:max-keys":"10"}}`), l(), Allow},
		{"Numeric IfExists present", listIf(`{"NumericLessThanEqualsIfExists":{"s3:max-keys":"10"}}`), l(withMaxKeys("100")), NotApplicable},
		{"IpAddress IfExists absent", listIf(`{"IpAddressIfExists":{"aws:SourceIp":"10.0.0.0/8"}}`), l(), Allow},
		{"Date IfExists absent", listIf(`{"DateLessThanIfExists":{"aws:CurrentTime":"2000-01-01T00:00:00Z"}}`), l(withTime(time.Time{})), Allow},
		{"Bool IfExists", listIf(`{"BoolIfExists":{"aws:SecureTransport":"true"}}`), l(), NotApplicable},
		{"deny with negated IfExists and absent key still denies", doc(allowGO, `{"Effect":"Deny","Action":"s3:*","Resource":"*","Condition":{"StringNotEqualsIfExists":{"aws:UserAgent":"trusted"}}}`), req(getObj, objARN), Deny},

		{"Null true absent", listIf(`{"Null":{"s3:prefix":"true"}}`), l(), Allow},
		{"Null true present", listIf(`{"Null":{"s3:prefix":"true"}}`), l(withPrefix("")), NotApplicable},
		{"Null false present", listIf(`{"Null":{"s3:prefix":"false"}}`), l(withPrefix("")), Allow},
		{"Null false absent", listIf(`{"Null":{"s3:prefix":false}}`), l(), NotApplicable},
		{"Null on SourceIp", listIf(`{"Null":{"aws:SourceIp":"false"}}`), l(withIP("10.0.0.1")), Allow},
		{"Null on CurrentTime", listIf(`{"Null":{"aws:CurrentTime":"true"}}`), l(withTime(time.Time{})), Allow},
		{"Null SecureTransport is always present", listIf(`{"Null":{"aws:SecureTransport":"true"}}`), l(), NotApplicable},

		{"ForAnyValue absent is false", listIf(`{"ForAnyValue:StringEquals":{"s3:prefix":"a"}}`), l(), NotApplicable},
		{"ForAnyValue present matching", listIf(`{"ForAnyValue:StringEquals":{"s3:prefix":"a"}}`), l(withPrefix("a")), Allow},
		{"ForAnyValue present other", listIf(`{"ForAnyValue:StringEquals":{"s3:prefix":"a"}}`), l(withPrefix("b")), NotApplicable},
		{"ForAnyValue ignores IfExists", listIf(`{"ForAnyValue:StringEqualsIfExists":{"s3:prefix":"a"}}`), l(), NotApplicable},
		{"ForAnyValue negated absent is false", listIf(`{"ForAnyValue:StringNotEquals":{"s3:prefix":"a"}}`), l(), NotApplicable},
		{"ForAnyValue negated present", listIf(`{"ForAnyValue:StringNotEquals":{"s3:prefix":"a"}}`), l(withPrefix("b")), Allow},
		{"ForAllValues absent is true", listIf(`{"ForAllValues:StringEquals":{"s3:prefix":"a"}}`), l(), Allow},
		{"ForAllValues present matching", listIf(`{"ForAllValues:StringLike":{"s3:prefix":["a*","b*"]}}`), l(withPrefix("bc")), Allow},
		{"ForAllValues present other", listIf(`{"ForAllValues:StringEquals":{"s3:prefix":"a"}}`), l(withPrefix("b")), NotApplicable},
		{"ForAllValues negated absent is true", listIf(`{"ForAllValues:StringNotLike":{"s3:prefix":"a*"}}`), l(), Allow},
		{"ForAllValues negated present matching", listIf(`{"ForAllValues:StringNotLike":{"s3:prefix":"a*"}}`), l(withPrefix("ab")), NotApplicable},
		{"ForAllValues IfExists absent", listIf(`{"ForAllValues:StringEqualsIfExists":{"s3:prefix":"a"}}`), l(), Allow},
	})
}

// TestConcurrentUse evaluates one policy from several goroutines; run
// with -race it checks that a Policy is safe for concurrent use.
func TestConcurrentUse(t *testing.T) {
	p := mustIdentity(t, tenStatements)
	done := make(chan Decision)
	for range 4 {
		go func() {
			c := benchContext("s3:PutObject", "arn:aws:s3:::home/alice/x")
			d := NotApplicable
			for range 200 {
				d = p.Evaluate(&c)
				p.CouldAllowInBucket(Principal{User: "alice"}, "alice", "home", visible...)
				p.Public()
			}
			done <- d
		}()
	}
	for range 4 {
		if d := <-done; d != Allow {
			t.Errorf("Evaluate = %v, want Allow", d)
		}
	}
}

// TestEvaluateTagConditions checks the tag condition keys:
// s3:ExistingObjectTag/<key> (the object's tags, loaded only when a
// condition needs them), s3:RequestObjectTag/<key> and the multivalued
// s3:RequestObjectTagKeys.
func TestEvaluateTagConditions(t *testing.T) {
	getIf := func(cond string) string {
		return doc(`{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*","Condition":` + cond + `}`)
	}
	putIf := func(cond string) string {
		return doc(`{"Effect":"Allow","Action":"s3:PutObject","Resource":"arn:aws:s3:::b/*","Condition":` + cond + `}`)
	}
	existing := func(tags map[string]string) func(*Context) {
		return func(c *Context) { c.ExistingObjectTags = func() map[string]string { return tags } }
	}
	reqTags := func(tags map[string]string) func(*Context) {
		return func(c *Context) { c.RequestObjectTags = tags }
	}
	pub := map[string]string{"security": "public", "foo": "bar"}
	get := func(edit ...func(*Context)) Context { return req(getObj, objARN, edit...) }
	put := func(edit ...func(*Context)) Context { return req(putObj, objARN, edit...) }
	runEval(t, mustIdentity, []evalCase{
		{"existing tag matches", getIf(`{"StringEquals":{"s3:ExistingObjectTag/security":"public"}}`), get(existing(pub)), Allow},
		{"existing tag other value", getIf(`{"StringEquals":{"s3:ExistingObjectTag/security":"public"}}`), get(existing(map[string]string{"security": "private"})), NotApplicable},
		{"existing tag absent", getIf(`{"StringEquals":{"s3:ExistingObjectTag/security":"public"}}`), get(existing(map[string]string{"security1": "public"})), NotApplicable},
		{"existing tags unknown", getIf(`{"StringEquals":{"s3:ExistingObjectTag/security":"public"}}`), get(), NotApplicable},
		{"existing tag key is case-sensitive", getIf(`{"StringEquals":{"s3:ExistingObjectTag/Security":"public"}}`), get(existing(pub)), NotApplicable},
		{"existing tag key prefix case-insensitive", getIf(`{"StringEquals":{"S3:existingObjectTag/security":"public"}}`), get(existing(pub)), Allow},
		{"existing tag Null", getIf(`{"Null":{"s3:ExistingObjectTag/owner":"true"}}`), get(existing(pub)), Allow},
		{"request tag", putIf(`{"StringEquals":{"s3:RequestObjectTag/security":"public"}}`), put(reqTags(pub)), Allow},
		{"request tag missing", putIf(`{"StringEquals":{"s3:RequestObjectTag/security":"public"}}`), put(), NotApplicable},
		{"request tag keys all allowed", putIf(`{"ForAllValues:StringEquals":{"s3:RequestObjectTagKeys":["security","foo"]}}`), put(reqTags(pub)), Allow},
		{"request tag keys one not allowed", putIf(`{"ForAllValues:StringEquals":{"s3:RequestObjectTagKeys":["security"]}}`), put(reqTags(pub)), NotApplicable},
		{"request tag keys none: ForAllValues true", putIf(`{"ForAllValues:StringEquals":{"s3:RequestObjectTagKeys":["security"]}}`), put(), Allow},
		{"request tag keys any", putIf(`{"ForAnyValue:StringEquals":{"s3:RequestObjectTagKeys":"foo"}}`), put(reqTags(pub)), Allow},
		{"request tag keys any none", putIf(`{"ForAnyValue:StringEquals":{"s3:RequestObjectTagKeys":"foo"}}`), put(), NotApplicable},
		{"request tag keys not equals", putIf(`{"ForAllValues:StringNotEquals":{"s3:RequestObjectTagKeys":"secret"}}`), put(reqTags(pub)), Allow},
		{"request tag keys not equals hit", putIf(`{"ForAllValues:StringNotEquals":{"s3:RequestObjectTagKeys":"foo"}}`), put(reqTags(pub)), NotApplicable},
	})
	// The object's tags are read only for a condition that needs them,
	// and once.
	calls := 0
	c := get(func(c *Context) {
		c.ExistingObjectTags = func() map[string]string { calls++; return pub }
	})
	mustIdentity(t, doc(allowGO)).Evaluate(&c)
	if calls != 0 {
		t.Errorf("a policy without tag conditions loaded the object's tags %d times", calls)
	}
	p := mustIdentity(t, getIf(`{"StringEquals":{"s3:ExistingObjectTag/security":"public","s3:ExistingObjectTag/foo":"bar"}}`))
	if got := p.Evaluate(&c); got != Allow || calls != 1 {
		t.Errorf("Evaluate = %v after %d loads of the tags, want Allow after 1", got, calls)
	}
	if _, err := ParseIdentity([]byte(getIf(`{"StringEquals":{"s3:ExistingObjectTag/":"x"}}`))); err == nil {
		t.Error("a tag condition without a tag key parsed")
	}
}

func TestEvaluateHeaderConditions(t *testing.T) {
	putIf := func(cond string) string {
		return doc(`{"Effect":"Allow","Action":"s3:PutObject","Resource":"arn:aws:s3:::b/*","Condition":` + cond + `}`)
	}
	headers := func(kv ...string) func(*Context) {
		return func(c *Context) {
			c.Header = map[string][]string{}
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == "X-Amz-Copy-Source" {
					c.CopySource = kv[i+1]
					continue
				}
				c.Header[kv[i]] = append(c.Header[kv[i]], kv[i+1])
			}
		}
	}
	put := func(edit ...func(*Context)) Context { return req(putObj, objARN, edit...) }
	runEval(t, mustIdentity, []evalCase{
		{"acl matches", putIf(`{"StringEquals":{"s3:x-amz-acl":"bucket-owner-full-control"}}`), put(headers("X-Amz-Acl", "bucket-owner-full-control")), Allow},
		{"acl other", putIf(`{"StringEquals":{"s3:x-amz-acl":"bucket-owner-full-control"}}`), put(headers("X-Amz-Acl", "public-read")), NotApplicable},
		{"acl absent", putIf(`{"StringEquals":{"s3:x-amz-acl":"bucket-owner-full-control"}}`), put(headers()), NotApplicable},
		{"acl on two lines is both", putIf(`{"StringEquals":{"s3:x-amz-acl":"bucket-owner-full-control"}}`), put(headers("X-Amz-Acl", "bucket-owner-full-control", "X-Amz-Acl", "public-read")), NotApplicable},
		{"acl absent, no headers known", putIf(`{"StringEquals":{"s3:x-amz-acl":"private"}}`), put(), NotApplicable},
		{"acl Null", putIf(`{"Null":{"S3:X-Amz-Acl":"true"}}`), put(headers("X-Amz-Grant-Read", `id="x"`)), Allow},
		{"grant", putIf(`{"StringLike":{"s3:x-amz-grant-read":"*AllUsers*"}}`), put(headers("X-Amz-Grant-Read", `uri="http://acs.amazonaws.com/groups/global/AllUsers"`)), Allow},
		{"copy source like", putIf(`{"StringLike":{"s3:x-amz-copy-source":"src/public/*"}}`), put(headers("X-Amz-Copy-Source", "src/public/a")), Allow},
		{"copy source elsewhere", putIf(`{"StringLike":{"s3:x-amz-copy-source":"src/public/*"}}`), put(headers("X-Amz-Copy-Source", "src/private/a")), NotApplicable},
		{"metadata directive", putIf(`{"StringEquals":{"s3:x-amz-metadata-directive":"COPY"}}`), put(headers("X-Amz-Metadata-Directive", "COPY")), Allow},
		{"storage class not", putIf(`{"StringNotEquals":{"s3:x-amz-storage-class":"GLACIER"}}`), put(headers()), Allow},
		{"if-none-match required", putIf(`{"Null":{"s3:if-none-match":"false"}}`), put(headers("If-None-Match", "*")), Allow},
		{"if-none-match missing", putIf(`{"Null":{"s3:if-none-match":"false"}}`), put(headers()), NotApplicable},
	})
	if got, ok := KeyHeader("S3:X-AMZ-COPY-SOURCE"); !ok || got != "X-Amz-Copy-Source" {
		t.Errorf("KeyHeader(s3:x-amz-copy-source) = %q, %v", got, ok)
	}
	if _, ok := KeyHeader("s3:prefix"); ok {
		t.Error("s3:prefix is reported as a request-header key")
	}
}

// A request whose matching runs out of its budget is denied, whatever the
// statements say (fail closed), by this policy and every other evaluated
// for it; ordinary policies on long values stay well inside the budget.
func TestMatchBudget(t *testing.T) {
	costlyUA := func(c *Context) { c.UserAgent = costlyUserAgent }
	costlyPat := `"*` + strings.Repeat("?", maxWildcards-1) + `b"`
	pats := strings.TrimSuffix(strings.Repeat(costlyPat+",", 40), ",")
	cases := []struct {
		name string
		p    *Policy
	}{
		{"deny", costlyPolicy(t)},
		{"allow unless like", mustIdentity(t, doc(`{"Effect":"Allow","Action":"s3:*","Resource":"*","Condition":{"StringNotLike":{"aws:UserAgent":[`+pats+`]}}}`))},
		{"allow if like", mustIdentity(t, doc(`{"Effect":"Allow","Action":"s3:*","Resource":"*","Condition":{"StringLike":{"aws:UserAgent":[`+pats+`,"*"]}}}`))},
		{"resource", mustIdentity(t, doc(`{"Effect":"Allow","Action":"s3:*","Resource":[`+
			strings.ReplaceAll(pats, `"*`, `"arn:aws:s3:::b/*`)+`]}`))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := req(getObj, "arn:aws:s3:::b/k", anonymous, costlyUA)
			if tc.name == "resource" {
				c = req(getObj, "arn:aws:s3:::b/"+costlyUserAgent)
			}
			if tc.name != "deny" {
				c.Principal, c.Username = Principal{User: "alice"}, "alice"
			}
			if d := tc.p.Evaluate(&c); d != Deny || !c.Costly() {
				t.Fatalf("Evaluate = %v, costly %v; want Deny, costly", d, c.Costly())
			}
			// Every later policy of the request denies too.
			if d := mustCanned(t, "readwrite").Evaluate(&c); d != Deny {
				t.Errorf("a later policy's Evaluate = %v, want Deny", d)
			}
			if d, ref := mustCanned(t, "readwrite").Explain(&c); d != Deny || ref != (StatementRef{}) {
				t.Errorf("Explain = %v %+v, want Deny and no statement", d, ref)
			}
		})
	}
	t.Run("ordinary", func(t *testing.T) {
		p := mustIdentity(t, tenStatements)
		c := benchContext("s3:PutObject", "arn:aws:s3:::home/alice/"+strings.Repeat("x", 1000))
		c.UserAgent = strings.Repeat("Mozilla/5.0 ", 5000) // 60 KB
		for range 20 {
			if d := p.Evaluate(&c); d != Allow || c.Costly() {
				t.Fatalf("Evaluate = %v, costly %v; want Allow", d, c.Costly())
			}
		}
		if c.spent > matchBudget/10 {
			t.Errorf("20 evaluations of 10 statements on a 60 KB User-Agent spent %d of the budget's %d steps", c.spent, matchBudget)
		}
	})
}
