// Package s3api is Coffer's S3 HTTP surface: it turns S3 requests into
// calls of the object service and its results into S3 responses.
//
// # The request pipeline
//
// [Handler.ServeHTTP] runs every request through the same steps:
//
//  1. A request ID is assigned and sent as x-amz-request-id (and a host ID
//     as x-amz-id-2) on every response, errors included.
//  2. parseOp (route.go) finds the operation in the op table (ops.go) from
//     the method, the path-style or virtual-hosted-style target and the
//     sub-resource. Anything the table does not serve routes to
//     NotImplemented, never to a neighbouring operation.
//  3. sigv4 verifies the signature from the headers alone, and iam resolves
//     the principal and authorizes the op's action on the bucket and key.
//     Nothing below runs for a request that is not allowed: no body is
//     read and no storage is touched.
//  4. prepareBody (auth.go) checks declared lengths against the limits and
//     wraps the body in sigv4's verifying reader (SHA-256 of a signed
//     payload, or aws-chunked decoding with chunk signatures and trailers),
//     cut to exactly the declared length.
//  5. The op's handler parses what it needs with pure functions (headers.go,
//     range.go, conditions.go, list.go, …), calls the service and writes the
//     response.
//  6. An error from any step goes to writeError (write.go), the only place
//     that writes error documents: S3 codes from *s3err.Error, anything else
//     InternalError, logged once with the request ID.
//  7. Once the response is complete, the Observer in Deps, if any, gets a
//     RequestRecord of the request (observe.go): metrics, later the audit
//     log. This runs for every request, panics and unroutable ones
//     included, and allocates nothing.
//
// Parsers do no I/O and are table-tested and fuzzed. Response and error
// bodies are checked byte for byte against testdata/golden; run
// go test ./internal/s3api -update to rewrite them, and review the diff.
// docs/s3-compatibility.md is rendered from the op table by
// [RenderCompatibility].
package s3api
