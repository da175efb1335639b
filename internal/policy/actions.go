package policy

import (
	"strings"
)

// Admin actions: what Coffer's admin API checks. They have no resource:
// statements with Resource "*" match them, "arn:aws:s3:::*" does not (see
// [Context.Resource]).
const (
	AdminCreateUser         = "admin:CreateUser"
	AdminDeleteUser         = "admin:DeleteUser"
	AdminListUsers          = "admin:ListUsers"
	AdminGetUser            = "admin:GetUser"
	AdminEnableUser         = "admin:EnableUser"
	AdminDisableUser        = "admin:DisableUser"
	AdminSetUserPassword    = "admin:SetUserPassword"
	AdminCreateAccessKey    = "admin:CreateAccessKey"
	AdminDeleteAccessKey    = "admin:DeleteAccessKey"
	AdminListAccessKeys     = "admin:ListAccessKeys"
	AdminUpdateAccessKey    = "admin:UpdateAccessKey"
	AdminCreateGroup        = "admin:CreateGroup"
	AdminDeleteGroup        = "admin:DeleteGroup"
	AdminListGroups         = "admin:ListGroups"
	AdminGetGroup           = "admin:GetGroup"
	AdminUpdateGroupMembers = "admin:UpdateGroupMembers"
	AdminCreatePolicy       = "admin:CreatePolicy"
	AdminDeletePolicy       = "admin:DeletePolicy"
	AdminGetPolicy          = "admin:GetPolicy"
	AdminListPolicies       = "admin:ListPolicies"
	AdminAttachPolicy       = "admin:AttachPolicy"
	AdminDetachPolicy       = "admin:DetachPolicy"
	AdminRunGC              = "admin:RunGC"
	AdminRunLifecycle       = "admin:RunLifecycle"
	AdminServerInfo         = "admin:ServerInfo"
	AdminCheckUsage         = "admin:CheckUsage"
	AdminGetAuditLog        = "admin:GetAuditLog"
	AdminSimulatePolicy     = "admin:SimulatePolicy"
)

// knownActions is every action a policy may name: all actions of the
// service prefix "s3" in the Service Authorization Reference
// (https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazons3.html),
// so that policies written for AWS parse even where Coffer does not
// implement the operation, followed by Coffer's admin actions. The
// position of an action is its bit in an actionSet.
var knownActions = [...]string{
	"s3:AbortMultipartUpload",
	"s3:AssociateAccessGrantsIdentityCenter",
	"s3:BypassGovernanceRetention",
	"s3:CreateAccessGrant",
	"s3:CreateAccessGrantsInstance",
	"s3:CreateAccessGrantsLocation",
	"s3:CreateAccessPoint",
	"s3:CreateAccessPointForObjectLambda",
	"s3:CreateBucket",
	"s3:CreateBucketMetadataTableConfiguration",
	"s3:CreateJob",
	"s3:CreateMultiRegionAccessPoint",
	"s3:CreateStorageLensGroup",
	"s3:DeleteAccessGrant",
	"s3:DeleteAccessGrantsInstance",
	"s3:DeleteAccessGrantsInstanceResourcePolicy",
	"s3:DeleteAccessGrantsLocation",
	"s3:DeleteAccessPoint",
	"s3:DeleteAccessPointForObjectLambda",
	"s3:DeleteAccessPointPolicy",
	"s3:DeleteAccessPointPolicyForObjectLambda",
	"s3:DeleteBucket",
	"s3:DeleteBucketMetadataTableConfiguration",
	"s3:DeleteBucketPolicy",
	"s3:DeleteBucketWebsite",
	"s3:DeleteJobTagging",
	"s3:DeleteMultiRegionAccessPoint",
	"s3:DeleteObject",
	"s3:DeleteObjectTagging",
	"s3:DeleteObjectVersion",
	"s3:DeleteObjectVersionTagging",
	"s3:DeleteStorageLensConfiguration",
	"s3:DeleteStorageLensConfigurationTagging",
	"s3:DeleteStorageLensGroup",
	"s3:DescribeJob",
	"s3:DescribeMultiRegionAccessPointOperation",
	"s3:DissociateAccessGrantsIdentityCenter",
	"s3:GetAccelerateConfiguration",
	"s3:GetAccessGrant",
	"s3:GetAccessGrantsInstance",
	"s3:GetAccessGrantsInstanceForPrefix",
	"s3:GetAccessGrantsInstanceResourcePolicy",
	"s3:GetAccessGrantsLocation",
	"s3:GetAccessPoint",
	"s3:GetAccessPointConfigurationForObjectLambda",
	"s3:GetAccessPointForObjectLambda",
	"s3:GetAccessPointPolicy",
	"s3:GetAccessPointPolicyForObjectLambda",
	"s3:GetAccessPointPolicyStatus",
	"s3:GetAccessPointPolicyStatusForObjectLambda",
	"s3:GetAccountPublicAccessBlock",
	"s3:GetAnalyticsConfiguration",
	"s3:GetBucketAbac",
	"s3:GetBucketAcl",
	"s3:GetBucketCORS",
	"s3:GetBucketLocation",
	"s3:GetBucketLogging",
	"s3:GetBucketMetadataTableConfiguration",
	"s3:GetBucketNotification",
	"s3:GetBucketObjectLockConfiguration",
	"s3:GetBucketOwnershipControls",
	"s3:GetBucketPolicy",
	"s3:GetBucketPolicyStatus",
	"s3:GetBucketPublicAccessBlock",
	"s3:GetBucketRequestPayment",
	"s3:GetBucketTagging",
	"s3:GetBucketVersioning",
	"s3:GetBucketWebsite",
	"s3:GetDataAccess",
	"s3:GetEncryptionConfiguration",
	"s3:GetIntelligentTieringConfiguration",
	"s3:GetInventoryConfiguration",
	"s3:GetJobTagging",
	"s3:GetLifecycleConfiguration",
	"s3:GetMetricsConfiguration",
	"s3:GetMultiRegionAccessPoint",
	"s3:GetMultiRegionAccessPointPolicy",
	"s3:GetMultiRegionAccessPointPolicyStatus",
	"s3:GetMultiRegionAccessPointRoutes",
	"s3:GetObject",
	"s3:GetObjectAcl",
	"s3:GetObjectAttributes",
	"s3:GetObjectLegalHold",
	"s3:GetObjectRetention",
	"s3:GetObjectTagging",
	"s3:GetObjectTorrent",
	"s3:GetObjectVersion",
	"s3:GetObjectVersionAcl",
	"s3:GetObjectVersionAttributes",
	"s3:GetObjectVersionForReplication",
	"s3:GetObjectVersionTagging",
	"s3:GetObjectVersionTorrent",
	"s3:GetReplicationConfiguration",
	"s3:GetStorageLensConfiguration",
	"s3:GetStorageLensConfigurationTagging",
	"s3:GetStorageLensDashboard",
	"s3:GetStorageLensGroup",
	"s3:InitiateReplication",
	"s3:ListAccessGrants",
	"s3:ListAccessGrantsInstances",
	"s3:ListAccessGrantsLocations",
	"s3:ListAccessPoints",
	"s3:ListAccessPointsForObjectLambda",
	"s3:ListAllMyBuckets",
	"s3:ListBucket",
	"s3:ListBucketMultipartUploads",
	"s3:ListBucketVersions",
	"s3:ListCallerAccessGrants",
	"s3:ListJobs",
	"s3:ListMultiRegionAccessPoints",
	"s3:ListMultipartUploadParts",
	"s3:ListStorageLensConfigurations",
	"s3:ListStorageLensGroups",
	"s3:ListTagsForResource",
	"s3:ObjectOwnerOverrideToBucketOwner",
	"s3:PauseReplication",
	"s3:PutAccelerateConfiguration",
	"s3:PutAccessGrantsInstanceResourcePolicy",
	"s3:PutAccessPointConfigurationForObjectLambda",
	"s3:PutAccessPointPolicy",
	"s3:PutAccessPointPolicyForObjectLambda",
	"s3:PutAccessPointPublicAccessBlock",
	"s3:PutAccountPublicAccessBlock",
	"s3:PutAnalyticsConfiguration",
	"s3:PutBucketAbac",
	"s3:PutBucketAcl",
	"s3:PutBucketCORS",
	"s3:PutBucketLogging",
	"s3:PutBucketNotification",
	"s3:PutBucketObjectLockConfiguration",
	"s3:PutBucketOwnershipControls",
	"s3:PutBucketPolicy",
	"s3:PutBucketPublicAccessBlock",
	"s3:PutBucketRequestPayment",
	"s3:PutBucketTagging",
	"s3:PutBucketVersioning",
	"s3:PutBucketWebsite",
	"s3:PutEncryptionConfiguration",
	"s3:PutIntelligentTieringConfiguration",
	"s3:PutInventoryConfiguration",
	"s3:PutJobTagging",
	"s3:PutLifecycleConfiguration",
	"s3:PutMetricsConfiguration",
	"s3:PutMultiRegionAccessPointPolicy",
	"s3:PutObject",
	"s3:PutObjectAcl",
	"s3:PutObjectLegalHold",
	"s3:PutObjectRetention",
	"s3:PutObjectTagging",
	"s3:PutObjectVersionAcl",
	"s3:PutObjectVersionTagging",
	"s3:PutReplicationConfiguration",
	"s3:PutStorageLensConfiguration",
	"s3:PutStorageLensConfigurationTagging",
	"s3:ReplicateDelete",
	"s3:ReplicateObject",
	"s3:ReplicateTags",
	"s3:RestoreObject",
	"s3:SubmitMultiRegionAccessPointRoutes",
	"s3:TagResource",
	"s3:UntagResource",
	"s3:UpdateAccessGrantsLocation",
	"s3:UpdateBucketMetadataInventoryTableConfiguration",
	"s3:UpdateBucketMetadataJournalTableConfiguration",
	"s3:UpdateJobPriority",
	"s3:UpdateJobStatus",
	"s3:UpdateStorageLensGroup",

	AdminCreateUser,
	AdminDeleteUser,
	AdminListUsers,
	AdminGetUser,
	AdminEnableUser,
	AdminDisableUser,
	AdminCreateAccessKey,
	AdminDeleteAccessKey,
	AdminListAccessKeys,
	AdminUpdateAccessKey,
	AdminCreateGroup,
	AdminDeleteGroup,
	AdminListGroups,
	AdminGetGroup,
	AdminUpdateGroupMembers,
	AdminCreatePolicy,
	AdminDeletePolicy,
	AdminGetPolicy,
	AdminListPolicies,
	AdminAttachPolicy,
	AdminDetachPolicy,
	AdminRunGC,
	AdminRunLifecycle,
	AdminServerInfo,
	AdminCheckUsage,
	AdminGetAuditLog,
	AdminSetUserPassword,
	AdminSimulatePolicy,
}

const numActions = len(knownActions)

// actionSet is a set of known actions, one bit per index in knownActions.
type actionSet [(numActions + 63) / 64]uint64

func (s *actionSet) add(i int)      { s[i/64] |= 1 << (i % 64) }
func (s *actionSet) has(i int) bool { return s[i/64]&(1<<(i%64)) != 0 }
func (s *actionSet) union(o *actionSet) {
	for i := range s {
		s[i] |= o[i]
	}
}

// actionIndex maps each known action, exactly as spelt in knownActions, to
// its index; actionIndexFold maps the lower-case spelling. Both are
// read-only after package initialization.
var (
	actionIndex     = buildActionIndex(false)
	actionIndexFold = buildActionIndex(true)
)

func buildActionIndex(fold bool) map[string]int {
	m := make(map[string]int, numActions)
	for i, a := range knownActions {
		if fold {
			a = strings.ToLower(a)
		}
		m[a] = i
	}
	return m
}

// lookupAction returns the index of action, whose case does not matter (as
// in AWS, action names are case-insensitive). The canonical spelling takes
// one map lookup and no allocation; another spelling allocates once.
func lookupAction(action string) (int, bool) {
	if i, ok := actionIndex[action]; ok {
		return i, true
	}
	i, ok := actionIndexFold[strings.ToLower(action)]
	return i, ok
}

// KnownAction reports whether action (without wildcards; case does not
// matter) is an action Coffer knows: any Amazon S3 IAM action or one of
// the admin actions.
func KnownAction(action string) bool {
	_, ok := lookupAction(action)
	return ok
}

// Actions returns the canonical names of all known actions: the Amazon S3
// actions of the Service Authorization Reference, then the admin actions.
func Actions() []string {
	out := make([]string, numActions)
	copy(out, knownActions[:])
	return out
}

// compileAction turns one Action or NotAction entry into the set of known
// actions it matches. An entry is "*", or SERVICE:NAME where SERVICE is
// "s3" or "admin" (any case) and NAME may use the wildcards * and ?.
// s3Only restricts the entry to the s3 service, as S3 does in bucket
// policies.
func compileAction(entry string, s3Only bool) (actionSet, error) {
	var set actionSet
	if entry == "*" {
		for i := range numActions {
			if !s3Only || strings.HasPrefix(knownActions[i], "s3:") {
				set.add(i)
			}
		}
		return set, nil
	}
	if err := checkWildcards(entry); err != nil {
		return set, err
	}
	service, name, ok := strings.Cut(entry, ":")
	if !ok || name == "" {
		return set, errorf("invalid action %q: want SERVICE:ACTION, e.g. \"s3:GetObject\"", entry)
	}
	service = strings.ToLower(service)
	switch {
	case service == "s3":
	case service == "admin" && s3Only:
		return set, errorf("Policy has invalid action %q: a bucket policy can grant only s3 actions", entry)
	case service == "admin":
	default:
		return set, errorf("unknown action %q: Coffer knows only s3:* and admin:* actions", entry)
	}
	if !strings.ContainsAny(name, "*?") {
		i, ok := lookupAction(entry)
		if !ok {
			return set, errorf("unknown action %q", entry)
		}
		set.add(i)
		return set, nil
	}
	pat := compileGlob(strings.ToLower(entry))
	for a, i := range actionIndexFold {
		if globMatch(pat, a) {
			set.add(i)
		}
	}
	if set == (actionSet{}) {
		return set, errorf("action %q matches no known action", entry)
	}
	return set, nil
}
