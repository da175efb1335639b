package console

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/coffer-s3/coffer/internal/iam"
)

// policiesPage lists the named policies, built-in ones included, and
// edits them: create, update and delete, with the parser's error shown
// beside the document (which statement, and what is wrong), and attach
// one to a user or group. Each action needs the admin action the admin
// API needs for it (admin:CreatePolicy to create or update, …).
func policiesPage() page {
	return page{
		title:     "Policies",
		path:      "/policies",
		need:      "ListPolicies",
		templates: []string{"policies.html", "policy.html", "confirm.html"},
		routes: []pageRoute{
			{"GET /policies", func(h *Handler) sessionHandler { return h.listPolicies }},
			{"POST /policies", func(h *Handler) sessionHandler { return h.createPolicy }},
			{"GET /policies/{name}", func(h *Handler) sessionHandler { return h.showPolicy }},
			{"POST /policies/{name}", func(h *Handler) sessionHandler { return h.updatePolicy }},
			{"POST /policies/{name}/attach", func(h *Handler) sessionHandler { return h.attachNamedPolicy }},
			{"GET /policies/{name}/delete", func(h *Handler) sessionHandler {
				return h.confirmDelete("DeletePolicy", "policy", policyPath,
					"It must be detached from every user and group first. This cannot be undone.")
			}},
			{"POST /policies/{name}/delete", func(h *Handler) sessionHandler { return h.deletePolicy }},
		},
	}
}

// policyTemplate is the document the create form starts with.
const policyTemplate = `{
  "Version": "2012-10-17",
  "Statement": [
    {
      "Sid": "ReadPhotos",
      "Effect": "Allow",
      "Action": ["s3:GetObject", "s3:ListBucket"],
      "Resource": ["arn:aws:s3:::photos", "arn:aws:s3:::photos/*"]
    }
  ]
}`

type policiesView struct {
	Policies []iam.PolicyInfo
	Can      perms
	NewName  string
	Document string
	Error    policyError
}

func (h *Handler) listPolicies(w http.ResponseWriter, r *http.Request, s *session) error {
	return h.renderPolicies(w, r, s, http.StatusOK, policiesView{Document: policyTemplate})
}

func (h *Handler) renderPolicies(w http.ResponseWriter, r *http.Request, s *session, status int, v policiesView) error {
	d, err := h.directoryFor(r, s, "ListPolicies")
	if err != nil {
		return err
	}
	if v.Policies, err = d.Policies(r.Context()); err != nil {
		return err
	}
	v.Can = h.perms(r, s, "CreatePolicy", "GetPolicy")
	h.render(w, r, status, "policies.html", s, "Policies", v)
	return nil
}

func policyPath(name string) string { return "/policies/" + url.PathEscape(name) }

func (h *Handler) createPolicy(w http.ResponseWriter, r *http.Request, s *session) error {
	d, err := h.directoryFor(r, s, "CreatePolicy")
	if err != nil {
		return err
	}
	ctx := r.Context()
	name := strings.TrimSpace(r.PostFormValue("name"))
	doc := r.PostFormValue("document")
	err = nil
	if _, perr := d.Policy(ctx, name); perr == nil {
		err = pageError(http.StatusConflict, "A policy named %s exists; edit it on its page.", name)
	} else {
		err = d.PutPolicy(ctx, name, []byte(doc))
	}
	if err != nil {
		pe, ok := policyErrorOf(err)
		if pg, isPage := err.(*errorPage); isPage {
			pe, ok = policyError{Msg: pg.msg}, true
		}
		if !ok {
			return err
		}
		return h.renderPolicies(w, r, s, http.StatusBadRequest, policiesView{NewName: name, Document: doc, Error: pe})
	}
	h.changed(r, s, "PutPolicy", name)
	h.redirectWithFlash(w, r, s, policyPath(name), "Created policy "+name+".")
	return nil
}

type policyView struct {
	Policy   iam.PolicyInfo
	Document string // as edited, or the stored one indented
	Error    policyError
	Users    []string // for the attach form; nil without admin:ListUsers
	Groups   []string // likewise, without admin:ListGroups
	Can      perms
}

func (h *Handler) showPolicy(w http.ResponseWriter, r *http.Request, s *session) error {
	return h.renderPolicy(w, r, s, http.StatusOK, policyView{})
}

func (h *Handler) renderPolicy(w http.ResponseWriter, r *http.Request, s *session, status int, v policyView) error {
	d, err := h.directoryFor(r, s, "GetPolicy")
	if err != nil {
		return err
	}
	ctx := r.Context()
	name := r.PathValue("name")
	if v.Policy, err = d.Policy(ctx, name); err != nil {
		return notFoundPage(err)
	}
	if v.Document == "" {
		var b bytes.Buffer
		if json.Indent(&b, v.Policy.Document, "", "  ") == nil {
			v.Document = b.String()
		} else {
			v.Document = string(v.Policy.Document)
		}
	}
	v.Can = h.perms(r, s, "CreatePolicy", "DeletePolicy", "AttachPolicy", "ListUsers", "ListGroups", "GetUser", "GetGroup")
	if v.Can["ListUsers"] {
		us, err := d.Users(ctx)
		if err != nil {
			return err
		}
		v.Users = sortedNames(us, func(u iam.UserInfo) string { return u.Name })
	}
	if v.Can["ListGroups"] {
		gs, err := d.Groups(ctx)
		if err != nil {
			return err
		}
		v.Groups = sortedNames(gs, func(g iam.GroupInfo) string { return g.Name })
	}
	h.render(w, r, status, "policy.html", s, "Policy "+name, v)
	return nil
}

// updatePolicy replaces a named policy's document; a document that does
// not parse is shown again with the error beside it.
func (h *Handler) updatePolicy(w http.ResponseWriter, r *http.Request, s *session) error {
	d, err := h.directoryFor(r, s, "CreatePolicy")
	if err != nil {
		return err
	}
	name := r.PathValue("name")
	doc := r.PostFormValue("document")
	if err := d.PutPolicy(r.Context(), name, []byte(doc)); err != nil {
		pe, ok := policyErrorOf(err)
		if !ok {
			return err
		}
		return h.renderPolicy(w, r, s, http.StatusBadRequest, policyView{Document: doc, Error: pe})
	}
	h.changed(r, s, "PutPolicy", name)
	h.redirectWithFlash(w, r, s, policyPath(name), "Saved policy "+name+".")
	return nil
}

// attachNamedPolicy attaches the policy to the posted "user" or "group".
func (h *Handler) attachNamedPolicy(w http.ResponseWriter, r *http.Request, s *session) error {
	name := r.PathValue("name")
	t := iam.Target{User: r.PostFormValue("user"), Group: r.PostFormValue("group")}
	return h.attachPolicy(w, r, s, true, name, t, policyPath(name))
}

func (h *Handler) deletePolicy(w http.ResponseWriter, r *http.Request, s *session) error {
	d, err := h.directoryFor(r, s, "DeletePolicy")
	if err != nil {
		return err
	}
	name := r.PathValue("name")
	if err := d.DeletePolicy(r.Context(), name); err != nil {
		if msg, ok := formError(err); ok {
			return pageError(http.StatusConflict, "%s", capitalize(msg)+".")
		}
		return err
	}
	h.changed(r, s, "DeletePolicy", name)
	h.redirectWithFlash(w, r, s, "/policies", "Deleted policy "+name+".")
	return nil
}
