package adminapi

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/coffer-s3/coffer/internal/audit"
	"github.com/coffer-s3/coffer/internal/httprec"
)

// AuditLog is what the Handler needs of the audit log for the audit
// endpoints. *audit.Log implements it.
type AuditLog interface {
	// Flush returns once every event recorded before it is stored, so
	// that a query sees the requests that came before it.
	Flush(ctx context.Context) error
	Query(ctx context.Context, f audit.Filter) (audit.Page, error)
	Export(ctx context.Context, f audit.Filter, w io.Writer) (int64, error)
}

var _ AuditLog = (*audit.Log)(nil)

// A Record describes one admin request, for an Observer (the audit log).
// Strings in it may be kept; the record itself may not.
type Record struct {
	// Op is the endpoint's name ("CreateUser"), "" when the request
	// matched none.
	Op     string
	Method string
	// Target is the request's path below BasePath, percent-decoded:
	// what the request acted on ("users/alice/disable").
	Target string
	Status int
	// Code is the error code of a failed request; "" on success.
	Code string
	// AccessKeyID, User and Root say who signed the request, once its
	// signature verified. ClaimedAccessKeyID is the key a request that
	// failed authentication named; AuthFailed says authentication
	// failed, whatever the status (400 for a malformed signature).
	AccessKeyID, User  string
	Root               bool
	ClaimedAccessKeyID string
	AuthFailed         bool
	RemoteAddr         string
	RequestID          string
	Start              time.Time
	Duration           time.Duration
	BytesIn, BytesOut  int64
}

// An Observer is told about every admin request once, when its response
// is complete. ObserveAdmin must not block.
type Observer interface {
	ObserveAdmin(rec *Record)
}

// observe tells the observer about a finished request.
func (h *Handler) observe(w *httprec.Writer, rq *request, start time.Time) {
	status := w.Status
	if status == 0 {
		status = http.StatusOK
		if rq.r.Context().Err() != nil {
			status = 499 // the client went away before an answer, as s3api counts it
		}
	}
	rec := Record{
		Method:             rq.r.Method,
		Target:             strings.TrimPrefix(strings.TrimPrefix(rq.r.URL.Path, BasePath), "/"),
		Status:             status,
		Code:               rq.code,
		AccessKeyID:        rq.principal.AccessKeyID,
		User:               rq.principal.User,
		Root:               rq.principal.Root,
		ClaimedAccessKeyID: rq.claimedKey,
		AuthFailed:         rq.authFailed,
		RemoteAddr:         rq.r.RemoteAddr,
		RequestID:          rq.id,
		Start:              start,
		Duration:           time.Since(start),
		BytesIn:            int64(len(rq.body)),
		BytesOut:           w.Written,
	}
	if rq.ep != nil {
		rec.Op = rq.ep.name
	}
	h.observer.ObserveAdmin(&rec)
}

// errNoAudit answers the audit endpoints of a Handler without an audit log.
var errNoAudit = errorf(http.StatusNotImplemented, CodeNotImplemented, "the audit log is off on this server (audit.enabled)")

// auditParams are the query parameters of the audit endpoints, each with
// how it sets the filter.
var auditParams = map[string]func(f *audit.Filter, v string) error{
	"since":     func(f *audit.Filter, v string) (err error) { f.Since, err = parseAuditTime("since", v); return err },
	"until":     func(f *audit.Filter, v string) (err error) { f.Until, err = parseAuditTime("until", v); return err },
	"source":    func(f *audit.Filter, v string) error { f.Source = v; return nil },
	"op":        func(f *audit.Filter, v string) error { f.Op = v; return nil },
	"bucket":    func(f *audit.Filter, v string) error { f.Bucket = v; return nil },
	"prefix":    func(f *audit.Filter, v string) error { f.KeyPrefix = v; return nil },
	"user":      func(f *audit.Filter, v string) error { f.User = v; return nil },
	"accessKey": func(f *audit.Filter, v string) error { f.AccessKey = v; return nil },
	"sourceIp":  func(f *audit.Filter, v string) error { f.SourceIP = v; return nil },
	"failed": func(f *audit.Filter, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return errorf(http.StatusBadRequest, CodeInvalidInput, "failed=%q: want true or false", v)
		}
		f.Failed = b
		return nil
	},
	"before": func(f *audit.Filter, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return errorf(http.StatusBadRequest, CodeInvalidInput, "before=%q: want the next value of a previous page", v)
		}
		f.Before = n
		return nil
	},
	"limit": func(f *audit.Filter, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxAuditLimit {
			return errorf(http.StatusBadRequest, CodeInvalidInput, "limit=%q: want 1 to %d", v, MaxAuditLimit)
		}
		f.Limit = n
		return nil
	},
}

// MaxAuditLimit is the most events one page of GET /audit holds.
const MaxAuditLimit = 1000

func parseAuditTime(name, v string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, errorf(http.StatusBadRequest, CodeInvalidInput, "%s=%q: want an RFC 3339 time such as 2026-11-24T18:00:00Z", name, v)
	}
	return t, nil
}

// auditFilter builds the filter of an audit request from its query.
// Unknown or repeated parameters are refused, so a typo never widens a
// query silently.
func auditFilter(q url.Values, export bool) (audit.Filter, error) {
	var f audit.Filter
	for name, vs := range q {
		set, ok := auditParams[name]
		if !ok || (export && (name == "before" || name == "limit")) {
			return f, errorf(http.StatusBadRequest, CodeInvalidInput, "unknown query parameter %q", name)
		}
		if len(vs) != 1 {
			return f, errorf(http.StatusBadRequest, CodeInvalidInput, "query parameter %q given %d times", name, len(vs))
		}
		if err := set(&f, vs[0]); err != nil {
			return f, err
		}
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Until.After(f.Since) {
		return f, errorf(http.StatusBadRequest, CodeInvalidInput, "until must be after since")
	}
	return f, nil
}

// AuditPage is the answer of GET /audit: events newest first, and the
// value of "before" that asks for the next page (0 when there is none).
type AuditPage struct {
	Events []audit.Event `json:"events"`
	Next   int64         `json:"next,omitempty"`
}

func (h *Handler) queryAudit(ctx context.Context, rq *request) (any, error) {
	if h.audit == nil {
		return nil, errNoAudit
	}
	f, err := auditFilter(rq.r.URL.Query(), false)
	if err != nil {
		return nil, err
	}
	if err := h.flushAudit(ctx); err != nil {
		return nil, err
	}
	p, err := h.audit.Query(ctx, f)
	if err != nil {
		return nil, err
	}
	return AuditPage{Events: nonNil(p.Events), Next: p.Next}, nil
}

// flushAudit waits until what was recorded before the request is stored,
// so that a query sees it. A failed write (the events are lost, and the
// log says so) does not stop the query of what was stored; the end of
// the request does.
func (h *Handler) flushAudit(ctx context.Context) error {
	err := h.audit.Flush(ctx)
	if err != nil && ctx.Err() == nil {
		h.log.WarnContext(ctx, "audit events were not all stored", "err", err)
		return nil
	}
	return err
}

// stream is a response body written as it is produced, with its content
// type; writeResponse sends it with status 200.
type stream struct {
	contentType string
	write       func(w io.Writer) error
}

func (h *Handler) exportAudit(ctx context.Context, rq *request) (any, error) {
	if h.audit == nil {
		return nil, errNoAudit
	}
	f, err := auditFilter(rq.r.URL.Query(), true)
	if err != nil {
		return nil, err
	}
	if err := h.flushAudit(ctx); err != nil {
		return nil, err
	}
	return stream{contentType: "application/x-ndjson", write: func(w io.Writer) error {
		_, err := h.audit.Export(ctx, f, w)
		return err
	}}, nil
}

// writeStream sends a stream. An error after the status line cannot be
// reported: the connection is aborted, so the client sees a truncated
// body rather than a complete-looking one.
func (h *Handler) writeStream(w http.ResponseWriter, rq *request, s stream) {
	w.Header().Set("Content-Type", s.contentType)
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 32<<10)
	err := s.write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			h.log.ErrorContext(rq.r.Context(), "admin stream failed", "request_id", rq.id, "op", rq.ep.name, "err", err)
		}
		rq.code = CodeInternalError
		panic(http.ErrAbortHandler)
	}
}
