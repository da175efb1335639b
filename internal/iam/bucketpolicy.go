package iam

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/coffer-s3/coffer/internal/policy"
)

// A bucket policy that names users is stored bound to them, as AWS binds
// a principal to its unique ID when the policy is set: it applies to the
// users that had the names then, never to a user deleted and created
// again under one of them (which has another ID, userRec.ID). The store
// keeps opaque bytes (meta's table y); iam gives them their meaning:
//
//   - a document that names no user is stored as PutBucketPolicy gave it;
//   - one that does is stored as boundPolicyMark, the length of the
//     bindings as a uvarint, the bindings (a JSON object of user name →
//     ID, "" for a user created before users had IDs), then the document
//     byte for byte.
//
// A stored document is JSON and so never starts with boundPolicyMark. A
// document stored before policies were bound applies to the users created
// before users had IDs (parseStoredBucketPolicy).
const boundPolicyMark = 0x01

// maxBindingsLen bounds the length of a stored policy's bindings: one
// per user name in a document of at most policy.MaxDocumentSize bytes,
// with room for their IDs.
const maxBindingsLen = 64 << 10

// BindBucketPolicy checks doc as bucket's policy, as PutBucketPolicy was
// given it, and returns the bytes to store: the document bound to the
// users it names (see above). A user it names must exist, as on AWS
// ("Invalid principal in policy"). On a store shared with other nodes the
// users are read from the stored state, not this node's snapshot, which
// may lag a change made through another node. public reports whether the
// policy grants anything to everyone (for Block Public Access). Errors
// about the document wrap ErrPolicy.
func (m *IAM) BindBucketPolicy(ctx context.Context, bucket string, doc []byte) (stored []byte, public bool, err error) {
	p, err := policy.ParseBucket(bucket, doc)
	if err != nil {
		return nil, false, fmt.Errorf("%w: %w", ErrPolicy, err)
	}
	names := p.Users()
	if len(names) == 0 {
		return doc, p.Public(), nil
	}
	users := m.snap.Load().doc.Users
	if _, shared := m.store.(UpdateStore); shared {
		data, err := m.store.IAMState(ctx)
		if err != nil {
			return nil, false, fmt.Errorf("iam: bind bucket policy: %w", err)
		}
		if data != nil {
			d, err := decodeState(data)
			if err != nil {
				return nil, false, fmt.Errorf("iam: bind bucket policy: %w", err)
			}
			users = d.Users
		}
	}
	ids := make(map[string]string, len(names))
	for _, n := range names {
		u, ok := users[n]
		if !ok {
			return nil, false, fmt.Errorf("%w: Invalid principal in policy: there is no user %q", ErrPolicy, n)
		}
		ids[n] = u.ID
	}
	j, err := json.Marshal(ids)
	if err != nil {
		return nil, false, fmt.Errorf("iam: bind bucket policy: %w", err)
	}
	stored = make([]byte, 0, 1+binary.MaxVarintLen64+len(j)+len(doc))
	stored = append(stored, boundPolicyMark)
	stored = binary.AppendUvarint(stored, uint64(len(j)))
	stored = append(stored, j...)
	return append(stored, doc...), p.Public(), nil
}

// BucketPolicyDocument returns the document of a stored bucket policy for
// GetBucketPolicy: as PutBucketPolicy was given it while every user it
// names is the one it was bound to. A user deleted since (or deleted and
// created again) is shown as AWS shows a deleted principal, by an ID in
// place of its ARN: the canonical ID the deleted user had. Such a
// document is not the one put (its JSON is re-encoded), and it cannot be
// put back as it is: the ID is not a principal PutBucketPolicy accepts,
// so a read-edit-write of the policy does not quietly grant the new user
// what the old one had.
//
// A policy set before policies were bound is shown alike, for the users
// its Allow statements name (see parseStoredBucketPolicy): one created
// since under such a name is not the user the Allow meant.
func (m *IAM) BucketPolicyDocument(stored []byte) ([]byte, error) {
	doc, ids, err := splitStoredPolicy(stored)
	if err != nil {
		return nil, err
	}
	users := m.snap.Load().users
	legacy := ids == nil
	stale := func(name string) (string, bool) {
		id := ids[name] // "" for every name of a policy set before binding
		if u, ok := users[name]; ok && u.id == id {
			return "", false
		}
		if _, ok := ids[name]; !ok && !legacy {
			return "", false // not bound: not a user entry of this policy
		}
		return userCanonicalID(name, id), true
	}
	return replacePrincipals(doc, stale, legacy)
}

// replacePrincipals returns doc with each user ARN in a Principal element
// for which stale says so replaced by the ID stale gives, in every
// statement or, with allowsOnly, in the Allow statements only; doc itself
// when there is none to replace.
func replacePrincipals(doc []byte, stale func(name string) (string, bool), allowsOnly bool) ([]byte, error) {
	if !bytes.Contains(doc, []byte("user")) && !bytes.Contains(doc, []byte(`\u`)) {
		return doc, nil // names no user (an escape could spell one)
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var root map[string]any
	if err := dec.Decode(&root); err != nil {
		return nil, fmt.Errorf("iam: stored bucket policy: %w", err)
	}
	changed := false
	replace := func(v any) any {
		s, ok := v.(string)
		if !ok {
			return v
		}
		n, ok := userARNName(s)
		if !ok {
			return v
		}
		if id, ok := stale(n); ok {
			changed = true
			return id
		}
		return v
	}
	stmts, _ := root["Statement"].([]any)
	if st, ok := root["Statement"].(map[string]any); ok {
		stmts = []any{st}
	}
	for _, st := range stmts {
		m, _ := st.(map[string]any)
		if allowsOnly && m["Effect"] != "Allow" {
			continue
		}
		pr, _ := m["Principal"].(map[string]any)
		switch aws := pr["AWS"].(type) {
		case string:
			pr["AWS"] = replace(aws)
		case []any:
			for i := range aws {
				aws[i] = replace(aws[i])
			}
		}
	}
	if !changed {
		return doc, nil
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(root); err != nil {
		return nil, fmt.Errorf("iam: stored bucket policy: %w", err)
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n")), nil
}

// userARNName returns the user name of a user ARN of Coffer's account
// (arn:aws:iam::ACCOUNT:user/[PATH/]NAME, ACCOUNT 12 digits), as the
// policy package reads it.
func userARNName(s string) (string, bool) {
	rest, ok := strings.CutPrefix(s, "arn:aws:iam::")
	if !ok || len(rest) < 13 || rest[12] != ':' {
		return "", false
	}
	for _, c := range rest[:12] {
		if c < '0' || c > '9' {
			return "", false
		}
	}
	path, ok := strings.CutPrefix(rest[13:], "user/")
	if !ok {
		return "", false
	}
	return path[strings.LastIndexByte(path, '/')+1:], true
}

// splitStoredPolicy returns the document of a stored policy and its
// bindings, nil for a policy stored unbound.
func splitStoredPolicy(stored []byte) (doc []byte, ids map[string]string, err error) {
	if len(stored) == 0 || stored[0] != boundPolicyMark {
		return stored, nil, nil
	}
	n, w := binary.Uvarint(stored[1:])
	if w <= 0 || n > maxBindingsLen || uint64(len(stored)-1-w) < n {
		return nil, nil, errors.New("iam: stored bucket policy: bindings are cut short")
	}
	if err := json.Unmarshal(stored[1+w:1+w+int(n)], &ids); err != nil || ids == nil {
		return nil, nil, fmt.Errorf("iam: stored bucket policy: bindings do not parse: %v", err)
	}
	return stored[1+w+int(n):], ids, nil
}

// parseStoredBucketPolicy parses bucket's policy as stored, bound to the
// users it was bound to. The Allow statements of a policy stored before
// policies were bound are bound to the users created before users had IDs
// (ID ""): those are the ones they can have meant, never a user created
// since; its Deny statements keep matching by name, so that none stops
// applying. Bindings that do not name exactly the users the document
// names are damage, and an error, so that the bucket fails closed rather
// than lose a Deny. Errors wrap ErrPolicy.
func parseStoredBucketPolicy(bucket string, stored []byte) (*policy.Policy, error) {
	doc, ids, err := splitStoredPolicy(stored)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPolicy, err)
	}
	p, err := policy.ParseBucket(bucket, doc)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPolicy, err)
	}
	names := p.Users()
	if ids == nil {
		ids = make(map[string]string, len(names))
		for _, n := range names {
			ids[n] = ""
		}
		p.BindAllows(ids)
		return p, nil
	}
	if len(ids) != len(names) {
		return nil, fmt.Errorf("%w: stored bindings name %d users, the document %d", ErrPolicy, len(ids), len(names))
	}
	for _, n := range names {
		if _, ok := ids[n]; !ok {
			return nil, fmt.Errorf("%w: stored bindings do not name user %q", ErrPolicy, n)
		}
	}
	p.Bind(ids)
	return p, nil
}
