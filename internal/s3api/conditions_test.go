package s3api

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/s3err"
)

// sunday is the date of RFC 9110's examples of the three HTTP date formats.
var sunday = time.Date(1994, time.November, 6, 8, 49, 37, 0, time.UTC)

type condCase struct {
	name string
	h    http.Header
	want objects.ReadConditions
}

var condCases = []condCase{
	{name: "none", h: header()},
	{name: "etags", h: header("If-Match", `"abc"`, "If-None-Match", ` * `),
		want: objects.ReadConditions{IfMatch: `"abc"`, IfNoneMatch: "*"}},
	{name: "IMF-fixdate", h: header("If-Modified-Since", "Sun, 06 Nov 1994 08:49:37 GMT"),
		want: objects.ReadConditions{IfModifiedSince: sunday}},
	{name: "RFC 850", h: header("If-Unmodified-Since", "Sunday, 06-Nov-94 08:49:37 GMT"),
		want: objects.ReadConditions{IfUnmodifiedSince: sunday}},
	{name: "asctime", h: header("If-Modified-Since", "Sun Nov  6 08:49:37 1994"),
		want: objects.ReadConditions{IfModifiedSince: sunday}},
	{name: "etags on two lines", h: http.Header{"If-Match": {`"abc"`, ` "def" `}, "If-None-Match": {`"x"`, `"y"`}},
		want: objects.ReadConditions{IfMatch: `"abc", "def"`, IfNoneMatch: `"x","y"`}},
	{name: "invalid dates ignored", h: header("If-Modified-Since", "yesterday", "If-Unmodified-Since", "2024-01-01T00:00:00Z", "If-Match", "x"),
		want: objects.ReadConditions{IfMatch: "x"}},
}

func TestParseReadConditions(t *testing.T) {
	for _, tc := range condCases {
		t.Run(tc.name, func(t *testing.T) {
			got := parseReadConditions(tc.h)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("parseReadConditions(%v) mismatch (-want +got):\n%s", tc.h, diff)
			}
			// The copy-source headers parse the same way.
			src := http.Header{}
			for k, v := range tc.h {
				src["X-Amz-Copy-Source-"+k] = v
			}
			got = parseCopySourceConditions(src)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("parseCopySourceConditions(%v) mismatch (-want +got):\n%s", src, diff)
			}
		})
	}
}

func TestParseWriteConditions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		h       http.Header
		want    objects.WriteConditions
		wantErr s3err.Code
	}{
		{name: "none", h: header()},
		{name: "create only", h: header("If-None-Match", "*"), want: objects.WriteConditions{IfNoneMatch: "*"}},
		{name: "replace only", h: header("If-Match", `"d41d8cd98f00b204e9800998ecf8427e"`), want: objects.WriteConditions{IfMatch: `"d41d8cd98f00b204e9800998ecf8427e"`}},
		{name: "If-None-Match etag", h: header("If-None-Match", `"abc"`), want: objects.WriteConditions{IfNoneMatch: `"abc"`}},
		{name: "read conditions ignored", h: header("If-Modified-Since", "Sun, 06 Nov 1994 08:49:37 GMT")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseWriteConditions(tc.h)
			if code := s3err.CodeOf(err); code != tc.wantErr {
				t.Fatalf("parseWriteConditions(%v) error = %v, want code %q", tc.h, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("parseWriteConditions(%v) mismatch (-want +got):\n%s", tc.h, diff)
			}
		})
	}
}

func FuzzParseConditionalHeaders(f *testing.F) {
	for _, tc := range condCases {
		f.Add(tc.h.Get("If-Match"), tc.h.Get("If-None-Match"), tc.h.Get("If-Modified-Since"), tc.h.Get("If-Unmodified-Since"), "")
	}
	f.Add("*", "*", "Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", `"0123"`)
	f.Add("", "", "", "", `W/"0123"`)
	f.Add("", "", "", "", "Sun, 06 Nov 1994 08:49:37 GMT")
	f.Add("", "", "", "", ` " `)
	f.Fuzz(func(t *testing.T, ifMatch, ifNoneMatch, ims, ius, ifRange string) {
		h := http.Header{
			"If-Match":            {ifMatch},
			"If-None-Match":       {ifNoneMatch},
			"If-Modified-Since":   {ims},
			"If-Unmodified-Since": {ius},
			"If-Range":            {ifRange},
		}
		rc := parseReadConditions(h)
		if rc.IfMatch != strings.TrimSpace(ifMatch) || rc.IfNoneMatch != strings.TrimSpace(ifNoneMatch) {
			t.Fatalf("parseReadConditions lost an ETag: %+v", rc)
		}
		for _, d := range []struct {
			in  string
			got time.Time
		}{{ims, rc.IfModifiedSince}, {ius, rc.IfUnmodifiedSince}} {
			want, err := http.ParseTime(strings.TrimSpace(d.in))
			if err != nil {
				want = time.Time{} // invalid dates are ignored
			}
			if !d.got.Equal(want) {
				t.Fatalf("date %q parsed as %v, want %v", d.in, d.got, want)
			}
		}
		// If-Range: none for a blank value; an ETag only from a quoted
		// one (its inside), so that a weak tag or a date never holds.
		v := strings.TrimSpace(ifRange)
		switch ir := rc.IfRange; {
		case v == "":
			if ir != nil {
				t.Fatalf("If-Range %q parsed as %+v, want none", ifRange, ir)
			}
		case ir == nil:
			t.Fatalf("If-Range %q parsed as none", ifRange)
		case ir.ETag != "" && (len(v) < 2 || v[0] != '"' || `"`+ir.ETag+`"` != v):
			t.Fatalf("If-Range %q parsed as ETag %q", ifRange, ir.ETag)
		}
		wc, err := parseWriteConditions(h)
		if err != nil {
			t.Fatalf("parseWriteConditions(%q, %q) error %v", ifMatch, ifNoneMatch, err)
		}
		// Both conditions reach the object service untouched: it compares
		// them with the stored ETag ("*" or a list of quoted ETags).
		if wc.IfMatch != strings.TrimSpace(ifMatch) || wc.IfNoneMatch != strings.TrimSpace(ifNoneMatch) {
			t.Fatalf("parseWriteConditions lost a condition: %+v", wc)
		}
	})
}
