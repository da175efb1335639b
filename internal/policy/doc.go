// Package policy parses and evaluates AWS IAM JSON policies as S3 users
// write them: identity policies (attached to users, groups and access
// keys) and bucket policies. Parsing is strict, so a mistake is an error
// that names it rather than a statement that silently never applies;
// evaluation is precompiled and allocates nothing.
//
// # Grammar
//
// The document follows the IAM policy grammar
// (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_grammar.html):
//
//   - Top level: Version ("2012-10-17" or "2008-10-17"; without it,
//     2008-10-17, under which policy variables are literal text), Id
//     (optional) and Statement (an object or a non-empty array). Other
//     fields are errors, and so are repeated JSON member names, data after
//     the document and documents over [MaxDocumentSize] (20 KiB, S3's
//     limit for bucket policies, also applied to identity policies). A
//     pattern (Action, Resource or StringLike value) may hold at most 64
//     wildcards, which bounds the cost of matching it.
//   - Statement: Sid (optional; in identity policies unique and made of
//     ASCII letters and digits, as IAM requires), Effect
//     ("Allow" or "Deny"), Action or NotAction, Resource or NotResource,
//     Principal (bucket policies only, where it is required), Condition.
//     NotPrincipal is rejected as unsupported.
//   - Action: "*" or SERVICE:NAME with SERVICE s3 or admin, case-insensitive,
//     with the wildcards * and ?. A name without wildcards must be a
//     known action and a pattern must match one: every action of the
//     Amazon S3 Service Authorization Reference
//     (https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazons3.html)
//     and Coffer's admin actions ([AdminCreateUser] ...). Bucket policies
//     may name only s3 actions.
//   - Resource: "*" or an ARN starting arn:aws:s3:::, matched
//     case-sensitively with * and ? (which match across "/"). In a bucket
//     policy every entry must be able to name the bucket or its objects
//     (arn:aws:s3:::BUCKET, arn:aws:s3:::BUCKET/..., or a wildcard such as
//     arn:aws:s3:::* that matches them); others are "Policy has invalid
//     resource". Requests without a resource (s3:ListAllMyBuckets, admin
//     actions) are matched by Resource "*", by "arn:aws:s3:::*" for s3
//     actions only (an S3 ARN covers no IAM action on AWS either), and by
//     a Deny with NotResource, never an Allow with NotResource.
//   - Principal: "*" or {"AWS": ...} with "*", an account (a 12-digit ID or
//     arn:aws:iam::ID:root) or users (arn:aws:iam::ID:user/[PATH/]NAME).
//     Coffer has one account, so any 12-digit ID is accepted. As on AWS,
//     the account means its root user in an Allow (a user still needs its
//     own policy's grant) and every identity of the account, users
//     included, in a Deny. An ARN whose account is a tenant name
//     (arn:aws:iam::TENANT:..., as Ceph writes them) names a principal of
//     another tenant, which no request carries. "*" includes anonymous
//     requests.
//
// # Conditions
//
// Operators (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_condition_operators.html):
// String{Equals,NotEquals,EqualsIgnoreCase,NotEqualsIgnoreCase,Like,NotLike},
// Numeric{Equals,NotEquals,LessThan,LessThanEquals,GreaterThan,GreaterThanEquals},
// Date{...} likewise, Bool, IpAddress, NotIpAddress and Null, each but Null
// with the ...IfExists suffix and the ForAnyValue: and ForAllValues:
// qualifiers. The ARN and Binary operators are rejected: no supported key
// is an ARN or binary.
//
// Keys, case-insensitive: aws:SourceIp, aws:SecureTransport,
// aws:CurrentTime, aws:EpochTime, aws:username, aws:UserAgent, aws:Referer,
// s3:prefix, s3:delimiter, s3:max-keys, s3:signatureversion, s3:authType,
// s3:ExistingObjectTag/<key>, s3:RequestObjectTag/<key>,
// s3:RequestObjectTagKeys, and the request-header keys, each the value of
// a header of the request: s3:x-amz-acl, s3:x-amz-grant-read,
// s3:x-amz-grant-write, s3:x-amz-grant-read-acp, s3:x-amz-grant-write-acp,
// s3:x-amz-grant-full-control, s3:x-amz-copy-source (bucket/key, decoded,
// as AWS writes it), s3:x-amz-metadata-directive, s3:x-amz-storage-class,
// s3:x-amz-server-side-encryption, s3:if-match and s3:if-none-match; and
// s3:x-amz-content-sha256, Context.ContentSHA256: how the payload was
// verified, as the signature check decided, not a header line as sent.
// An operator must suit the key's type (string operators also apply to
// aws:SecureTransport and s3:max-keys); values are checked when parsing:
// CIDR blocks or addresses, decimal numbers, W3C ISO 8601 dates
// (https://www.w3.org/TR/NOTE-datetime) or epoch seconds, true/false.
//
// Semantics (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_condition-logic-multiple-context-keys-or-values.html):
// operators AND, keys within an operator AND, values of a key OR, and a
// negated operator holds when the key matches none of its values. A key
// absent from the request makes a positive operator false and a negated
// one true; ...IfExists makes it true; Null tests presence. All keys are
// single-valued, so for a present key ForAnyValue and ForAllValues reduce
// to the plain operator, and for an absent key ForAllValues is true and
// ForAnyValue false, with or without IfExists.
//
// # Policy variables
//
// In a 2012-10-17 policy, ${KEY} stands for a request's value of KEY in
// Resource and NotResource entries and in string condition values
// (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_variables.html).
// KEY is any supported string-valued key (aws:username, s3:prefix, ...);
// ${KEY, 'default'} gives a value for when the key is absent; ${*}, ${?}
// and ${$} are a literal *, ? and $. A substituted value is literal text,
// never a wildcard. A variable with no value makes its entry match
// nothing: a Resource entry matches no resource, a NotResource entry
// excludes none, a positive string condition finds no equal value and a
// negated one holds. Unknown variables are errors.
//
// # Evaluation
//
// [Policy.Evaluate] decides one policy as AWS does within a policy
// (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html):
// [Deny] if any applicable statement denies, else [Allow] if one allows,
// else [NotApplicable]. Combining policies (identity, bucket, key scope)
// is the caller's job.
package policy
