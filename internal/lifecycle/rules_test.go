package lifecycle

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/coffer-s3/coffer/internal/s3err"
)

func ptr[T any](v T) *T { return &v }

// days returns an Expiration after n days.
func days(n int) *Expiration { return &Expiration{Days: &n} }

// prefixRule is a V2 rule with a prefix filter and an expiration.
func prefixRule(id, prefix string, e *Expiration) Rule {
	return Rule{ID: id, Status: Enabled, Filter: &Filter{Prefix: &prefix}, Expiration: e}
}

// legacyRule is a V1 rule (rule-level prefix) with an expiration.
func legacyRule(id, prefix string, e *Expiration) Rule {
	return Rule{ID: id, Status: Enabled, Prefix: &prefix, Expiration: e}
}

var midnight = time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)

func TestValidate(t *testing.T) {
	many := make([]Rule, MaxRules+1)
	for i := range many {
		many[i] = Rule{Status: Enabled, Filter: &Filter{}, Expiration: days(1)}
	}
	for _, tc := range []struct {
		name    string
		rules   []Rule
		min     string
		wantErr s3err.Code
		wantMsg string
	}{
		{name: "one rule", rules: []Rule{prefixRule("r", "a/", days(1))}},
		{name: "every action", rules: []Rule{{
			ID: "r", Status: Disabled, Filter: &Filter{And: &And{Prefix: ptr("a/"), Tags: []Tag{{Key: "k"}, {Key: "j", Value: "v"}}, ObjectSizeGreaterThan: ptr[int64](1), ObjectSizeLessThan: ptr[int64](2)}},
			Expiration:                  &Expiration{Date: &midnight},
			NoncurrentVersionExpiration: &NoncurrentVersionExpiration{NoncurrentDays: ptr(1), NewerNoncurrentVersions: ptr(3)},
		}}},
		{name: "empty filter", rules: []Rule{{Status: Enabled, Filter: &Filter{}, AbortIncompleteMultipartUpload: &AbortIncompleteMultipartUpload{DaysAfterInitiation: ptr(1)}}}},
		{name: "marker", rules: []Rule{legacyRule("", "", &Expiration{ExpiredObjectDeleteMarker: ptr(false)})}},
		{name: "v1 rules on disjoint prefixes", rules: []Rule{legacyRule("a", "test1/", days(1)), legacyRule("b", "test2/", days(2))}},
		{name: "v1 rules on one prefix, other actions", rules: []Rule{
			legacyRule("a", "", &Expiration{ExpiredObjectDeleteMarker: ptr(true)}),
			{ID: "b", Status: Enabled, Prefix: ptr(""), NoncurrentVersionExpiration: &NoncurrentVersionExpiration{NoncurrentDays: ptr(1)}},
		}},
		{name: "minimum size", rules: []Rule{prefixRule("r", "", days(1))}, min: MinimumSizeByClass},
		{name: "1000 rules", rules: many[:MaxRules]},

		{name: "no rules", wantErr: s3err.InvalidRequest, wantMsg: "At least one lifecycle rule must be specified."},
		{name: "too many rules", rules: many, wantErr: s3err.InvalidRequest,
			wantMsg: "The number of lifecycle rules must not exceed the allowed limit of 1000 rules."},
		{name: "bad status", rules: []Rule{{Status: "enabled", Filter: &Filter{}, Expiration: days(1)}}, wantErr: s3err.MalformedXML},
		{name: "no filter nor prefix", rules: []Rule{{Status: Enabled, Expiration: days(1)}}, wantErr: s3err.MalformedXML},
		{name: "filter with prefix and tag", rules: []Rule{{Status: Enabled, Filter: &Filter{Prefix: ptr(""), Tag: &Tag{Key: "k"}}, Expiration: days(1)}},
			wantErr: s3err.MalformedXML},
		{name: "filter with prefix and size", rules: []Rule{{Status: Enabled, Filter: &Filter{Prefix: ptr(""), ObjectSizeLessThan: ptr[int64](5)}, Expiration: days(1)}},
			wantErr: s3err.MalformedXML},
		{name: "tag without key", rules: []Rule{{Status: Enabled, Filter: &Filter{Tag: &Tag{}}, Expiration: days(1)}}, wantErr: s3err.MalformedXML},
		{name: "and tag without key", rules: []Rule{{Status: Enabled, Filter: &Filter{And: &And{Tags: []Tag{{}}}}, Expiration: days(1)}}, wantErr: s3err.MalformedXML},
		{name: "empty and", rules: []Rule{{Status: Enabled, Filter: &Filter{And: &And{}}, Expiration: days(1)}}, wantErr: s3err.MalformedXML},
		{name: "empty expiration", rules: []Rule{prefixRule("", "", &Expiration{})}, wantErr: s3err.MalformedXML},
		{name: "days and date", rules: []Rule{prefixRule("", "", &Expiration{Days: ptr(1), Date: &midnight})}, wantErr: s3err.MalformedXML},
		{name: "days and marker", rules: []Rule{prefixRule("", "", &Expiration{Days: ptr(1), ExpiredObjectDeleteMarker: ptr(false)})}, wantErr: s3err.MalformedXML},
		{name: "noncurrent without days", rules: []Rule{{Status: Enabled, Filter: &Filter{},
			NoncurrentVersionExpiration: &NoncurrentVersionExpiration{NewerNoncurrentVersions: ptr(1)}}}, wantErr: s3err.MalformedXML},
		{name: "abort without days", rules: []Rule{{Status: Enabled, Filter: &Filter{}, AbortIncompleteMultipartUpload: &AbortIncompleteMultipartUpload{}}},
			wantErr: s3err.MalformedXML},
		{name: "unknown transition class", rules: []Rule{{Status: Enabled, Filter: &Filter{}, Transitions: []Transition{{Days: ptr(1), StorageClass: "STANDARD"}}}},
			wantErr: s3err.MalformedXML},
		{name: "transition without when", rules: []Rule{{Status: Enabled, Filter: &Filter{}, Transitions: []Transition{{StorageClass: "GLACIER"}}}},
			wantErr: s3err.MalformedXML},
		{name: "noncurrent transition without days", rules: []Rule{{Status: Enabled, Filter: &Filter{},
			NoncurrentVersionTransitions: []NoncurrentVersionTransition{{StorageClass: "GLACIER"}}}}, wantErr: s3err.MalformedXML},
		{name: "schema first: a malformed second rule over a bad first ID", rules: []Rule{prefixRule(strings.Repeat("a", 256), "", days(1)), {Status: "x"}},
			wantErr: s3err.MalformedXML},

		{name: "id too long", rules: []Rule{prefixRule(strings.Repeat("a", 256), "", days(1))}, wantErr: s3err.InvalidArgument,
			wantMsg: "ID length should not exceed allowed limit of 255"},
		{name: "id of 255 characters", rules: []Rule{prefixRule(strings.Repeat("é", 255), "", days(1))}},
		{name: "same id", rules: []Rule{prefixRule("r", "a", days(1)), prefixRule("r", "b", days(2))}, wantErr: s3err.InvalidArgument,
			wantMsg: "Rule ID must be unique. Found same ID for more than one rule"},
		{name: "days zero", rules: []Rule{prefixRule("", "", days(0))}, wantErr: s3err.InvalidArgument,
			wantMsg: "'Days' for Expiration action must be a positive integer"},
		{name: "date not midnight", rules: []Rule{prefixRule("", "", &Expiration{Date: ptr(midnight.Add(time.Hour))})}, wantErr: s3err.InvalidArgument,
			wantMsg: "'Date' must be at midnight GMT"},
		{name: "noncurrent days zero", rules: []Rule{{Status: Enabled, Filter: &Filter{},
			NoncurrentVersionExpiration: &NoncurrentVersionExpiration{NoncurrentDays: ptr(0)}}}, wantErr: s3err.InvalidArgument,
			wantMsg: "'NoncurrentDays' for NoncurrentVersionExpiration action must be a positive integer"},
		{name: "newer versions zero", rules: []Rule{{Status: Enabled, Filter: &Filter{},
			NoncurrentVersionExpiration: &NoncurrentVersionExpiration{NoncurrentDays: ptr(1), NewerNoncurrentVersions: ptr(0)}}}, wantErr: s3err.InvalidArgument,
			wantMsg: "'NewerNoncurrentVersions' must be a positive integer"},
		{name: "newer noncurrent over 100", rules: []Rule{{Status: Enabled, Filter: &Filter{},
			NoncurrentVersionExpiration: &NoncurrentVersionExpiration{NoncurrentDays: ptr(1), NewerNoncurrentVersions: ptr(101)}}}, wantErr: s3err.InvalidArgument,
			wantMsg: "'NewerNoncurrentVersions' cannot be greater than 100"},
		{name: "abort days zero", rules: []Rule{{Status: Enabled, Filter: &Filter{}, AbortIncompleteMultipartUpload: &AbortIncompleteMultipartUpload{DaysAfterInitiation: ptr(-1)}}},
			wantErr: s3err.InvalidArgument, wantMsg: "'DaysAfterInitiation' for AbortIncompleteMultipartUpload action must be a positive integer"},
		{name: "no action", rules: []Rule{{Status: Enabled, Filter: &Filter{}}}, wantErr: s3err.InvalidRequest,
			wantMsg: "At least one action needs to be specified in a rule"},
		{name: "prefix in v2", rules: []Rule{prefixRule("a", "", days(1)), legacyRule("b", "x", days(1))}, wantErr: s3err.InvalidRequest,
			wantMsg: "Base level prefix cannot be used in Lifecycle V2, prefixes are only supported in the Filter."},
		{name: "filter in v1", rules: []Rule{legacyRule("a", "x", days(1)), prefixRule("b", "", days(1))}, wantErr: s3err.InvalidRequest,
			wantMsg: "Filter element can only be used in Lifecycle V2."},
		{name: "newer versions in v1", rules: []Rule{{Status: Enabled, Prefix: ptr(""),
			NoncurrentVersionExpiration: &NoncurrentVersionExpiration{NoncurrentDays: ptr(1), NewerNoncurrentVersions: ptr(1)}}}, wantErr: s3err.InvalidRequest,
			wantMsg: "NewerNoncurrentVersions element can only be used in Lifecycle V2."},
		{name: "overlapping v1 prefixes", rules: []Rule{legacyRule("a", "logs/", days(1)), legacyRule("b", "logs/a", days(2))}, wantErr: s3err.InvalidRequest,
			wantMsg: "Found overlapping prefixes 'logs/' and 'logs/a' for same action type 'Expiration'"},
		{name: "duplicate tag keys", rules: []Rule{{Status: Enabled, Filter: &Filter{And: &And{Tags: []Tag{{Key: "k"}, {Key: "k", Value: "v"}}}}, Expiration: days(1)}},
			wantErr: s3err.InvalidRequest, wantMsg: "Duplicate Tag Keys are not allowed."},
		{name: "negative size", rules: []Rule{{Status: Enabled, Filter: &Filter{ObjectSizeGreaterThan: ptr[int64](-1)}, Expiration: days(1)}},
			wantErr: s3err.InvalidRequest, wantMsg: "'ObjectSizeGreaterThan' should be between 0 and 1099511627776000."},
		{name: "size less than zero", rules: []Rule{{Status: Enabled, Filter: &Filter{ObjectSizeLessThan: ptr[int64](0)}, Expiration: days(1)}},
			wantErr: s3err.InvalidRequest, wantMsg: "'ObjectSizeLessThan' should be between 1 and 1099511627776000."},
		{name: "sizes crossed", rules: []Rule{{Status: Enabled, Filter: &Filter{And: &And{ObjectSizeGreaterThan: ptr[int64](5), ObjectSizeLessThan: ptr[int64](5)}}, Expiration: days(1)}},
			wantErr: s3err.InvalidRequest, wantMsg: "'ObjectSizeLessThan' has to be a value greater than 'ObjectSizeGreaterThan'."},
		{name: "marker with tags", rules: []Rule{{Status: Enabled, Filter: &Filter{Tag: &Tag{Key: "k"}}, Expiration: &Expiration{ExpiredObjectDeleteMarker: ptr(true)}}},
			wantErr: s3err.InvalidRequest, wantMsg: "ExpiredObjectDeleteMarker cannot be specified with Tags."},
		{name: "marker with size", rules: []Rule{{Status: Enabled, Filter: &Filter{ObjectSizeLessThan: ptr[int64](1)}, Expiration: &Expiration{ExpiredObjectDeleteMarker: ptr(true)}}},
			wantErr: s3err.InvalidRequest, wantMsg: "ExpiredObjectDeleteMarker cannot be specified with Object Size."},
		{name: "abort with tags", rules: []Rule{{Status: Enabled, Filter: &Filter{And: &And{Tags: []Tag{{Key: "k"}}}},
			AbortIncompleteMultipartUpload: &AbortIncompleteMultipartUpload{DaysAfterInitiation: ptr(1)}}},
			wantErr: s3err.InvalidRequest, wantMsg: "AbortIncompleteMultipartUpload cannot be specified with Tags."},
		{name: "abort with size", rules: []Rule{{Status: Enabled, Filter: &Filter{ObjectSizeGreaterThan: ptr[int64](1)},
			AbortIncompleteMultipartUpload: &AbortIncompleteMultipartUpload{DaysAfterInitiation: ptr(1)}}},
			wantErr: s3err.InvalidRequest, wantMsg: "AbortIncompleteMultipartUpload cannot be specified with Object Size."},
		{name: "bad minimum size", rules: []Rule{prefixRule("r", "", days(1))}, min: "128K", wantErr: s3err.InvalidRequest,
			wantMsg: "Invalid TransitionDefaultMinimumObjectSize found: 128K"},
		{name: "transition date not midnight", rules: []Rule{{Status: Enabled, Filter: &Filter{},
			Transitions: []Transition{{Date: ptr(midnight.Add(time.Second)), StorageClass: "GLACIER"}}}}, wantErr: s3err.InvalidArgument,
			wantMsg: "'Date' must be at midnight GMT"},
		{name: "transition negative days", rules: []Rule{{Status: Enabled, Filter: &Filter{},
			Transitions: []Transition{{Days: ptr(-1), StorageClass: "GLACIER"}}}}, wantErr: s3err.InvalidArgument},
		{name: "noncurrent transition newer in v1", rules: []Rule{{Status: Enabled, Prefix: ptr(""),
			NoncurrentVersionTransitions: []NoncurrentVersionTransition{{NoncurrentDays: ptr(1), NewerNoncurrentVersions: ptr(1), StorageClass: "GLACIER"}}}},
			wantErr: s3err.InvalidRequest},
		{name: "transitions are not implemented", rules: []Rule{{Status: Enabled, Filter: &Filter{},
			Transitions: []Transition{{Days: ptr(30), StorageClass: "GLACIER"}}}}, wantErr: s3err.NotImplemented},
		{name: "noncurrent transitions are not implemented", rules: []Rule{{Status: Enabled, Filter: &Filter{}, Expiration: days(1),
			NoncurrentVersionTransitions: []NoncurrentVersionTransition{{NoncurrentDays: ptr(30), StorageClass: "GLACIER_IR"}}}}, wantErr: s3err.NotImplemented},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Configuration{Rules: tc.rules, MinimumSize: tc.min}
			err := c.Validate()
			if got := s3err.CodeOf(err); got != tc.wantErr {
				t.Fatalf("Validate() = %v, want code %q", err, tc.wantErr)
			}
			if tc.wantMsg != "" {
				if e, _ := err.(*s3err.Error); e == nil || e.Msg() != tc.wantMsg {
					t.Errorf("Validate() message = %q, want %q", err, tc.wantMsg)
				}
			}
		})
	}
}

func TestParseDate(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    time.Time
		wantErr bool
	}{
		{in: "2027-01-01T00:00:00Z", want: midnight},
		{in: "2027-01-01T00:00:00.000Z", want: midnight},
		{in: "2027-01-01T01:00:00+01:00", want: midnight},
		{in: "2027-01-01", want: midnight},
		{in: " 2027-01-01T00:00:00 ", want: midnight},
		{in: "2027-01-01T10:30:00Z", want: midnight.Add(10*time.Hour + 30*time.Minute)},
		{in: "20270101", wantErr: true},
		{in: "", wantErr: true},
		{in: "tomorrow", wantErr: true},
	} {
		got, err := ParseDate(tc.in)
		if (err != nil) != tc.wantErr || !got.Equal(tc.want) {
			t.Errorf("ParseDate(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
		if err != nil && s3err.CodeOf(err) != s3err.MalformedXML {
			t.Errorf("ParseDate(%q) error code %q, want MalformedXML", tc.in, s3err.CodeOf(err))
		}
	}
}

func TestAssignIDs(t *testing.T) {
	c := &Configuration{Rules: []Rule{{ID: "a"}, {}, {ID: "b"}, {}}}
	n := 0
	ids := []string{"a", "x", "b", "y"} // "a" and "b" are taken and drawn again
	c.AssignIDs(func() string { n++; return ids[n-1] })
	var got []string
	for _, r := range c.Rules {
		got = append(got, r.ID)
	}
	if diff := cmp.Diff([]string{"a", "x", "b", "y"}, got); diff != "" {
		t.Errorf("IDs (-want +got):\n%s", diff)
	}
	id := NewRuleID()
	if len(id) != 48 || id == NewRuleID() {
		t.Errorf("NewRuleID() = %q, want 48 random characters", id)
	}
}

func TestEncodeDecode(t *testing.T) {
	for _, c := range []*Configuration{
		{MinimumSize: MinimumSizeByClass, Rules: []Rule{
			{ID: "marker", Status: Enabled, Filter: &Filter{Prefix: ptr("")}, Expiration: &Expiration{ExpiredObjectDeleteMarker: ptr(true)}},
			{ID: "all", Status: Disabled, Filter: &Filter{And: &And{Prefix: ptr(""), Tags: []Tag{{Key: "k"}}, ObjectSizeLessThan: ptr[int64](9)}},
				Expiration:                  &Expiration{Date: &midnight},
				NoncurrentVersionExpiration: &NoncurrentVersionExpiration{NoncurrentDays: ptr(2), NewerNoncurrentVersions: ptr(3)}},
			{ID: "uploads", Status: Enabled, Filter: &Filter{ObjectSizeGreaterThan: ptr[int64](1)}, Expiration: days(1)},
			{ID: "empty", Status: Enabled, Filter: &Filter{},
				Expiration: days(5), AbortIncompleteMultipartUpload: &AbortIncompleteMultipartUpload{DaysAfterInitiation: ptr(4)}},
		}},
		{Rules: []Rule{ // V1: rule-level prefixes
			legacyRule("v1", "a/", &Expiration{ExpiredObjectDeleteMarker: ptr(true)}),
			legacyRule("v1b", "b/", days(3)),
		}},
	} {
		if err := c.Validate(); err != nil {
			t.Fatalf("the test's configuration: %v", err)
		}
		doc, err := c.Encode()
		if err != nil {
			t.Fatal(err)
		}
		got, err := Decode(doc)
		if err != nil {
			t.Fatalf("Decode(%s): %v", doc, err)
		}
		if diff := cmp.Diff(c, got); diff != "" {
			t.Errorf("round trip (-want +got):\n%s", diff)
		}
	}
	ok := `{"v":1,"rules":[{"id":"a","status":"Enabled","filter":{"prefix":"logs/"},"expiration":{"days":1}}]}`
	if _, err := Decode([]byte(ok)); err != nil {
		t.Fatalf("Decode(%s): %v", ok, err)
	}
	for _, bad := range []string{
		`{"v":2,"rules":[]}`, `{"rules":[]}`, `not json`,
		`{"v":1,"rules":[]}`, // no rules: never stored
		// A field this Coffer does not know: read without it, the
		// filter would select every object.
		`{"v":1,"rules":[{"id":"a","status":"Enabled","filter":{"prefix":"logs/","sizeBetween":[1,2]},"expiration":{"days":1}}]}`,
		`{"v":1,"rules":[{"id":"a","status":"Enabled","filter":{},"expiration":{"days":0}}]}`,          // not valid
		`{"v":1,"rules":[{"id":"a","status":"Enabled","filter":{},"noncurrentVersionExpiration":{}}]}`, // no NoncurrentDays
		`{"v":1,"rules":[{"id":"","status":"Enabled","filter":{},"expiration":{"days":1}}]}`,           // no ID
		`{"v":1,"rules":[{"id":"a","status":"Maybe","filter":{},"expiration":{"days":1}}]}`,
		ok + `{}`, // data after the document
	} {
		if _, err := Decode([]byte(bad)); err == nil {
			t.Errorf("Decode(%s) succeeded", bad)
		}
	}
}

// TestDecodeStoredBeforeLimit: a configuration stored before Coffer
// refused NewerNoncurrentVersions over 100 is still read and applied as
// it was accepted; a new put of it is refused.
func TestDecodeStoredBeforeLimit(t *testing.T) {
	c := &Configuration{Rules: []Rule{{ID: "keep", Status: Enabled, Filter: &Filter{},
		Expiration:                  &Expiration{Days: ptr(30)},
		NoncurrentVersionExpiration: &NoncurrentVersionExpiration{NoncurrentDays: ptr(1), NewerNoncurrentVersions: ptr(150)}}}}
	doc, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Decode(doc); err != nil {
		t.Errorf("a configuration stored before the limit: %v", err)
	}
	if err := c.Validate(); s3err.CodeOf(err) != s3err.InvalidArgument {
		t.Errorf("Validate = %v, want InvalidArgument", err)
	}
}
