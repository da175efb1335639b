package iam

import (
	"bytes"
	"cmp"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/coffer-s3/coffer/internal/policy"
)

// Parsing a policy costs a fraction of a millisecond, so a snapshot reuses
// the parsed policies and opened secrets of the one before it wherever the
// stored text did not change: a change costs work for what it changed.
//
// The IAM state is one JSON document (users, groups, named policies and
// access keys) that the Store keeps durably and that IAM holds in memory in
// full, decoded into a snapshot that requests read without locking. A
// change copies the document, edits the copy, saves it, and swaps in a
// snapshot built from it: changes are atomic, and visible to the next
// request. Rewriting the whole document per change costs O(state) per
// administrative call, which is fine for the thousands of users an object
// store has; requests never pay for it. See docs/design/0003-iam.md.

// stateVersion is the format of stateDoc. Format 2 (2026-11-29) added
// userRec.ID. This version reads format 1 too and writes 2 at its first
// change, which an older Coffer then refuses to read rather than drop
// the users' IDs: without them a user created since would take the
// canonical ID of a deleted one of its name, and with it what that one
// owned.
const stateVersion = 2

// stateDoc is the stored IAM state.
type stateDoc struct {
	Version int `json:"version"`
	// Check is a fixed text sealed with the master key, so that a wrong
	// master key is detected at start even when no key exists yet.
	Check    string                `json:"check"`
	Users    map[string]*userRec   `json:"users"`
	Groups   map[string]*groupRec  `json:"groups"`
	Policies map[string]*policyRec `json:"policies"`
	Keys     map[string]*keyRec    `json:"keys"`
}

type userRec struct {
	// ID tells this user from an earlier one of the same name: 32 random
	// hex digits given at creation, from which its canonical ID is
	// derived (userCanonicalID), so a user deleted and created again
	// neither owns what the first one owned nor holds its ACL grants.
	// Users created before IDs were kept have none, and keep the
	// canonical ID derived from their name alone.
	ID       string    `json:"id,omitempty"`
	Disabled bool      `json:"disabled,omitempty"`
	Policies []string  `json:"policies,omitempty"`
	Created  time.Time `json:"created"`
	// Password is the console password's argon2id hash in PHC form
	// (password.go), "" if none is set; PasswordChanged is when it was
	// last set.
	Password        string    `json:"password,omitempty"`
	PasswordChanged time.Time `json:"passwordChanged,omitzero"`
	// SessionsEnded is when the user was last disabled: its console
	// sessions from before then stay ended when it is enabled again,
	// whether or not they were used meanwhile. (An older Coffer ignores
	// the field, and its sessions end only when used while disabled.)
	SessionsEnded time.Time `json:"sessionsEnded,omitzero"`
}

type groupRec struct {
	Members  []string  `json:"members,omitempty"`
	Policies []string  `json:"policies,omitempty"`
	Created  time.Time `json:"created"`
}

type policyRec struct {
	Document json.RawMessage `json:"document"`
	Created  time.Time       `json:"created"`
}

type keyRec struct {
	User        string          `json:"user"`
	Secret      string          `json:"secret"` // sealed: base64(nonce ‖ AES-GCM ciphertext)
	Disabled    bool            `json:"disabled,omitempty"`
	Policy      json.RawMessage `json:"policy,omitempty"`
	Description string          `json:"description,omitempty"`
	Created     time.Time       `json:"created"`
	Expires     *time.Time      `json:"expires,omitempty"`
}

func newStateDoc() *stateDoc {
	return &stateDoc{
		Version:  stateVersion,
		Users:    map[string]*userRec{},
		Groups:   map[string]*groupRec{},
		Policies: map[string]*policyRec{},
		Keys:     map[string]*keyRec{},
	}
}

// clone returns a deep copy of d, for a change to edit.
func (d *stateDoc) clone() *stateDoc {
	c := &stateDoc{
		Version:  stateVersion, // a change writes the current format
		Check:    d.Check,
		Users:    make(map[string]*userRec, len(d.Users)),
		Groups:   make(map[string]*groupRec, len(d.Groups)),
		Policies: make(map[string]*policyRec, len(d.Policies)),
		Keys:     make(map[string]*keyRec, len(d.Keys)),
	}
	for n, u := range d.Users {
		v := *u
		v.Policies = slices.Clone(u.Policies)
		c.Users[n] = &v
	}
	for n, g := range d.Groups {
		v := *g
		v.Members = slices.Clone(g.Members)
		v.Policies = slices.Clone(g.Policies)
		c.Groups[n] = &v
	}
	for n, p := range d.Policies {
		v := *p
		c.Policies[n] = &v // Document is never modified in place
	}
	for n, k := range d.Keys {
		v := *k
		c.Keys[n] = &v
	}
	return c
}

// decodeState parses a stored document. nil data is a new, empty state.
func decodeState(data []byte) (*stateDoc, error) {
	d := newStateDoc()
	if data == nil {
		return d, nil
	}
	if err := json.Unmarshal(data, d); err != nil {
		return nil, fmt.Errorf("iam: stored state does not parse: %w", err)
	}
	if d.Version < 1 || d.Version > stateVersion {
		return nil, fmt.Errorf("iam: stored state has format %d; this coffer reads formats 1 to %d", d.Version, stateVersion)
	}
	for _, m := range []bool{d.Users == nil, d.Groups == nil, d.Policies == nil, d.Keys == nil} {
		if m {
			return nil, errors.New("iam: stored state is incomplete")
		}
	}
	return d, nil
}

// sealer encrypts secrets at rest with AES-256-GCM under the master key.
// Each secret is bound to its access key ID as additional data, so a sealed
// secret copied to another key's record does not open.
type sealer struct{ aead cipher.AEAD }

// MasterKeySize is the size of the master key in bytes.
const MasterKeySize = 32

const (
	checkText = "coffer master key check"
	checkAD   = "coffer/iam/check/v1"
	secretAD  = "coffer/iam/key/v1:"
)

// ErrWrongMasterKey means the state was sealed under another master key:
// New returns it for a stored state the key does not open.
var ErrWrongMasterKey = errors.New("iam: the master key does not open the stored IAM state; start with the master key it was created with (COFFER_MASTER_KEY or the master-key file)")

func newSealer(key []byte) (*sealer, error) {
	if len(key) != MasterKeySize {
		return nil, fmt.Errorf("iam: master key is %d bytes, want %d", len(key), MasterKeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("iam: master key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("iam: master key: %w", err)
	}
	return &sealer{aead: aead}, nil
}

func (s *sealer) seal(plain, ad string) string {
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(plain)+s.aead.Overhead())
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails
	return base64.StdEncoding.EncodeToString(s.aead.Seal(nonce, nonce, []byte(plain), []byte(ad)))
}

func (s *sealer) open(sealed, ad string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(sealed)
	if err != nil || len(b) < s.aead.NonceSize()+s.aead.Overhead() {
		return "", errors.New("iam: sealed secret is malformed")
	}
	n := s.aead.NonceSize()
	p, err := s.aead.Open(nil, b[:n], b[n:], []byte(ad))
	if err != nil {
		return "", ErrWrongMasterKey
	}
	return string(p), nil
}

// snapshot is the decoded, immutable form of a stateDoc that requests read.
type snapshot struct {
	doc      *stateDoc
	keys     map[string]*liveKey
	users    map[string]*liveUser
	policies map[string]*policy.Policy // named policies, canned ones included
	// byCanonical maps users' canonical IDs to their names, for
	// CanonicalUser: listings name every owner they report.
	byCanonical map[string]string
}

// liveKey is an access key ready for requests.
type liveKey struct {
	id       string
	secret   string
	user     *liveUser
	disabled bool
	expires  time.Time // zero: never
	scope    *policy.Policy
}

// liveUser is a user with its effective identity policies: those attached
// to it and to its groups, each once.
type liveUser struct {
	name      string
	id        string // userRec.ID
	canonical string // its canonical ID (userCanonicalID)
	disabled  bool
	policies  []*policy.Policy
	refs      []policyRef // refs[i] names policies[i], for explanations
}

// policyRef names an identity policy of a user: the policy's name and,
// if the user has it through a group, the group's (the first in name
// order when several give it).
type policyRef struct {
	name, group string
}

// usable reports whether k may sign requests at now.
func (k *liveKey) usable(now time.Time) bool {
	return !k.disabled && !k.user.disabled && (k.expires.IsZero() || now.Before(k.expires))
}

// buildSnapshot decodes d. Secrets already opened in prev (same access key,
// same sealed text) are reused, so a change costs no decryption of the
// keys it did not touch.
func buildSnapshot(d *stateDoc, s *sealer, prev *snapshot) (*snapshot, error) {
	snap := &snapshot{
		doc:      d,
		keys:     make(map[string]*liveKey, len(d.Keys)),
		users:    make(map[string]*liveUser, len(d.Users)),
		policies: make(map[string]*policy.Policy, len(d.Policies)+4),

		byCanonical: make(map[string]string, len(d.Users)),
	}
	for _, n := range policy.CannedNames() {
		p, _ := policy.Canned(n)
		snap.policies[n] = p
	}
	for n, r := range d.Policies {
		if prev != nil && prev.doc.Policies[n] != nil && bytes.Equal(prev.doc.Policies[n].Document, r.Document) {
			snap.policies[n] = prev.policies[n]
			continue
		}
		p, err := policy.ParseIdentity(r.Document)
		if err != nil {
			return nil, fmt.Errorf("iam: stored policy %q: %w", n, err)
		}
		snap.policies[n] = p
	}
	groupsOf := make(map[string][]string)
	for gn, g := range d.Groups {
		for _, m := range g.Members {
			groupsOf[m] = append(groupsOf[m], gn)
		}
	}
	for un, u := range d.Users {
		lu := &liveUser{name: un, disabled: u.Disabled}
		seen := make(map[string]bool)
		add := func(names []string, group string) error {
			for _, pn := range names {
				if seen[pn] {
					continue
				}
				seen[pn] = true
				p, ok := snap.policies[pn]
				if !ok {
					return fmt.Errorf("iam: user %q: attached policy %q does not exist", un, pn)
				}
				lu.policies = append(lu.policies, p)
				lu.refs = append(lu.refs, policyRef{name: pn, group: group})
			}
			return nil
		}
		if err := add(u.Policies, ""); err != nil {
			return nil, err
		}
		gs := groupsOf[un]
		slices.Sort(gs)
		for _, gn := range gs {
			if err := add(d.Groups[gn].Policies, gn); err != nil {
				return nil, err
			}
		}
		lu.id, lu.canonical = u.ID, userCanonicalID(un, u.ID)
		snap.users[un] = lu
		snap.byCanonical[lu.canonical] = un
	}
	for id, k := range d.Keys {
		u, ok := snap.users[k.User]
		if !ok {
			return nil, fmt.Errorf("iam: access key %s belongs to missing user %q", id, k.User)
		}
		lk := &liveKey{id: id, user: u, disabled: k.Disabled}
		if k.Expires != nil {
			lk.expires = *k.Expires
		}
		if old, ok := prevKey(prev, id); ok && bytes.Equal(prev.doc.Keys[id].Policy, k.Policy) {
			lk.scope = old.scope
		} else if len(k.Policy) > 0 {
			p, err := policy.ParseIdentity(k.Policy)
			if err != nil {
				return nil, fmt.Errorf("iam: access key %s: scope policy: %w", id, err)
			}
			lk.scope = p
		}
		if old := prevSecret(prev, id, k.Secret); old != "" {
			lk.secret = old
		} else {
			sec, err := s.open(k.Secret, secretAD+id)
			if err != nil {
				return nil, err
			}
			lk.secret = sec
		}
		snap.keys[id] = lk
	}
	return snap, nil
}

// prevKey returns key id of prev, if there is one.
func prevKey(prev *snapshot, id string) (*liveKey, bool) {
	if prev == nil || prev.doc.Keys[id] == nil {
		return nil, false
	}
	k, ok := prev.keys[id]
	return k, ok
}

// prevSecret returns the opened secret of key id in prev if its sealed
// form is still sealed, else "".
func prevSecret(prev *snapshot, id, sealed string) string {
	if prev == nil {
		return ""
	}
	k, ok := prev.keys[id]
	if !ok || prev.doc.Keys[id] == nil || prev.doc.Keys[id].Secret != sealed {
		return ""
	}
	return k.secret
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// sortedCopy returns a sorted copy of s, never nil (JSON lists it as []).
func sortedCopy(s []string) []string {
	out := append([]string{}, s...)
	slices.SortFunc(out, cmp.Compare)
	return out
}

// ParseMasterKey decodes a master key written as base64 (standard, 44
// characters) or hex (64 characters), surrounding space ignored.
func ParseMasterKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if len(s) == 2*MasterKeySize {
		if k, err := hex.DecodeString(s); err == nil {
			return k, nil
		}
	}
	if k, err := base64.StdEncoding.DecodeString(s); err == nil && len(k) == MasterKeySize {
		return k, nil
	}
	return nil, fmt.Errorf("a master key is %d random bytes in base64 (44 characters) or hex (64 characters); make one with: head -c %d /dev/urandom | base64", MasterKeySize, MasterKeySize)
}

// FormatMasterKey returns key in base64, as ParseMasterKey reads it.
func FormatMasterKey(key []byte) string { return base64.StdEncoding.EncodeToString(key) }
