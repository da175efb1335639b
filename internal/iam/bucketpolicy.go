package iam

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

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
// document stored before policies were bound names users it is not bound
// to, and matches them by name alone until it is set again.
const boundPolicyMark = 0x01

// maxBindings bounds the bindings a stored policy may hold: at most one
// per user name in a document of policy.MaxDocumentSize bytes.
const maxBindings = 64 << 10

// BindBucketPolicy checks doc as bucket's policy, as PutBucketPolicy was
// given it, and returns the bytes to store: the document bound to the
// users it names (see above). A user it names must exist, as on AWS
// ("Invalid principal in policy"). public reports whether the policy
// grants anything to everyone (for Block Public Access). Errors wrap
// ErrPolicy.
func (m *IAM) BindBucketPolicy(bucket string, doc []byte) (stored []byte, public bool, err error) {
	p, err := policy.ParseBucket(bucket, doc)
	if err != nil {
		return nil, false, fmt.Errorf("%w: %w", ErrPolicy, err)
	}
	names := p.Users()
	if len(names) == 0 {
		return doc, p.Public(), nil
	}
	users := m.snap.Load().users
	ids := make(map[string]string, len(names))
	for _, n := range names {
		u, ok := users[n]
		if !ok {
			return nil, false, fmt.Errorf("%w: Invalid principal in policy: %q: no such user", ErrPolicy, ARN(Principal{User: n}))
		}
		ids[n] = u.id
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

// BucketPolicyDocument returns the document of a stored bucket policy,
// as PutBucketPolicy was given it (GetBucketPolicy).
func BucketPolicyDocument(stored []byte) ([]byte, error) {
	doc, _, err := splitStoredPolicy(stored)
	return doc, err
}

// splitStoredPolicy returns the document of a stored policy and its
// bindings, nil for a policy stored unbound.
func splitStoredPolicy(stored []byte) (doc []byte, ids map[string]string, err error) {
	if len(stored) == 0 || stored[0] != boundPolicyMark {
		return stored, nil, nil
	}
	n, w := binary.Uvarint(stored[1:])
	if w <= 0 || n > maxBindings || uint64(len(stored)-1-w) < n {
		return nil, nil, errors.New("iam: stored bucket policy: bindings are cut short")
	}
	j := stored[1+w : 1+w+int(n)]
	if err := json.NewDecoder(bytes.NewReader(j)).Decode(&ids); err != nil || ids == nil {
		return nil, nil, fmt.Errorf("iam: stored bucket policy: bindings do not parse: %v", err)
	}
	return stored[1+w+int(n):], ids, nil
}

// parseStoredBucketPolicy parses bucket's policy as stored, bound to the
// users it was bound to. Errors wrap ErrPolicy.
func parseStoredBucketPolicy(bucket string, stored []byte) (*policy.Policy, error) {
	doc, ids, err := splitStoredPolicy(stored)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPolicy, err)
	}
	p, err := policy.ParseBucket(bucket, doc)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPolicy, err)
	}
	if ids != nil {
		p.Bind(ids)
	}
	return p, nil
}
