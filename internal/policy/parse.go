package policy

import (
	"slices"
	"strings"
)

// MaxDocumentSize is the largest policy document accepted, in bytes: S3's
// limit for bucket policies ("Policies must be less than 20 KB"), applied
// to identity policies too.
const MaxDocumentSize = 20 << 10

// The policy language versions
// (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_version.html).
const (
	version2012 = "2012-10-17"
	version2008 = "2008-10-17"
)

const s3ARNPrefix = "arn:aws:s3:::"

// ParseIdentity parses an identity policy: one attached to users, groups
// or access keys. Its statements have no Principal or NotPrincipal, and
// their resources are "*" or ARNs starting arn:aws:s3:::.
func ParseIdentity(doc []byte) (*Policy, error) {
	return parse(doc, "")
}

// ParseBucket parses the bucket policy of bucket. Every statement must
// have a Principal, and every Resource or NotResource entry must be
// arn:aws:s3:::BUCKET or arn:aws:s3:::BUCKET/... (wildcards are allowed
// after the bucket name).
func ParseBucket(bucket string, doc []byte) (*Policy, error) {
	if bucket == "" || strings.ContainsAny(bucket, "/*?$") {
		return nil, errorf("invalid bucket name %q", bucket)
	}
	return parse(doc, bucket)
}

// parse parses doc as a bucket policy of bucket, or as an identity
// policy if bucket is "".
func parse(doc []byte, bucket string) (*Policy, error) {
	if len(doc) > MaxDocumentSize {
		return nil, errorf("document is %d bytes: policies must be less than 20 KB (%d bytes)", len(doc), MaxDocumentSize)
	}
	if len(strings.TrimSpace(string(doc))) == 0 {
		return nil, errorf("document is empty")
	}
	root, err := decodeJSON(doc)
	if err != nil {
		return nil, err
	}
	if root.kind != jObject {
		return nil, errorf("a policy must be a JSON object, not %s", root.describe())
	}
	var (
		version = version2008 // "If you do not include a Version element, the value defaults to 2008-10-17"
		stmts   *jvalue
	)
	for i := range root.obj {
		m := &root.obj[i]
		switch m.key {
		case "Version":
			if m.val.kind != jString || m.val.str != version2012 && m.val.str != version2008 {
				return nil, errorf("unsupported Version %s: want %q (or the older %q)", quoted(&m.val), version2012, version2008)
			}
			version = m.val.str
		case "Id":
			if m.val.kind != jString {
				return nil, errorf("Id must be a string, not %s", m.val.describe())
			}
		case "Statement":
			stmts = &m.val
		default:
			return nil, errorf("unknown field %q in the policy document: want Version, Id and Statement (names are case-sensitive)", m.key)
		}
	}
	if stmts == nil {
		return nil, errorf("missing required field Statement")
	}
	list := []jvalue{*stmts}
	if stmts.kind == jArray {
		list = stmts.arr
	}
	if len(list) == 0 {
		return nil, errorf("Statement must not be empty")
	}
	p := &Policy{raw: append([]byte(nil), doc...), bucket: bucket}
	c := compiler{vars: version == version2012, bucket: bucket}
	sids := map[string]bool{}
	var allows []statement
	for i := range list {
		s, err := c.statement(&list[i])
		if err != nil {
			e, _ := err.(*Error)
			if e == nil {
				e = errorf("%s", err.Error())
			}
			e.Statement, e.Sid = i+1, s.sid
			return nil, e
		}
		s.index = i + 1
		// IAM requires unique Sids; S3 keeps bucket policies whose
		// statements share one (cloud-custodian/cloud-custodian#3609 met
		// them in the wild), so Coffer does too.
		if s.sid != "" && bucket == "" {
			if sids[s.sid] {
				return nil, &Error{Statement: i + 1, Sid: s.sid, Msg: "Statement IDs (Sid) must be unique within a policy"}
			}
			sids[s.sid] = true
		}
		if s.effect == Deny {
			p.stmts = append(p.stmts, s)
		} else {
			allows = append(allows, s)
		}
	}
	p.nDeny = len(p.stmts)
	p.stmts = append(p.stmts, allows...)
	return p, nil
}

func quoted(v *jvalue) string {
	if v.kind == jString {
		return `"` + v.str + `"`
	}
	return v.describe()
}

// compiler compiles statements of one document.
type compiler struct {
	vars   bool   // substitute policy variables (Version 2012-10-17)
	bucket string // "" for an identity policy
}

// statement compiles one statement. On error it still returns the Sid, if
// it was read, for the error message.
func (c *compiler) statement(v *jvalue) (statement, error) {
	var s statement
	if v.kind != jObject {
		return s, errorf("a statement must be a JSON object, not %s", v.describe())
	}
	if sid, ok := v.member("Sid"); ok && sid.kind == jString {
		s.sid = sid.str
	}
	var (
		action, notAction, resource, notResource, prin, cond *jvalue
		effectSeen                                           bool
	)
	for i := range v.obj {
		m := &v.obj[i]
		switch m.key {
		case "Sid":
			if err := c.checkSid(&m.val); err != nil {
				return s, err
			}
		case "Effect":
			switch {
			case m.val.kind == jString && m.val.str == "Allow":
				s.effect = Allow
			case m.val.kind == jString && m.val.str == "Deny":
				s.effect = Deny
			default:
				return s, errorf(`Effect must be "Allow" or "Deny", not %s`, quoted(&m.val))
			}
			effectSeen = true
		case "Action":
			action = &m.val
		case "NotAction":
			notAction = &m.val
		case "Resource":
			resource = &m.val
		case "NotResource":
			notResource = &m.val
		case "Principal":
			prin = &m.val
		case "NotPrincipal":
			if c.bucket == "" {
				return s, errorf("an identity policy must not specify a principal: remove NotPrincipal")
			}
			return s, errorf("NotPrincipal is not supported: use Principal with a Deny statement or a Condition on aws:username instead")
		case "Condition":
			cond = &m.val
		default:
			return s, errorf("unknown field %q: want Sid, Effect, Principal, Action, NotAction, Resource, NotResource, Condition (names are case-sensitive)", m.key)
		}
	}
	if !effectSeen {
		return s, errorf("missing required field Effect")
	}
	if err := c.actions(&s, action, notAction); err != nil {
		return s, err
	}
	if err := c.principal(&s, prin); err != nil {
		return s, err
	}
	if err := c.resources(&s, resource, notResource); err != nil {
		return s, err
	}
	if cond != nil {
		conds, err := compileConditions(cond, c.vars)
		if err != nil {
			return s, err
		}
		s.conds = conds
	}
	return s, nil
}

// checkSid checks a Sid: a string, and in identity policies only ASCII
// letters and digits, as IAM requires
// (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_sid.html).
// S3 allows spaces and punctuation in bucket policies' Sids.
func (c *compiler) checkSid(v *jvalue) error {
	if v.kind != jString {
		return errorf("Sid must be a string, not %s", v.describe())
	}
	if c.bucket != "" {
		return nil
	}
	for _, r := range v.str {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9') {
			return errorf("Sid %q may contain only ASCII letters and digits", v.str)
		}
	}
	return nil
}

// stringList returns a string or non-empty array of strings.
func stringList(field string, v *jvalue) ([]string, error) {
	if v.kind == jString {
		return []string{v.str}, nil
	}
	if v.kind != jArray {
		return nil, errorf("%s must be a string or an array of strings, not %s", field, v.describe())
	}
	if len(v.arr) == 0 {
		return nil, errorf("%s must not be empty", field)
	}
	out := make([]string, len(v.arr))
	for i := range v.arr {
		if v.arr[i].kind != jString {
			return nil, errorf("%s must be a string or an array of strings, but holds %s", field, v.arr[i].describe())
		}
		out[i] = v.arr[i].str
	}
	return out, nil
}

func (c *compiler) actions(s *statement, action, notAction *jvalue) error {
	field, v := "Action", action
	switch {
	case action != nil && notAction != nil:
		return errorf("a statement must not have both Action and NotAction")
	case action == nil && notAction == nil:
		return errorf("missing required field Action (or NotAction)")
	case notAction != nil:
		field, v, s.notAction = "NotAction", notAction, true
	}
	entries, err := stringList(field, v)
	if err != nil {
		return err
	}
	for _, e := range entries {
		set, err := compileAction(e, c.bucket != "")
		if err != nil {
			return err
		}
		s.actions.union(&set)
		s.actionPats = append(s.actionPats, compileGlob(strings.ToLower(e)))
	}
	return nil
}

func (c *compiler) resources(s *statement, resource, notResource *jvalue) error {
	field, v := "Resource", resource
	switch {
	case resource != nil && notResource != nil:
		return errorf("a statement must not have both Resource and NotResource")
	case resource == nil && notResource == nil:
		return errorf("missing required field Resource (or NotResource)")
	case notResource != nil:
		field, v, s.notResource = "NotResource", notResource, true
	}
	entries, err := stringList(field, v)
	if err != nil {
		return err
	}
	for _, e := range entries {
		r, err := c.resource(e)
		if err != nil {
			return err
		}
		s.resources = append(s.resources, r)
	}
	return nil
}

// resource compiles one Resource or NotResource entry.
func (c *compiler) resource(e string) (resource, error) {
	if c.bucket != "" && !namesBucket(e, c.bucket) {
		return resource{}, errorf("Policy has invalid resource %q: a policy of bucket %q may name only arn:aws:s3:::%s and arn:aws:s3:::%s/...", e, c.bucket, c.bucket, c.bucket)
	}
	if e == "*" {
		return resource{g: compileGlob(e), star: true}, nil
	}
	rest, ok := strings.CutPrefix(e, s3ARNPrefix)
	if !ok {
		if strings.HasPrefix(e, "arn:") {
			return resource{}, errorf("invalid resource %q: Coffer's resources are S3 ARNs, arn:aws:s3:::BUCKET[/KEY]", e)
		}
		return resource{}, errorf("invalid resource %q: want \"*\" or an ARN starting with arn:aws:s3:::", e)
	}
	if rest == "" {
		return resource{}, errorf("invalid resource %q: the ARN names no bucket", e)
	}
	g, err := compilePattern(e, true, c.vars)
	if err != nil {
		return resource{}, err
	}
	return resource{g: g, vars: g.hasVars(), star: e == s3ARNPrefix+"*", s3Only: e == s3ARNPrefix+"*"}, nil
}

// principal compiles the Principal element: required in bucket policies,
// forbidden in identity policies.
func (c *compiler) principal(s *statement, v *jvalue) error {
	if c.bucket == "" {
		if v != nil {
			return errorf("an identity policy must not specify a principal: remove Principal")
		}
		return nil
	}
	if v == nil {
		return errorf("missing required field Principal")
	}
	p := &principal{}
	s.principal = p
	if v.kind == jString {
		if v.str != "*" {
			return errorf(`invalid Principal %q: want "*" or {"AWS": ...}`, v.str)
		}
		p.anyone = true
		return nil
	}
	if v.kind != jObject {
		return errorf(`Principal must be "*" or a JSON object, not %s`, v.describe())
	}
	if len(v.obj) == 0 {
		return errorf("Principal must not be empty")
	}
	for _, m := range v.obj {
		if m.key != "AWS" {
			return errorf(`principal type %q is not supported: Coffer has only "AWS" principals`, m.key)
		}
		ids, err := stringList("Principal AWS", &m.val)
		if err != nil {
			return err
		}
		for _, id := range ids {
			if err := p.add(id); err != nil {
				return err
			}
		}
	}
	return nil
}

// add adds one AWS principal: "*" (everyone, anonymous included), the
// account (a 12-digit ID or arn:aws:iam::ID:root; see principal.match)
// or a user, arn:aws:iam::ID:user/[PATH/]NAME. Coffer has one
// account, so the ID is not checked beyond its form. As in AWS, wildcards
// are not allowed in principal ARNs
// (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_principal.html).
func (p *principal) add(id string) error {
	if id == "*" {
		p.anyone = true
		return nil
	}
	if isAccountID(id) {
		p.account = true
		return nil
	}
	bad := func(why string) error {
		return errorf("Invalid principal in policy: %q: %s", id, why)
	}
	rest, ok := strings.CutPrefix(id, "arn:aws:iam::")
	if !ok {
		return bad(`want "*", an account ID, arn:aws:iam::ACCOUNT:root or arn:aws:iam::ACCOUNT:user/NAME`)
	}
	account, res, ok := strings.Cut(rest, ":")
	if !ok || account == "" {
		return bad("the account must be a 12-digit account ID")
	}
	if !isAccountID(account) {
		if !isTenant(account) {
			return bad("the account must be a 12-digit account ID")
		}
		// Another tenant's principal (Ceph names tenants so): Coffer has
		// none, so it matches no request, and that is enforced exactly.
		return nil
	}
	if strings.ContainsAny(res, "*?") {
		return bad("principal ARNs cannot hold wildcards; use a Condition on aws:username")
	}
	if res == "root" {
		p.account = true
		return nil
	}
	path, ok := strings.CutPrefix(res, "user/")
	if !ok {
		return bad("Coffer's principals are the account root and users")
	}
	name := path[strings.LastIndexByte(path, '/')+1:]
	if name == "" {
		return bad("the user name is empty")
	}
	p.users = append(p.users, userRef{name: name})
	return nil
}

func isAccountID(s string) bool { return len(s) == 12 && allDigits(s) }

// isTenant reports whether s can name a tenant in a principal ARN: 1 to 64
// letters, digits, '-' and '_', not all digits (those are account IDs).
func isTenant(s string) bool {
	if len(s) == 0 || len(s) > 64 || allDigits(s) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// namesBucket reports whether the resource pattern e of a policy of bucket
// can name the bucket or one of its objects: it matches
// arn:aws:s3:::bucket, or some ARN under arn:aws:s3:::bucket/. Wildcards
// count ("*", "arn:aws:s3:::*/*" and "arn:aws:s3:::bu*" qualify: a
// bucket policy governs requests to its own bucket only, so they apply to
// it); a pattern that can name only other buckets cannot. A policy
// variable may stand for anything.
func namesBucket(e, bucket string) bool {
	arn := s3ARNPrefix + bucket
	return globCanMatch(e, arn, false) || globCanMatch(e, arn+"/", true)
}

// globCanMatch reports whether pattern (with * and ? wildcards, and ${…}
// variables taken as *) matches s exactly or, with prefix, matches some
// string that starts with s. It tracks the set of pattern positions
// reachable after each byte of s: O(len(pattern)·len(s)), whatever the
// wildcards.
func globCanMatch(pattern, s string, prefix bool) bool {
	var p []byte
	for i := 0; i < len(pattern); i++ {
		if pattern[i] == '$' && i+1 < len(pattern) && pattern[i+1] == '{' {
			if end := strings.IndexByte(pattern[i:], '}'); end > 0 {
				p = append(p, '*')
				i += end
				continue
			}
		}
		p = append(p, pattern[i])
	}
	cur := make([]bool, len(p)+1)
	next := make([]bool, len(p)+1)
	closure := func(set []bool) {
		for i := range p { // a star also matches nothing
			if set[i] && p[i] == '*' {
				set[i+1] = true
			}
		}
	}
	cur[0] = true
	closure(cur)
	for j := 0; j < len(s); j++ {
		clear(next)
		alive := false
		for i := range p {
			if !cur[i] {
				continue
			}
			switch p[i] {
			case '*':
				next[i], alive = true, true
			case '?', s[j]:
				next[i+1], alive = true, true
			}
		}
		if !alive {
			return false
		}
		closure(next)
		cur, next = next, cur
	}
	if prefix {
		return slices.Contains(cur, true)
	}
	return cur[len(p)]
}
