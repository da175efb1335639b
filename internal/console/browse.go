package console

import (
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/objects"
)

// BrowserDeps are what the object browser needs besides iam.
type BrowserDeps struct {
	// Objects is the object service the browser lists, reads, writes and
	// deletes through; nil turns the object browser off (its pages
	// answer 404).
	Objects *objects.Service
	// S3Endpoint returns the S3 listener's base URL (scheme://host:port),
	// which share links point at unless Config.S3URL is set. It is called
	// per share, so the listener may open after the console is built.
	S3Endpoint func() string
	// Region is the S3 region share links are signed for.
	Region string
}

// listPageSize is how many entries (objects and folders together) one
// page of the object list shows: one bounded ListObjects call with the
// delimiter "/", however many keys the bucket holds.
const listPageSize = 100

// objectsPage browses the objects of a bucket: folders by the delimiter
// "/", pages by the listing's continuation marker, details, download,
// share links, delete and (with browser.js) upload. Every action is the
// S3 operation it stands for, authorized by iam for the signed-in
// principal as S3 would authorize it.
func objectsPage() page {
	return page{
		title:     "Objects",
		path:      "/objects",
		templates: []string{"objects_buckets.html", "objects.html", "object.html", "objects_delete.html"},
		routes: []pageRoute{
			{"GET /objects", func(h *Handler) sessionHandler { return h.objectBuckets }},
			{"GET /objects/{bucket}", func(h *Handler) sessionHandler { return h.browserOn(h.listObjects) }},
			{"GET /objects/{bucket}/object", func(h *Handler) sessionHandler { return h.browserOn(h.objectDetails) }},
			{"GET /objects/{bucket}/download", func(h *Handler) sessionHandler { return h.browserOn(h.download) }},
			{"POST /objects/{bucket}/delete", func(h *Handler) sessionHandler { return h.browserOn(h.deleteObjects) }},
			{"POST /objects/{bucket}/share", func(h *Handler) sessionHandler { return h.browserOn(h.share) }},
		},
		streams: []pageRoute{
			{"POST /objects/{bucket}/upload", func(h *Handler) sessionHandler { return h.browserOn(h.putObject) }},
			{"POST /objects/{bucket}/uploads", func(h *Handler) sessionHandler { return h.browserOn(h.createUpload) }},
			{"POST /objects/{bucket}/uploads/part", func(h *Handler) sessionHandler { return h.browserOn(h.uploadPart) }},
			{"POST /objects/{bucket}/uploads/complete", func(h *Handler) sessionHandler { return h.browserOn(h.completeUpload) }},
			{"POST /objects/{bucket}/uploads/abort", func(h *Handler) sessionHandler { return h.browserOn(h.abortUpload) }},
		},
	}
}

// browserOn answers 404 for every page of the object browser when the
// console has no object service.
func (h *Handler) browserOn(fn sessionHandler) sessionHandler {
	return func(w http.ResponseWriter, r *http.Request, s *session) error {
		if h.browser.Objects == nil {
			return pageError(http.StatusNotFound, "The object browser is not available.")
		}
		return fn(w, r, s)
	}
}

// objectBuckets lists the buckets to browse: those the Buckets page
// shows, by S3's ListBuckets rule.
func (h *Handler) objectBuckets(w http.ResponseWriter, r *http.Request, s *session) error {
	v, err := h.bucketList(r, s)
	if err != nil {
		return err
	}
	h.render(w, r, http.StatusOK, "objects_buckets.html", s, "Objects", v)
	return nil
}

// crumb is one step of the breadcrumbs: a folder and the prefix that
// lists it.
type crumb struct{ Name, Prefix string }

// folderRow is a common prefix of the listing.
type folderRow struct{ Name, Prefix string }

// objectRow is an object of the listing.
type objectRow struct {
	Name, Key, ETag string
	Size            int64
	Modified        time.Time
}

// listView is the object list page's data.
type listView struct {
	Bucket  string
	Prefix  string
	Folder  string // the prefix up to its last "/": the folder shown
	Crumbs  []crumb
	Folders []folderRow
	Objects []objectRow
	After   string // the marker this page starts after; "" for the first
	Next    string // the marker of the next page; "" on the last
	Search  bool   // the prefix does not end at a folder: a search
	// FirstURL is the list's first page.
	FirstURL string
}

// listObjects shows one page of the bucket's keys under a prefix, with
// "/" as the delimiter: ListObjectsV2 with prefix, delimiter, max-keys and
// a start-after marker, authorized as s3:ListBucket with those condition
// keys.
func (h *Handler) listObjects(w http.ResponseWriter, r *http.Request, s *session) error {
	bucket, q := r.PathValue("bucket"), r.URL.Query()
	prefix, after := q.Get("prefix"), q.Get("after")
	if err := h.authorizeObject(r, s, objectRequest{action: iam.ListBucket, bucket: bucket,
		list: &listParams{prefix: prefix, delimiter: "/", maxKeys: strconv.Itoa(listPageSize)}}); err != nil {
		return err
	}
	if after != "" && !strings.HasPrefix(after, prefix) {
		after = ""
	}
	res, err := h.browser.Objects.ListObjects(r.Context(), bucket, objects.ListInput{
		Prefix: prefix, Delimiter: "/", StartAfter: after, MaxKeys: listPageSize,
	})
	if err != nil {
		return err
	}
	v := listView{Bucket: bucket, Prefix: prefix, After: after, Folder: folderOf(prefix), Crumbs: crumbs(prefix), FirstURL: listURL(bucket, prefix)}
	v.Search = v.Folder != prefix
	if res.IsTruncated {
		v.Next = res.NextMarker
	}
	for _, p := range res.CommonPrefixes {
		v.Folders = append(v.Folders, folderRow{Name: strings.TrimPrefix(p, v.Folder), Prefix: p})
	}
	for _, o := range res.Objects {
		v.Objects = append(v.Objects, objectRow{Name: strings.TrimPrefix(o.Key, v.Folder), Key: o.Key, ETag: o.ETag, Size: o.Size, Modified: o.LastModified})
	}
	h.render(w, r, http.StatusOK, "objects.html", s, bucket+" · Objects", v)
	return nil
}

// Rows returns the table's rows, escaped in Go (see rows.go).
func (v listView) Rows() template.HTML { return objectRows(v.Bucket, v.Folders, v.Objects) }

// folderOf returns prefix up to and including its last "/".
func folderOf(prefix string) string {
	return prefix[:strings.LastIndex(prefix, "/")+1]
}

// crumbs returns the breadcrumbs of prefix: one per folder of it.
func crumbs(prefix string) []crumb {
	var out []crumb
	for i := 0; i < len(prefix); {
		j := strings.IndexByte(prefix[i:], '/')
		if j < 0 {
			break
		}
		out = append(out, crumb{Name: prefix[i : i+j], Prefix: prefix[:i+j+1]})
		i += j + 1
	}
	return out
}

// objectView is the object details page's data.
type objectView struct {
	Bucket, Key, Name string
	Folder            string
	Crumbs            []crumb
	Info              objects.ObjectInfo
	Meta              [][2]string // standard headers and x-amz-meta-*, in order
	Versioned         bool        // the object has a version ID to show
	ShareURL          string
	ShareExpires      time.Time
	ShareError        string
	Expires           string // the share form's values
	Unit              string
}

// objectDetails shows an object's properties: HeadObject, authorized as
// s3:GetObject (s3:GetObjectVersion for a version).
func (h *Handler) objectDetails(w http.ResponseWriter, r *http.Request, s *session) error {
	v, err := h.objectView(r, s)
	if err != nil {
		return err
	}
	h.render(w, r, http.StatusOK, "object.html", s, v.Name+" · Objects", v)
	return nil
}

// objectView authorizes and reads what the details page shows of the
// object the request names (key, versionId: the query of a GET, the form
// of a POST, from which the audit log records a share; never the query
// of a POST, which the record would miss).
func (h *Handler) objectView(r *http.Request, s *session) (objectView, error) {
	field := r.FormValue
	if r.Method == http.MethodPost {
		field = r.PostFormValue
	}
	bucket, key, vid := r.PathValue("bucket"), field("key"), field("versionId")
	if key == "" {
		return objectView{}, pageError(http.StatusBadRequest, "No object named.")
	}
	if err := h.authorizeObject(r, s, readRequest(bucket, key, vid)); err != nil {
		return objectView{}, err
	}
	o, err := h.browser.Objects.HeadObject(r.Context(), bucket, key, objects.GetOptions{VersionID: vid})
	if err != nil {
		return objectView{}, err
	}
	info := o.Info
	v := objectView{Bucket: bucket, Key: key, Folder: folderOf(key), Crumbs: crumbs(key), Name: key[strings.LastIndex(key, "/")+1:], Info: info,
		Versioned: info.VersionID != "" && info.VersionID != "null", Expires: "24", Unit: "h"}
	m := info.Meta
	for _, kv := range [][2]string{
		{"Content-Type", m.ContentType}, {"Content-Encoding", m.ContentEncoding}, {"Content-Disposition", m.ContentDisposition},
		{"Content-Language", m.ContentLanguage}, {"Cache-Control", m.CacheControl}, {"Expires", m.Expires},
	} {
		if kv[1] != "" {
			v.Meta = append(v.Meta, kv)
		}
	}
	names := make([]string, 0, len(m.User))
	for k := range m.User {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		v.Meta = append(v.Meta, [2]string{"x-amz-meta-" + k, m.User[k]})
	}
	return v, nil
}

// readRequest is the authorization question of reading bucket/key (its
// version vid, if set): s3:GetObject, or s3:GetObjectVersion.
func readRequest(bucket, key, vid string) objectRequest {
	q := objectRequest{action: iam.GetObject, bucket: bucket, key: key, versionID: vid}
	if vid != "" {
		q.action = iam.GetObjectVersion
	}
	return q
}

// listURL is the path of the object list of bucket at prefix.
func listURL(bucket, prefix string) string {
	u := "/objects/" + bucket
	if prefix != "" {
		u += "?" + url.Values{"prefix": {prefix}}.Encode()
	}
	return u
}
