package config

import (
	"testing"
	"time"
)

func TestFormatDuration(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   time.Duration
		want string
	}{
		{0, "0s"},
		{30 * time.Second, "30s"},
		{10 * time.Minute, "10m"},
		{time.Hour, "1h"},
		{90 * time.Minute, "1h30m"},
		{time.Hour + time.Second, "1h0m1s"},
		{1500 * time.Millisecond, "1.5s"},
	} {
		got := formatDuration(tc.in)
		if got != tc.want {
			t.Errorf("formatDuration(%v) = %q, want %q", tc.in, got, tc.want)
		}
		if back, err := time.ParseDuration(got); err != nil || back != tc.in {
			t.Errorf("time.ParseDuration(%q) = %v, %v, want %v", got, back, err, tc.in)
		}
	}
}
