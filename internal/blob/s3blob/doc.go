// Package s3blob is the block store of gateway mode: a blob.Store whose
// blobs are objects in a bucket of an upstream S3-compatible service
// (another Coffer, MinIO, Ceph RGW, AWS S3). Coffer keeps its metadata
// (buckets, object records, versions, IAM) locally as in every mode; only
// the blocks of large objects go upstream, one upstream object per block,
// named Prefix+key. It uses aws-sdk-go-v2, whose types do not leave this
// package.
//
// # Durability
//
// A blob is exactly as durable as the upstream makes an acknowledged
// PutObject: Put returns nil only after the upstream answered 200 to the
// whole body, and Coffer commits the metadata that refers to the blob only
// after that. Replication, erasure coding and fsync policy are the
// upstream's; Coffer's fsync setting does not apply to blocks.
//
// # Consistency
//
// The object service writes every block under a fresh key and reads it only
// after Put returned, so the store needs read-after-write consistency for
// new keys, and that a DELETE is eventually seen by List. AWS S3 (strong
// consistency since December 2020), MinIO, Ceph RGW and Coffer give both.
// Overwriting a key is never needed; List may miss or repeat keys written
// or deleted while it runs, which GC tolerates.
//
// # Integrity and signing
//
// Requests are signed with SigV4, but the body of a Put is not part of the
// signature: its payload hash is UNSIGNED-PAYLOAD, or
// STREAMING-UNSIGNED-PAYLOAD-TRAILER with a checksum trailer. A signed
// payload needs the SHA-256 of the body in the headers, before the body:
// the body would have to be read twice, which a blob arriving from a
// client (not seekable, up to 1 GiB) allows only by buffering or spooling
// it. STREAMING-AWS4-HMAC-SHA256-PAYLOAD (a signature per chunk) would
// stream, but costs a SHA-256 and an HMAC over every byte, which the SDK
// does not implement for PutObject. Integrity in transit instead comes
// from a flexible checksum (CRC32C unless Config.Checksum says otherwise)
// that Put computes while sending and appends as an aws-chunked trailer,
// framed exactly as the AWS SDKs frame it over HTTPS (this package frames
// it itself, over http too: the SDK would refuse an unseekable body over
// http, or compute its hash by reading the body first). The upstream
// verifies the checksum before it stores anything, answers an error
// otherwise, and keeps it with the object; Put also compares the checksum
// the upstream echoes, if it does. A whole-blob Get (offset 0, n < 0) asks
// for the stored checksum and verifies it at the end of the read, so the
// bytes are checked end to end; ranged reads are not, since S3 keeps no
// checksum of a range. Over https, TLS protects the body as well; over
// plain http the checksum catches corruption but not a deliberate man in
// the middle, so use https on any network you do not control.
//
// For upstreams without trailer support, Config.Checksum "MD5" sends a
// plain body and compares its MD5 with the ETag the upstream returns (a
// mismatch deletes the blob and fails the Put); "none" checks the length
// only. New writes, reads back and deletes a test blob, so a mode the
// upstream does not handle fails at startup, not on the first read.
//
// # Exact sizes
//
// net/http sends Content-Length from the request and, with the SDK, reads
// the body to its end after that many bytes, failing the request if it
// finds more: but by then the upstream may have received every byte it was
// promised and stored the object. So Put's body checks the reader itself
// and holds back the last bytes until it has seen the reader's end: a
// reader with a byte too many, or too few, or an error, aborts the request
// with the upstream still short of its Content-Length, and nothing is
// stored (see body).
//
// # Failed Puts
//
// A Put that fails because of its reader or its context leaves nothing:
// the request is aborted short of its body. A Put whose whole body was
// sent but whose answer never came (the connection broke, the context
// ended at that moment) may have been stored; Put deletes the key then,
// best effort, and the object service's orphan sweep collects what such a
// race leaves. (When the upstream is unavailable, that Delete is a single
// attempt within Config.Timeout, and usually fails: GC collects the blob.)
//
// # Retries
//
// Get, Delete and List use the SDK's standard retryer. Put retries only
// while none of the body has been read, because the caller's reader cannot
// be rewound: in practice, when the upstream refuses a request with
// Expect: 100-continue (sent for bodies of 2 MiB and more) before taking
// the body, as with a 503 SlowDown. (The SDK builds requests without a
// protocol version, and net/http honours Expect only from HTTP/1.1 on; the
// store marks them HTTP/1.1 so that the header does what it says.)
// Otherwise a failed Put is reported to the object service, whose client
// retries the object.
//
// # Unavailable upstream
//
// An upstream that cannot be reached or fails for now is reported as
// blob.ErrUnavailable (a *blob.UnavailableError naming the kind), which
// the object service answers with 503 ServiceUnavailable and Retry-After:
// a connection refused or unroutable ("connect"), a name that does not
// resolve ("dns"), a connection that broke ("reset"), a 5xx ("server_error")
// or 503 SlowDown / 429 ("throttled") after the retries, and a request the
// upstream stalls ("timeout"). Config.Timeout (10s) bounds each attempt's
// every wait on the upstream: the dial, the TLS handshake and the answer
// (the transport's timeouts), a Put's body that the upstream stops taking
// (a watchdog that runs while the transport is not reading the body, so a
// slow client does not count), and a Get's body that stops coming (each
// Read). So a request fails within MaxAttempts × Timeout plus the backoff
// between attempts (full jitter on 1s, 2s: under 3s in all with the
// standard 3 attempts); a Put whose body was taken is not retried, and its
// cleanup (below) is one attempt within Timeout. Other answers — 403, 400,
// a 404 about the bucket — are misconfigurations, returned as they are
// (the object service makes them internal errors, logged) and counted as
// "rejected". Stats counts failures by kind; the transitions between
// reachable and unavailable are logged once each (Warn, then Info), and
// Check (one HEAD without retries, for readiness probes) notices the
// upstream's return without waiting for a client's request. Nothing needs
// restarting: connections are made afresh. While the upstream is
// unavailable, one Get or Put at a time goes to it, with one attempt, to
// find out whether it is back; the others fail at once with the outage's
// error, rather than each waiting out every attempt (about 33 s for an
// upstream that answers nothing) while holding a request slot.
//
// # The prefix claim
//
// Garbage collection deletes every blob under Prefix that the local
// metadata does not reference, so a prefix shared by two deployments with
// different metadata stores loses data: each deletes the other's blocks.
// Claim prevents that. The object Prefix+ClaimName ("coffer-owner.json")
// names the metadata store that owns the prefix (its ID, and for people,
// when and by which Coffer it was claimed); Claim creates it with
// If-None-Match: * (a plain PutObject on an upstream that answers 501
// NotImplemented) and reads it back, and fails with blob.ErrClaimed if it names
// another store. The server claims its prefix at start, before its
// garbage collection may run, and so do coffer admin gc and coffer admin
// migrate; the nodes of one cluster share one metadata store and so one
// claim. List never returns the claim, and the object service keeps its
// blocks under "b/", the only place its garbage collection lists.
//
// # Operator notes
//
// The bucket must exist; New fails with an error naming it and the
// endpoint otherwise. Give the store a bucket, or a Prefix ending in "/",
// of its own: garbage collection deletes every blob under Prefix that the
// local metadata does not reference (List skips names that are not valid
// blob keys, but that is no protection for names that are). The server
// enforces it with the claim above; if it refuses to start because another
// store claimed the prefix, give this deployment a prefix of its own, or,
// only if this metadata store really is the owner now (its database was
// restored to a new server and the old deployment is gone), delete
// Prefix+"coffer-owner.json" by hand. The credentials need, on the bucket
// and prefix:
//
//   - s3:ListBucket (HeadBucket in New, and List for GC),
//   - s3:PutObject, s3:GetObject and s3:DeleteObject on Prefix*.
//
// For example, as an AWS IAM policy:
//
//	{"Version": "2012-10-17", "Statement": [
//	  {"Effect": "Allow", "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::BUCKET"},
//	  {"Effect": "Allow", "Action": ["s3:PutObject", "s3:GetObject", "s3:DeleteObject"],
//	   "Resource": "arn:aws:s3:::BUCKET/PREFIX*"}]}
//
// HeadBucket is authorized as s3:ListBucket without a prefix, so a
// s3:prefix condition on that statement would make New fail. The
// upstream's versioning should be off, or a lifecycle rule should expire
// noncurrent versions: otherwise deleted blocks keep using space there.
//
// Errors carry the operation, the key, and the upstream's status, error
// code and request ID; never the secret key.
package s3blob
