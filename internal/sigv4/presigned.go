package sigv4

import (
	"strconv"
	"strings"
	"time"
)

// authQuery says which authentication parameters a query string carries.
type authQuery struct {
	v4 bool // X-Amz-Algorithm, X-Amz-Credential or X-Amz-Signature
	v2 bool // AWSAccessKeyId and Signature (SigV2)
}

// scanAuthQuery looks for authentication parameters without allocating.
func scanAuthQuery(raw string) authQuery {
	var q authQuery
	if !strings.Contains(raw, "X-Amz-") && !strings.Contains(raw, "Signature") {
		return q
	}
	var v2Key, v2Sig bool
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		k, _, _ := strings.Cut(pair, "=")
		switch k {
		case "X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Signature":
			q.v4 = true
		case "AWSAccessKeyId":
			v2Key = true
		case "Signature":
			v2Sig = true
		}
	}
	q.v2 = v2Key && v2Sig
	return q
}

// presigned holds the authentication parameters of a presigned URL.
type presigned struct {
	cred          credential
	amzDate       string
	date          time.Time
	expires       time.Duration
	signedHeaders string
	signature     [32]byte
	contentSHA256 string // X-Amz-Content-Sha256, optional
}

// The query parameters of presigned URLs, in the order of presignParams.
const (
	qAlgorithm = iota
	qCredential
	qDate
	qExpires
	qSignedHeaders
	qSignature
	qContentSHA256
	qCount
)

var presignParams = [qCount]string{
	"X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires",
	"X-Amz-SignedHeaders", "X-Amz-Signature", "X-Amz-Content-Sha256",
}

// parsePresigned parses raw into q and extracts the presigned URL's
// authentication parameters. It checks their syntax, not their values.
func parsePresigned(raw string, q *canonQuery) (presigned, error) {
	var p presigned
	q.reset()
	q.parse(raw)
	var vals [qCount]string
	var seen [qCount]bool
	for _, qp := range q.params {
		k := q.key(qp)
		i := 0
		for i < qCount && string(k) != presignParams[i] {
			i++
		}
		if i == qCount {
			continue
		}
		if seen[i] {
			return p, errQuery("Query-string authentication requires a single " + presignParams[i] + " parameter.")
		}
		seen[i] = true
		vals[i] = decodeCanonical(q.value(qp))
	}
	for i := range qSignature + 1 {
		if !seen[i] {
			return p, errQuery("Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters.")
		}
	}
	if vals[qAlgorithm] != algorithm {
		return p, errQuery(`X-Amz-Algorithm only supports "AWS4-HMAC-SHA256"`)
	}
	var err error
	if p.cred, err = parseCredential(vals[qCredential], errCredentialMalformed); err != nil {
		return p, err
	}
	var ok bool
	if p.date, ok = parseAmzDate(vals[qDate]); !ok {
		return p, errQuery(`X-Amz-Date must be in the ISO8601 Long Format "yyyyMMdd'T'HHmmss'Z'"`)
	}
	p.amzDate = vals[qDate]
	secs, err := strconv.ParseInt(vals[qExpires], 10, 64)
	switch {
	case err != nil && secs == 0:
		return p, errQuery("X-Amz-Expires should be a number")
	case secs < 0:
		return p, errQuery("X-Amz-Expires must be non-negative")
	case err != nil || secs > int64(maxExpires/time.Second):
		return p, errQuery("X-Amz-Expires must be less than a week (in seconds); that is, the given X-Amz-Expires must be less than 604800 seconds")
	}
	p.expires = time.Duration(secs) * time.Second
	if !validSignedHeaders(vals[qSignedHeaders]) {
		return p, errQuery("X-Amz-SignedHeaders must be a ';'-separated, sorted list of lowercase header names.")
	}
	p.signedHeaders = vals[qSignedHeaders]
	if !parseSignature(&p.signature, vals[qSignature]) {
		return p, errQuery("X-Amz-Signature must be 64 hexadecimal digits.")
	}
	p.contentSHA256 = vals[qContentSHA256]
	return p, nil
}
