package s3api

import (
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/coffer-s3/coffer/internal/s3err"
)

// route is what parseOp makes of a request: the operation and the bucket
// and key it addresses.
type route struct {
	op     *op
	bucket string     // "" for service scope
	key    string     // "" for service and bucket scope
	query  url.Values // the parsed query string
}

// parseOp finds the operation a request asks for. It understands
// path-style requests (/bucket/key) and, when domain is not empty,
// virtual-hosted-style ones (Host: bucket.domain, path /key). See
// https://docs.aws.amazon.com/AmazonS3/latest/userguide/VirtualHosting.html
//
// The key is the decoded path after the bucket, verbatim: "//", "." and
// ".." segments are kept, as S3 keeps them. A request that matches no row
// of ops routes to opNotImplemented. parseOp does no I/O.
func parseOp(r *http.Request, domain string) (route, error) {
	bucket, key, err := splitTarget(r.Host, r.URL.Path, domain)
	if err != nil {
		return route{}, err
	}
	sc := scopeObject
	switch {
	case bucket == "":
		sc = scopeService
	case key == "":
		sc = scopeBucket
	}
	q := r.URL.Query()
	return route{op: matchOp(r.Method, sc, q, r.Header), bucket: bucket, key: key, query: q}, nil
}

// splitTarget returns the bucket and key addressed by host and the decoded
// path.
func splitTarget(host, path, domain string) (bucket, key string, err error) {
	if b, ok := virtualBucket(host, domain); ok {
		if b == "" {
			return "", "", s3err.New(s3err.InvalidBucketName, host)
		}
		// The whole path is the key: "/a//b" is the key "a//b", "//a" is "/a".
		return b, strings.TrimPrefix(path, "/"), nil
	}
	p := strings.TrimPrefix(path, "/")
	bucket, key, _ = strings.Cut(p, "/")
	if bucket == "" && key != "" {
		// "//key": an object without a bucket.
		return "", "", s3err.New(s3err.InvalidBucketName, path)
	}
	return bucket, key, nil
}

// VirtualHosted reports whether a request for host addresses a bucket
// virtual-hosted-style under domain (its path is then an object key).
func VirtualHosted(host, domain string) bool {
	_, ok := virtualBucket(host, domain)
	return ok
}

// virtualBucket returns the bucket named by a virtual-hosted-style Host
// header ("bucket.domain", any port stripped, case-insensitive) and true, or
// false for a path-style request.
func virtualBucket(host, domain string) (string, bool) {
	if domain == "" {
		return "", false
	}
	if strings.LastIndexByte(host, ':') >= 0 {
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	domain = strings.ToLower(domain)
	if host == domain || !strings.HasSuffix(host, domain) {
		return "", false
	}
	b, ok := strings.CutSuffix(host[:len(host)-len(domain)], ".")
	if !ok {
		// "xs3.example.com" is another host, not a bucket of s3.example.com.
		return "", false
	}
	return b, true
}

// matchOp returns the first row of ops for method and sc whose
// distinguishing query and header the request carries. A request carrying
// a sub-resource that no row for its method and scope claims is
// NotImplemented, as is any request no row matches.
func matchOp(method string, sc scope, q url.Values, h http.Header) *op {
	for i := range ops {
		o := &ops[i]
		if o.method != method || o.scope != sc {
			continue
		}
		if o.anyQuery {
			return o
		}
		if o.query != "" {
			if !hasQuery(q, o.query) {
				continue
			}
		} else if hasSubresource(q) {
			// Rows with a query come first, so no row claims this one.
			return &opNotImplemented
		}
		if o.header != "" && h.Get(o.header) == "" {
			continue
		}
		return o
	}
	return &opNotImplemented
}

// hasQuery reports whether q has the parameter named by spec, which is
// "name" (present, any value) or "name=value".
func hasQuery(q url.Values, spec string) bool {
	name, value, withValue := strings.Cut(spec, "=")
	vs, ok := q[name]
	if !ok {
		return false
	}
	return !withValue || (len(vs) > 0 && vs[0] == value)
}

// hasSubresource reports whether q carries any S3 sub-resource.
func hasSubresource(q url.Values) bool {
	for k := range q {
		if subresources[k] {
			return true
		}
	}
	return false
}
