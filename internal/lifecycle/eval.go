package lifecycle

import (
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Calendar says how a rule's days are counted.
//
// S3's calendar (the zero Calendar) adds the days to the time an object
// was created (or became noncurrent, or an upload began) and rounds the
// result up to the next midnight UTC: an object created on 15 January at
// 10:30 UTC with a rule of 3 days expires at 00:00 UTC on 19 January. See
// https://docs.aws.amazon.com/AmazonS3/latest/userguide/intro-lifecycle-rules.html#intro-lifecycle-rules-number-of-days
//
// Day, when set to anything but 24h, makes a day that long and turns the
// rounding off, so that tests (and conformance suites written for Ceph's
// rgw_lc_debug_interval) see rules act within seconds. It is for testing
// only.
type Calendar struct {
	Day time.Duration
}

// httpDate is the layout of dates in HTTP headers (net/http's TimeFormat;
// this package stays out of HTTP).
const httpDate = "Mon, 02 Jan 2006 15:04:05 GMT"

// s3Day is the day of S3's calendar.
const s3Day = 24 * time.Hour

// farFuture stands for a time past what time.Time arithmetic reaches.
var farFuture = time.Unix(math.MaxInt64/2, 0).UTC()

// After returns when something dated t falls due after days days.
func (c Calendar) After(t time.Time, days int) time.Time {
	if c.Day <= 0 || c.Day == s3Day {
		if days > 1<<24 { // past the year 47000
			return farFuture
		}
		d := t.UTC().AddDate(0, 0, days)
		mid := time.Date(d.Year(), d.Month(), d.Day(), 0, 0, 0, 0, time.UTC)
		if d.After(mid) {
			mid = mid.AddDate(0, 0, 1)
		}
		return mid
	}
	if int64(days) > math.MaxInt64/int64(c.Day)/2 {
		return farFuture
	}
	return t.Add(time.Duration(days) * c.Day)
}

// Due is when a rule falls due for something, and which rule.
type Due struct {
	At     time.Time
	RuleID string
}

// Object is what a rule's filter looks at: the key, the size in bytes
// and the tags of a version. A delete marker has size 0 and no tags.
type Object struct {
	Key  string
	Size int64
	Tags []Tag
}

// hasTag reports whether o carries t exactly. A filter tag without a
// value matches a tag with an empty value only.
func (o *Object) hasTag(t Tag) bool {
	for _, x := range o.Tags {
		if x.Key == t.Key {
			return x.Value == t.Value
		}
	}
	return false
}

// enabled reports whether r is in effect.
func (r *Rule) enabled() bool { return r.Status == Enabled }

// matches reports whether r's filter selects o.
func (r *Rule) matches(o *Object) bool {
	if r.Prefix != nil {
		return strings.HasPrefix(o.Key, *r.Prefix)
	}
	f := r.Filter
	if f == nil {
		return true
	}
	switch {
	case f.Prefix != nil:
		return strings.HasPrefix(o.Key, *f.Prefix)
	case f.Tag != nil:
		return o.hasTag(*f.Tag)
	case f.ObjectSizeGreaterThan != nil:
		return o.Size > *f.ObjectSizeGreaterThan
	case f.ObjectSizeLessThan != nil:
		return o.Size < *f.ObjectSizeLessThan
	case f.And != nil:
		a := f.And
		if a.Prefix != nil && !strings.HasPrefix(o.Key, *a.Prefix) ||
			a.ObjectSizeGreaterThan != nil && o.Size <= *a.ObjectSizeGreaterThan ||
			a.ObjectSizeLessThan != nil && o.Size >= *a.ObjectSizeLessThan {
			return false
		}
		for _, t := range a.Tags {
			if !o.hasTag(t) {
				return false
			}
		}
	}
	return true
}

// prefix returns the key prefix every object r selects has ("" if r
// selects by other things only).
func (r *Rule) prefix() string {
	switch {
	case r.Prefix != nil:
		return *r.Prefix
	case r.Filter == nil:
		return ""
	case r.Filter.Prefix != nil:
		return *r.Filter.Prefix
	case r.Filter.And != nil && r.Filter.And.Prefix != nil:
		return *r.Filter.And.Prefix
	}
	return ""
}

// earliest keeps the earlier of best and d; on a tie the first found,
// since "when two expiration policies overlap, the shorter expiration
// policy is honored".
func earliest(best *Due, found bool, d Due) bool {
	if !found || d.At.Before(best.At) {
		*best = d
	}
	return true
}

// Expiry returns when the current version o, created at created, expires:
// the earliest due time of the enabled rules that select it and expire
// current versions (Days or Date). An expiry applies to an object, never
// to a delete marker. ok is false if no rule expires it.
func (c *Configuration) Expiry(o Object, created time.Time, cal Calendar) (d Due, ok bool) {
	for i := range c.Rules {
		r := &c.Rules[i]
		e := r.Expiration
		if !r.enabled() || e == nil || e.ExpiredObjectDeleteMarker != nil || !r.matches(&o) {
			continue
		}
		at := farFuture
		switch {
		case e.Days != nil:
			at = cal.After(created, *e.Days)
		case e.Date != nil:
			at = *e.Date
		}
		ok = earliest(&d, ok, Due{At: at, RuleID: r.ID})
	}
	return d, ok
}

// NoncurrentExpiry returns when the noncurrent version o, noncurrent
// since since (the Last-Modified of the version that replaced it), is
// removed, given the number of noncurrent versions newer than it: a rule
// with NewerNoncurrentVersions n keeps the n newest noncurrent versions
// whatever their age.
func (c *Configuration) NoncurrentExpiry(o Object, since time.Time, newer int, cal Calendar) (d Due, ok bool) {
	for i := range c.Rules {
		r := &c.Rules[i]
		n := r.NoncurrentVersionExpiration
		if !r.enabled() || n == nil || n.NoncurrentDays == nil || !r.matches(&o) {
			continue
		}
		if n.NewerNoncurrentVersions != nil && newer < *n.NewerNoncurrentVersions {
			continue
		}
		ok = earliest(&d, ok, Due{At: cal.After(since, *n.NoncurrentDays), RuleID: r.ID})
	}
	return d, ok
}

// MarkerExpiry returns when a delete marker of key that is the key's only
// version ("an expired object delete marker"), created at created, is
// removed: at once under ExpiredObjectDeleteMarker, and under an
// expiration of current versions once it is as old as they would be ("When
// you specify the Days tag, Amazon S3 automatically performs
// ExpiredObjectDeleteMarker cleanup when the delete markers are old
// enough to satisfy the age criteria").
func (c *Configuration) MarkerExpiry(key string, created time.Time, cal Calendar) (d Due, ok bool) {
	o := Object{Key: key}
	for i := range c.Rules {
		r := &c.Rules[i]
		e := r.Expiration
		if !r.enabled() || e == nil || !r.matches(&o) {
			continue
		}
		var at time.Time
		switch {
		case e.ExpiredObjectDeleteMarker != nil && *e.ExpiredObjectDeleteMarker:
			at = created
		case e.Days != nil:
			at = cal.After(created, *e.Days)
		case e.Date != nil:
			at = *e.Date
		default:
			continue
		}
		ok = earliest(&d, ok, Due{At: at, RuleID: r.ID})
	}
	return d, ok
}

// AbortExpiry returns when a multipart upload of key, initiated at
// initiated, is aborted. Rules that abort uploads select by prefix only
// (Validate refuses tags and sizes with them).
func (c *Configuration) AbortExpiry(key string, initiated time.Time, cal Calendar) (d Due, ok bool) {
	o := Object{Key: key}
	for i := range c.Rules {
		r := &c.Rules[i]
		a := r.AbortIncompleteMultipartUpload
		if !r.enabled() || a == nil || a.DaysAfterInitiation == nil || !r.matches(&o) {
			continue
		}
		ok = earliest(&d, ok, Due{At: cal.After(initiated, *a.DaysAfterInitiation), RuleID: r.ID})
	}
	return d, ok
}

// Plan is what a walk of a bucket must read for its configuration's
// enabled rules.
type Plan struct {
	Current    bool // some rule expires current versions
	Noncurrent bool // some rule removes noncurrent versions or delete markers: the history is read
	Uploads    bool // some rule aborts incomplete multipart uploads
	Tags       bool // some rule acting on versions selects by tags: their tags are read
	// Prefixes covers every key a rule acting on versions may select, the
	// fewest prefixes none of which begins another; [""] is every key.
	Prefixes []string
	// UploadPrefixes is Prefixes for the rules that abort uploads.
	UploadPrefixes []string
	// NewerCap is the largest NewerNoncurrentVersions of the rules:
	// counting newer versions further changes no decision.
	NewerCap int
}

// Plan returns what a walk must read.
func (c *Configuration) Plan() Plan {
	var p Plan
	var ps, ups []string
	for i := range c.Rules {
		r := &c.Rules[i]
		if !r.enabled() {
			continue
		}
		versions := false
		if e := r.Expiration; e != nil {
			if e.ExpiredObjectDeleteMarker == nil {
				p.Current = true
			}
			if e.ExpiredObjectDeleteMarker == nil || *e.ExpiredObjectDeleteMarker {
				p.Noncurrent, versions = true, true // markers left alone
			}
		}
		if n := r.NoncurrentVersionExpiration; n != nil {
			p.Noncurrent, versions = true, true
			if n.NewerNoncurrentVersions != nil {
				p.NewerCap = max(p.NewerCap, *n.NewerNoncurrentVersions)
			}
		}
		if versions {
			ps = append(ps, r.prefix())
			p.Tags = p.Tags || r.Filter.usesTags()
		}
		if r.AbortIncompleteMultipartUpload != nil {
			p.Uploads = true
			ups = append(ups, r.prefix())
		}
	}
	p.Prefixes, p.UploadPrefixes = cover(ps), cover(ups)
	return p
}

// cover returns the fewest prefixes of ps that begin every one of ps.
func cover(ps []string) []string {
	slices.Sort(ps)
	var out []string
	for _, p := range ps {
		if len(out) > 0 && strings.HasPrefix(p, out[len(out)-1]) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// ExpirationHeader returns the x-amz-expiration header S3 sends on GET,
// HEAD and PUT of an object a rule will expire:
//
//	expiry-date="Sun, 23 Dec 2012 00:00:00 GMT", rule-id="picture-deletion-rule"
//
// The rule ID goes as it is when a quoted header value can carry it, as
// S3 sends it; one with a quote, a backslash, a control or non-ASCII
// character, or spaces at an end is percent-encoded whole, as S3
// documents the ID ("URL-encoded").
func ExpirationHeader(d Due) string {
	return fmt.Sprintf(`expiry-date="%s", rule-id="%s"`, d.At.UTC().Format(httpDate), headerID(d.RuleID))
}

// AbortHeaders returns x-amz-abort-date and x-amz-abort-rule-id for an
// upload a rule aborts as d says, the ID as ExpirationHeader sends it.
func AbortHeaders(d Due) (date, ruleID string) {
	return d.At.UTC().Format(httpDate), headerID(d.RuleID)
}

func headerID(id string) string {
	plain := !strings.HasPrefix(id, " ") && !strings.HasSuffix(id, " ")
	for i := 0; plain && i < len(id); i++ {
		c := id[i]
		plain = c >= ' ' && c <= '~' && c != '"' && c != '\\'
	}
	if plain {
		return id
	}
	return url.PathEscape(id)
}
