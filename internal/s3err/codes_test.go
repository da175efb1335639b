package s3err

import (
	"errors"
	"fmt"
	"testing"
)

func TestTable(t *testing.T) {
	for code, in := range table {
		if in.Status < 300 || in.Status > 599 {
			t.Errorf("%s: status %d is not 3xx/4xx/5xx", code, in.Status)
		}
		if in.Message == "" {
			t.Errorf("%s: empty message", code)
		}
	}
}

func TestCodeOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want Code
	}{
		{"nil", nil, ""},
		{"plain", errors.New("disk on fire"), InternalError},
		{"direct", New(NoSuchKey, "b/k"), NoSuchKey},
		{"wrapped", fmt.Errorf("get: %w", New(NoSuchBucket, "b")), NoSuchBucket},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := CodeOf(tc.err); got != tc.want {
				t.Errorf("CodeOf(%v) = %q, want %q", tc.err, got, tc.want)
			}
		})
	}
	if StatusOf(NoSuchKey) != 404 || StatusOf("Bogus") != 500 {
		t.Error("StatusOf mismatch")
	}
	e := New(InvalidArgument, "x").With("ArgumentName", "max-keys")
	if e.Msg() != MessageOf(InvalidArgument) || len(e.Extra) != 1 {
		t.Errorf("unexpected %+v", e)
	}
}
