package sigv4

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"time"

	"github.com/coffer-s3/coffer/internal/s3err"
)

// PostForm holds the authentication fields of a browser form upload
// (POST Object): the policy as sent, and either the SigV4 fields
// (x-amz-algorithm, x-amz-credential, x-amz-date, x-amz-signature) or the
// SigV2 ones (AWSAccessKeyId, signature). A field the form lacks is "".
// See https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-HTTPPOSTConstructPolicy.html
type PostForm struct {
	Policy string // the base64 policy document, as sent: what is signed

	Algorithm  string // x-amz-algorithm
	Credential string // x-amz-credential
	Date       string // x-amz-date
	Signature  string // x-amz-signature: hex HMAC-SHA256 of Policy under the signing key

	AccessKeyID string // AWSAccessKeyId (SigV2)
	SignatureV2 string // signature (SigV2): base64 HMAC-SHA1 of Policy under the secret
}

// V4 reports whether the form is signed with SigV4 (it names an algorithm or
// a credential) rather than SigV2.
func (f *PostForm) V4() bool { return f.Algorithm != "" || f.Credential != "" }

// VerifyPost authenticates a form upload: the policy must be signed by an
// existing access key. A form without a policy is anonymous; one with a
// policy but without a signature or key is InvalidArgument, as in S3. The
// policy's expiration is not checked here (the caller parses the policy).
// The Result never has a body to verify: a form's file is not signed.
func (v *Verifier) VerifyPost(ctx context.Context, f PostForm) (*Result, error) {
	if f.Policy == "" {
		if f.Signature != "" || f.SignatureV2 != "" {
			return nil, postMissing("policy")
		}
		return &Result{Anonymous: true, DecodedLength: -1}, nil
	}
	if f.V4() {
		return v.verifyPostV4(ctx, f)
	}
	return v.verifyPostV2(ctx, f)
}

func (v *Verifier) verifyPostV4(ctx context.Context, f PostForm) (*Result, error) {
	switch {
	case f.Algorithm == "":
		return nil, postMissing("x-amz-algorithm")
	case f.Credential == "":
		return nil, postMissing("x-amz-credential")
	case f.Date == "":
		return nil, postMissing("x-amz-date")
	case f.Signature == "":
		return nil, postMissing("x-amz-signature")
	case f.Algorithm != algorithm:
		return nil, s3err.Newf(s3err.InvalidArgument, "", "Invalid x-amz-algorithm; only AWS4-HMAC-SHA256 is supported.").
			With("ArgumentName", "x-amz-algorithm").With("ArgumentValue", f.Algorithm)
	}
	if _, ok := parseAmzDate(f.Date); !ok {
		return nil, s3err.Newf(s3err.InvalidArgument, "", "Invalid x-amz-date; expecting the format yyyyMMdd'T'HHmmss'Z'.").
			With("ArgumentName", "x-amz-date").With("ArgumentValue", f.Date)
	}
	c, err := parseCredential(f.Credential, postCredentialMalformed)
	if err != nil {
		return nil, err
	}
	// A form's date is when its policy was signed, possibly long ago:
	// the policy's expiration bounds its life, not the clock skew.
	if err := v.checkScope(c, f.Date, postCredentialMalformed); err != nil {
		return nil, err
	}
	var sig [32]byte
	if !parseSignature(&sig, f.Signature) {
		return nil, postSignatureMismatch(c.accessKeyID, f)
	}
	secret, err := v.secret(ctx, c.accessKeyID)
	if err != nil {
		return nil, err
	}
	sc := v.pool.Get().(*scratch)
	defer v.pool.Put(sc)
	key, keep := v.signingKey(sc, c, secret)
	got := sc.mac.sum(key, []byte(f.Policy))
	if !hmac.Equal(got[:], sig[:]) {
		return nil, postSignatureMismatch(c.accessKeyID, f)
	}
	keep()
	return &Result{AccessKeyID: c.accessKeyID, DecodedLength: -1}, nil
}

func (v *Verifier) verifyPostV2(ctx context.Context, f PostForm) (*Result, error) {
	switch {
	case f.AccessKeyID == "":
		return nil, postMissing("AWSAccessKeyId")
	case f.SignatureV2 == "":
		return nil, postMissing("Signature")
	}
	secret, err := v.secret(ctx, f.AccessKeyID)
	if err != nil {
		return nil, err
	}
	if !v2Match(hmac.New(sha1.New, []byte(secret)), []byte(f.Policy), f.SignatureV2) {
		return nil, postSignatureMismatch(f.AccessKeyID, f)
	}
	return &Result{AccessKeyID: f.AccessKeyID, V2: true, DecodedLength: -1}, nil
}

// postMissing is S3's answer to a form that lacks an authentication field.
func postMissing(field string) *s3err.Error {
	return s3err.Newf(s3err.InvalidArgument, "", "Bucket POST must contain a field named '"+field+"'.  If it is specified, please check the order of the fields.").
		With("ArgumentName", field).With("ArgumentValue", "")
}

func postCredentialMalformed(detail string) *s3err.Error {
	return s3err.Newf(s3err.InvalidArgument, "", "Invalid x-amz-credential: "+detail).With("ArgumentName", "x-amz-credential")
}

func postSignatureMismatch(accessKeyID string, f PostForm) *s3err.Error {
	sig := f.Signature
	if !f.V4() {
		sig = f.SignatureV2
	}
	return s3err.New(s3err.SignatureDoesNotMatch, "").
		With("AWSAccessKeyId", accessKeyID).
		With("StringToSign", f.Policy).
		With("SignatureProvided", sig)
}

// SignPost signs a form upload's base64 policy with SigV4 for cred at time
// t: it returns the x-amz-credential, x-amz-date and x-amz-signature fields
// (x-amz-algorithm is AWS4-HMAC-SHA256). The policy should name the
// credential and date in its conditions, as AWS requires. It is for tools
// and tests; servers verify with Verifier.VerifyPost.
func SignPost(policy string, cred Credentials, region string, t time.Time) (cred4, amzDate, signature string) {
	t = t.UTC()
	date := t.Format("20060102")
	amzDate = t.Format(iso8601Basic)
	cred4 = cred.AccessKeyID + "/" + date + "/" + region + "/s3/" + scopeTerminator
	key := deriveKey(cred.SecretKey, date, region, "s3")
	m := hmac.New(sha256.New, key[:])
	m.Write([]byte(policy))
	return cred4, amzDate, hex.EncodeToString(m.Sum(nil))
}

// SignPostV2 returns the SigV2 signature field of a form upload's base64
// policy: the base64 HMAC-SHA1 under the secret.
func SignPostV2(policy, secret string) string {
	m := hmac.New(sha1.New, []byte(secret))
	m.Write([]byte(policy))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}
