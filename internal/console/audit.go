package console

import (
	"context"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/coffer-s3/coffer/internal/audit"
	"github.com/coffer-s3/coffer/internal/policy"
)

// AuditLog is what the Audit page needs of the audit log: the calls the
// admin API's GET /audit and /audit/export make. *audit.Log implements
// it.
type AuditLog interface {
	// Flush returns once every event recorded before it is stored, so
	// that a page shows the requests that came before it.
	Flush(ctx context.Context) error
	Query(ctx context.Context, f audit.Filter) (audit.Page, error)
	Export(ctx context.Context, f audit.Filter, w io.Writer) (int64, error)
}

var _ AuditLog = (*audit.Log)(nil)

// auditPageSize is how many events one page of the Audit page shows.
const auditPageSize = 50

// auditTimeLayouts are the times the filter's since and until accept:
// an <input type="datetime-local">'s value (read as UTC) and RFC 3339.
var auditTimeLayouts = []string{"2006-01-02T15:04", "2006-01-02T15:04:05", time.RFC3339Nano}

// auditRanges are the choices of the "last" filter, a time range ending
// now. A read-only lookup table.
var auditRanges = []struct{ Value, Label string }{
	{"", "any time"}, {"15m", "15 minutes"}, {"1h", "hour"}, {"24h", "24 hours"}, {"168h", "7 days"},
}

// auditPage is the audit log: the events a filter selects, newest first,
// paged by event ID (a keyset: each page asks for the events older than
// the last one shown, so a page costs the same however deep it is, and
// events arriving meanwhile shift nothing), and the filtered set as JSON
// Lines. Both need admin:GetAuditLog, as the admin API's audit endpoints
// do. The filter is a GET form, so it works without JavaScript and a
// filtered view can be bookmarked.
func auditPage() page {
	return page{
		title:     "Audit",
		path:      "/audit",
		need:      "GetAuditLog",
		templates: []string{"audit.html"},
		routes: []pageRoute{
			{"GET /audit", func(h *Handler) sessionHandler { return h.auditList }},
			{"GET /audit/export", func(h *Handler) sessionHandler { return h.auditExport }},
		},
	}
}

// auditForm is the Audit page's filter, as submitted.
type auditForm struct {
	Last, Since, Until              string
	User, AccessKey, Bucket, Prefix string
	Op, Outcome, Source, SourceIP   string
	Before                          int64
	before                          string       // as submitted
	filter                          audit.Filter // built by build
	query                           string       // the filter as a query, without the cursor
}

func parseAuditForm(q url.Values) auditForm {
	tr := func(k string) string { return strings.TrimSpace(q.Get(k)) }
	return auditForm{
		Last: tr("last"), Since: tr("since"), Until: tr("until"),
		User: tr("user"), AccessKey: tr("accesskey"), Bucket: tr("bucket"), Prefix: q.Get("prefix"),
		Op: tr("op"), Outcome: tr("outcome"), Source: tr("source"), SourceIP: tr("sourceip"),
		before: tr("before"),
	}
}

// build checks f and fills in its filter, relative to now; it returns a
// message saying what is wrong otherwise.
func (f *auditForm) build(now time.Time) string {
	af := audit.Filter{User: f.User, AccessKey: f.AccessKey, Bucket: f.Bucket, KeyPrefix: f.Prefix,
		Op: f.Op, Source: f.Source, SourceIP: f.SourceIP, Limit: auditPageSize}
	switch f.Outcome {
	case "":
	case "success":
		af.Succeeded = true
	case "failed":
		af.Failed = true
	default:
		return "Outcome is success, failed or empty."
	}
	switch f.Source {
	case "", audit.SourceS3, audit.SourceAdmin, audit.SourceLifecycle, audit.SourceConsole:
	default:
		return "Source is s3, admin, lifecycle, console or empty."
	}
	if f.Last != "" {
		d, err := time.ParseDuration(f.Last)
		if err != nil || d <= 0 {
			return fmt.Sprintf("Last %q is not a duration such as 1h.", f.Last)
		}
		af.Since = now.Add(-d)
	}
	var err error
	if f.Since != "" {
		if af.Since, err = parseAuditTime(f.Since); err != nil {
			return "Since: " + err.Error()
		}
	}
	if f.Until != "" {
		if af.Until, err = parseAuditTime(f.Until); err != nil {
			return "Until: " + err.Error()
		}
	}
	if !af.Since.IsZero() && !af.Until.IsZero() && !af.Until.After(af.Since) {
		return "Until must be after since."
	}
	if f.before != "" {
		n, err := strconv.ParseInt(f.before, 10, 64)
		if err != nil || n <= 0 {
			return "The page cursor (before) is not valid; start from the first page."
		}
		f.Before, af.Before = n, n
	}
	f.filter = af
	f.query = f.values().Encode()
	return ""
}

// values returns the form's filter fields as a query, without the cursor.
func (f *auditForm) values() url.Values {
	v := url.Values{}
	for _, kv := range [][2]string{
		{"last", f.Last}, {"since", f.Since}, {"until", f.Until}, {"user", f.User}, {"accesskey", f.AccessKey},
		{"bucket", f.Bucket}, {"prefix", f.Prefix}, {"op", f.Op}, {"outcome", f.Outcome}, {"source", f.Source},
		{"sourceip", f.SourceIP},
	} {
		if kv[1] != "" {
			v.Set(kv[0], kv[1])
		}
	}
	return v
}

func parseAuditTime(s string) (time.Time, error) {
	for _, l := range auditTimeLayouts {
		if t, err := time.ParseInLocation(l, s, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a time such as 2026-11-24T18:00 (UTC) or 2026-11-24T18:00:00+01:00", s)
}

type auditView struct {
	Form     auditForm
	Ranges   []struct{ Value, Label string }
	Sources  []string
	Ops      []string // suggestions for the op filter
	Events   []auditRow
	Error    string
	Off      bool         // the audit log is off on this server
	Next     template.URL // the next (older) page; "" when none
	First    template.URL // the first page, when not on it
	Export   template.URL // the export of the filtered set
	Filtered bool         // a filter is set
}

// auditRow is one event as the table shows it.
type auditRow struct {
	audit.Event
	Failed bool
}

// auditOps are the op filter's suggestions: S3 operations are many,
// so the list holds the common ones and the admin actions. A read-only
// lookup table.
var auditOps = []string{
	"GetObject", "PutObject", "HeadObject", "DeleteObject", "DeleteObjects", "ListObjectsV2", "ListBuckets",
	"CreateBucket", "DeleteBucket", "CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload",
	"AbortMultipartUpload", "CopyObject", "PutBucketPolicy",
	policy.AdminCreateUser, policy.AdminDeleteUser, policy.AdminCreateAccessKey, policy.AdminDeleteAccessKey,
	policy.AdminCreatePolicy, policy.AdminAttachPolicy, policy.AdminDetachPolicy, policy.AdminSetUserPassword,
}

func (h *Handler) auditList(w http.ResponseWriter, r *http.Request, s *session) error {
	if err := h.mayAdmin(r, s, "GetAuditLog"); err != nil {
		return err
	}
	v := auditView{Form: parseAuditForm(r.URL.Query()), Ranges: auditRanges,
		Sources: []string{audit.SourceS3, audit.SourceAdmin, audit.SourceLifecycle, audit.SourceConsole}}
	v.Ops = auditOps
	if h.audit == nil {
		v.Off = true
		h.render(w, r, http.StatusOK, "audit.html", s, "Audit log", v)
		return nil
	}
	if msg := v.Form.build(h.clock()); msg != "" {
		v.Error = msg
		h.render(w, r, http.StatusBadRequest, "audit.html", s, "Audit log", v)
		return nil
	}
	ctx := r.Context()
	if err := h.flushAudit(ctx); err != nil {
		return err
	}
	p, err := h.audit.Query(ctx, v.Form.filter)
	if err != nil {
		return err
	}
	for _, e := range p.Events {
		v.Events = append(v.Events, auditRow{Event: e, Failed: e.Status >= 400})
	}
	// Query strings built by url.Values.Encode are safe in an href; as
	// template.URL the template does not escape their & and = again.
	v.Export = template.URL("/audit/export?" + v.Form.query)
	v.Filtered = v.Form.query != ""
	if p.Next != 0 {
		q := v.Form.values()
		q.Set("before", strconv.FormatInt(p.Next, 10))
		v.Next = template.URL("/audit?" + q.Encode())
	}
	if v.Form.Before != 0 {
		v.First = template.URL("/audit?" + v.Form.query)
	}
	h.render(w, r, http.StatusOK, "audit.html", s, "Audit log", v)
	return nil
}

// auditExport streams the events the filter selects as JSON Lines, oldest
// first, as a download: audit.Log.Export reads them in chunks, so the
// export's size does not bound memory. An error after the first byte
// cannot change the status; the connection is aborted instead, so the
// download is visibly truncated rather than complete-looking.
func (h *Handler) auditExport(w http.ResponseWriter, r *http.Request, s *session) error {
	if err := h.mayAdmin(r, s, "GetAuditLog"); err != nil {
		return err
	}
	if h.audit == nil {
		return pageError(http.StatusNotFound, "The audit log is off on this server (audit.enabled).")
	}
	f := parseAuditForm(r.URL.Query())
	f.before = "" // an export is the whole filtered set
	now := h.clock()
	if msg := f.build(now); msg != "" {
		return pageError(http.StatusBadRequest, "%s", msg)
	}
	f.filter.Limit, f.filter.Before = 0, 0
	ctx := r.Context()
	if err := h.flushAudit(ctx); err != nil {
		return err
	}
	hd := w.Header()
	hd.Set("Content-Type", "application/x-ndjson")
	hd.Set("Content-Disposition", fmt.Sprintf(`attachment; filename="coffer-audit-%s.jsonl"`, now.UTC().Format("20060102T150405Z")))
	hd.Set("Content-Security-Policy", "sandbox")
	w.WriteHeader(http.StatusOK)
	n, err := h.audit.Export(ctx, f.filter, w)
	if err != nil {
		if ctx.Err() == nil {
			h.log.ErrorContext(ctx, "audit export failed", "events", n, "err", err)
		}
		panic(http.ErrAbortHandler)
	}
	h.log.InfoContext(ctx, "audit exported", "events", n, "user", displayName(s.principal), "access_key", s.principal.AccessKeyID)
	return nil
}

// flushAudit waits until what was recorded before the request is stored.
// A failed write (the events are lost, and the audit log says so) does
// not stop the page; the end of the request does.
func (h *Handler) flushAudit(ctx context.Context) error {
	err := h.audit.Flush(ctx)
	if err != nil && ctx.Err() == nil {
		h.log.WarnContext(ctx, "audit events were not all stored", "err", err)
		return nil
	}
	return err
}
