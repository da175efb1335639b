package console

import (
	"context"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/sigv4"
)

// download streams an object to the browser as an attachment: GetObject,
// authorized as s3:GetObject (s3:GetObjectVersion for a version). The
// bytes go from the object service to the response as they are read;
// nothing is buffered whole. The response is never rendered by the
// browser on the console's origin: it is an attachment of type
// application/octet-stream, and its Content-Security-Policy sandboxes it
// besides.
func (h *Handler) download(w http.ResponseWriter, r *http.Request, s *session) error {
	bucket, q := r.PathValue("bucket"), r.URL.Query()
	key, vid := q.Get("key"), q.Get("versionId")
	if key == "" {
		return pageError(http.StatusBadRequest, "No object named.")
	}
	if err := h.authorizeObject(r, s, readRequest(bucket, key, vid)); err != nil {
		return err
	}
	o, err := h.browser.Objects.GetObject(r.Context(), bucket, key, objects.GetOptions{VersionID: vid})
	if err != nil {
		return err
	}
	defer o.Body.Close()
	hdr := w.Header()
	hdr.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	hdr.Set("Content-Type", "application/octet-stream")
	hdr.Set("Content-Length", strconv.FormatInt(o.Length, 10))
	hdr.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": baseName(key)}))
	hdr.Set("ETag", `"`+o.Info.ETag+`"`)
	hdr.Set("Last-Modified", o.Info.LastModified.UTC().Format(http.TimeFormat))
	if o.Info.VersionID != "" {
		hdr.Set("X-Amz-Version-Id", o.Info.VersionID)
	}
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil
	}
	if _, err := io.Copy(w, o.Body); err != nil {
		// The status is sent: the browser sees a short download.
		h.log.DebugContext(r.Context(), "console download cut short", "bucket", bucket, "key", key, "err", err)
	}
	return nil
}

// baseName is the last path segment of key, the download's file name.
func baseName(key string) string {
	n := key[strings.LastIndex(key, "/")+1:]
	if n == "" {
		return "download"
	}
	return n
}

// maxDeleteSelection is the most objects one delete takes: S3's
// DeleteObjects limit.
const maxDeleteSelection = 1000

// deleteView is the delete confirmation page's data.
type deleteView struct {
	Bucket, Prefix string
	Keys           []string
	BackURL        string // the list the delete was started from
}

// deleteObjects deletes the selected objects (form fields key, and prefix
// to return to): without confirm=1 it only shows the confirmation page;
// with it, each key is authorized as s3:DeleteObject and the allowed ones
// are deleted with one DeleteObjects, as S3's DeleteObjects does. The
// list page then says what was deleted and what was refused.
func (h *Handler) deleteObjects(w http.ResponseWriter, r *http.Request, s *session) error {
	bucket, prefix := r.PathValue("bucket"), r.PostFormValue("prefix")
	keys := r.PostForm["key"]
	if len(keys) == 0 {
		h.redirectWithFlash(w, r, s, listURL(bucket, prefix), "Select the objects to delete first.")
		return nil
	}
	if len(keys) > maxDeleteSelection {
		return pageError(http.StatusBadRequest, "At most %d objects can be deleted at once.", maxDeleteSelection)
	}
	if r.PostFormValue("confirm") != "1" {
		h.render(w, r, http.StatusOK, "objects_delete.html", s, "Delete objects", deleteView{Bucket: bucket, Prefix: prefix, Keys: keys, BackURL: listURL(bucket, prefix)})
		return nil
	}
	var refs []objects.ObjectRef
	var denied []string
	for _, k := range keys {
		if err := h.authorizeObject(r, s, objectRequest{action: iam.DeleteObject, bucket: bucket, key: k}); err != nil {
			denied = append(denied, k)
			continue
		}
		refs = append(refs, objects.ObjectRef{Key: k})
	}
	var failed []string
	deleted := 0
	if len(refs) > 0 {
		res, err := h.browser.Objects.DeleteObjects(r.Context(), bucket, refs)
		if err != nil {
			return err
		}
		for _, d := range res {
			if d.Err != nil {
				_, msg := h.describe(r, d.Err)
				failed = append(failed, d.Key+" ("+msg+")")
				continue
			}
			deleted++
		}
	}
	h.log.InfoContext(r.Context(), "console change", "op", "DeleteObjects", "bucket", bucket, "objects", deleted, "user", displayName(s.principal))
	msg := fmt.Sprintf("Deleted %d %s.", deleted, plural(deleted, "object", "objects"))
	if len(denied) > 0 {
		msg += " Your policies do not allow deleting " + strings.Join(denied, ", ") + "."
	}
	if len(failed) > 0 {
		msg += " Could not delete " + strings.Join(failed, ", ") + "."
	}
	h.redirectWithFlash(w, r, s, listURL(bucket, prefix), msg)
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// maxShareExpiry is the longest a share link lasts: SigV4's limit for a
// presigned URL.
const maxShareExpiry = 7 * 24 * time.Hour

// keyring is what share links need of iam besides the IAM interface:
// the signed-in user's access keys and their secrets. *iam.IAM has it; a
// console whose IAM does not offers no share links.
type keyring interface {
	Keys(ctx context.Context, user string) ([]iam.KeyInfo, error)
	SecretKey(ctx context.Context, accessKeyID string) (string, error)
}

// share makes a presigned GET URL of an object (form fields key,
// versionId, expires and unit: a whole number of minutes, hours or days
// up to 7 days) and shows it on the details page. The session must be
// allowed to read the object, and the URL is signed with an access key
// of the signed-in principal that S3 would let read it: root's own key,
// or one of the user's keys, chosen by signingKey. A user with no such
// key gets no link: the console never signs with credentials other than
// the user's own.
func (h *Handler) share(w http.ResponseWriter, r *http.Request, s *session) error {
	v, err := h.objectView(r, s)
	if err != nil {
		return err
	}
	v.Expires, v.Unit = r.PostFormValue("expires"), r.PostFormValue("unit")
	status := http.StatusOK
	d, err := parseExpiry(v.Expires, v.Unit)
	if err == nil {
		var u string
		u, err = h.presign(r, s, v, d)
		v.ShareURL, v.ShareExpires = u, h.clock().Add(d)
	}
	if err != nil {
		status, v.ShareError = h.describe(r, err)
		if status >= http.StatusInternalServerError {
			return err
		}
		s.act.failed(err)
	} else {
		h.log.InfoContext(r.Context(), "console share link", "bucket", v.Bucket, "key", v.Key, "expires_in", d, "user", displayName(s.principal))
	}
	h.render(w, r, status, "object.html", s, v.Name+" · Objects", v)
	return nil
}

// parseExpiry reads the share form's expiry.
func parseExpiry(n, unit string) (time.Duration, error) {
	u := map[string]time.Duration{"m": time.Minute, "h": time.Hour, "d": 24 * time.Hour}[unit]
	k, err := strconv.Atoi(n)
	if u == 0 || err != nil || k < 1 || time.Duration(k)*u > maxShareExpiry {
		return 0, pageError(http.StatusBadRequest, "The expiry must be a whole number of minutes, hours or days, at most 7 days.")
	}
	return time.Duration(k) * u, nil
}

// presign signs a GET of the object for d with the principal's key.
func (h *Handler) presign(r *http.Request, s *session, v objectView, d time.Duration) (string, error) {
	base, err := h.s3Base(r)
	if err != nil {
		return "", err
	}
	cred, err := h.signingKey(r, s, base.Scheme == "https", v, d)
	if err != nil {
		return "", err
	}
	u := *base
	u.Path = strings.TrimSuffix(u.Path, "/") + "/" + v.Bucket + "/" + v.Key
	if v.Versioned {
		u.RawQuery = url.Values{"versionId": {v.Info.VersionID}}.Encode()
	}
	return sigv4.Presign(http.MethodGet, u.String(), cred, h.browser.Region, h.clock(), d)
}

// s3Base is the base URL share links point at: Config.S3URL, else the
// S3 listener's address, whose unspecified host (0.0.0.0, ::) becomes
// the host the browser reached the console at.
func (h *Handler) s3Base(r *http.Request) (*url.URL, error) {
	raw := h.cfg.S3URL
	if raw == "" && h.browser.S3Endpoint != nil {
		raw = h.browser.S3Endpoint()
	}
	u, err := url.Parse(raw)
	if raw == "" || err != nil || u.Host == "" {
		return nil, pageError(http.StatusServiceUnavailable, "Share links need the S3 endpoint's URL (console.s3-url).")
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err == nil && (host == "" || host == "0.0.0.0" || host == "::") {
		rh := r.Host
		if h, _, err := net.SplitHostPort(r.Host); err == nil {
			rh = h
		}
		u.Host = net.JoinHostPort(strings.Trim(rh, "[]"), port)
	}
	return u, nil
}

// signingKey picks the credentials a share link is signed with: root's
// own for root; for a user, one of its access keys that is usable, lasts
// at least as long as the link, and that S3 would let read the object
// with a presigned request (its user's policies, the bucket's, the key's
// scope, as iam decides them). It prefers keys without an expiry, then
// the longest-lived.
func (h *Handler) signingKey(r *http.Request, s *session, tls bool, v objectView, d time.Duration) (sigv4.Credentials, error) {
	kr, ok := h.iam.(keyring)
	if !ok {
		return sigv4.Credentials{}, pageError(http.StatusNotImplemented, "Share links are not available.")
	}
	ctx := r.Context()
	p := s.principal
	if p.Root {
		secret, err := kr.SecretKey(ctx, p.AccessKeyID)
		return sigv4.Credentials{AccessKeyID: p.AccessKeyID, SecretKey: secret}, err
	}
	keys, err := kr.Keys(ctx, p.User)
	if err != nil {
		return sigv4.Credentials{}, err
	}
	until := h.clock().Add(d)
	var best *iam.KeyInfo
	for i := range keys {
		k := &keys[i]
		if k.Disabled || k.Expires != nil && k.Expires.Before(until) {
			continue
		}
		if best != nil && (best.Expires == nil || k.Expires != nil && !k.Expires.After(*best.Expires)) {
			continue // not longer-lived than the one found
		}
		q := readRequest(v.Bucket, v.Key, "")
		if v.Versioned {
			q = readRequest(v.Bucket, v.Key, v.Info.VersionID)
		}
		ks := &session{principal: iam.Principal{AccessKeyID: k.AccessKey, User: p.User, UserID: p.UserID}}
		if h.authorizeKey(r, ks, q, tls) == nil {
			best = k
		}
	}
	if best == nil {
		return sigv4.Credentials{}, pageError(http.StatusConflict,
			"Share links are signed with one of your access keys, and none of yours may read this object for that long. Ask an administrator for an access key.")
	}
	secret, err := kr.SecretKey(ctx, best.AccessKey)
	if err != nil {
		return sigv4.Credentials{}, pageError(http.StatusConflict, "Your access key %s cannot sign now.", best.AccessKey)
	}
	return sigv4.Credentials{AccessKeyID: best.AccessKey, SecretKey: secret}, nil
}

// authorizeKey asks whether a presigned GET signed by the key of s would
// be allowed: the request's conditions as S3 would see them from an
// unknown client (no source address, query-string SigV4).
func (h *Handler) authorizeKey(r *http.Request, s *session, q objectRequest, tls bool) error {
	c := iam.Conditions{SecureTransport: tls, AuthType: "REST-QUERY-STRING", SignatureVersion: "AWS4-HMAC-SHA256",
		ContentSHA256: sigv4.PayloadUnsigned.String()}
	c.ExistingObjectTags = h.objectTags(r, q)
	rq := iam.Request{Principal: s.principal, Action: q.action, Bucket: q.bucket, Key: q.key, Cond: c, ACL: h.aclGrants(r, s, q)}
	return h.iam.Authorize(r.Context(), rq)
}
