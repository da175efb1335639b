package iam

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/coffer-s3/coffer/internal/policy"
)

// The policy simulator answers "would this request be allowed, and why?"
// without making the request. It runs the decision of Authorize itself
// (authorize with a trace), so its verdict is the real one by
// construction; TestSimulateMatchesAuthorize checks it over a table.

// Reason says why a decision fell as it did.
type Reason string

// The reasons of a decision.
const (
	ReasonRoot         Reason = "root"          // root may do everything
	ReasonAllowed      Reason = "allowed"       // an Allow applies, no Deny does (and the key's scope allows)
	ReasonListBuckets  Reason = "list-buckets"  // s3:ListAllMyBuckets, allowed unless denied
	ReasonACL          Reason = "acl"           // an ACL grant allows what no policy does
	ReasonExplicitDeny Reason = "explicit-deny" // a Deny statement applies
	ReasonNoAllow      Reason = "no-allow"      // no statement allows (an implicit deny)
	ReasonOutsideScope Reason = "outside-scope" // the access key's own policy does not allow it
	ReasonInactive     Reason = "inactive"      // the key or user is disabled, or the key expired
	ReasonCostly       Reason = "costly"        // matching the policies' patterns against the request took too long
)

// SourceKind says where a policy evaluated for a request comes from.
type SourceKind string

// The kinds of policy a decision weighs.
const (
	SourceUser   SourceKind = "user"   // a named policy attached to the user
	SourceGroup  SourceKind = "group"  // a named policy attached to one of the user's groups
	SourceBucket SourceKind = "bucket" // the bucket's policy
	SourceKey    SourceKind = "key"    // the access key's own policy (its scope)
)

// Source names a policy evaluated for a request.
type Source struct {
	Kind      SourceKind `json:"kind"`
	Policy    string     `json:"policy,omitempty"`    // the named policy (user, group)
	User      string     `json:"user,omitempty"`      // user: the user it is attached to
	Group     string     `json:"group,omitempty"`     // group: the group it is attached to
	Bucket    string     `json:"bucket,omitempty"`    // bucket: the bucket
	AccessKey string     `json:"accessKey,omitempty"` // key: the access key
}

// String describes s for people, e.g. `policy "photos-rw" (group devs)`.
func (s Source) String() string {
	switch s.Kind {
	case SourceUser:
		return fmt.Sprintf("policy %q (attached to user %s)", s.Policy, s.User)
	case SourceGroup:
		return fmt.Sprintf("policy %q (through group %s)", s.Policy, s.Group)
	case SourceBucket:
		return "the bucket policy of " + s.Bucket
	case SourceKey:
		return "the scope of access key " + s.AccessKey
	}
	return string(s.Kind)
}

// Evaluation is one policy weighed for a request and what it said.
type Evaluation struct {
	Source
	// Decision is "Allow", "Deny" or "NotApplicable".
	Decision string `json:"decision"`
	// Statement is the 1-based position of the statement that decided in
	// its document, 0 for NotApplicable; Sid is that statement's Sid.
	Statement int    `json:"statement,omitempty"`
	Sid       string `json:"sid,omitempty"`
}

// StatementName names the deciding statement: its Sid, else its position.
func (e Evaluation) StatementName() string {
	switch {
	case e.Statement == 0:
		return ""
	case e.Sid != "":
		return fmt.Sprintf("statement %q", e.Sid)
	}
	return "statement " + strconv.Itoa(e.Statement)
}

// trace records a decision as authorize makes it. A nil *trace records
// nothing and costs nothing, which is what Authorize passes.
type trace struct {
	allowed bool
	reason  Reason
	evals   []Evaluation
}

// eval evaluates p, recording the outcome.
func (t *trace) eval(p *policy.Policy, c *policy.Context, src Source) policy.Decision {
	if t == nil {
		return p.Evaluate(c)
	}
	d, ref := p.Explain(c)
	t.evals = append(t.evals, Evaluation{Source: src, Decision: d.String(), Statement: ref.Index, Sid: ref.Sid})
	return d
}

// verdict records the decision and returns it.
func (t *trace) verdict(allowed bool, r Reason) bool {
	if t != nil {
		t.allowed, t.reason = allowed, r
	}
	return allowed
}

// SimulateInput is a request to simulate: who (exactly one of User and
// AccessKey), what and on which resource, with condition values.
type SimulateInput struct {
	// User simulates a request by the user itself, with its identity
	// policies and no key's scope (as in the web console).
	User string
	// AccessKey simulates a request signed with this key: its user's
	// policies narrowed by the key's own, if it has one. Root's key is
	// allowed everything.
	AccessKey string
	Action    Action
	Bucket    string // "" for actions on no resource
	Key       string
	Cond      Conditions
}

// Simulation is the simulator's answer.
type Simulation struct {
	Allowed bool   `json:"allowed"`
	Reason  Reason `json:"reason"`
	// Message says why in a sentence, naming the deciding statements.
	Message string `json:"message"`
	// Deciding are the evaluations that decided: the Deny for an explicit
	// deny; the Allows (and the key's scope) for an allow; the Allows and
	// the scope that did not allow, for outside-scope. Empty when nothing
	// applied.
	Deciding []Evaluation `json:"deciding"`
	// Evaluated is every policy weighed, in the order of the decision,
	// which stops at the first Deny.
	Evaluated []Evaluation `json:"evaluated"`
	// Principal is who was simulated: "root", a user name, or
	// "USER (key AKID)".
	Principal string `json:"principal"`
	Action    Action `json:"action"`
	Resource  string `json:"resource"` // the ARN, "" for none
}

// Simulate decides in as Authorize would decide the same request now, and
// explains the decision. ACL grants are not weighed (Simulate knows no
// object), so a request denied here may still be allowed by an ACL. It
// returns ErrInvalid for a malformed input (no principal or two, an
// unknown action) and ErrNotFound for an unknown user or access key.
func (m *IAM) Simulate(ctx context.Context, in SimulateInput) (Simulation, error) {
	if err := ctx.Err(); err != nil {
		return Simulation{}, err
	}
	p, who, err := m.simulatedPrincipal(in)
	if err != nil {
		return Simulation{}, err
	}
	if !policy.KnownAction(string(in.Action)) {
		return Simulation{}, fmt.Errorf("%w: unknown action %q (want one such as s3:GetObject or admin:ListUsers)", ErrInvalid, in.Action)
	}
	if in.Key != "" && in.Bucket == "" {
		return Simulation{}, fmt.Errorf("%w: an object key needs a bucket", ErrInvalid)
	}
	rq := Request{Principal: p, Action: in.Action, Bucket: in.Bucket, Key: in.Key, Cond: in.Cond}
	var tr trace
	m.authorize(&rq, &tr)
	sim := Simulation{
		Allowed: tr.allowed, Reason: tr.reason, Evaluated: nonNilEvals(tr.evals), Deciding: []Evaluation{},
		Principal: who, Action: in.Action, Resource: resourceARN(in.Bucket, in.Key),
	}
	for _, e := range sim.Evaluated {
		switch r := tr.reason; {
		case (r == ReasonExplicitDeny || r == ReasonCostly) && e.Decision == "Deny",
			(tr.allowed || r == ReasonOutsideScope) && e.Decision == "Allow",
			r == ReasonOutsideScope && e.Kind == SourceKey:
			sim.Deciding = append(sim.Deciding, e)
		}
	}
	sim.Message = sim.explain()
	return sim, nil
}

func nonNilEvals(e []Evaluation) []Evaluation {
	if e == nil {
		return []Evaluation{}
	}
	return e
}

// simulatedPrincipal returns the principal in names and how to call it.
func (m *IAM) simulatedPrincipal(in SimulateInput) (Principal, string, error) {
	switch {
	case (in.User == "") == (in.AccessKey == ""):
		return Principal{}, "", fmt.Errorf("%w: name exactly one of a user and an access key", ErrInvalid)
	case in.User != "":
		u, ok := m.snap.Load().users[in.User]
		if !ok {
			return Principal{}, "", notFound("user", in.User)
		}
		return Principal{User: in.User, UserID: u.id, Session: true}, in.User, nil
	case m.isRoot(in.AccessKey):
		return Principal{AccessKeyID: in.AccessKey, Root: true}, "root", nil
	}
	k, ok := m.snap.Load().keys[in.AccessKey]
	if !ok {
		return Principal{}, "", notFound("access key", in.AccessKey)
	}
	return Principal{AccessKeyID: in.AccessKey, User: k.user.name, UserID: k.user.id}, k.user.name + " (key " + in.AccessKey + ")", nil
}

// explain returns the sentence of Simulation.Message.
func (s *Simulation) explain() string {
	var allows []string
	var scope *Evaluation
	for i, e := range s.Deciding {
		switch {
		case e.Kind == SourceKey:
			scope = &s.Deciding[i]
		case e.Decision == "Allow":
			allows = append(allows, describe(e))
		}
	}
	switch s.Reason {
	case ReasonRoot:
		return "Allowed: root may do everything."
	case ReasonAllowed:
		msg := "Allowed by " + strings.Join(allows, " and by ") + "; no statement denies it."
		if scope != nil {
			msg = "Allowed by " + strings.Join(allows, " and by ") + ", within " + describe(*scope) + "; no statement denies it."
		}
		return msg
	case ReasonListBuckets:
		return "Allowed: every signed-in principal may list buckets unless a policy denies it; the list shows only the buckets it may use."
	case ReasonACL:
		return "Allowed by an ACL grant."
	case ReasonExplicitDeny:
		if len(s.Deciding) > 0 {
			return "Denied explicitly by " + describe(s.Deciding[len(s.Deciding)-1]) + "; a Deny overrides every Allow."
		}
		return "Denied explicitly."
	case ReasonOutsideScope:
		if len(allows) > 0 {
			return "Denied: allowed by " + strings.Join(allows, " and by ") + ", but " + scopeName(scope) + " is narrower: none of its statements allows this."
		}
		return "Denied: no policy allows this, and " + scopeName(scope) + " does not either."
	case ReasonNoAllow:
		if len(s.Evaluated) == 0 {
			return "Denied: no policy applies to this principal (an implicit deny)."
		}
		return "Denied: no statement of the " + strconv.Itoa(len(s.Evaluated)) + " " + plural(len(s.Evaluated), "policy", "policies") + " evaluated allows this (an implicit deny)."
	case ReasonCostly:
		msg := "Denied: matching the patterns of "
		if len(s.Deciding) > 0 {
			msg += describe(s.Deciding[len(s.Deciding)-1])
		} else {
			msg += "the policies"
		}
		return msg + " against this request's values took more work than a request may take (many wildcards against a long value), so it is refused."
	case ReasonInactive:
		return "Denied: the user is disabled, or the access key is disabled or has expired."
	}
	return string(s.Reason)
}

func scopeName(e *Evaluation) string {
	if e == nil {
		return "the key's scope"
	}
	return e.Source.String()
}

// describe names an evaluation's policy and statement.
func describe(e Evaluation) string {
	if n := e.StatementName(); n != "" {
		return n + " of " + e.Source.String()
	}
	return e.Source.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// ParseResource splits an S3 ARN (arn:aws:s3:::BUCKET or
// arn:aws:s3:::BUCKET/KEY) into bucket and key. "" and "*" are no
// resource (for s3:ListAllMyBuckets and admin actions). It returns
// ErrInvalid for anything else.
func ParseResource(arn string) (bucket, key string, err error) {
	if arn == "" || arn == "*" {
		return "", "", nil
	}
	rest, ok := strings.CutPrefix(arn, "arn:aws:s3:::")
	if !ok || rest == "" {
		return "", "", fmt.Errorf("%w: resource %q is not an S3 ARN (arn:aws:s3:::BUCKET or arn:aws:s3:::BUCKET/KEY)", ErrInvalid, arn)
	}
	bucket, key, _ = strings.Cut(rest, "/")
	if bucket == "" || strings.ContainsAny(bucket, "*?") {
		return "", "", fmt.Errorf("%w: resource %q must name one bucket, without wildcards", ErrInvalid, arn)
	}
	return bucket, key, nil
}

// ConditionKeys are the condition keys SetCondition accepts, in the
// spelling of the policy language.
var ConditionKeys = append([]string{
	"aws:SourceIp", "aws:SecureTransport", "aws:UserAgent", "aws:Referer",
	"s3:prefix", "s3:delimiter", "s3:max-keys", "s3:signatureversion", "s3:authType",
	"s3:ExistingObjectTag/<key>", "s3:RequestObjectTag/<key>",
}, policy.HeaderKeys()...)

// SetCondition sets the condition key name (case-insensitive, as in
// policies) to value in c, for a simulation. aws:username comes from the
// principal and aws:CurrentTime from the clock, so they cannot be set.
// It returns ErrInvalid for an unknown key or a malformed value.
func (c *Conditions) SetCondition(name, value string) error {
	lower := strings.ToLower(name)
	switch {
	case lower == "aws:sourceip":
		a, err := netip.ParseAddr(value)
		if err != nil {
			return fmt.Errorf("%w: aws:SourceIp %q is not an IP address", ErrInvalid, value)
		}
		c.SourceIP = a.Unmap()
	case lower == "aws:securetransport":
		b, err := strconv.ParseBool(value)
		if err != nil {
			return fmt.Errorf("%w: aws:SecureTransport %q is not true or false", ErrInvalid, value)
		}
		c.SecureTransport = b
	case lower == "aws:useragent":
		c.UserAgent = value
	case lower == "aws:referer":
		c.Referer = value
	case lower == "s3:prefix":
		c.Prefix = &value
	case lower == "s3:delimiter":
		c.Delimiter = &value
	case lower == "s3:max-keys":
		if _, err := strconv.ParseUint(value, 10, 32); err != nil {
			return fmt.Errorf("%w: s3:max-keys %q is not a number", ErrInvalid, value)
		}
		c.MaxKeys = &value
	case lower == "s3:signatureversion":
		c.SignatureVersion = value
	case lower == "s3:authtype":
		c.AuthType = value
	case strings.HasPrefix(lower, "s3:existingobjecttag/") && len(name) > len("s3:ExistingObjectTag/"):
		tags := map[string]string{}
		if c.ExistingObjectTags != nil {
			tags = c.ExistingObjectTags()
		}
		tags[name[len("s3:ExistingObjectTag/"):]] = value
		c.ExistingObjectTags = func() map[string]string { return tags }
	case strings.HasPrefix(lower, "s3:requestobjecttag/") && len(name) > len("s3:RequestObjectTag/"):
		if c.RequestObjectTags == nil {
			c.RequestObjectTags = map[string]string{}
		}
		c.RequestObjectTags[name[len("s3:RequestObjectTag/"):]] = value
	default:
		h, ok := policy.KeyHeader(name)
		if !ok {
			return fmt.Errorf("%w: condition key %q cannot be simulated; known keys: %s", ErrInvalid, name, strings.Join(ConditionKeys, ", "))
		}
		switch h {
		case "X-Amz-Copy-Source":
			c.CopySource = value
			return nil
		case "X-Amz-Content-Sha256":
			c.ContentSHA256 = value
			return nil
		}
		if c.Header == nil {
			c.Header = map[string][]string{}
		}
		c.Header[h] = []string{value}
	}
	return nil
}
