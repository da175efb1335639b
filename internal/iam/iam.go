// Package iam decides who a request comes from and whether it may do what it
// asks. Today the only principal is root; users, keys and policies (issue 3)
// arrive behind the same two seams: SecretKey (the sigv4 keyring) and
// Authorize.
package iam

import (
	"context"
	"crypto/subtle"
	"errors"

	"github.com/coffer-s3/coffer/internal/s3err"
)

// ErrUnknownKey is returned by SecretKey for an access key that does not
// exist. It matches sigv4's expectations through errors.Is on the value the
// server wires in (see server.keyring).
var ErrUnknownKey = errors.New("iam: unknown access key")

// Action is an IAM action name as it appears in policies, e.g. "s3:GetObject".
type Action string

// The S3 actions Coffer's operations map to. See
// https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazons3.html
const (
	ListAllMyBuckets           Action = "s3:ListAllMyBuckets"
	CreateBucket               Action = "s3:CreateBucket"
	DeleteBucket               Action = "s3:DeleteBucket"
	ListBucket                 Action = "s3:ListBucket"
	GetBucketLocation          Action = "s3:GetBucketLocation"
	GetBucketVersioning        Action = "s3:GetBucketVersioning"
	PutBucketVersioning        Action = "s3:PutBucketVersioning"
	GetBucketAcl               Action = "s3:GetBucketAcl"
	PutBucketAcl               Action = "s3:PutBucketAcl"
	ListBucketMultipartUploads Action = "s3:ListBucketMultipartUploads"
	GetObject                  Action = "s3:GetObject"
	PutObject                  Action = "s3:PutObject"
	DeleteObject               Action = "s3:DeleteObject"
	GetObjectAcl               Action = "s3:GetObjectAcl"
	PutObjectAcl               Action = "s3:PutObjectAcl"
	ListMultipartUploadParts   Action = "s3:ListMultipartUploadParts"
	AbortMultipartUpload       Action = "s3:AbortMultipartUpload"
	GetObjectAttributes        Action = "s3:GetObjectAttributes"
	NotImplementedAction       Action = "s3:*"
)

// Principal is an authenticated caller.
type Principal struct {
	AccessKeyID string
	Root        bool
	Anonymous   bool
}

// Request is what Authorize judges: an action on a resource by a principal.
type Request struct {
	Principal Principal
	Action    Action
	Bucket    string // "" for service-level actions
	Key       string // "" for bucket-level actions
}

// Config holds the root credentials.
type Config struct {
	RootAccessKey string
	RootSecretKey string
}

// IAM resolves access keys and authorizes requests. Safe for concurrent use.
type IAM struct {
	rootAK, rootSK []byte
}

// New returns an IAM with root credentials from cfg.
func New(cfg Config) (*IAM, error) {
	if cfg.RootAccessKey == "" || cfg.RootSecretKey == "" {
		return nil, errors.New("iam: root credentials are required")
	}
	return &IAM{rootAK: []byte(cfg.RootAccessKey), rootSK: []byte(cfg.RootSecretKey)}, nil
}

// SecretKey returns the secret of accessKeyID, or ErrUnknownKey.
func (m *IAM) SecretKey(_ context.Context, accessKeyID string) (string, error) {
	if subtle.ConstantTimeCompare([]byte(accessKeyID), m.rootAK) == 1 {
		return string(m.rootSK), nil
	}
	return "", ErrUnknownKey
}

// Principal returns the principal for an authenticated access key.
func (m *IAM) Principal(accessKeyID string) Principal {
	return Principal{AccessKeyID: accessKeyID, Root: subtle.ConstantTimeCompare([]byte(accessKeyID), m.rootAK) == 1}
}

// Authorize returns nil if the request is allowed, else an AccessDenied
// *s3err.Error. It fails closed: only root is allowed anything today.
func (m *IAM) Authorize(_ context.Context, rq Request) error {
	if rq.Principal.Root && !rq.Principal.Anonymous {
		return nil
	}
	res := rq.Bucket
	if rq.Key != "" {
		res += "/" + rq.Key
	}
	return s3err.New(s3err.AccessDenied, res)
}
