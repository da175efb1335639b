package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/policy"
)

// Directory is the management API of iam that the Users, Groups,
// Policies and Simulator pages call: the same methods the admin API
// calls. It is an optional capability of Deps.IAM, found by a type
// assertion (*iam.IAM has it); without it those pages answer 404.
type Directory interface {
	Users(ctx context.Context) ([]iam.UserInfo, error)
	User(ctx context.Context, name string) (iam.UserInfo, error)
	CreateUser(ctx context.Context, name string) (iam.NewKey, error)
	DeleteUser(ctx context.Context, name string) error
	SetUserDisabled(ctx context.Context, name string, disabled bool) error
	SetPassword(ctx context.Context, name, password string) error

	Keys(ctx context.Context, user string) ([]iam.KeyInfo, error)
	Key(ctx context.Context, accessKey string) (iam.KeyInfo, error)
	CreateKey(ctx context.Context, user string, opt iam.KeyOptions) (iam.NewKey, error)
	DeleteKey(ctx context.Context, accessKey string) error
	SetKeyDisabled(ctx context.Context, accessKey string, disabled bool) error

	Groups(ctx context.Context) ([]iam.GroupInfo, error)
	Group(ctx context.Context, name string) (iam.GroupInfo, error)
	CreateGroup(ctx context.Context, name string) error
	DeleteGroup(ctx context.Context, name string) error
	UpdateGroupMembers(ctx context.Context, group string, add, remove []string) error

	Policies(ctx context.Context) ([]iam.PolicyInfo, error)
	Policy(ctx context.Context, name string) (iam.PolicyInfo, error)
	PutPolicy(ctx context.Context, name string, doc []byte) error
	DeletePolicy(ctx context.Context, name string) error
	AttachPolicy(ctx context.Context, name string, t iam.Target) error
	DetachPolicy(ctx context.Context, name string, t iam.Target) error

	Simulate(ctx context.Context, in iam.SimulateInput) (iam.Simulation, error)
}

var _ Directory = (*iam.IAM)(nil)

// directory returns the Directory of the console's IAM, or a 404 page
// error if it has none.
func (h *Handler) directory() (Directory, error) {
	d, ok := h.iam.(Directory)
	if !ok {
		return nil, pageError(http.StatusNotFound, "User management is not available on this server.")
	}
	return d, nil
}

// directoryFor returns the Directory for admin action a ("CreateUser")
// of s: the prologue of every Users, Groups, Policies and Simulator
// handler. Without a Directory it returns the 404 page error, and
// AccessDenied if s may not perform a (see mayAdmin).
func (h *Handler) directoryFor(r *http.Request, s *session, a string) (Directory, error) {
	d, err := h.directory()
	if err != nil {
		return nil, err
	}
	if err := h.mayAdmin(r, s, a); err != nil {
		return nil, err
	}
	return d, nil
}

// perms says which admin actions the signed-in principal may perform,
// by action name without "admin:" (CreateUser, …), for templates to show
// only the forms and buttons that would work. Every change is authorized
// again when it is posted.
type perms map[string]bool

// perms asks iam about each of actions (admin action names without the
// prefix) for s.
func (h *Handler) perms(r *http.Request, s *session, actions ...string) perms {
	p := perms{}
	for _, a := range actions {
		p[a] = h.may(r, s, a)
	}
	return p
}

// may reports whether s may perform admin action a ("CreateUser"): a
// probe, for what a page shows (see probe).
func (h *Handler) may(r *http.Request, s *session, a string) bool {
	return h.probe(r, s, iam.Action("admin:"+a), "") == nil
}

// mayAdmin returns nil if s may perform admin action a, else AccessDenied
// for the error page: the check the admin API makes for its endpoint.
func (h *Handler) mayAdmin(r *http.Request, s *session, a string) error {
	return h.authorize(r, s, iam.Action("admin:"+a), "")
}

// formError returns the message to show inline for a refused change: an
// iam validation error's own text (without the sentinel's), or "" with
// ok false for an error that is not the user's to fix.
func formError(err error) (msg string, ok bool) {
	for _, sentinel := range []error{iam.ErrPolicy, iam.ErrInvalid, iam.ErrExists, iam.ErrNotFound, iam.ErrInUse} {
		if errors.Is(err, sentinel) {
			s := err.Error()
			if t, ok := strings.CutPrefix(s, sentinel.Error()+": "); ok {
				s = t
			}
			return strings.TrimPrefix(s, "iam: "), true
		}
	}
	return "", false
}

// policyError is a policy document's error for the editor: the message
// and, when it is in one statement, which.
type policyError struct {
	Msg       string
	Statement int
	Sid       string
}

// policyErrorOf returns err's policy error, or ok false.
func policyErrorOf(err error) (policyError, bool) {
	if pe, ok := errors.AsType[*policy.Error](err); ok {
		return policyError{Msg: pe.Msg, Statement: pe.Statement, Sid: pe.Sid}, true
	}
	if msg, ok := formError(err); ok {
		return policyError{Msg: msg}, true
	}
	return policyError{}, false
}

// Where returns "statement N (\"SID\")" for the template, or "".
func (e policyError) Where() string {
	switch {
	case e.Statement == 0:
		return ""
	case e.Sid != "":
		return fmt.Sprintf("Statement %d (%q)", e.Statement, e.Sid)
	}
	return fmt.Sprintf("Statement %d", e.Statement)
}

// changed logs a change made in the console, as the admin API logs its
// own: what, on what, by whom.
func (h *Handler) changed(r *http.Request, s *session, op, target string) {
	h.log.InfoContext(r.Context(), "console change", "op", op, "target", target, "user", displayName(s.principal),
		"access_key", s.principal.AccessKeyID)
}

// confirmDelete returns the handler of the confirmation step before
// deleting the named user, group or policy (kind): authorized with the
// admin action op, it explains what the delete does (text) and posts to
// path(name)+"/delete".
func (h *Handler) confirmDelete(op, kind string, path func(string) string, text string) sessionHandler {
	return func(w http.ResponseWriter, r *http.Request, s *session) error {
		if err := h.mayAdmin(r, s, op); err != nil {
			return err
		}
		name := r.PathValue("name")
		h.render(w, r, http.StatusOK, "confirm.html", s, "Delete "+kind+" "+name, confirmView{
			Heading: "Delete " + kind + " " + name + "?",
			Text:    text,
			Action:  path(name) + "/delete", Button: "Delete " + name, Cancel: path(name),
		})
		return nil
	}
}

// confirmView is the data of confirm.html, the confirmation step of a
// delete.
type confirmView struct {
	Heading, Text, Action, Button, Cancel string
}
