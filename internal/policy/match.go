package policy

import (
	"math"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A glob is a compiled pattern: a sequence of pieces. Resource patterns,
// Action patterns and StringLike values use the wildcards * (any run of
// characters, "/" included) and ? (one character); StringEquals values
// have literal pieces only. Patterns of a 2012-10-17 policy may also hold
// policy variables, resolved against the request when matched.
type glob []piece

type pieceKind uint8

const (
	pLit  pieceKind = iota // the text lit
	pStar                  // *
	pOne                   // ?
	pVar                   // the value of key, or lit if hasDef and key is absent
)

type piece struct {
	kind   pieceKind
	hasDef bool
	key    condKey
	lit    string
}

// compileGlob compiles s, in which * and ? are wildcards and nothing else
// is special.
func compileGlob(s string) glob {
	var g glob
	for s != "" {
		i := strings.IndexAny(s, "*?")
		if i < 0 {
			g = g.appendLit(s)
			break
		}
		g = g.appendLit(s[:i])
		if s[i] == '*' {
			g = g.appendStar()
		} else {
			g = append(g, piece{kind: pOne})
		}
		s = s[i+1:]
	}
	return g
}

func (g glob) appendLit(s string) glob {
	if s == "" {
		return g
	}
	if n := len(g); n > 0 && g[n-1].kind == pLit {
		g[n-1].lit += s
		return g
	}
	return append(g, piece{kind: pLit, lit: s})
}

func (g glob) appendStar() glob {
	if n := len(g); n > 0 && g[n-1].kind == pStar {
		return g // ** is *
	}
	return append(g, piece{kind: pStar})
}

// hasVars reports whether g holds a policy variable.
func (g glob) hasVars() bool {
	for i := range g {
		if g[i].kind == pVar {
			return true
		}
	}
	return false
}

// maxWildcards bounds the wildcards (* and ?) in one policy string. The
// matcher's worst case grows with them times the length of the matched
// string, and a policy's author must not be able to make every request
// on a bucket cost milliseconds; real patterns use a handful.
const maxWildcards = 64

func checkWildcards(s string) error {
	if n := strings.Count(s, "*") + strings.Count(s, "?"); n > maxWildcards {
		return errorf("%q has %d wildcards: at most %d are allowed", truncate(s, 64), n, maxWildcards)
	}
	return nil
}

// truncate shortens s for an error message.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

// compilePattern compiles one policy string. With wildcards, * and ? are
// wildcards; without, they are literal. With vars (policy Version
// 2012-10-17), ${...} is a policy variable or one of the escapes ${*},
// ${?} and ${$}
// (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_variables.html).
func compilePattern(s string, wildcards, vars bool) (glob, error) {
	if wildcards {
		if err := checkWildcards(s); err != nil {
			return nil, err
		}
	}
	lit := func(g glob, t string) glob {
		if wildcards {
			return append(g, compileGlob(t)...).normalize()
		}
		return g.appendLit(t)
	}
	if !vars {
		return lit(nil, s), nil
	}
	var g glob
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			return lit(g, s), nil
		}
		g = lit(g, s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return nil, errorf("unterminated policy variable in %q: want ${name}", s)
		}
		p, err := parseVariable(s[i+2 : i+end])
		if err != nil {
			return nil, err
		}
		if p.kind == pLit {
			g = g.appendLit(p.lit)
		} else {
			g = append(g, p)
		}
		s = s[i+end+1:]
	}
}

// normalize returns g with adjacent literals merged and runs of stars
// collapsed, as appending compiled globs can leave them side by side.
func (g glob) normalize() glob {
	var out glob
	for _, p := range g {
		switch p.kind {
		case pLit:
			out = out.appendLit(p.lit)
		case pStar:
			out = out.appendStar()
		default:
			out = append(out, p)
		}
	}
	return out
}

// parseVariable parses the inside of ${...}: an escape (*, ?, $), a
// condition key, or a condition key with a default value in single quotes,
// as in ${aws:username, 'nobody'}, where a doubled quote stands for one.
func parseVariable(in string) (piece, error) {
	switch in {
	case "*", "?", "$":
		return piece{kind: pLit, lit: in}, nil
	}
	name, def, hasDef := strings.Cut(in, ",")
	name = strings.TrimSpace(name)
	p := piece{kind: pVar}
	if hasDef {
		def = strings.TrimSpace(def)
		if len(def) < 2 || def[0] != '\'' || def[len(def)-1] != '\'' {
			return p, errorf("invalid default value in policy variable ${%s}: want ${%s, 'value'}", in, name)
		}
		body := def[1 : len(def)-1]
		if strings.Contains(strings.ReplaceAll(body, "''", ""), "'") {
			return p, errorf("invalid default value in policy variable ${%s}: write a quote inside it as ''", in)
		}
		p.hasDef, p.lit = true, strings.ReplaceAll(body, "''", "'")
	}
	k, _, ok := lookupKey(name)
	if !ok {
		return p, errorf("unknown policy variable ${%s}: supported are %s and the escapes ${*}, ${?}, ${$}", name, variableNames())
	}
	if !keys[k].variable {
		return p, errorf("policy variable ${%s} is not supported: only string-valued keys can be variables", name)
	}
	p.key = k
	return p, nil
}

// text returns the text of piece p, a literal or a variable, resolving a
// variable against c: its value, else its default. It reports false for a
// variable with neither, whose pattern then matches nothing: "the value is
// effectively null. There is no equal or like value"
// (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_variables.html#policy-vars-no-value).
func (p *piece) text(c *Context) (string, bool) {
	if p.kind != pVar {
		return p.lit, true
	}
	if v, ok := c.str(p.key); ok {
		return v, true
	}
	return p.lit, p.hasDef
}

// globMatch reports whether s matches g, which has no variables. It has
// no work budget: it is for action names and bucket ARNs, which are
// short.
func globMatch(g glob, s string) bool {
	ok, _ := g.run(s, nil, math.MaxInt)
	return ok
}

// matchBudget bounds the matching work of one request's evaluation (every
// policy evaluated with one Context), in the matcher's steps: about 1 ms
// of a core or less. The matcher's worst case is the pattern's pieces times the
// string's length, and a policy may hold hundreds of patterns of 64
// wildcards, matched against a User-Agent or header of up to 64 KiB:
// seconds of CPU for one request, unbounded. Real policies on real
// requests take a few hundred steps. A request whose evaluation runs out
// is denied (Context.Costly).
const matchBudget = 1 << 17

// match reports whether s matches g, resolving variables against c as the
// matcher reaches them: a match reaches every piece, so a variable without
// value is always seen before a match is reported. Its work counts against
// c's budget (matchBudget): once the budget is spent, match reports false
// and marks c costly, and the evaluation denies.
func (g glob) match(s string, c *Context) bool {
	if c.spent >= matchBudget {
		c.costly = true
		return false
	}
	ok, left := g.run(s, c, matchBudget-c.spent)
	if left < 0 {
		c.spent, c.costly = matchBudget, true
		return false
	}
	c.spent = matchBudget - left
	return ok
}

// run is the matcher: the classic iterative one that backtracks only to
// the last star, so it takes O(len(g)·len(s)) steps at worst and
// allocates nothing. ? and the star's steps advance by one UTF-8
// character. It gives up, returning a negative budget, once it has taken
// budget steps; a step is one piece tried, or 64 bytes compared or
// searched.
func (g glob) run(s string, c *Context, budget int) (bool, int) {
	if len(g) > 16 && len(s) < g.minLen() {
		// Long patterns (many ? or stars) must not cost a scan of s per
		// start position when they cannot fit at all.
		return false, budget
	}
	pi, si := 0, 0
	starPi, starSi := -1, 0
	for {
		if budget--; budget < 0 {
			return false, budget
		}
		if pi < len(g) {
			switch p := &g[pi]; p.kind {
			case pStar:
				if pi == len(g)-1 {
					return true, budget // a trailing star matches any rest
				}
				starPi, starSi = pi, si
				pi++
				continue
			case pOne:
				if si < len(s) {
					_, w := utf8.DecodeRuneInString(s[si:])
					si += w
					pi++
					continue
				}
			default:
				t, ok := p.text(c)
				if !ok {
					return false, budget
				}
				budget -= len(t) >> 6
				if strings.HasPrefix(s[si:], t) {
					si += len(t)
					pi++
					continue
				}
			}
		} else if si == len(s) {
			return true, budget
		}
		// Mismatch: let the last star swallow one more character and
		// retry what follows it.
		if starPi < 0 || starSi >= len(s) {
			return false, budget
		}
		_, w := utf8.DecodeRuneInString(s[starSi:])
		starSi += w
		if next := &g[starPi+1]; next.kind != pStar && next.kind != pOne {
			// Skip straight to the next place the text can start.
			t, _ := next.text(c) // resolved before, or it would not be reached
			j := strings.Index(s[starSi:], t)
			if j < 0 {
				return false, budget - (len(s)-starSi)>>6
			}
			budget -= (j + len(t)) >> 6
			starSi += j
		}
		si, pi = starSi, starPi+1
	}
}

// minLen returns the least number of bytes a string matching g has:
// the literals' bytes and a byte per ?, counting variables as empty.
func (g glob) minLen() int {
	n := 0
	for i := range g {
		switch g[i].kind {
		case pLit:
			n += len(g[i].lit)
		case pOne:
			n++
		}
	}
	return n
}

// equal reports whether s is the text of g (whose * and ? are literal).
func (g glob) equal(s string, c *Context) bool {
	for i := range g {
		t, ok := g[i].text(c)
		if !ok || !strings.HasPrefix(s, t) {
			return false
		}
		s = s[len(t):]
	}
	return s == ""
}

// equalFold is equal ignoring case, as strings.EqualFold. A single
// literal is compared directly; other texts are joined in a stack buffer
// first, as case folding may change byte lengths.
func (g glob) equalFold(s string, c *Context) bool {
	if len(g) == 1 && g[0].kind == pLit {
		return strings.EqualFold(s, g[0].lit)
	}
	var arr [256]byte
	b := arr[:0]
	for i := range g {
		t, ok := g[i].text(c)
		if !ok {
			return false
		}
		b = append(b, t...)
	}
	return equalFoldBytes(s, b)
}

// equalFoldBytes is strings.EqualFold for a string and a byte slice.
func equalFoldBytes(s string, b []byte) bool {
	for s != "" && len(b) > 0 {
		r1, n1 := utf8.DecodeRuneInString(s)
		r2, n2 := utf8.DecodeRune(b)
		s, b = s[n1:], b[n2:]
		if r1 == r2 {
			continue
		}
		if !sameFold(r1, r2) {
			return false
		}
	}
	return s == "" && len(b) == 0
}

// sameFold reports whether r1 and r2 are equal under simple Unicode case
// folding.
func sameFold(r1, r2 rune) bool {
	for r := unicode.SimpleFold(r1); r != r1; r = unicode.SimpleFold(r) {
		if r == r2 {
			return true
		}
	}
	return false
}
