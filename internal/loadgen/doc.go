// Package loadgen is the workload generator behind `coffer bench`: it
// drives S3 endpoints with signed requests over net/http and records
// throughput per second, latency histograms and errors by S3 code, and
// renders the results as JSON, markdown ranking tables, SVG charts and
// benchstat-readable lines.
//
// The generator keeps its own cost low so that it is not what is measured:
// one payload of random bytes is made per run and sent from a bytes.Reader
// over the shared slice; bodies go as UNSIGNED-PAYLOAD, so no payload is
// hashed; each worker reads responses into a buffer of its own; each target
// has its own http.Transport with an idle connection per worker; each
// target has a sigv4.Signer, which derives the SigV4 signing key once per
// day rather than per request. The CPU the generator spends per operation
// is measured with getrusage and reported with the results.
//
// With a Profiler, the target's pprof listener is profiled during that
// target's rounds only (CPU and allocations, merged over the rounds with
// github.com/google/pprof/profile), and ReadTop/WriteProfileTops list the
// top functions as `go tool pprof -top` would.
//
// Besides the standard library it imports internal/sigv4, a TOML parser
// (targets files) and pprof's profile package: never the server or its
// storage packages, nor the AWS SDK.
package loadgen
