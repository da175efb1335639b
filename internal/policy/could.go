package policy

import "strings"

// CouldAllowInBucket reports whether an Allow statement that applies to
// pr could allow one of actions on bucket itself or on some object in it,
// whatever the request's conditions: Conditions are ignored, ${aws:username}
// stands for username ("" for none) and other policy variables for any
// value. It is for filtering ListBuckets, where a bucket is shown if the
// caller may list or read something in it; Deny statements never hide a
// bucket here (Evaluate makes the exact decision on each request).
//
// Where it cannot be exact cheaply, the answer errs towards true: a
// NotResource entry with a policy variable other than ${aws:username} is
// taken to exclude nothing, and NotResource entries are taken to exclude
// every object of the bucket only when one entry does so by itself with
// nothing but stars after "arn:aws:s3:::BUCKET/" (as in BUCKET/* or *).
func (p *Policy) CouldAllowInBucket(pr Principal, username, bucket string, actions ...string) bool {
	c := Context{Principal: pr, Username: username}
	type act struct {
		i     int
		known bool
		lower string
	}
	acts := make([]act, len(actions))
	for i, a := range actions {
		acts[i].i, acts[i].known = lookupAction(a)
		if !acts[i].known {
			acts[i].lower = strings.ToLower(a)
		}
	}
	bucketARN := s3ARNPrefix + bucket
	for i := range p.allows() {
		s := &p.allows()[i]
		if s.principal != nil && !s.principal.match(&pr, false) {
			continue
		}
		matched := false
		for _, a := range acts {
			if s.matchAction(a.i, a.known, a.lower) {
				matched = true
				break
			}
		}
		if matched && s.couldMatchBucket(bucketARN, &c) {
			return true
		}
	}
	return false
}

// couldMatchBucket reports whether the statement's Resource or NotResource
// could match the bucket ARN or the ARN of some object in it.
func (s *statement) couldMatchBucket(bucketARN string, c *Context) bool {
	objects := bucketARN + "/"
	if !s.notResource {
		for i := range s.resources {
			g, ok := s.resources[i].probe(c, true)
			if ok && (globMatch(g, bucketARN) || someExtensionMatches(g, objects)) {
				return true
			}
		}
		return false
	}
	// NotResource: the statement applies to what no entry matches.
	bucketExcluded, objectsExcluded := false, false
	for i := range s.resources {
		g, ok := s.resources[i].probe(c, false)
		if !ok {
			continue
		}
		bucketExcluded = bucketExcluded || globMatch(g, bucketARN)
		objectsExcluded = objectsExcluded || coversAllExtensions(g, objects)
	}
	return !bucketExcluded || !objectsExcluded
}

// probe returns the resource pattern with ${aws:username} resolved from c
// and, if wild, every other variable replaced by * (its value could be
// anything). Without wild, or if the username is needed but absent (and
// the variable has no default), ok is false.
func (r *resource) probe(c *Context, wild bool) (glob, bool) {
	if !r.vars {
		return r.g, true
	}
	var g glob
	for _, p := range r.g {
		if p.kind != pVar {
			g = append(g, p)
			continue
		}
		if p.key == keyUsername {
			v, ok := c.str(keyUsername)
			if !ok {
				if !p.hasDef {
					return nil, false
				}
				v = p.lit
			}
			g = append(g, piece{kind: pLit, lit: v})
			continue
		}
		if !wild {
			return nil, false
		}
		g = append(g, piece{kind: pStar})
	}
	return g.normalize(), true
}

// unit is one step of a glob: a byte of a literal, ? or *.
type unit struct {
	kind pieceKind
	b    byte
}

func units(g glob) []unit {
	var u []unit
	for _, p := range g {
		if p.kind != pLit {
			u = append(u, unit{kind: p.kind})
			continue
		}
		for i := 0; i < len(p.lit); i++ {
			u = append(u, unit{kind: pLit, b: p.lit[i]})
		}
	}
	return u
}

// statesAfter returns the set of positions in u that matching prefix can
// end at: position i means u[:i] matched prefix (a star may go on). prefix
// is ASCII (a bucket ARN), so ? matching one byte is exact.
func statesAfter(u []unit, prefix string) []bool {
	cur := make([]bool, len(u)+1)
	next := make([]bool, len(u)+1)
	closeStars := func(set []bool) {
		for i := 0; i < len(u); i++ {
			if set[i] && u[i].kind == pStar {
				set[i+1] = true
			}
		}
	}
	cur[0] = true
	closeStars(cur)
	for j := 0; j < len(prefix); j++ {
		clear(next)
		for i := 0; i < len(u); i++ {
			if !cur[i] {
				continue
			}
			switch u[i].kind {
			case pStar:
				next[i] = true
			case pOne:
				next[i+1] = true
			default:
				if u[i].b == prefix[j] {
					next[i+1] = true
				}
			}
		}
		closeStars(next)
		cur, next = next, cur
	}
	return cur
}

// someExtensionMatches reports whether g matches prefix+x for some
// non-empty x: after prefix, some position has steps left, and every
// step can take at least one character.
func someExtensionMatches(g glob, prefix string) bool {
	u := units(g)
	states := statesAfter(u, prefix)
	for i := 0; i < len(u); i++ {
		if states[i] {
			return true
		}
	}
	return false
}

// coversAllExtensions reports whether g matches prefix+x for every
// non-empty x because, after prefix, only stars remain at some reachable
// position. (It may miss coverage by other means, such as ?*.)
func coversAllExtensions(g glob, prefix string) bool {
	u := units(g)
	states := statesAfter(u, prefix)
	for i := 0; i < len(u); i++ {
		if !states[i] {
			continue
		}
		onlyStars := true
		for _, x := range u[i:] {
			onlyStars = onlyStars && x.kind == pStar
		}
		if onlyStars {
			return true
		}
	}
	return false
}
