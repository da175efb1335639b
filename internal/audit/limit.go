package audit

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// MaxFieldBytes is the most bytes of each string field that RecordBounded
// keeps. A longer string is cut at a UTF-8 boundary and ends in "…", in
// at most MaxFieldBytes bytes.
const MaxFieldBytes = 128

// window is the period over which RecordBounded counts events per source.
const window = time.Minute

// ellipsis marks a cut string.
const ellipsis = "…"

// The most bytes of each string field that Record keeps: what the
// longest legitimate value needs (an S3 key is at most 1,024 bytes; a
// console deletion's Target names up to 20 keys), so that an event of
// any principal stays small whatever it sends (a path segment of 60,000
// bytes, say).
const (
	MaxTrustedFieldBytes  = 2 << 10
	MaxTrustedTargetBytes = 24 << 10
)

// truncate returns s if it fits in MaxFieldBytes, else its start, cut at
// a rune boundary, and "…", in a new string that does not keep s's memory
// alive.
func truncate(s string) string { return truncateTo(s, MaxFieldBytes) }

// truncateTo is truncate with max bytes instead of MaxFieldBytes.
func truncateTo(s string, max int) string {
	if len(s) <= max {
		return s
	}
	n := max - len(ellipsis)
	// Back up to the start of a rune, unless s is not UTF-8 there (a key
	// may hold any bytes), so that the cut makes no invalid sequence.
	for i := n; i > n-utf8.UTFMax && i > 0; i-- {
		if utf8.RuneStart(s[i]) {
			n = i
			break
		}
	}
	return s[:n] + ellipsis
}

// truncateTrusted cuts every string field of e to MaxTrustedFieldBytes,
// its Target to MaxTrustedTargetBytes.
func truncateTrusted(e *Event) {
	const m = MaxTrustedFieldBytes
	e.Source, e.Op, e.Code = truncateTo(e.Source, m), truncateTo(e.Op, m), truncateTo(e.Code, m)
	e.Bucket, e.Key = truncateTo(e.Bucket, m), truncateTo(e.Key, m)
	e.User, e.AccessKey = truncateTo(e.User, m), truncateTo(e.AccessKey, m)
	e.SourceIP, e.RequestID = truncateTo(e.SourceIP, m), truncateTo(e.RequestID, m)
	e.Target = truncateTo(e.Target, MaxTrustedTargetBytes)
}

// truncateEvent cuts every string field of e to MaxFieldBytes.
func truncateEvent(e *Event) {
	for _, p := range []*string{&e.Source, &e.Op, &e.Code, &e.Bucket, &e.Key, &e.Target,
		&e.User, &e.AccessKey, &e.SourceIP, &e.RequestID} {
		*p = truncate(*p)
	}
}

// sourceKey is what RecordBounded counts events by: one client network
// getting one outcome from one kind of source (S3, admin, console), as
// one user. The network is the client's IPv4 address, or the /64 of its
// IPv6 address (what one subscriber gets). Nothing a stranger chooses
// freely is part of it: one address cycling through made-up access key
// IDs used to be a new source with every key. The user is: a request
// carries one only once its signature or session verified (a failed
// console sign-in names an existing user, of which there are few), so a
// signed-in user refused behind a busy NAT keeps events of its own.
type sourceKey struct {
	source  string
	net     netip.Addr // the IPv4 address or the IPv6 /64's first address; invalid if SourceIP is no IP
	raw     string     // SourceIP when it is no IP (a test's, or a Unix socket's), else ""
	user    string
	outcome outcome
}

// sourceKeyOf returns the source of e. It allocates nothing.
func sourceKeyOf(e *Event) sourceKey {
	k := sourceKey{source: e.Source, user: e.User, outcome: outcomeOf(e.Status)}
	a, err := netip.ParseAddr(e.SourceIP)
	if err != nil {
		k.raw = e.SourceIP
		return k
	}
	a = a.Unmap().WithZone("")
	if a.Is6() {
		p, _ := a.Prefix(ipv6Prefix)
		a = p.Addr()
	}
	k.net = a
	return k
}

// ipv6Prefix is the length of the IPv6 prefix counted as one client: a
// subscriber's /64 holds more addresses than anyone could cycle through.
const ipv6Prefix = 64

// clone returns k with strings of its own, so that a key kept for a
// minute holds no request's memory alive.
func (k sourceKey) clone() sourceKey {
	k.source, k.raw, k.user = strings.Clone(k.source), strings.Clone(k.raw), strings.Clone(k.user)
	return k
}

// sourceIP returns what a summary of k's events that differ in their
// address says in SourceIP: the IPv6 network, as "2001:db8:1:2::/64".
func (k sourceKey) sourceIP() string {
	switch {
	case !k.net.IsValid():
		return ""
	case k.net.Is6():
		return netip.PrefixFrom(k.net, ipv6Prefix).String()
	}
	return k.net.String()
}

// An outcome is a class of HTTP statuses. A summary stands for events of
// one outcome, so that a filter on the status (Filter.Failed,
// Filter.Succeeded) counts it with the events it stands for.
type outcome uint8

// The outcomes.
const (
	outcomeOK          outcome = iota // below 400: anonymous requests that were served
	outcomeRefused                    // 401, 403: refused
	outcomeClientError                // other 4xx (and 499, the client went away)
	outcomeServerError                // 5xx
	numOutcomes
)

// outcomeOf returns the outcome of HTTP status status.
func outcomeOf(status int) outcome {
	switch {
	case status < 400:
		return outcomeOK
	case status == 401 || status == 403:
		return outcomeRefused
	case status < 500:
		return outcomeClientError
	}
	return outcomeServerError
}

// status returns the status a summary of events of outcome o with
// different statuses gets: one of the class, the most common.
func (o outcome) status() int {
	return [numOutcomes]int{200, 403, 400, 500}[o]
}

// what names the requests of outcome o in a summary's Target.
func (o outcome) what() string {
	return [numOutcomes]string{"unauthenticated requests", "refused requests", "failed requests", "requests that failed with a server error"}[o]
}

// otherKey is what the sources past the limit are counted by: every
// summary keeps its source and the class of its status.
type otherKey struct {
	source  string
	outcome outcome
}

// maxOthers bounds the tallies of the sources past the limit: one per
// Event.Source and outcome, of which there are 3×4 (s3, admin and
// console record bounded events). Past it (another Source) an event is
// counted with one of its outcome, so the bound holds whatever comes.
const maxOthers = 12

// tally counts the events of one source, or of the sources past the
// limit, that were not recorded in full in a window.
type tally struct {
	full int   // events of the source recorded in full
	n    int64 // events counted instead
	// like holds what the counted events have in common: each field of
	// the first counted event, cleared (to "" or 0) once an event differs
	// in it. Its strings are its own.
	like              Event
	bytesIn, bytesOut int64
	first, last       time.Time // of the counted events
	mixed             bool      // the counted events have different statuses
}

// count adds e to t.
func (t *tally) count(e *Event) {
	t.bytesIn += e.BytesIn
	t.bytesOut += e.BytesOut
	t.n++
	if t.n == 1 || e.Time.Before(t.first) {
		t.first = e.Time
	}
	if t.n == 1 || e.Time.After(t.last) {
		t.last = e.Time
	}
	if t.n == 1 {
		t.like = Event{
			Source: strings.Clone(e.Source), Op: strings.Clone(e.Op), Status: e.Status,
			Code: strings.Clone(e.Code), Bucket: strings.Clone(e.Bucket), User: strings.Clone(e.User),
			AccessKey: strings.Clone(e.AccessKey), SourceIP: strings.Clone(e.SourceIP),
		}
		return
	}
	for _, f := range []struct {
		p *string
		v string
	}{
		{&t.like.Source, e.Source}, {&t.like.Op, e.Op}, {&t.like.Code, e.Code}, {&t.like.Bucket, e.Bucket},
		{&t.like.User, e.User}, {&t.like.AccessKey, e.AccessKey}, {&t.like.SourceIP, e.SourceIP},
	} {
		if *f.p != f.v {
			*f.p = ""
		}
	}
	if t.like.Status != e.Status && !t.mixed {
		// A status of the same outcome, which every event of a tally
		// has: --failed must find the summary of failures.
		t.like.Status, t.mixed = outcomeOf(e.Status).status(), true
	}
}

// counts are the tallies of a window that ended.
type counts struct {
	start, end time.Time
	sources    map[sourceKey]*tally
	other      map[otherKey]*tally // sources past the limit
}

// limiter holds RecordBounded's state: the current window's tallies.
type limiter struct {
	perSource, perMinute int

	mu      sync.Mutex // guards the fields below
	start   time.Time  // of the current window
	full    int        // events recorded in full in the window, over all sources
	sources map[sourceKey]*tally
	other   map[otherKey]*tally // events of the sources past perMinute
}

// init sets the limits (0 means the default) and starts the first window
// at the minute of now.
func (lm *limiter) init(perSource, perMinute int, now time.Time) {
	if perSource == 0 {
		perSource = DefaultPerSource
	}
	if perMinute == 0 {
		perMinute = DefaultPerMinute
	}
	lm.perSource, lm.perMinute = perSource, perMinute
	lm.start = now.Truncate(window)
	lm.sources = make(map[sourceKey]*tally)
	lm.other = make(map[otherKey]*tally)
}

// admit reports whether e is to be recorded in full, and counts it if
// not. e's strings are already cut to MaxFieldBytes.
func (lm *limiter) admit(e *Event) bool {
	k := sourceKeyOf(e)
	lm.mu.Lock()
	defer lm.mu.Unlock()
	t := lm.sources[k]
	if t == nil {
		if len(lm.sources) >= lm.perMinute {
			lm.countOther(e)
			return false
		}
		t = &tally{}
		lm.sources[k.clone()] = t
	}
	if t.full < lm.perSource && lm.full < lm.perMinute {
		t.full++
		lm.full++
		return true
	}
	t.count(e)
	return false
}

// countOther counts e, of a source past the limit, in the tally of its
// Source and outcome. The caller holds mu.
func (lm *limiter) countOther(e *Event) {
	k := otherKey{e.Source, outcomeOf(e.Status)}
	t := lm.other[k]
	if t == nil && len(lm.other) >= maxOthers {
		for ok, ot := range lm.other {
			if t == nil || ok.outcome == k.outcome {
				t = ot
			}
		}
	}
	if t == nil {
		t = &tally{}
		lm.other[otherKey{strings.Clone(k.source), k.outcome}] = t
	}
	t.count(e)
}

// rotate ends the current window if it is a window old, or if force is
// set, and starts the next at the minute of now. It returns the ended
// window's counts, or nil if the window goes on or counted nothing.
func (lm *limiter) rotate(now time.Time, force bool) *counts {
	lm.mu.Lock()
	defer lm.mu.Unlock()
	if !force && now.Before(lm.start.Add(window)) {
		return nil
	}
	c := &counts{start: lm.start, end: now, sources: lm.sources, other: lm.other}
	lm.start = now.Truncate(window)
	if lm.start.Before(c.start) { // the clock went back: keep windows in order
		lm.start = c.start
	}
	lm.full = 0
	lm.sources = make(map[sourceKey]*tally, min(len(c.sources), lm.perMinute))
	lm.other = make(map[otherKey]*tally)
	if len(c.other) == 0 {
		counted := false
		for _, t := range c.sources {
			if t.n > 0 {
				counted = true
				break
			}
		}
		if !counted {
			return nil
		}
	}
	return c
}

// summaries appends the summary events of c to events: one per source
// with events counted, and one per source kind and outcome for the
// sources past the limit, in no particular order.
func (c *counts) summaries(events []Event) []Event {
	for k, t := range c.sources {
		if t.n > 0 {
			events = append(events, c.summary(t, &k))
		}
	}
	for _, t := range c.other {
		events = append(events, c.summary(t, nil))
	}
	return events
}

// summary returns the summary event of t, the tally of source k, or of
// sources past the limit if k is nil. Its Time is that of the last event
// it counts, and its Duration the time from the first to the last, so
// that a time range (--since) that holds the last of the requests finds
// it.
func (c *counts) summary(t *tally, k *sourceKey) Event {
	e := t.like
	e.Untrusted = true
	e.Time = t.last
	e.Duration = t.last.Sub(t.first)
	e.Count = t.n
	e.BytesIn, e.BytesOut = t.bytesIn, t.bytesOut
	if e.SourceIP == "" && k != nil {
		// Several addresses of one IPv6 network: name the network.
		e.SourceIP = k.sourceIP()
	}
	what := e.Code
	switch {
	case what != "":
	case !t.mixed:
		what = "requests answered " + strconv.Itoa(e.Status)
	default:
		what = outcomeOf(e.Status).what()
	}
	// The access key is not repeated: it has its field, and the Target
	// must stay within MaxFieldBytes like every field.
	from := e.SourceIP
	if from == "" {
		from = "various addresses"
	}
	if k == nil {
		e.Target = fmt.Sprintf("… and %s more %s from sources past the %s counted one by one, in this minute",
			groupDigits(t.n), what, groupDigits(int64(len(c.sources))))
	} else {
		e.Target = fmt.Sprintf("… and %s more %s from %s in this minute", groupDigits(t.n), what, from)
	}
	e.Target = truncate(e.Target)
	return e
}

// groupDigits formats n with commas between groups of three digits:
// 4,213.
func groupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}
