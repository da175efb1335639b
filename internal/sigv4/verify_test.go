package sigv4

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/coffer-s3/coffer/internal/s3err"
)

var (
	testCred = Credentials{AccessKeyID: "AKIDTEST", SecretKey: "test-secret"}
	testTime = time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
)

// signedPut returns a server-side PUT with body "hello", signed by testCred
// at testTime, after edit (if any) changed the client request.
func signedPut(t testing.TB, region string, edit func(*http.Request)) *http.Request {
	t.Helper()
	c := newRequest(t, http.MethodPut, "http://bucket.localhost:6789/key.txt?tagging", []byte("hello"))
	c.Header.Set("X-Amz-Meta-Color", "blue")
	sum := sha256.Sum256([]byte("hello"))
	SignRequest(c, testCred, region, testTime, hex.EncodeToString(sum[:]))
	if edit != nil {
		edit(c)
	}
	return serverSide(t, c)
}

func TestVerifyHeaderErrors(t *testing.T) {
	setAuth := func(old, new string) func(*http.Request) {
		return func(r *http.Request) {
			r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), old, new, 1))
		}
	}
	internal := errors.New("database on fire")
	for _, tc := range []struct {
		name    string
		region  string              // signing region; default us-east-1
		edit    func(*http.Request) // applied to the signed client request
		now     time.Time           // default testTime
		keys    *keyring            // default holds testCred
		want    s3err.Code
		message string // S3's message; "" for the table's
		extra   [2]string
	}{
		{name: "ok"},
		{name: "two x-amz-content-sha256 lines", edit: func(r *http.Request) { r.Header.Add("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD") },
			want: s3err.InvalidArgument, message: "x-amz-content-sha256 must be given once", extra: [2]string{"ArgumentName", "x-amz-content-sha256"}},
		{name: "wrong secret", keys: newKeyring(Credentials{testCred.AccessKeyID, "other"}), want: s3err.SignatureDoesNotMatch},
		{name: "unknown key", keys: newKeyring(), want: s3err.InvalidAccessKeyID, extra: [2]string{"AWSAccessKeyId", "AKIDTEST"}},
		{name: "keyring failure", keys: &keyring{err: internal}, want: s3err.InternalError},
		{name: "header changed", edit: func(r *http.Request) { r.Header.Set("X-Amz-Meta-Color", "red") }, want: s3err.SignatureDoesNotMatch},
		{name: "query changed", edit: func(r *http.Request) { r.URL.RawQuery = "acl" }, want: s3err.SignatureDoesNotMatch},
		{name: "method changed", edit: func(r *http.Request) { r.Method = http.MethodPost }, want: s3err.SignatureDoesNotMatch},
		{name: "path changed", edit: func(r *http.Request) { r.URL.Path = "/key.txT" }, want: s3err.SignatureDoesNotMatch},
		{name: "host changed", edit: func(r *http.Request) { r.Host = "other.localhost:6789" }, want: s3err.SignatureDoesNotMatch},
		{
			name: "region mismatch", region: "eu-west-1", want: s3err.AuthorizationHeaderMalformed,
			message: "The authorization header is malformed; the region 'eu-west-1' is wrong; expecting 'us-east-1'", extra: [2]string{"Region", "us-east-1"},
		},
		{name: "service mismatch", edit: setAuth("/s3/", "/iam/"), want: s3err.AuthorizationHeaderMalformed, message: "The authorization header is malformed; incorrect service \"iam\". This endpoint belongs to \"s3\"."},
		{name: "terminator mismatch", edit: setAuth("aws4_request", "aws5_request"), want: s3err.AuthorizationHeaderMalformed, message: "The authorization header is malformed; incorrect terminal \"aws5_request\". This endpoint uses \"aws4_request\"."},
		{name: "scope date mismatch", edit: setAuth("/20250601/", "/20250602/"), want: s3err.AuthorizationHeaderMalformed, message: "The authorization header is malformed; Invalid credential date. Date is not the same as X-Amz-Date."},
		{name: "scope date malformed", edit: setAuth("/20250601/", "/2025061/"), want: s3err.AuthorizationHeaderMalformed, message: "The authorization header is malformed; incorrect date format \"2025061\". This date in the credential must be in the format \"yyyyMMdd\"."},
		{name: "credential short", edit: setAuth("/us-east-1/s3/", "/us-east-1/"), want: s3err.AuthorizationHeaderMalformed, message: "The authorization header is malformed; the Credential is mal-formed; expecting \"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request\"."},
		{name: "signed headers unsorted", edit: setAuth("host;x-amz-content-sha256", "x-amz-content-sha256;host"), want: s3err.AuthorizationHeaderMalformed, message: "The authorization header is malformed; the SignedHeaders component \"content-length;x-amz-content-sha256;host;x-amz-date;x-amz-meta-color\" must be a ';'-separated, sorted list of lowercase header names."},
		{name: "signed headers duplicate", edit: setAuth("host;", "host;host;"), want: s3err.AuthorizationHeaderMalformed, message: "The authorization header is malformed; the SignedHeaders component \"content-length;host;host;x-amz-content-sha256;x-amz-date;x-amz-meta-color\" must be a ';'-separated, sorted list of lowercase header names."},
		{name: "signed headers uppercase", edit: setAuth("host;", "Host;"), want: s3err.AuthorizationHeaderMalformed, message: "The authorization header is malformed; the SignedHeaders component \"content-length;Host;x-amz-content-sha256;x-amz-date;x-amz-meta-color\" must be a ';'-separated, sorted list of lowercase header names."},
		{name: "signature short", edit: setAuth("Signature=", "Signature=ab"), want: s3err.AuthorizationHeaderMalformed, message: "The authorization header is malformed; the Signature component must be 64 hexadecimal digits."},
		{name: "signature missing", edit: setAuth(", Signature=", ", Sig="), want: s3err.AuthorizationHeaderMalformed, message: "The authorization header is malformed; the authorization component \"Sig=e84cd6b815c8dc42fa14f3e0606d750b2f8704b8f992790ec35f9f715e766f56\" is malformed."},
		{name: "component twice", edit: setAuth(", Signature=", ", SignedHeaders=host, Signature="), want: s3err.AuthorizationHeaderMalformed, message: "The authorization header is malformed; the authorization component \"SignedHeaders=host\" is malformed."},
		{name: "signature flipped", edit: flipSignature, want: s3err.SignatureDoesNotMatch},
		{name: "uppercase signature", edit: upperSignature},
		{name: "no spaces", edit: setAuthAll(", ", ",")},
		{name: "extra spaces", edit: setAuthAll(", ", " ,  ")},
		{name: "spaces only", edit: setAuthAll(", ", " ")},
		{name: "two Authorization headers", edit: func(r *http.Request) { r.Header.Add("Authorization", "x") }, want: s3err.AuthorizationHeaderMalformed, message: "The authorization header is malformed; multiple Authorization headers"},
		{name: "unsupported type", edit: func(r *http.Request) { r.Header.Set("Authorization", "Bearer abc") }, want: s3err.InvalidArgument, message: "Unsupported Authorization Type"},
		{name: "algorithm glued", edit: setAuth("AWS4-HMAC-SHA256 ", "AWS4-HMAC-SHA256X "), want: s3err.InvalidArgument, message: "Unsupported Authorization Type"},
		{name: "sigv2 wrong signature", edit: func(r *http.Request) { r.Header.Set("Authorization", "AWS AKIDTEST:c2ln") }, want: s3err.SignatureDoesNotMatch},
		{name: "skew future", now: testTime.Add(-16 * time.Minute), want: s3err.RequestTimeTooSkewed, extra: [2]string{"RequestTime", "20250601T100000Z"}},
		{name: "skew past", now: testTime.Add(16 * time.Minute), want: s3err.RequestTimeTooSkewed, extra: [2]string{"MaxAllowedSkewMilliseconds", "900000"}},
		{name: "skew within", now: testTime.Add(14 * time.Minute)},
		{name: "skew within future", now: testTime.Add(-14 * time.Minute)},
		{name: "no date", edit: func(r *http.Request) { r.Header.Del("X-Amz-Date") }, want: s3err.AccessDenied, message: "AWS authentication requires a valid Date or x-amz-date header"},
		{name: "bad date", edit: func(r *http.Request) { r.Header.Set("X-Amz-Date", "20250601T100000") }, want: s3err.AccessDenied, message: "AWS authentication requires a valid Date or x-amz-date header"},
		{name: "impossible date", edit: func(r *http.Request) { r.Header.Set("X-Amz-Date", "20250631T100000Z") }, want: s3err.AccessDenied, message: "AWS authentication requires a valid Date or x-amz-date header"},
		{
			name: "no content sha256", edit: func(r *http.Request) { r.Header.Del("X-Amz-Content-Sha256") },
			want: s3err.InvalidRequest, message: "Missing required header for this request: x-amz-content-sha256",
		},
		{
			name: "bad content sha256", edit: func(r *http.Request) { r.Header.Set("X-Amz-Content-Sha256", "abc") },
			want: s3err.InvalidArgument, message: "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-UNSIGNED-PAYLOAD-TRAILER, STREAMING-AWS4-HMAC-SHA256-PAYLOAD, STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER or a valid sha256 value.", extra: [2]string{"ArgumentName", "x-amz-content-sha256"},
		},
		{
			name: "unsigned x-amz header", edit: func(r *http.Request) {
				r.Header.Set("X-Amz-Copy-Source", "/b/k")
				r.Header.Set("X-Amz-Acl", "public-read")
			},
			want: s3err.AccessDenied, message: "There were headers present in the request which were not signed", extra: [2]string{"HeadersNotSigned", "x-amz-acl, x-amz-copy-source"},
		},
		{name: "unsigned other header", edit: func(r *http.Request) { r.Header.Set("Accept", "*/*") }},
		{name: "host not signed", edit: setAuth("SignedHeaders=content-length;host;", "SignedHeaders=content-length;"), want: s3err.AccessDenied, message: "There were headers present in the request which were not signed", extra: [2]string{"HeadersNotSigned", "host"}},
		{
			name: "query and header auth", edit: func(r *http.Request) { r.URL.RawQuery += "&X-Amz-Algorithm=AWS4-HMAC-SHA256" },
			want: s3err.InvalidArgument, message: "Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, Signature query string parameter or the Authorization header should be specified",
		},
		{name: "trailer without trailer mode", edit: func(r *http.Request) { r.Header.Set("X-Amz-Trailer", "x-amz-checksum-crc32") }, want: s3err.InvalidArgument, message: "x-amz-trailer requires x-amz-content-sha256 STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER or STREAMING-UNSIGNED-PAYLOAD-TRAILER."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			region := tc.region
			if region == "" {
				region = "us-east-1"
			}
			r := signedPut(t, region, tc.edit)
			now := tc.now
			if now.IsZero() {
				now = testTime
			}
			keys := tc.keys
			if keys == nil {
				keys = newKeyring(testCred)
			}
			v := NewVerifier(Config{Clock: func() time.Time { return now }}, keys)
			res, err := v.Verify(r)
			switch tc.want {
			case "":
				wantCode(t, err, "")
			case s3err.InternalError:
				wantCode(t, err, tc.want)
				if !errors.Is(err, internal) {
					t.Errorf("error %v does not wrap the keyring's", err)
				}
			default:
				wantError(t, err, tc.want, tc.message, tc.extra[:]...)
			}
			if err == nil {
				want := &Result{AccessKeyID: "AKIDTEST", Payload: PayloadSigned, ContentSHA256: "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824", DecodedLength: -1}
				if diff := cmp.Diff(want, res, cmpopts.IgnoreUnexported(Result{})); diff != "" {
					t.Errorf("result mismatch (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func flipSignature(r *http.Request) {
	a := r.Header.Get("Authorization")
	i := strings.Index(a, "Signature=") + len("Signature=")
	c := byte('0')
	if a[i] == '0' {
		c = '1'
	}
	r.Header.Set("Authorization", a[:i]+string(c)+a[i+1:])
}

func upperSignature(r *http.Request) {
	a := r.Header.Get("Authorization")
	i := strings.Index(a, "Signature=") + len("Signature=")
	r.Header.Set("Authorization", a[:i]+strings.ToUpper(a[i:]))
}

func setAuthAll(old, new string) func(*http.Request) {
	return func(r *http.Request) {
		r.Header.Set("Authorization", strings.ReplaceAll(r.Header.Get("Authorization"), old, new))
	}
}

func TestVerifyPresignedErrors(t *testing.T) {
	const base = "http://localhost:6789/bucket/key?versionId=1"
	presign := func(t *testing.T, region string, expires time.Duration) string {
		u, err := Presign(http.MethodGet, base, testCred, region, testTime, expires)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	replace := func(old, new string) func(string) string {
		return func(u string) string { return strings.Replace(u, old, new, 1) }
	}
	for _, tc := range []struct {
		name    string
		region  string
		expires time.Duration // default 1h
		edit    func(string) string
		method  string
		now     time.Time // default testTime + 1 minute
		keys    *keyring
		want    s3err.Code
		message string // S3's message; "" for the table's
	}{
		{name: "ok"},
		{name: "expired", now: testTime.Add(time.Hour + time.Second), want: s3err.AccessDenied, message: "Request has expired"},
		{name: "last second", now: testTime.Add(time.Hour)},
		{name: "not yet valid", now: testTime.Add(-16 * time.Minute), want: s3err.AccessDenied, message: "Request is not valid yet"},
		{name: "slightly early", now: testTime.Add(-14 * time.Minute)},
		{name: "week", expires: maxExpires, now: testTime.Add(maxExpires - time.Second)},
		{name: "expires too long", edit: replace("X-Amz-Expires=3600", "X-Amz-Expires=604801"), want: s3err.AuthorizationQueryParametersError, message: "X-Amz-Expires must be less than a week (in seconds); that is, the given X-Amz-Expires must be less than 604800 seconds"},
		{name: "expires zero", edit: replace("X-Amz-Expires=3600", "X-Amz-Expires=0"), want: s3err.AccessDenied, message: "Request has expired"},
		{name: "expires negative", edit: replace("X-Amz-Expires=3600", "X-Amz-Expires=-1"), want: s3err.AuthorizationQueryParametersError, message: "X-Amz-Expires must be non-negative"},
		{name: "expires not a number", edit: replace("X-Amz-Expires=3600", "X-Amz-Expires=1h"), want: s3err.AuthorizationQueryParametersError, message: "X-Amz-Expires should be a number"},
		{name: "expires huge", edit: replace("X-Amz-Expires=3600", "X-Amz-Expires=99999999999999999999"), want: s3err.AuthorizationQueryParametersError, message: "X-Amz-Expires must be less than a week (in seconds); that is, the given X-Amz-Expires must be less than 604800 seconds"},
		{name: "no signature", edit: func(u string) string { return u[:strings.Index(u, "&X-Amz-Signature")] }, want: s3err.AuthorizationQueryParametersError, message: "Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters."},
		{name: "no algorithm", edit: replace("X-Amz-Algorithm=AWS4-HMAC-SHA256&", ""), want: s3err.AuthorizationQueryParametersError, message: "Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters."},
		{name: "wrong algorithm", edit: replace("AWS4-HMAC-SHA256", "AWS4-HMAC-SHA1"), want: s3err.AuthorizationQueryParametersError, message: "X-Amz-Algorithm only supports \"AWS4-HMAC-SHA256\""},
		{name: "region mismatch", region: "eu-west-1", want: s3err.AuthorizationQueryParametersError, message: "Error parsing the X-Amz-Credential parameter; the region 'eu-west-1' is wrong; expecting 'us-east-1'"},
		{
			name: "scope date mismatch", edit: replace("%2F20250601%2F", "%2F20250602%2F"), want: s3err.AuthorizationQueryParametersError,
			message: `Invalid credential date "20250602". This date is not the same as X-Amz-Date: "20250601".`,
		},
		{name: "credential malformed", edit: replace("%2Fus-east-1", ""), want: s3err.AuthorizationQueryParametersError, message: "Error parsing the X-Amz-Credential parameter; the Credential is mal-formed; expecting \"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request\"."},
		{name: "bad date", edit: replace("X-Amz-Date=20250601T100000Z", "X-Amz-Date=2025-06-01"), want: s3err.AuthorizationQueryParametersError, message: "X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\""},
		{name: "duplicate date", edit: func(u string) string { return u + "&X-Amz-Date=20250601T100000Z" }, want: s3err.AuthorizationQueryParametersError, message: "Query-string authentication requires a single X-Amz-Date parameter."},
		{name: "bad signed headers", edit: replace("X-Amz-SignedHeaders=host", "X-Amz-SignedHeaders=Host"), want: s3err.AuthorizationQueryParametersError, message: "X-Amz-SignedHeaders must be a ';'-separated, sorted list of lowercase header names."},
		{name: "bad signature", edit: func(u string) string { return u + "0" }, want: s3err.AuthorizationQueryParametersError, message: "X-Amz-Signature must be 64 hexadecimal digits."},
		{name: "param added", edit: func(u string) string { return u + "&acl" }, want: s3err.SignatureDoesNotMatch},
		{name: "param changed", edit: replace("versionId=1", "versionId=2"), want: s3err.SignatureDoesNotMatch},
		{name: "method changed", method: http.MethodDelete, want: s3err.SignatureDoesNotMatch},
		{name: "unknown key", keys: newKeyring(), want: s3err.InvalidAccessKeyID},
		{name: "sigv2 query expired", edit: func(string) string { return base + "&AWSAccessKeyId=AKIDTEST&Signature=abc&Expires=1" }, want: s3err.AccessDenied, message: "Request has expired"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			region, expires, method, now, keys := tc.region, tc.expires, tc.method, tc.now, tc.keys
			if region == "" {
				region = "us-east-1"
			}
			if expires == 0 {
				expires = time.Hour
			}
			if method == "" {
				method = http.MethodGet
			}
			if now.IsZero() {
				now = testTime.Add(time.Minute)
			}
			if keys == nil {
				keys = newKeyring(testCred)
			}
			u := presign(t, region, expires)
			if tc.edit != nil {
				u = tc.edit(u)
			}
			v := NewVerifier(Config{Clock: func() time.Time { return now }}, keys)
			res, err := v.Verify(serverSide(t, newRequest(t, method, u, nil)))
			if tc.want == "" {
				wantCode(t, err, "")
			} else {
				wantError(t, err, tc.want, tc.message)
			}
			if err == nil && (!res.Presigned || res.AccessKeyID != testCred.AccessKeyID || res.Payload != PayloadUnsigned) {
				t.Errorf("result = %+v", res)
			}
		})
	}
}

func TestVerifyPayloadHeaders(t *testing.T) {
	sign := func(edit func(*http.Request), payload string) *http.Request {
		c := newRequest(t, http.MethodPut, "http://localhost/b/k", nil)
		edit(c)
		SignRequest(c, testCred, "us-east-1", testTime, payload)
		return serverSide(t, c)
	}
	none := func(*http.Request) {}
	decoded := func(n string) func(*http.Request) {
		return func(r *http.Request) { r.Header.Set("X-Amz-Decoded-Content-Length", n) }
	}
	for _, tc := range []struct {
		name     string
		r        *http.Request
		want     s3err.Code
		payload  PayloadMode
		decoded  int64
		trailers []string
	}{
		{name: "unsigned", r: sign(none, unsignedPayload), payload: PayloadUnsigned, decoded: -1},
		{name: "streaming", r: sign(decoded("10"), streamingSigned), payload: PayloadStreamingSigned, decoded: 10},
		{name: "streaming no length", r: sign(none, streamingSigned), want: s3err.MissingContentLength},
		{name: "streaming bad length", r: sign(decoded("-1"), streamingSigned), want: s3err.InvalidArgument},
		{
			name: "signed trailer", payload: PayloadStreamingSignedTrailer, decoded: 0, trailers: []string{"x-amz-checksum-crc32c", "x-amz-checksum-sha256"},
			r: sign(func(r *http.Request) {
				decoded("0")(r)
				r.Header.Add("X-Amz-Trailer", "X-Amz-Checksum-Crc32c")
				r.Header.Add("X-Amz-Trailer", " x-amz-checksum-sha256 ")
			}, streamingSignedTrailer),
		},
		{
			name: "unsigned trailer", payload: PayloadStreamingUnsignedTrailer, decoded: 5, trailers: []string{"x-amz-checksum-crc32"},
			r: sign(func(r *http.Request) { decoded("5")(r); r.Header.Set("X-Amz-Trailer", "x-amz-checksum-crc32") }, streamingUnsignedTrailer),
		},
		{
			name: "newer checksum trailers", payload: PayloadStreamingUnsignedTrailer, decoded: 5,
			trailers: []string{"x-amz-checksum-sha512", "x-amz-checksum-md5", "x-amz-checksum-xxhash64", "x-amz-checksum-xxhash3", "x-amz-checksum-xxhash128"},
			r: sign(func(r *http.Request) {
				decoded("5")(r)
				r.Header.Set("X-Amz-Trailer", "x-amz-checksum-sha512,X-Amz-Checksum-MD5, x-amz-checksum-xxhash64,x-amz-checksum-XXHASH3,x-amz-checksum-xxhash128")
			}, streamingUnsignedTrailer),
		},
		{
			name: "duplicate trailer", want: s3err.InvalidArgument,
			r: sign(func(r *http.Request) { decoded("5")(r); r.Header.Set("X-Amz-Trailer", "a,a") }, streamingUnsignedTrailer),
		},
		{
			name: "trailer signature declared", want: s3err.InvalidArgument,
			r: sign(func(r *http.Request) { decoded("5")(r); r.Header.Set("X-Amz-Trailer", trailerSignatureName) }, streamingSignedTrailer),
		},
		{
			name: "trailer with signed payload", want: s3err.InvalidArgument,
			r: sign(func(r *http.Request) { r.Header.Set("X-Amz-Trailer", "x-amz-checksum-crc32") }, emptySHA256),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := newTestVerifier(testTime, testCred).Verify(tc.r)
			wantCode(t, err, tc.want)
			if err != nil {
				return
			}
			if res.Payload != tc.payload || res.DecodedLength != tc.decoded {
				t.Errorf("payload %v, decoded %d; want %v, %d", res.Payload, res.DecodedLength, tc.payload, tc.decoded)
			}
			if diff := cmp.Diff(tc.trailers, res.Trailers); diff != "" {
				t.Errorf("trailers mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVerifyAnonymous(t *testing.T) {
	v := newTestVerifier(testTime, testCred)
	for _, tc := range []struct {
		name    string
		header  string
		want    s3err.Code
		payload PayloadMode
	}{
		{name: "no header", payload: PayloadUnsigned},
		{name: "unsigned", header: unsignedPayload, payload: PayloadUnsigned},
		{name: "hash", header: emptySHA256, payload: PayloadSigned},
		{name: "signed streaming", header: streamingSigned, want: s3err.InvalidArgument},
		{name: "garbage", header: "nope", want: s3err.InvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := serverSide(t, newRequest(t, http.MethodGet, "http://localhost/b/k?X-Amz-Date=1", nil))
			if tc.header != "" {
				r.Header.Set("X-Amz-Content-Sha256", tc.header)
				r.Header.Set("X-Amz-Decoded-Content-Length", "0")
			}
			res, err := v.Verify(r)
			wantCode(t, err, tc.want)
			if err == nil && (!res.Anonymous || res.AccessKeyID != "" || res.Payload != tc.payload) {
				t.Errorf("result = %+v", res)
			}
		})
	}
}

func TestRequestTimeDateHeader(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    http.Header
		want string
		ok   bool
	}{
		{"x-amz-date wins", http.Header{"X-Amz-Date": {"20130524T000000Z"}, "Date": {"junk"}}, "20130524T000000Z", true},
		{"rfc1123 date", http.Header{"Date": {"Fri, 24 May 2013 00:00:00 GMT"}}, "20130524T000000Z", true},
		{"iso date", http.Header{"Date": {"20130524T000000Z"}}, "20130524T000000Z", true},
		{"bad date", http.Header{"Date": {"yesterday"}}, "", false},
		{"bad x-amz-date", http.Header{"X-Amz-Date": {"Fri, 24 May 2013 00:00:00 GMT"}}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, tm, err := requestTime(tc.h)
			if (err == nil) != tc.ok || got != tc.want {
				t.Fatalf("requestTime = %q, %v; want %q, ok %v", got, err, tc.want, tc.ok)
			}
			if tc.ok && !tm.Equal(exampleTime) {
				t.Errorf("time = %v, want %v", tm, exampleTime)
			}
		})
	}
}

func TestSigningKeyCache(t *testing.T) {
	keys := newKeyring(testCred)
	v := NewVerifier(Config{Clock: func() time.Time { return testTime }}, keys)
	if _, err := v.Verify(signedPut(t, "us-east-1", nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(signedPut(t, "us-east-1", nil)); err != nil {
		t.Fatal(err)
	}
	if n := v.cache.len(); n != 1 {
		t.Fatalf("cache holds %d keys after two verifications with one key, want 1", n)
	}

	// A wrong signature derives a key but caches nothing: strangers who
	// know an access key ID cannot fill the cache (with other dates) and
	// push real clients' keys out.
	fresh := NewVerifier(Config{Clock: func() time.Time { return testTime }}, keys)
	other := newRequest(t, http.MethodGet, "http://localhost/b/k", nil)
	SignRequest(other, Credentials{testCred.AccessKeyID, "not-the-secret"}, "us-east-1", testTime, unsignedPayload)
	_, err := fresh.Verify(serverSide(t, other))
	wantCode(t, err, s3err.SignatureDoesNotMatch)
	if n := fresh.cache.len(); n != 0 {
		t.Fatalf("cache holds %d keys after a failed verification, want 0", n)
	}

	// Rotate the secret: the old signature must fail even though a key for
	// the same access key, date and region is cached.
	keys.set(testCred.AccessKeyID, "rotated-secret")
	_, err = v.Verify(signedPut(t, "us-east-1", nil))
	wantCode(t, err, s3err.SignatureDoesNotMatch)
	c := newRequest(t, http.MethodGet, "http://localhost/b/k", nil)
	SignRequest(c, Credentials{testCred.AccessKeyID, "rotated-secret"}, "us-east-1", testTime, unsignedPayload)
	if _, err := v.Verify(serverSide(t, c)); err != nil {
		t.Fatalf("request signed with the rotated secret: %v", err)
	}
}

func TestSigningKeyCacheBounded(t *testing.T) {
	keys := newKeyring()
	v := NewVerifier(Config{Clock: func() time.Time { return testTime }, CacheSize: 4}, keys)
	for i := range 20 {
		cred := Credentials{fmt.Sprintf("AKID%d", i), fmt.Sprintf("secret%d", i)}
		keys.set(cred.AccessKeyID, cred.SecretKey)
		for range 2 {
			c := newRequest(t, http.MethodGet, "http://localhost/b/k", nil)
			SignRequest(c, cred, "us-east-1", testTime, unsignedPayload)
			if _, err := v.Verify(serverSide(t, c)); err != nil {
				t.Fatalf("key %d: %v", i, err)
			}
			if n := v.cache.len(); n > 4 || n < 1 {
				t.Fatalf("cache holds %d keys, want 1..4", n)
			}
		}
	}
	off := NewVerifier(Config{Clock: func() time.Time { return testTime }, CacheSize: -1}, newKeyring(testCred))
	if _, err := off.Verify(signedPut(t, "us-east-1", nil)); err != nil {
		t.Fatal(err)
	}
	if n := off.cache.len(); n != 0 {
		t.Errorf("disabled cache holds %d keys", n)
	}
}

func TestVerifyConcurrent(t *testing.T) {
	v := newTestVerifier(testTime, testCred)
	good := signedPut(t, "us-east-1", nil)
	bad := signedPut(t, "us-east-1", flipSignature)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 50 {
				if _, err := v.Verify(good); err != nil {
					t.Errorf("goroutine %d: %v", i, err)
					return
				}
				if _, err := v.Verify(bad); s3err.CodeOf(err) != s3err.SignatureDoesNotMatch {
					t.Errorf("goroutine %d: bad signature: %v", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestSignedPayloadBody(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string // sent instead of "hello"
		want s3err.Code
	}{
		{name: "match", body: "hello"},
		{name: "mismatch", body: "jello", want: s3err.XAmzContentSHA256Mismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := signedPut(t, "us-east-1", nil)
			r.Body = io.NopCloser(strings.NewReader(tc.body))
			res, err := newTestVerifier(testTime, testCred).Verify(r)
			if err != nil {
				t.Fatal(err)
			}
			b, err := res.Body(r.Body)
			if err != nil {
				t.Fatal(err)
			}
			// io.ReadFull stops at the declared length: the error must come
			// with that last read, not after it.
			buf := make([]byte, 5)
			_, err = io.ReadFull(b, buf)
			wantCode(t, err, tc.want)
			if tc.want == "" {
				if n, err := b.Read(buf); n != 0 || err != io.EOF {
					t.Errorf("read after end = %d, %v; want 0, EOF", n, err)
				}
			}
		})
	}
	// A body that ends early is incomplete.
	r := signedPut(t, "us-east-1", nil)
	res, err := newTestVerifier(testTime, testCred).Verify(r)
	if err != nil {
		t.Fatal(err)
	}
	b, err := res.Body(io.NopCloser(strings.NewReader("hel")))
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(b)
	wantError(t, err, s3err.IncompleteBody, msgTerminated)
}
