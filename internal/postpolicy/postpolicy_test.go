package postpolicy

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/coffer-s3/coffer/internal/s3err"
)

var now = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

func form(kv ...string) *Form {
	f := &Form{}
	for i := 0; i < len(kv); i += 2 {
		f.Set(kv[i], kv[i+1])
	}
	return f
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  string
		want *Policy // nil: InvalidPolicyDocument
	}{
		{"AWS example", `{ "expiration": "2026-12-01T12:00:00.000Z",
		  "conditions": [ {"acl": "public-read" }, {"bucket": "johnsmith" }, ["starts-with", "$key", "user/eric/"] ] }`,
			&Policy{Expiration: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC), Conditions: []Condition{
				{Op: OpEq, Field: "acl", Value: "public-read"}, {Op: OpEq, Field: "bucket", Value: "johnsmith"},
				{Op: OpStartsWith, Field: "key", Value: "user/eric/"}}}},
		{"no milliseconds, operators and fields in any case", `{"expiration": "2026-12-01T12:00:00Z",
		  "conditions": [["EQ", "$Content-Type", "text/plain"], ["StArTs-WiTh", "$X-Amz-Meta-A", ""], {"KeY": "k"}]}`,
			&Policy{Expiration: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC), Conditions: []Condition{
				{Op: OpEq, Field: "content-type", Value: "text/plain"}, {Op: OpStartsWith, Field: "x-amz-meta-a", Value: ""},
				{Op: OpEq, Field: "key", Value: "k"}}}},
		{"length range, numbers or strings, and unknown members", `{"expiration": "2026-12-01T12:00:00Z", "other": 1,
		  "conditions": [["content-length-range", 10, "1048576"], {"success_action_status": 201}]}`,
			&Policy{Expiration: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC), MinLength: 10, MaxLength: 1 << 20, HasLength: true,
				Conditions: []Condition{{Op: OpEq, Field: "success_action_status", Value: "201"}}}},
		{"two ranges narrow each other", `{"expiration": "2026-12-01T12:00:00Z",
		  "conditions": [["content-length-range", 10, 100], ["content-length-range", 0, 50]]}`,
			&Policy{Expiration: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC), MinLength: 10, MaxLength: 50, HasLength: true}},
		{"empty conditions", `{"expiration": "2026-12-01T12:00:00Z", "conditions": []}`,
			&Policy{Expiration: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}},

		{"not JSON", `{"expiration": `, nil},
		{"not an object", `[]`, nil},
		{"null", `null`, nil},
		{"no expiration", `{"conditions": []}`, nil},
		{"EXPIRATION is another member", `{"EXPIRATION": "2026-12-01T12:00:00Z", "conditions": []}`, nil},
		{"expiration not ISO 8601", `{"expiration": "2026-12-01 12:00:00.123456+00:00", "conditions": []}`, nil},
		{"expiration a number", `{"expiration": 1, "conditions": []}`, nil},
		{"no conditions", `{"expiration": "2026-12-01T12:00:00Z"}`, nil},
		{"CONDITIONS is another member", `{"expiration": "2026-12-01T12:00:00Z", "CONDITIONS": []}`, nil},
		{"conditions not a list", `{"expiration": "2026-12-01T12:00:00Z", "conditions": {}}`, nil},
		{"empty object condition", `{"expiration": "2026-12-01T12:00:00Z", "conditions": [{}]}`, nil},
		{"number condition", `{"expiration": "2026-12-01T12:00:00Z", "conditions": [123]}`, nil},
		{"object value not a string", `{"expiration": "2026-12-01T12:00:00Z", "conditions": [{"key": ["a"]}]}`, nil},
		{"empty list", `{"expiration": "2026-12-01T12:00:00Z", "conditions": [[]]}`, nil},
		{"unknown operation", `{"expiration": "2026-12-01T12:00:00Z", "conditions": [["in", "$key", "a"]]}`, nil},
		{"field without $", `{"expiration": "2026-12-01T12:00:00Z", "conditions": [["eq", "key", "a"]]}`, nil},
		{"field only $", `{"expiration": "2026-12-01T12:00:00Z", "conditions": [["eq", "$", "a"]]}`, nil},
		{"eq with two arguments", `{"expiration": "2026-12-01T12:00:00Z", "conditions": [["eq", "$key"]]}`, nil},
		{"range with one bound", `{"expiration": "2026-12-01T12:00:00Z", "conditions": [["content-length-range", 0]]}`, nil},
		{"range negative", `{"expiration": "2026-12-01T12:00:00Z", "conditions": [["content-length-range", -1, 0]]}`, nil},
		{"range reversed", `{"expiration": "2026-12-01T12:00:00Z", "conditions": [["content-length-range", 10, 1]]}`, nil},
		{"range not a number", `{"expiration": "2026-12-01T12:00:00Z", "conditions": [["content-length-range", 0, "ten"]]}`, nil},
		{"range fraction", `{"expiration": "2026-12-01T12:00:00Z", "conditions": [["content-length-range", 0, 1.5]]}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Decode(base64.StdEncoding.EncodeToString([]byte(tc.doc)))
			if tc.want == nil {
				if !s3err.Is(err, s3err.InvalidPolicyDocument) {
					t.Fatalf("Decode = %+v, %v; want InvalidPolicyDocument", p, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i := range p.Conditions {
				p.Conditions[i].raw = ""
			}
			if !p.Expiration.Equal(tc.want.Expiration) || p.HasLength != tc.want.HasLength || p.MinLength != tc.want.MinLength ||
				p.MaxLength != tc.want.MaxLength || len(p.Conditions) != len(tc.want.Conditions) {
				t.Fatalf("Decode = %+v, want %+v", p, tc.want)
			}
			for i, c := range p.Conditions {
				if c != tc.want.Conditions[i] {
					t.Errorf("condition %d = %+v, want %+v", i, c, tc.want.Conditions[i])
				}
			}
		})
	}
	if _, err := Decode("not base64!"); !s3err.Is(err, s3err.InvalidPolicyDocument) {
		t.Errorf("Decode of bad base64 = %v, want InvalidPolicyDocument", err)
	}
	if _, err := Decode(strings.Repeat("A", 2*MaxSize)); !s3err.Is(err, s3err.InvalidPolicyDocument) {
		t.Errorf("Decode of an oversize policy = %v, want InvalidPolicyDocument", err)
	}
}

func TestCheck(t *testing.T) {
	p, err := Parse([]byte(`{"expiration": "2026-11-26T13:00:00.000Z", "conditions": [
		{"bucket": "photos"},
		["starts-with", "$key", "user/eric/"],
		["starts-with", "$Content-Type", "image/"],
		["eq", "$x-amz-meta-tag", ""],
		["starts-with", "$success_action_redirect", ""]
	]}`))
	if err != nil {
		t.Fatal(err)
	}
	base := []string{"bucket", "photos", "key", "user/eric/cat.jpg", "content-type", "image/jpeg", "policy", "…", "x-amz-signature", "…"}
	for _, tc := range []struct {
		name   string
		form   *Form
		at     time.Time
		reason string // "" for a form that passes
	}{
		{"passes", form(base...), now, ""},
		{"missing fields count as empty", form("bucket", "photos", "key", "user/eric/x", "content-type", "image/png"), now, ""},
		{"several content types", form("bucket", "photos", "key", "user/eric/x", "Content-Type", "image/png, image/gif"), now, ""},
		{"one of several content types", form("bucket", "photos", "key", "user/eric/x", "Content-Type", "image/png, text/html"), now, "Condition failed"},
		{"ignored and signature fields need no condition", form(append(base, "x-ignore-a", "1", "AWSAccessKeyId", "k", "signature", "s")...), now, ""},
		{"expired", form(base...), time.Date(2026, 11, 26, 13, 0, 0, 0, time.UTC), "Policy expired"},
		{"wrong bucket", form("bucket", "other", "key", "user/eric/x", "content-type", "image/png"), now, "Condition failed"},
		{"key outside the prefix", form("bucket", "photos", "key", "user/bob/x", "content-type", "image/png"), now, `["starts-with", "$key", "user/eric/"]`},
		{"values are case-sensitive", form("bucket", "photos", "key", "USER/eric/x", "content-type", "image/png"), now, "Condition failed"},
		{"eq empty fails on a value", form(append(base, "x-amz-meta-tag", "x")...), now, "Condition failed"},
		{"extra field", form(append(base, "x-amz-meta-other", "x", "acl", "public-read")...), now, "Extra input fields: x-amz-meta-other, acl"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := p.Check(tc.form, tc.at)
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("Check = %v, want nil", err)
				}
				return
			}
			e, ok := errors.AsType[*s3err.Error](err)
			if !ok || e.Code != s3err.AccessDenied || !strings.Contains(e.Message, tc.reason) {
				t.Fatalf("Check = %v, want AccessDenied saying %q", err, tc.reason)
			}
		})
	}
}

func TestFormSet(t *testing.T) {
	var f Form
	if !f.Set("Key", "a") || f.Set("KEY", "b") || f.Get("key") != "a" || len(f.Names) != 1 {
		t.Errorf("Set of a repeated name: %+v", f)
	}
}

func TestLengthReader(t *testing.T) {
	p := &Policy{MinLength: 3, MaxLength: 10, HasLength: true}
	for _, tc := range []struct {
		n    int
		code s3err.Code // "" for none
	}{{0, s3err.EntityTooSmall}, {2, s3err.EntityTooSmall}, {3, ""}, {10, ""}, {11, s3err.EntityTooLarge}, {1000, s3err.EntityTooLarge}} {
		got, err := io.ReadAll(p.LengthReader(iotest.OneByteReader(bytes.NewReader(make([]byte, tc.n)))))
		switch {
		case tc.code == "" && (err != nil || len(got) != tc.n):
			t.Errorf("%d bytes: read %d, %v", tc.n, len(got), err)
		case tc.code != "" && !s3err.Is(err, tc.code):
			t.Errorf("%d bytes: %v, want %s", tc.n, err, tc.code)
		case tc.code == s3err.EntityTooLarge && len(got) > 10:
			t.Errorf("%d bytes: %d delivered past the maximum", tc.n, len(got))
		}
	}
	r := strings.NewReader("anything")
	if (&Policy{}).LengthReader(r) != r {
		t.Error("LengthReader without a range wraps the reader")
	}
}

// FuzzDecode: no policy document makes Decode or Check panic, and a policy
// that decodes has a sane length range.
func FuzzDecode(f *testing.F) {
	for _, doc := range []string{
		`{"expiration": "2026-12-01T12:00:00.000Z", "conditions": [{"acl": "public-read"}, ["starts-with", "$key", "u/"], ["content-length-range", 1, 10]]}`,
		`{"expiration": "2026-12-01T12:00:00Z", "conditions": [{}]}`,
		`{"expiration": "x", "conditions": 1}`,
		`{"expiration": "2026-12-01T12:00:00Z", "conditions": [["eq", "$Content-Type", "a,b"], ["content-length-range", "1e3", 1e4]]}`,
	} {
		f.Add(base64.StdEncoding.EncodeToString([]byte(doc)), "key", "u/x")
	}
	f.Fuzz(func(t *testing.T, policy, name, value string) {
		p, err := Decode(policy)
		if err != nil {
			if _, ok := errors.AsType[*s3err.Error](err); !ok {
				t.Fatalf("Decode error %v is not an S3 error", err)
			}
			return
		}
		if p.HasLength && (p.MinLength < 0 || p.MaxLength < 0) {
			t.Fatalf("length range %d..%d", p.MinLength, p.MaxLength)
		}
		err = p.Check(form(name, value, "bucket", "b"), now)
		if _, ok := errors.AsType[*s3err.Error](err); err != nil && !ok {
			t.Fatalf("Check error %v is not an S3 error", err)
		}
	})
}
