package lifecycle

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/s3err"
)

// Limits S3 sets on a lifecycle configuration. See
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutBucketLifecycleConfiguration.html
const (
	MaxRules  = 1000
	maxIDLen  = 255              // characters
	maxFilter = 1099511627776000 // the largest ObjectSize* S3 accepts (1000 TiB)
	// maxNewerNoncurrent is the most NewerNoncurrentVersions S3 keeps.
	maxNewerNoncurrent = 100
)

// Rule statuses.
const (
	Enabled  = "Enabled"
	Disabled = "Disabled"
)

// Values of x-amz-transition-default-minimum-object-size. Coffer has one
// storage class and transitions nothing; the setting is kept so that a
// configuration reads back as it was set.
const (
	MinimumSizeAll     = "all_storage_classes_128K" // S3's default
	MinimumSizeByClass = "varies_by_storage_class"
)

// Tag is an object tag a filter names.
type Tag = objects.Tag

// Configuration is a bucket's lifecycle configuration: its rules in the
// order given. The pointer fields record which elements a client gave, so
// that GetBucketLifecycleConfiguration returns the configuration in the
// form it was put. Build it from a request, then Validate it.
type Configuration struct {
	Rules []Rule `json:"rules"`
	// MinimumSize is x-amz-transition-default-minimum-object-size:
	// MinimumSizeAll or MinimumSizeByClass.
	MinimumSize string `json:"minimumSize,omitempty"`
}

// Rule is one lifecycle rule. It names its objects with either the
// legacy Prefix (a configuration of "Lifecycle V1") or a Filter ("V2"),
// never both.
type Rule struct {
	ID     string  `json:"id"`
	Status string  `json:"status"`
	Prefix *string `json:"prefix,omitempty"`
	Filter *Filter `json:"filter,omitempty"`

	Expiration                     *Expiration                     `json:"expiration,omitempty"`
	NoncurrentVersionExpiration    *NoncurrentVersionExpiration    `json:"noncurrentVersionExpiration,omitempty"`
	AbortIncompleteMultipartUpload *AbortIncompleteMultipartUpload `json:"abortIncompleteMultipartUpload,omitempty"`

	// Transitions move objects to other storage classes, which Coffer
	// does not have: Validate checks them as S3 does, then refuses them
	// with NotImplemented. They are never stored.
	Transitions                  []Transition                  `json:"-"`
	NoncurrentVersionTransitions []NoncurrentVersionTransition `json:"-"`
}

// Filter selects a rule's objects by exactly one of its fields, or all
// objects when empty.
type Filter struct {
	Prefix                *string `json:"prefix,omitempty"`
	Tag                   *Tag    `json:"tag,omitempty"`
	ObjectSizeGreaterThan *int64  `json:"sizeGreaterThan,omitempty"`
	ObjectSizeLessThan    *int64  `json:"sizeLessThan,omitempty"`
	And                   *And    `json:"and,omitempty"`
}

// And selects objects matching all of its predicates.
type And struct {
	Prefix                *string `json:"prefix,omitempty"`
	Tags                  []Tag   `json:"tags,omitempty"`
	ObjectSizeGreaterThan *int64  `json:"sizeGreaterThan,omitempty"`
	ObjectSizeLessThan    *int64  `json:"sizeLessThan,omitempty"`
}

// Expiration expires current versions after Days or on Date, or (with
// ExpiredObjectDeleteMarker) removes delete markers left alone: exactly
// one of the three.
type Expiration struct {
	Days                      *int       `json:"days,omitempty"`
	Date                      *time.Time `json:"date,omitempty"`
	ExpiredObjectDeleteMarker *bool      `json:"expiredObjectDeleteMarker,omitempty"`
}

// NoncurrentVersionExpiration removes noncurrent versions NoncurrentDays
// after they became noncurrent, keeping the NewerNoncurrentVersions
// newest of them whatever their age.
type NoncurrentVersionExpiration struct {
	NoncurrentDays          *int `json:"days,omitempty"`
	NewerNoncurrentVersions *int `json:"newer,omitempty"`
}

// AbortIncompleteMultipartUpload aborts multipart uploads
// DaysAfterInitiation days after they began.
type AbortIncompleteMultipartUpload struct {
	DaysAfterInitiation *int `json:"days,omitempty"`
}

// Transition is a Transition element of a rule.
type Transition struct {
	Days         *int
	Date         *time.Time
	StorageClass string
}

// NoncurrentVersionTransition is a NoncurrentVersionTransition element.
type NoncurrentVersionTransition struct {
	NoncurrentDays          *int
	NewerNoncurrentVersions *int
	StorageClass            string
}

// transitionClasses are the storage classes S3 transitions objects to;
// any other value does not validate against S3's schema.
var transitionClasses = []string{"GLACIER", "STANDARD_IA", "ONEZONE_IA", "INTELLIGENT_TIERING", "DEEP_ARCHIVE", "GLACIER_IR"}

func malformed(msg string) error {
	e := s3err.New(s3err.MalformedXML, "")
	e.Err = fmt.Errorf("lifecycle: %s", msg)
	return e
}

func invalidArgument(msg, name, value string) error {
	e := s3err.Newf(s3err.InvalidArgument, "", msg)
	if name != "" {
		e = e.With("ArgumentName", name).With("ArgumentValue", value)
	}
	return e
}

func invalidRequest(msg string) error { return s3err.Newf(s3err.InvalidRequest, "", msg) }

// Validate checks c as S3 checks a PutBucketLifecycleConfiguration and
// returns the first fault as S3 answers it: MalformedXML for what S3's
// schema rejects (checked first, over every rule), InvalidArgument and
// InvalidRequest with S3's messages for the rest, and NotImplemented for a
// valid configuration with transitions, since Coffer has one storage
// class. It does not assign IDs (AssignIDs) and does not change c.
func (c *Configuration) Validate() error {
	if err := c.validate(); err != nil {
		return err
	}
	// Limits added after configurations were first stored: a put must
	// meet them, a stored configuration put before is still applied as
	// it was accepted (Decode checks it with validate).
	for _, r := range c.Rules {
		// "You can specify up to 100 noncurrent versions to retain" (the
		// NoncurrentVersionExpiration reference); S3's exact message for
		// more is not known.
		if n := r.NoncurrentVersionExpiration; n != nil && n.NewerNoncurrentVersions != nil &&
			*n.NewerNoncurrentVersions > maxNewerNoncurrent {
			return invalidArgument(fmt.Sprintf("'NewerNoncurrentVersions' cannot be greater than %d", maxNewerNoncurrent), "", "")
		}
	}
	return nil
}

// validate is Validate without the limits added since configurations
// were first stored.
func (c *Configuration) validate() error {
	for i := range c.Rules {
		if err := c.Rules[i].checkSchema(); err != nil {
			return err
		}
	}
	switch {
	case len(c.Rules) == 0:
		return invalidRequest("At least one lifecycle rule must be specified.")
	case len(c.Rules) > MaxRules:
		return invalidRequest("The number of lifecycle rules must not exceed the allowed limit of 1000 rules.")
	}
	switch c.MinimumSize {
	case "", MinimumSizeAll, MinimumSizeByClass:
	default:
		return invalidRequest("Invalid TransitionDefaultMinimumObjectSize found: " + c.MinimumSize)
	}
	ids := make(map[string]bool, len(c.Rules))
	for _, r := range c.Rules {
		if r.ID == "" {
			continue
		}
		if utf8.RuneCountInString(r.ID) > maxIDLen {
			return invalidArgument("ID length should not exceed allowed limit of 255", "", "")
		}
		if ids[r.ID] {
			return invalidArgument("Rule ID must be unique. Found same ID for more than one rule", "", "")
		}
		ids[r.ID] = true
	}
	v2 := c.Rules[0].Filter != nil
	for i := range c.Rules {
		if err := c.Rules[i].check(v2); err != nil {
			return err
		}
	}
	if !v2 {
		if err := c.checkOverlap(); err != nil {
			return err
		}
	}
	for _, r := range c.Rules {
		if len(r.Transitions) > 0 || len(r.NoncurrentVersionTransitions) > 0 {
			return s3err.Newf(s3err.NotImplemented, "",
				"Lifecycle transitions are not implemented: Coffer keeps every object in the STANDARD storage class.")
		}
	}
	return nil
}

// checkSchema rejects what does not validate against S3's schema.
func (r *Rule) checkSchema() error {
	switch {
	case r.Status != Enabled && r.Status != Disabled:
		return malformed("Status must be Enabled or Disabled")
	case r.Prefix == nil && r.Filter == nil:
		return malformed("a rule needs a Filter or a Prefix")
	}
	if f := r.Filter; f != nil {
		n := 0
		for _, set := range []bool{f.Prefix != nil, f.Tag != nil, f.ObjectSizeGreaterThan != nil, f.ObjectSizeLessThan != nil, f.And != nil} {
			if set {
				n++
			}
		}
		if n > 1 {
			return malformed("a Filter has exactly one of Prefix, Tag, ObjectSizeGreaterThan, ObjectSizeLessThan and And")
		}
		if f.Tag != nil && f.Tag.Key == "" {
			return malformed("a Tag needs a Key")
		}
		if a := f.And; a != nil {
			if a.Prefix == nil && len(a.Tags) == 0 && a.ObjectSizeGreaterThan == nil && a.ObjectSizeLessThan == nil {
				return malformed("an And needs predicates")
			}
			for _, t := range a.Tags {
				if t.Key == "" {
					return malformed("a Tag needs a Key")
				}
			}
		}
	}
	if e := r.Expiration; e != nil {
		n := 0
		for _, set := range []bool{e.Days != nil, e.Date != nil, e.ExpiredObjectDeleteMarker != nil} {
			if set {
				n++
			}
		}
		if n != 1 {
			return malformed("an Expiration has exactly one of Days, Date and ExpiredObjectDeleteMarker")
		}
	}
	if n := r.NoncurrentVersionExpiration; n != nil && n.NoncurrentDays == nil {
		return malformed("a NoncurrentVersionExpiration needs NoncurrentDays")
	}
	if a := r.AbortIncompleteMultipartUpload; a != nil && a.DaysAfterInitiation == nil {
		return malformed("an AbortIncompleteMultipartUpload needs DaysAfterInitiation")
	}
	for _, t := range r.Transitions {
		if !slices.Contains(transitionClasses, t.StorageClass) {
			return malformed("unknown transition storage class " + strconv.Quote(t.StorageClass))
		}
		if (t.Days == nil) == (t.Date == nil) {
			return malformed("a Transition has exactly one of Days and Date")
		}
	}
	for _, t := range r.NoncurrentVersionTransitions {
		if !slices.Contains(transitionClasses, t.StorageClass) {
			return malformed("unknown transition storage class " + strconv.Quote(t.StorageClass))
		}
		if t.NoncurrentDays == nil {
			return malformed("a NoncurrentVersionTransition needs NoncurrentDays")
		}
	}
	return nil
}

// check applies S3's rules to a rule whose form is valid; v2 says whether
// the configuration uses filters (its first rule has one).
func (r *Rule) check(v2 bool) error {
	switch {
	case v2 && r.Prefix != nil:
		return invalidRequest("Base level prefix cannot be used in Lifecycle V2, prefixes are only supported in the Filter.")
	case !v2 && r.Filter != nil:
		return invalidRequest("Filter element can only be used in Lifecycle V2.")
	case !v2 && r.NoncurrentVersionExpiration != nil && r.NoncurrentVersionExpiration.NewerNoncurrentVersions != nil:
		return invalidRequest("NewerNoncurrentVersions element can only be used in Lifecycle V2.")
	case r.Expiration == nil && r.NoncurrentVersionExpiration == nil && r.AbortIncompleteMultipartUpload == nil &&
		len(r.Transitions) == 0 && len(r.NoncurrentVersionTransitions) == 0:
		return invalidRequest("At least one action needs to be specified in a rule")
	}
	if err := r.Filter.check(); err != nil {
		return err
	}
	if e := r.Expiration; e != nil {
		if e.Days != nil && *e.Days <= 0 {
			return invalidArgument("'Days' for Expiration action must be a positive integer", "", "")
		}
		if e.Date != nil && !atMidnight(*e.Date) {
			return invalidArgument("'Date' must be at midnight GMT", "Date", e.Date.UTC().Format(time.RFC3339))
		}
	}
	if n := r.NoncurrentVersionExpiration; n != nil {
		if *n.NoncurrentDays <= 0 {
			return invalidArgument("'NoncurrentDays' for NoncurrentVersionExpiration action must be a positive integer", "", "")
		}
		if n.NewerNoncurrentVersions != nil && *n.NewerNoncurrentVersions <= 0 {
			return invalidArgument("'NewerNoncurrentVersions' must be a positive integer", "", "")
		}
	}
	if a := r.AbortIncompleteMultipartUpload; a != nil && *a.DaysAfterInitiation <= 0 {
		return invalidArgument("'DaysAfterInitiation' for AbortIncompleteMultipartUpload action must be a positive integer", "", "")
	}
	tags, sizes := r.Filter.usesTags(), r.Filter.usesSizes()
	marker := r.Expiration != nil && r.Expiration.ExpiredObjectDeleteMarker != nil
	switch {
	case marker && tags:
		return invalidRequest("ExpiredObjectDeleteMarker cannot be specified with Tags.")
	case marker && sizes:
		return invalidRequest("ExpiredObjectDeleteMarker cannot be specified with Object Size.")
	case r.AbortIncompleteMultipartUpload != nil && tags:
		return invalidRequest("AbortIncompleteMultipartUpload cannot be specified with Tags.")
	case r.AbortIncompleteMultipartUpload != nil && sizes:
		return invalidRequest("AbortIncompleteMultipartUpload cannot be specified with Object Size.")
	}
	for _, t := range r.Transitions {
		if t.Days != nil && *t.Days < 0 {
			return invalidArgument("'Days' in Transition action must be greater than or equal to 0", "", "")
		}
		if t.Date != nil && !atMidnight(*t.Date) {
			return invalidArgument("'Date' must be at midnight GMT", "Date", t.Date.UTC().Format(time.RFC3339))
		}
	}
	for _, t := range r.NoncurrentVersionTransitions {
		if *t.NoncurrentDays < 0 {
			return invalidArgument("'NoncurrentDays' in NoncurrentVersionTransition action must be greater than or equal to 0", "", "")
		}
		if t.NewerNoncurrentVersions != nil && !v2 {
			return invalidRequest("NewerNoncurrentVersions element can only be used in Lifecycle V2.")
		}
	}
	return nil
}

// check applies S3's rules to a filter's predicates.
func (f *Filter) check() error {
	if f == nil {
		return nil
	}
	if err := checkSizes(f.ObjectSizeGreaterThan, f.ObjectSizeLessThan); err != nil {
		return err
	}
	if a := f.And; a != nil {
		if err := checkSizes(a.ObjectSizeGreaterThan, a.ObjectSizeLessThan); err != nil {
			return err
		}
		seen := make(map[string]bool, len(a.Tags))
		for _, t := range a.Tags {
			if seen[t.Key] {
				return invalidRequest("Duplicate Tag Keys are not allowed.")
			}
			seen[t.Key] = true
		}
	}
	return nil
}

func checkSizes(gt, lt *int64) error {
	switch {
	case gt != nil && (*gt < 0 || *gt > maxFilter):
		return invalidRequest("'ObjectSizeGreaterThan' should be between 0 and 1099511627776000.")
	case lt != nil && (*lt < 1 || *lt > maxFilter):
		return invalidRequest("'ObjectSizeLessThan' should be between 1 and 1099511627776000.")
	case gt != nil && lt != nil && *gt >= *lt:
		return invalidRequest("'ObjectSizeLessThan' has to be a value greater than 'ObjectSizeGreaterThan'.")
	}
	return nil
}

// usesTags reports whether f selects by tags.
func (f *Filter) usesTags() bool {
	return f != nil && (f.Tag != nil || f.And != nil && len(f.And.Tags) > 0)
}

// usesSizes reports whether f selects by object size.
func (f *Filter) usesSizes() bool {
	return f != nil && (f.ObjectSizeGreaterThan != nil || f.ObjectSizeLessThan != nil ||
		f.And != nil && (f.And.ObjectSizeGreaterThan != nil || f.And.ObjectSizeLessThan != nil))
}

// checkOverlap rejects, in a configuration of rule-level prefixes (V1),
// two rules taking the same kind of action on prefixes one of which
// begins the other, as S3 does.
func (c *Configuration) checkOverlap() error {
	kinds := []struct {
		name  string
		takes func(*Rule) bool
	}{
		{"Expiration", func(r *Rule) bool { return r.Expiration != nil }},
		{"Transition", func(r *Rule) bool { return len(r.Transitions) > 0 }},
		{"NoncurrentVersionTransition", func(r *Rule) bool { return len(r.NoncurrentVersionTransitions) > 0 }},
		{"NoncurrentVersionExpiration", func(r *Rule) bool { return r.NoncurrentVersionExpiration != nil }},
		{"AbortIncompleteMultipartUpload", func(r *Rule) bool { return r.AbortIncompleteMultipartUpload != nil }},
	}
	for _, k := range kinds {
		var ps []string
		for i := range c.Rules {
			if r := &c.Rules[i]; r.Prefix != nil && k.takes(r) {
				ps = append(ps, *r.Prefix)
			}
		}
		slices.Sort(ps)
		// In sorted order, a prefix that begins another begins the next.
		for i := 1; i < len(ps); i++ {
			if strings.HasPrefix(ps[i], ps[i-1]) {
				return invalidRequest(fmt.Sprintf("Found overlapping prefixes '%s' and '%s' for same action type '%s'", ps[i-1], ps[i], k.name))
			}
		}
	}
	return nil
}

// atMidnight reports whether t is midnight UTC.
func atMidnight(t time.Time) bool {
	u := t.UTC()
	return u.Hour() == 0 && u.Minute() == 0 && u.Second() == 0 && u.Nanosecond() == 0
}

// ParseDate parses the Date of an Expiration or a Transition: an ISO 8601
// timestamp (2027-01-01T00:00:00Z, with or without fractional seconds or
// with a zone offset) or a date alone (2027-01-01). Anything else is
// MalformedXML, as it does not validate against S3's schema; a time that
// parses but is not midnight UTC is for Validate to refuse.
func ParseDate(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, malformed("Date " + strconv.Quote(s) + " is not an ISO 8601 time")
}

// AssignIDs gives every rule without an ID one from newID, as S3 names
// the rules it is given without one; an ID already taken is drawn again.
func (c *Configuration) AssignIDs(newID func() string) {
	taken := make(map[string]bool, len(c.Rules))
	for _, r := range c.Rules {
		taken[r.ID] = true
	}
	for i := range c.Rules {
		if c.Rules[i].ID != "" {
			continue
		}
		id := newID()
		for taken[id] {
			id = newID()
		}
		taken[id] = true
		c.Rules[i].ID = id
	}
}

// NewRuleID returns a random rule ID in the form S3 gives the rules it
// names: a random UUID, base64-encoded (48 characters).
func NewRuleID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	u := h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
	return base64.StdEncoding.EncodeToString([]byte(u))
}

// docVersion is the version of the stored document.
const docVersion = 1

// storedDoc is how a configuration is stored with its bucket
// (objects.ConfigLifecycle): versioned JSON, so that a later Coffer can
// read what an earlier one wrote.
type storedDoc struct {
	Version int `json:"v"`
	Configuration
}

// Encode returns the document stored for c.
func (c *Configuration) Encode() ([]byte, error) {
	b, err := json.Marshal(storedDoc{Version: docVersion, Configuration: *c})
	if err != nil {
		return nil, fmt.Errorf("lifecycle: encode configuration: %w", err)
	}
	return b, nil
}

// Decode reads a stored document back and checks it again as Validate
// checks a configuration that is put, every rule with its ID. It fails on
// a document of another version, one with a field this Coffer does not
// know (a newer Coffer's filter read without it would select every
// object), one that does not decode or one that is not valid: stored
// configurations were valid when they were put, so any of these means
// corruption or a newer Coffer, and the bucket's rules are not applied
// (the lifecycle worker reports the error) rather than applied wrongly.
func Decode(doc []byte) (*Configuration, error) {
	var d storedDoc
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("lifecycle: decode configuration: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("lifecycle: decode configuration: data after the document")
	}
	if d.Version != docVersion {
		return nil, fmt.Errorf("lifecycle: configuration document of version %d, want %d", d.Version, docVersion)
	}
	c := d.Configuration
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("lifecycle: stored configuration is not valid: %w", err)
	}
	for _, r := range c.Rules {
		if r.ID == "" {
			return nil, errors.New("lifecycle: stored configuration has a rule without an ID")
		}
	}
	return &c, nil
}
