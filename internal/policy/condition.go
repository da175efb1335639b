package policy

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

// condKey identifies a condition key Coffer puts in the request context.
type condKey uint8

const (
	keySourceIP condKey = iota
	keySecureTransport
	keyCurrentTime
	keyEpochTime
	keyUsername
	keyUserAgent
	keyReferer
	keyPrefix
	keyDelimiter
	keyMaxKeys
	keySignatureVersion
	keyAuthType
	// The request-header keys: each is the value of one request header
	// (requestHeaders), absent when the request does not carry it.
	keyACL
	keyGrantRead
	keyGrantWrite
	keyGrantReadACP
	keyGrantWriteACP
	keyGrantFullControl
	keyCopySource
	keyMetadataDirective
	keyStorageClass
	keyContentSHA256
	keyServerSideEncryption
	keyIfMatch
	keyIfNoneMatch
	// The tag keys are families: s3:ExistingObjectTag/<tag-key> and
	// s3:RequestObjectTag/<tag-key> name one tag each (the condition's
	// tagKey); s3:RequestObjectTagKeys is multivalued.
	keyExistingObjectTag
	keyRequestObjectTag
	keyRequestObjectTagKeys
	numKeys
)

// keyInfo describes a condition key: its canonical name, which operator
// families apply to it (string operators see the key's text), and whether
// it may be a policy variable (single-valued keys whose value is text).
type keyInfo struct {
	name     string
	families opFamilies
	variable bool
}

type opFamilies uint8

const (
	famString opFamilies = 1 << iota
	famNumeric
	famDate
	famBool
	famIP
)

// keys lists the supported condition keys. The value types are those of
// https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_condition-keys.html
// and the Amazon S3 condition keys of the Service Authorization Reference.
var keys = [numKeys]keyInfo{
	keySourceIP:         {name: "aws:SourceIp", families: famIP},
	keySecureTransport:  {name: "aws:SecureTransport", families: famBool | famString, variable: true},
	keyCurrentTime:      {name: "aws:CurrentTime", families: famDate},
	keyEpochTime:        {name: "aws:EpochTime", families: famDate | famNumeric},
	keyUsername:         {name: "aws:username", families: famString, variable: true},
	keyUserAgent:        {name: "aws:UserAgent", families: famString, variable: true},
	keyReferer:          {name: "aws:Referer", families: famString, variable: true},
	keyPrefix:           {name: "s3:prefix", families: famString, variable: true},
	keyDelimiter:        {name: "s3:delimiter", families: famString, variable: true},
	keyMaxKeys:          {name: "s3:max-keys", families: famNumeric | famString, variable: true},
	keySignatureVersion: {name: "s3:signatureversion", families: famString, variable: true},
	keyAuthType:         {name: "s3:authType", families: famString, variable: true},
	// The request-header keys are strings (requestHeaders).
	keyACL:                  {name: "s3:x-amz-acl", families: famString},
	keyGrantRead:            {name: "s3:x-amz-grant-read", families: famString},
	keyGrantWrite:           {name: "s3:x-amz-grant-write", families: famString},
	keyGrantReadACP:         {name: "s3:x-amz-grant-read-acp", families: famString},
	keyGrantWriteACP:        {name: "s3:x-amz-grant-write-acp", families: famString},
	keyGrantFullControl:     {name: "s3:x-amz-grant-full-control", families: famString},
	keyCopySource:           {name: "s3:x-amz-copy-source", families: famString},
	keyMetadataDirective:    {name: "s3:x-amz-metadata-directive", families: famString},
	keyStorageClass:         {name: "s3:x-amz-storage-class", families: famString},
	keyContentSHA256:        {name: "s3:x-amz-content-sha256", families: famString},
	keyServerSideEncryption: {name: "s3:x-amz-server-side-encryption", families: famString},
	keyIfMatch:              {name: "s3:if-match", families: famString},
	keyIfNoneMatch:          {name: "s3:if-none-match", families: famString},
	// Tag values are strings; the tag key after the slash is
	// case-sensitive, as tag keys are.
	keyExistingObjectTag:    {name: "s3:ExistingObjectTag/<key>", families: famString},
	keyRequestObjectTag:     {name: "s3:RequestObjectTag/<key>", families: famString},
	keyRequestObjectTagKeys: {name: "s3:RequestObjectTagKeys", families: famString},
}

// requestHeaders names the request header each request-header key is
// the value of (canonical form, as http.Header keys it). The copy source
// is the exception: its value is Context.CopySource, the header decoded
// to bucket/key. A read-only lookup table.
var requestHeaders = map[condKey]string{
	keyACL:                  "X-Amz-Acl",
	keyGrantRead:            "X-Amz-Grant-Read",
	keyGrantWrite:           "X-Amz-Grant-Write",
	keyGrantReadACP:         "X-Amz-Grant-Read-Acp",
	keyGrantWriteACP:        "X-Amz-Grant-Write-Acp",
	keyGrantFullControl:     "X-Amz-Grant-Full-Control",
	keyCopySource:           "X-Amz-Copy-Source",
	keyMetadataDirective:    "X-Amz-Metadata-Directive",
	keyStorageClass:         "X-Amz-Storage-Class",
	keyContentSHA256:        "X-Amz-Content-Sha256",
	keyServerSideEncryption: "X-Amz-Server-Side-Encryption",
	keyIfMatch:              "If-Match",
	keyIfNoneMatch:          "If-None-Match",
}

// HeaderKeys returns the names of the request-header condition keys
// (s3:x-amz-acl, …), in the order of the key table.
func HeaderKeys() []string {
	var names []string
	for k := range numKeys {
		if _, ok := requestHeaders[k]; ok {
			names = append(names, keys[k].name)
		}
	}
	return names
}

// KeyHeader returns the request header whose value the condition key
// name (case-insensitive) is, if it is a request-header key.
func KeyHeader(name string) (header string, ok bool) {
	k, ok := keyByName[strings.ToLower(name)]
	if !ok {
		return "", false
	}
	header, ok = requestHeaders[k]
	return header, ok
}

// tagKeyPrefixes are the condition key families named by a prefix and a
// tag key. A read-only lookup table.
var tagKeyPrefixes = [...]struct {
	prefix string // lower case
	key    condKey
}{
	{"s3:existingobjecttag/", keyExistingObjectTag},
	{"s3:requestobjecttag/", keyRequestObjectTag},
}

// keyByName maps lower-case key names to keys: condition key names are
// case-insensitive (aws:CurrentTime is AWS:currenttime).
var keyByName = func() map[string]condKey {
	m := make(map[string]condKey, numKeys)
	for k := range numKeys {
		m[strings.ToLower(keys[k].name)] = k
	}
	return m
}()

// lookupKey returns the key a condition names, and for a tag key family
// the tag key (case kept).
func lookupKey(name string) (k condKey, tagKey string, ok bool) {
	lower := strings.ToLower(name)
	for _, f := range tagKeyPrefixes {
		if strings.HasPrefix(lower, f.prefix) && len(name) > len(f.prefix) {
			return f.key, name[len(f.prefix):], true
		}
	}
	k, ok = keyByName[lower]
	if ok && (k == keyExistingObjectTag || k == keyRequestObjectTag) {
		return 0, "", false // the family's placeholder name is not a key
	}
	return k, "", ok
}

func keyNames() string {
	names := make([]string, 0, numKeys)
	for k := range numKeys {
		names = append(names, keys[k].name)
	}
	return strings.Join(names, ", ")
}

func variableNames() string {
	var names []string
	for k := range numKeys {
		if keys[k].variable {
			names = append(names, "${"+keys[k].name+"}")
		}
	}
	return strings.Join(names, ", ")
}

// opKind is a condition operator without its negation, IfExists suffix
// and set qualifier.
type opKind uint8

const (
	opStringEquals opKind = iota
	opStringEqualsIgnoreCase
	opStringLike
	opNumericEquals
	opNumericLessThan
	opNumericLessThanEquals
	opNumericGreaterThan
	opNumericGreaterThanEquals
	opDateEquals
	opDateLessThan
	opDateLessThanEquals
	opDateGreaterThan
	opDateGreaterThanEquals
	opBool
	opIPAddress
	opNull
)

func (k opKind) family() opFamilies {
	switch {
	case k <= opStringLike:
		return famString
	case k <= opNumericGreaterThanEquals:
		return famNumeric
	case k <= opDateGreaterThanEquals:
		return famDate
	case k == opBool:
		return famBool
	case k == opIPAddress:
		return famIP
	}
	return 0 // Null applies to every key
}

// operators are the supported condition operators
// (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_condition_operators.html).
// A negated operator holds when the key matches none of the values.
var operators = map[string]struct {
	kind   opKind
	negate bool
}{
	"StringEquals":              {opStringEquals, false},
	"StringNotEquals":           {opStringEquals, true},
	"StringEqualsIgnoreCase":    {opStringEqualsIgnoreCase, false},
	"StringNotEqualsIgnoreCase": {opStringEqualsIgnoreCase, true},
	"StringLike":                {opStringLike, false},
	"StringNotLike":             {opStringLike, true},
	"NumericEquals":             {opNumericEquals, false},
	"NumericNotEquals":          {opNumericEquals, true},
	"NumericLessThan":           {opNumericLessThan, false},
	"NumericLessThanEquals":     {opNumericLessThanEquals, false},
	"NumericGreaterThan":        {opNumericGreaterThan, false},
	"NumericGreaterThanEquals":  {opNumericGreaterThanEquals, false},
	"DateEquals":                {opDateEquals, false},
	"DateNotEquals":             {opDateEquals, true},
	"DateLessThan":              {opDateLessThan, false},
	"DateLessThanEquals":        {opDateLessThanEquals, false},
	"DateGreaterThan":           {opDateGreaterThan, false},
	"DateGreaterThanEquals":     {opDateGreaterThanEquals, false},
	"Bool":                      {opBool, false},
	"IpAddress":                 {opIPAddress, false},
	"NotIpAddress":              {opIPAddress, true},
	"Null":                      {opNull, false},
}

// unsupportedOperators are AWS operators that no supported key can take.
var unsupportedOperators = map[string]string{
	"ArnEquals":    "no supported condition key is an ARN",
	"ArnNotEquals": "no supported condition key is an ARN",
	"ArnLike":      "no supported condition key is an ARN",
	"ArnNotLike":   "no supported condition key is an ARN",
	"BinaryEquals": "no supported condition key is binary",
}

// setOp is a set qualifier: ForAnyValue or ForAllValues.
type setOp uint8

const (
	setNone setOp = iota
	setAny
	setAll
)

// A condition is one key under one operator, with its values.
type condition struct {
	kind     opKind
	negate   bool
	ifExists bool
	set      setOp
	key      condKey
	tagKey   string         // the tag of s3:ExistingObjectTag/… and s3:RequestObjectTag/…
	strs     []glob         // string operators
	nums     []float64      // numeric operators
	times    []time.Time    // date operators
	bools    []bool         // Bool; Null (true: the key must be absent)
	nets     []netip.Prefix // IpAddress, NotIpAddress
}

// compileConditions compiles a statement's Condition element: an object
// of operators, each an object of keys, each with a value or an array of
// values.
func compileConditions(v *jvalue, vars bool) ([]condition, error) {
	if v.kind != jObject {
		return nil, errorf("Condition must be a JSON object, not %s", v.describe())
	}
	var out []condition
	for _, op := range v.obj {
		if op.val.kind != jObject {
			return nil, errorf("condition operator %s must map to a JSON object of condition keys, not %s", op.key, op.val.describe())
		}
		if len(op.val.obj) == 0 {
			return nil, errorf("condition operator %s has no condition keys", op.key)
		}
		for _, kv := range op.val.obj {
			c, err := compileCondition(op.key, kv.key, &kv.val, vars)
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		}
	}
	return out, nil
}

func compileCondition(opName, keyName string, val *jvalue, vars bool) (condition, error) {
	var c condition
	base := opName
	switch {
	case strings.HasPrefix(base, "ForAnyValue:"):
		c.set, base = setAny, strings.TrimPrefix(base, "ForAnyValue:")
	case strings.HasPrefix(base, "ForAllValues:"):
		c.set, base = setAll, strings.TrimPrefix(base, "ForAllValues:")
	}
	if b, ok := strings.CutSuffix(base, "IfExists"); ok {
		c.ifExists, base = true, b
	}
	op, ok := operators[base]
	if !ok {
		if why, ok := unsupportedOperators[base]; ok {
			return c, errorf("condition operator %q is not supported: %s", opName, why)
		}
		for name := range operators {
			if strings.EqualFold(name, base) {
				return c, errorf("unknown condition operator %q (operator names are case-sensitive: did you mean %q?)", opName, name)
			}
		}
		return c, errorf("unknown condition operator %q", opName)
	}
	c.kind, c.negate = op.kind, op.negate
	if c.kind == opNull && (c.ifExists || c.set != setNone) {
		return c, errorf("condition operator %q is invalid: Null takes neither IfExists nor a set qualifier", opName)
	}
	k, tagKey, ok := lookupKey(keyName)
	if !ok {
		return c, errorf("unknown condition key %q: supported are %s", keyName, keyNames())
	}
	c.key, c.tagKey = k, tagKey
	if fam := c.kind.family(); fam != 0 && keys[k].families&fam == 0 {
		return c, errorf("condition operator %s cannot test %s: %s", base, keyName, suggestOperator(k))
	}
	values, err := conditionValues(opName, keyName, val)
	if err != nil {
		return c, err
	}
	if err := c.compileValues(values, vars && c.kind.family() == famString); err != nil {
		return c, errorf("condition %s on %s: %s", opName, keyName, message(err))
	}
	return c, nil
}

func suggestOperator(k condKey) string {
	switch k {
	case keySourceIP:
		return "use IpAddress or NotIpAddress"
	case keyCurrentTime:
		return "use a Date operator"
	case keyEpochTime:
		return "use a Date or Numeric operator"
	case keySecureTransport:
		return "use Bool"
	case keyMaxKeys:
		return "use a Numeric or String operator"
	}
	return "use a String operator"
}

// conditionValues returns the values of one condition key: a string,
// number or boolean, or a non-empty array of them.
func conditionValues(opName, keyName string, v *jvalue) ([]string, error) {
	one := func(e *jvalue) (string, error) {
		switch e.kind {
		case jString, jNumber, jBool:
			return e.str, nil
		}
		return "", errorf("condition %s on %s: a value must be a string, number or boolean, not %s", opName, keyName, e.describe())
	}
	if v.kind != jArray {
		s, err := one(v)
		return []string{s}, err
	}
	if len(v.arr) == 0 {
		return nil, errorf("condition %s on %s has an empty list of values", opName, keyName)
	}
	out := make([]string, len(v.arr))
	for i := range v.arr {
		s, err := one(&v.arr[i])
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

// compileValues parses the policy values for c's operator. Policy
// variables are substituted only by string operators: "You can't use a
// policy variable with ... Numeric, Date, Boolean, Binary, IP Address, or
// Null operators"
// (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_variables.html#policy-vars-wheretouse).
func (c *condition) compileValues(values []string, vars bool) error {
	for _, s := range values {
		switch c.kind.family() {
		case famString:
			g, err := compilePattern(s, c.kind == opStringLike, vars)
			if err != nil {
				return err
			}
			c.strs = append(c.strs, g)
		case famNumeric:
			f, ok := parseDecimal(s)
			if !ok {
				return errorf("%q is not a number", s)
			}
			c.nums = append(c.nums, f)
		case famDate:
			t, ok := parseDate(s)
			if !ok {
				return errorf("%q is not a date: use ISO 8601 (2006-01-02T15:04:05Z) or epoch seconds", s)
			}
			c.times = append(c.times, t)
		case famIP:
			p, ok := parseCIDR(s)
			if !ok {
				return errorf("%q is not an IP address or CIDR block", s)
			}
			c.nets = append(c.nets, p)
		default: // Bool, Null
			switch strings.ToLower(s) {
			case "true":
				c.bools = append(c.bools, true)
			case "false":
				c.bools = append(c.bools, false)
			default:
				return errorf("%q is not true or false", s)
			}
		}
	}
	return nil
}

// parseDecimal parses an integer or decimal number: an optional minus,
// digits, and optionally a point and digits. strconv.ParseFloat alone
// would accept "NaN", "Inf", hexadecimal and exponents.
func parseDecimal(s string) (float64, bool) {
	t := strings.TrimPrefix(s, "-")
	intPart, frac, hasFrac := strings.Cut(t, ".")
	if !allDigits(intPart) || hasFrac && !allDigits(frac) {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// dateLayouts are the W3C profile of ISO 8601 (https://www.w3.org/TR/NOTE-datetime)
// that AWS documents for Date operators; a time of day needs a time zone.
var dateLayouts = []string{
	"2006",
	"2006-01",
	"2006-01-02",
	"2006-01-02T15:04Z07:00",
	time.RFC3339Nano, // also seconds without a fraction
}

// parseDate parses a Date operator value: a W3C ISO 8601 date or time, or
// epoch seconds.
func parseDate(s string) (time.Time, bool) {
	if allDigits(strings.TrimPrefix(s, "-")) && len(s) != 4 {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return time.Time{}, false
		}
		return time.Unix(n, 0).UTC(), true
	}
	for _, l := range dateLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// parseCIDR parses a CIDR block or a single address, which "IAM uses the
// default prefix value of /32" for (and /128 for IPv6).
func parseCIDR(s string) (netip.Prefix, bool) {
	var p netip.Prefix
	if strings.Contains(s, "/") {
		var err error
		if p, err = netip.ParsePrefix(s); err != nil {
			return p, false
		}
	} else {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return p, false
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p.Masked(), true
}

// holds reports whether c holds for the request ctx. How a missing key
// counts is documented at
// https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_condition_operators.html:
// a positive operator is false and a negated one true; ...IfExists is true;
// Null tests presence itself. With a set qualifier
// (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_condition-single-vs-multi-valued-context-keys.html)
// a missing key makes ForAllValues true and ForAnyValue false, IfExists or
// not; for a present key, which is always single-valued here, both
// qualifiers reduce to the plain operator.
func (c *condition) holds(ctx *Context) bool {
	if c.key == keyRequestObjectTagKeys {
		return c.holdsMulti(ctx)
	}
	present := ctx.has(c)
	if c.kind == opNull {
		// true: "the key doesn't exist"; false: "the key exists".
		return slices.Contains(c.bools, !present)
	}
	if !present {
		switch c.set {
		case setAny:
			return false
		case setAll:
			return true
		}
		return c.ifExists || c.negate
	}
	return c.matchAny(ctx) != c.negate
}

// matchAny reports whether the key's value in ctx, which is present,
// matches one of c's values under the positive form of c's operator.
func (c *condition) matchAny(ctx *Context) bool {
	switch c.kind.family() {
	case famString:
		s, _ := ctx.condStr(c)
		for i := range c.strs {
			if c.matchString(c.strs[i], s, ctx) {
				return true
			}
		}
	case famNumeric:
		v, ok := ctx.number(c.key)
		if !ok {
			return false // a value that is no number equals nothing
		}
		for _, n := range c.nums {
			if compare(c.kind-opNumericEquals, cmpFloat(v, n)) {
				return true
			}
		}
	case famDate:
		// aws:CurrentTime has a precision of one second.
		t := ctx.CurrentTime.Truncate(time.Second)
		for _, d := range c.times {
			if compare(c.kind-opDateEquals, t.Compare(d)) {
				return true
			}
		}
	case famBool:
		return slices.Contains(c.bools, ctx.SecureTransport)
	case famIP:
		a := ctx.SourceIP.Unmap()
		for _, n := range c.nets {
			if n.Contains(a) {
				return true
			}
		}
	}
	return false
}

// holdsMulti evaluates a condition on the multivalued key
// s3:RequestObjectTagKeys, absent when the request carries no tags. With
// ForAllValues every value must match one of c's (true for none); with
// ForAnyValue, and without a qualifier (as AWS evaluates a single-valued
// operator on a multivalued key), one must. A negated operator negates
// each value's match, as AWS defines ForAllValues:StringNotEquals.
func (c *condition) holdsMulti(ctx *Context) bool {
	vals, present := ctx.requestTagKeys()
	if c.kind == opNull {
		return slices.Contains(c.bools, !present)
	}
	if !present {
		if c.set == setAll {
			return true
		}
		return c.set == setNone && (c.ifExists || c.negate)
	}
	matches := func(v string) bool {
		for i := range c.strs {
			if c.matchString(c.strs[i], v, ctx) {
				return !c.negate
			}
		}
		return c.negate
	}
	if c.set == setAll {
		for _, v := range vals {
			if !matches(v) {
				return false
			}
		}
		return true
	}
	if c.set == setNone && c.negate {
		// StringNotEquals without a qualifier: none of the values matches.
		for _, v := range vals {
			if !matches(v) {
				return false
			}
		}
		return true
	}
	return slices.ContainsFunc(vals, matches)
}

func (c *condition) matchString(g glob, s string, ctx *Context) bool {
	switch c.kind {
	case opStringEquals:
		return g.equal(s, ctx)
	case opStringEqualsIgnoreCase:
		return g.equalFold(s, ctx)
	}
	return g.match(s, ctx)
}

// compare applies a comparison, numbered as the operators from Equals to
// GreaterThanEquals, to the result of a three-way comparison.
func compare(rel opKind, cmp int) bool {
	switch rel {
	case 0:
		return cmp == 0
	case 1:
		return cmp < 0
	case 2:
		return cmp <= 0
	case 3:
		return cmp > 0
	}
	return cmp >= 0
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
