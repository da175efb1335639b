package sigv4

import (
	"context"
	"crypto/hmac"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coffer-s3/coffer/internal/s3err"
)

// ErrUnknownKey is returned by a Keyring when the access key ID does not
// exist. Verify turns it into InvalidAccessKeyId; any other Keyring error is
// returned wrapped, and becomes InternalError.
var ErrUnknownKey = errors.New("sigv4: unknown access key")

// Keyring looks up the secret of an access key. Implementations must be safe
// for concurrent use. SecretKey returns ErrUnknownKey (possibly wrapped) when
// accessKeyID does not exist.
type Keyring interface {
	SecretKey(ctx context.Context, accessKeyID string) (string, error)
}

// Config configures a Verifier. The zero value of every field but Region has a
// useful default.
type Config struct {
	// Region is the only region accepted in credential scopes. Default
	// "us-east-1".
	Region string
	// Service is the only service accepted in credential scopes. Default "s3".
	Service string
	// MaxSkew is the largest accepted difference between the request time and
	// the server's clock. Default 15 minutes.
	MaxSkew time.Duration
	// Clock returns the current time. Default time.Now.
	Clock func() time.Time
	// CacheSize bounds the number of cached signing keys. Zero means 1024; a
	// negative value disables the cache.
	CacheSize int
	// Domain is the S3 endpoint's domain (for example "s3.example.com"),
	// optional. SigV2 signs the bucket of a virtual-hosted-style request
	// (bucket.Domain) as part of the resource, so without Domain only
	// path-style SigV2 requests verify. SigV4 does not need it.
	Domain string
}

// Verifier authenticates S3 requests signed with AWS Signature Version 4 or,
// for legacy clients, Version 2. It is safe for concurrent use.
type Verifier struct {
	region  string
	service string
	maxSkew time.Duration
	clock   func() time.Time
	domain  string
	keys    Keyring
	cache   *keyCache
	pool    sync.Pool // of *scratch

	// minChunk is the least size of a signed chunk that is not the last.
	// S3 enforces 8 KiB, which also bounds the HMACs a body can demand.
	minChunk int
}

// NewVerifier returns a Verifier that looks secrets up in kr.
func NewVerifier(cfg Config, kr Keyring) *Verifier {
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if cfg.Service == "" {
		cfg.Service = "s3"
	}
	if cfg.MaxSkew <= 0 {
		cfg.MaxSkew = 15 * time.Minute
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.CacheSize == 0 {
		cfg.CacheSize = 1024
	}
	v := &Verifier{
		region:  cfg.Region,
		service: cfg.Service,
		maxSkew: cfg.MaxSkew,
		clock:   cfg.Clock,
		domain:  strings.TrimSuffix(cfg.Domain, "."),
		keys:    kr,
		cache:   newKeyCache(cfg.CacheSize),

		minChunk: 8 << 10,
	}
	v.pool.New = func() any { return newScratch() }
	return v
}

// PayloadMode says how the request body is protected.
type PayloadMode int

// The payload modes, named after the x-amz-content-sha256 values that select
// them.
const (
	// PayloadUnsigned (UNSIGNED-PAYLOAD, or no header on an anonymous or
	// presigned request): the body is not verified.
	PayloadUnsigned PayloadMode = iota
	// PayloadSigned: x-amz-content-sha256 is the hex SHA-256 of the body.
	PayloadSigned
	// PayloadStreamingSigned: STREAMING-AWS4-HMAC-SHA256-PAYLOAD.
	PayloadStreamingSigned
	// PayloadStreamingSignedTrailer: STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER.
	PayloadStreamingSignedTrailer
	// PayloadStreamingUnsignedTrailer: STREAMING-UNSIGNED-PAYLOAD-TRAILER.
	PayloadStreamingUnsignedTrailer
)

// String returns the x-amz-content-sha256 keyword of m, or "SHA256" for
// PayloadSigned.
func (m PayloadMode) String() string {
	switch m {
	case PayloadUnsigned:
		return unsignedPayload
	case PayloadSigned:
		return "SHA256"
	case PayloadStreamingSigned:
		return streamingSigned
	case PayloadStreamingSignedTrailer:
		return streamingSignedTrailer
	case PayloadStreamingUnsignedTrailer:
		return streamingUnsignedTrailer
	}
	return fmt.Sprintf("PayloadMode(%d)", int(m))
}

// Streaming reports whether the body is aws-chunked encoded.
func (m PayloadMode) Streaming() bool {
	return m >= PayloadStreamingSigned && m <= PayloadStreamingUnsignedTrailer
}

// Result is what Verify learned about an authentic request.
type Result struct {
	// AccessKeyID is the key that signed the request; empty if Anonymous.
	AccessKeyID string
	// Anonymous is true when the request carries no authentication at all.
	// The caller decides whether anonymous access is allowed.
	Anonymous bool
	// Presigned is true for query-string (presigned URL) authentication.
	Presigned bool
	// V2 is true for AWS Signature Version 2 (header, query string or a
	// form's policy), which signs less of a request than SigV4: only the
	// query parameters V2SignsSubResource names.
	V2 bool
	// Payload says how Body protects the request body.
	Payload PayloadMode
	// ContentSHA256 is the lowercase hex SHA-256 the body must have when
	// Payload is PayloadSigned, else "".
	ContentSHA256 string
	// DecodedLength is x-amz-decoded-content-length for streaming payloads,
	// else -1.
	DecodedLength int64
	// Trailers lists the lowercase trailer names declared by x-amz-trailer
	// (for example "x-amz-checksum-crc32c"); only these are accepted.
	Trailers []string

	contentLength int64 // r.ContentLength, for PayloadSigned
	// Chunk-signature state for PayloadStreamingSigned*.
	minChunk int
	key      *signingKey
	seed     [32]byte
	amzDate  string
	scope    string
}

// Verify authenticates r without reading its body. It returns a Result for
// an authentic or anonymous request, an *s3err.Error for a request that must
// be rejected, and another error (wrapped from the Keyring) for an internal
// failure. The caller must read the body through Result.Body.
func (v *Verifier) Verify(r *http.Request) (*Result, error) {
	if len(r.Header["X-Amz-Content-Sha256"]) > 1 {
		// Which line says how the body is verified? SignedHeaders need
		// not name it (the canonical request's last line carries it).
		return nil, s3err.Newf(s3err.InvalidArgument, "", "x-amz-content-sha256 must be given once").
			With("ArgumentName", "x-amz-content-sha256")
	}
	authz := r.Header["Authorization"]
	hasHeader := len(authz) > 0
	q := scanAuthQuery(r.URL.RawQuery)
	switch {
	case hasHeader && (q.v4 || q.v2):
		return nil, s3err.Newf(s3err.InvalidArgument, "", "Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, Signature query string parameter or the Authorization header should be specified").
			With("ArgumentName", "Authorization").With("ArgumentValue", authz[0])
	case q.v4 && q.v2:
		return nil, s3err.Newf(s3err.InvalidArgument, "", "Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, Signature query string parameter or the Authorization header should be specified").
			With("ArgumentName", "Signature")
	case hasHeader && len(authz) == 1 && strings.HasPrefix(authz[0], v2Prefix):
		return v.verifyV2Header(r, authz[0])
	case hasHeader:
		return v.verifyHeader(r, authz)
	case q.v4:
		return v.verifyPresigned(r)
	case q.v2:
		return v.verifyV2Query(r)
	}
	return anonymous(r)
}

// anonymous returns the Result of a request that carries no authentication.
func anonymous(r *http.Request) (*Result, error) {
	res := &Result{Anonymous: true, DecodedLength: -1, contentLength: r.ContentLength}
	h := headerValue(r.Header, "X-Amz-Content-Sha256")
	if h == "" {
		return res, nil
	}
	if err := res.setPayload(r, h); err != nil {
		return nil, err
	}
	if res.Payload == PayloadStreamingSigned || res.Payload == PayloadStreamingSignedTrailer {
		return nil, errContentSHA256(h)
	}
	return res, nil
}

// verifyHeader authenticates a request signed in its Authorization header.
func (v *Verifier) verifyHeader(r *http.Request, authz []string) (*Result, error) {
	if len(authz) != 1 {
		return nil, errHeaderMalformed("multiple Authorization headers")
	}
	a, err := parseAuthorization(authz[0])
	if err != nil {
		return nil, err
	}
	amzDate, t, err := requestTime(r.Header)
	if err != nil {
		return nil, err
	}
	if err := v.checkScope(a.cred, amzDate, errHeaderMalformed); err != nil {
		return nil, err
	}
	now := v.clock()
	if d := now.Sub(t); d > v.maxSkew || d < -v.maxSkew {
		return nil, s3err.New(s3err.RequestTimeTooSkewed, "").
			With("RequestTime", amzDate).
			With("ServerTime", now.UTC().Format(iso8601Basic)).
			With("MaxAllowedSkewMilliseconds", fmt.Sprint(v.maxSkew.Milliseconds()))
	}
	payload := headerValue(r.Header, "X-Amz-Content-Sha256")
	if payload == "" {
		return nil, s3err.Newf(s3err.InvalidRequest, "", "Missing required header for this request: x-amz-content-sha256")
	}
	res := &Result{AccessKeyID: a.cred.accessKeyID, DecodedLength: -1, contentLength: r.ContentLength}
	if err := res.setPayload(r, payload); err != nil {
		return nil, err
	}
	if err := checkUnsigned(r.Header, a.signedHeaders); err != nil {
		return nil, err
	}
	sc := v.pool.Get().(*scratch)
	defer v.pool.Put(sc)
	sc.query.reset()
	sc.query.parse(r.URL.RawQuery)
	sc.canonQuery = sc.query.appendCanonical(sc.canonQuery[:0], false)
	if err := v.checkWith(sc, r, res, &a, amzDate, sc.canonQuery, payload); err != nil {
		return nil, err
	}
	return res, nil
}

// verifyPresigned authenticates a request signed in its query string.
func (v *Verifier) verifyPresigned(r *http.Request) (*Result, error) {
	sc := v.pool.Get().(*scratch)
	defer v.pool.Put(sc)
	p, err := parsePresigned(r.URL.RawQuery, &sc.query)
	if err != nil {
		return nil, err
	}
	// S3 words a presigned URL's date mismatch on its own, without the
	// "Error parsing the X-Amz-Credential parameter" of the other scope errors.
	if p.cred.date != p.amzDate[:8] {
		return nil, errQuery(fmt.Sprintf("Invalid credential date %q. This date is not the same as X-Amz-Date: %q.", p.cred.date, p.amzDate[:8]))
	}
	if err := v.checkScope(p.cred, p.amzDate, errCredentialMalformed); err != nil {
		return nil, err
	}
	now := v.clock()
	if p.date.Sub(now) > v.maxSkew {
		return nil, s3err.Newf(s3err.AccessDenied, "", "Request is not valid yet")
	}
	// A URL valid for zero seconds has expired when it arrives: 403, as
	// MinIO and the s3-tests suite answer.
	if expiry := p.date.Add(p.expires); now.After(expiry) || p.expires == 0 {
		return nil, s3err.Newf(s3err.AccessDenied, "", "Request has expired").
			With("X-Amz-Expires", fmt.Sprint(int64(p.expires/time.Second))).
			With("Expires", expiry.UTC().Format(time.RFC3339)).
			With("ServerTime", now.UTC().Format(time.RFC3339))
	}
	payload := p.contentSHA256
	if payload == "" {
		payload = headerValue(r.Header, "X-Amz-Content-Sha256")
	}
	if payload == "" {
		payload = unsignedPayload
	}
	res := &Result{AccessKeyID: p.cred.accessKeyID, Presigned: true, DecodedLength: -1, contentLength: r.ContentLength}
	if err := res.setPayload(r, payload); err != nil {
		return nil, err
	}
	if err := checkUnsigned(r.Header, p.signedHeaders); err != nil {
		return nil, err
	}
	a := authorization{cred: p.cred, signedHeaders: p.signedHeaders, signature: p.signature}
	sc.canonQuery = sc.query.appendCanonical(sc.canonQuery[:0], true)
	if err := v.checkWith(sc, r, res, &a, p.amzDate, sc.canonQuery, payload); err != nil {
		return nil, err
	}
	return res, nil
}

// checkScope validates the credential scope against the configuration and
// the request date.
// malformed makes the error of a bad scope: AuthorizationHeaderMalformed,
// AuthorizationQueryParametersError or, for a form, InvalidArgument.
func (v *Verifier) checkScope(c credential, amzDate string, malformed func(string) *s3err.Error) error {
	switch {
	case c.date != amzDate[:8]:
		return malformed("Invalid credential date. Date is not the same as X-Amz-Date.")
	case c.region != v.region:
		return malformed(fmt.Sprintf("the region '%s' is wrong; expecting '%s'", c.region, v.region)).With("Region", v.region)
	case c.service != v.service:
		return malformed(fmt.Sprintf("incorrect service %q. This endpoint belongs to %q.", c.service, v.service))
	case c.terminator != scopeTerminator:
		return malformed(fmt.Sprintf("incorrect terminal %q. This endpoint uses %q.", c.terminator, scopeTerminator))
	}
	return nil
}

// secret returns the secret of accessKeyID: InvalidAccessKeyId for an
// unknown key, a wrapped Keyring error (InternalError) for anything else.
func (v *Verifier) secret(ctx context.Context, accessKeyID string) (string, error) {
	secret, err := v.keys.SecretKey(ctx, accessKeyID)
	if errors.Is(err, ErrUnknownKey) {
		return "", s3err.New(s3err.InvalidAccessKeyID, "").With("AWSAccessKeyId", accessKeyID)
	}
	if err != nil {
		return "", fmt.Errorf("look up secret of access key %s: %w", accessKeyID, err)
	}
	return secret, nil
}

// checkWith looks up the secret, derives (or reuses) the signing key and
// compares signatures in constant time. On success it records the streaming
// state in res.
func (v *Verifier) checkWith(sc *scratch, r *http.Request, res *Result, a *authorization, amzDate string, canonQuery []byte, payload string) error {
	secret, err := v.secret(r.Context(), a.cred.accessKeyID)
	if err != nil {
		return err
	}
	key, keep := v.signingKey(sc, a.cred, secret)
	path := rawPath(r)
	sc.uri = appendCanonicalURI(sc.uri[:0], path)
	sc.creq = appendCanonicalRequest(sc.creq[:0], r, sc.uri, canonQuery, a.signedHeaders, payload)
	sc.sts = appendStringToSign(sc.sts[:0], amzDate, a.cred.scope, sc.creq)
	got := sc.mac.sum(key, sc.sts)
	ok := hmac.Equal(got[:], a.signature[:])
	if !ok && path != string(sc.uri) {
		// Some clients sign the path exactly as sent instead of its
		// canonical re-encoding; both denote the same object.
		creq := appendCanonicalRequest(nil, r, []byte(path), canonQuery, a.signedHeaders, payload)
		sts := appendStringToSign(nil, amzDate, a.cred.scope, creq)
		got := sc.mac.sum(key, sts)
		ok = hmac.Equal(got[:], a.signature[:])
	}
	if !ok {
		return s3err.New(s3err.SignatureDoesNotMatch, "").
			With("AWSAccessKeyId", a.cred.accessKeyID).
			With("StringToSign", string(sc.sts)).
			With("SignatureProvided", fmt.Sprintf("%x", a.signature)).
			With("CanonicalRequest", string(sc.creq))
	}
	keep()
	if res.Payload == PayloadStreamingSigned || res.Payload == PayloadStreamingSignedTrailer {
		res.minChunk = v.minChunk
		res.key = key
		res.seed = a.signature
		res.amzDate = amzDate
		res.scope = a.cred.scope
	}
	return nil
}

// signingKey returns the signing key for the credential scope and secret,
// from the cache when possible, and keep, which the caller calls once a
// signature made with the key matched: only then is a derived key cached.
// Otherwise anyone who knows an access key ID could fill the cache with
// keys of made-up dates (form uploads take any date), pushing out the keys
// of real clients.
func (v *Verifier) signingKey(sc *scratch, c credential, secret string) (k *signingKey, keep func()) {
	ck := cacheKey{accessKeyID: c.accessKeyID, date: c.date, region: c.region, service: c.service}
	sc.tmp = append(sc.tmp[:0], secret...)
	ck.secret = fingerprint(sc.tmp)
	if k := v.cache.get(ck); k != nil {
		return k, func() {}
	}
	k = newSigningKey(deriveKey(secret, c.date, c.region, c.service))
	return k, func() { v.cache.put(ck, k) }
}
