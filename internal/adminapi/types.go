package adminapi

import (
	"encoding/json"
	"time"

	"github.com/coffer-s3/coffer/internal/iam"
)

// PathPrefix is the path under which the server mounts the Handler.
const PathPrefix = "/_coffer/admin/"

// BasePath is the root of version 1 of the API.
const BasePath = PathPrefix + "v1"

// MaxBodySize bounds request bodies. Policy documents, the largest thing
// sent, are limited to 20 KiB by iam.
const MaxBodySize = 1 << 20

// DefaultGCGrace is the grace period of POST /gc when neither the request
// nor Deps.GCGrace names one: blobs younger than this are kept, since a
// write may still be committing them. It is the default of the server's
// gc-grace setting.
const DefaultGCGrace = time.Hour

// Error codes of the admin API besides the S3 codes of authentication
// errors (AccessDenied, InvalidAccessKeyId, SignatureDoesNotMatch, …).
const (
	CodeNoSuchEntity            = "NoSuchEntity"
	CodeEntityAlreadyExists     = "EntityAlreadyExists"
	CodeInvalidInput            = "InvalidInput"
	CodeDeleteConflict          = "DeleteConflict"
	CodeMalformedPolicyDocument = "MalformedPolicyDocument"
	CodeMalformedJSON           = "MalformedJSON"
	CodeNoSuchRoute             = "NoSuchRoute"
	CodeMethodNotAllowed        = "MethodNotAllowed"
	CodeEntityTooLarge          = "EntityTooLarge"
	CodeInvalidRequest          = "InvalidRequest"
	CodeUnexpectedContent       = "UnexpectedContent"
	CodeAccessDenied            = "AccessDenied"
	CodeInternalError           = "InternalError"
	CodeNotImplemented          = "NotImplemented"
	CodeRequestTimeout          = "RequestTimeout"
)

// The descriptions of iam entities, as the API sends them.
type (
	// UserInfo describes a user.
	UserInfo = iam.UserInfo
	// KeyInfo describes an access key, never with its secret.
	KeyInfo = iam.KeyInfo
	// NewKey is a new access key with its secret.
	NewKey = iam.NewKey
	// GroupInfo describes a group.
	GroupInfo = iam.GroupInfo
	// PolicyInfo describes a named policy.
	PolicyInfo = iam.PolicyInfo
	// Simulation is the policy simulator's answer: the verdict, why, and
	// the statements that decided.
	Simulation = iam.Simulation
)

// SimulateRequest is the body of POST /simulate: who (exactly one of
// User and AccessKey), the action, the resource as an S3 ARN
// (arn:aws:s3:::BUCKET or arn:aws:s3:::BUCKET/KEY; "" for actions on no
// resource) and condition values by key (aws:SourceIp,
// aws:SecureTransport, s3:prefix, …).
type SimulateRequest struct {
	User      string            `json:"user,omitempty"`
	AccessKey string            `json:"accessKey,omitempty"`
	Action    string            `json:"action"`
	Resource  string            `json:"resource,omitempty"`
	Context   map[string]string `json:"context,omitempty"`
}

// ErrorResponse is the body of every error response.
type ErrorResponse struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	RequestID string `json:"requestId"`
}

// UserList is the response of GET /users.
type UserList struct {
	Users []UserInfo `json:"users"`
}

// CreateUserRequest is the body of POST /users.
type CreateUserRequest struct {
	Name string `json:"name"`
}

// SetPasswordRequest is the body of POST /users/{name}/password: the
// user's new console password (8 to 1024 bytes).
type SetPasswordRequest struct {
	Password string `json:"password"`
}

// CreateUserResponse is the response of POST /users: the user's first
// access key with its secret, which is never shown again.
type CreateUserResponse struct {
	User      string `json:"user"`
	AccessKey string `json:"accessKey"`
	SecretKey string `json:"secretKey"`
}

// KeyList is the response of GET /keys.
type KeyList struct {
	Keys []KeyInfo `json:"keys"`
}

// CreateKeyRequest is the body of POST /keys.
type CreateKeyRequest struct {
	User string `json:"user"`
	// Policy, if present, scopes the key: a JSON policy document, either
	// inline or as a JSON string holding it.
	Policy      json.RawMessage `json:"policy,omitempty"`
	Description string          `json:"description,omitempty"`
	// Expires, if present, is when the key stops working (RFC 3339).
	Expires *time.Time `json:"expires,omitempty"`
}

// GroupList is the response of GET /groups.
type GroupList struct {
	Groups []GroupInfo `json:"groups"`
}

// CreateGroupRequest is the body of POST /groups.
type CreateGroupRequest struct {
	Name string `json:"name"`
}

// GroupMembersRequest is the body of POST /groups/{name}/members: users
// to add and to remove, applied together.
type GroupMembersRequest struct {
	Add    []string `json:"add,omitempty"`
	Remove []string `json:"remove,omitempty"`
}

// PolicyList is the response of GET /policies.
type PolicyList struct {
	Policies []PolicyInfo `json:"policies"`
}

// AttachRequest is the body of POST /policies/{name}/attach and /detach:
// exactly one of User and Group.
type AttachRequest struct {
	User  string `json:"user,omitempty"`
	Group string `json:"group,omitempty"`
}

// GCRequest is the body of POST /gc; the body may also be empty.
type GCRequest struct {
	// GraceSeconds keeps blobs younger than this many seconds; absent
	// means the server's gc-grace setting (Deps.GCGrace). It must not be
	// negative.
	GraceSeconds *float64 `json:"graceSeconds,omitempty"`
}

// GCResult is the response of POST /gc.
type GCResult struct {
	GraceSeconds    float64 `json:"graceSeconds"`
	Scanned         int     `json:"scanned"`
	Deleted         int     `json:"deleted"`
	DeletedBytes    int64   `json:"deletedBytes"`
	ExpiredUploads  int     `json:"expiredUploads"`
	DurationSeconds float64 `json:"durationSeconds"`
	// Elsewhere is set when no pass ran because another node of a
	// cluster (metadata on PostgreSQL) holds the GC lease.
	Elsewhere bool `json:"elsewhere,omitempty"`
}

// LifecycleRunRequest is the body of POST /lifecycle/run; the body may
// also be empty.
type LifecycleRunRequest struct {
	// Bucket limits the pass to one bucket; "" runs it over every bucket
	// with a lifecycle configuration.
	Bucket string `json:"bucket,omitempty"`
}

// LifecycleBucketResult is what a lifecycle pass did in one bucket (or,
// as Totals, in all of them).
type LifecycleBucketResult struct {
	Bucket   string `json:"bucket,omitempty"`
	Examined int    `json:"examined"`
	// ObjectsExpired counts current versions expired: deleted, or hidden
	// under a delete marker (DeleteMarkersCreated of them).
	ObjectsExpired       int    `json:"objectsExpired"`
	DeleteMarkersCreated int    `json:"deleteMarkersCreated"`
	VersionsRemoved      int    `json:"versionsRemoved"`
	DeleteMarkersRemoved int    `json:"deleteMarkersRemoved"`
	UploadsAborted       int    `json:"uploadsAborted"`
	Skipped              int    `json:"skipped"`
	DeletedBytes         int64  `json:"deletedBytes"`
	Error                string `json:"error,omitempty"`
}

// LifecycleRunResult is the response of POST /lifecycle/run.
type LifecycleRunResult struct {
	Buckets         []LifecycleBucketResult `json:"buckets"`
	Totals          LifecycleBucketResult   `json:"totals"`
	DurationSeconds float64                 `json:"durationSeconds"`
}

// Usage is what a bucket holds, counted exactly (it changes in the same
// atomic commit as the records it counts). Sizes are logical: the bytes
// clients stored.
type Usage struct {
	// Objects are the object versions stored, current and noncurrent;
	// delete markers are not counted (a bucket that holds only delete
	// markers has 0, yet is not empty: it cannot be deleted).
	Objects int64 `json:"objects"`
	Bytes   int64 `json:"bytes"` // sum of those versions' sizes
	// Uploads are the multipart uploads in progress, and PartBytes the
	// bytes of their uploaded parts: stored, but in no object yet.
	Uploads   int64 `json:"uploads"`
	PartBytes int64 `json:"partBytes"`
}

// BucketInfo describes a bucket and what it holds: the response of GET
// /buckets/{name}, and an item of GET /buckets.
type BucketInfo struct {
	Name string `json:"name"`
	// Region is the LocationConstraint the bucket was created with; ""
	// means the server's region.
	Region  string    `json:"region,omitempty"`
	Created time.Time `json:"created"`
	Usage
	// UsageCorrupt is true if the bucket's stored usage does not decode:
	// Usage is then zero, not what the bucket holds, until POST
	// /usage/check with repair resets it.
	UsageCorrupt bool `json:"usageCorrupt,omitempty"`
	// UsageHidden is true if the caller may not list the whole bucket
	// (s3:ListBucket without a prefix): Usage is then zero, since S3
	// would not tell the caller the bucket's totals either.
	UsageHidden bool `json:"usageHidden,omitempty"`
	// Public is true if the bucket's policy grants anything to everyone
	// (as S3's GetBucketPolicyStatus reports it); false, whatever the
	// policy, for a caller that may not ask S3 (s3:GetBucketPolicyStatus).
	Public bool `json:"public"`
}

// BucketList is the response of GET /buckets: the buckets the caller may
// see, in name order.
type BucketList struct {
	Buckets []BucketInfo `json:"buckets"`
}

// UsageCheckRequest is the body of POST /usage/check; the body may also be
// empty.
type UsageCheckRequest struct {
	// Repair corrects the usage of the buckets found wrong while their
	// writes go on (a corrupt value is reset with the bucket's writes held
	// off while it is recounted). Repairs run one at a time.
	Repair bool `json:"repair,omitempty"`
}

// UsageCheckResult is the response of POST /usage/check.
type UsageCheckResult struct {
	Buckets         int             `json:"buckets"`    // buckets checked
	Mismatches      []UsageMismatch `json:"mismatches"` // none when usage is right
	Repaired        int             `json:"repaired"`
	DurationSeconds float64         `json:"durationSeconds"`
}

// UsageMismatch is a bucket whose recorded usage differs from a recount
// of its records.
type UsageMismatch struct {
	Bucket  string `json:"bucket"`
	Stored  Usage  `json:"stored"`
	Counted Usage  `json:"counted"`
	// Problem says what is wrong besides the numbers, if anything (a
	// corrupt or missing value, usage or records of a bucket that does not
	// exist).
	Problem string `json:"problem,omitempty"`
}

// WhoAmI is the response of GET /whoami: who signed the request.
type WhoAmI struct {
	AccessKey string `json:"accessKey"`
	User      string `json:"user"` // "" for root
	Root      bool   `json:"root"`
}

// Error is an error response, as the Client returns it: from the admin
// API (a JSON ErrorResponse), from S3 (an XML error document), or a bare
// HTTP status whose code is derived from the status text.
type Error struct {
	Status    int
	Code      string
	Message   string
	RequestID string
}

// Error implements error.
func (e *Error) Error() string {
	s := e.Code
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.RequestID != "" {
		s += " (request id " + e.RequestID + ")"
	}
	return s
}
