package s3api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"

	"github.com/coffer-s3/coffer/internal/cors"
	"github.com/coffer-s3/coffer/internal/httprec"
	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/s3err"
	"github.com/coffer-s3/coffer/internal/s3xml"
)

// writeXML writes v as an XML document with status. The document is
// encoded into memory first, so that an encoding error is still an error
// response and Content-Length is known.
func writeXML(w http.ResponseWriter, status int, v any) error {
	var buf bytes.Buffer
	if err := s3xml.Encode(&buf, v); err != nil {
		return fmt.Errorf("encode %T: %w", v, err)
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "application/xml")
	hdr.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	_, err := w.Write(buf.Bytes())
	return err
}

// keptOnError are the response headers an error response keeps; whatever
// else a handler set before failing is dropped. The CORS headers are kept
// so that a browser lets the page read the error, Retry-After for a
// SlowDown. A read-only lookup
// table.
var keptOnError = append([]string{"x-amz-request-id", "x-amz-id-2", "Server", "Retry-After"}, cors.ResponseHeaders[:]...)

// keptOnNotModified are the headers a 304 keeps besides keptOnError: RFC
// 9110 §15.4.5 wants the validators, Cache-Control and Expires a 200
// would have sent (a cache refreshes its copy's freshness from them). A
// read-only lookup table.
var keptOnNotModified = [...]string{"ETag", "Last-Modified", "x-amz-version-id", "Cache-Control", "Expires"}

// writeError is the only place that writes error responses. An
// *s3err.Error in err's chain gives the code, status and message (from
// s3err's table); anything else is InternalError, logged here once with
// the request ID. A client that went away gets no body, and its error is
// logged at Debug. HEAD responses and 304s carry the status and headers but
// no body. If the status line has already been sent (a GET body failed
// midway), nothing can be written: the error is logged and net/http ends
// the connection short of Content-Length, so the client sees the failure.
func (h *Handler) writeError(w *httprec.Writer, r *http.Request, rq *request, err error) {
	ctx := r.Context()
	// A body that stopped arriving (idleBody's deadline) cancels the
	// request's context too, but the client is still there to be told.
	timedOut := s3err.Is(err, s3err.RequestTimeout)
	// A read's request context is cancelled by a client that merely
	// half-closed after sending it, and the read ran detached from it
	// (readContext): its answer, an error too (a 404, a 304), is written
	// like any other. A client that went away is a write whose context
	// ended, a read cut by the cancellation itself, or an answer that
	// failed to reach the client because it closed or reset the
	// connection (a download abandoned midway: not an internal error;
	// net/http may not have cancelled the context yet when the write
	// fails).
	gone := errors.Is(err, context.Canceled) || ctx.Err() != nil && writes(r.Method) ||
		w.Status != 0 && clientWriteFailed(err)
	if !timedOut && gone {
		h.log.DebugContext(ctx, "client went away", "request_id", rq.id, "op", rq.opName(), "err", err)
		if w.Status == 0 {
			// Returning would let net/http send an empty 200 to a
			// client that may still be listening (a half-closed
			// connection cancels the context too): abort instead, so
			// no failed write ever looks acknowledged.
			rq.aborted = true
			panic(http.ErrAbortHandler)
		}
		return
	}
	if w.Status != 0 {
		h.log.WarnContext(ctx, "response failed after its status was sent",
			"request_id", rq.id, "op", rq.opName(), "status", w.Status, "written", w.Written, "err", err)
		rq.code = s3err.CodeOf(err)
		return
	}
	e, ok := errors.AsType[*s3err.Error](err)
	if (!ok || e.Code == s3err.InternalError) && errors.Is(err, objects.ErrUnavailable) {
		// A shared metadata store (PostgreSQL) is down or restarting:
		// transient, so the client should come back.
		e, ok = &s3err.Error{Code: s3err.ServiceUnavailable, Err: err,
			Message: "The metadata store cannot be reached; please retry."}, true
		w.Header().Set("Retry-After", retryAfter)
	}
	storageFailed := false
	if !ok || e.Code == s3err.InternalError || e.Code == s3err.StorageFull {
		// Once the metadata store has failed, an internal error is most
		// likely its doing, and the client should retry after the
		// restart, not report a bug: answer ServiceUnavailable. So is a
		// full disk met then (the failure's cause, as a rule): the
		// server is restarting, and deleting objects cannot help now.
		if se, failed := errors.AsType[*s3err.Error](h.storageErr()); failed {
			e, ok, storageFailed = se, true, true
		}
	}
	switch {
	case !ok:
		h.log.ErrorContext(ctx, "internal error", "request_id", rq.id, "op", rq.opName(), "bucket", rq.bucket, "key", rq.key, "err", err)
		e = s3err.Wrap(s3err.InternalError, "", err)
	case storageFailed || e.Code == s3err.ServiceUnavailable:
		// Logged at Debug: the failure that causes these was logged
		// once, at Error, where it happened, and every write meets it
		// until the server has stopped.
		h.log.DebugContext(ctx, "request failed: service unavailable", "request_id", rq.id, "op", rq.opName(), "err", err)
	case e.Code == s3err.SlowDown:
		// Load shed on purpose, counted in coffer_s3_requests_slowdown_total:
		// at Error, an overload would write a log line per refusal.
		h.log.DebugContext(ctx, "request shed: slow down", "request_id", rq.id, "op", rq.opName())
	case e.Status() >= http.StatusInternalServerError && e.Code != s3err.NotImplemented:
		h.log.ErrorContext(ctx, "server error", "request_id", rq.id, "op", rq.opName(), "bucket", rq.bucket, "key", rq.key, "code", e.Code, "err", err)
	default:
		h.log.DebugContext(ctx, "request failed", "request_id", rq.id, "op", rq.opName(), "code", e.Code, "err", err)
	}
	out := *e // never modify an error someone else may hold
	rq.code = out.Code
	// Resource is always the request path, as S3-compatible servers
	// report it; the service's own resource names go to the log only.
	out.Resource = r.URL.Path
	status := out.Status()
	h.drainBody(r, rq)

	hdr := w.Header()
	keep := make(http.Header, len(keptOnError)+len(keptOnNotModified))
	for _, k := range keptOnError {
		if v, ok := hdr[k]; ok {
			keep[k] = v
		}
	}
	if status == http.StatusNotModified {
		for _, k := range keptOnNotModified {
			if v, ok := hdr[k]; ok {
				keep[k] = v
			}
		}
	}
	clear(hdr)
	for k, v := range keep {
		hdr[k] = v
	}
	for _, f := range out.Header {
		hdr[f.Name] = []string{f.Value}
	}
	if size, ok := extra(&out, "ActualObjectSize"); ok && out.Code == s3err.InvalidRange {
		hdr.Set("Content-Range", "bytes */"+size)
	}

	if status == http.StatusNotModified || r.Method == http.MethodHead {
		w.WriteHeader(status)
		return
	}
	var buf bytes.Buffer
	if err := s3xml.EncodeError(&buf, &out, rq.id, rq.hostID); err != nil {
		h.log.ErrorContext(ctx, "encode error document", "request_id", rq.id, "code", out.Code, "err", err)
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	hdr.Set("Content-Type", "application/xml")
	hdr.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	if _, err := w.Write(buf.Bytes()); err != nil {
		h.log.DebugContext(ctx, "write error document", "request_id", rq.id, "err", err)
	}
}

// extra returns the value of e's extra field name.
func extra(e *s3err.Error, name string) (string, bool) {
	for _, f := range e.Extra {
		if f.Name == name {
			return f.Value, true
		}
	}
	return "", false
}

// Bounds on the unread request body writeError reads and discards before
// answering. A client still sending when the server closes the connection
// sees a reset instead of the error (a failed precondition on a large PUT,
// say); draining lets it read the answer. Anonymous and unauthenticated
// requests get the smaller bound, so a stranger cannot make the server read
// much; beyond the bound net/http closes the connection. A stranger's body
// that declares more than the bound, or no length, is not read at all: the
// answer goes out at once and the connection is closed, so that strangers
// trickling bodies cannot keep handlers (and the connection limit's slots)
// busy for drainTimeout each.
const (
	maxDrainAuthenticated = 64 << 20
	maxDrainOther         = 256 << 10
)

// drainBody discards what is left of the request body, within bounds.
func (h *Handler) drainBody(r *http.Request, rq *request) {
	if rq.rawBody == nil || rq.rawBody == http.NoBody {
		return
	}
	limit := int64(maxDrainOther)
	if rq.auth != nil && !rq.principal.Anonymous && rq.principal.AccessKeyID != "" {
		limit = maxDrainAuthenticated
	}
	// A stranger that waits for "100 Continue" before sending its body
	// (the first read would ask for it) is answered without it, as S3
	// answers, and sends nothing. An authenticated client's body is
	// drained even then: clients that send Expect without waiting for the
	// answer (Go's with no ExpectContinueTimeout) are sending it already,
	// and would see the connection reset instead of the answer.
	waits := !rq.idle.started && strings.EqualFold(r.Header.Get("Expect"), "100-continue")
	if limit == maxDrainOther && (r.ContentLength < 0 || r.ContentLength > maxDrainOther || waits) {
		if rq.idle.rc != nil {
			rq.idle.final(0) // net/http's own discard fails at once: it closes the connection
		}
		return
	}
	if rq.idle.rc != nil && rq.code == s3err.RequestTimeout {
		// The body stalled already: waiting for more is pointless.
		rq.idle.final(0)
		return
	}
	if rq.idle.rc != nil {
		// A client that stopped sending must not hold the handler (and,
		// after it, net/http's own discard) past drainTimeout; a stranger
		// gets time only for what it already sent.
		d := drainTimeout
		if limit == maxDrainOther {
			d = strangerDrainTimeout
		}
		rq.idle.final(d)
	}
	var buf [8 << 10]byte // not the pooled 128 KiB: many refused uploads may drain at once
	_, _ = io.CopyBuffer(io.Discard, io.LimitReader(rq.rawBody, limit), buf[:])
}

// clientWriteFailed reports whether err is a write to the client's
// connection refused because the client closed or reset it (EPIPE,
// ECONNRESET), rather than a failure of the storage the answer came
// from; an upstream's connection errors in gateway mode come wrapped in
// a *url.Error and are not the client's.
func clientWriteFailed(err error) bool {
	if _, upstream := errors.AsType[*url.Error](err); upstream {
		return false
	}
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, net.ErrClosed)
}
