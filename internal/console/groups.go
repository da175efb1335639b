package console

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/coffer-s3/coffer/internal/iam"
)

// groupsPage lists, creates and deletes groups, changes their members and
// attaches and detaches their policies, each under the admin action the
// admin API needs for it.
func groupsPage() page {
	return page{
		title:     "Groups",
		path:      "/groups",
		need:      "ListGroups",
		templates: []string{"groups.html", "group.html", "confirm.html"},
		routes: []pageRoute{
			{"GET /groups", func(h *Handler) sessionHandler { return h.listGroups }},
			{"POST /groups", func(h *Handler) sessionHandler { return h.createGroup }},
			{"GET /groups/{name}", func(h *Handler) sessionHandler { return h.showGroup }},
			{"POST /groups/{name}/members", func(h *Handler) sessionHandler { return h.updateMembers }},
			{"POST /groups/{name}/attach", func(h *Handler) sessionHandler { return h.attachGroupPolicy(true) }},
			{"POST /groups/{name}/detach", func(h *Handler) sessionHandler { return h.attachGroupPolicy(false) }},
			{"GET /groups/{name}/delete", func(h *Handler) sessionHandler {
				return h.confirmDelete("DeleteGroup", "group", groupPath,
					"Its members lose the policies attached to it at once. The users themselves stay.")
			}},
			{"POST /groups/{name}/delete", func(h *Handler) sessionHandler { return h.deleteGroup }},
		},
	}
}

type groupsView struct {
	Groups  []iam.GroupInfo
	Can     perms
	NewName string
	Error   string
}

func (h *Handler) listGroups(w http.ResponseWriter, r *http.Request, s *session) error {
	return h.renderGroups(w, r, s, http.StatusOK, groupsView{})
}

func (h *Handler) renderGroups(w http.ResponseWriter, r *http.Request, s *session, status int, v groupsView) error {
	d, err := h.directoryFor(r, s, "ListGroups")
	if err != nil {
		return err
	}
	if v.Groups, err = d.Groups(r.Context()); err != nil {
		return err
	}
	v.Can = h.perms(r, s, "CreateGroup", "GetGroup")
	h.render(w, r, status, "groups.html", s, "Groups", v)
	return nil
}

func (h *Handler) createGroup(w http.ResponseWriter, r *http.Request, s *session) error {
	d, err := h.directoryFor(r, s, "CreateGroup")
	if err != nil {
		return err
	}
	name := strings.TrimSpace(r.PostFormValue("name"))
	if err := d.CreateGroup(r.Context(), name); err != nil {
		msg, ok := formError(err)
		if !ok {
			return err
		}
		return h.renderGroups(w, r, s, http.StatusBadRequest, groupsView{NewName: name, Error: msg})
	}
	h.changed(r, s, "CreateGroup", name)
	h.redirectWithFlash(w, r, s, groupPath(name), "Created group "+name+".")
	return nil
}

func groupPath(name string) string { return "/groups/" + url.PathEscape(name) }

type groupView struct {
	Group    iam.GroupInfo
	Users    []string // users who are not members, for the add form; nil without admin:ListUsers
	Policies []string // policies not attached, for the attach form; nil without admin:ListPolicies
	Can      perms
}

func (h *Handler) showGroup(w http.ResponseWriter, r *http.Request, s *session) error {
	d, err := h.directoryFor(r, s, "GetGroup")
	if err != nil {
		return err
	}
	ctx := r.Context()
	name := r.PathValue("name")
	v := groupView{Can: h.perms(r, s, "UpdateGroupMembers", "AttachPolicy", "DetachPolicy", "DeleteGroup", "ListUsers", "ListPolicies", "GetUser", "GetPolicy")}
	if v.Group, err = d.Group(ctx, name); err != nil {
		return notFoundPage(err)
	}
	if v.Can["ListUsers"] {
		us, err := d.Users(ctx)
		if err != nil {
			return err
		}
		for _, u := range us {
			if !slices.Contains(v.Group.Members, u.Name) {
				v.Users = append(v.Users, u.Name)
			}
		}
	}
	if v.Can["ListPolicies"] {
		ps, err := d.Policies(ctx)
		if err != nil {
			return err
		}
		for _, p := range ps {
			if !slices.Contains(v.Group.Policies, p.Name) {
				v.Policies = append(v.Policies, p.Name)
			}
		}
	}
	h.render(w, r, http.StatusOK, "group.html", s, "Group "+name, v)
	return nil
}

// updateMembers adds the posted user "add" to the group, or removes
// "remove".
func (h *Handler) updateMembers(w http.ResponseWriter, r *http.Request, s *session) error {
	d, err := h.directoryFor(r, s, "UpdateGroupMembers")
	if err != nil {
		return err
	}
	name := r.PathValue("name")
	var add, remove []string
	if u := strings.TrimSpace(r.PostFormValue("add")); u != "" {
		add = []string{u}
	}
	if u := strings.TrimSpace(r.PostFormValue("remove")); u != "" {
		remove = []string{u}
	}
	if add == nil && remove == nil {
		return pageError(http.StatusBadRequest, "Name a user to add or remove.")
	}
	if err := d.UpdateGroupMembers(r.Context(), name, add, remove); err != nil {
		if msg, ok := formError(err); ok {
			return pageError(http.StatusBadRequest, "%s", capitalize(msg)+".")
		}
		return err
	}
	h.changed(r, s, "UpdateGroupMembers", name+" +"+strings.Join(add, ",")+" -"+strings.Join(remove, ","))
	msg := "Added " + strings.Join(add, "") + " to " + name + "."
	if remove != nil {
		msg = "Removed " + strings.Join(remove, "") + " from " + name + "."
	}
	h.redirectWithFlash(w, r, s, groupPath(name), msg)
	return nil
}

func (h *Handler) attachGroupPolicy(attach bool) sessionHandler {
	return func(w http.ResponseWriter, r *http.Request, s *session) error {
		name := r.PathValue("name")
		return h.attachPolicy(w, r, s, attach, r.PostFormValue("policy"), iam.Target{Group: name}, groupPath(name))
	}
}

func (h *Handler) deleteGroup(w http.ResponseWriter, r *http.Request, s *session) error {
	d, err := h.directoryFor(r, s, "DeleteGroup")
	if err != nil {
		return err
	}
	name := r.PathValue("name")
	if err := d.DeleteGroup(r.Context(), name); err != nil {
		return notFoundPage(err)
	}
	h.changed(r, s, "DeleteGroup", name)
	h.redirectWithFlash(w, r, s, "/groups", "Deleted group "+name+".")
	return nil
}
