package sigv4

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Signer signs requests with one access key for one region and service, as
// SignRequest and Presign do, but derives the signing key (four chained
// HMACs) once per UTC date instead of once per request, and reuses its
// working memory. It is meant for clients that send many requests, such as
// the load generator and gateway stores. A Signer is safe for concurrent
// use.
type Signer struct {
	cred    Credentials
	region  string
	service string

	// day is the signing key of the latest date signed for. Requests
	// stamped with an older date (a clock read just before midnight) get
	// a key derived for them alone, so that they never evict today's.
	day  atomic.Pointer[dayKey]
	pool sync.Pool // of *scratch
}

// dayKey is a signing key and the credential scope it belongs to.
type dayKey struct {
	date  string // YYYYMMDD
	scope string // date/region/service/aws4_request
	key   *signingKey
}

// NewSigner returns a Signer for cred in region ("" means us-east-1) and
// service ("" means s3).
func NewSigner(cred Credentials, region, service string) *Signer {
	if region == "" {
		region = "us-east-1"
	}
	if service == "" {
		service = "s3"
	}
	s := &Signer{cred: cred, region: region, service: service}
	s.pool.New = func() any { return newScratch() }
	return s
}

// keyFor returns the signing key for date (YYYYMMDD), deriving and caching
// it when date is newer than the cached one.
func (s *Signer) keyFor(date string) *dayKey {
	if k := s.day.Load(); k != nil && k.date == date {
		return k
	}
	k := &dayKey{
		date:  date,
		scope: date + "/" + s.region + "/" + s.service + "/" + scopeTerminator,
		key:   newSigningKey(deriveKey(s.cred.SecretKey, date, s.region, s.service)),
	}
	for {
		old := s.day.Load()
		if old != nil && old.date >= date {
			return k // dates compare as strings: YYYYMMDD
		}
		if s.day.CompareAndSwap(old, k) {
			return k
		}
	}
}

// Sign signs r at time t, in place, exactly as SignRequest does for the
// Signer's credentials, region and service: it sets X-Amz-Date,
// X-Amz-Content-Sha256 (to payloadHash: a hex SHA-256, UNSIGNED-PAYLOAD or
// a STREAMING-* keyword) and Authorization, and signs host, content-length
// when r.ContentLength > 0, and every header in r.Header except
// Authorization, Expect, Transfer-Encoding, User-Agent and X-Amzn-Trace-Id.
// It fails, leaving r unchanged, if r has no URL or payloadHash is empty.
func (s *Signer) Sign(r *http.Request, payloadHash string, t time.Time) error {
	_, _, _, err := s.sign(r, payloadHash, t)
	return err
}

// sign implements Sign and returns the signature, the key and the date it
// was made with, from which the signatures of aws-chunked chunks chain.
func (s *Signer) sign(r *http.Request, payloadHash string, t time.Time) (sig [32]byte, dk *dayKey, amzDate string, err error) {
	if r == nil || r.URL == nil {
		return sig, nil, "", errors.New("sigv4: sign: request has no URL")
	}
	if payloadHash == "" {
		return sig, nil, "", errors.New("sigv4: sign: empty payload hash")
	}
	sc := s.pool.Get().(*scratch)
	defer s.pool.Put(sc)

	sc.tmp = t.UTC().AppendFormat(sc.tmp[:0], iso8601Basic)
	amzDate = string(sc.tmp)
	dk = s.keyFor(amzDate[:8])
	if r.Header == nil {
		r.Header = make(http.Header)
	}
	r.Header.Set("X-Amz-Date", amzDate)
	r.Header.Set("X-Amz-Content-Sha256", payloadHash)
	r.Header.Del("Authorization")
	signed := signedHeaderList(r)

	sc.query.reset()
	sc.query.parse(r.URL.RawQuery)
	sc.canonQuery = sc.query.appendCanonical(sc.canonQuery[:0], false)
	sc.uri = appendCanonicalURI(sc.uri[:0], rawPath(r))
	sc.creq = appendCanonicalRequest(sc.creq[:0], r, sc.uri, sc.canonQuery, signed, payloadHash)
	sc.sts = appendStringToSign(sc.sts[:0], amzDate, dk.scope, sc.creq)
	sig = sc.mac.sum(dk.key, sc.sts)

	auth := make([]byte, 0, len(algorithm)+len(s.cred.AccessKeyID)+len(dk.scope)+len(signed)+128)
	auth = append(auth, algorithm+" Credential="...)
	auth = append(auth, s.cred.AccessKeyID...)
	auth = append(auth, '/')
	auth = append(auth, dk.scope...)
	auth = append(auth, ", SignedHeaders="...)
	auth = append(auth, signed...)
	auth = append(auth, ", Signature="...)
	auth = hex.AppendEncode(auth, sig[:])
	r.Header.Set("Authorization", string(auth))
	return sig, dk, amzDate, nil
}

// signedHeaderList returns the ';'-joined sorted lowercase names of the
// headers SignRequest signs in r: host, content-length when the body has a
// known positive length, and every header but unsignedHeaders.
func signedHeaderList(r *http.Request) string {
	var arr [16]string
	names := append(arr[:0], "host")
	if r.ContentLength > 0 {
		names = append(names, "content-length")
	}
	for k := range r.Header {
		switch k { // the headers every signed request has, without allocating
		case "X-Amz-Date":
			k = "x-amz-date"
		case "X-Amz-Content-Sha256":
			k = "x-amz-content-sha256"
		default:
			k = strings.ToLower(k)
		}
		if !slices.Contains(unsignedHeaders, k) && !slices.Contains(names, k) {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	return strings.Join(names, ";")
}

// Presign returns rawURL presigned for method at time t, valid for expires
// (a whole number of seconds, at most 7 days), exactly as the package-level
// Presign does for the Signer's credentials, region and service: only the
// host header is signed and the payload is UNSIGNED-PAYLOAD.
func (s *Signer) Presign(method, rawURL string, t time.Time, expires time.Duration) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", fmt.Errorf("presign: %w", err)
	}
	if u.Scheme == "" || u.Host == "" {
		return "", fmt.Errorf("presign %q: url must be absolute", rawURL)
	}
	if expires < time.Second || expires > maxExpires || expires%time.Second != 0 {
		return "", fmt.Errorf("presign: expiry %v is not a whole number of seconds between 1s and %v", expires, maxExpires)
	}
	sc := s.pool.Get().(*scratch)
	defer s.pool.Put(sc)
	sc.query.reset()
	sc.query.parse(u.RawQuery)
	for _, p := range sc.query.params {
		if slices.Contains(presignParams[:], string(sc.query.key(p))) {
			return "", fmt.Errorf("presign %q: url already has %s", rawURL, sc.query.key(p))
		}
	}
	sc.tmp = t.UTC().AppendFormat(sc.tmp[:0], iso8601Basic)
	amzDate := string(sc.tmp)
	dk := s.keyFor(amzDate[:8])
	sc.query.parse("X-Amz-Algorithm=" + algorithm +
		"&X-Amz-Credential=" + url.QueryEscape(s.cred.AccessKeyID+"/"+dk.scope) +
		"&X-Amz-Date=" + amzDate +
		"&X-Amz-Expires=" + strconv.FormatInt(int64(expires/time.Second), 10) +
		"&X-Amz-SignedHeaders=host")
	sc.canonQuery = sc.query.appendCanonical(sc.canonQuery[:0], false)
	sc.uri = appendCanonicalURI(sc.uri[:0], u.EscapedPath())
	r := &http.Request{Method: method, URL: u, Host: u.Host, Header: http.Header{}}
	sc.creq = appendCanonicalRequest(sc.creq[:0], r, sc.uri, sc.canonQuery, "host", unsignedPayload)
	sc.sts = appendStringToSign(sc.sts[:0], amzDate, dk.scope, sc.creq)
	sig := sc.mac.sum(dk.key, sc.sts)

	out := make([]byte, 0, len(u.Scheme)+len(u.Host)+len(sc.uri)+len(sc.canonQuery)+96)
	out = append(out, u.Scheme...)
	out = append(out, "://"...)
	out = append(out, u.Host...)
	out = append(out, sc.uri...)
	out = append(out, '?')
	out = append(out, sc.canonQuery...)
	out = append(out, "&X-Amz-Signature="...)
	out = hex.AppendEncode(out, sig[:])
	return string(out), nil
}
