// Package adminapi is Coffer's administration API: a JSON-over-HTTP
// interface to the users, access keys, groups and policies of package iam
// to buckets and their usage, and to garbage collection, served on the S3 listener under PathPrefix,
// and the Go client that the `coffer admin` command uses.
//
// # Transport
//
// The server mounts the Handler for every path-style request whose path
// starts with PathPrefix; an underscore is never part of a bucket name, so
// the API cannot shadow a bucket. Version 1 lives under BasePath
// (/_coffer/admin/v1).
//
// Every request is signed with AWS Signature Version 4, as S3 requests are
// (header authentication; a presigned URL works too if it signs the
// payload hash), and must sign its payload: x-amz-content-sha256 is the hex
// SHA-256 of the body. UNSIGNED-PAYLOAD, the aws-chunked streaming modes
// and Signature Version 2 are refused with 400 InvalidRequest: an
// administrative change must not be replayable with another body.
// Anonymous requests are refused with 403 AccessDenied.
//
// After authentication, each endpoint asks iam to authorize its action
// (for example admin:CreateUser) for the caller, with no bucket or key:
// root may do everything; a user needs an identity policy that allows the
// action. GET /whoami needs authentication only.
//
// Request bodies are JSON objects of at most MaxBodySize bytes with no
// unknown fields and nothing after the object; PUT /policies/{name} takes
// the policy document itself. Responses are JSON (Content-Type
// application/json) or empty (204), and always carry x-amz-request-id.
//
// # Endpoints
//
//	GET    /users                       admin:ListUsers         → UserList
//	POST   /users                       admin:CreateUser        CreateUserRequest → CreateUserResponse
//	GET    /users/{name}                admin:GetUser           → UserInfo
//	DELETE /users/{name}                admin:DeleteUser        → 204
//	POST   /users/{name}/disable        admin:DisableUser       → 204
//	POST   /users/{name}/enable         admin:EnableUser        → 204
//	POST   /users/{name}/password       admin:SetUserPassword   SetPasswordRequest → 204
//	GET    /keys[?user=NAME]            admin:ListAccessKeys    → KeyList
//	POST   /keys                        admin:CreateAccessKey   CreateKeyRequest → NewKey
//	GET    /keys/{accessKey}            admin:ListAccessKeys    → KeyInfo
//	DELETE /keys/{accessKey}            admin:DeleteAccessKey   → 204
//	POST   /keys/{accessKey}/disable    admin:UpdateAccessKey   → 204
//	POST   /keys/{accessKey}/enable     admin:UpdateAccessKey   → 204
//	POST   /keys/{accessKey}/rotate     admin:UpdateAccessKey   → NewKey (and admin:CreateAccessKey, admin:DeleteAccessKey)
//	GET    /groups                      admin:ListGroups        → GroupList
//	POST   /groups                      admin:CreateGroup       CreateGroupRequest → 204
//	GET    /groups/{name}               admin:GetGroup          → GroupInfo
//	DELETE /groups/{name}               admin:DeleteGroup       → 204
//	POST   /groups/{name}/members       admin:UpdateGroupMembers GroupMembersRequest → 204
//	GET    /policies                    admin:ListPolicies      → PolicyList
//	PUT    /policies/{name}             admin:CreatePolicy      policy document → 204
//	GET    /policies/{name}             admin:GetPolicy         → PolicyInfo
//	DELETE /policies/{name}             admin:DeletePolicy      → 204
//	POST   /policies/{name}/attach      admin:AttachPolicy      AttachRequest → 204
//	POST   /policies/{name}/detach      admin:DetachPolicy      AttachRequest → 204
//	POST   /simulate                    admin:SimulatePolicy    SimulateRequest → Simulation
//	GET    /buckets                     s3:ListAllMyBuckets     → BucketList
//	GET    /buckets/{name}              s3:ListAllMyBuckets     → BucketInfo
//	POST   /gc                          admin:RunGC             GCRequest → GCResult
//	POST   /lifecycle/run               admin:RunLifecycle      LifecycleRunRequest → LifecycleRunResult
//	POST   /usage/check                 admin:CheckUsage        UsageCheckRequest → UsageCheckResult
//	GET    /audit?filters               admin:GetAuditLog       → AuditPage (newest first)
//	GET    /audit/export?filters        admin:GetAuditLog       → JSON Lines, oldest first
//	GET    /whoami                      (authentication only)   → WhoAmI
//
// Path segments are percent-decoded; names are validated by iam.
//
// POST /simulate is the policy simulator: whether a user (its identity
// policies) or an access key (its user's, narrowed by the key's scope)
// may do an action on a resource with given condition values, decided by
// the code that decides real requests (iam.Simulate), with the reason and
// the statements that decided. A denial is a 200 answer with "allowed":
// false; errors are for malformed questions (400 InvalidInput) and
// unknown users or keys (404 NoSuchEntity).
//
// The bucket endpoints answer with what a bucket holds (objects, bytes,
// multipart uploads and their part bytes), counted exactly by the metadata
// store. Like S3's ListBuckets, which needs s3:ListAllMyBuckets, they show
// only the buckets the caller may see (iam.CanSeeBucket: root sees all, a
// user those its policies or theirs let it list or read); asking for
// another is AccessDenied whether or not it exists. POST /usage/check
// recounts every bucket from its records and reports (and with "repair"
// corrects) any difference; it needs admin:CheckUsage.
//
// # Errors
//
// An error response is an ErrorResponse: {"code", "message", "requestId"}.
// The codes:
//
//	400 InvalidInput             iam.ErrInvalid, or a request that is not well formed
//	400 MalformedPolicyDocument  iam.ErrPolicy
//	400 MalformedJSON            a body that is not the expected JSON object
//	400 InvalidRequest           the payload is not signed
//	403 AccessDenied             anonymous, or not allowed by policy
//	403 InvalidAccessKeyId, SignatureDoesNotMatch, RequestTimeTooSkewed, …
//	                             authentication failures, as S3 reports them
//	404 NoSuchEntity             iam.ErrNotFound
//	404 NoSuchBucket             GET /buckets/{name} of a bucket that does not exist
//	404 NoSuchRoute              no endpoint at this path
//	405 MethodNotAllowed         the path exists, the method does not (see Allow)
//	409 EntityAlreadyExists      iam.ErrExists
//	409 DeleteConflict           iam.ErrInUse
//	413 EntityTooLarge           a body over MaxBodySize
//	500 InternalError            anything else; the detail is logged, not sent
//	501 NotImplemented           garbage collection or bucket information is not available
//	503 ServiceUnavailable       the metadata store failed (Deps.Unavailable): every change,
//	                             and any request that would otherwise answer 500
//
// The Client returns every error response as an *Error.
package adminapi
