package sigv4

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/coffer-s3/coffer/internal/s3err"
)

// The S3 client of aws-sdk-go-v2 escapes object keys with AWS's UriEncode
// (keeping '/') and signs the escaped path as is (DisableURIPathEscaping).
// These tests sign with its signer and verify what a net/http server reads.

var sdkKeys = []string{
	"photo.jpg",
	"a b",
	"a+b",
	"100%",
	"%2F",
	"ünïcødé/文件.txt",
	"~tilde~",
	"a=b&c=d",
	"dir//double",
	"trailing/",
	"!$'()*,;:@[]",
	"semi;colon?question#hash",
	"",
}

// rawPaths are sent unescaped where net/http allows it; the SDK signs them
// as sent, which Verify accepts as a fallback to the canonical form.
var rawPaths = []string{"/bucket/a=b&c+d!$", "/bucket/x@y:z", "/bucket/%7euser"}

var sdkQueries = []string{
	"",
	"uploads",
	"uploads=",
	"list-type=2&prefix=a%2Fb&delimiter=%2F",
	"prefix=a+b&marker=%20x",
	"x=2&x=1&x=10",
	"partNumber=1&uploadId=abc-DEF_0.9~",
	"response-content-disposition=attachment%3B%20filename%3D%22a%20b.txt%22",
	"empty=&novalue&%E2%9C%93=%e2%9c%93",
	"a/b=c/d&a-b=c-d",
}

// sdkEscapePath escapes a key as the SDK's S3 client does.
func sdkEscapePath(key string) string {
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c == '/' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

func sdkSigner() *v4.Signer {
	return v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
}

var sdkCreds = aws.Credentials{AccessKeyID: "AKIDSDKTEST", SecretAccessKey: "sdk/secret+key"}

func sdkPaths() []string {
	paths := append([]string(nil), rawPaths...)
	for _, k := range sdkKeys {
		paths = append(paths, "/bucket/"+sdkEscapePath(k))
	}
	return paths
}

func TestSDKSignHTTP(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	v := newTestVerifier(now, Credentials{AccessKeyID: sdkCreds.AccessKeyID, SecretKey: sdkCreds.SecretAccessKey})
	headerSets := []map[string][]string{
		nil,
		{"Content-Type": {"text/plain; charset=utf-8"}, "X-Amz-Meta-Note": {"  spaced    out  value "}},
		{"X-Amz-Meta-Multi": {"one", "two  three"}, "Range": {"bytes=0-9"}, "If-None-Match": {`"etag"`}},
		{"X-Amz-Tagging": {"a=b&c=d"}, "Content-Md5": {"1B2M2Y8AsgTpgAmY7PhCfg=="}, "X-Amz-Meta-Ütf": {"välue"}},
	}
	n := 0
	for _, path := range sdkPaths() {
		for qi, query := range sdkQueries {
			headers := headerSets[(n+qi)%len(headerSets)]
			n++
			body := []byte(nil)
			method := http.MethodGet
			if n%3 == 0 {
				method, body = http.MethodPut, []byte("payload "+path)
			}
			name := fmt.Sprintf("%s %s?%s", method, path, query)
			t.Run(name, func(t *testing.T) {
				url := "http://localhost:6789" + path
				if query != "" {
					url += "?" + query
				}
				c := newRequest(t, method, url, body)
				for k, vs := range headers {
					c.Header[k] = vs
				}
				sum := sha256.Sum256(body)
				hash := hex.EncodeToString(sum[:])
				c.Header.Set("X-Amz-Content-Sha256", hash)
				ours := c.Clone(t.Context())
				if err := sdkSigner().SignHTTP(t.Context(), sdkCreds, c, hash, "s3", "us-east-1", now); err != nil {
					t.Fatal(err)
				}
				// SignRequest signs the same headers and, for a path in
				// canonical form, produces the same signature.
				SignRequest(ours, Credentials{sdkCreds.AccessKeyID, sdkCreds.SecretAccessKey}, "us-east-1", now, hash)
				if canonical := string(appendCanonicalURI(nil, path)) == path; canonical && ours.Header.Get("Authorization") != c.Header.Get("Authorization") {
					t.Errorf("SignRequest Authorization =\n%s\nSDK\n%s", ours.Header.Get("Authorization"), c.Header.Get("Authorization"))
				}
				var wire bytes.Buffer
				if err := c.Write(&wire); err != nil {
					t.Fatal(err)
				}
				res, got, _, err := readBody(v, parseWire(t, wire.Bytes()))
				if err != nil {
					t.Fatalf("Verify rejected an SDK-signed request: %v\n%s", err, wire.Bytes())
				}
				if res.AccessKeyID != sdkCreds.AccessKeyID || res.Payload != PayloadSigned || !bytes.Equal(got, body) {
					t.Fatalf("result %+v, body %q", res, got)
				}
				for _, target := range tamperTargets(wire.Bytes(), path, query, headers) {
					tampered := flipByte(wire.Bytes(), target)
					r := parseWire(t, tampered)
					if _, err := v.Verify(r); s3err.CodeOf(err) != s3err.SignatureDoesNotMatch {
						t.Errorf("flipped byte %d (%q): error = %v, want SignatureDoesNotMatch", target, wire.Bytes()[target], err)
					}
				}
			})
		}
	}
}

// tamperTargets returns offsets in a request's wire form whose change must
// break the signature: one in the signature, the path, the query and a
// signed header value.
func tamperTargets(wire []byte, path, query string, headers map[string][]string) []int {
	var out []int
	if i := bytes.Index(wire, []byte("Signature=")); i >= 0 {
		out = append(out, i+len("Signature=")+7)
	}
	out = append(out, bytes.IndexByte(wire, ' ')+len(path)) // last byte of the path
	if query != "" {
		out = append(out, bytes.IndexByte(wire, '?')+1)
	}
	for k, vs := range headers {
		if i := bytes.Index(wire, []byte(k+": "+vs[0])); i >= 0 && strings.TrimSpace(vs[0]) != "" {
			out = append(out, i+len(k)+2+len(vs[0])-2)
		}
	}
	return out
}

// flipByte returns a copy of b with b[i] changed to another byte that keeps
// the request parseable.
func flipByte(b []byte, i int) []byte {
	out := bytes.Clone(b)
	switch c := out[i]; {
	case c == 'f' || c == 'z' || c == 'Z' || c == '9':
		out[i] = c - 1
	case c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		out[i] = c + 1
	default:
		out[i] = 'a'
	}
	return out
}

func TestSDKPresignHTTP(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	v := newTestVerifier(now.Add(5*time.Minute), Credentials{AccessKeyID: sdkCreds.AccessKeyID, SecretKey: sdkCreds.SecretAccessKey})
	for i, path := range sdkPaths() {
		query := sdkQueries[i%len(sdkQueries)]
		for _, method := range []string{http.MethodGet, http.MethodPut, http.MethodHead, http.MethodDelete} {
			t.Run(method+" "+path+"?"+query, func(t *testing.T) {
				url := "http://localhost:6789" + path + "?X-Amz-Expires=900"
				if query != "" {
					url += "&" + query
				}
				c := newRequest(t, method, url, nil)
				if method == http.MethodPut {
					c.Header.Set("Content-Type", "image/png")
					c.Header.Set("X-Amz-Meta-Owner", "me")
				}
				signed, hdr, err := sdkSigner().PresignHTTP(t.Context(), sdkCreds, c, "UNSIGNED-PAYLOAD", "s3", "us-east-1", now)
				if err != nil {
					t.Fatal(err)
				}
				if method != http.MethodPut && string(appendCanonicalURI(nil, path)) == path {
					// Presign (host only) matches the SDK for a canonical path.
					base := "http://localhost:6789" + path
					if query != "" {
						base += "?" + query
					}
					ours, err := Presign(method, base, Credentials{sdkCreds.AccessKeyID, sdkCreds.SecretAccessKey}, "us-east-1", now, 900*time.Second)
					if err != nil {
						t.Fatal(err)
					}
					if ours != signed {
						t.Errorf("Presign =\n%s\nSDK\n%s", ours, signed)
					}
				}
				r := newRequest(t, method, signed, nil)
				for k, vs := range hdr {
					if k != "Host" {
						r.Header[k] = vs
					}
				}
				res, err := v.Verify(serverSide(t, r))
				if err != nil {
					t.Fatalf("Verify rejected an SDK-presigned URL %s: %v", signed, err)
				}
				if !res.Presigned || res.Payload != PayloadUnsigned || res.AccessKeyID != sdkCreds.AccessKeyID {
					t.Errorf("result = %+v", res)
				}
				// Another method, or a changed signature, must fail.
				other := http.MethodPost
				tampered := newRequest(t, other, signed, nil)
				tampered.Header = r.Header
				if _, err := v.Verify(serverSide(t, tampered)); s3err.CodeOf(err) != s3err.SignatureDoesNotMatch {
					t.Errorf("method changed: error = %v, want SignatureDoesNotMatch", err)
				}
				i := strings.Index(signed, "X-Amz-Signature=") + len("X-Amz-Signature=")
				flipped := newRequest(t, method, string(flipByte([]byte(signed), i)), nil)
				flipped.Header = r.Header
				if _, err := v.Verify(serverSide(t, flipped)); s3err.CodeOf(err) != s3err.SignatureDoesNotMatch {
					t.Errorf("signature flipped: error = %v, want SignatureDoesNotMatch", err)
				}
			})
		}
	}
}
