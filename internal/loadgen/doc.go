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
// has its own http.Transport with an idle connection per worker. Signing
// derives the SigV4 key per request (sigv4.SignRequest has no exported
// key cache); the CPU the generator spends per operation is measured with
// getrusage and reported with the results.
//
// It imports internal/sigv4 and the standard library only: never the
// server or its storage packages, nor the AWS SDK.
package loadgen
