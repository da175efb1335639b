package s3api

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/s3err"
)

type rangeCase struct {
	name, hdr string
	want      *objects.Range
	wantErr   s3err.Code
}

// rangeCases is shared by TestParseRange and FuzzParseRange's seeds.
var rangeCases = []rangeCase{
	{name: "absent", hdr: ""},
	{name: "first-last", hdr: "bytes=0-9", want: &objects.Range{Start: 0, End: 9}},
	{name: "single byte", hdr: "bytes=5-5", want: &objects.Range{Start: 5, End: 5}},
	{name: "open-ended", hdr: "bytes=100-", want: &objects.Range{Start: 100, End: -1}},
	{name: "suffix", hdr: "bytes=-20", want: &objects.Range{Start: -1, End: -1, Suffix: 20}},
	{name: "spaces", hdr: " bytes = 1 - 2 ", want: &objects.Range{Start: 1, End: 2}},
	{name: "unit case", hdr: "Bytes=1-2", want: &objects.Range{Start: 1, End: 2}},
	{name: "end past any size saturates", hdr: "bytes=0-99999999999999999999", want: &objects.Range{Start: 0, End: math.MaxInt64}},
	{name: "huge start saturates", hdr: "bytes=99999999999999999999-", want: &objects.Range{Start: math.MaxInt64, End: -1}},
	{name: "huge suffix saturates", hdr: "bytes=-99999999999999999999", want: &objects.Range{Start: -1, End: -1, Suffix: math.MaxInt64}},
	{name: "empty suffix, unsatisfiable", hdr: "bytes=-0", want: &objects.Range{Start: -1, End: -1}},
	{name: "empty suffix with zeros", hdr: "bytes=-000", want: &objects.Range{Start: -1, End: -1}},
	// Ignored, as S3 ignores them: the whole object is served.
	{name: "multiple ranges ignored", hdr: "bytes=0-1,3-4"},
	{name: "last before first ignored", hdr: "bytes=10-5"},
	{name: "other unit ignored", hdr: "items=0-5"},
	{name: "no equals ignored", hdr: "bytes 0-5"},
	{name: "no dash ignored", hdr: "bytes=5"},
	{name: "bare dash ignored", hdr: "bytes=-"},
	{name: "negative ignored", hdr: "bytes=--5"},
	{name: "plus sign ignored", hdr: "bytes=+1-2"},
	{name: "junk ignored", hdr: "bytes=abc-def"},
	{name: "hex ignored", hdr: "bytes=0x10-0x20"},
	{name: "empty spec ignored", hdr: "bytes="},
	{name: "two dashes ignored", hdr: "bytes=1-2-3"},
	{name: "overflowing start, small end ignored", hdr: "bytes=99999999999999999999-5"},
}

func TestParseRange(t *testing.T) {
	for _, tc := range rangeCases {
		t.Run(tc.name, func(t *testing.T) {
			got := parseRange(tc.hdr)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("parseRange(%q) mismatch (-want +got):\n%s", tc.hdr, diff)
			}
		})
	}
}

func FuzzParseRange(f *testing.F) {
	for _, tc := range rangeCases {
		f.Add(tc.hdr)
	}
	f.Fuzz(func(t *testing.T, hdr string) {
		if len(hdr) > 1024 {
			return
		}
		got := parseRange(hdr)
		if got == nil {
			return
		}
		switch {
		case got.Suffix > 0 || got.Start < 0:
			if got.Start != -1 || got.End != -1 || got.Suffix < 0 {
				t.Fatalf("parseRange(%q) = %+v: suffix with start or end", hdr, got)
			}
		case got.End >= 0 && got.End < got.Start:
			t.Fatalf("parseRange(%q) = %+v: end before start", hdr, got)
		case got.End < -1:
			t.Fatalf("parseRange(%q) = %+v: bad end", hdr, got)
		}
	})
}

func TestParseCopyRange(t *testing.T) {
	for _, tc := range []rangeCase{
		{name: "absent", hdr: ""},
		{name: "first-last", hdr: "bytes=500-6291456", want: &objects.Range{Start: 500, End: 6291456}},
		{name: "single byte", hdr: "bytes=0-0", want: &objects.Range{Start: 0, End: 0}},
		{name: "open-ended", hdr: "bytes=5-", wantErr: s3err.InvalidArgument},
		{name: "suffix", hdr: "bytes=-5", wantErr: s3err.InvalidArgument},
		{name: "reversed", hdr: "bytes=5-4", wantErr: s3err.InvalidArgument},
		{name: "junk", hdr: "bytes=a-b", wantErr: s3err.InvalidArgument},
		{name: "no unit", hdr: "0-5", wantErr: s3err.InvalidArgument},
		{name: "multiple", hdr: "bytes=0-1,2-3", wantErr: s3err.InvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseCopyRange(tc.hdr)
			if code := s3err.CodeOf(err); code != tc.wantErr {
				t.Fatalf("parseCopyRange(%q) error = %v, want code %q", tc.hdr, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("parseCopyRange(%q) mismatch (-want +got):\n%s", tc.hdr, diff)
			}
		})
	}
}
