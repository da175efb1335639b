package policy

import (
	"math"
	"net/netip"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Decision is the outcome of evaluating one policy for a request.
type Decision uint8

const (
	// NotApplicable means no statement of the policy applies: the policy
	// neither allows nor denies (an implicit deny, unless another policy
	// allows).
	NotApplicable Decision = iota
	// Allow means an Allow statement applies and no Deny statement does.
	Allow
	// Deny means a Deny statement applies; it overrides any Allow.
	Deny
)

// String returns the name of d, e.g. "Allow".
func (d Decision) String() string {
	switch d {
	case NotApplicable:
		return "NotApplicable"
	case Allow:
		return "Allow"
	case Deny:
		return "Deny"
	}
	return "Decision(" + strconv.Itoa(int(d)) + ")"
}

// Principal is who makes the request, for matching the Principal element
// of bucket policies.
type Principal struct {
	Anonymous bool
	Root      bool
	User      string // IAM user name; "" for root and anonymous
	// UserID tells the user from others that had its name before (see
	// Policy.Bind); "" for a user created before users had IDs.
	UserID string
}

// Context is one request as the evaluator sees it.
//
// The condition keys it carries are single-valued. A key whose Has… field
// is false, or whose value is "" (zero SourceIP, zero CurrentTime) where
// no Has… field exists, is absent from the request context.
type Context struct {
	// Action is the action requested, e.g. "s3:GetObject" or
	// "admin:CreateUser".
	Action string
	// Resource is the ARN the action is on: "arn:aws:s3:::bucket" or
	// "arn:aws:s3:::bucket/key". It is "" for actions without a resource
	// (s3:ListAllMyBuckets, every admin:* action): such a request is
	// matched by statements with Resource "*", by "arn:aws:s3:::*" for an
	// s3: action only, and by a Deny with NotResource (its resource is
	// none of those listed), never by an Allow with NotResource.
	Resource string
	// Principal is who asks; it matters only for policies with a
	// Principal element (bucket policies).
	Principal Principal

	Username         string     // aws:username ("" → absent)
	SourceIP         netip.Addr // aws:SourceIp (zero → absent)
	SecureTransport  bool       // aws:SecureTransport (always present)
	CurrentTime      time.Time  // aws:CurrentTime and aws:EpochTime (zero → absent)
	Prefix           string     // s3:prefix
	HasPrefix        bool
	Delimiter        string // s3:delimiter
	HasDelimiter     bool
	MaxKeys          string // s3:max-keys, in decimal
	HasMaxKeys       bool
	UserAgent        string // aws:UserAgent ("" → absent)
	Referer          string // aws:Referer ("" → absent)
	SignatureVersion string // s3:signatureversion: "AWS4-HMAC-SHA256" or "AWS" ("" → absent)
	AuthType         string // s3:authType: "REST-HEADER" or "REST-QUERY-STRING" ("" → absent)

	// ExistingObjectTags returns the tags of the object the request is on
	// (s3:ExistingObjectTag/<key>); nil means none can be known. It is
	// called only when a condition needs it, and at most once.
	ExistingObjectTags func() map[string]string
	existingTags       map[string]string
	existingLoaded     bool
	// RequestObjectTags are the tags the request sets (x-amz-tagging or a
	// PutObjectTagging body: s3:RequestObjectTag/<key> and
	// s3:RequestObjectTagKeys); nil when it sets none.
	RequestObjectTags map[string]string
	// Header is the request's headers, keyed by canonical name as in an
	// http.Header, for the request-header keys such as s3:x-amz-acl; nil
	// when the request has none (an admin action).
	Header map[string][]string
	// CopySource is s3:x-amz-copy-source: the copy's source as bucket/key,
	// decoded, without a leading slash or version ID, as AWS's examples
	// write it ("amzn-s3-demo-bucket/public/*"); "" → absent.
	CopySource string
	// ContentSHA256 is s3:x-amz-content-sha256: how the request's payload
	// was verified, the hex SHA-256 it was checked against or the
	// x-amz-content-sha256 keyword of its mode (UNSIGNED-PAYLOAD,
	// STREAMING-…), as the signature check decided it, not as a header
	// line says it; "" → absent.
	ContentSHA256 string

	// spent is the matching work done for this context so far, and
	// costly records that it reached matchBudget.
	spent  int
	costly bool
}

// Costly reports that an evaluation with c ran out of its matching budget
// (matchBudget): the policies' patterns were too costly to match against
// this request's strings, and the evaluation denied it.
func (c *Context) Costly() bool { return c.costly }

// objectTags returns the existing object's tags, loading them once.
func (c *Context) objectTags() map[string]string {
	if !c.existingLoaded {
		c.existingLoaded = true
		if c.ExistingObjectTags != nil {
			c.existingTags = c.ExistingObjectTags()
		}
	}
	return c.existingTags
}

// requestTagKeys returns the keys of the tags the request sets, and
// whether it sets any.
func (c *Context) requestTagKeys() ([]string, bool) {
	if c.RequestObjectTags == nil {
		return nil, false
	}
	keys := make([]string, 0, len(c.RequestObjectTags))
	for k := range c.RequestObjectTags {
		keys = append(keys, k)
	}
	return keys, true
}

// condStr returns the text of the key condition c tests, tag keys
// included.
func (c *Context) condStr(cd *condition) (string, bool) {
	switch cd.key {
	case keyExistingObjectTag:
		v, ok := c.objectTags()[cd.tagKey]
		return v, ok
	case keyRequestObjectTag:
		v, ok := c.RequestObjectTags[cd.tagKey]
		return v, ok
	}
	return c.str(cd.key)
}

// has reports whether the condition key cd tests is present in c.
func (c *Context) has(cd *condition) bool {
	switch k := cd.key; k {
	case keyExistingObjectTag, keyRequestObjectTag:
		_, ok := c.condStr(cd)
		return ok
	case keySourceIP:
		return c.SourceIP.IsValid()
	case keySecureTransport:
		return true
	case keyCurrentTime, keyEpochTime:
		return !c.CurrentTime.IsZero()
	}
	_, ok := c.str(cd.key)
	return ok
}

// str returns the text of condition key k, for string operators and
// policy variables.
func (c *Context) str(k condKey) (string, bool) {
	switch k {
	case keyUsername:
		return c.Username, c.Username != ""
	case keyUserAgent:
		return c.UserAgent, c.UserAgent != ""
	case keyReferer:
		return c.Referer, c.Referer != ""
	case keyPrefix:
		return c.Prefix, c.HasPrefix
	case keyDelimiter:
		return c.Delimiter, c.HasDelimiter
	case keyMaxKeys:
		return c.MaxKeys, c.HasMaxKeys
	case keySignatureVersion:
		return c.SignatureVersion, c.SignatureVersion != ""
	case keyAuthType:
		return c.AuthType, c.AuthType != ""
	case keySecureTransport:
		if c.SecureTransport {
			return "true", true
		}
		return "false", true
	}
	if k == keyCopySource {
		return c.CopySource, c.CopySource != ""
	}
	if k == keyContentSHA256 {
		return c.ContentSHA256, c.ContentSHA256 != ""
	}
	if h, ok := requestHeaders[k]; ok {
		// Every line of a repeated header, as one comma-separated value
		// (RFC 9110), the way the request's handler reads it: a second
		// x-amz-grant-read line must not get past a condition on the first.
		v := strings.Join(textproto.MIMEHeader(c.Header).Values(h), ",")
		return v, v != ""
	}
	return "", false
}

// number returns the numeric value of condition key k, which is present.
func (c *Context) number(k condKey) (float64, bool) {
	if k == keyEpochTime {
		return float64(c.CurrentTime.Unix()), true
	}
	return parseDecimal(c.MaxKeys)
}

// Policy is a parsed policy document. It is immutable and safe for
// concurrent use.
type Policy struct {
	raw    []byte
	bucket string      // the bucket of a bucket policy; "" for an identity policy
	stmts  []statement // Deny statements first
	nDeny  int
}

// A statement is one compiled element of Statement.
type statement struct {
	sid         string
	index       int // 1-based position in the document
	effect      Decision
	notAction   bool
	actions     actionSet
	actionPats  []glob // lower-case Action entries, for actions not in knownActions
	principal   *principal
	notResource bool
	resources   []resource
	conds       []condition
}

// A resource is one Resource or NotResource entry.
type resource struct {
	g    glob
	vars bool // g holds a policy variable
	// star is set for "*" and "arn:aws:s3:::*", the entries that also
	// match requests without a resource; s3Only for the second, which
	// matches only those of S3 actions (s3:ListAllMyBuckets), not admin:*
	// ones: an S3 ARN never covers IAM's actions on AWS, and a policy
	// copied from there must not grant IAM administration.
	star, s3Only bool
}

// principal is a compiled Principal element.
type principal struct {
	anyone bool // "*"
	// account is set for the account principal (a 12-digit ID or
	// arn:aws:iam::ID:root).
	account bool
	users   []userRef
}

// userRef is a user a Principal element names: by name, and once the
// policy is bound (Policy.Bind), the ID of the user that had the name
// then.
type userRef struct {
	name  string
	id    string
	bound bool
	none  bool // bound, but to no user: it matches nobody
}

// match reports whether the request's principal is one the element
// names. The account principal means the root user in an Allow and every
// identity of the account in a Deny, as on AWS: an Allow naming the
// account delegates to it (its users still need their own policies,
// which decide for them), a Deny naming it shuts the whole account out.
func (p *principal) match(pr *Principal, deny bool) bool {
	switch {
	case p.anyone:
		return true
	case pr.Anonymous:
		return false
	case pr.Root:
		return p.account
	case p.account && deny:
		return true
	}
	for _, u := range p.users {
		if u.name == pr.User && !u.none && (!u.bound || u.id == pr.UserID) {
			return true
		}
	}
	return false
}

// Users returns the names of the users the policy's Principal elements
// name, each once, in the order they first appear: those Bind binds.
func (p *Policy) Users() []string {
	var names []string
	for i := range p.stmts {
		pr := p.stmts[i].principal
		if pr == nil {
			continue
		}
		for _, u := range pr.users {
			if !slices.Contains(names, u.name) {
				names = append(names, u.name)
			}
		}
	}
	return names
}

// Bind ties each user the Principal elements name to the ID ids gives
// its name: the user that had the name when the policy was set, as AWS
// ties a principal to its unique ID. A bound entry matches only a
// request whose Principal.UserID is that ID, so a user deleted and
// created again under the name is not the one the policy meant. A name
// ids lacks matches nobody. Bind must be called before the policy is
// used; an unbound policy (one stored before policies were bound)
// matches users by name alone.
func (p *Policy) Bind(ids map[string]string) { p.bind(ids, true) }

// BindAllows is Bind for the Allow statements only: the Deny statements
// keep matching users by name. It is for a policy set before policies
// were bound, whose Allow entries can have meant only the users that
// existed then, and whose Deny entries must not stop applying to a user
// created since: binding errs towards denying.
func (p *Policy) BindAllows(ids map[string]string) { p.bind(ids, false) }

func (p *Policy) bind(ids map[string]string, denies bool) {
	for i := range p.stmts {
		pr := p.stmts[i].principal
		if pr == nil || p.stmts[i].effect == Deny && !denies {
			continue
		}
		for j := range pr.users {
			u := &pr.users[j]
			id, ok := ids[u.name]
			u.id, u.bound, u.none = id, true, !ok
		}
	}
}

// Raw returns a copy of the document as given to ParseIdentity or
// ParseBucket (or the canned document), for GetBucketPolicy and for
// showing a policy.
func (p *Policy) Raw() []byte { return append([]byte(nil), p.raw...) }

// Evaluate decides c by the AWS evaluation logic within one policy
// (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html):
// Deny if a Deny statement applies, else Allow if an Allow statement
// applies, else NotApplicable. A statement applies when its Action (or
// NotAction), Principal if any, Resource (or NotResource) and every
// condition match. Evaluate allocates nothing for canonical action names
// (as spelt in the Service Authorization Reference).
func (p *Policy) Evaluate(c *Context) Decision {
	d, _ := p.evaluate(c)
	return d
}

// StatementRef names one statement of a policy document: its 1-based
// position and its Sid, if it has one.
type StatementRef struct {
	Index int
	Sid   string
}

// Explain decides c exactly as Evaluate does and also returns the
// statement that decided: the first Deny statement that applies, else the
// first Allow statement that applies; the zero StatementRef for
// NotApplicable.
func (p *Policy) Explain(c *Context) (Decision, StatementRef) {
	d, s := p.evaluate(c)
	if s == nil {
		return d, StatementRef{}
	}
	return d, StatementRef{Index: s.index, Sid: s.sid}
}

// evaluate is Evaluate, returning the deciding statement too (nil for
// NotApplicable).
func (p *Policy) evaluate(c *Context) (Decision, *statement) {
	if c.costly {
		return Deny, nil
	}
	ai, known := actionIndex[c.Action]
	lower := ""
	if !known {
		if ai, known = lookupAction(c.Action); !known {
			lower = strings.ToLower(c.Action)
		}
	}
	for i := range p.stmts {
		s := &p.stmts[i]
		applies := s.applies(c, ai, known, lower)
		if c.costly {
			// A match gave up (now or in an earlier policy of the
			// request): what it would have found is unknown, so the
			// request is denied (fail closed).
			return Deny, nil
		}
		if applies {
			return s.effect, s
		}
	}
	return NotApplicable, nil
}

func (s *statement) applies(c *Context, ai int, known bool, lower string) bool {
	if !s.matchAction(ai, known, lower) {
		return false
	}
	if s.principal != nil && !s.principal.match(&c.Principal, s.effect == Deny) {
		return false
	}
	if !s.matchResource(c) {
		return false
	}
	for i := range s.conds {
		if !s.conds[i].holds(c) {
			return false
		}
	}
	return true
}

// matchAction reports whether the action (index ai if known, else its
// lower-case name) matches Action, or does not match NotAction.
func (s *statement) matchAction(ai int, known bool, lower string) bool {
	var in bool
	if known {
		in = s.actions.has(ai)
	} else {
		for _, g := range s.actionPats {
			if globMatch(g, lower) {
				in = true
				break
			}
		}
	}
	return in != s.notAction
}

func (s *statement) matchResource(c *Context) bool {
	if c.Resource == "" {
		if s.notResource {
			// As on AWS, the request's resource is not among those
			// listed, so a Deny applies; an Allow does not, which keeps
			// "Allow everything but these buckets" from granting IAM
			// administration (fail closed, where AWS would allow).
			return s.effect == Deny
		}
		s3 := strings.HasPrefix(c.Action, "s3:")
		for i := range s.resources {
			if r := &s.resources[i]; r.star && (s3 || !r.s3Only) {
				return true
			}
		}
		return false
	}
	in := false
	for i := range s.resources {
		if s.resources[i].g.match(c.Resource, c) {
			in = true
			break
		}
	}
	return in != s.notResource
}

// allows returns the Allow statements.
func (p *Policy) allows() []statement { return p.stmts[p.nDeny:] }

// Public reports whether the policy allows anything to Principal "*"
// without limiting it by a Condition on aws:SourceIp, which S3 counts as
// "public" for GetBucketPolicyStatus
// (https://docs.aws.amazon.com/AmazonS3/latest/userguide/access-control-block-public-access.html#access-control-block-public-access-policy-status).
// An IpAddress condition limits only if its CIDR blocks cover less than
// half of the addresses of each family (IPv4, IPv6) they name: a /0, a /1,
// or blocks that add up to as much (0.0.0.0/1 and 128.0.0.0/1) let anyone
// in. Overlapping blocks are counted twice, which errs towards public.
func (p *Policy) Public() bool {
	for i := range p.allows() {
		s := &p.allows()[i]
		if s.principal != nil && s.principal.anyone && !limitsSourceIP(s.conds) {
			return true
		}
	}
	return false
}

func limitsSourceIP(conds []condition) bool {
	for i := range conds {
		c := &conds[i]
		if c.key != keySourceIP || c.kind != opIPAddress || c.negate || c.ifExists || c.set == setAll {
			continue
		}
		if !wideNets(c.nets) {
			return true
		}
	}
	return false
}

// wideNets reports whether the blocks of nets cover half or more of the
// IPv4 or of the IPv6 addresses (math.Ldexp: 2^(family bits − prefix)
// addresses a block, summed as floats, exact for these powers of two).
func wideNets(nets []netip.Prefix) bool {
	var v4, v6 float64
	for _, n := range nets {
		if n.Addr().Is4() {
			v4 += math.Ldexp(1, 32-n.Bits())
		} else {
			v6 += math.Ldexp(1, 128-n.Bits())
		}
	}
	return v4 >= math.Ldexp(1, 31) || v6 >= math.Ldexp(1, 127)
}
