// Package postpolicy parses the policy of a browser form upload (S3's POST
// Object) and checks a form against it: its expiration, its conditions on
// the form's fields (exact match, starts-with) and the range of the file's
// length. See
// https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-HTTPPOSTConstructPolicy.html
//
// The package knows the policy language only: reading the form and
// verifying the policy's signature are the caller's (s3api, sigv4).
package postpolicy

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/coffer-s3/coffer/internal/s3err"
)

// MaxSize is the longest policy document accepted, decoded. S3 bounds the
// form fields before the file to 20 KB; a policy cannot be longer.
const MaxSize = 20 << 10

// Op is the kind of a condition.
type Op string

// The condition kinds. A {"field": "value"} condition is OpEq.
const (
	OpEq         Op = "eq"
	OpStartsWith Op = "starts-with"
)

// Condition is one condition on a form field.
type Condition struct {
	Op    Op
	Field string // the field's name in lower case, without the "$"
	Value string
	raw   string // as written in the policy, for error messages
}

// Policy is a parsed policy document.
type Policy struct {
	Expiration time.Time
	Conditions []Condition
	// MinLength and MaxLength bound the file's length when HasLength
	// (a content-length-range condition); without one, only S3's 5 GiB
	// limit applies.
	MinLength, MaxLength int64
	HasLength            bool
}

// Decode parses the policy field of a form: base64 of a JSON document.
// Errors are *s3err.Error: InvalidPolicyDocument for a policy that does not
// decode or parse, or breaks the language's rules.
func Decode(field string) (*Policy, error) {
	if base64.StdEncoding.DecodedLen(len(field)) > MaxSize+3 {
		return nil, invalid("Policy document is longer than %d bytes.", MaxSize)
	}
	doc, err := base64.StdEncoding.DecodeString(field)
	if err != nil {
		return nil, invalid("Invalid Policy: Invalid 'base64' encoding.")
	}
	return Parse(doc)
}

// Parse parses a decoded policy document. Member names are case-sensitive
// ("expiration", "conditions"); unknown members are ignored. Condition
// operators and field names are not case-sensitive; values are.
func Parse(doc []byte) (*Policy, error) {
	if len(doc) > MaxSize {
		return nil, invalid("Policy document is longer than %d bytes.", MaxSize)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(doc, &top); err != nil || top == nil {
		return nil, invalid("Invalid Policy: Invalid JSON.")
	}
	rawExp, ok := top["expiration"]
	if !ok {
		return nil, invalid("Invalid Policy: Policy missing expiration.")
	}
	var exp string
	if err := json.Unmarshal(rawExp, &exp); err != nil {
		return nil, invalid("Invalid Policy: Invalid 'expiration' value: %s", rawExp)
	}
	t, err := time.Parse(time.RFC3339Nano, exp)
	if err != nil {
		return nil, invalid("Invalid Policy: Invalid 'expiration' value: '%s'", exp)
	}
	p := &Policy{Expiration: t}
	rawConds, ok := top["conditions"]
	if !ok {
		return nil, invalid("Invalid Policy: Policy missing conditions.")
	}
	var conds []json.RawMessage
	if err := json.Unmarshal(rawConds, &conds); err != nil || conds == nil {
		return nil, invalid("Invalid Policy: Invalid 'conditions' value: must be a list.")
	}
	for _, c := range conds {
		if err := p.addCondition(c); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// addCondition parses one condition: an object of exact matches, or a list
// [op, "$field", value] or ["content-length-range", min, max].
func (p *Policy) addCondition(raw json.RawMessage) error {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) > 0 && raw[0] == '{':
		return p.addObject(raw)
	case len(raw) > 0 && raw[0] == '[':
		return p.addList(raw)
	}
	return invalid("Invalid Policy: Invalid Simple-Condition: %s", raw)
}

func (p *Policy) addObject(raw json.RawMessage) error {
	// Decoded in order, so that conditions keep the policy's order.
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil { // {
		return invalid("Invalid Policy: Invalid JSON.")
	}
	n := 0
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return invalid("Invalid Policy: Invalid JSON.")
		}
		name := tok.(string) // object keys are strings
		var v any
		if err := dec.Decode(&v); err != nil {
			return invalid("Invalid Policy: Invalid JSON.")
		}
		value, ok := scalar(v)
		if !ok {
			return invalid("Invalid Policy: Invalid Simple-Condition: value of %q must be a string.", name)
		}
		p.Conditions = append(p.Conditions, Condition{Op: OpEq, Field: strings.ToLower(name), Value: value, raw: string(raw)})
		n++
	}
	if n == 0 {
		return invalid("Invalid Policy: Invalid Simple-Condition: Simple-Conditions must have exactly one property specified.")
	}
	return nil
}

func (p *Policy) addList(raw json.RawMessage) error {
	var l []any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&l); err != nil {
		return invalid("Invalid Policy: Invalid JSON.")
	}
	if len(l) == 0 {
		return invalid("Invalid Policy: Invalid Condition: %s", raw)
	}
	op, ok := l[0].(string)
	if !ok {
		return invalid("Invalid Policy: Invalid Condition: %s", raw)
	}
	switch Op(strings.ToLower(op)) {
	case "content-length-range":
		if len(l) != 3 {
			return invalid("Invalid Policy: Invalid content-length-range Condition: %s", raw)
		}
		lo, ok1 := length(l[1])
		hi, ok2 := length(l[2])
		if !ok1 || !ok2 || lo > hi {
			return invalid("Invalid Policy: Invalid content-length-range Condition: %s", raw)
		}
		if p.HasLength {
			// Several ranges: the file must be in each.
			lo, hi = max(lo, p.MinLength), min(hi, p.MaxLength)
		}
		p.MinLength, p.MaxLength, p.HasLength = lo, hi, true
		return nil
	case OpEq, OpStartsWith:
		if len(l) != 3 {
			return invalid("Invalid Policy: Invalid %s Condition: wrong number of arguments: %s", op, raw)
		}
		field, ok := l[1].(string)
		if !ok || !strings.HasPrefix(field, "$") || len(field) < 2 {
			return invalid("Invalid Policy: Invalid %s Condition: the field must be a string starting with '$': %s", op, raw)
		}
		value, ok := scalar(l[2])
		if !ok {
			return invalid("Invalid Policy: Invalid %s Condition: the value must be a string: %s", op, raw)
		}
		p.Conditions = append(p.Conditions, Condition{Op: Op(strings.ToLower(op)), Field: strings.ToLower(field[1:]), Value: value, raw: string(raw)})
		return nil
	}
	return invalid("Invalid Policy: Invalid Condition: unknown operation %q.", op)
}

// scalar returns a condition value as a string: strings as they are,
// numbers as written (success_action_status may be either).
func scalar(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case json.Number:
		return v.String(), true
	}
	return "", false
}

// length returns a content-length-range bound: a non-negative integer,
// as a number or a string of digits.
func length(v any) (int64, bool) {
	var s string
	switch v := v.(type) {
	case json.Number:
		s = v.String()
	case string:
		s = v
	default:
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		// 1e6 and 1024.0 are numbers too.
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || f != math.Trunc(f) || f < 0 || f > math.MaxInt64/2 {
			return 0, false
		}
		n = int64(f)
	}
	return n, n >= 0
}

// Form is what a form upload's fields say: lower-case field names and
// their values, and the names in the order sent.
type Form struct {
	Values map[string]string
	Names  []string
}

// Set records a field. It reports false if the form already had one of that
// name (in any case).
func (f *Form) Set(name, value string) bool {
	k := strings.ToLower(name)
	if f.Values == nil {
		f.Values = make(map[string]string)
	}
	if _, dup := f.Values[k]; dup {
		return false
	}
	f.Values[k] = value
	f.Names = append(f.Names, k)
	return true
}

// Get returns the value of the field name (lower case), "" if absent.
func (f *Form) Get(name string) string { return f.Values[name] }

// exempt reports whether a field needs no condition: the signature and
// policy themselves, the SigV2 key, fields prefixed x-ignore-, and the
// file's checksum (x-amz-checksum-*, which guards the upload's integrity
// and grants nothing; S3 accepts it unnamed, as the s3-tests suite
// checks).
func exempt(name string) bool {
	switch name {
	case "policy", "x-amz-signature", "signature", "awsaccesskeyid", "file":
		return true
	}
	return strings.HasPrefix(name, "x-ignore-") || strings.HasPrefix(name, "x-amz-checksum-")
}

// Check checks form against the policy at time now: the policy has not
// expired, every condition holds (a field the form lacks has the value
// ""), and every field of the form but the exempt ones is named by a
// condition. The caller puts the bucket the request addresses in the form
// as "bucket", whatever the form said. Errors are *s3err.Error:
// AccessDenied with S3's "Invalid according to Policy" messages.
func (p *Policy) Check(form *Form, now time.Time) error {
	if !now.Before(p.Expiration) {
		return denied("Invalid according to Policy: Policy expired.")
	}
	named := make(map[string]bool, len(p.Conditions))
	for _, c := range p.Conditions {
		named[c.Field] = true
		if !c.holds(form.Get(c.Field)) {
			return denied("Invalid according to Policy: Policy Condition failed: %s", c.raw)
		}
	}
	var extra []string
	for _, name := range form.Names {
		if !named[name] && !exempt(name) && name != "bucket" {
			extra = append(extra, name)
		}
	}
	if len(extra) > 0 {
		return denied("Invalid according to Policy: Extra input fields: %s", strings.Join(extra, ", "))
	}
	return nil
}

// holds reports whether the field's value v meets c. A starts-with on
// Content-Type holds when each of a comma-separated list of types starts
// with the prefix, as S3 does for forms that upload several types.
func (c Condition) holds(v string) bool {
	switch c.Op {
	case OpEq:
		return v == c.Value
	case OpStartsWith:
		if c.Field == "content-type" && strings.Contains(v, ",") {
			for t := range strings.SplitSeq(v, ",") {
				if !strings.HasPrefix(strings.TrimSpace(t), c.Value) {
					return false
				}
			}
			return true
		}
		return strings.HasPrefix(v, c.Value)
	}
	return false
}

// LengthReader returns r, checked against the policy's content-length-range
// as it is read: a file that goes past the maximum fails with
// EntityTooLarge as soon as it does, one that ends below the minimum with
// EntityTooSmall at its end.
func (p *Policy) LengthReader(r io.Reader) io.Reader {
	if !p.HasLength {
		return r
	}
	return &lengthReader{r: r, min: p.MinLength, left: p.MaxLength}
}

type lengthReader struct {
	r         io.Reader
	min, left int64
	n         int64
}

func (l *lengthReader) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	l.n += int64(n)
	if int64(n) > l.left {
		return 0, s3err.New(s3err.EntityTooLarge, "").
			With("MaxSizeAllowed", strconv.FormatInt(l.n-int64(n)+l.left, 10))
	}
	l.left -= int64(n)
	if err == io.EOF && l.n < l.min {
		return n, s3err.New(s3err.EntityTooSmall, "").
			With("ProposedSize", strconv.FormatInt(l.n, 10)).
			With("MinSizeAllowed", strconv.FormatInt(l.min, 10))
	}
	return n, err
}

func invalid(format string, args ...any) *s3err.Error {
	return s3err.Newf(s3err.InvalidPolicyDocument, "", fmt.Sprintf(format, args...))
}

func denied(format string, args ...any) *s3err.Error {
	return s3err.Newf(s3err.AccessDenied, "", fmt.Sprintf(format, args...))
}
