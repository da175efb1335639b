package s3api

import (
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/coffer-s3/coffer/internal/httprec"
	"github.com/coffer-s3/coffer/internal/s3err"
)

// OpUnknown is the Op of a RequestRecord for a request that could not be
// routed: its bucket name, in the path or in a virtual-hosted Host, is not
// one any bucket can have. A request that routes but matches no row of the
// op table is "NotImplemented", not OpUnknown.
const OpUnknown = "Unknown"

// StatusClientClosed is the Status of a RequestRecord for a request whose
// client went away before a status line was sent: nothing was answered.
// It is nginx's 499; no response ever carries it.
const StatusClientClosed = 499

// A RequestRecord describes one request a Handler served, for an Observer:
// metrics now, the audit log later. Every field is set for every request;
// strings are "" where they do not apply.
type RequestRecord struct {
	// Op is the operation's name as in the op table ("PutObject"),
	// "NotImplemented" for a request no row matches, or OpUnknown.
	Op string
	// Status is the HTTP status sent: 200 when the handler wrote nothing
	// (net/http sends 200), StatusClientClosed when the client went away
	// before any status was sent. It is never 100 Continue.
	Status int
	// Code is the S3 error code of a failed request, "" on success. It is
	// set also when the failure came after the status line (a GET whose
	// data could not be read midway: Status 200, Code InternalError), and
	// it is "" when the client went away.
	Code s3err.Code
	// BytesIn counts the request body bytes read, as they came off the
	// connection (aws-chunked framing included), including any discarded
	// to let an early error reach the client.
	BytesIn int64
	// BytesOut counts the response body bytes written.
	BytesOut int64
	// Start is when ServeHTTP began and Duration how long it ran, until
	// after the last byte of the response was written.
	Start    time.Time
	Duration time.Duration
	// Bucket and Key are the request's target ("" for service-level
	// requests, and Key "" for bucket-level ones).
	Bucket, Key string
	// Method is the request's HTTP method.
	Method string
	// AccessKeyID is the key that signed the request once its signature
	// verified; "" for anonymous requests and for requests that failed
	// authentication.
	AccessKeyID string
	// User is the user of AccessKeyID: "" for anonymous requests, for
	// failed authentication and for root (Root is true then).
	User string
	Root bool
	// ClaimedAccessKeyID is the access key a request that failed
	// authentication named (an unknown key, or a known one whose
	// signature did not match), for the audit log; "" otherwise.
	ClaimedAccessKeyID string
	// AuthFailed says the request failed authentication: its signature,
	// credentials or authentication headers were refused, whatever the
	// status (403 SignatureDoesNotMatch, and also 400
	// AuthorizationHeaderMalformed or AuthorizationQueryParametersError,
	// which the audit log would otherwise take for a reader's mistake).
	AuthFailed bool
	// Denied says an authorization of the request was refused, whatever
	// status was sent: a denied request for a bucket that does not exist
	// is answered NoSuchBucket (404), as S3 answers it, and a
	// DeleteObjects reports denied keys in a 200. A principal with no
	// permissions can send such requests at will.
	Denied bool
	// RemoteAddr is the client's address as net/http reports it
	// (host:port, no proxy headers interpreted).
	RemoteAddr string
	// RequestID is the x-amz-request-id sent with the response.
	RequestID string
}

// An Observer is told about every request a Handler serves, once, when the
// response is complete: successes, S3 errors, requests that could not be
// routed or authenticated, panics answered with InternalError, and
// requests whose client went away.
//
// ObserveRequest runs on the request's goroutine before ServeHTTP returns,
// so it must be fast and must not block; an observer that does I/O copies
// what it needs and hands it to a goroutine of its own. It is called
// concurrently for concurrent requests. rec is valid only during the call:
// the Handler owns it and reuses its memory, so an Observer must not
// retain rec, or modify it, after returning. Strings in rec may be kept.
type Observer interface {
	ObserveRequest(rec *RequestRecord)
}

// OpNames returns the names a RequestRecord's Op can take: every op of the
// table, "NotImplemented" and OpUnknown. Metrics use it to keep label
// values bounded.
func OpNames() []string {
	names := make([]string, 0, len(ops)+2)
	for i := range ops {
		names = append(names, ops[i].name)
	}
	return append(names, opNotImplemented.name, OpUnknown)
}

// observation is what observing a request needs beyond the request's own
// state: the record handed to the Observer and the counter of the raw
// body. Handlers pool them, so observing allocates nothing, and a Handler
// without an observer carries none.
type observation struct {
	rec  RequestRecord
	body bodyCounter
}

// bodyCounter counts the bytes read from a request body.
type bodyCounter struct {
	rc io.ReadCloser
	n  int64
}

// Read implements io.Reader.
func (b *bodyCounter) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.n += int64(n)
	return n, err
}

// Close implements io.Closer.
func (b *bodyCounter) Close() error { return b.rc.Close() }

// finish ends a request: it tells the observer and writes the debug log
// line. ServeHTTP defers it, so it runs for panics too, after they have
// been answered.
func (h *Handler) finish(rw *httprec.Writer, r *http.Request, rq *request, start time.Time) {
	debug := h.log.Enabled(r.Context(), slog.LevelDebug)
	if h.observer == nil && !debug {
		return
	}
	status := rw.Status
	if status == 0 {
		status = http.StatusOK
		if rq.aborted {
			status = StatusClientClosed
		}
	}
	dur := h.clock().Sub(start)
	if ob := rq.obs; ob != nil {
		op := OpUnknown
		if rq.op != nil {
			op = rq.op.name
		}
		rec := &ob.rec
		*rec = RequestRecord{
			Op:          op,
			Status:      status,
			Code:        rq.code,
			BytesIn:     ob.body.n,
			BytesOut:    rw.Written,
			Start:       start,
			Duration:    dur,
			Bucket:      rq.bucket,
			Key:         rq.key,
			Method:      r.Method,
			AccessKeyID: rq.principal.AccessKeyID,
			User:        rq.principal.User,
			Root:        rq.principal.Root,
			RemoteAddr:  r.RemoteAddr,
			RequestID:   rq.id,

			ClaimedAccessKeyID: rq.claimedKey,
			AuthFailed:         rq.authFailed,
			Denied:             rq.denied,
		}
		h.observer.ObserveRequest(rec)
		// Nothing uses the request's state after finish: the body
		// counter can go back with the record. Clearing drops the
		// references to this request's strings and body.
		*ob = observation{}
		rq.obs, rq.rawBody = nil, nil
		h.obs.Put(ob)
	}
	if debug {
		h.log.DebugContext(r.Context(), "request served", "request_id", rq.id, "op", rq.opName(),
			"bucket", rq.bucket, "key", rq.key, "access_key_id", rq.principal.AccessKeyID,
			"status", status, "code", rq.code, "bytes", rw.Written, "duration", dur)
	}
}
