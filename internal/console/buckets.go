package console

import (
	"context"
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/s3err"
)

// bucketsPage lists the buckets the signed-in principal may see, with
// their usage, and creates and deletes them: each action is decided by
// iam for that principal, as S3 decides CreateBucket and DeleteBucket.
func bucketsPage() page {
	return page{
		title:     "Buckets",
		path:      "/buckets",
		templates: []string{"buckets.html", "bucket_delete.html"},
		routes: []pageRoute{
			{"GET /buckets", func(h *Handler) sessionHandler { return h.listBuckets }},
			{"POST /buckets", func(h *Handler) sessionHandler { return h.createBucket }},
			{"GET /buckets/{name}/delete", func(h *Handler) sessionHandler { return h.confirmDeleteBucket }},
			{"POST /buckets/{name}/delete", func(h *Handler) sessionHandler { return h.deleteBucket }},
		},
	}
}

// bucketRow is one line of the bucket list.
type bucketRow struct {
	Name    string
	Objects int64
	Bytes   int64
	// UsageCorrupt: the bucket's stored usage does not decode, so Objects
	// and Bytes are not known (the row says so instead).
	UsageCorrupt bool
	// UsageHidden: the viewer may not list the whole bucket (a policy
	// that grants s3:ListBucket under a prefix alone, say), so the
	// bucket's totals, which S3 would not tell it, are not shown.
	UsageHidden bool
	Created     time.Time
	CanDelete   bool
}

// bucketsView is the bucket list page's data.
type bucketsView struct {
	Buckets []bucketRow
	NewName string // the name in the create form, after a failure
	Error   string // why the create failed
}

// Rows returns the table's rows, escaped in Go (see rows.go).
func (v bucketsView) Rows() template.HTML { return bucketRows(v.Buckets) }

func (h *Handler) listBuckets(w http.ResponseWriter, r *http.Request, s *session) error {
	v, err := h.bucketList(r, s)
	if err != nil {
		return err
	}
	h.render(w, r, http.StatusOK, "buckets.html", s, "Buckets", v)
	return nil
}

// bucketList returns the buckets s may see, by the rule of S3's
// ListBuckets: s3:ListAllMyBuckets (denied only explicitly), then
// iam.CanSeeBucket for each.
func (h *Handler) bucketList(r *http.Request, s *session) (bucketsView, error) {
	if err := h.authorize(r, s, iam.ListAllMyBuckets, ""); err != nil {
		return bucketsView{}, err
	}
	all, err := h.buckets.BucketsUsage(r.Context())
	if err != nil {
		return bucketsView{}, err
	}
	v := bucketsView{Buckets: []bucketRow{}}
	for _, b := range all {
		if !h.iam.CanSeeBucket(s.principal, b.Name) {
			continue
		}
		row := bucketRow{Name: b.Name, Created: b.Created, CanDelete: h.probe(r, s, iam.DeleteBucket, b.Name) == nil}
		if h.probe(r, s, iam.ListBucket, b.Name) == nil {
			row.Objects, row.Bytes, row.UsageCorrupt = b.Usage.Objects, b.Usage.Bytes, b.UsageCorrupt
		} else {
			row.UsageHidden = true
		}
		v.Buckets = append(v.Buckets, row)
	}
	return v, nil
}

// createBucket serves the create form. A refusal S3 would answer (an
// invalid or taken name, AccessDenied) is shown on the list page with
// S3's status and message.
func (h *Handler) createBucket(w http.ResponseWriter, r *http.Request, s *session) error {
	name := strings.TrimSpace(r.PostFormValue("name"))
	err := h.authorize(r, s, iam.CreateBucket, name)
	if err == nil {
		owner := h.iam.CanonicalID(s.principal)
		err = h.buckets.CreateBucket(r.Context(), name, objects.CreateBucketInput{
			Owner: owner, LegacyOwner: iam.RootCanonicalID(),
		})
	}
	if err != nil {
		status, msg := h.describe(r, err)
		if status >= http.StatusInternalServerError {
			return err
		}
		v, lerr := h.bucketList(r, s)
		if lerr != nil {
			return lerr
		}
		v.NewName, v.Error = name, msg
		s.act.failed(err)
		h.render(w, r, status, "buckets.html", s, "Buckets", v)
		return nil
	}
	h.log.InfoContext(r.Context(), "console change", "op", "CreateBucket", "bucket", name, "user", displayName(s.principal))
	h.redirectWithFlash(w, r, s, "/buckets", "Created bucket "+name+".")
	return nil
}

// confirmDeleteBucket serves the confirmation step of a delete.
func (h *Handler) confirmDeleteBucket(w http.ResponseWriter, r *http.Request, s *session) error {
	name := r.PathValue("name")
	if err := h.authorize(r, s, iam.DeleteBucket, name); err != nil {
		return err
	}
	h.render(w, r, http.StatusOK, "bucket_delete.html", s, "Delete bucket "+name, struct{ Name string }{name})
	return nil
}

// deleteBucket deletes a bucket, which must be empty (BucketNotEmpty is
// shown otherwise), and drops its policy from iam's cache as S3's
// DeleteBucket does.
func (h *Handler) deleteBucket(w http.ResponseWriter, r *http.Request, s *session) error {
	name := r.PathValue("name")
	if err := h.authorize(r, s, iam.DeleteBucket, name); err != nil {
		return err
	}
	if err := h.buckets.DeleteBucket(r.Context(), name); err != nil {
		if s3err.Is(err, s3err.BucketNotEmpty) {
			return pageError(http.StatusConflict, "Bucket %s is not empty: delete its objects first.", name)
		}
		return err
	}
	if err := h.iam.RefreshBucketPolicy(context.WithoutCancel(r.Context()), name); err != nil {
		return err
	}
	h.log.InfoContext(r.Context(), "console change", "op", "DeleteBucket", "bucket", name, "user", displayName(s.principal))
	h.redirectWithFlash(w, r, s, "/buckets", "Deleted bucket "+name+".")
	return nil
}
