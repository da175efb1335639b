package lifecycle

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// tags makes tags from key, value pairs.
func tags(kv ...string) []Tag {
	var out []Tag
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, Tag{Key: kv[i], Value: kv[i+1]})
	}
	return out
}

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestCalendar(t *testing.T) {
	for _, tc := range []struct {
		name string
		cal  Calendar
		from string
		days int
		want time.Time
	}{
		// The user guide's example: 10:30 on the 15th plus 3 days is due
		// at midnight starting the 19th.
		{name: "rounded up to midnight", from: "2014-01-15T10:30:00Z", days: 3, want: at("2014-01-19T00:00:00Z")},
		{name: "just after midnight", from: "2014-01-02T00:05:00Z", days: 1, want: at("2014-01-04T00:00:00Z")},
		{name: "at midnight is its own ceiling", from: "2014-01-02T00:00:00Z", days: 1, want: at("2014-01-03T00:00:00Z")},
		{name: "other zone counted in UTC", from: "2014-01-15T23:30:00-05:00", days: 1, want: at("2014-01-18T00:00:00Z")},
		{name: "24h day is S3's", cal: Calendar{Day: 24 * time.Hour}, from: "2014-01-15T10:30:00Z", days: 3, want: at("2014-01-19T00:00:00Z")},
		{name: "days past any year", from: "2014-01-15T10:30:00Z", days: math.MaxInt32, want: farFuture},
		{name: "test day, not rounded", cal: Calendar{Day: 10 * time.Second}, from: "2014-01-15T10:30:03Z", days: 3, want: at("2014-01-15T10:30:33Z")},
		{name: "test day overflow", cal: Calendar{Day: time.Hour}, from: "2014-01-15T10:30:03Z", days: math.MaxInt32, want: farFuture},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.cal.After(at(tc.from), tc.days); !got.Equal(tc.want) {
				t.Errorf("After(%s, %d) = %v, want %v", tc.from, tc.days, got, tc.want)
			}
		})
	}
}

// TestExpiry is the table of rules × objects × times: which rule expires
// which current version when, and when nothing does.
func TestExpiry(t *testing.T) {
	created := at("2026-03-10T15:04:05Z")
	photos := Rule{ID: "photos", Status: Enabled, Filter: &Filter{Prefix: ptr("photos/")}, Expiration: days(30)}
	tagged := Rule{ID: "tagged", Status: Enabled, Filter: &Filter{Tag: &Tag{Key: "tmp", Value: "yes"}}, Expiration: days(1)}
	emptyValue := Rule{ID: "empty-value", Status: Enabled, Filter: &Filter{Tag: &Tag{Key: "tmp"}}, Expiration: days(2)}
	big := Rule{ID: "big", Status: Enabled, Filter: &Filter{ObjectSizeGreaterThan: ptr[int64](100)}, Expiration: days(3)}
	small := Rule{ID: "small", Status: Enabled, Filter: &Filter{ObjectSizeLessThan: ptr[int64](100)}, Expiration: days(4)}
	and := Rule{ID: "and", Status: Enabled, Filter: &Filter{And: &And{
		Prefix: ptr("logs/"), Tags: []Tag{{Key: "a", Value: "1"}, {Key: "b", Value: "2"}},
		ObjectSizeGreaterThan: ptr[int64](10), ObjectSizeLessThan: ptr[int64](20),
	}}, Expiration: days(5)}
	dated := Rule{ID: "dated", Status: Enabled, Filter: &Filter{}, Expiration: &Expiration{Date: ptr(at("2026-04-01T00:00:00Z"))}}
	legacy := legacyRule("legacy", "old/", days(6))
	disabled := photos
	disabled.ID, disabled.Status = "off", Disabled
	marker := Rule{ID: "marker", Status: Enabled, Filter: &Filter{}, Expiration: &Expiration{ExpiredObjectDeleteMarker: ptr(true)}}
	noncurrentOnly := Rule{ID: "nc", Status: Enabled, Filter: &Filter{}, NoncurrentVersionExpiration: &NoncurrentVersionExpiration{NoncurrentDays: ptr(1)}}
	shortPhotos := Rule{ID: "short", Status: Enabled, Filter: &Filter{Prefix: ptr("photos/2026/")}, Expiration: days(7)}

	for _, tc := range []struct {
		name  string
		rules []Rule
		obj   Object
		want  *Due
	}{
		{name: "prefix", rules: []Rule{photos}, obj: Object{Key: "photos/a.jpg"}, want: &Due{at("2026-04-10T00:00:00Z"), "photos"}},
		{name: "prefix does not match", rules: []Rule{photos}, obj: Object{Key: "videos/a.mp4"}},
		{name: "legacy prefix", rules: []Rule{legacy}, obj: Object{Key: "old/x"}, want: &Due{at("2026-03-17T00:00:00Z"), "legacy"}},
		{name: "tag", rules: []Rule{tagged}, obj: Object{Key: "k", Tags: tags("x", "y", "tmp", "yes")}, want: &Due{at("2026-03-12T00:00:00Z"), "tagged"}},
		{name: "tag with another value", rules: []Rule{tagged}, obj: Object{Key: "k", Tags: tags("tmp", "no")}},
		{name: "untagged", rules: []Rule{tagged}, obj: Object{Key: "k"}},
		{name: "filter tag without value matches an empty value", rules: []Rule{emptyValue}, obj: Object{Key: "k", Tags: tags("tmp", "")}, want: &Due{at("2026-03-13T00:00:00Z"), "empty-value"}},
		{name: "filter tag without value, tag with one", rules: []Rule{emptyValue}, obj: Object{Key: "k", Tags: tags("tmp", "yes")}},
		{name: "larger", rules: []Rule{big}, obj: Object{Key: "k", Size: 101}, want: &Due{at("2026-03-14T00:00:00Z"), "big"}},
		{name: "not larger", rules: []Rule{big}, obj: Object{Key: "k", Size: 100}},
		{name: "smaller", rules: []Rule{small}, obj: Object{Key: "k", Size: 99}, want: &Due{at("2026-03-15T00:00:00Z"), "small"}},
		{name: "not smaller", rules: []Rule{small}, obj: Object{Key: "k", Size: 100}},
		{name: "and, all hold", rules: []Rule{and}, obj: Object{Key: "logs/1", Size: 15, Tags: tags("b", "2", "c", "3", "a", "1")}, want: &Due{at("2026-03-16T00:00:00Z"), "and"}},
		{name: "and, a tag missing", rules: []Rule{and}, obj: Object{Key: "logs/1", Size: 15, Tags: tags("a", "1")}},
		{name: "and, wrong prefix", rules: []Rule{and}, obj: Object{Key: "log/1", Size: 15, Tags: tags("a", "1", "b", "2")}},
		{name: "and, too large", rules: []Rule{and}, obj: Object{Key: "logs/1", Size: 20, Tags: tags("a", "1", "b", "2")}},
		{name: "and, too small", rules: []Rule{and}, obj: Object{Key: "logs/1", Size: 10, Tags: tags("a", "1", "b", "2")}},
		{name: "date", rules: []Rule{dated}, obj: Object{Key: "k"}, want: &Due{at("2026-04-01T00:00:00Z"), "dated"}},
		{name: "disabled", rules: []Rule{disabled}, obj: Object{Key: "photos/a.jpg"}},
		{name: "marker rules expire no object", rules: []Rule{marker}, obj: Object{Key: "k"}},
		{name: "noncurrent rules expire no current version", rules: []Rule{noncurrentOnly}, obj: Object{Key: "k"}},
		{name: "the earliest rule wins", rules: []Rule{photos, dated, shortPhotos}, obj: Object{Key: "photos/2026/a.jpg"}, want: &Due{at("2026-03-18T00:00:00Z"), "short"}},
		{name: "a tie goes to the first", rules: []Rule{photos, func() Rule { r := photos; r.ID = "twin"; return r }()}, obj: Object{Key: "photos/a"}, want: &Due{at("2026-04-10T00:00:00Z"), "photos"}},
		{name: "no filter at all", rules: []Rule{{ID: "all", Status: Enabled, Expiration: days(1)}}, obj: Object{Key: "k"}, want: &Due{at("2026-03-12T00:00:00Z"), "all"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Configuration{Rules: tc.rules}
			d, ok := c.Expiry(tc.obj, created, Calendar{})
			var got *Due
			if ok {
				got = &d
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Expiry mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNoncurrentExpiry(t *testing.T) {
	since := at("2014-01-02T11:30:00Z")
	five := Rule{ID: "five", Status: Enabled, Filter: &Filter{}, NoncurrentVersionExpiration: &NoncurrentVersionExpiration{NoncurrentDays: ptr(5)}}
	keep := Rule{ID: "keep", Status: Enabled, Filter: &Filter{Prefix: ptr("k")},
		NoncurrentVersionExpiration: &NoncurrentVersionExpiration{NoncurrentDays: ptr(1), NewerNoncurrentVersions: ptr(5)}}
	tagged := Rule{ID: "tagged", Status: Enabled, Filter: &Filter{Tag: &Tag{Key: "t", Value: "1"}}, NoncurrentVersionExpiration: &NoncurrentVersionExpiration{NoncurrentDays: ptr(2)}}
	expireOnly := prefixRule("exp", "", days(1))
	for _, tc := range []struct {
		name  string
		rules []Rule
		obj   Object
		newer int
		want  *Due
	}{
		// The user guide's example: noncurrent since 2 January 11:30, five
		// days: removed at midnight starting 8 January.
		{name: "days from when it became noncurrent", rules: []Rule{five}, obj: Object{Key: "photo.gif"}, want: &Due{at("2014-01-08T00:00:00Z"), "five"}},
		{name: "kept: fewer newer versions than NewerNoncurrentVersions", rules: []Rule{keep}, obj: Object{Key: "k"}, newer: 4},
		{name: "removed: enough newer versions", rules: []Rule{keep}, obj: Object{Key: "k"}, newer: 5, want: &Due{at("2014-01-04T00:00:00Z"), "keep"}},
		{name: "tag filter", rules: []Rule{tagged}, obj: Object{Key: "k", Tags: tags("t", "1")}, want: &Due{at("2014-01-05T00:00:00Z"), "tagged"}},
		{name: "tag filter, no tag", rules: []Rule{tagged}, obj: Object{Key: "k"}},
		{name: "an expiration of current versions does not remove noncurrent ones", rules: []Rule{expireOnly}, obj: Object{Key: "k"}},
		{name: "earliest", rules: []Rule{five, keep}, obj: Object{Key: "k"}, newer: 9, want: &Due{at("2014-01-04T00:00:00Z"), "keep"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Configuration{Rules: tc.rules}
			d, ok := c.NoncurrentExpiry(tc.obj, since, tc.newer, Calendar{})
			var got *Due
			if ok {
				got = &d
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("NoncurrentExpiry mismatch (-want +got):\n%s", diff)
			}
		})
	}
	// s3-tests' test_lifecycle_expiration_newer_noncurrent: of nine
	// noncurrent versions, with five kept, the four oldest go.
	c := &Configuration{Rules: []Rule{keep}}
	var removed []int
	for newer := range 9 {
		if _, ok := c.NoncurrentExpiry(Object{Key: "k"}, since, newer, Calendar{}); ok {
			removed = append(removed, newer)
		}
	}
	if diff := cmp.Diff([]int{5, 6, 7, 8}, removed); diff != "" {
		t.Errorf("versions removed by newer count (-want +got):\n%s", diff)
	}
}

func TestMarkerAndAbortExpiry(t *testing.T) {
	created := at("2026-03-10T15:04:05Z")
	marker := Rule{ID: "marker", Status: Enabled, Filter: &Filter{Prefix: ptr("m/")}, Expiration: &Expiration{ExpiredObjectDeleteMarker: ptr(true)}}
	noMarker := Rule{ID: "no", Status: Enabled, Filter: &Filter{}, Expiration: &Expiration{ExpiredObjectDeleteMarker: ptr(false)}}
	aged := prefixRule("aged", "", days(5))
	dated := Rule{ID: "dated", Status: Enabled, Filter: &Filter{}, Expiration: &Expiration{Date: ptr(at("2026-04-01T00:00:00Z"))}}
	tagged := Rule{ID: "tagged", Status: Enabled, Filter: &Filter{Tag: &Tag{Key: "t"}}, Expiration: days(1)}
	small := Rule{ID: "small", Status: Enabled, Filter: &Filter{ObjectSizeLessThan: ptr[int64](1)}, Expiration: days(2)}
	abort := Rule{ID: "abort", Status: Enabled, Filter: &Filter{Prefix: ptr("up/")}, AbortIncompleteMultipartUpload: &AbortIncompleteMultipartUpload{DaysAfterInitiation: ptr(2)}}
	for _, tc := range []struct {
		name   string
		rules  []Rule
		key    string
		marker *Due
		abort  *Due
	}{
		{name: "expired object delete marker at once", rules: []Rule{marker}, key: "m/x", marker: &Due{created, "marker"}},
		{name: "marker rule, other prefix", rules: []Rule{marker}, key: "x"},
		{name: "ExpiredObjectDeleteMarker false does nothing", rules: []Rule{noMarker}, key: "x"},
		{name: "days clean markers up once old enough", rules: []Rule{aged}, key: "x", marker: &Due{at("2026-03-16T00:00:00Z"), "aged"}},
		{name: "a date cleans markers up on the date", rules: []Rule{dated}, key: "x", marker: &Due{at("2026-04-01T00:00:00Z"), "dated"}},
		{name: "a marker has no tags", rules: []Rule{tagged}, key: "x"},
		{name: "a marker has size 0", rules: []Rule{small}, key: "x", marker: &Due{at("2026-03-13T00:00:00Z"), "small"}},
		{name: "upload aborted", rules: []Rule{abort}, key: "up/big", abort: &Due{at("2026-03-13T00:00:00Z"), "abort"}},
		{name: "upload of another prefix", rules: []Rule{abort}, key: "big"},
		{name: "earliest marker rule", rules: []Rule{aged, marker}, key: "m/x", marker: &Due{created, "marker"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Configuration{Rules: tc.rules}
			var gotMarker, gotAbort *Due
			if d, ok := c.MarkerExpiry(tc.key, created, Calendar{}); ok {
				gotMarker = &d
			}
			if d, ok := c.AbortExpiry(tc.key, created, Calendar{}); ok {
				gotAbort = &d
			}
			if diff := cmp.Diff(tc.marker, gotMarker); diff != "" {
				t.Errorf("MarkerExpiry mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.abort, gotAbort); diff != "" {
				t.Errorf("AbortExpiry mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPlan(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rules []Rule
		want  Plan
	}{
		{name: "expire by prefix", rules: []Rule{prefixRule("a", "logs/", days(1)), prefixRule("b", "logs/2026/", days(2)), prefixRule("c", "img/", days(3))},
			want: Plan{Current: true, Noncurrent: true, Prefixes: []string{"img/", "logs/"}}},
		{name: "tags and everything", rules: []Rule{{ID: "t", Status: Enabled, Filter: &Filter{Tag: &Tag{Key: "k"}}, Expiration: days(1)}, prefixRule("p", "x/", days(1))},
			want: Plan{Current: true, Noncurrent: true, Tags: true, Prefixes: []string{""}}},
		{name: "noncurrent with newer versions", rules: []Rule{
			{ID: "a", Status: Enabled, Filter: &Filter{}, NoncurrentVersionExpiration: &NoncurrentVersionExpiration{NoncurrentDays: ptr(1), NewerNoncurrentVersions: ptr(3)}},
			{ID: "b", Status: Enabled, Filter: &Filter{}, NoncurrentVersionExpiration: &NoncurrentVersionExpiration{NoncurrentDays: ptr(1), NewerNoncurrentVersions: ptr(7)}},
		}, want: Plan{Noncurrent: true, Prefixes: []string{""}, NewerCap: 7}},
		{name: "markers only", rules: []Rule{legacyRule("m", "", &Expiration{ExpiredObjectDeleteMarker: ptr(true)})},
			want: Plan{Noncurrent: true, Prefixes: []string{""}}},
		{name: "marker false does nothing", rules: []Rule{legacyRule("m", "", &Expiration{ExpiredObjectDeleteMarker: ptr(false)})}},
		{name: "uploads", rules: []Rule{{ID: "u", Status: Enabled, Filter: &Filter{Prefix: ptr("up/")}, AbortIncompleteMultipartUpload: &AbortIncompleteMultipartUpload{DaysAfterInitiation: ptr(1)}}},
			want: Plan{Uploads: true, UploadPrefixes: []string{"up/"}}},
		{name: "disabled rules plan nothing", rules: []Rule{{ID: "d", Status: Disabled, Filter: &Filter{}, Expiration: days(1)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Configuration{Rules: tc.rules}
			if diff := cmp.Diff(tc.want, c.Plan()); diff != "" {
				t.Errorf("Plan mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExpirationHeader(t *testing.T) {
	for _, tc := range []struct {
		id, want string
	}{
		{"picture-deletion-rule", `expiry-date="Sun, 23 Dec 2012 00:00:00 GMT", rule-id="picture-deletion-rule"`},
		{"with spaces inside", `expiry-date="Sun, 23 Dec 2012 00:00:00 GMT", rule-id="with spaces inside"`},
		{`say "hi"`, `expiry-date="Sun, 23 Dec 2012 00:00:00 GMT", rule-id="say%20%22hi%22"`},
		{"é", `expiry-date="Sun, 23 Dec 2012 00:00:00 GMT", rule-id="%C3%A9"`},
		{" lead", `expiry-date="Sun, 23 Dec 2012 00:00:00 GMT", rule-id="%20lead"`},
		{"line\nbreak", `expiry-date="Sun, 23 Dec 2012 00:00:00 GMT", rule-id="line%0Abreak"`},
	} {
		if got := ExpirationHeader(Due{At: at("2012-12-23T00:00:00Z"), RuleID: tc.id}); got != tc.want {
			t.Errorf("ExpirationHeader(%q) = %s, want %s", tc.id, got, tc.want)
		}
	}
}
