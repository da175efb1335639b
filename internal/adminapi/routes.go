package adminapi

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"math"
	"net/http"
	"slices"
	"time"

	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/lifecycle"
)

// bodyKind says what an endpoint reads from the request body.
type bodyKind int

const (
	bodyNone bodyKind = iota // must be empty
	bodyJSON                 // a JSON object, decoded by the handler
	bodyRaw                  // taken as is (a policy document)
)

// An endpoint is one operation of the API: how to recognise it, which
// action it needs, and what runs it.
type endpoint struct {
	name   string // e.g. "CreateUser", for tests and docs
	method string
	path   string     // below BasePath; "{}" is a variable segment
	action iam.Action // "" when authentication suffices
	body   bodyKind
	handle func(h *Handler, ctx context.Context, rq *request) (any, error)
}

// endpoints is the readable spec of the API (see doc.go).
var endpoints = []endpoint{
	{"ListUsers", http.MethodGet, "users", "admin:ListUsers", bodyNone, (*Handler).listUsers},
	{"CreateUser", http.MethodPost, "users", "admin:CreateUser", bodyJSON, (*Handler).createUser},
	{"GetUser", http.MethodGet, "users/{}", "admin:GetUser", bodyNone, (*Handler).getUser},
	{"DeleteUser", http.MethodDelete, "users/{}", "admin:DeleteUser", bodyNone, (*Handler).deleteUser},
	{"DisableUser", http.MethodPost, "users/{}/disable", "admin:DisableUser", bodyNone, (*Handler).disableUser},
	{"EnableUser", http.MethodPost, "users/{}/enable", "admin:EnableUser", bodyNone, (*Handler).enableUser},
	{"SetUserPassword", http.MethodPost, "users/{}/password", "admin:SetUserPassword", bodyJSON, (*Handler).setUserPassword},

	{"ListAccessKeys", http.MethodGet, "keys", "admin:ListAccessKeys", bodyNone, (*Handler).listKeys},
	{"CreateAccessKey", http.MethodPost, "keys", "admin:CreateAccessKey", bodyJSON, (*Handler).createKey},
	{"GetAccessKey", http.MethodGet, "keys/{}", "admin:ListAccessKeys", bodyNone, (*Handler).getKey},
	{"DeleteAccessKey", http.MethodDelete, "keys/{}", "admin:DeleteAccessKey", bodyNone, (*Handler).deleteKey},
	{"DisableAccessKey", http.MethodPost, "keys/{}/disable", "admin:UpdateAccessKey", bodyNone, (*Handler).disableKey},
	{"EnableAccessKey", http.MethodPost, "keys/{}/enable", "admin:UpdateAccessKey", bodyNone, (*Handler).enableKey},
	{"RotateAccessKey", http.MethodPost, "keys/{}/rotate", "admin:UpdateAccessKey", bodyNone, (*Handler).rotateKey},

	{"ListGroups", http.MethodGet, "groups", "admin:ListGroups", bodyNone, (*Handler).listGroups},
	{"CreateGroup", http.MethodPost, "groups", "admin:CreateGroup", bodyJSON, (*Handler).createGroup},
	{"GetGroup", http.MethodGet, "groups/{}", "admin:GetGroup", bodyNone, (*Handler).getGroup},
	{"DeleteGroup", http.MethodDelete, "groups/{}", "admin:DeleteGroup", bodyNone, (*Handler).deleteGroup},
	{"UpdateGroupMembers", http.MethodPost, "groups/{}/members", "admin:UpdateGroupMembers", bodyJSON, (*Handler).updateGroupMembers},

	{"ListPolicies", http.MethodGet, "policies", "admin:ListPolicies", bodyNone, (*Handler).listPolicies},
	{"PutPolicy", http.MethodPut, "policies/{}", "admin:CreatePolicy", bodyRaw, (*Handler).putPolicy},
	{"GetPolicy", http.MethodGet, "policies/{}", "admin:GetPolicy", bodyNone, (*Handler).getPolicy},
	{"DeletePolicy", http.MethodDelete, "policies/{}", "admin:DeletePolicy", bodyNone, (*Handler).deletePolicy},
	{"AttachPolicy", http.MethodPost, "policies/{}/attach", "admin:AttachPolicy", bodyJSON, (*Handler).attachPolicy},
	{"DetachPolicy", http.MethodPost, "policies/{}/detach", "admin:DetachPolicy", bodyJSON, (*Handler).detachPolicy},
	{"SimulatePolicy", http.MethodPost, "simulate", "admin:SimulatePolicy", bodyJSON, (*Handler).simulate},

	{"ListBuckets", http.MethodGet, "buckets", iam.ListAllMyBuckets, bodyNone, (*Handler).listBuckets},
	{"GetBucket", http.MethodGet, "buckets/{}", iam.ListAllMyBuckets, bodyNone, (*Handler).getBucket},

	{"RunGC", http.MethodPost, "gc", "admin:RunGC", bodyJSON, (*Handler).runGC},
	{"RunLifecycle", http.MethodPost, "lifecycle/run", "admin:RunLifecycle", bodyJSON, (*Handler).runLifecycle},
	{"CheckUsage", http.MethodPost, "usage/check", "admin:CheckUsage", bodyJSON, (*Handler).checkUsage},
	{"GetAuditLog", http.MethodGet, "audit", "admin:GetAuditLog", bodyNone, (*Handler).queryAudit},
	{"ExportAuditLog", http.MethodGet, "audit/export", "admin:GetAuditLog", bodyNone, (*Handler).exportAudit},
	{"WhoAmI", http.MethodGet, "whoami", "", bodyNone, (*Handler).whoAmI},
}

// alsoNeeds lists, by endpoint name, the actions an endpoint needs besides
// its own: a rotation creates a key and deletes the old one, so it must be
// allowed what CreateAccessKey and DeleteAccessKey are (else a principal
// that may only disable keys could mint a secret for anyone's key). A
// read-only lookup table.
var alsoNeeds = map[string][]iam.Action{
	"RotateAccessKey": {"admin:CreateAccessKey", "admin:DeleteAccessKey"},
}

// nonNil returns s, or an empty slice for nil, so that lists encode as []
// rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func (h *Handler) listUsers(ctx context.Context, _ *request) (any, error) {
	us, err := h.iam.Users(ctx)
	if err != nil {
		return nil, err
	}
	return UserList{Users: nonNil(us)}, nil
}

func (h *Handler) createUser(ctx context.Context, rq *request) (any, error) {
	var in CreateUserRequest
	if err := decodeJSON(rq.body, &in); err != nil {
		return nil, err
	}
	k, err := h.iam.CreateUser(ctx, in.Name)
	if err != nil {
		return nil, err
	}
	return CreateUserResponse{User: k.User, AccessKey: k.AccessKey, SecretKey: k.SecretKey}, nil
}

func (h *Handler) getUser(ctx context.Context, rq *request) (any, error) {
	u, err := h.iam.User(ctx, rq.vars[0])
	if err != nil {
		return nil, err
	}
	return u, nil
}

func (h *Handler) deleteUser(ctx context.Context, rq *request) (any, error) {
	return nil, h.iam.DeleteUser(ctx, rq.vars[0])
}

func (h *Handler) disableUser(ctx context.Context, rq *request) (any, error) {
	return nil, h.iam.SetUserDisabled(ctx, rq.vars[0], true)
}

func (h *Handler) enableUser(ctx context.Context, rq *request) (any, error) {
	return nil, h.iam.SetUserDisabled(ctx, rq.vars[0], false)
}

// setUserPassword sets a user's console password. The password is
// neither logged nor recorded: the audit record has the path, not the
// body.
func (h *Handler) setUserPassword(ctx context.Context, rq *request) (any, error) {
	var in SetPasswordRequest
	if err := decodeJSON(rq.body, &in); err != nil {
		return nil, err
	}
	return nil, h.iam.SetPassword(ctx, rq.vars[0], in.Password)
}

func (h *Handler) listKeys(ctx context.Context, rq *request) (any, error) {
	ks, err := h.iam.Keys(ctx, rq.r.URL.Query().Get("user"))
	if err != nil {
		return nil, err
	}
	return KeyList{Keys: nonNil(ks)}, nil
}

func (h *Handler) createKey(ctx context.Context, rq *request) (any, error) {
	var in CreateKeyRequest
	if err := decodeJSON(rq.body, &in); err != nil {
		return nil, err
	}
	opt := iam.KeyOptions{Description: in.Description}
	if in.Expires != nil {
		opt.Expires = *in.Expires
	}
	doc, err := policyDocument(in.Policy)
	if err != nil {
		return nil, err
	}
	opt.Policy = doc
	k, err := h.iam.CreateKey(ctx, in.User, opt)
	if err != nil {
		return nil, err
	}
	return k, nil
}

// policyDocument returns the document of CreateKeyRequest.Policy: an
// object as is, a JSON string's contents, nil for absent or null.
func policyDocument(raw json.RawMessage) ([]byte, error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0 || bytes.Equal(raw, []byte("null")):
		return nil, nil
	case raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, errorf(http.StatusBadRequest, CodeMalformedJSON, "field \"policy\": %s", jsonMessage(err))
		}
		if s == "" {
			return nil, nil
		}
		return []byte(s), nil
	case raw[0] != '{':
		return nil, errorf(http.StatusBadRequest, CodeMalformedPolicyDocument, "field \"policy\" must be a policy document (a JSON object)")
	}
	return raw, nil
}

func (h *Handler) getKey(ctx context.Context, rq *request) (any, error) {
	k, err := h.iam.Key(ctx, rq.vars[0])
	if err != nil {
		return nil, err
	}
	return k, nil
}

func (h *Handler) deleteKey(ctx context.Context, rq *request) (any, error) {
	return nil, h.iam.DeleteKey(ctx, rq.vars[0])
}

func (h *Handler) disableKey(ctx context.Context, rq *request) (any, error) {
	return nil, h.iam.SetKeyDisabled(ctx, rq.vars[0], true)
}

func (h *Handler) enableKey(ctx context.Context, rq *request) (any, error) {
	return nil, h.iam.SetKeyDisabled(ctx, rq.vars[0], false)
}

func (h *Handler) rotateKey(ctx context.Context, rq *request) (any, error) {
	k, err := h.iam.RotateKey(ctx, rq.vars[0])
	if err != nil {
		return nil, err
	}
	return k, nil
}

func (h *Handler) listGroups(ctx context.Context, _ *request) (any, error) {
	gs, err := h.iam.Groups(ctx)
	if err != nil {
		return nil, err
	}
	return GroupList{Groups: nonNil(gs)}, nil
}

func (h *Handler) createGroup(ctx context.Context, rq *request) (any, error) {
	var in CreateGroupRequest
	if err := decodeJSON(rq.body, &in); err != nil {
		return nil, err
	}
	return nil, h.iam.CreateGroup(ctx, in.Name)
}

func (h *Handler) getGroup(ctx context.Context, rq *request) (any, error) {
	g, err := h.iam.Group(ctx, rq.vars[0])
	if err != nil {
		return nil, err
	}
	return g, nil
}

func (h *Handler) deleteGroup(ctx context.Context, rq *request) (any, error) {
	return nil, h.iam.DeleteGroup(ctx, rq.vars[0])
}

func (h *Handler) updateGroupMembers(ctx context.Context, rq *request) (any, error) {
	var in GroupMembersRequest
	if err := decodeJSON(rq.body, &in); err != nil {
		return nil, err
	}
	if len(in.Add) == 0 && len(in.Remove) == 0 {
		return nil, errorf(http.StatusBadRequest, CodeInvalidInput, "give users to add or remove")
	}
	return nil, h.iam.UpdateGroupMembers(ctx, rq.vars[0], in.Add, in.Remove)
}

func (h *Handler) listPolicies(ctx context.Context, _ *request) (any, error) {
	ps, err := h.iam.Policies(ctx)
	if err != nil {
		return nil, err
	}
	return PolicyList{Policies: nonNil(ps)}, nil
}

func (h *Handler) putPolicy(ctx context.Context, rq *request) (any, error) {
	if len(bytes.TrimSpace(rq.body)) == 0 {
		return nil, errorf(http.StatusBadRequest, CodeMalformedPolicyDocument, "the request body must be the policy document")
	}
	return nil, h.iam.PutPolicy(ctx, rq.vars[0], rq.body)
}

func (h *Handler) getPolicy(ctx context.Context, rq *request) (any, error) {
	p, err := h.iam.Policy(ctx, rq.vars[0])
	if err != nil {
		return nil, err
	}
	return p, nil
}

func (h *Handler) deletePolicy(ctx context.Context, rq *request) (any, error) {
	return nil, h.iam.DeletePolicy(ctx, rq.vars[0])
}

// attachTarget decodes the body of attach and detach.
func attachTarget(rq *request) (iam.Target, error) {
	var in AttachRequest
	if err := decodeJSON(rq.body, &in); err != nil {
		return iam.Target{}, err
	}
	if (in.User == "") == (in.Group == "") {
		return iam.Target{}, errorf(http.StatusBadRequest, CodeInvalidInput, "give exactly one of \"user\" and \"group\"")
	}
	return iam.Target{User: in.User, Group: in.Group}, nil
}

func (h *Handler) attachPolicy(ctx context.Context, rq *request) (any, error) {
	t, err := attachTarget(rq)
	if err != nil {
		return nil, err
	}
	return nil, h.iam.AttachPolicy(ctx, rq.vars[0], t)
}

func (h *Handler) detachPolicy(ctx context.Context, rq *request) (any, error) {
	t, err := attachTarget(rq)
	if err != nil {
		return nil, err
	}
	return nil, h.iam.DetachPolicy(ctx, rq.vars[0], t)
}

// simulate answers whether a request would be allowed, and why, with the
// decision real requests get (iam.Simulate).
func (h *Handler) simulate(ctx context.Context, rq *request) (any, error) {
	var in SimulateRequest
	if err := decodeJSON(rq.body, &in); err != nil {
		return nil, err
	}
	si, err := SimulateInput(in)
	if err != nil {
		return nil, err
	}
	return h.iam.Simulate(ctx, si)
}

// SimulateInput turns a SimulateRequest into iam's input: the resource
// split into bucket and key, the context into conditions. Its errors wrap
// iam.ErrInvalid.
func SimulateInput(in SimulateRequest) (iam.SimulateInput, error) {
	bucket, key, err := iam.ParseResource(in.Resource)
	if err != nil {
		return iam.SimulateInput{}, err
	}
	si := iam.SimulateInput{User: in.User, AccessKey: in.AccessKey, Action: iam.Action(in.Action), Bucket: bucket, Key: key}
	for _, k := range slices.Sorted(maps.Keys(in.Context)) {
		if err := si.Cond.SetCondition(k, in.Context[k]); err != nil {
			return iam.SimulateInput{}, err
		}
	}
	return si, nil
}

// maxGraceSeconds is the largest grace a time.Duration holds.
const maxGraceSeconds = float64(math.MaxInt64 / int64(time.Second))

func (h *Handler) runGC(ctx context.Context, rq *request) (any, error) {
	if h.gc == nil {
		return nil, errorf(http.StatusNotImplemented, CodeNotImplemented, "garbage collection is not available on this server")
	}
	var in GCRequest
	if len(bytes.TrimSpace(rq.body)) > 0 {
		if err := decodeJSON(rq.body, &in); err != nil {
			return nil, err
		}
	}
	grace := h.gcGrace
	if g := in.GraceSeconds; g != nil {
		if !(*g >= 0 && *g <= maxGraceSeconds) {
			return nil, errorf(http.StatusBadRequest, CodeInvalidInput, "graceSeconds must be between 0 and %.0f", maxGraceSeconds)
		}
		grace = time.Duration(*g * float64(time.Second))
	}
	start := time.Now()
	st, err := h.gc(ctx, grace)
	if err != nil {
		return nil, err
	}
	return GCResult{
		GraceSeconds:    st.Grace.Seconds(),
		Scanned:         st.Scanned,
		Deleted:         st.Deleted,
		DeletedBytes:    st.DeletedBytes,
		ExpiredUploads:  st.ExpiredUploads,
		DurationSeconds: time.Since(start).Seconds(),
		Elsewhere:       st.Elsewhere,
	}, nil
}

func (h *Handler) whoAmI(_ context.Context, rq *request) (any, error) {
	p := rq.principal
	return WhoAmI{AccessKey: p.AccessKeyID, User: p.User, Root: p.Root}, nil
}

// runLifecycle runs a lifecycle pass now and reports what it did. A
// bucket named that does not exist, or has no lifecycle configuration, is
// 404 (NoSuchBucket, NoSuchLifecycleConfiguration).
func (h *Handler) runLifecycle(ctx context.Context, rq *request) (any, error) {
	if h.runLC == nil {
		return nil, errorf(http.StatusNotImplemented, CodeNotImplemented, "the lifecycle worker is not available on this server")
	}
	var in LifecycleRunRequest
	if len(bytes.TrimSpace(rq.body)) > 0 {
		if err := decodeJSON(rq.body, &in); err != nil {
			return nil, err
		}
	}
	res, err := h.runLC(ctx, in.Bucket)
	if err != nil {
		return nil, err
	}
	out := LifecycleRunResult{Buckets: []LifecycleBucketResult{}, DurationSeconds: res.Duration.Seconds()}
	for _, b := range res.Buckets {
		out.Buckets = append(out.Buckets, lifecycleResult(b))
	}
	out.Totals = lifecycleResult(res.Totals())
	out.Totals.Bucket = ""
	return out, nil
}

func lifecycleResult(b lifecycle.BucketResult) LifecycleBucketResult {
	r := LifecycleBucketResult{
		Bucket: b.Bucket, Examined: b.Examined, ObjectsExpired: b.ObjectsExpired, DeleteMarkersCreated: b.DeleteMarkersCreated,
		VersionsRemoved: b.VersionsRemoved, DeleteMarkersRemoved: b.DeleteMarkersRemoved, UploadsAborted: b.UploadsAborted,
		Skipped: b.Skipped, DeletedBytes: b.DeletedBytes,
	}
	if b.Err != nil {
		_, code, msg := classify(b.Err)
		r.Error = code + ": " + msg
	}
	return r
}
