package iam

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/coffer-s3/coffer/internal/policy"
)

// Errors of the management API, matched with errors.Is. The admin API
// maps them to HTTP statuses; their messages are safe to show a caller.
var (
	ErrNotFound = errors.New("iam: no such entity")   // 404 NoSuchEntity
	ErrExists   = errors.New("iam: entity exists")    // 409 EntityAlreadyExists
	ErrInvalid  = errors.New("iam: invalid input")    // 400 InvalidInput
	ErrInUse    = errors.New("iam: entity in use")    // 409 DeleteConflict
	ErrPolicy   = errors.New("iam: malformed policy") // 400 MalformedPolicyDocument
)

// UserInfo describes a user.
type UserInfo struct {
	Name     string    `json:"name"`
	Disabled bool      `json:"disabled"`
	Policies []string  `json:"policies"` // attached directly, sorted
	Groups   []string  `json:"groups"`   // sorted
	Created  time.Time `json:"created"`
	// Password says whether the user has a console password (never the
	// password or its hash).
	Password bool `json:"password"`
	// CanonicalID is the user's canonical user ID: the owner S3 reports
	// for what it creates, and what an ACL grant names it by.
	CanonicalID string `json:"canonicalId"`
}

// KeyInfo describes an access key; never its secret.
type KeyInfo struct {
	AccessKey   string          `json:"accessKey"`
	User        string          `json:"user"`
	Disabled    bool            `json:"disabled"`
	Policy      json.RawMessage `json:"policy,omitempty"` // the key's own scope, if any
	Description string          `json:"description,omitempty"`
	Created     time.Time       `json:"created"`
	Expires     *time.Time      `json:"expires,omitempty"`
}

// NewKey is a freshly made access key with its secret: the only time a
// secret leaves the server.
type NewKey struct {
	KeyInfo
	SecretKey string `json:"secretKey"`
}

// KeyOptions are the optional properties of a new access key.
type KeyOptions struct {
	// Policy, if not empty, scopes the key: a request must be allowed by
	// the key's policy as well as by its user's.
	Policy      []byte
	Description string
	// Expires, if not zero, is when the key stops working.
	Expires time.Time
}

// GroupInfo describes a group.
type GroupInfo struct {
	Name     string    `json:"name"`
	Members  []string  `json:"members"`  // sorted
	Policies []string  `json:"policies"` // sorted
	Created  time.Time `json:"created"`
}

// PolicyInfo describes a named policy.
type PolicyInfo struct {
	Name     string          `json:"name"`
	Canned   bool            `json:"canned"`
	Document json.RawMessage `json:"document"`
	Users    []string        `json:"users"`  // attached to, sorted
	Groups   []string        `json:"groups"` // attached to, sorted
	Created  time.Time       `json:"created"`
}

// Target names what a policy is attached to: exactly one of User, Group.
type Target struct {
	User  string `json:"user,omitempty"`
	Group string `json:"group,omitempty"`
}

// The management API. Every method validates its input (ErrInvalid),
// persists the change durably before returning, and makes it visible to
// SecretKey, Principal and Authorize at once.

// change applies edit to a copy of the state, saves it, and makes it
// current. Changes are serialized.
func (m *IAM) change(ctx context.Context, edit func(d *stateDoc) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if us, ok := m.store.(UpdateStore); ok {
		return m.changeShared(ctx, us, edit)
	}
	prev := m.snap.Load()
	d := prev.doc.clone()
	if err := edit(d); err != nil {
		return err
	}
	snap, err := buildSnapshot(d, m.seal, prev)
	if err != nil {
		return err
	}
	if m.store != nil {
		data, err := json.Marshal(d)
		if err != nil {
			return fmt.Errorf("iam: encode state: %w", err)
		}
		if err := m.store.PutIAMState(ctx, data); err != nil {
			return fmt.Errorf("iam: save state: %w", err)
		}
	}
	m.snap.Store(snap)
	return nil
}

// changeShared is change on a store that other nodes change too: the edit
// applies to the stored state, read under the store's lock, not to this
// node's snapshot, which may not have caught up yet.
func (m *IAM) changeShared(ctx context.Context, us UpdateStore, edit func(d *stateDoc) error) error {
	var snap *snapshot
	var editErr error // the edit's own error, returned as it is
	err := us.UpdateIAMState(ctx, func(old []byte) ([]byte, error) {
		base, err := m.decodeStored(old)
		if err != nil {
			return nil, err
		}
		d := base.doc.clone()
		if editErr = edit(d); editErr != nil {
			return nil, editErr
		}
		if snap, err = buildSnapshot(d, m.seal, base); err != nil {
			return nil, err
		}
		data, err := json.Marshal(d)
		if err != nil {
			return nil, fmt.Errorf("iam: encode state: %w", err)
		}
		return data, nil
	})
	switch {
	case editErr != nil:
		return editErr
	case err != nil:
		return fmt.Errorf("iam: save state: %w", err)
	}
	m.snap.Store(snap)
	return nil
}

// Name rules: those of AWS IAM user, group and policy names.
const (
	maxNameLen        = 64
	maxPolicyNameLen  = 128
	maxDescriptionLen = 256
	nameChars         = "+=,.@_-"
)

// checkName returns ErrInvalid unless name is 1..max characters of
// [A-Za-z0-9+=,.@_-].
func checkName(kind, name string, max int) error {
	if name == "" || len(name) > max {
		return fmt.Errorf("%w: %s name must be 1 to %d characters", ErrInvalid, kind, max)
	}
	for _, c := range name {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.ContainsRune(nameChars, c)) {
			return fmt.Errorf("%w: %s name %q may contain only letters, digits and %s", ErrInvalid, kind, name, nameChars)
		}
	}
	return nil
}

func notFound(kind, name string) error { return fmt.Errorf("%w: %s %q", ErrNotFound, kind, name) }

// CreateUser creates user name with one access key, returned with its secret.
func (m *IAM) CreateUser(ctx context.Context, name string) (NewKey, error) {
	if err := checkName("user", name, maxNameLen); err != nil {
		return NewKey{}, err
	}
	var nk NewKey
	err := m.change(ctx, func(d *stateDoc) error {
		if _, ok := d.Users[name]; ok {
			return fmt.Errorf("%w: user %q", ErrExists, name)
		}
		d.Users[name] = &userRec{ID: newUserID(), Created: m.now()}
		var err error
		nk, err = m.addKey(d, name, KeyOptions{})
		return err
	})
	return nk, err
}

func (m *IAM) now() time.Time { return m.clock().UTC().Truncate(time.Second) }

// Users lists all users in name order.
func (m *IAM) Users(ctx context.Context) ([]UserInfo, error) {
	d := m.snap.Load().doc
	out := make([]UserInfo, 0, len(d.Users))
	for _, n := range sortedKeys(d.Users) {
		out = append(out, userInfo(d, n))
	}
	return out, ctx.Err()
}

// User describes user name.
func (m *IAM) User(ctx context.Context, name string) (UserInfo, error) {
	d := m.snap.Load().doc
	if _, ok := d.Users[name]; !ok {
		return UserInfo{}, notFound("user", name)
	}
	return userInfo(d, name), ctx.Err()
}

func userInfo(d *stateDoc, name string) UserInfo {
	u := d.Users[name]
	ui := UserInfo{Name: name, Disabled: u.Disabled, Policies: sortedCopy(u.Policies), Groups: []string{}, Created: u.Created, Password: u.Password != "",
		CanonicalID: userCanonicalID(name, u.ID)}
	for _, gn := range sortedKeys(d.Groups) {
		if slices.Contains(d.Groups[gn].Members, name) {
			ui.Groups = append(ui.Groups, gn)
		}
	}
	return ui
}

// DeleteUser deletes user name, its keys and its group memberships.
func (m *IAM) DeleteUser(ctx context.Context, name string) error {
	return m.change(ctx, func(d *stateDoc) error {
		if _, ok := d.Users[name]; !ok {
			return notFound("user", name)
		}
		delete(d.Users, name)
		for id, k := range d.Keys {
			if k.User == name {
				delete(d.Keys, id)
			}
		}
		for _, g := range d.Groups {
			g.Members = slices.DeleteFunc(g.Members, func(s string) bool { return s == name })
		}
		return nil
	})
}

// SetUserDisabled disables or enables user name: a disabled user's keys
// are refused as unknown.
func (m *IAM) SetUserDisabled(ctx context.Context, name string, disabled bool) error {
	return m.change(ctx, func(d *stateDoc) error {
		u, ok := d.Users[name]
		if !ok {
			return notFound("user", name)
		}
		if disabled && !u.Disabled {
			u.SessionsEnded = m.clock().UTC()
		}
		u.Disabled = disabled
		return nil
	})
}

// CreateKey makes a new access key for user.
func (m *IAM) CreateKey(ctx context.Context, user string, opt KeyOptions) (NewKey, error) {
	var nk NewKey
	err := m.change(ctx, func(d *stateDoc) error {
		if _, ok := d.Users[user]; !ok {
			return notFound("user", user)
		}
		var err error
		nk, err = m.addKey(d, user, opt)
		return err
	})
	return nk, err
}

// addKey adds a new key of user to d.
func (m *IAM) addKey(d *stateDoc, user string, opt KeyOptions) (NewKey, error) {
	if len(opt.Description) > maxDescriptionLen || !utf8.ValidString(opt.Description) {
		return NewKey{}, fmt.Errorf("%w: description must be valid UTF-8 of at most %d bytes", ErrInvalid, maxDescriptionLen)
	}
	now := m.now()
	if !opt.Expires.IsZero() && !opt.Expires.After(now) {
		return NewKey{}, fmt.Errorf("%w: expiry %s is not in the future", ErrInvalid, opt.Expires.Format(time.RFC3339))
	}
	var scope json.RawMessage
	if len(opt.Policy) > 0 {
		if _, err := policy.ParseIdentity(opt.Policy); err != nil {
			return NewKey{}, fmt.Errorf("%w: %w", ErrPolicy, err)
		}
		scope = compactJSON(opt.Policy)
	}
	var id, secret string
	for {
		id, secret = GenerateCredentials()
		if _, taken := d.Keys[id]; !taken && !m.isRoot(id) {
			break
		}
	}
	rec := &keyRec{User: user, Secret: m.seal.seal(secret, secretAD+id), Policy: scope, Description: opt.Description, Created: now}
	if !opt.Expires.IsZero() {
		e := opt.Expires.UTC()
		rec.Expires = &e
	}
	d.Keys[id] = rec
	return NewKey{KeyInfo: keyInfo(id, rec), SecretKey: secret}, nil
}

// compactJSON returns doc without insignificant space; doc is valid JSON.
func compactJSON(doc []byte) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, doc); err != nil {
		return append(json.RawMessage(nil), doc...)
	}
	return b.Bytes()
}

func keyInfo(id string, k *keyRec) KeyInfo {
	return KeyInfo{AccessKey: id, User: k.User, Disabled: k.Disabled, Policy: k.Policy, Description: k.Description, Created: k.Created, Expires: k.Expires}
}

// Keys lists the keys of user, or of every user if user is "", in
// (user, access key) order.
func (m *IAM) Keys(ctx context.Context, user string) ([]KeyInfo, error) {
	d := m.snap.Load().doc
	if _, ok := d.Users[user]; user != "" && !ok {
		return nil, notFound("user", user)
	}
	out := []KeyInfo{}
	for _, id := range sortedKeys(d.Keys) {
		if k := d.Keys[id]; user == "" || k.User == user {
			out = append(out, keyInfo(id, k))
		}
	}
	slices.SortStableFunc(out, func(a, b KeyInfo) int { return strings.Compare(a.User, b.User) })
	return out, ctx.Err()
}

// Key describes one access key.
func (m *IAM) Key(ctx context.Context, accessKey string) (KeyInfo, error) {
	k, ok := m.snap.Load().doc.Keys[accessKey]
	if !ok {
		return KeyInfo{}, notFound("access key", accessKey)
	}
	return keyInfo(accessKey, k), ctx.Err()
}

// DeleteKey deletes an access key.
func (m *IAM) DeleteKey(ctx context.Context, accessKey string) error {
	return m.change(ctx, func(d *stateDoc) error {
		if _, ok := d.Keys[accessKey]; !ok {
			return notFound("access key", accessKey)
		}
		delete(d.Keys, accessKey)
		return nil
	})
}

// SetKeyDisabled disables or enables an access key.
func (m *IAM) SetKeyDisabled(ctx context.Context, accessKey string, disabled bool) error {
	return m.change(ctx, func(d *stateDoc) error {
		k, ok := d.Keys[accessKey]
		if !ok {
			return notFound("access key", accessKey)
		}
		k.Disabled = disabled
		return nil
	})
}

// RotateKey replaces an access key by a new one with the same user,
// scope, description, expiry and state, and deletes the old one,
// atomically: the old key stops working when the new one starts.
func (m *IAM) RotateKey(ctx context.Context, accessKey string) (NewKey, error) {
	var nk NewKey
	err := m.change(ctx, func(d *stateDoc) error {
		old, ok := d.Keys[accessKey]
		if !ok {
			return notFound("access key", accessKey)
		}
		opt := KeyOptions{Policy: old.Policy, Description: old.Description}
		if old.Expires != nil {
			opt.Expires = *old.Expires
		}
		var err error
		if nk, err = m.addKey(d, old.User, opt); err != nil {
			return err
		}
		if old.Disabled {
			d.Keys[nk.AccessKey].Disabled = true
			nk.Disabled = true
		}
		delete(d.Keys, accessKey)
		return nil
	})
	return nk, err
}

// CreateGroup creates an empty group.
func (m *IAM) CreateGroup(ctx context.Context, name string) error {
	if err := checkName("group", name, maxNameLen); err != nil {
		return err
	}
	return m.change(ctx, func(d *stateDoc) error {
		if _, ok := d.Groups[name]; ok {
			return fmt.Errorf("%w: group %q", ErrExists, name)
		}
		d.Groups[name] = &groupRec{Created: m.now()}
		return nil
	})
}

// Groups lists all groups in name order.
func (m *IAM) Groups(ctx context.Context) ([]GroupInfo, error) {
	d := m.snap.Load().doc
	out := make([]GroupInfo, 0, len(d.Groups))
	for _, n := range sortedKeys(d.Groups) {
		out = append(out, groupInfo(n, d.Groups[n]))
	}
	return out, ctx.Err()
}

func groupInfo(name string, g *groupRec) GroupInfo {
	return GroupInfo{Name: name, Members: sortedCopy(g.Members), Policies: sortedCopy(g.Policies), Created: g.Created}
}

// Group describes group name.
func (m *IAM) Group(ctx context.Context, name string) (GroupInfo, error) {
	g, ok := m.snap.Load().doc.Groups[name]
	if !ok {
		return GroupInfo{}, notFound("group", name)
	}
	return groupInfo(name, g), ctx.Err()
}

// DeleteGroup deletes group name; its members lose the group's policies.
func (m *IAM) DeleteGroup(ctx context.Context, name string) error {
	return m.change(ctx, func(d *stateDoc) error {
		if _, ok := d.Groups[name]; !ok {
			return notFound("group", name)
		}
		delete(d.Groups, name)
		return nil
	})
}

// UpdateGroupMembers adds and removes users of group, atomically. Adding a
// member twice or removing a non-member is not an error; an unknown user
// is ErrNotFound.
func (m *IAM) UpdateGroupMembers(ctx context.Context, group string, add, remove []string) error {
	return m.change(ctx, func(d *stateDoc) error {
		g, ok := d.Groups[group]
		if !ok {
			return notFound("group", group)
		}
		for _, u := range slices.Concat(add, remove) {
			if _, ok := d.Users[u]; !ok {
				return notFound("user", u)
			}
		}
		for _, u := range add {
			if !slices.Contains(g.Members, u) {
				g.Members = append(g.Members, u)
			}
		}
		g.Members = slices.DeleteFunc(g.Members, func(s string) bool { return slices.Contains(remove, s) })
		slices.Sort(g.Members)
		return nil
	})
}

// isCanned reports whether name is a built-in policy.
func isCanned(name string) bool {
	_, ok := policy.Canned(name)
	return ok
}

// PutPolicy creates or replaces the named policy. Canned names are
// reserved (ErrInvalid); a document that does not parse is ErrPolicy.
func (m *IAM) PutPolicy(ctx context.Context, name string, doc []byte) error {
	if err := checkName("policy", name, maxPolicyNameLen); err != nil {
		return err
	}
	if isCanned(name) {
		return fmt.Errorf("%w: %q is a built-in policy and cannot be replaced", ErrInvalid, name)
	}
	if _, err := policy.ParseIdentity(doc); err != nil {
		return fmt.Errorf("%w: %w", ErrPolicy, err)
	}
	return m.change(ctx, func(d *stateDoc) error {
		created := m.now()
		if old, ok := d.Policies[name]; ok {
			created = old.Created
		}
		d.Policies[name] = &policyRec{Document: compactJSON(doc), Created: created}
		return nil
	})
}

// Policies lists all policies, canned ones included, in name order.
func (m *IAM) Policies(ctx context.Context) ([]PolicyInfo, error) {
	snap := m.snap.Load()
	out := make([]PolicyInfo, 0, len(snap.policies))
	for _, n := range sortedKeys(snap.policies) {
		out = append(out, policyInfo(snap, n))
	}
	return out, ctx.Err()
}

// Policy describes the named policy.
func (m *IAM) Policy(ctx context.Context, name string) (PolicyInfo, error) {
	snap := m.snap.Load()
	if _, ok := snap.policies[name]; !ok {
		return PolicyInfo{}, notFound("policy", name)
	}
	return policyInfo(snap, name), ctx.Err()
}

func policyInfo(snap *snapshot, name string) PolicyInfo {
	pi := PolicyInfo{Name: name, Users: []string{}, Groups: []string{}}
	if r, ok := snap.doc.Policies[name]; ok {
		pi.Document, pi.Created = r.Document, r.Created
	} else {
		pi.Canned, pi.Document = true, compactJSON(snap.policies[name].Raw())
	}
	for _, un := range sortedKeys(snap.doc.Users) {
		if slices.Contains(snap.doc.Users[un].Policies, name) {
			pi.Users = append(pi.Users, un)
		}
	}
	for _, gn := range sortedKeys(snap.doc.Groups) {
		if slices.Contains(snap.doc.Groups[gn].Policies, name) {
			pi.Groups = append(pi.Groups, gn)
		}
	}
	return pi
}

// DeletePolicy deletes the named policy; ErrInUse while it is attached.
func (m *IAM) DeletePolicy(ctx context.Context, name string) error {
	if isCanned(name) {
		return fmt.Errorf("%w: %q is a built-in policy and cannot be deleted", ErrInvalid, name)
	}
	return m.change(ctx, func(d *stateDoc) error {
		if _, ok := d.Policies[name]; !ok {
			return notFound("policy", name)
		}
		for _, un := range sortedKeys(d.Users) {
			if slices.Contains(d.Users[un].Policies, name) {
				return fmt.Errorf("%w: policy %q is attached to user %q; detach it first", ErrInUse, name, un)
			}
		}
		for _, gn := range sortedKeys(d.Groups) {
			if slices.Contains(d.Groups[gn].Policies, name) {
				return fmt.Errorf("%w: policy %q is attached to group %q; detach it first", ErrInUse, name, gn)
			}
		}
		delete(d.Policies, name)
		return nil
	})
}

// AttachPolicy attaches the named policy to a user or group. Attaching it
// again is not an error.
func (m *IAM) AttachPolicy(ctx context.Context, name string, t Target) error {
	return m.change(ctx, func(d *stateDoc) error {
		if _, ok := d.Policies[name]; !ok && !isCanned(name) {
			return notFound("policy", name)
		}
		list, err := target(d, t)
		if err != nil {
			return err
		}
		if !slices.Contains(*list, name) {
			*list = append(*list, name)
			slices.Sort(*list)
		}
		return nil
	})
}

// DetachPolicy detaches the named policy from a user or group.
func (m *IAM) DetachPolicy(ctx context.Context, name string, t Target) error {
	return m.change(ctx, func(d *stateDoc) error {
		list, err := target(d, t)
		if err != nil {
			return err
		}
		if !slices.Contains(*list, name) {
			return fmt.Errorf("%w: policy %q is not attached to %s", ErrNotFound, name, t)
		}
		*list = slices.DeleteFunc(*list, func(s string) bool { return s == name })
		return nil
	})
}

// String returns "user NAME" or "group NAME".
func (t Target) String() string {
	if t.User != "" {
		return fmt.Sprintf("user %q", t.User)
	}
	return fmt.Sprintf("group %q", t.Group)
}

// target returns the policy list of the user or group t names.
func target(d *stateDoc, t Target) (*[]string, error) {
	switch {
	case (t.User == "") == (t.Group == ""):
		return nil, fmt.Errorf("%w: name exactly one of a user and a group", ErrInvalid)
	case t.User != "":
		u, ok := d.Users[t.User]
		if !ok {
			return nil, notFound("user", t.User)
		}
		return &u.Policies, nil
	default:
		g, ok := d.Groups[t.Group]
		if !ok {
			return nil, notFound("group", t.Group)
		}
		return &g.Policies, nil
	}
}

// accessKeyAlphabet is the alphabet of generated access key IDs, as AWS's.
const accessKeyAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// GenerateCredentials returns a random access key ID of 20 characters from
// [A-Z0-9] (103 bits) and a secret of 40 base64 characters (240 bits).
func GenerateCredentials() (accessKey, secretKey string) {
	ak := make([]byte, 0, 20)
	var buf [32]byte
	for len(ak) < cap(ak) {
		_, _ = randRead(buf[:])
		for _, b := range buf {
			// Reject the top 4 values of 256 so every symbol of the 36 is
			// equally likely (252 = 7 × 36).
			if b < 252 && len(ak) < cap(ak) {
				ak = append(ak, accessKeyAlphabet[b%36])
			}
		}
	}
	var secret [30]byte
	_, _ = randRead(secret[:])
	return string(ak), base64.StdEncoding.EncodeToString(secret[:])
}

// randRead is crypto/rand.Read, which never returns an error.
var randRead = rand.Read
