package sigv4

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"testing"
	"time"

	"github.com/coffer-s3/coffer/internal/s3err"
)

// hmacSHA256 is the textbook HMAC, independent of the package's cached keys.
func hmacSHA256(key []byte, msg string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

func TestSignPost(t *testing.T) {
	const policy = "eyJleHBpcmF0aW9uIjogIjIwMTUtMTItMzBUMTI6MDA6MDAuMDAwWiJ9"
	at := time.Date(2015, 12, 29, 0, 0, 0, 0, time.UTC)
	cred, date, sig := SignPost(policy, exampleCred, "us-east-1", at)
	if cred != "AKIAIOSFODNN7EXAMPLE/20151229/us-east-1/s3/aws4_request" || date != "20151229T000000Z" {
		t.Errorf("SignPost credential %q, date %q", cred, date)
	}
	// The signing key as the AWS documentation derives it, step by step.
	k := hmacSHA256([]byte("AWS4"+exampleCred.SecretKey), "20151229")
	k = hmacSHA256(k, "us-east-1")
	k = hmacSHA256(k, "s3")
	k = hmacSHA256(k, "aws4_request")
	if want := hex.EncodeToString(hmacSHA256(k, policy)); sig != want {
		t.Errorf("SignPost signature %s, want %s", sig, want)
	}
	m := hmac.New(sha1.New, []byte(exampleCred.SecretKey))
	m.Write([]byte(policy))
	if got, want := SignPostV2(policy, exampleCred.SecretKey), base64.StdEncoding.EncodeToString(m.Sum(nil)); got != want {
		t.Errorf("SignPostV2 = %s, want %s", got, want)
	}
}

func TestVerifyPost(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	v := newTestVerifier(now, exampleCred)
	const policy = "eyJleHBpcmF0aW9uIjogIjIwMjYtMTItMzBUMTI6MDA6MDAuMDAwWiJ9"
	signed := func(at time.Time, mod func(*PostForm)) PostForm {
		cred, date, sig := SignPost(policy, exampleCred, "us-east-1", at)
		f := PostForm{Policy: policy, Algorithm: "AWS4-HMAC-SHA256", Credential: cred, Date: date, Signature: sig}
		if mod != nil {
			mod(&f)
		}
		return f
	}
	v2 := PostForm{Policy: policy, AccessKeyID: exampleCred.AccessKeyID, SignatureV2: SignPostV2(policy, exampleCred.SecretKey)}
	for _, tc := range []struct {
		name string
		form PostForm
		code s3err.Code // "" for success
		anon bool
	}{
		{"v4", signed(now, nil), "", false},
		{"v4 signed a month ago", signed(now.AddDate(0, -1, 0), nil), "", false},
		{"v2", v2, "", false},
		{"anonymous", PostForm{}, "", true},
		{"v4 wrong signature", signed(now, func(f *PostForm) { f.Signature = hex.EncodeToString(make([]byte, 32)) }), s3err.SignatureDoesNotMatch, false},
		{"v4 signature not hex", signed(now, func(f *PostForm) { f.Signature = "zz" }), s3err.SignatureDoesNotMatch, false},
		{"v4 other policy", signed(now, func(f *PostForm) { f.Policy += "e30=" }), s3err.SignatureDoesNotMatch, false},
		{"v4 unknown key", signed(now, func(f *PostForm) { f.Credential = "NOPE/" + f.Credential[len(exampleCred.AccessKeyID)+1:] }), s3err.InvalidAccessKeyID, false},
		{"v4 wrong region", signed(now, func(f *PostForm) {
			f.Credential = exampleCred.AccessKeyID + "/" + now.Format("20060102") + "/eu-west-1/s3/aws4_request"
		}), s3err.InvalidArgument, false},
		{"v4 date not the credential's", signed(now, func(f *PostForm) { f.Date = "20250101T000000Z" }), s3err.InvalidArgument, false},
		{"v4 malformed date", signed(now, func(f *PostForm) { f.Date = "yesterday" }), s3err.InvalidArgument, false},
		{"v4 malformed credential", signed(now, func(f *PostForm) { f.Credential = "AKID" }), s3err.InvalidArgument, false},
		{"v4 other algorithm", signed(now, func(f *PostForm) { f.Algorithm = "AWS4-HMAC-SHA512" }), s3err.InvalidArgument, false},
		{"v4 no signature", signed(now, func(f *PostForm) { f.Signature = "" }), s3err.InvalidArgument, false},
		{"v4 no date", signed(now, func(f *PostForm) { f.Date = "" }), s3err.InvalidArgument, false},
		{"v4 no algorithm", signed(now, func(f *PostForm) { f.Algorithm = "" }), s3err.InvalidArgument, false},
		{"v2 wrong signature", PostForm{Policy: policy, AccessKeyID: exampleCred.AccessKeyID, SignatureV2: SignPostV2(policy, "other")}, s3err.SignatureDoesNotMatch, false},
		{"v2 unknown key", PostForm{Policy: policy, AccessKeyID: "NOPE", SignatureV2: "x"}, s3err.InvalidAccessKeyID, false},
		{"v2 no signature", PostForm{Policy: policy, AccessKeyID: exampleCred.AccessKeyID}, s3err.InvalidArgument, false},
		{"policy without any key", PostForm{Policy: policy}, s3err.InvalidArgument, false},
		{"signature without policy", PostForm{SignatureV2: "x", AccessKeyID: exampleCred.AccessKeyID}, s3err.InvalidArgument, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := v.VerifyPost(t.Context(), tc.form)
			if tc.code != "" {
				if !s3err.Is(err, tc.code) {
					t.Fatalf("VerifyPost = %+v, %v; want %s", res, err, tc.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Anonymous != tc.anon || (!tc.anon && res.AccessKeyID != exampleCred.AccessKeyID) || res.Payload != PayloadUnsigned {
				t.Errorf("VerifyPost = %+v", res)
			}
		})
	}
}
