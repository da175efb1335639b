package s3xml_test

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/coffer-s3/coffer/internal/s3err"
	"github.com/coffer-s3/coffer/internal/s3xml"
)

// fuzzLimit bounds fuzz inputs, like Prometheus's maxInputSize: larger
// bodies only exercise the size check.
const fuzzLimit = 64 << 10

// maxSeed leaves the table's bulk cases (1000 objects, 5000 parts) out of
// the seed corpus: they only slow the fuzzer down.
const maxSeed = 4 << 10

// checkDecodeError fails t if err is not an S3 error a client could be
// sent: a decoder must never fall back to InternalError on bad input.
func checkDecodeError(t *testing.T, err error, body []byte) {
	t.Helper()
	if code := s3err.CodeOf(err); code == s3err.InternalError || !s3err.Known(code) {
		t.Fatalf("error %v (code %q) for body %q, want a known client error", err, code, body)
	}
}

func FuzzDecodeCompleteMultipartUpload(f *testing.F) {
	for _, tc := range completeCases(f) {
		if len(tc.body) <= maxSeed {
			f.Add([]byte(tc.body))
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := s3xml.DecodeCompleteMultipartUpload(bytes.NewReader(body), fuzzLimit)
		if err != nil {
			checkDecodeError(t, err, body)
			return
		}
		again := roundTrip(t, got, s3xml.DecodeCompleteMultipartUpload)
		if diff := cmp.Diff(got, again); diff != "" {
			t.Errorf("decode(encode(x)) != x for body %q (-x +again):\n%s", body, diff)
		}
	})
}

func FuzzDecodeDeleteObjects(f *testing.F) {
	for _, tc := range deleteCases(f) {
		if len(tc.body) <= maxSeed {
			f.Add([]byte(tc.body))
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := s3xml.DecodeDeleteObjects(bytes.NewReader(body), fuzzLimit)
		if err != nil {
			checkDecodeError(t, err, body)
			return
		}
		again := roundTrip(t, got, s3xml.DecodeDeleteObjects)
		if diff := cmp.Diff(got, again); diff != "" {
			t.Errorf("decode(encode(x)) != x for body %q (-x +again):\n%s", body, diff)
		}
	})
}

func FuzzDecodeTagging(f *testing.F) {
	for _, tc := range taggingCases() {
		if len(tc.body) <= maxSeed {
			f.Add([]byte(tc.body))
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := s3xml.DecodeTagging(bytes.NewReader(body), fuzzLimit)
		if err != nil {
			checkDecodeError(t, err, body)
			return
		}
		again := roundTrip(t, got, s3xml.DecodeTagging)
		if diff := cmp.Diff(got, again, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("decode(encode(x)) != x for body %q (-x +again):\n%s", body, diff)
		}
	})
}

func FuzzDecodeLifecycleConfiguration(f *testing.F) {
	for _, tc := range lifecycleCases() {
		if len(tc.body) <= maxSeed {
			f.Add([]byte(tc.body))
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := s3xml.DecodeLifecycleConfiguration(bytes.NewReader(body), fuzzLimit)
		if err != nil {
			checkDecodeError(t, err, body)
			return
		}
		again := roundTrip(t, got, s3xml.DecodeLifecycleConfiguration)
		if diff := cmp.Diff(got, again, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("decode(encode(x)) != x for body %q (-x +again):\n%s", body, diff)
		}
	})
}

// FuzzDecodeCORSConfiguration checks the strict decoder: what it accepts
// round-trips, and the lenient Decode reads the same document alike
// (strictness only refuses, it never reads differently).
func FuzzDecodeCORSConfiguration(f *testing.F) {
	for _, tc := range corsCases(f) {
		if len(tc.body) <= maxSeed {
			f.Add([]byte(tc.body))
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := s3xml.DecodeCORSConfiguration(bytes.NewReader(body), fuzzLimit)
		if err != nil {
			checkDecodeError(t, err, body)
			return
		}
		var lenient s3xml.CORSConfiguration
		if err := s3xml.Decode(bytes.NewReader(body), fuzzLimit, &lenient); err != nil {
			t.Fatalf("Decode(%q) error %v, DecodeCORSConfiguration accepted it", body, err)
		}
		if diff := cmp.Diff(lenient, got); diff != "" {
			t.Errorf("strict and lenient decoding differ for %q (-lenient +strict):\n%s", body, diff)
		}
		again := roundTrip(t, got, s3xml.DecodeCORSConfiguration)
		if diff := cmp.Diff(got, again, ignoreXMLName, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("decode(encode(x)) != x for body %q (-x +again):\n%s", body, diff)
		}
	})
}
