package policy

import (
	"net/netip"
	"strings"
	"testing"
)

// tenStatements is a realistic policy of 10 statements with conditions
// and ${aws:username}.
var tenStatements = doc(
	`{"Sid":"DenyInsecure","Effect":"Deny","Action":"s3:*","Resource":"*","Condition":{"Bool":{"aws:SecureTransport":"false"}}}`,
	`{"Sid":"DenyOutsideOffice","Effect":"Deny","Action":"s3:*","Resource":"*","Condition":{"NotIpAddress":{"aws:SourceIp":["203.0.113.0/24","2001:db8::/32"]}}}`,
	`{"Sid":"DenyDeletes","Effect":"Deny","Action":["s3:DeleteObject","s3:DeleteObjectVersion"],"Resource":"arn:aws:s3:::archive/*"}`,
	`{"Sid":"ListAll","Effect":"Allow","Action":["s3:ListAllMyBuckets","s3:GetBucketLocation"],"Resource":"arn:aws:s3:::*"}`,
	`{"Sid":"ListHome","Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::home","Condition":{"StringLike":{"s3:prefix":["","home/","home/${aws:username}/*"]},"NumericLessThanEquals":{"s3:max-keys":"1000"}}}`,
	`{"Sid":"SharedRead","Effect":"Allow","Action":["s3:GetObject","s3:GetObjectVersion"],"Resource":"arn:aws:s3:::shared/*","Condition":{"DateLessThan":{"aws:CurrentTime":"2030-01-01T00:00:00Z"}}}`,
	`{"Sid":"Reports","Effect":"Allow","Action":"s3:PutObject","Resource":["arn:aws:s3:::reports/${aws:username}/*","arn:aws:s3:::reports/shared/*"]}`,
	`{"Sid":"NoCurl","Effect":"Allow","Action":"s3:Get*","Resource":"arn:aws:s3:::public/*","Condition":{"StringNotLikeIfExists":{"aws:UserAgent":"curl/*"}}}`,
	`{"Sid":"Tagging","Effect":"Allow","Action":["s3:GetObjectTagging","s3:PutObjectTagging"],"Resource":"arn:aws:s3:::home/${aws:username}/*"}`,
	`{"Sid":"Home","Effect":"Allow","Action":"s3:*","Resource":["arn:aws:s3:::home/${aws:username}","arn:aws:s3:::home/${aws:username}/*"],"Condition":{"StringEquals":{"s3:signatureversion":"AWS4-HMAC-SHA256"}}}`,
)

func benchContext(action, resource string) Context {
	return Context{
		Action:           action,
		Resource:         resource,
		Principal:        Principal{User: "alice"},
		Username:         "alice",
		SourceIP:         netip.MustParseAddr("203.0.113.77"),
		SecureTransport:  true,
		CurrentTime:      now,
		UserAgent:        "aws-sdk-go-v2/1.30",
		SignatureVersion: "AWS4-HMAC-SHA256",
		AuthType:         "REST-HEADER",
	}
}

type benchCase struct {
	name string
	p    *Policy
	ctx  Context
	want Decision
}

func benchCases(tb testing.TB) []benchCase {
	ten := mustIdentity(tb, tenStatements)
	return []benchCase{
		{"canned-readwrite", mustCanned(tb, "readwrite"), benchContext("s3:GetObject", "arn:aws:s3:::photos/2025/06/IMG_0001.jpg"), Allow},
		// Matches the last statement, after every Deny and the earlier
		// Allows are checked: variables in resources and conditions.
		{"10-statements", ten, benchContext("s3:PutObject", "arn:aws:s3:::home/alice/projects/coffer/notes.txt"), Allow},
		{"no-match", ten, benchContext("s3:PutBucketPolicy", "arn:aws:s3:::home"), NotApplicable},
	}
}

// TestEvaluateAllocs holds Evaluate to its promise of no allocation.
func TestEvaluateAllocs(t *testing.T) {
	for _, bc := range benchCases(t) {
		c := bc.ctx
		if got := bc.p.Evaluate(&c); got != bc.want {
			t.Fatalf("%s: Evaluate = %v, want %v", bc.name, got, bc.want)
		}
		if n := testing.AllocsPerRun(100, func() { c := bc.ctx; bc.p.Evaluate(&c) }); n != 0 {
			t.Errorf("%s: Evaluate allocates %v times, want 0", bc.name, n)
		}
	}
}

func BenchmarkEvaluate(b *testing.B) {
	for _, bc := range benchCases(b) {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c := bc.ctx // a request's context, fresh: its matching budget is per request
				if bc.p.Evaluate(&c) != bc.want {
					b.Fatal("wrong decision")
				}
			}
		})
	}
}

func BenchmarkParse(b *testing.B) {
	d := []byte(tenStatements)
	b.SetBytes(int64(len(d)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseIdentity(d); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCouldAllowInBucket(b *testing.B) {
	p := mustIdentity(b, tenStatements)
	b.ReportAllocs()
	for b.Loop() {
		if !p.CouldAllowInBucket(Principal{User: "alice"}, "alice", "home", visible...) {
			b.Fatal("home not visible")
		}
	}
}

// costlyPolicy is a bucket policy made to be as slow to evaluate as the
// parser lets it be, within MaxDocumentSize: Deny statements whose
// StringLike conditions hold as many patterns of maxWildcards wildcards as
// fit, each one making the matcher back-track at every character of the
// User-Agent. costlyUserAgent is a User-Agent that near the largest
// header a request may carry makes every pattern fail at its end.
func costlyPolicy(tb testing.TB) *Policy {
	pat := `"*` + strings.Repeat("?", maxWildcards-1) + `b"`
	var pats []string
	for size := 0; size < MaxDocumentSize-500; size += len(pat) + 1 {
		pats = append(pats, pat)
	}
	return mustBucket(tb, "b", doc(`{"Effect":"Deny","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*",`+
		`"Condition":{"StringLike":{"aws:UserAgent":[`+strings.Join(pats[:len(pats)-8], ",")+`]}}}`))
}

var costlyUserAgent = strings.Repeat("a", 60<<10)

// BenchmarkEvaluateCostly is the worst case: how long one request may
// keep a core busy in policy matching.
func BenchmarkEvaluateCostly(b *testing.B) {
	p := costlyPolicy(b)
	c := benchContext("s3:GetObject", "arn:aws:s3:::b/k")
	c.Principal = Principal{Anonymous: true}
	c.UserAgent = costlyUserAgent
	for b.Loop() {
		rc := c // a request's context, fresh
		if p.Evaluate(&rc) != Deny || !rc.Costly() {
			b.Fatal("the costly policy did not run out of budget")
		}
	}
}
