package console

import (
	"cmp"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/coffer-s3/coffer/internal/iam"
)

// usersPage lists, creates, disables, enables and deletes users, sets
// their console passwords, attaches and detaches their policies and
// manages their access keys. Each page and action needs the admin action
// the admin API's endpoint needs (admin:ListUsers to see the list,
// admin:CreateUser to create, …), checked by iam for the signed-in
// principal.
func usersPage() page {
	return page{
		title:     "Users",
		path:      "/users",
		need:      "ListUsers",
		templates: []string{"users.html", "user.html", "new_key.html", "confirm.html"},
		routes: []pageRoute{
			{"GET /users", func(h *Handler) sessionHandler { return h.listUsers }},
			{"POST /users", func(h *Handler) sessionHandler { return h.createUser }},
			{"GET /users/{name}", func(h *Handler) sessionHandler { return h.showUser }},
			{"POST /users/{name}/disable", func(h *Handler) sessionHandler { return h.setUserDisabled(true) }},
			{"POST /users/{name}/enable", func(h *Handler) sessionHandler { return h.setUserDisabled(false) }},
			{"GET /users/{name}/delete", func(h *Handler) sessionHandler {
				return h.confirmDelete("DeleteUser", "user", userPath,
					"Its access keys stop working at once and are deleted, with its group memberships and console sessions. This cannot be undone.")
			}},
			{"POST /users/{name}/delete", func(h *Handler) sessionHandler { return h.deleteUser }},
			{"POST /users/{name}/password", func(h *Handler) sessionHandler { return h.setUserPassword }},
			{"POST /users/{name}/attach", func(h *Handler) sessionHandler { return h.attachUserPolicy(true) }},
			{"POST /users/{name}/detach", func(h *Handler) sessionHandler { return h.attachUserPolicy(false) }},
			{"POST /users/{name}/keys", func(h *Handler) sessionHandler { return h.createKey }},
			{"POST /keys/{key}/rotate", func(h *Handler) sessionHandler { return h.rotateKey }},
			{"POST /keys/{key}/disable", func(h *Handler) sessionHandler { return h.setKeyDisabled(true) }},
			{"POST /keys/{key}/enable", func(h *Handler) sessionHandler { return h.setKeyDisabled(false) }},
			{"GET /keys/{key}/delete", func(h *Handler) sessionHandler { return h.confirmDeleteKey }},
			{"POST /keys/{key}/delete", func(h *Handler) sessionHandler { return h.deleteKey }},
		},
	}
}

// usersView is the user list's data.
type usersView struct {
	Users   []iam.UserInfo
	Can     perms
	NewName string // the create form's name, after a failure
	Error   string // why the create failed
}

func (h *Handler) listUsers(w http.ResponseWriter, r *http.Request, s *session) error {
	return h.renderUsers(w, r, s, http.StatusOK, usersView{})
}

func (h *Handler) renderUsers(w http.ResponseWriter, r *http.Request, s *session, status int, v usersView) error {
	d, err := h.directoryFor(r, s, "ListUsers")
	if err != nil {
		return err
	}
	if v.Users, err = d.Users(r.Context()); err != nil {
		return err
	}
	v.Can = h.perms(r, s, "CreateUser", "GetUser")
	h.render(w, r, status, "users.html", s, "Users", v)
	return nil
}

// newKeyView is the one page that shows a secret key.
type newKeyView struct {
	Heading string
	Key     iam.NewKey
	Old     string // the key a rotation replaced (now disabled)
}

func (h *Handler) createUser(w http.ResponseWriter, r *http.Request, s *session) error {
	d, err := h.directoryFor(r, s, "CreateUser")
	if err != nil {
		return err
	}
	name := strings.TrimSpace(r.PostFormValue("name"))
	nk, err := d.CreateUser(r.Context(), name)
	if err != nil {
		msg, ok := formError(err)
		if !ok {
			return err
		}
		return h.renderUsers(w, r, s, http.StatusBadRequest, usersView{NewName: name, Error: msg})
	}
	h.changed(r, s, "CreateUser", name)
	s.act.note("new key " + nk.AccessKey)
	h.render(w, r, http.StatusOK, "new_key.html", s, "User "+name+" created", newKeyView{Heading: "Created user " + name, Key: nk})
	return nil
}

// userView is a user's page.
type userView struct {
	User      iam.UserInfo
	Keys      []keyRow
	Policies  []string // every policy, for the attach form; nil without admin:ListPolicies
	Can       perms
	KeyForm   keyForm
	KeyError  policyError
	PassError string
}

// keyRow is one access key in a user's list.
type keyRow struct {
	iam.KeyInfo
	Expired bool
}

// keyForm is the create-key form's values, kept after a failure.
type keyForm struct {
	Description, Expires, Policy string
}

func (h *Handler) showUser(w http.ResponseWriter, r *http.Request, s *session) error {
	return h.renderUser(w, r, s, http.StatusOK, userView{})
}

func (h *Handler) renderUser(w http.ResponseWriter, r *http.Request, s *session, status int, v userView) error {
	d, err := h.directoryFor(r, s, "GetUser")
	if err != nil {
		return err
	}
	ctx := r.Context()
	name := r.PathValue("name")
	if v.User, err = d.User(ctx, name); err != nil {
		return notFoundPage(err)
	}
	v.Can = h.perms(r, s, "DisableUser", "EnableUser", "DeleteUser", "SetUserPassword", "ListAccessKeys", "CreateAccessKey",
		"UpdateAccessKey", "DeleteAccessKey", "AttachPolicy", "DetachPolicy", "ListPolicies", "GetGroup", "GetPolicy")
	if v.Can["ListAccessKeys"] {
		keys, err := d.Keys(ctx, name)
		if err != nil {
			return err
		}
		now := h.clock()
		for _, k := range keys {
			v.Keys = append(v.Keys, keyRow{KeyInfo: k, Expired: k.Expires != nil && !now.Before(*k.Expires)})
		}
	}
	if v.Can["ListPolicies"] {
		ps, err := d.Policies(ctx)
		if err != nil {
			return err
		}
		for _, p := range ps {
			if !slices.Contains(v.User.Policies, p.Name) {
				v.Policies = append(v.Policies, p.Name)
			}
		}
	}
	h.render(w, r, status, "user.html", s, "User "+name, v)
	return nil
}

// notFoundPage turns iam's ErrNotFound into a 404 page.
func notFoundPage(err error) error {
	if msg, ok := formError(err); ok {
		return pageError(http.StatusNotFound, "There is no %s.", msg)
	}
	return err
}

func userPath(name string) string { return "/users/" + url.PathEscape(name) }

func (h *Handler) setUserDisabled(disabled bool) sessionHandler {
	op, verb := "EnableUser", "Enabled"
	if disabled {
		op, verb = "DisableUser", "Disabled"
	}
	return func(w http.ResponseWriter, r *http.Request, s *session) error {
		d, err := h.directoryFor(r, s, op)
		if err != nil {
			return err
		}
		name := r.PathValue("name")
		if err := d.SetUserDisabled(r.Context(), name, disabled); err != nil {
			return notFoundPage(err)
		}
		h.changed(r, s, op, name)
		h.redirectWithFlash(w, r, s, userPath(name), verb+" user "+name+".")
		return nil
	}
}

func (h *Handler) deleteUser(w http.ResponseWriter, r *http.Request, s *session) error {
	d, err := h.directoryFor(r, s, "DeleteUser")
	if err != nil {
		return err
	}
	name := r.PathValue("name")
	if err := d.DeleteUser(r.Context(), name); err != nil {
		return notFoundPage(err)
	}
	h.changed(r, s, "DeleteUser", name)
	h.redirectWithFlash(w, r, s, "/users", "Deleted user "+name+".")
	return nil
}

// setUserPassword sets a user's console password. The password is
// neither logged nor shown again.
func (h *Handler) setUserPassword(w http.ResponseWriter, r *http.Request, s *session) error {
	d, err := h.directoryFor(r, s, "SetUserPassword")
	if err != nil {
		return err
	}
	name := r.PathValue("name")
	if err := d.SetPassword(r.Context(), name, r.PostFormValue("password")); err != nil {
		msg, ok := formError(err)
		if !ok {
			return err
		}
		return h.renderUser(w, r, s, http.StatusBadRequest, userView{PassError: msg})
	}
	h.changed(r, s, "SetUserPassword", name)
	h.redirectWithFlash(w, r, s, userPath(name), "Set the console password of "+name+".")
	return nil
}

// attachUserPolicy attaches or detaches the posted policy to the user.
func (h *Handler) attachUserPolicy(attach bool) sessionHandler {
	return func(w http.ResponseWriter, r *http.Request, s *session) error {
		name := r.PathValue("name")
		return h.attachPolicy(w, r, s, attach, r.PostFormValue("policy"), iam.Target{User: name}, userPath(name))
	}
}

// attachPolicy attaches or detaches a policy to a user or group and
// sends the browser back to back.
func (h *Handler) attachPolicy(w http.ResponseWriter, r *http.Request, s *session, attach bool, pol string, t iam.Target, back string) error {
	op, verb, call := "DetachPolicy", "Detached", Directory.DetachPolicy
	if attach {
		op, verb, call = "AttachPolicy", "Attached", Directory.AttachPolicy
	}
	d, err := h.directoryFor(r, s, op)
	if err != nil {
		return err
	}
	if err := call(d, r.Context(), pol, t); err != nil {
		msg, ok := formError(err)
		if !ok {
			return err
		}
		return pageError(http.StatusBadRequest, "%s", capitalize(msg)+".")
	}
	h.changed(r, s, op, pol+" "+t.String())
	h.redirectWithFlash(w, r, s, back, verb+" policy "+pol+".")
	return nil
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// keyOptions parses the create-key form.
func keyOptions(f keyForm, now time.Time) (iam.KeyOptions, error) {
	opt := iam.KeyOptions{Description: f.Description, Policy: []byte(strings.TrimSpace(f.Policy))}
	if e := strings.TrimSpace(f.Expires); e != "" {
		days, err := strconv.Atoi(e)
		if err != nil || days < 1 || days > 36500 {
			return opt, pageError(http.StatusBadRequest, "Expires must be a number of days from 1 to 36500.")
		}
		opt.Expires = now.Add(time.Duration(days) * 24 * time.Hour)
	}
	return opt, nil
}

// createKey makes an access key for the user, optionally scoped by a
// policy, and shows its secret once.
func (h *Handler) createKey(w http.ResponseWriter, r *http.Request, s *session) error {
	d, err := h.directoryFor(r, s, "CreateAccessKey")
	if err != nil {
		return err
	}
	name := r.PathValue("name")
	f := keyForm{Description: r.PostFormValue("description"), Expires: r.PostFormValue("expires"), Policy: r.PostFormValue("policy")}
	opt, err := keyOptions(f, h.clock())
	var nk iam.NewKey
	if err == nil {
		nk, err = d.CreateKey(r.Context(), name, opt)
	}
	if err != nil {
		pe, ok := policyErrorOf(err)
		if pg, isPage := err.(*errorPage); isPage {
			pe, ok = policyError{Msg: pg.msg}, true
		}
		if !ok {
			return err
		}
		return h.renderUser(w, r, s, http.StatusBadRequest, userView{KeyForm: f, KeyError: pe})
	}
	h.changed(r, s, "CreateAccessKey", name+" "+nk.AccessKey)
	s.act.note("new key " + nk.AccessKey)
	h.render(w, r, http.StatusOK, "new_key.html", s, "New access key", newKeyView{Heading: "New access key for " + name, Key: nk})
	return nil
}

// rotateKey makes a new key with the old one's user, scope, description
// and expiry, and disables the old one: clients move to the new key, and
// the old one can be enabled again to roll back, or deleted.
func (h *Handler) rotateKey(w http.ResponseWriter, r *http.Request, s *session) error {
	d, err := h.directoryFor(r, s, "CreateAccessKey")
	if err != nil {
		return err
	}
	if err := h.mayAdmin(r, s, "UpdateAccessKey"); err != nil {
		return err
	}
	ctx := r.Context()
	old, err := d.Key(ctx, r.PathValue("key"))
	if err != nil {
		return notFoundPage(err)
	}
	opt := iam.KeyOptions{Policy: old.Policy, Description: old.Description}
	if old.Expires != nil {
		opt.Expires = *old.Expires
	}
	nk, err := d.CreateKey(ctx, old.User, opt)
	if err != nil {
		if msg, ok := formError(err); ok {
			return pageError(http.StatusBadRequest, "%s", capitalize(msg)+".")
		}
		return err
	}
	if err := d.SetKeyDisabled(ctx, old.AccessKey, true); err != nil {
		return err
	}
	h.changed(r, s, "RotateAccessKey", old.User+" "+old.AccessKey+" "+nk.AccessKey)
	s.act.note("new key " + nk.AccessKey)
	h.render(w, r, http.StatusOK, "new_key.html", s, "Rotated access key", newKeyView{Heading: "New access key for " + old.User, Key: nk, Old: old.AccessKey})
	return nil
}

func (h *Handler) setKeyDisabled(disabled bool) sessionHandler {
	verb := "Enabled"
	if disabled {
		verb = "Disabled"
	}
	return func(w http.ResponseWriter, r *http.Request, s *session) error {
		d, err := h.directoryFor(r, s, "UpdateAccessKey")
		if err != nil {
			return err
		}
		ctx := r.Context()
		k, err := d.Key(ctx, r.PathValue("key"))
		if err != nil {
			return notFoundPage(err)
		}
		if err := d.SetKeyDisabled(ctx, k.AccessKey, disabled); err != nil {
			return notFoundPage(err)
		}
		h.changed(r, s, verb[:len(verb)-1]+"AccessKey", k.AccessKey)
		h.redirectWithFlash(w, r, s, userPath(k.User), verb+" access key "+k.AccessKey+".")
		return nil
	}
}

func (h *Handler) confirmDeleteKey(w http.ResponseWriter, r *http.Request, s *session) error {
	d, err := h.directoryFor(r, s, "DeleteAccessKey")
	if err != nil {
		return err
	}
	k, err := d.Key(r.Context(), r.PathValue("key"))
	if err != nil {
		return notFoundPage(err)
	}
	h.render(w, r, http.StatusOK, "confirm.html", s, "Delete access key "+k.AccessKey, confirmView{
		Heading: "Delete access key " + k.AccessKey + " of " + k.User + "?",
		Text:    "Requests signed with it are refused at once. This cannot be undone; disabling it can.",
		Action:  "/keys/" + url.PathEscape(k.AccessKey) + "/delete", Button: "Delete " + k.AccessKey, Cancel: userPath(k.User),
	})
	return nil
}

func (h *Handler) deleteKey(w http.ResponseWriter, r *http.Request, s *session) error {
	d, err := h.directoryFor(r, s, "DeleteAccessKey")
	if err != nil {
		return err
	}
	ctx := r.Context()
	k, err := d.Key(ctx, r.PathValue("key"))
	if err != nil {
		return notFoundPage(err)
	}
	if err := d.DeleteKey(ctx, k.AccessKey); err != nil {
		return notFoundPage(err)
	}
	h.changed(r, s, "DeleteAccessKey", k.User+" "+k.AccessKey)
	h.redirectWithFlash(w, r, s, userPath(k.User), "Deleted access key "+k.AccessKey+".")
	return nil
}

// sortedNames returns the names of xs, sorted.
func sortedNames[T any](xs []T, name func(T) string) []string {
	out := make([]string, 0, len(xs))
	for _, x := range xs {
		out = append(out, name(x))
	}
	slices.SortFunc(out, cmp.Compare)
	return out
}
